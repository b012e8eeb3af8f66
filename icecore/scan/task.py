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
from icecore.manifest import DataFile
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema

_ALWAYS_TRUE = AlwaysTrue()


class DataFileSource(Protocol):
    """Where a task made from a plan's columns gets its full data file when asked."""

    def data_file(self, position: int) -> DataFile:
        """The data file of the plan's row ``position`` (of this source)."""
        ...

    def partition(self, position: int) -> dict[int, Any]:
        """The partition values of the plan's row ``position`` (by partition field id)."""
        ...


class FileScanTask:
    """One data file to read, with its deletes and residual filter.

    Attributes:
        data_file: the data file (built on first access for a task made from a plan's
            columns, then kept).
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
        """The data file (built from the plan's columns on first access, then kept)."""
        found = self._data_file
        if found is None:
            assert self._source is not None
            found = self._data_file = self._source.data_file(self._position)
        return found

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


__all__ = ["DataFileSource", "FileScanTask", "PlannedTask"]
