"""Read the rows of scan tasks as Arrow record batches: projection, evolution, deletes, filter.

Implements, for Parquet data files (and Avro ones, decoded by :mod:`icecore.avro`):

* spec "Column Projection": file columns are matched to the scan's schema by field id
  (``PARQUET:field_id``), never by name; a file without ids falls back to the table's
  ``schema.name-mapping.default`` ("Name Mapping Serialization"); output columns are named
  and ordered as the projected schema says;
* spec "Schema Evolution": renamed fields (same id), dropped and re-added fields (a new id
  never reads the old column), ``int -> long``, ``float -> double`` and decimal precision
  widening; "Default values": a field missing from a file reads as its ``initial-default``
  (v3) or null; structs, lists and maps are projected by id at every depth;
* spec "Reserved Field IDs": the metadata columns ``_file``, ``_pos``, ``_spec_id`` and
  ``_partition`` on request;
* spec "Delete Formats": position delete files (rows whose ``file_path`` is the data file),
  equality delete files (delete columns matched by id, NULL equal to NULL, read from the
  data file even after the column was dropped from the table) and, from the latest spec,
  deletion vectors (:mod:`icecore.scan.puffin`);
* the task's residual filter, after deletes, with SQL's three-valued logic (a row is kept
  only when the filter is true, as Spark keeps it).

Files are read through :class:`icecore.io.FileIO` in byte ranges and decoded a batch at a
time, so memory is bounded by a row group, not by the table.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import io as _stdio
import itertools
import json
import uuid
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icecore.arrow_types import arrow_field, arrow_type
from icecore.avro import read_avro_arrow
from icecore.compute import pc
from icecore.errors import IcecoreError, InvalidMetadata, Unsupported
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Not,
    Operation,
    Or,
    UnboundPredicate,
    children,
    conjuncts,
    disjuncts,
)
from icecore.io import FileIO
from icecore.lru import LRU
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import PartitionSpec
from icecore.scan.delete_index import DELETE_FILE_PATH_ID, DELETE_POS_ID, is_deletion_vector
from icecore.scan.puffin import deletion_vector_positions
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    UUIDType,
)
from icecore.values import from_json

FILE_COLUMN = "_file"
POS_COLUMN = "_pos"
SPEC_ID_COLUMN = "_spec_id"
PARTITION_COLUMN = "_partition"

METADATA_COLUMN_IDS: Mapping[str, int] = {
    FILE_COLUMN: 2147483646,
    POS_COLUMN: 2147483645,
    SPEC_ID_COLUMN: 2147483643,
    PARTITION_COLUMN: 2147483642,
}
"""The metadata columns Icecore can add, with their reserved field ids ("Reserved Field IDs")."""

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
"""Table property holding the JSON name mapping ("Column Projection")."""

DEFAULT_BATCH_SIZE = 65_536

_FIELD_ID_KEYS = (b"PARQUET:field_id", b"field_id")
_DELETE_CACHE_SIZE = 32

if TYPE_CHECKING:
    import pyarrow.parquet as pq


# ---------------------------------------------------------------------------------------
# Iceberg types -> Arrow types


def unified_partition_type(specs: Iterable[PartitionSpec], schema: Schema) -> StructType:
    """The ``_partition`` struct over all specs, as Iceberg Java's ``Partitioning.partitionType``.

    Every partition field of every spec, ordered by partition field id; names from the
    newest spec; a field a v1 table turned into ``void`` keeps its non-void type.
    """
    chosen: dict[int, tuple[str, IcebergType, bool]] = {}
    for spec in sorted(specs, key=lambda s: s.spec_id, reverse=True):
        struct = spec.partition_type(schema)
        for pf, nested in zip(spec.fields, struct.fields, strict=True):
            is_void = pf.transform.is_void
            found = chosen.get(pf.field_id)
            if found is None:
                chosen[pf.field_id] = (nested.name, nested.field_type, is_void)
            elif found[2] and not is_void:
                chosen[pf.field_id] = (found[0], nested.field_type, False)
    return StructType(
        tuple(
            NestedField(fid, name, t, required=False)
            for fid, (name, t, _) in sorted(chosen.items())
        )
    )


def _metadata_field(name: str, partition_type: StructType | None) -> pa.Field:
    if name == FILE_COLUMN:
        return pa.field(name, pa.string(), nullable=False)
    if name == POS_COLUMN:
        return pa.field(name, pa.int64(), nullable=False)
    if name == SPEC_ID_COLUMN:
        return pa.field(name, pa.int32(), nullable=False)
    if name == PARTITION_COLUMN:
        ptype = partition_type if partition_type is not None else StructType(())
        return pa.field(name, arrow_type(ptype), nullable=True)
    raise Unsupported(
        f"Unknown metadata column {name!r}; Icecore reads {', '.join(METADATA_COLUMN_IDS)}."
    )


def project_schema(
    schema: Schema,
    columns: Sequence[str] | None = None,
    field_ids: Iterable[int] | None = None,
    case_sensitive: bool = False,
) -> Schema:
    """The part of ``schema`` a read selects, in schema order.

    Args:
        schema: the scan's schema.
        columns: dotted column names (``pickup_loc.lat``); a struct selects all its fields.
        field_ids: field ids to select (added to ``columns``).
        case_sensitive: whether names must match case.

    Raises:
        IcecoreError: a name matches no column.
    """
    if columns is None and field_ids is None:
        return schema
    ids: set[int] = set(field_ids or ())
    for name in columns or ():
        fid = schema.find_id_by_name(name, case_sensitive)
        if fid is None:
            raise IcecoreError(
                f"Column {name!r} is not in the table schema; choose one of "
                f"{', '.join(f.name for f in schema.fields)}."
            )
        ids.add(fid)
    return Schema(tuple(_prune_fields(schema.fields, ids)), schema_id=schema.schema_id)


def _all_ids(t: IcebergType) -> set[int]:
    found: set[int] = set()
    if isinstance(t, StructType | ListType | MapType):
        for child in t.child_fields():
            found.add(child.field_id)
            found |= _all_ids(child.field_type)
    return found


def _prune_fields(fields: Sequence[NestedField], ids: set[int]) -> list[NestedField]:
    kept: list[NestedField] = []
    for f in fields:
        t = f.field_type
        if f.field_id in ids:
            kept.append(f)
        elif isinstance(t, StructType):
            children = _prune_fields(t.fields, ids)
            if children:
                kept.append(replace(f, field_type=StructType(tuple(children))))
        elif isinstance(t, ListType | MapType) and _all_ids(t) & ids:
            kept.append(f)
    return kept


def arrow_schema_for(
    schema: Schema,
    columns: Sequence[str] | None = None,
    metadata_columns: Sequence[str] = (),
    partition_type: StructType | None = None,
) -> pa.Schema:
    """The Arrow schema of what :func:`read_tasks` yields for this projection."""
    projected = project_schema(schema, columns)
    fields = [arrow_field(f) for f in projected.fields]
    fields.extend(_metadata_field(name, partition_type) for name in metadata_columns)
    return pa.schema(fields)


# ---------------------------------------------------------------------------------------
# Name mapping ("Column Projection", "Name Mapping Serialization")


@dataclass(frozen=True, slots=True)
class MappedField:
    """One field mapping: the names a file may use for a field, its id, and its children."""

    names: tuple[str, ...]
    field_id: int | None
    fields: tuple[MappedField, ...] = ()


def parse_name_mapping(text: str | Sequence[Any]) -> tuple[MappedField, ...]:
    """Parse the JSON of ``schema.name-mapping.default``.

    Raises:
        InvalidMetadata: the JSON is not a list of field mappings.
    """
    try:
        obj = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as e:
        raise InvalidMetadata(f"The table's {NAME_MAPPING_PROPERTY} is not JSON: {e}.") from e

    def one(item: Any) -> MappedField:
        if not isinstance(item, Mapping) or not isinstance(item.get("names", []), list):
            raise InvalidMetadata(f"The table's {NAME_MAPPING_PROPERTY} has a bad entry {item!r}.")
        fid = item.get("field-id")
        return MappedField(
            names=tuple(str(n) for n in item.get("names", [])),
            field_id=int(fid) if isinstance(fid, int) else None,
            fields=tuple(one(c) for c in item.get("fields") or ()),
        )

    if not isinstance(obj, list):
        raise InvalidMetadata(f"The table's {NAME_MAPPING_PROPERTY} must be a JSON list.")
    return tuple(one(item) for item in obj)


def _with_id(f: pa.Field, field_id: int | None, t: pa.DataType) -> pa.Field:
    metadata = {b"PARQUET:field_id": str(field_id).encode()} if field_id is not None else None
    return pa.field(f.name, t, nullable=f.nullable, metadata=metadata)


def _map_type(t: pa.DataType, mapping: Sequence[MappedField]) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_map_field(t.field(i), mapping) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_map_field(t.key_field, mapping), _map_field(t.item_field, mapping))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = _map_field(t.value_field, mapping)
        return pa.list_(element) if pa.types.is_list(t) else pa.large_list(element)
    return t


def _map_field(f: pa.Field, mapping: Sequence[MappedField]) -> pa.Field:
    found = next((m for m in mapping if f.name in m.names), None)
    if found is None:
        return _with_id(f, None, f.type)
    return _with_id(f, found.field_id, _map_type(f.type, found.fields))


def _apply_name_mapping(schema: pa.Schema, mapping: Sequence[MappedField]) -> pa.Schema:
    return pa.schema([_map_field(f, mapping) for f in schema])


# ---------------------------------------------------------------------------------------
# Files through FileIO


_HOLE_BYTES = 8 << 10
"""Ranges closer than this are read as one (Arrow's own pre-buffer default)."""
_RANGE_BYTES = 32 << 20
"""A merged range grows no longer than this (Arrow's own pre-buffer default)."""


class _RangeFile(_stdio.RawIOBase):
    """A read-only, seekable file whose reads are FileIO range reads.

    :meth:`prefetch` reads the column chunks of a row group in a few merged range reads on
    the calling thread (what Arrow's ``pre_buffer`` would do on its I/O threads, which must
    not touch Python objects: see :class:`_SourceFile`); reads inside them are served from
    memory until the next prefetch or :meth:`forget`.
    """

    def __init__(self, io: FileIO, path: str, size: int) -> None:
        super().__init__()
        self._io, self._path, self._size, self._pos = io, path, size, 0
        self._held: list[tuple[int, bytes]] = []

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Read the ``[start, end)`` ranges now, neighbours merged, and hold their bytes."""
        merged: list[list[int]] = []
        for start, end in sorted(ranges):
            start, end = max(0, start), min(self._size, end)
            if end <= start:
                continue
            if (
                merged
                and start - merged[-1][1] <= _HOLE_BYTES
                and end - merged[-1][0] <= _RANGE_BYTES
            ):
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self._held = [(a, self._io.read(self._path, a, b)) for a, b in merged]

    def forget(self) -> None:
        """Drop the bytes :meth:`prefetch` holds."""
        self._held = []

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        end = min(self._size, self._pos + len(view))
        if end <= self._pos:
            return 0
        data = next(
            (
                memoryview(held)[self._pos - at : end - at]
                for at, held in self._held
                if at <= self._pos and end <= at + len(held)
            ),
            None,
        )
        if data is None:
            data = memoryview(self._io.read(self._path, self._pos, end))
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)


def _checked_size(io: FileIO, f: DataFile, what: str) -> int:
    size = io.info(f.file_path).size
    if size < f.file_size_in_bytes:
        raise InvalidMetadata(
            f"{what} {f.file_path} is truncated: it has {size} bytes but its manifest entry "
            f"says {f.file_size_in_bytes}."
        )
    return size


def _arrow_error(what: str, path: str, e: Exception) -> InvalidMetadata:
    return InvalidMetadata(f"{what} {path} cannot be read as {_format_word(path)}: {e}")


def _format_word(path: str) -> str:
    return "Avro" if path.lower().endswith(".avro") else "Parquet"


class _SourceFile:
    """A data or delete file opened for batch reads, with its columns indexed by field id.

    Parquet is read with ``pre_buffer=False``, so every read of the file happens on the
    thread that iterates its batches. With pre-buffering, Arrow reads column chunks on its
    own I/O threads, and a read of a Python file object (our FileIO range reads) yields a
    buffer owning a Python ``bytes``: the I/O thread that drops the last reference to it
    (the end of its task, after the reader has the bytes) must take the GIL. When that
    happens after the reader is done and the interpreter has begun to finalize (a
    ``to_arrow(limit=...)`` right before exit: the limit is reached and the program ends
    while the I/O task is still tearing down), Python ends the thread with
    ``pthread_exit``, its unwinding meets a ``noexcept`` C++ frame, and the process aborts
    with "terminate called without an active exception" (exit 134). Each column chunk is
    still one range read; nothing of Arrow's runs Python code on a thread of its own.
    """

    def __init__(
        self,
        io: FileIO,
        f: DataFile,
        what: str,
        name_mapping: Sequence[MappedField] | None,
    ) -> None:
        self.path = f.file_path
        self.what = what
        fmt = f.file_format.upper()
        self._parquet: pq.ParquetFile | None = None
        self._file: _RangeFile | None = None
        self._avro: pa.Table | None = None
        if fmt == "PARQUET":
            import pyarrow.parquet as pq  # only readers need it, not every planning process

            size = _checked_size(io, f, what)
            self._file = _RangeFile(io, f.file_path, size)
            try:
                self._parquet = pq.ParquetFile(pa.PythonFile(self._file), pre_buffer=False)
                schema = self._parquet.schema_arrow
            except (pa.ArrowException, OSError, ValueError) as e:
                raise _arrow_error(what, f.file_path, e) from e
        elif fmt == "AVRO":
            self._avro = read_avro_arrow(io.read(f.file_path), f.file_path)
            schema = self._avro.schema
        else:
            raise Unsupported(
                f"{what} {f.file_path} is in {f.file_format} format; Icecore reads Parquet and "
                "Avro files."
            )
        if not _has_ids(schema):
            if name_mapping is None:
                raise Unsupported(
                    f"{what} {f.file_path} has no field ids and the table has no "
                    f"{NAME_MAPPING_PROPERTY} property to match its columns by name."
                )
            schema = _apply_name_mapping(schema, name_mapping)
        self.schema = schema
        self.index = _index_ids(schema)

    @property
    def num_rows(self) -> int:
        """Rows in the file, from its footer."""
        if self._parquet is not None:
            return int(self._parquet.metadata.num_rows)
        assert self._avro is not None
        return int(self._avro.num_rows)

    def batches(self, field_ids: set[int], batch_size: int) -> Iterator[pa.RecordBatch]:
        """Batches of the top-level columns holding any of ``field_ids`` (all rows, in order).

        Columns keep the file's own names; use :attr:`index` to find a field by id.
        """
        tops = sorted({self.index[fid][0] for fid in field_ids if fid in self.index})
        names = [self.schema.field(i).name for i in tops]
        if not names:
            yield from self._empty_batches(batch_size)
            return
        if self._avro is not None:
            table = self._avro.select(tops)
            yield from table.to_batches(max_chunksize=batch_size)
            return
        assert self._parquet is not None and self._file is not None
        leaves = self._leaf_columns(tops)
        metadata = self._parquet.metadata
        try:
            for group in range(metadata.num_row_groups):
                self._file.prefetch(_chunk_range(metadata.row_group(group), i) for i in leaves)
                batches = self._parquet.iter_batches(
                    batch_size=batch_size, row_groups=[group], columns=names, use_threads=False
                )
                try:
                    for batch in batches:
                        yield batch.rename_columns([str(i) for i in tops])
                finally:
                    batches.close()  # a reader left mid-file (a limit reached) goes now
        except (pa.ArrowException, OSError, ValueError) as e:
            raise _arrow_error(self.what, self.path, e) from e
        finally:
            self._file.forget()

    def _leaf_columns(self, tops: Sequence[int]) -> list[int]:
        """Parquet leaf column indexes under the given top-level fields (depth-first order)."""
        starts = [0]
        for f in self.schema:
            starts.append(starts[-1] + _leaf_count(f.type))
        return [leaf for top in tops for leaf in range(starts[top], starts[top + 1])]

    def _empty_batches(self, batch_size: int) -> Iterator[pa.RecordBatch]:
        remaining = self.num_rows
        while remaining > 0:
            n = min(batch_size, remaining)
            yield pa.record_batch([pa.nulls(n)], names=["__rows"])
            remaining -= n


def _leaf_count(t: pa.DataType) -> int:
    """Parquet leaf columns an Arrow type is stored in."""
    if t.num_fields == 0:
        return 1
    return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))


def _chunk_range(group: Any, column: int) -> tuple[int, int]:
    """Bytes ``[start, end)`` of one column chunk of a row group, from the footer."""
    chunk = group.column(column)
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and 0 < chunk.dictionary_page_offset < start:
        start = chunk.dictionary_page_offset
    return start, start + chunk.total_compressed_size


def _field_id(f: pa.Field) -> int | None:
    if f.metadata:
        for key in _FIELD_ID_KEYS:
            raw = f.metadata.get(key)
            if raw is not None:
                return int(raw)
    return None


def _has_ids(schema: pa.Schema) -> bool:
    return any(_field_id(f) is not None for f in schema)


def _index_ids(schema: pa.Schema) -> dict[int, tuple[int, ...]]:
    """Field id -> positions from the top-level column through nested structs."""
    index: dict[int, tuple[int, ...]] = {}

    def walk(fields: Sequence[pa.Field], prefix: tuple[int, ...]) -> None:
        for i, f in enumerate(fields):
            fid = _field_id(f)
            path = prefix + (i,)
            if fid is not None:
                index.setdefault(fid, path)
            if pa.types.is_struct(f.type):
                walk([f.type.field(j) for j in range(f.type.num_fields)], path)

    walk(list(schema), ())
    return index


def _file_field(schema: pa.Schema, path: tuple[int, ...]) -> pa.Field:
    f = schema.field(path[0])
    for i in path[1:]:
        f = f.type.field(i)
    return f


def _column_at(batch: pa.RecordBatch, schema: pa.Schema, path: tuple[int, ...]) -> pa.Array:
    """The array at a field path; nested struct fields inherit their parents' nulls."""
    arr: pa.Array = batch.column(str(path[0]))
    for i in path[1:]:
        arr = arr.flatten()[i]
    return arr


# ---------------------------------------------------------------------------------------
# Projection by field id


def _arrow_value(t: IcebergType, value: Any) -> Any:
    """A value of :mod:`icecore.values`' Python form as ``pa.scalar`` accepts it."""
    if value is None:
        return None
    if isinstance(t, UUIDType) and isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(t, StructType):
        return {f.name: _arrow_value(f.field_type, value.get(f.field_id)) for f in t.fields}
    if isinstance(t, ListType):
        return [_arrow_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        return [
            (_arrow_value(t.key_type, k), _arrow_value(t.value_type, v)) for k, v in value.items()
        ]
    return value


def _constant(value: Any, t: pa.DataType, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, t)
    return pa.repeat(pa.scalar(value, type=t), n)


def _missing(f: NestedField, n: int) -> pa.Array:
    """A field the file does not have: its initial-default, or nulls ("Default values")."""
    t = arrow_type(f.field_type)
    if f.initial_default is None:
        return pa.nulls(n, t)
    value = from_json(f.field_type, f.initial_default)
    return _constant(_arrow_value(f.field_type, value), t, n)


def _cast(arr: pa.Array, target: pa.DataType, what: str) -> pa.Array:
    if arr.type == target:
        return arr
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage  # type: ignore[attr-defined]
        if arr.type == target:
            return arr
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidMetadata(f"{what}: cannot read {arr.type} as {target} ({e}).") from e


def _child_index(t: pa.DataType) -> dict[int, int]:
    return {fid: i for i in range(t.num_fields) if (fid := _field_id(t.field(i))) is not None}


def _project(arr: pa.Array, target: IcebergType, what: str) -> pa.Array:
    """Reshape a file's array to an Iceberg type, matching nested fields by id."""
    t = arr.type
    mask = arr.is_null() if arr.null_count else None
    if isinstance(target, StructType):
        if not pa.types.is_struct(t):
            raise InvalidMetadata(f"{what}: a struct column is stored as {t}.")
        by_id = _child_index(t)
        children = []
        for f in target.fields:
            i = by_id.get(f.field_id)
            if i is None:
                children.append(_missing(f, len(arr)))
            else:
                children.append(_project(arr.field(i), f.field_type, what))
        fields = [arrow_field(f) for f in target.fields]
        if not fields:
            return (
                pa.nulls(len(arr), pa.struct([]))
                if mask is not None
                else pa.array([{}] * len(arr), pa.struct([]))
            )
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if isinstance(target, ListType):
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            raise InvalidMetadata(f"{what}: a list column is stored as {t}.")
        values = _project(arr.values, target.element_type, what)
        offsets = arr.offsets
        if pa.types.is_large_list(t):
            offsets = offsets.cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, values, type=arrow_type(target), mask=mask)
    if isinstance(target, MapType):
        if not pa.types.is_map(t):
            raise InvalidMetadata(f"{what}: a map column is stored as {t}.")
        keys = _project(arr.keys, target.key_type, what)
        items = _project(arr.items, target.value_type, what)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=arrow_type(target), mask=mask)
    return _cast(arr, arrow_type(target), what)


# ---------------------------------------------------------------------------------------
# Residual filter: SQL semantics (a row is kept only when the filter is TRUE)


_BoolArrays = Callable[[int], pa.Array]


def _is_floating(arr: pa.Array) -> bool:
    return pa.types.is_floating(arr.type)


def _plus_zero(arr: pa.Array) -> pa.Array:
    return pc.add(arr, pa.scalar(0.0, arr.type))


def _predicate_mask(pred: BoundPredicate, column: pa.Array) -> pa.Array:
    op = pred.op
    t = column.type
    if op is Operation.IS_NULL:
        return pc.is_null(column)
    if op is Operation.NOT_NULL:
        return pc.is_valid(column)
    if op in (Operation.IS_NAN, Operation.NOT_NAN):
        # Spark's isnan(NULL) is false, so NOT isnan(NULL) is true.
        if _is_floating(column):
            nan = pc.fill_null(pc.is_nan(column), False)
        else:
            nan = pa.repeat(pa.scalar(False), len(column))
        return nan if op is Operation.IS_NAN else pc.invert(nan)
    if op in (Operation.IN, Operation.NOT_IN):
        values = _value_set(pred, t)
        if _is_floating(column):
            # Spark: -0.0 = 0.0, but Arrow's hash sets keep the two apart; x + 0.0 is +0.0.
            column, values = _plus_zero(column), _plus_zero(values)
        found = _member(column, values)  # NULL for a NULL value, as in SQL
        return found if op is Operation.IN else pc.invert(found)
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        text = column if pa.types.is_string(t) else column.cast(pa.string())
        starts = pc.starts_with(text, pattern=str(pred.value))
        return starts if op is Operation.STARTS_WITH else pc.invert(starts)
    literal = pa.scalar(_arrow_value(pred.term.type, pred.value), type=t)
    compare = {
        Operation.LT: pc.less,
        Operation.LT_EQ: pc.less_equal,
        Operation.GT: pc.greater,
        Operation.GT_EQ: pc.greater_equal,
        Operation.EQ: pc.equal,
        Operation.NOT_EQ: pc.not_equal,
    }[op]
    result = compare(column, literal)
    if _is_floating(column) and op in (Operation.GT, Operation.GT_EQ):
        # Spark orders NaN above every number: NaN > x holds.
        result = pc.or_kleene(result, pc.is_nan(column))
    return result


_IN_VALUES: LRU[int, tuple[BoundPredicate, pa.Array]] = LRU(64)
"""IN lists as Arrow arrays, by the identity of their predicate (which the entry holds, so a
key is never reused by another object): a task's residual keeps the bound predicates of the
scan's filter, so a list of a million values is converted once per scan, not per batch."""


def _value_set(pred: BoundPredicate, t: pa.DataType) -> pa.Array:
    held = _IN_VALUES.get(id(pred))
    if held is not None and held[0] is pred and held[1].type == t:
        return held[1]
    values = pa.array([_arrow_value(pred.term.type, v) for v in pred.values], type=t)
    _IN_VALUES.put(id(pred), (pred, values))
    return values


def _member(column: pa.Array, values: pa.Array) -> pa.Array:
    """``column IN (values)`` in SQL's logic: NULL for a NULL value, else whether it is listed.

    ``is_in`` builds a hash table of its value set on every call: for a million listed values
    and a batch of a few thousand rows, the batch's distinct values are looked up in the list
    instead, and only the listed ones among them make the table.
    """
    if len(values) > max(10_000, 4 * len(column)):
        present = pc.unique(column)
        values = values.filter(pc.is_in(values, value_set=present, skip_nulls=True))
    found = pc.is_in(column, value_set=values, skip_nulls=True)
    return pc.if_else(pc.is_valid(column), found, pa.scalar(None, pa.bool_()))


def _any_of(operands: list[Expression], column: _BoolArrays, n: int) -> pa.Array:
    """OR of ``operands``; equalities and IN lists on one column become one set lookup.

    ``c = 1 OR c = 2 OR ... OR c = 10000`` is ``c IN (1, ..., 10000)`` in three-valued logic
    (NULL when ``c`` is NULL, else whether some value equals it), and one ``is_in`` costs a
    hash per row where 10,000 comparisons cost 10,000 kernels. Float columns keep their
    comparisons: ``=`` there follows IEEE (``-0.0 = 0.0``), which a hash lookup may not.
    """
    masks: list[pa.Array] = []
    groups: dict[int, list[BoundPredicate]] = {}
    for operand in operands:
        if (
            isinstance(operand, BoundPredicate)
            and operand.op in (Operation.EQ, Operation.IN)
            and not _is_floating(column(operand.term.field_id))
        ):
            groups.setdefault(operand.term.field_id, []).append(operand)
        else:
            masks.append(_evaluate(operand, column, n))
    for field_id, preds in groups.items():
        col = column(field_id)
        if len(preds) == 1:
            masks.append(_predicate_mask(preds[0], col))
            continue
        equal = [_arrow_value(p.term.type, p.value) for p in preds if p.op is Operation.EQ]
        arrays = [_value_set(p, col.type) for p in preds if p.op is Operation.IN]
        values = pa.concat_arrays([pa.array(equal, type=col.type), *arrays])
        masks.append(_member(col, values))
    return functools.reduce(pc.or_kleene, masks)


def _evaluate(expr: Expression, column: _BoolArrays, n: int) -> pa.Array:
    if isinstance(expr, AlwaysTrue):
        return pa.repeat(pa.scalar(True), n)
    if isinstance(expr, AlwaysFalse):
        return pa.repeat(pa.scalar(False), n)
    if isinstance(expr, And):
        masks = [_evaluate(operand, column, n) for operand in conjuncts(expr)]
        return functools.reduce(pc.and_kleene, masks)
    if isinstance(expr, Or):
        return _any_of(disjuncts(expr), column, n)
    if isinstance(expr, Not):
        return pc.invert(_evaluate(expr.child, column, n))
    if isinstance(expr, BoundPredicate):
        return _predicate_mask(expr, column(expr.term.field_id))
    if isinstance(expr, UnboundPredicate):
        raise TypeError(f"bind the filter before reading: {expr}")
    raise TypeError(f"not an expression: {expr!r}")


def filter_mask(expr: Expression, columns: Mapping[int, pa.Array], num_rows: int) -> pa.Array:
    """Where a bound filter is TRUE (NULL and FALSE drop the row, as in Spark SQL).

    Args:
        expr: a bound expression (the residual of a task).
        columns: the referenced columns by field id, typed as the bound schema says.
        num_rows: the number of rows.

    Returns:
        a boolean array with no nulls.
    """
    return pc.fill_null(_evaluate(expr, lambda fid: columns[fid], num_rows), False)


def filter_field_ids(expr: Expression) -> set[int]:
    """The field ids a bound expression reads."""
    found: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, BoundPredicate):
            found.add(node.term.field_id)
        stack.extend(children(node))
    return found


# ---------------------------------------------------------------------------------------
# Deletes


def _key_type(field_id: int, schema: Schema, fallback: pa.DataType) -> pa.DataType:
    t = schema.find_type(field_id)
    return arrow_type(t) if t is not None else fallback


def _sentinel(t: pa.DataType) -> pa.Scalar:
    """Some valid value of type ``t`` (stands in for NULL keys in a hash join)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\x00" * t.byte_width, t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(0), t)
    if pa.types.is_date(t):
        return pa.scalar(dt.date(1970, 1, 1), t)
    return pa.scalar(0, t)


def _null_safe_keys(columns: Sequence[pa.Array]) -> dict[str, pa.Array]:
    keys: dict[str, pa.Array] = {}
    for i, col in enumerate(columns):
        keys[f"v{i}"] = pc.fill_null(col, _sentinel(col.type)) if col.null_count else col
        keys[f"n{i}"] = pc.is_null(col)
    return keys


@dataclass(frozen=True, slots=True)
class _EqualityDeletes:
    """The distinct delete keys of one equality delete file, ready to match rows."""

    field_ids: tuple[int, ...]
    types: tuple[pa.DataType, ...]
    keys: pa.Table

    def matches(self, columns: Sequence[pa.Array]) -> pa.Array:
        """Which rows equal some delete key (NULL equals NULL, spec "Equality Delete Files")."""
        n = len(columns[0]) if columns else 0
        if self.keys.num_rows == 0 or n == 0:
            return pa.repeat(pa.scalar(False), n)
        if len(columns) == 1:
            return pc.is_in(columns[0], value_set=self.keys.column(0), skip_nulls=False)
        left = pa.table(_null_safe_keys(columns) | {"__row": pa.array(range(n), pa.int64())})
        names = [c for c in left.column_names if c != "__row"]
        hit = left.join(self.keys, keys=names, join_type="left semi", use_threads=False)
        return pc.is_in(pa.array(range(n), pa.int64()), value_set=hit.column("__row"))


class _DeleteLoader:
    """Reads delete files for a run of tasks, caching the most recently used ones."""

    def __init__(
        self,
        io: FileIO,
        schema: Schema,
        name_mapping: Sequence[MappedField] | None,
        batch_size: int,
    ) -> None:
        self._io = io
        self._schema = schema
        self._mapping = name_mapping
        self._batch_size = batch_size
        self._cache: LRU[tuple[str, int | None], Any] = LRU(_DELETE_CACHE_SIZE)

    def _cached(self, key: tuple[str, int | None], load: Callable[[], Any]) -> Any:
        return self._cache.get_or_make(key, load)

    def positions(self, data_path: str, deletes: Sequence[DataFile]) -> list[int]:
        """Sorted, distinct deleted positions of a data file from its position deletes/DVs."""
        parts: list[pa.Array] = []
        for d in deletes:
            if is_deletion_vector(d):
                dv = self._cached(
                    (d.file_path, d.content_offset),
                    partial(self._deletion_vector, d),
                )
                parts.append(dv.cast(pa.int64()))
            else:
                table = self._cached((d.file_path, None), partial(self._position_file, d))
                mask = pc.equal(table.column(0), pa.scalar(data_path, pa.string()))
                parts.append(table.column(1).filter(mask).combine_chunks())
        if not parts:
            return []
        merged = pc.unique(pa.concat_arrays(parts))
        return sorted(merged.to_pylist())

    def _deletion_vector(self, d: DataFile) -> pa.Array:
        return pa.array(deletion_vector_positions(self._io, d), pa.uint64())

    def _position_file(self, d: DataFile) -> pa.Table:
        source = _SourceFile(self._io, d, "Position delete file", self._mapping)
        for fid in (DELETE_FILE_PATH_ID, DELETE_POS_ID):
            if fid not in source.index:
                raise InvalidMetadata(
                    f"Position delete file {d.file_path} has no column with field id {fid}."
                )
        paths: list[pa.Array] = []
        positions: list[pa.Array] = []
        for batch in source.batches({DELETE_FILE_PATH_ID, DELETE_POS_ID}, self._batch_size):
            paths.append(
                _cast(
                    _column_at(batch, source.schema, source.index[DELETE_FILE_PATH_ID]),
                    pa.string(),
                    d.file_path,
                )
            )
            positions.append(
                _cast(
                    _column_at(batch, source.schema, source.index[DELETE_POS_ID]),
                    pa.int64(),
                    d.file_path,
                )
            )
        if not paths:
            return pa.table(
                {"file_path": pa.array([], pa.string()), "pos": pa.array([], pa.int64())}
            )
        return pa.table({"file_path": pa.chunked_array(paths), "pos": pa.chunked_array(positions)})

    def equality(self, d: DataFile) -> _EqualityDeletes:
        """The keys of an equality delete file, typed as the scan's schema types them."""
        return self._cached((d.file_path, -1), lambda: self._equality_file(d))

    def _equality_file(self, d: DataFile) -> _EqualityDeletes:
        ids = tuple(d.equality_ids or ())
        if not ids:
            raise InvalidMetadata(f"Equality delete file {d.file_path} has no equality_ids.")
        source = _SourceFile(self._io, d, "Equality delete file", self._mapping)
        missing = [fid for fid in ids if fid not in source.index]
        if missing:
            raise InvalidMetadata(
                f"Equality delete file {d.file_path} has no column for equality field id(s) "
                f"{missing}."
            )
        types = tuple(
            _key_type(fid, self._schema, _file_field(source.schema, source.index[fid]).type)
            for fid in ids
        )
        columns: list[list[pa.Array]] = [[] for _ in ids]
        for batch in source.batches(set(ids), self._batch_size):
            for i, fid in enumerate(ids):
                arr = _column_at(batch, source.schema, source.index[fid])
                columns[i].append(_cast(arr, types[i], d.file_path))
        arrays = [
            pa.concat_arrays(parts) if parts else pa.array([], t)
            for parts, t in zip(columns, types, strict=True)
        ]
        if len(ids) == 1:
            keys = pa.table({"v0": pc.unique(arrays[0])})
        else:
            keys = (
                pa.table(_null_safe_keys(arrays))
                .group_by([f"{p}{i}" for i in range(len(ids)) for p in ("v", "n")])
                .aggregate([])
            )
        return _EqualityDeletes(ids, types, keys)


# ---------------------------------------------------------------------------------------
# Reading tasks


@dataclass(frozen=True, slots=True)
class _ReadContext:
    io: FileIO
    projection: Schema
    metadata_columns: tuple[str, ...]
    partition_type: StructType
    name_mapping: tuple[MappedField, ...] | None
    batch_size: int
    deletes: _DeleteLoader
    output_schema: pa.Schema


def _partition_value(task: FileScanTask, ptype: StructType) -> dict[str, Any]:
    values = task.data_file.partition
    return {f.name: _arrow_value(f.field_type, values.get(f.field_id)) for f in ptype.fields}


def _metadata_arrays(ctx: _ReadContext, task: FileScanTask, positions: pa.Array) -> list[pa.Array]:
    n = len(positions)
    out: list[pa.Array] = []
    for name in ctx.metadata_columns:
        if name == FILE_COLUMN:
            out.append(_constant(task.data_file.file_path, pa.string(), n))
        elif name == POS_COLUMN:
            out.append(positions)
        elif name == SPEC_ID_COLUMN:
            out.append(_constant(task.data_file.spec_id, pa.int32(), n))
        else:
            ptype = ctx.output_schema.field(name).type
            value = _partition_value(task, ctx.partition_type)
            out.append(_constant(value, ptype, n) if ptype.num_fields else pa.nulls(n, ptype))
    return out


def _column_by_id(
    source: _SourceFile,
    batch: pa.RecordBatch,
    fid: int,
    want: pa.DataType | None,
    f: NestedField | None,
    what: str,
) -> pa.Array:
    """A field of a file batch by id: projected to ``f`` when given, else cast to ``want``."""
    path = source.index.get(fid)
    n = batch.num_rows
    if path is None:
        if f is not None:
            return _missing(f, n)
        return pa.nulls(n, want if want is not None else pa.null())
    arr = _column_at(batch, source.schema, path)
    if f is not None:
        return _project(arr, f.field_type, what)
    return _cast(arr, want, what) if want is not None else arr


def _read_one(ctx: _ReadContext, task: FileScanTask) -> Generator[pa.RecordBatch, None, None]:
    data_file = task.data_file
    if data_file.content is not DataFileContent.DATA:
        raise InvalidMetadata(f"Task file {data_file.file_path} is a delete file, not data.")
    source = _SourceFile(ctx.io, data_file, "Data file", ctx.name_mapping)
    if source.num_rows != data_file.record_count:
        raise InvalidMetadata(
            f"Data file {data_file.file_path} has {source.num_rows} rows but its manifest entry "
            f"says {data_file.record_count}."
        )
    what = f"Data file {data_file.file_path}"
    residual = task.residual
    filter_ids = filter_field_ids(residual)
    position_deletes = [
        d for d in task.delete_files if d.content is DataFileContent.POSITION_DELETES
    ]
    equality = [
        ctx.deletes.equality(d)
        for d in task.delete_files
        if d.content is DataFileContent.EQUALITY_DELETES
    ]
    deleted = ctx.deletes.positions(data_file.file_path, position_deletes)
    need_ids = set(_all_ids(ctx.projection.as_struct())) | filter_ids
    for eq in equality:
        need_ids.update(eq.field_ids)
    start = 0
    for batch in source.batches(need_ids, ctx.batch_size):
        n = batch.num_rows
        if n == 0:
            continue

        def by_id(
            fid: int,
            want: pa.DataType | None,
            f: NestedField | None,
            batch: pa.RecordBatch = batch,
        ) -> pa.Array:
            return _column_by_id(source, batch, fid, want, f, what)

        keep: pa.Array | None = None
        need_positions = bool(deleted) or POS_COLUMN in ctx.metadata_columns
        positions = pa.array(range(start, start + n), pa.int64()) if need_positions else None
        if deleted:
            lo, hi = bisect_left(deleted, start), bisect_left(deleted, start + n)
            if hi > lo:
                assert positions is not None
                dropped = pa.array(deleted[lo:hi], pa.int64())
                keep = pc.invert(pc.is_in(positions, value_set=dropped))
        for eq in equality:
            cols = [
                _cast(by_id(fid, t, task.schema.find_field(fid)), t, what)
                for fid, t in zip(eq.field_ids, eq.types, strict=True)
            ]
            alive = pc.invert(eq.matches(cols))
            keep = alive if keep is None else pc.and_(keep, alive)
        if filter_ids or not isinstance(residual, AlwaysTrue):
            columns = {}
            for fid in filter_ids:
                f = task.schema.find_field(fid)
                columns[fid] = by_id(fid, None, f)
            passed = filter_mask(residual, columns, n)
            keep = passed if keep is None else pc.and_(keep, passed)
        arrays = [by_id(f.field_id, None, f) for f in ctx.projection.fields]
        if ctx.metadata_columns:
            if positions is None:
                positions = pa.array(range(start, start + n), pa.int64())
            arrays.extend(_metadata_arrays(ctx, task, positions))
        out = _record_batch(arrays, ctx.output_schema, n)
        start += n
        if keep is not None:
            out = out.filter(keep)
        if out.num_rows:
            yield out
    if start != source.num_rows:
        raise InvalidMetadata(
            f"Data file {data_file.file_path} gave {start} of its {source.num_rows} rows."
        )


def _record_batch(arrays: list[pa.Array], schema: pa.Schema, num_rows: int) -> pa.RecordBatch:
    """A batch of ``num_rows`` rows; with no columns asked for (a count), still that many rows."""
    if arrays:
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    return pa.record_batch([pa.nulls(num_rows)], names=["_"]).select([])


def read_tasks(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    projection: Schema | Sequence[int] | None = None,
    *,
    columns: Sequence[str] | None = None,
    metadata_columns: Sequence[str] = (),
    name_mapping: str | Sequence[Any] | None = None,
    partition_type: StructType | None = None,
    limit: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    case_sensitive: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Stream the live rows of scan tasks: projected, deletes applied, residual filtered.

    Args:
        io: the table's FileIO (every byte is read through it).
        tasks: the scan's tasks (spec "Scan Planning").
        projection: the schema to read (default: the first task's schema), or field ids of
            the tasks' schema to select.
        columns: column names to select from the projection (dotted for nested fields).
        metadata_columns: any of ``_file``, ``_pos``, ``_spec_id``, ``_partition``, added
            after the data columns in this order ("Reserved Field IDs").
        name_mapping: the table's ``schema.name-mapping.default`` (JSON text or parsed), for
            files written without field ids.
        partition_type: the ``_partition`` struct; default: all partition fields of the
            tasks' specs (:func:`unified_partition_type`); pass the table's specs to match
            Spark's ``_partition``.
        limit: stop after this many rows.
        batch_size: rows decoded per batch.
        case_sensitive: whether ``columns`` must match case.

    Yields:
        record batches with the schema :func:`arrow_schema_for` gives.

    Raises:
        NotFound: a data, delete or Puffin file does not exist.
        InvalidMetadata: a file is truncated or corrupt, or disagrees with its manifest entry.
        Unsupported: an ORC file, a file without field ids and no name mapping, a type
            Icecore cannot read.
    """
    if limit is not None and limit <= 0:
        return
    # Tasks are read as they come (a plan's tasks are made on demand); only the first is
    # looked at ahead, and all of them only when the caller gives no partition type.
    task_iter = iter(tasks)
    first = next(task_iter, None)
    if partition_type is None:
        rest = list(task_iter)
        task_iter = iter(rest)
        specs = {t.spec.spec_id: t.spec for t in ([first] if first is not None else []) + rest}
    if first is None and projection is None:
        return
    if isinstance(projection, Schema):
        base = projection
    elif first is not None:
        base = first.schema
    else:
        return
    if projection is not None and not isinstance(projection, Schema):
        base = project_schema(base, field_ids=list(projection))
    projected = project_schema(base, columns, case_sensitive=case_sensitive)
    if partition_type is None:
        partition_type = unified_partition_type(specs.values(), base)
    for name in metadata_columns:
        if name not in METADATA_COLUMN_IDS:
            _metadata_field(name, partition_type)  # raises Unsupported
    mapping = parse_name_mapping(name_mapping) if name_mapping is not None else None
    output_schema = pa.schema(
        [arrow_field(f) for f in projected.fields]
        + [_metadata_field(name, partition_type) for name in metadata_columns]
    )
    loader_schema = first.schema if first is not None else base
    ctx = _ReadContext(
        io=io,
        projection=projected,
        metadata_columns=tuple(metadata_columns),
        partition_type=partition_type,
        name_mapping=mapping,
        batch_size=batch_size,
        deletes=_DeleteLoader(io, loader_schema, mapping, batch_size),
        output_schema=output_schema,
    )
    remaining = limit
    for task in itertools.chain([first] if first is not None else [], task_iter):
        # Closed explicitly, so a file left mid-way when the limit is reached (or when the
        # caller stops early) releases its reader here, not whenever it is collected.
        with contextlib.closing(_read_one(ctx, task)) as batches:
            for batch in batches:
                if remaining is not None:
                    if batch.num_rows >= remaining:
                        yield batch.slice(0, remaining)
                        return
                    remaining -= batch.num_rows
                yield batch


def read_task(
    io: FileIO,
    task: FileScanTask,
    projection: Schema | Sequence[int] | None = None,
    **options: Any,
) -> Iterator[pa.RecordBatch]:
    """Stream the live rows of one task (see :func:`read_tasks` for the options)."""
    return read_tasks(io, [task], projection, **options)


def read_arrow(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    projection: Schema | Sequence[int] | None = None,
    **options: Any,
) -> pa.Table:
    """All rows of the tasks as one Arrow table (see :func:`read_tasks`)."""
    task_list = list(tasks)
    batches = list(read_tasks(io, task_list, projection, **options))
    if batches:
        return pa.Table.from_batches(batches)
    if isinstance(projection, Schema):
        base = projection
    elif task_list:
        base = task_list[0].schema
    else:
        return pa.table({})
    if projection is not None and not isinstance(projection, Schema):
        base = project_schema(base, field_ids=list(projection))
    return arrow_schema_for(
        base,
        options.get("columns"),
        options.get("metadata_columns", ()),
        options.get("partition_type")
        or unified_partition_type({t.spec.spec_id: t.spec for t in task_list}.values(), base),
    ).empty_table()


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "FILE_COLUMN",
    "METADATA_COLUMN_IDS",
    "NAME_MAPPING_PROPERTY",
    "PARTITION_COLUMN",
    "POS_COLUMN",
    "SPEC_ID_COLUMN",
    "MappedField",
    "arrow_field",
    "arrow_schema_for",
    "arrow_type",
    "filter_field_ids",
    "filter_mask",
    "parse_name_mapping",
    "project_schema",
    "read_arrow",
    "read_task",
    "read_tasks",
    "unified_partition_type",
]
