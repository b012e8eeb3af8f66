"""A FileScanTask: everything a reader needs to read one data file of a scan, and nothing more.

Spec "Scan Planning": a task is a data file, the delete files that apply to it (chosen by
data sequence number and partition, see :mod:`icecore.scan.delete_index`), and the residual
filter left after partition pruning. Tasks are self-contained (iceberg-rust's lesson), so a
reader needs no table, manifest or catalog to read one.

A plan of a million files makes its tasks when they are read, from its columns
(:mod:`icecore.scan.planned`), so a task must cost a fraction of a microsecond to make and
~100 bytes to hold (issue 19): it is a slotted object of eight slots, the attributes a loop
reads (path, counts, deletes, residual) plain slots, and what it shares with its neighbours
(spec, schema, the full :class:`~icecore.manifest.DataFile` with its metrics maps, ~4 KB of
objects) read through its *source*: the plan's block of rows, or, for a task made from a
DataFile, that DataFile with its spec and schema. ``task.data_file`` of a planned task is a
:class:`PlannedDataFile`, a one-slot view onto the task made on each access
(docs/ARCHITECTURE.md "Performance").
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any, Protocol

from icecore.expressions.model import AlwaysTrue, Expression
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema

_ALWAYS_TRUE = AlwaysTrue()
_FIELDS = tuple(f.name for f in fields(DataFile))


class TaskSource(Protocol):
    """Where a task gets what it shares with other tasks (see :class:`FileScanTask`)."""

    spec: PartitionSpec
    schema: Schema
    spec_id: int

    def data_file(self, position: int) -> DataFile:
        """The full data file of row ``position`` (metrics maps included)."""
        ...

    def partition(self, position: int) -> dict[int, Any]:
        """The partition values of row ``position`` by partition field id."""
        ...

    def file_format(self, position: int) -> str:
        """The file format of row ``position``."""
        ...


class PlannedSource(TaskSource, Protocol):
    """A plan's block of rows as views read it (:class:`~icecore.scan.planned.PlannedBlock`)."""

    row_formats: list[str] | None
    row_partitions: list[dict[int, Any]] | None

    def formats(self) -> list[str]:
        """Every row's file format (``row_formats``, made on first use)."""
        ...

    def partitions(self) -> list[dict[int, Any]]:
        """Every row's partition values, shared dicts (``row_partitions``, made on first use)."""
        ...


class _Given:
    """The source of a task made from a :class:`~icecore.manifest.DataFile`: that file."""

    __slots__ = ("file", "spec", "schema", "spec_id")

    def __init__(self, file: DataFile, spec: PartitionSpec, schema: Schema) -> None:
        self.file = file
        self.spec = spec
        self.schema = schema
        self.spec_id = file.spec_id

    def data_file(self, position: int) -> DataFile:
        return self.file

    def partition(self, position: int) -> dict[int, Any]:
        return self.file.partition

    def file_format(self, position: int) -> str:
        return self.file.file_format


GIVEN = -1
"""The ``_position`` of a task made from a DataFile (its source holds the file)."""


class FileScanTask:
    """One data file to read, with its deletes and residual filter.

    Attributes:
        data_file: the data file (for a task made from a plan's columns, a
            :class:`PlannedDataFile` view made on each access).
        data_sequence_number: its data sequence number (what deletes are compared against).
        spec: the partition spec the file was written with (``data_file.spec_id``).
        schema: the table schema the scan reads with (the snapshot's schema); the file's own
            columns are matched to it by field id.
        delete_files: position deletes, equality deletes and deletion vectors that apply
            (a deletion vector, when present, replaces every position delete file).
        residual: the filter still to apply to rows (bound to ``schema``); ``AlwaysTrue``
            when partition values alone decide.
        file_path, record_count, file_size_in_bytes, partition: the data file's, without
            building it.

    Tasks are values: read-only by convention, equal when their fields are, pickled as the
    six fields (a planned task's data file complete).
    """

    __slots__ = (
        "file_path",
        "record_count",
        "file_size_in_bytes",
        "data_sequence_number",
        "delete_files",
        "residual",
        "_source",
        "_position",
    )

    file_path: str
    record_count: int
    file_size_in_bytes: int
    data_sequence_number: int
    delete_files: tuple[DataFile, ...]
    residual: Expression
    _source: TaskSource
    _position: int

    def __init__(
        self,
        data_file: DataFile,
        data_sequence_number: int,
        spec: PartitionSpec,
        schema: Schema,
        delete_files: tuple[DataFile, ...] = (),
        residual: Expression = _ALWAYS_TRUE,
    ) -> None:
        self.file_path = data_file.file_path
        self.record_count = data_file.record_count
        self.file_size_in_bytes = data_file.file_size_in_bytes
        self.data_sequence_number = data_sequence_number
        self.delete_files = delete_files
        self.residual = residual
        self._source = _Given(data_file, spec, schema)
        self._position = GIVEN

    # Shared with the other tasks of the source: read through it, in C (attrgetter).
    spec: PartitionSpec = property(attrgetter("_source.spec"))  # type: ignore[assignment]
    schema: Schema = property(attrgetter("_source.schema"))  # type: ignore[assignment]

    @property
    def data_file(self) -> DataFile:
        """The data file (a planned task gives a view instead: :class:`PlannedTask`)."""
        return self._source.data_file(self._position)

    @property
    def partition(self) -> dict[int, Any]:
        """The data file's partition values by partition field id (without building it)."""
        return self._source.partition(self._position)

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.data_file,
            self.data_sequence_number,
            self.spec,
            self.schema,
            self.delete_files,
            self.residual,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileScanTask):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # a DataFile holds dicts: never hashable

    def __reduce__(self) -> tuple[Any, ...]:
        # A plain task of the six fields: a planned task's source (the plan's block, with
        # its lock and decoded manifest) stays behind, its data file goes complete.
        data_file = self._source.data_file(self._position)
        return (
            FileScanTask,
            (
                data_file,
                self.data_sequence_number,
                self.spec,
                self.schema,
                self.delete_files,
                self.residual,
            ),
        )

    def __repr__(self) -> str:
        return (
            f"FileScanTask(file_path={self.file_path!r}, "
            f"data_sequence_number={self.data_sequence_number}, "
            f"delete_files={len(self.delete_files)}, residual={self.residual})"
        )


@dataclass(frozen=True)
class _Fields:
    """FileScanTask's fields as a dataclass declares them (see below)."""

    data_file: DataFile
    data_sequence_number: int
    spec: PartitionSpec
    schema: Schema
    delete_files: tuple[DataFile, ...] = ()
    residual: Expression = _ALWAYS_TRUE


# FileScanTask was a dataclass, and callers use dataclasses.replace / fields / asdict on
# tasks: they keep working, with the same six fields (a planned task's replace builds its
# data file and gives a task holding it).
FileScanTask.__dataclass_fields__ = _Fields.__dataclass_fields__  # type: ignore[attr-defined]
FileScanTask.__dataclass_params__ = _Fields.__dataclass_params__  # type: ignore[attr-defined]


def _from_manifest(name: str) -> property:
    """A field of the full data file (metrics maps, ...), read from the plan's block."""

    def get(self: PlannedDataFile) -> Any:
        task = self._task
        return getattr(task._source.data_file(task._position), name)

    return property(get, doc=f"The data file's ``{name}`` (read from the manifest when asked).")


# A view's format and partition: read in a loop over a million views, so inlined (the
# block's per-row lists, made on first use), not a call of the source's method.
def _file_format(self: PlannedDataFile) -> str:
    task = self._task
    source: PlannedSource = task._source  # type: ignore[assignment]
    return (source.row_formats or source.formats())[task._position]


def _partition(self: PlannedDataFile) -> dict[int, Any]:
    task = self._task
    source: PlannedSource = task._source  # type: ignore[assignment]
    return (source.row_partitions or source.partitions())[task._position].copy()


_VIEWED = ("content", "file_path", "spec_id", "record_count", "file_size_in_bytes")
"""A view's fields read from its task (in C): what every consumer of a plan reads."""


class PlannedDataFile(DataFile):
    """A planned task's :class:`~icecore.manifest.DataFile`: a view onto the task.

    Iceberg Java's ``planFiles()`` hands out data files without column stats unless asked;
    Python users read ``task.data_file.file_path`` in a loop and expect it to cost what
    ``task.file_path`` costs. So the view holds only its task: path, counts and spec id are
    the task's (read in C), format and partition come from the plan's columns, and the
    metrics maps (and every other field) from the manifest, built with the file's
    neighbours, each time one is read. It is a DataFile in every other way (equality both
    ways, ``fields``, ``repr``); ``dataclasses.replace`` and pickling give a complete
    DataFile.
    """

    __slots__ = ("_task",)

    _task: PlannedTask

    content = DataFileContent.DATA  # type: ignore[assignment]  # a data manifest's rows
    file_path = property(attrgetter("_task.file_path"))  # type: ignore[assignment]
    record_count = property(attrgetter("_task.record_count"))  # type: ignore[assignment]
    file_size_in_bytes = property(attrgetter("_task.file_size_in_bytes"))  # type: ignore[assignment]
    spec_id = property(attrgetter("_task._source.spec_id"))  # type: ignore[assignment]
    file_format = property(_file_format)  # type: ignore[assignment]
    partition = property(_partition)  # type: ignore[assignment]

    def __new__(cls, *args: Any, **kwargs: Any) -> DataFile:  # type: ignore[misc]
        """A complete DataFile: what ``dataclasses.replace(view, ...)`` asks for.

        ``replace`` calls the view's class with every field; views themselves are made by
        :attr:`PlannedTask.data_file`, which does not call this.
        """
        return DataFile(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DataFile, tuple(getattr(self, name) for name in _FIELDS))

    def __eq__(self, other: object) -> bool:
        # The dataclass's own __eq__ wants the same class: a view equals the DataFile it
        # stands for.
        if not isinstance(other, DataFile):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _FIELDS)

    __hash__ = DataFile.__hash__


for _name in _FIELDS:
    if _name not in _VIEWED + ("file_format", "partition"):
        setattr(PlannedDataFile, _name, _from_manifest(_name))

_new = object.__new__
_set_task = PlannedDataFile.__dict__["_task"].__set__


class PlannedTask(FileScanTask):
    """A task made from a plan's columns: its data file is a view, made when read.

    Made by the thousand when a plan is iterated, so its constructor only stores.
    ``dataclasses.replace`` calls it with the six fields by keyword, as FileScanTask's: it
    then holds the data file given, as a plain task does.
    """

    __slots__ = ()

    def __init__(  # noqa: PLR0913 - the fast path's positional columns, then replace's fields
        self,
        file_path: str = "",
        record_count: int = 0,
        file_size_in_bytes: int = 0,
        data_sequence_number: int = 0,
        delete_files: tuple[DataFile, ...] = (),
        residual: Expression = _ALWAYS_TRUE,
        source: TaskSource | None = None,
        position: int = 0,
        *,
        data_file: DataFile | None = None,
        spec: PartitionSpec | None = None,
        schema: Schema | None = None,
    ) -> None:
        self.file_path = file_path
        self.record_count = record_count
        self.file_size_in_bytes = file_size_in_bytes
        self.data_sequence_number = data_sequence_number
        self.delete_files = delete_files
        self.residual = residual
        if source is None:  # dataclasses.replace(task, ...) passes the six fields
            if data_file is None or spec is None or schema is None:
                raise TypeError("PlannedTask needs a source and position, or a data file")
            if isinstance(data_file, PlannedDataFile):  # complete, apart from the plan
                data_file = replace(data_file)
            FileScanTask.__init__(
                self, data_file, data_sequence_number, spec, schema, delete_files, residual
            )
            return
        self._source = source
        self._position = position

    @property
    def data_file(self) -> DataFile:
        """The data file: a :class:`PlannedDataFile` view, made anew on each access.

        Not kept on the task, so a million held tasks stay small whatever was read.
        """
        if self._position == GIVEN:
            return self._source.data_file(GIVEN)
        made = _new(PlannedDataFile)
        _set_task(made, self)
        return made


__all__ = [
    "FileScanTask",
    "PlannedDataFile",
    "PlannedSource",
    "PlannedTask",
    "TaskSource",
]
