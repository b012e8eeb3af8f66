"""Manifests as Arrow tables: the one manifest decoder, inheritance applied by columns.

Every reader of manifests goes through :func:`read_manifest_arrow` (see
docs/ARCHITECTURE.md "Performance":
per-entry Python objects cost ~8x a columnar decode): the planner lays its rows out for
pruning (:mod:`icecore.scan.planning_manifest`), the layout and the metadata tables read its
columns, and :func:`read_manifest` builds :class:`~icecore.manifest.ManifestEntry` views
from its rows for callers that want objects. It implements "Manifests", "Manifest Entry
Fields", the ``data_file`` struct, "Sequence Number Inheritance" and "First Row ID
Inheritance" with :mod:`pyarrow.compute`, once. :func:`live_files` lists the live files of
a snapshot's manifests for every consumer.

Polars decodes the Avro blocks but drops the ``field-id`` attributes, so columns are found
by the Avro names the file's own header schema gives each field id (Appendix A); a v1
writer's names and sanitized partition names read the same.

Output columns (field ids in ``field_id`` metadata):

- ``status`` int32, ``snapshot_id``, ``sequence_number``, ``file_sequence_number`` int64
  (after inheritance);
- ``content`` int32, ``file_path``, ``file_format`` string, ``spec_id`` int32,
  ``record_count``, ``file_size_in_bytes`` int64;
- ``partition``: a struct with one field per partition field, named as the spec names it,
  with ``field_id`` (partition field id) and ``iceberg_type`` metadata, in the Arrow type of
  the transform's result (date32, int32, time64[us], timestamp[us(, UTC)], timestamp[ns],
  decimal128, string, binary, ``binary(16)`` for uuid, ...);
- ``column_sizes``, ``value_counts``, ``null_value_counts``, ``nan_value_counts`` as
  ``map<int32, int64>``; ``lower_bounds``, ``upper_bounds`` as ``map<int32, binary>``
  (Appendix D bytes);
- ``key_metadata`` binary, ``split_offsets`` list<int64>, ``equality_ids`` list<int32>,
  ``sort_order_id`` int32, ``first_row_id`` int64, ``referenced_data_file`` string,
  ``content_offset``, ``content_size_in_bytes`` int64.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from icecore.arrow_types import arrow_type
from icecore.avro import (
    HEADER_METADATA_PREFIX,
    LeaveOut,
    read_avro_many,
    read_avro_polars_arrow,
)
from icecore.compute import one_array, pc
from icecore.errors import InvalidMetadata, Unsupported
from icecore.io import MAX_METADATA_BYTES, FileIO
from icecore.manifest import (
    AvroFields,
    DataFile,
    DataFileContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    non_null_branch,
)
from icecore.metadata import Snapshot, TableMetadata
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema, schema_from_json
from icecore.types import FixedType, IcebergType, StructType, UnknownType

# Field ids of "Manifest Entry Fields" and the data_file struct.
_ME_STATUS, _ME_SNAPSHOT_ID, _ME_DATA_FILE, _ME_SEQ, _ME_FILE_SEQ = 0, 1, 2, 3, 4
_DF_PARTITION = 102

_I32, _I64 = pa.int32(), pa.int64()
_COUNTS = pa.map_(_I32, _I64)
_BOUNDS = pa.map_(_I32, pa.binary())

# (column name, data_file field id, Arrow type) of the data_file columns copied as they are.
_DATA_FILE_COLUMNS: tuple[tuple[str, int, pa.DataType], ...] = (
    ("file_path", 100, pa.string()),
    ("file_format", 101, pa.string()),
    ("record_count", 103, _I64),
    ("file_size_in_bytes", 104, _I64),
    ("column_sizes", 108, _COUNTS),
    ("value_counts", 109, _COUNTS),
    ("null_value_counts", 110, _COUNTS),
    ("nan_value_counts", 137, _COUNTS),
    ("lower_bounds", 125, _BOUNDS),
    ("upper_bounds", 128, _BOUNDS),
    ("key_metadata", 131, pa.binary()),
    ("split_offsets", 132, pa.list_(_I64)),
    ("equality_ids", 135, pa.list_(_I32)),
    ("sort_order_id", 140, _I32),
    ("referenced_data_file", 143, pa.string()),
    ("content_offset", 144, _I64),
    ("content_size_in_bytes", 145, _I64),
)
_CONTENT, _FIRST_ROW_ID = 134, 142
_REQUIRED = {"file_path", "file_format", "record_count", "file_size_in_bytes"}


def _field(name: str, field_id: int, t: pa.DataType) -> pa.Field:
    return pa.field(name, t, metadata={b"field_id": str(field_id).encode()})


def output_schema(partition: pa.StructType) -> pa.Schema:
    """The schema of :func:`read_manifest_arrow`'s tables for a given partition struct."""
    fields = [
        _field("status", _ME_STATUS, _I32),
        _field("snapshot_id", _ME_SNAPSHOT_ID, _I64),
        _field("sequence_number", _ME_SEQ, _I64),
        _field("file_sequence_number", _ME_FILE_SEQ, _I64),
        _field("content", _CONTENT, _I32),
        *(_field(n, fid, t) for n, fid, t in _DATA_FILE_COLUMNS[:2]),
        pa.field("spec_id", _I32),
        *(_field(n, fid, t) for n, fid, t in _DATA_FILE_COLUMNS[2:4]),
        _field("partition", _DF_PARTITION, partition),
        *(_field(n, fid, t) for n, fid, t in _DATA_FILE_COLUMNS[4:14]),
        _field("first_row_id", _FIRST_ROW_ID, _I64),
        *(_field(n, fid, t) for n, fid, t in _DATA_FILE_COLUMNS[14:]),
    ]
    return pa.schema(fields)


def _arrow_partition_type(t: IcebergType) -> pa.DataType:
    if isinstance(t, FixedType):
        return pa.binary()  # polars decodes Avro fixed as variable-length binary
    try:
        return arrow_type(t)
    except Unsupported as e:
        raise InvalidMetadata(f"A partition field of type {t} cannot be read into Arrow.") from e


# ---------------------------------------------------------------------------------------
# Reading


def _header(table: pa.Table, key: str) -> str | None:
    metadata = table.schema.metadata or {}
    raw = metadata.get(HEADER_METADATA_PREFIX + key.encode())
    return raw.decode() if raw is not None else None


def _child(struct: pa.Array, name: str) -> pa.Array:
    """A struct's child (the struct's own nulls applied, if it has any)."""
    if struct.null_count == 0 and struct.offset == 0:
        return struct.field(name)  # no kernel dispatch: ~10x cheaper per call
    return pc.struct_field(struct, [name])


def _as_map(values: pa.Array, target: pa.MapType, what: str) -> pa.Array:
    """A key/value array (polars' ``list<struct<key, value>>``, or a map) as an Arrow map."""
    if pa.types.is_map(values.type):
        return values.cast(target)
    if not (pa.types.is_list(values.type) or pa.types.is_large_list(values.type)):
        raise InvalidMetadata(f"{what} is {values.type}, not a map.")
    entries = values.values
    keys = _cast(_child(entries, "key"), target.key_type)
    items = _cast(_child(entries, "value"), target.item_type)
    offsets = values.offsets.cast(_I32)
    mask = values.is_null() if values.null_count else None
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)


def _convert(values: pa.Array, target: pa.DataType, what: str) -> pa.Array:
    try:
        if pa.types.is_map(target):
            return _as_map(values, target, what)
        if pa.types.is_time64(target) and pa.types.is_time64(values.type):
            return values.cast(target)  # polars reads time-micros as time64[ns]
        if pa.types.is_fixed_size_binary(target) and not pa.types.is_fixed_size_binary(values.type):
            return _fixed(values, target.byte_width, what)
        return _cast(values, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidMetadata(f"{what} ({values.type}) cannot be read as {target}: {e}") from e


def _cast(values: pa.Array, target: pa.DataType) -> pa.Array:
    """``values`` as ``target`` (themselves when already of that type)."""
    return values if values.type == target else values.cast(target)


def _fixed(values: pa.Array, width: int, what: str) -> pa.Array:
    lengths = pc.binary_length(values)
    if pc.any(pc.not_equal(lengths, width)).as_py():
        raise InvalidMetadata(f"{what} has values that are not {width} bytes long.")
    return values.cast(pa.binary()).cast(pa.binary(width))


def _nulls(t: pa.DataType, n: int) -> pa.Array:
    return pa.nulls(n, type=t)


def read_manifest_arrow(
    io: FileIO,
    manifest_file: ManifestFile,
    schema: Schema,
    spec: PartitionSpec,
    format_version: int,
) -> pa.Table:
    """Read a manifest as an Arrow table, one row per entry, inheritance applied ("Manifests").

    Inheritance, by columns:

    - ``snapshot_id`` null: the manifest's ``added_snapshot_id``.
    - ``sequence_number`` / ``file_sequence_number`` null: the manifest's
      ``sequence_number`` for ADDED rows (and, as Java does, for every row of a manifest
      whose number is 0) ("Sequence Number Inheritance"); v1 manifests read 0.
    - v3 ``first_row_id`` null on a live data file: the manifest's ``first_row_id`` plus the
      running sum of ``record_count`` of the preceding such rows ("First Row ID
      Inheritance"); DELETED rows and delete files neither receive nor consume ids.

    Args:
        io: the table's FileIO.
        manifest_file: the manifest list entry (path, length, inherited values).
        schema: the table schema, for the partition struct's types.
        spec: the partition spec with id ``manifest_file.partition_spec_id``.
        format_version: the table's format version.

    Returns:
        the entries in file order, with the columns the module docstring lists.

    Raises:
        NotFound: the manifest does not exist.
        InvalidMetadata: the manifest is corrupt, truncated, or does not match its spec.
    """
    return manifest_table(read_manifest_avro(io, manifest_file), schema, spec, format_version)


@dataclass(frozen=True, slots=True)
class RawManifest:
    """A manifest's Avro decoded as polars reads it, before Iceberg's meaning is applied.

    Reading and decoding run without the GIL (file I/O and polars), so a planner can do
    this part for many manifests on threads while one thread applies
    :func:`manifest_table` to the results.
    """

    manifest_file: ManifestFile
    table: pa.Table
    length: int
    merged: pa.Table | None = None
    """The table of the manifests decoded together with this one (see
    :class:`~icecore.avro.Decoded`), whose rows from :attr:`start` are :attr:`table`'s."""
    start: int = 0


def read_manifest_avro(io: FileIO, manifest_file: ManifestFile) -> RawManifest:
    """Read a manifest's bytes and decode its Avro ("Appendix A: Avro")."""
    path = manifest_file.manifest_path
    data = io.read(path, limit=MAX_METADATA_BYTES)
    return RawManifest(manifest_file, read_avro_polars_arrow(data, path), len(data))


def read_manifests_avro(
    io: FileIO, manifest_files: Sequence[ManifestFile], *, metrics: bool = True
) -> list[RawManifest | Exception]:
    """:func:`read_manifest_avro` of each manifest: what it returns, or what it raises.

    Manifests with the same Avro header are decoded together
    (:func:`~icecore.avro.read_avro_many`), which saves polars' fixed cost per
    file; each answer is still exactly the one :func:`read_manifest_avro` gives.

    ``metrics=False`` leaves the six metrics maps undecoded (:data:`METRICS_LEFT_OUT`): what
    Iceberg Java's ``planFiles()`` does for a scan without a row filter (``BaseScan``'s
    ``SCAN_COLUMNS`` hold no stats, and ``ManifestReader`` adds them back only when a row
    filter needs them). Their entries then have the maps null, as a writer that kept none.
    """
    read: list[tuple[bytes, str]] = []
    out: list[RawManifest | Exception | None] = [None] * len(manifest_files)
    at: list[int] = []
    for i, manifest_file in enumerate(manifest_files):
        try:
            path = manifest_file.manifest_path
            read.append((io.read(path, limit=MAX_METADATA_BYTES), path))
        except Exception as e:  # noqa: BLE001 - the caller's to raise, for this manifest
            out[i] = e
            continue
        at.append(i)
    decoded = read_avro_many(read, None if metrics else METRICS_LEFT_OUT)
    for i, (data, _), found in zip(at, read, decoded, strict=True):
        out[i] = (
            found
            if isinstance(found, Exception)
            else RawManifest(manifest_files[i], found.table, len(data), found.merged, found.start)
        )
    return [r for r in out if r is not None]


def manifest_table(
    raw: RawManifest, schema: Schema, spec: PartitionSpec, format_version: int
) -> pa.Table:
    """The entries of a decoded manifest, as :func:`read_manifest_arrow` returns them."""
    _check_spec(raw.manifest_file, spec)
    table = _entries(
        raw.table, (raw.manifest_file,), (raw.table.num_rows,), schema, spec, format_version
    )
    _check_length(raw, table.num_rows)
    return table


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """The entries of several manifests decoded together, one manifest after another.

    Every Arrow call has a fixed cost (~5-50 us) that dwarfs its per-row cost on a manifest
    of a few hundred entries; a batch pays it once for many manifests
    (docs/ARCHITECTURE.md "Performance"). Manifest ``i`` of the batch is rows
    ``offsets[i]:offsets[i + 1]`` of :attr:`table`, and ``raws[indices[i]]`` of the call.
    """

    table: pa.Table
    manifests: tuple[ManifestFile, ...]
    offsets: tuple[int, ...]
    indices: tuple[int, ...]

    def slice(self, i: int) -> pa.Table:
        """The entries of the batch's manifest ``i`` (zero-copy)."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return self.table.slice(lo, hi - lo)


def manifest_batches(
    raws: Sequence[RawManifest], schema: Schema, spec: PartitionSpec, format_version: int
) -> list[DecodedBatch]:
    """The entries of many decoded manifests of one spec, converted a batch at a time.

    The answer is exactly :func:`manifest_table`'s for each manifest. Manifests whose Avro
    schema and header agree are concatenated and converted at once; when that fails, each
    manifest of the batch is converted alone, so an error names the manifest and is the
    one :func:`manifest_table` raises for the first bad manifest, in order.

    Raises:
        InvalidMetadata: a manifest is corrupt, truncated, or does not match its spec.
    """
    try:
        return _batched(raws, schema, spec, format_version)
    except (InvalidMetadata, pa.ArrowException):
        pass  # converted one by one below, which raises what the first bad manifest raises
    return [
        DecodedBatch(table, (raw.manifest_file,), (0, table.num_rows), (i,))
        for i, raw in enumerate(raws)
        for table in (manifest_table(raw, schema, spec, format_version),)
    ]


def _batched(
    raws: Sequence[RawManifest], schema: Schema, spec: PartitionSpec, format_version: int
) -> list[DecodedBatch]:
    by_header: dict[tuple[Any, ...], list[list[int]]] = {}
    for i, raw in enumerate(raws):
        _check_spec(raw.manifest_file, spec)
        # Same header, and the same decoded columns (polars types a column without values,
        # as in a manifest without entries, apart from the others).
        alike = by_header.setdefault(_batch_key(raw.table), [])
        for group in alike:
            if raws[group[0]].table.schema.equals(raw.table.schema):
                group.append(i)
                break
        else:
            alike.append([i])
    out: list[DecodedBatch] = []
    for members in (group for alike in by_header.values() for group in alike):
        tables = [raws[i].table for i in members]
        if len(members) == 1:
            for i in members:
                table = manifest_table(raws[i], schema, spec, format_version)
                out.append(DecodedBatch(table, (raws[i].manifest_file,), (0, table.num_rows), (i,)))
            continue
        sizes = [t.num_rows for t in tables]
        manifests = tuple(raws[i].manifest_file for i in members)
        together = _rows_together([raws[i] for i in members])
        table = _entries(together, manifests, sizes, schema, spec, format_version)
        for i in members:
            _check_length(raws[i], raws[i].table.num_rows)
        offsets = (0, *itertools.accumulate(sizes))
        out.append(DecodedBatch(table, manifests, offsets, tuple(members)))
    out.sort(key=lambda b: b.indices[0])
    return out


def _rows_together(raws: Sequence[RawManifest]) -> pa.Table:
    """The decoded rows of several manifests, one's after another's, as one table.

    Manifests decoded together (:class:`~icecore.avro.Decoded`) and in the same order are
    consecutive rows of one table: that table's rows, whose columns are used without
    copying; otherwise the tables concatenated (whose chunks the conversion then copies
    into one; for a batch of 32 manifests ~0.3 ms per manifest, 8% of a decode worker's time).
    """
    first = raws[0]
    at = first.start
    for raw in raws:
        if raw.merged is None or raw.merged is not first.merged or raw.start != at:
            return pa.concat_tables([r.table for r in raws])
        at += raw.table.num_rows
    assert first.merged is not None
    return first.merged.slice(first.start, at - first.start)


def manifest_tables(
    raws: Sequence[RawManifest], schema: Schema, spec: PartitionSpec, format_version: int
) -> list[pa.Table]:
    """:func:`manifest_table` of each manifest, in order, converted in batches."""
    out: list[pa.Table | None] = [None] * len(raws)
    for batch in manifest_batches(raws, schema, spec, format_version):
        for j, i in enumerate(batch.indices):
            out[i] = batch.slice(j)
    return [t for t in out if t is not None]


def _batch_key(table: pa.Table) -> tuple[Any, ...]:
    """What manifests converted together must share: their header (Avro schema included)."""
    metadata = table.schema.metadata or {}
    return tuple(sorted(metadata.items()))


def _check_spec(manifest_file: ManifestFile, spec: PartitionSpec) -> None:
    if spec.spec_id != manifest_file.partition_spec_id:
        raise InvalidMetadata(
            f"Manifest {manifest_file.manifest_path} was written with partition spec "
            f"{manifest_file.partition_spec_id}, not spec {spec.spec_id}."
        )


def _check_length(raw: RawManifest, rows: int) -> None:
    manifest_file = raw.manifest_file
    if raw.length != manifest_file.manifest_length and not _counts_match(manifest_file, rows):
        raise InvalidMetadata(
            f"Manifest {manifest_file.manifest_path} is {raw.length} bytes but its manifest "
            f"list says {manifest_file.manifest_length}, and it holds {rows} entries where the "
            "manifest list counts differ; the file is truncated or was replaced."
        )


def _counts_match(manifest_file: ManifestFile, rows: int) -> bool:
    """Whether a manifest holds as many entries as its manifest list entry counts.

    A length that disagrees with the manifest list is not proof of damage on its own:
    Iceberg 1.10's ``rewrite_table_path`` rewrites manifests with new paths but keeps their
    old lengths (Java never checks them). A complete Avro file whose entry count matches the
    list's added + existing + deleted file counts is read; anything else is refused.
    """
    counts = (
        manifest_file.added_files_count,
        manifest_file.existing_files_count,
        manifest_file.deleted_files_count,
    )
    if any(c is None for c in counts):
        return False
    return rows == sum(c for c in counts if c is not None)


def _entries(
    raw: pa.Table,
    manifest_files: Sequence[ManifestFile],
    sizes: Sequence[int],
    schema: Schema,
    spec: PartitionSpec,
    format_version: int,
) -> pa.Table:
    """The entries of polars-decoded manifests, inheritance applied (no length check).

    ``raw`` holds the rows of ``manifest_files`` one after another (``sizes`` rows each),
    all with the same header; each row inherits from its own manifest list entry.
    """
    path = manifest_files[0].manifest_path
    avro_schema_text = _header(raw, "avro.schema")
    if avro_schema_text is None:
        raise InvalidMetadata(f"Manifest {path} has no avro.schema header.")
    try:
        avro_schema = json.loads(avro_schema_text)
    except json.JSONDecodeError as e:
        raise InvalidMetadata(f"Manifest {path}: avro.schema is not JSON: {e}.") from e
    entry_fields = AvroFields(avro_schema, path, "The manifest_entry schema")
    entry_names = entry_fields.names
    if _ME_DATA_FILE not in entry_names:
        raise InvalidMetadata(f"Manifest {path} has no data_file field.")
    df_fields = AvroFields(entry_fields.types[_ME_DATA_FILE], path, "The data_file schema")
    df_names, df_types = df_fields.names, df_fields.types
    n = raw.num_rows

    def top(field_id: int) -> pa.Array | None:
        name = entry_names.get(field_id)
        return None if name is None else one_array(raw.column(name))

    data_file = top(_ME_DATA_FILE)
    assert data_file is not None
    if data_file.null_count:
        raise InvalidMetadata(f"{path} has an entry without required data_file.")

    def df(field_id: int) -> pa.Array | None:
        name = df_names.get(field_id)
        if name is None or data_file.type.get_field_index(name) < 0:  # absent, or left out
            return None
        return _child(data_file, name)

    status = _require(top(_ME_STATUS), path, "status", _I32)
    if pc.any(pc.invert(pc.is_in(status, pa.array([0, 1, 2], _I32)))).as_py():
        raise InvalidMetadata(f"Manifest {path} has an entry with an unknown status.")

    snapshot_id = top(_ME_SNAPSHOT_ID)
    snapshot_id = (
        _nulls(_I64, n) if snapshot_id is None else _convert(snapshot_id, _I64, "snapshot_id")
    )
    snapshot_id = pc.coalesce(
        snapshot_id, _per_row([m.added_snapshot_id for m in manifest_files], sizes)
    )

    if _ME_SEQ in entry_names and format_version >= 2:
        numbers = [m.sequence_number for m in manifest_files]
        inherited = _per_row(numbers, sizes)
        inherits = pc.equal(status, pa.scalar(int(ManifestEntryStatus.ADDED), _I32))
        if all(number == 0 for number in numbers):
            inherits = pa.array(np.ones(n, dtype=bool), pa.bool_())
        elif any(number == 0 for number in numbers):
            zero = np.repeat(np.array([number == 0 for number in numbers], dtype=bool), sizes)
            inherits = pc.or_(inherits, pa.array(zero, pa.bool_()))
        seqs = []
        for fid in (_ME_SEQ, _ME_FILE_SEQ):
            column = top(fid)
            values = _nulls(_I64, n) if column is None else _convert(column, _I64, "sequence")
            seqs.append(pc.if_else(pc.and_(pc.is_null(values), inherits), inherited, values))
        sequence_number, file_sequence_number = seqs
    else:
        sequence_number = file_sequence_number = pa.array(np.zeros(n, dtype=np.int64), _I64)

    content_column = df(_CONTENT)
    if format_version >= 2 and content_column is not None:
        content = pc.fill_null(_convert(content_column, _I32, "content"), pa.scalar(0, _I32))
    else:
        content = pa.array(np.zeros(n, dtype=np.int32), _I32)
    if pc.any(pc.invert(pc.is_in(content, pa.array([0, 1, 2], _I32)))).as_py():
        raise InvalidMetadata(f"Manifest {path} has a file with an unknown content type.")

    columns: dict[str, pa.Array] = {}
    for name, fid, t in _DATA_FILE_COLUMNS:
        column = df(fid)
        if name in _REQUIRED:
            columns[name] = _require(column, path, name, t)
        else:
            columns[name] = _nulls(t, n) if column is None else _convert(column, t, name)

    first_row_id = _nulls(_I64, n)
    first_row_column = df(_FIRST_ROW_ID)
    if format_version >= 3:
        if first_row_column is not None:
            first_row_id = _convert(first_row_column, _I64, "first_row_id")
        if any(m.first_row_id is not None for m in manifest_files):
            first_row_id = _inherit_first_row_ids_per_manifest(
                first_row_id, content, status, columns["record_count"], manifest_files, sizes
            )

    partition_struct, partition = _partition(
        _require(df(_DF_PARTITION), path, "partition", None),
        df_types,
        _header(raw, "schema"),
        schema,
        spec,
        path,
    )
    out = output_schema(partition_struct)
    arrays: dict[str, pa.Array] = {
        "status": status,
        "snapshot_id": snapshot_id,
        "sequence_number": sequence_number,
        "file_sequence_number": file_sequence_number,
        "content": content,
        "spec_id": pa.array(np.full(n, spec.spec_id, dtype=np.int32), _I32),
        "partition": partition,
        "first_row_id": first_row_id,
        **columns,
    }
    return pa.Table.from_arrays([arrays[f.name] for f in out], schema=out)


def _require(column: pa.Array | None, path: str, what: str, t: pa.DataType | None) -> pa.Array:
    """A required column, converted to ``t`` (kept as decoded when None)."""
    if column is None or column.null_count:
        raise InvalidMetadata(f"{path} has an entry without required {what}.")
    return column if t is None else _convert(column, t, what)


def _per_row(values: Sequence[int | None], sizes: Sequence[int]) -> pa.Scalar | pa.Array:
    """Each manifest's value for each of its rows (a scalar when they all agree)."""
    if all(v == values[0] for v in values):
        return pa.scalar(values[0], _I64)
    if any(v is None for v in values):  # not in valid metadata, but never a crash
        return pa.array([v for v, n in zip(values, sizes, strict=True) for _ in range(n)], _I64)
    return pa.array(np.repeat(np.array(values, dtype=np.int64), sizes), _I64)


def _inherit_first_row_ids_per_manifest(
    first_row_id: pa.Array,
    content: pa.Array,
    status: pa.Array,
    record_count: pa.Array,
    manifest_files: Sequence[ManifestFile],
    sizes: Sequence[int],
) -> pa.Array:
    """First row ids inherited manifest by manifest: each one's running sum starts afresh."""
    parts: list[pa.Array] = []
    lo = 0
    for manifest_file, size in zip(manifest_files, sizes, strict=True):
        part = first_row_id.slice(lo, size)
        if manifest_file.first_row_id is not None:
            part = _inherit_first_row_ids(
                part,
                content.slice(lo, size),
                status.slice(lo, size),
                record_count.slice(lo, size),
                manifest_file.first_row_id,
            )
        parts.append(part)
        lo += size
    return pa.concat_arrays(parts) if len(parts) != 1 else parts[0]


def _inherit_first_row_ids(
    first_row_id: pa.Array,
    content: pa.Array,
    status: pa.Array,
    record_count: pa.Array,
    base: int,
) -> pa.Array:
    """Vectorized "First Row ID Inheritance": base + exclusive running sum of record counts."""
    takes = pc.and_(
        pc.and_(pc.is_null(first_row_id), pc.equal(content, pa.scalar(0, _I32))),
        pc.not_equal(status, pa.scalar(int(ManifestEntryStatus.DELETED), _I32)),
    )
    counts = pc.if_else(takes, record_count, pa.scalar(0, _I64))
    running = pc.subtract(pc.cumulative_sum(counts), counts)
    assigned = pc.add(running, pa.scalar(base, _I64))
    return pc.if_else(takes, assigned, first_row_id)


def partition_record_fields(
    data_file_types: Mapping[int, Any], spec: PartitionSpec, path: str
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The Avro fields of a manifest's ``partition`` record, checked against its spec.

    Returns the fields in file order and their names by partition field id (``field-id``;
    very old writers omit it, and callers then match by position).

    Raises:
        InvalidMetadata: there is no partition record, or its field count differs from the spec's.
    """
    record = non_null_branch(data_file_types.get(_DF_PARTITION))
    if not isinstance(record, dict) or record.get("type") != "record":
        raise InvalidMetadata(f"Manifest {path} has no partition record.")
    avro_fields: list[dict[str, Any]] = record.get("fields", [])
    if len(avro_fields) != len(spec.fields):
        raise InvalidMetadata(
            f"Manifest {path} has {len(avro_fields)} partition fields but partition "
            f"spec {spec.spec_id} has {len(spec.fields)}."
        )
    return avro_fields, {f["field-id"]: f["name"] for f in avro_fields if "field-id" in f}


def partition_type_for(
    header_schema: str | None, schema: Schema, spec: PartitionSpec
) -> StructType:
    """The spec's partition type; for sources the table schema lacks, the manifest's schema.

    ``header_schema`` is the manifest's ``schema`` header (the table schema it was written
    with), which still has a column dropped from the table since.
    """
    struct = spec.partition_type(schema)
    if header_schema is None or not any(
        isinstance(f.field_type, UnknownType) for f in struct.fields
    ):
        return struct
    try:
        written = schema_from_json(json.loads(header_schema))
    except (json.JSONDecodeError, InvalidMetadata):
        return struct
    fallback = spec.partition_type(written)
    return StructType(
        tuple(
            b if isinstance(a.field_type, UnknownType) else a
            for a, b in zip(struct.fields, fallback.fields, strict=True)
        )
    )


def _partition(
    source: pa.Array,
    df_types: Mapping[int, Any],
    header_schema: str | None,
    schema: Schema,
    spec: PartitionSpec,
    path: str,
) -> tuple[pa.StructType, pa.Array]:
    """The partition struct: spec field names, partition field ids, result-type Arrow values.

    The Avro partition record's fields carry the partition field ids (``field-id``); without
    them (very old writers) they are matched to the spec by position.
    """
    avro_fields, by_id = partition_record_fields(df_types, spec, path)
    struct = partition_type_for(header_schema, schema, spec)
    n = len(source)
    fields: list[pa.Field] = []
    children: list[pa.Array] = []
    for i, (pf, nested) in enumerate(zip(spec.fields, struct.fields, strict=True)):
        name = by_id.get(pf.field_id) if by_id else avro_fields[i]["name"]
        if name is None:
            raise InvalidMetadata(
                f"Manifest {path} has no partition field with id {pf.field_id} "
                f"({pf.name}) of partition spec {spec.spec_id}."
            )
        target = _arrow_partition_type(nested.field_type)
        values = _convert(_child(source, name), target, f"Partition field {pf.name}")
        fields.append(
            pa.field(
                pf.name,
                target,
                metadata={
                    b"field_id": str(pf.field_id).encode(),
                    b"iceberg_type": str(nested.field_type).encode(),
                },
            )
        )
        children.append(values)
    partition_type = pa.struct(fields)
    if not fields:
        return partition_type, pa.array([{}] * n, partition_type)
    return partition_type, pa.StructArray.from_arrays(children, fields=fields)


# ---------------------------------------------------------------------------------------
# Back to objects


def partition_dicts(partition: pa.Array) -> list[dict[int, Any]]:
    """Partition tuples of a ``partition`` column, keyed by partition field id.

    Values come back in :mod:`icecore.values`' Python forms (dates, integer micros or nanos
    for times and timestamps, ``uuid.UUID``), as :class:`~icecore.manifest.DataFile`
    documents them.
    """
    ids, columns = partition_columns(partition)
    if not ids:
        return [{} for _ in range(len(partition))]
    return [dict(zip(ids, values, strict=True)) for values in zip(*columns, strict=True)]


def partition_columns(partition: pa.Array) -> tuple[list[int], list[list[Any]]]:
    """The partition field ids of a ``partition`` column, and each field's Python values."""
    if isinstance(partition, pa.ChunkedArray):
        partition = partition.combine_chunks()
    fields = list(partition.type)
    ids = [int((f.metadata or {})[b"field_id"]) for f in fields]
    columns = [_python_values(_child(partition, f.name), f.metadata or {}) for f in fields]
    return ids, columns


MAP_COLUMNS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)
"""The metrics maps of the ``data_file`` struct, keyed by column field id."""

METRICS_LEFT_OUT: LeaveOut = {"data_file": MAP_COLUMNS}
"""What a decode without metrics leaves out (spec "Manifests": the maps' names in the
``data_file`` struct are those of the output columns)."""


def entries_from_arrow(
    table: pa.Table,
    spec_id: int,
    maps: Mapping[str, list[dict[int, Any] | None]] | None = None,
) -> list[ManifestEntry]:
    """The :class:`ManifestEntry` views of the rows of a :func:`read_manifest_arrow` table.

    For callers that want objects (metadata tables, diff, changelog, delete files in
    planning); built column by column, no second decode. Partition values come back keyed
    by partition field id (:func:`partition_dicts`).

    Args:
        table: rows in :func:`output_schema`'s columns.
        spec_id: the partition spec the manifest was written with.
        maps: the metrics maps per row when the caller holds them in another form (the
            planner's pivoted columns); by default they are read from ``table``'s map columns.
    """
    partitions = partition_dicts(table.column("partition"))

    def column(name: str) -> list[Any]:
        return table.column(name).to_pylist()

    status, snapshot_id = column("status"), column("snapshot_id")
    seq, file_seq = column("sequence_number"), column("file_sequence_number")
    content, path, fmt = column("content"), column("file_path"), column("file_format")
    records, size = column("record_count"), column("file_size_in_bytes")
    if maps is None:
        maps = {name: [_dict(m) for m in column(name)] for name in MAP_COLUMNS}
    key_metadata, splits, eq_ids = (
        column("key_metadata"),
        column("split_offsets"),
        column("equality_ids"),
    )
    sort_order, first_row_id = column("sort_order_id"), column("first_row_id")
    referenced, offset, blob_size = (
        column("referenced_data_file"),
        column("content_offset"),
        column("content_size_in_bytes"),
    )

    entries: list[ManifestEntry] = []
    for i in range(table.num_rows):
        data_file = DataFile(
            content=DataFileContent(content[i]),
            file_path=path[i],
            file_format=fmt[i],
            spec_id=spec_id,
            partition=partitions[i],
            record_count=records[i],
            file_size_in_bytes=size[i],
            column_sizes=maps["column_sizes"][i],
            value_counts=maps["value_counts"][i],
            null_value_counts=maps["null_value_counts"][i],
            nan_value_counts=maps["nan_value_counts"][i],
            lower_bounds=maps["lower_bounds"][i],
            upper_bounds=maps["upper_bounds"][i],
            key_metadata=key_metadata[i],
            split_offsets=tuple(splits[i]) if splits[i] is not None else None,
            equality_ids=tuple(eq_ids[i]) if eq_ids[i] is not None else None,
            sort_order_id=sort_order[i],
            first_row_id=first_row_id[i],
            referenced_data_file=referenced[i],
            content_offset=offset[i],
            content_size_in_bytes=blob_size[i],
        )
        entries.append(
            ManifestEntry(
                status=ManifestEntryStatus(status[i]),
                snapshot_id=snapshot_id[i],
                sequence_number=seq[i],
                file_sequence_number=file_seq[i],
                data_file=data_file,
            )
        )
    return entries


def _dict(pairs: list[tuple[int, Any]] | None) -> dict[int, Any] | None:
    return dict(pairs) if pairs is not None else None


def _python_values(values: pa.Array, meta: Mapping[bytes, bytes]) -> list[Any]:
    """Partition values in :mod:`icecore.values`' forms (times as ints, uuids as UUID)."""
    t = values.type
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return values.cast(_I64).to_pylist()
    if meta.get(b"iceberg_type") == b"uuid":
        return [uuid.UUID(bytes=b) if b is not None else None for b in values.to_pylist()]
    return values.to_pylist()


def read_manifest(
    io: FileIO,
    manifest_file: ManifestFile,
    schema: Schema,
    spec: PartitionSpec,
    format_version: int,
) -> list[ManifestEntry]:
    """A manifest's entries as :class:`ManifestEntry` views over :func:`read_manifest_arrow`.

    Same arguments, inheritance and errors as :func:`read_manifest_arrow`; partition values
    come back keyed by partition field id (:func:`partition_dicts`).
    """
    return entries_from_arrow(
        read_manifest_arrow(io, manifest_file, schema, spec, format_version), spec.spec_id
    )


# ---------------------------------------------------------------------------------------
# Live files of a snapshot


class ManifestSource(Protocol):
    """What :func:`live_files` needs of a table (:class:`icecore.table.Table` is one)."""

    @property
    def io(self) -> FileIO:
        """The FileIO every read goes through."""
        ...

    @property
    def metadata(self) -> TableMetadata:
        """The table metadata (partition specs, format version)."""
        ...

    @property
    def metadata_location(self) -> str:
        """Where the metadata is (for error messages)."""
        ...

    def manifests(self, snapshot: Snapshot) -> list[ManifestFile]:
        """The manifest list of a snapshot."""
        ...


def live_rows(entries: pa.Table) -> pa.Table:
    """The ADDED and EXISTING rows of decoded entries: DELETED ones are informational."""
    deleted = pc.equal(entries.column("status"), pa.scalar(int(ManifestEntryStatus.DELETED), _I32))
    return entries.filter(pc.invert(deleted)) if pc.any(deleted).as_py() else entries


def manifest_entries(
    table: ManifestSource, manifest: ManifestFile, schema: Schema, *, live: bool = True
) -> pa.Table:
    """One manifest of ``table`` decoded (only its live entries unless ``live`` is False).

    Args:
        table: the table the manifest belongs to (its specs, format version and FileIO).
        manifest: the manifest list entry.
        schema: the schema that types partition values (callers keep their choice: the
            snapshot's for scans, the current one for metadata tables and the layout).
        live: drop DELETED entries.

    Raises:
        NotFound: the manifest does not exist.
        InvalidMetadata: it is corrupt, or names a partition spec the table lacks.
    """
    metadata = table.metadata
    spec = metadata.spec_by_id(manifest.partition_spec_id)
    if spec is None:
        raise InvalidMetadata(
            f"Manifest {manifest.manifest_path} uses partition spec "
            f"{manifest.partition_spec_id}, which {table.metadata_location} lacks."
        )
    entries = read_manifest_arrow(table.io, manifest, schema, spec, metadata.format_version)
    return live_rows(entries) if live else entries


def live_files(
    table: ManifestSource,
    snapshot: Snapshot,
    schema: Schema,
    manifests: Iterable[ManifestFile] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[tuple[ManifestFile, pa.Table]]:
    """The live (ADDED and EXISTING) files of a snapshot, manifest by manifest ("Scan Planning").

    The one listing of a snapshot's files: ``Table.live_entries``, the layout and the
    metadata tables all read through it. Tables of different manifests may have different
    ``partition`` structs (one per spec), so they are yielded apart, with their manifest.

    Args:
        table: the table.
        snapshot: the snapshot whose manifest list to walk.
        schema: the schema that types partition values (see :func:`manifest_entries`).
        manifests: only these of its manifests (default: all of them, in list order).
        progress: told ``progress(done, total)`` after each manifest.
    """
    chosen = table.manifests(snapshot) if manifests is None else list(manifests)
    for done, manifest in enumerate(chosen, start=1):
        yield manifest, manifest_entries(table, manifest, schema)
        if progress is not None:
            progress(done, len(chosen))
