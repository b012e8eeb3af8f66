"""A FileScanTask: everything a reader needs to read one data file of a scan, and nothing more.

Spec "Scan Planning": a task is a data file, the delete files that apply to it (chosen by
data sequence number and partition, see :mod:`icecore.scan.delete_index`), and the residual
filter left after partition pruning. Tasks are self-contained (iceberg-rust's lesson), so a
reader needs no table, manifest or catalog to read one.

A plan of a million files makes its tasks when they are read, from its columns
(:mod:`icecore.scan.planned`): a task is then a small slotted object whose path, counts,
deletes and residual are plain attributes, and whose :class:`~icecore.manifest.DataFile`
(metrics maps and all, ~4 KB of objects) is built only when asked for
(docs/ARCHITECTURE.md "Performance").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from icecore.expressions.model import AlwaysTrue, Expression
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema

_ALWAYS_TRUE = AlwaysTrue()


class DataFileSource(Protocol):
    """Where a task made from a plan's columns gets its full data file when asked."""

    spec_id: int

    def data_file(self, position: int) -> DataFile:
        """The data file of the plan's row ``position`` (of this source)."""
        ...

    def partition(self, position: int) -> dict[int, Any]:
        """The partition values of the plan's row ``position`` (by partition field id)."""
        ...

    def file_format(self, position: int) -> str:
        """The file format of the plan's row ``position``."""
        ...


_CHEAP = ("content", "file_path", "spec_id", "record_count", "file_size_in_bytes")
"""Fields a :class:`PlannedDataFile` is made with (what every consumer of a plan reads)."""
_FROM_COLUMNS = ("partition", "file_format")
"""Fields read from the plan's columns when first asked (no manifest read)."""
_FROM_MANIFEST = tuple(
    name for name in DataFile.__dataclass_fields__ if name not in _CHEAP + _FROM_COLUMNS
)
"""Fields (metrics maps, offsets, ...) read from the manifest, all at once, when one is asked."""
_SLOTS = {name: DataFile.__dict__[name] for name in DataFile.__dataclass_fields__}
"""DataFile's slot descriptors: a view fills them without going through the frozen setattr."""


class PlannedDataFile(DataFile):
    """A planned task's :class:`~icecore.manifest.DataFile`, made in a microsecond.

    Iceberg Java's ``planFiles()`` hands out data files without column stats unless asked;
    Python users read ``task.data_file.file_path`` in a loop and expect it to cost what
    ``task.file_path`` costs. So the view is made with path, counts, size and spec id; its
    partition and format come from the plan's columns on first access, and the metrics
    maps (and every other field) from the manifest, built with the file's neighbours, the
    first time any of them is read. It is a DataFile in every other way (equality,
    ``dataclasses.replace``, ``fields``): ``replace`` makes a complete one.
    """

    __slots__ = ("_source", "_position")

    def _fill(self, name: str) -> Any:
        """Read field ``name`` (and, for a manifest field, all of them) into its slot."""
        source: DataFileSource = object.__getattribute__(self, "_source")
        position: int = object.__getattribute__(self, "_position")
        if name == "partition":
            _SLOTS[name].__set__(self, source.partition(position))
        elif name == "file_format":
            _SLOTS[name].__set__(self, source.file_format(position))
        else:
            full = source.data_file(position)
            for field in _FROM_MANIFEST:
                _SLOTS[field].__set__(self, getattr(full, field))
        return _SLOTS[name].__get__(self, DataFile)

    def __eq__(self, other: object) -> bool:
        # The dataclass's own __eq__ wants the same class: a view equals the DataFile it
        # stands for.
        if not isinstance(other, DataFile):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _SLOTS)

    __hash__ = DataFile.__hash__


_new = object.__new__
_DATA = DataFileContent.DATA
_set_content = _SLOTS["content"].__set__
_set_path = _SLOTS["file_path"].__set__
_set_spec_id = _SLOTS["spec_id"].__set__
_set_records = _SLOTS["record_count"].__set__
_set_size = _SLOTS["file_size_in_bytes"].__set__
_set_source = PlannedDataFile.__dict__["_source"].__set__
_set_position = PlannedDataFile.__dict__["_position"].__set__


def _lazy_field(name: str) -> property:
    slot = _SLOTS[name]

    def get(self: PlannedDataFile) -> Any:
        try:
            return slot.__get__(self, DataFile)
        except AttributeError:  # not read yet
            return self._fill(name)

    def put(self: PlannedDataFile, value: Any) -> None:
        # Only the dataclass's __init__ (``dataclasses.replace``, unpickling) sets fields.
        slot.__set__(self, value)

    return property(get, put, doc=f"The data file's ``{name}`` (read when first asked).")


for _name in _FROM_COLUMNS + _FROM_MANIFEST:
    setattr(PlannedDataFile, _name, _lazy_field(_name))


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

    Tasks are values: read-only by convention, equal when their fields are.
    """

    __slots__ = (
        "file_path",
        "record_count",
        "file_size_in_bytes",
        "data_sequence_number",
        "spec",
        "schema",
        "delete_files",
        "residual",
        "_data_file",
        "_source",
        "_position",
    )

    file_path: str
    record_count: int
    file_size_in_bytes: int
    data_sequence_number: int
    spec: PartitionSpec
    schema: Schema
    delete_files: tuple[DataFile, ...]
    residual: Expression

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
        self.spec = spec
        self.schema = schema
        self.delete_files = delete_files
        self.residual = residual
        self._data_file: DataFile | None = data_file
        self._source: DataFileSource | None = None
        self._position = 0

    @property
    def data_file(self) -> DataFile:
        """The data file (a planned task gives a view instead: :class:`PlannedTask`)."""
        assert self._data_file is not None
        return self._data_file

    @property
    def partition(self) -> dict[int, Any]:
        """The data file's partition values by partition field id (without building it)."""
        if self._data_file is not None:
            return self._data_file.partition
        assert self._source is not None
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


class PlannedTask(FileScanTask):
    """A task made from a plan's columns: its data file is built when first read.

    Made by the thousand when a plan is iterated, so its constructor only stores.
    ``dataclasses.replace`` calls it with the six fields by keyword, as FileScanTask's.
    """

    __slots__ = ()

    def __init__(
        self,
        file_path: str = "",
        record_count: int = 0,
        file_size_in_bytes: int = 0,
        data_sequence_number: int = 0,
        spec: Any = None,  # PartitionSpec (defaults only for dataclasses.replace's call)
        schema: Any = None,  # Schema
        delete_files: tuple[DataFile, ...] = (),
        residual: Expression = _ALWAYS_TRUE,
        source: DataFileSource | None = None,
        position: int = 0,
        data_file: DataFile | None = None,
    ) -> None:
        if data_file is not None:  # dataclasses.replace(task, ...) passes the six fields
            FileScanTask.__init__(
                self, data_file, data_sequence_number, spec, schema, delete_files, residual
            )
            return
        self.file_path = file_path
        self.record_count = record_count
        self.file_size_in_bytes = file_size_in_bytes
        self.data_sequence_number = data_sequence_number
        self.spec = spec
        self.schema = schema
        self.delete_files = delete_files
        self.residual = residual
        self._data_file = None
        self._source = source
        self._position = position

    @property
    def data_file(self) -> DataFile:
        """The data file: a :class:`PlannedDataFile` view, made anew on each access.

        Not kept on the task, so a million held tasks stay small whatever was read.
        """
        found = self._data_file
        if found is not None:
            return found
        # Made slot by slot (no __init__): this runs once per task of a loop over a plan.
        source = self._source
        assert source is not None
        made = _new(PlannedDataFile)
        _set_content(made, _DATA)
        _set_path(made, self.file_path)
        _set_spec_id(made, source.spec_id)
        _set_records(made, self.record_count)
        _set_size(made, self.file_size_in_bytes)
        _set_source(made, source)
        _set_position(made, self._position)
        return made


__all__ = ["DataFileSource", "FileScanTask", "PlannedDataFile", "PlannedTask"]
