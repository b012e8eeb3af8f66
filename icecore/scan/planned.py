"""What a plan holds: the planned rows of each data manifest, read as columns or as tasks.

A plan of a million files must be cheap to consume, not only to count (issue 19): one
Python object per file with its metrics maps costs ~4 KB and ~15 µs. So a plan keeps, per
kept data manifest, its decoded columns (:class:`~icecore.scan.planning_manifest.
PlanningManifest`) and the row numbers it planned, plus the few things Python must decide:
the residual per distinct partition tuple and the delete files of the rows deletes apply to.
From those it gives

- :meth:`PlannedFiles.table`: every planned data file as one Arrow table (path, format,
  spec id, partition, counts, deletes, residual text), taken from the columns with no Python
  object per file;
- :class:`TaskList`: ``plan.tasks``, a sequence whose :class:`~icecore.scan.task.
  PlannedTask` items are made when read, each a small slotted object whose ``data_file`` is
  built only when asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np
import pyarrow as pa

from icecore.arrow_types import arrow_field
from icecore.compute import pc
from icecore.expressions.model import AlwaysTrue, Expression
from icecore.manifest import DataFile, DataFileContent
from icecore.manifest_arrow import partition_dicts
from icecore.partitioning import PartitionSpec
from icecore.scan.delete_index import DeleteIndex, is_deletion_vector, partition_value_key
from icecore.scan.lazy import LazySequence
from icecore.scan.planning_manifest import PlanningManifest
from icecore.scan.task import FileScanTask, PlannedTask
from icecore.schema import Schema
from icecore.types import StructType

_I32, _I64 = pa.int32(), pa.int64()
_ALWAYS_TRUE = AlwaysTrue()
TASK_COLUMNS = (
    "file_path",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "sequence_number",
)
"""The columns of the planned rows a plan keeps (what tasks and ``files()`` read)."""
LOOKUP_CHUNK = 4096
"""Data files built at a time to look up the deletes that may apply to them."""
DATA_FILE_CHUNK = 256
"""Data files built at once when one task's is asked for (its neighbours' come next)."""
RECENT_CHUNKS = 4
"""Chunks of built data files a block keeps for the tasks asked next."""

DELETE_TYPE = pa.list_(pa.struct([("file_path", pa.string()), ("kind", pa.string())]))
"""``files()``' ``delete_files``: per data file, each delete file's path and kind."""


def delete_kind(delete_file: DataFile) -> str:
    """``position``, ``equality`` or ``deletion_vector`` (a position delete in Puffin)."""
    if delete_file.content is DataFileContent.EQUALITY_DELETES:
        return "equality"
    return "deletion_vector" if is_deletion_vector(delete_file) else "position"


def files_schema(partition: pa.StructType) -> pa.Schema:
    """The schema of :meth:`PlannedFiles.table` for a plan's ``_partition`` struct."""
    return pa.schema(
        [
            pa.field("file_path", pa.string(), nullable=False),
            pa.field("file_format", pa.string(), nullable=False),
            pa.field("spec_id", _I32, nullable=False),
            pa.field("partition", partition),
            pa.field("record_count", _I64, nullable=False),
            pa.field("file_size_in_bytes", _I64, nullable=False),
            pa.field("data_sequence_number", _I64, nullable=False),
            pa.field("delete_files", DELETE_TYPE, nullable=False),
            pa.field("residual", pa.string(), nullable=False),
        ]
    )


class BlockColumns:
    """What tasks and ``files()`` read of one manifest's planned rows, cacheable.

    A pure function of the manifest (immutable), the rows a filter keeps of it and that
    filter's residual evaluator: :class:`~icecore.scan.context.PlanContext` keeps it under
    the same key as the file verdicts, so planning and iterating the same filter again reads
    no manifest column (deletes, which depend on the snapshot, are looked up per plan).
    Partition values and residuals are worked out on first use, once per distinct
    partition tuple of the planned rows (never when no filter leaves a residual).

    Args:
        columns: :data:`TASK_COLUMNS` of the planned rows (copies, not views of a file).
        codes: per planned row, the index of its partition tuple in the manifest.
        residual: the residual of a partition tuple (the spec's residual evaluator).
        always_true: whether every residual is ``AlwaysTrue`` (a scan without a filter).
    """

    __slots__ = (
        "columns",
        "codes",
        "_residual_of",
        "_always_true",
        "_distinct",
        "_partitions",
        "_residuals",
        "_shared_residual",
    )

    def __init__(
        self,
        columns: pa.Table,
        codes: np.ndarray,
        residual: Callable[[dict[int, Any]], Expression],
        always_true: bool,
    ) -> None:
        self.columns = columns
        self.codes = codes
        self._residual_of = residual
        self._always_true = always_true
        self._distinct = int(len(np.unique(codes))) if len(codes) else 0
        self._partitions: dict[int, dict[int, Any]] | None = None
        self._residuals: list[Expression] | None = None
        self._shared_residual: tuple[Expression | None] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held (what the cache is bounded by; Python objects estimated)."""
        return int(self.columns.nbytes) + int(self.codes.nbytes) + 500 * self._distinct + 500

    def partitions(self) -> dict[int, dict[int, Any]]:
        """The partition values of each tuple the planned rows have, by code."""
        if self._partitions is None:
            found: dict[int, dict[int, Any]] = {}
            if len(self.codes):
                distinct, firsts = np.unique(self.codes, return_index=True)
                column = self.columns.column("partition").combine_chunks()
                values = partition_dicts(column.take(pa.array(firsts, _I64)))
                found = dict(zip(distinct.tolist(), values, strict=True))
            self._partitions = found
        return self._partitions

    def residuals(self) -> list[Expression]:
        """The residual of each partition tuple, indexed by code (made once)."""
        if self._residuals is None:
            size = int(self.codes.max()) + 1 if len(self.codes) else 0
            if self._always_true:
                self._residuals = [_ALWAYS_TRUE] * size
            else:
                out: list[Any] = [None] * size
                for code, values in self.partitions().items():
                    out[code] = self._residual_of(values)
                self._residuals = out
        return self._residuals

    def shared_residual(self) -> Expression | None:
        """The residual every planned row has, when they all have the same one; else None.

        Always so without a filter, and often with one (a filter on columns that are not
        partition sources leaves the same residual everywhere): tasks then take it without
        a lookup per row.
        """
        if self._shared_residual is None:
            found = [r for r in self.residuals() if r is not None]
            first = found[0] if found else None
            same = first is not None and all(r is first or r == first for r in found)
            self._shared_residual = (first if same else None,)
        return self._shared_residual[0]


def block_columns(
    manifest: PlanningManifest,
    rows: np.ndarray,
    residual: Callable[[dict[int, Any]], Expression],
    always_true: bool,
    read: pa.Table | None = None,
) -> BlockColumns:
    """Read :class:`BlockColumns` from a manifest (one read of its columns).

    Args:
        manifest: the decoded manifest.
        rows: the manifest rows planned, ascending.
        residual: the residual of a partition tuple (the spec's residual evaluator).
        always_true: whether the scan's row filter is ``AlwaysTrue`` (no residual).
        read: the manifest's columns when already read (holding :data:`TASK_COLUMNS`).
    """
    source = read if read is not None else manifest.read(TASK_COLUMNS)
    columns = source.select(list(TASK_COLUMNS))
    if len(rows) == columns.num_rows:  # every row (ascending, distinct): nothing to take
        codes = np.asarray(manifest.codes, dtype=np.int32)
    else:
        columns = columns.take(pa.array(rows, _I64))
        codes = np.asarray(manifest.codes[rows], dtype=np.int32)
    return BlockColumns(columns, codes, residual, always_true)


class PlannedBlock:
    """The planned rows of one data manifest, with their residuals and deletes.

    Args:
        manifest: the decoded manifest.
        spec: its partition spec.
        rows: the manifest rows planned, ascending.
        rows_planned: their records.
        load: their :class:`BlockColumns` (from the plan context's cache, or read).
        data: their :class:`BlockColumns` when the plan just made them.
        full: the manifest decoded with its metrics maps, when ``manifest`` was decoded
            without them (a plan that needs none): read only for a data file asked for.
    """

    __slots__ = (
        "manifest",
        "spec",
        "spec_id",
        "rows",
        "rows_planned",
        "deletes",
        "schema",
        "row_formats",
        "row_partitions",
        "_load",
        "_data",
        "_full",
        "_recent",
        "_lock",
    )

    def __init__(
        self,
        manifest: PlanningManifest,
        spec: PartitionSpec,
        rows: np.ndarray,
        rows_planned: int,
        load: Callable[[], BlockColumns],
        data: BlockColumns | None = None,
        full: Callable[[], PlanningManifest] | None = None,
    ) -> None:
        self.manifest = manifest
        self.spec = spec
        self.spec_id = spec.spec_id
        """The partition spec id of every planned row."""
        self.rows = rows
        self.rows_planned = rows_planned
        self.deletes: dict[int, tuple[DataFile, ...]] = {}
        """Delete files per position (of :attr:`rows`) that has any."""
        self.schema: Schema | None = None
        """The schema the plan reads with (its tasks'), set by :class:`PlannedFiles`."""
        self.row_formats: list[str] | None = None
        """Each planned row's file format, once :meth:`formats` has made them."""
        self.row_partitions: list[dict[int, Any]] | None = None
        """Each planned row's partition values (shared dicts), once :meth:`partitions` has."""
        self._load = load
        self._data = data
        self._full = full
        self._recent: dict[int, list[DataFile]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.rows)

    def data(self) -> BlockColumns:
        """The block's columns, residuals and partition codes (loaded once per plan)."""
        if self._data is None:
            self._data = self._load()
        return self._data

    def columns(self) -> pa.Table:
        """:data:`TASK_COLUMNS` of the planned rows."""
        return self.data().columns

    def find_deletes(self, index: DeleteIndex) -> None:
        """Fill :attr:`deletes` from the scan's delete index.

        Only rows some delete may apply to are looked at one by one: rows of a partition
        no delete file names (and of no path a deletion vector or a file-scoped position
        delete names) get none, decided per distinct partition tuple.
        """
        if not len(index) or not len(self.rows):
            return
        pm = self.manifest
        data = self.data()
        codes, partitions = data.codes, data.partitions()
        spec_id = pm.spec_id
        may = np.zeros(int(codes.max()) + 1, dtype=bool)
        for code, values in partitions.items():
            key = (spec_id, tuple((fid, partition_value_key(v)) for fid, v in values.items()))
            may[code] = index.may_apply_to_partition(key)
        candidates = may[codes]
        if index.has_path_deletes:
            paths = self.columns().column("file_path").to_pylist()
            by_path = np.fromiter(
                (index.may_apply_to_path(p) for p in paths), dtype=bool, count=len(paths)
            )
            candidates |= by_path
        positions = np.flatnonzero(candidates)
        if len(positions):
            pm = self.with_metrics()
        for lo in range(0, len(positions), LOOKUP_CHUNK):
            chunk = positions[lo : lo + LOOKUP_CHUNK]
            entries = pm.entries(self.rows[chunk])
            for position, entry in zip(chunk.tolist(), entries, strict=True):
                found = index.for_data_file(entry.data_file, entry.sequence_number or 0)
                if found:
                    self.deletes[position] = found

    def data_file(self, position: int) -> DataFile:
        """The full data file of planned row ``position`` (metrics maps included).

        Built with its chunk's neighbours (:data:`DATA_FILE_CHUNK`), one read of the
        manifest's columns for them all: a reader or a loop asking every task for its data
        file in order reads each manifest once per chunk, not once per file.
        """
        chunk, offset = divmod(position, DATA_FILE_CHUNK)
        with self._lock:
            built = self._recent.get(chunk)
            if built is None:
                lo = chunk * DATA_FILE_CHUNK
                entries = self.with_metrics().entries(self.rows[lo : lo + DATA_FILE_CHUNK])
                built = [e.data_file for e in entries]
                if len(self._recent) >= RECENT_CHUNKS:
                    self._recent.pop(next(iter(self._recent)))
                self._recent[chunk] = built
        return built[offset]

    def with_metrics(self) -> PlanningManifest:
        """The manifest with its metrics maps: :attr:`manifest`, or it decoded with them.

        The same live entries in the same order either way (both keep the ADDED and
        EXISTING rows as written), so :attr:`rows` index both.
        """
        return self.manifest if self._full is None else self._full()

    def file_format(self, position: int) -> str:
        """The file format of planned row ``position``."""
        return (self.row_formats or self.formats())[position]

    def formats(self) -> list[str]:
        """Every planned row's file format (:attr:`row_formats`, made on first use).

        One string per distinct format, shared: a loop reading every view's format pays a
        list lookup, not an Arrow scalar.
        """
        if self.row_formats is None:
            encoded = self.data().columns.column("file_format").combine_chunks()
            encoded = encoded.dictionary_encode()
            names = encoded.dictionary.to_pylist()
            self.row_formats = list(map(names.__getitem__, _ints(encoded.indices)))
        return self.row_formats

    def partition(self, position: int) -> dict[int, Any]:
        """The partition values of planned row ``position`` (a copy of its tuple's dict)."""
        return (self.row_partitions or self.partitions())[position].copy()

    def partitions(self) -> list[dict[int, Any]]:
        """Every planned row's partition values (:attr:`row_partitions`, made on first use).

        One dict per distinct partition tuple, shared between its rows: readers copy.
        """
        if self.row_partitions is None:
            data = self.data()
            self.row_partitions = list(map(data.partitions().__getitem__, data.codes.tolist()))
        return self.row_partitions

    def tasks(self, lo: int, hi: int) -> list[FileScanTask]:
        """Tasks of planned rows ``lo:hi``: plain attributes read from the columns."""
        data = self.data()
        columns = data.columns.slice(lo, hi - lo)
        paths = columns.column("file_path").to_pylist()
        counts = _ints(columns.column("record_count"))
        sizes = _ints(columns.column("file_size_in_bytes"))
        sequence_numbers = _ints(columns.column("sequence_number"))
        shared = data.shared_residual()
        residual: Any = (
            repeat(shared)
            if shared is not None
            else map(data.residuals().__getitem__, data.codes[lo:hi].tolist())
        )
        deletes: Any = repeat(())
        if self.deletes:
            get = self.deletes.get
            deletes = [get(p, ()) for p in range(lo, hi)]
        return list(
            map(
                PlannedTask,
                paths,
                counts,
                sizes,
                sequence_numbers,
                deletes,
                residual,
                repeat(self),
                range(lo, hi),
            )
        )

    def table(self, partition: pa.StructType) -> pa.Table:
        """The planned rows as :func:`files_schema` columns."""
        data = self.data()
        columns = data.columns
        n = columns.num_rows
        texts = pa.array([str(r) if r is not None else "" for r in data.residuals()], pa.string())
        residual = texts.take(pa.array(data.codes, _I32)) if n else pa.array([], pa.string())
        spec_id = pc.fill_null(columns.column("spec_id"), self.spec.spec_id).cast(_I32)
        sequence_numbers = pc.fill_null(columns.column("sequence_number"), 0)
        arrays = [
            columns.column("file_path"),
            columns.column("file_format"),
            spec_id,
            _unified_partition(columns.column("partition"), partition),
            columns.column("record_count"),
            columns.column("file_size_in_bytes"),
            sequence_numbers,
            self._delete_column(n),
            residual,
        ]
        return pa.Table.from_arrays(arrays, schema=files_schema(partition))

    def _delete_column(self, n: int) -> pa.Array:
        lengths = np.zeros(n, dtype=np.int32)
        paths: list[str] = []
        kinds: list[str] = []
        for position in sorted(self.deletes):
            found = self.deletes[position]
            lengths[position] = len(found)
            paths.extend(d.file_path for d in found)
            kinds.extend(delete_kind(d) for d in found)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        values = pa.StructArray.from_arrays(
            [pa.array(paths, pa.string()), pa.array(kinds, pa.string())],
            fields=list(DELETE_TYPE.value_type),
        )
        return pa.ListArray.from_arrays(pa.array(offsets, _I32), values, type=DELETE_TYPE)


def _ints(column: pa.ChunkedArray) -> list[int]:
    """An integer column as Python ints (nulls as 0), through numpy (faster than to_pylist)."""
    filled = pc.fill_null(column, 0) if column.null_count else column
    return np.asarray(filled.to_numpy()).tolist()  # type: ignore[no-any-return]


def partition_struct(
    partition_type: StructType | None, blocks: Sequence[PlannedBlock]
) -> pa.StructType:
    """The Arrow ``_partition`` struct of ``files()``: every spec's fields, by field id.

    Types are the decoded manifests' own (as :mod:`icecore.manifest_arrow` reads them), or,
    for a field no planned manifest has, its Arrow type.
    """
    seen: dict[int, pa.DataType] = {}
    for block in blocks:
        for f in block.manifest.source.schema.field("partition").type:
            seen.setdefault(int((f.metadata or {})[b"field_id"]), f.type)
    fields: list[pa.Field] = []
    for nested in partition_type.fields if partition_type is not None else ():
        kind = seen.get(nested.field_id)
        if kind is None:
            kind = arrow_field(nested).type
        fields.append(
            pa.field(nested.name, kind, metadata={b"field_id": str(nested.field_id).encode()})
        )
    return pa.struct(fields)


def _unified_partition(column: pa.ChunkedArray, target: pa.StructType) -> pa.Array:
    """A manifest's partition column laid out as ``target`` (missing fields null)."""
    struct = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(struct)
    by_id = {int((f.metadata or {})[b"field_id"]): i for i, f in enumerate(struct.type)}
    children: list[pa.Array] = []
    for f in target:
        i = by_id.get(int((f.metadata or {})[b"field_id"]))
        if i is None:
            children.append(pa.nulls(n, f.type))
            continue
        child = pc.struct_field(struct, [i])
        children.append(child if child.type == f.type else child.cast(f.type))
    if not len(target):  # unpartitioned: an empty struct per row, no Python list
        return pa.Array.from_buffers(target, n, [None], children=[])
    return pa.StructArray.from_arrays(children, fields=list(target))


class PlannedFiles:
    """The planned blocks of a plan, read as one Arrow table or as tasks.

    Args:
        blocks: the planned rows of each kept data manifest, in plan order.
        schema: the schema the scan reads with (every task's).
        partition_type: the table's ``_partition`` struct over all specs.
    """

    def __init__(
        self,
        blocks: Sequence[PlannedBlock],
        schema: Schema,
        partition_type: StructType | None,
    ) -> None:
        self.blocks = [b for b in blocks if len(b)]
        for b in self.blocks:
            b.schema = schema
        self.schema = schema
        self._partition_type = partition_type
        self._table: pa.Table | None = None

    def __len__(self) -> int:
        return sum(len(b) for b in self.blocks)

    def table(self, limit: int | None = None) -> pa.Table:
        """The planned data files, one row each (see :func:`files_schema`).

        Args:
            limit: the first ``limit`` files only (only the manifests holding them are
                read); every file by default, made once and kept.
        """
        if self._table is not None:
            return self._table if limit is None else self._table.slice(0, limit)
        struct = partition_struct(self._partition_type, self.blocks)
        tables: list[pa.Table] = []
        rows = 0
        for b in self.blocks:
            if limit is not None and rows >= limit:
                break
            tables.append(b.table(struct))
            rows += len(b)
        found = pa.concat_tables(tables) if tables else files_schema(struct).empty_table()
        if limit is None:
            self._table = found
            return found
        return found.slice(0, limit)

    def paths(self) -> list[str]:
        """Every planned data file's path, in plan order."""
        out: list[str] = []
        for b in self.blocks:
            out.extend(b.columns().column("file_path").to_pylist())
        return out

    def applied_deletes(self) -> tuple[str, ...]:
        """Paths of the distinct delete files the planned files apply, in first-use order."""
        applied: dict[str, None] = {}
        for b in self.blocks:
            for position in sorted(b.deletes):
                for d in b.deletes[position]:
                    applied.setdefault(d.file_path, None)
        return tuple(applied)

    def tasks(self) -> TaskList:
        """The tasks, made when read."""
        return TaskList([(len(b), b.tasks) for b in self.blocks], self.paths)


class TaskList(LazySequence[FileScanTask]):
    """The tasks of a plan, made when read (a million-file plan holds columns, not tasks)."""

    def __init__(
        self,
        segments: Sequence[tuple[int, Callable[[int, int], Sequence[FileScanTask]]]],
        paths: Callable[[], list[str]],
    ) -> None:
        super().__init__(segments)
        self._paths = paths

    def file_paths(self) -> list[str]:
        """Every task's data file path, without making the tasks."""
        return self._paths()

    def __iter__(self) -> Iterator[FileScanTask]:
        # Chained in C: a generator resumed per task costs more than the task's making.
        batch = self._batch
        return chain.from_iterable(
            produce(lo, min(lo + batch, n))
            for n, produce in self._segments
            for lo in range(0, n, batch)
        )


def tasks_table(tasks: Sequence[FileScanTask], partition_type: StructType | None) -> pa.Table:
    """``files()`` of tasks made elsewhere (one Python pass; plans use their columns)."""
    struct_type = partition_struct(partition_type, ())
    rows: list[Mapping[str, Any]] = []
    for t in tasks:
        df = t.data_file
        rows.append(
            {
                "file_path": t.file_path,
                "file_format": df.file_format,
                "spec_id": df.spec_id,
                "partition": {
                    f.name: df.partition.get(int((f.metadata or {})[b"field_id"]))
                    for f in struct_type
                },
                "record_count": t.record_count,
                "file_size_in_bytes": t.file_size_in_bytes,
                "data_sequence_number": t.data_sequence_number,
                "delete_files": [
                    {"file_path": d.file_path, "kind": delete_kind(d)} for d in t.delete_files
                ],
                "residual": str(t.residual),
            }
        )
    return pa.Table.from_pylist(rows, schema=files_schema(struct_type))


__all__ = [
    "BlockColumns",
    "block_columns",
    "DELETE_TYPE",
    "TASK_COLUMNS",
    "PlannedBlock",
    "PlannedFiles",
    "TaskList",
    "delete_kind",
    "files_schema",
    "partition_struct",
    "tasks_table",
]
