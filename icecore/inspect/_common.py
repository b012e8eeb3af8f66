"""What the metadata tables share: Arrow types, the unified partition struct, manifest reading.

Spark's metadata tables (Iceberg Java's ``MetadataTableType``) show Iceberg values with Spark
types; here they become Arrow types as close as Arrow allows: timestamps are
``timestamp('us', 'UTC')`` (Spark's ``timestamp``, which is micros in the session zone),
``uuid`` values are strings (Spark has no uuid type), everything else maps one to one.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icecore.arrow_types import arrow_type
from icecore.errors import IcecoreError, InvalidMetadata
from icecore.manifest import DataFile, ManifestEntry, ManifestFile
from icecore.manifest_arrow import entries_from_arrow, live_files, manifest_entries
from icecore.metadata import Snapshot
from icecore.partitioning import PartitionSpec
from icecore.read import unified_partition_type
from icecore.schema import Schema
from icecore.table_data import TableData
from icecore.types import (
    GeographyType,
    GeometryType,
    IcebergType,
    NestedField,
    StructType,
    UnknownType,
    UUIDType,
    VariantType,
)
from icecore.values import from_bytes

TIMESTAMP = pa.timestamp("us", tz="UTC")
"""The Arrow type of every instant column (``committed_at``, ``last_updated_at``, ...)."""


def ms_to_us(ms: int | None) -> int | None:
    """Milliseconds from the epoch (metadata times) as the micros of :data:`TIMESTAMP`."""
    return ms * 1000 if ms is not None else None


_RAW_TYPES = (VariantType, GeometryType, GeographyType)
"""Types whose bounds stay raw bytes: Arrow has no type for them (nor has Spark 3.5)."""


def value_type(t: IcebergType) -> pa.DataType:
    """The Arrow type of a single value of ``t`` (a bound or a partition value)."""
    if isinstance(t, UUIDType):
        return pa.string()
    if isinstance(t, _RAW_TYPES):
        return pa.binary()
    return arrow_type(t)


def value_to_arrow(t: IcebergType, value: Any) -> Any:
    """A value in :mod:`icecore.values`' Python form as :func:`value_type` holds it."""
    if value is None:
        return None
    if isinstance(t, UUIDType):
        return str(value)
    return value


def decode_bound(t: IcebergType, raw: bytes | None, path: str, column: str) -> Any:
    """An Appendix D bound of ``column`` in data file ``path``, decoded (None stays None)."""
    if raw is None:
        return None
    if isinstance(t, _RAW_TYPES):
        return bytes(raw)
    try:
        return value_to_arrow(t, from_bytes(t, raw))
    except IcecoreError as e:
        raise InvalidMetadata(f"Data file {path} has a bad bound for column {column}: {e}") from e


def java_name_order(name: str) -> bytes:
    """Sort key that orders names as Java's ``String.compareTo`` does (UTF-16 code units)."""
    return name.encode("utf-16-be", "surrogatepass")


@dataclass(frozen=True, slots=True)
class TableView:
    """What every file-level metadata table of one table derives from its metadata.

    Attributes:
        table: the table.
        schema: its current schema (Java binds every spec and ``readable_metrics`` to it).
        partition_type: the union of all specs' partition fields, by partition field id
            (Java's ``Partitioning.partitionType``); empty for an unpartitioned table.
        metric_columns: the primitive columns of ``schema`` with their full dotted names,
            sorted as Java sorts them, the fields of ``readable_metrics``.
    """

    table: TableData
    schema: Schema
    partition_type: StructType
    metric_columns: tuple[tuple[str, NestedField], ...]

    @property
    def partitioned(self) -> bool:
        """Whether the tables show a ``partition`` column (some spec has a field)."""
        return len(self.partition_type.fields) > 0

    def partition_arrow_type(self) -> pa.StructType:
        """The ``partition`` struct: every partition field of every spec, optional."""
        return pa.struct(
            [pa.field(f.name, value_type(f.field_type)) for f in self.partition_type.fields]
        )

    def partition_value(self, partition: Mapping[int, Any]) -> dict[str, Any]:
        """A file's partition tuple coerced to the union struct (other specs' fields null).

        Raises:
            InvalidMetadata: a file has a value for a partition field whose source column
                no schema of the table has, so its type is unknown.
        """
        row: dict[str, Any] = {}
        for f in self.partition_type.fields:
            value = partition.get(f.field_id)
            if value is not None and isinstance(f.field_type, UnknownType):
                raise InvalidMetadata(
                    f"Partition field {f.name!r} of {self.table.metadata_location} has values "
                    "but its source column is in none of the table's schemas, so its type is "
                    "unknown; the table metadata needs repair."
                )
            row[f.name] = value_to_arrow(f.field_type, value)
        return row

    def partition_key(self, partition: Mapping[int, Any]) -> tuple[Any, ...]:
        """The coerced tuple as a hashable key (Java's ``PartitionUtil.coercePartition``)."""
        return tuple(_key_value(partition.get(f.field_id)) for f in self.partition_type.fields)


def _key_value(value: Any) -> Any:
    """Group floats as Java's ``Double.compare`` does: NaN equals NaN, -0.0 differs from 0.0."""
    if isinstance(value, float):
        return ("float", _NAN if math.isnan(value) else struct.pack(">d", value))
    return value


_NAN = struct.pack(">d", math.nan)

Pick = Callable[[list[ManifestFile]], list[ManifestFile]]
"""Which manifests of a list a metadata table reads (all, data or delete manifests)."""


def table_view(table: TableData) -> TableView:
    """Derive a :class:`TableView` from the table's current metadata."""
    metadata = table.metadata
    schema = metadata.current_schema()
    specs = metadata.partition_specs
    columns = sorted(
        (
            (name, field)
            for fid, name in schema.id_to_name().items()
            if (field := schema.find_field(fid)) is not None and field.field_type.is_primitive
        ),
        key=lambda item: java_name_order(item[0]),
    )
    return TableView(
        table=table,
        schema=schema,
        partition_type=unified_partition_type(
            metadata.partition_specs, _with_dropped_sources(metadata.schemas, schema, specs)
        ),
        metric_columns=tuple(columns),
    )


def _with_dropped_sources(
    schemas: Iterable[Schema], schema: Schema, specs: Iterable[PartitionSpec]
) -> Schema:
    """``schema`` plus the partition source columns it lacks, typed by an older schema.

    A column may be dropped while files written with a spec that uses it stay live (or a
    v1 table keeps the field as ``void``). Those files' partition values were made from the
    column's type when they were written, which the newest older schema holding that field
    id still records ("Schema Evolution": ids are never reused, so the type is the one the
    files used). The extra fields only type partition values; their names cannot collide
    with a column's (a NUL character). A source in no schema stays ``unknown``.
    """
    missing = {
        source_id
        for spec in specs
        for pf in spec.fields
        for source_id in pf.all_source_ids
        if schema.find_type(source_id) is None
    }
    extra: list[NestedField] = []
    for old in sorted(schemas, key=lambda s: s.schema_id, reverse=True):
        for source_id in sorted(missing):
            found = old.find_type(source_id)
            if found is not None:
                extra.append(NestedField(source_id, f"\0dropped {source_id}", found))
                missing.discard(source_id)
    if not extra:
        return schema
    return Schema(schema.fields + tuple(extra), schema_id=schema.schema_id)


Decoded = Iterable[tuple[ManifestFile, pa.Table]]
"""Manifests with their decoded entries (:func:`icecore.manifest_arrow.live_files`' form)."""


def snapshot_files(view: TableView, snapshot: Snapshot | None, pick: Pick) -> Decoded:
    """The live files of ``snapshot``'s manifests that ``pick`` keeps (none for None)."""
    if snapshot is None:
        return []
    return live_files(view.table, snapshot, view.schema, pick(view.table.manifests(snapshot)))


def decoded(view: TableView, manifests: Iterable[ManifestFile], *, live: bool = True) -> Decoded:
    """Each manifest with its entries (live ones unless ``live`` is False), read lazily."""
    return ((m, manifest_entries(view.table, m, view.schema, live=live)) for m in manifests)


def entries(decoded: Decoded) -> Iterator[ManifestEntry]:
    """:class:`ManifestEntry` views of decoded manifests, in order."""
    for manifest, table in decoded:
        yield from entries_from_arrow(table, manifest.partition_spec_id)


def snapshot_manifests(table: TableData, snapshot: Snapshot | None) -> list[ManifestFile]:
    """The manifest list of ``snapshot``; none for an empty table."""
    return table.manifests(snapshot) if snapshot is not None else []


def reachable_manifests(table: TableData) -> list[ManifestFile]:
    """Every manifest of every valid snapshot, each path once (Java's ``reachableManifests``)."""
    seen: dict[str, ManifestFile] = {}
    for snapshot in table.metadata.snapshots:
        for manifest in table.manifests(snapshot):
            seen.setdefault(manifest.manifest_path, manifest)
    return list(seen.values())


def is_data(data_file: DataFile) -> bool:
    """Whether the file holds rows (content 0), not deletes."""
    return int(data_file.content) == 0


ROWS_PER_BATCH = 4096
"""Rows turned into Arrow at a time: memory stays bounded by one batch of Python dicts."""


def from_rows(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """An Arrow table of ``rows`` (dicts by column name) with exactly ``schema``.

    Rows are converted in batches as they are produced, so a metadata table of a million
    files never holds a million Python dicts at once.
    """
    batches: list[pa.RecordBatch] = []
    pending: list[dict[str, Any]] = []
    for row in rows:
        pending.append(row)
        if len(pending) >= ROWS_PER_BATCH:
            batches.append(pa.RecordBatch.from_pylist(pending, schema=schema))
            pending = []
    if pending or not batches:
        batches.append(pa.RecordBatch.from_pylist(pending, schema=schema))
    return pa.Table.from_batches(batches, schema=schema)
