"""A table described for people: schema as a tree, specs, sort orders, schema history, examples.

Spec "Schemas and Data Types" (field ids, required, docs, ``initial-default`` and
``write-default``, identifier fields), "Partition Specs" and "Sort Orders". Everything here
is read from the metadata alone, except :func:`filter_examples`, which reads one manifest
so that its examples name values the table holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.diff import FieldChange, schema_changes
from icecore.manifest import ManifestContent, ManifestEntryStatus
from icecore.metadata import Snapshot, TableMetadata
from icecore.schema import Schema
from icecore.transforms.temporal import TimeTransform
from icecore.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)
from icecore.values import from_bytes, sql_literal, sql_string, to_human_string

if TYPE_CHECKING:
    from icecore.table_data import TableData


@dataclass(frozen=True, slots=True)
class FieldRow:
    """One field of a schema, flattened in tree order.

    Attributes:
        depth: 0 for top-level fields, +1 per nesting level.
        name: the field's own name (``element``, ``key``, ``value`` inside lists and maps).
        path: the full dotted name.
        field_id: the field id.
        type: the type as the spec writes it (``struct``, ``list``, ``map`` for nested).
        required: whether values can't be null.
        doc: the doc string ("" when absent).
        initial_default, write_default: the defaults as JSON text ("" when absent).
        identifier: whether it is one of the schema's identifier fields.
    """

    depth: int
    name: str
    path: str
    field_id: int
    type: str
    required: bool
    doc: str
    initial_default: str
    write_default: str
    identifier: bool


def _json(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _type_name(t: IcebergType) -> str:
    if isinstance(t, StructType):
        return "struct"
    if isinstance(t, ListType):
        return "list"
    if isinstance(t, MapType):
        return "map"
    return str(t)


def schema_rows(schema: Schema) -> list[FieldRow]:
    """Every field of ``schema``, parents before children, as :class:`FieldRow`."""
    identifiers = set(schema.identifier_field_ids)

    def walk(fields: tuple[NestedField, ...], depth: int, prefix: str) -> Iterator[FieldRow]:
        for f in fields:
            path = f"{prefix}{f.name}"
            yield FieldRow(
                depth=depth,
                name=f.name,
                path=path,
                field_id=f.field_id,
                type=_type_name(f.field_type),
                required=f.required,
                doc=f.doc or "",
                initial_default=_json(f.initial_default),
                write_default=_json(f.write_default),
                identifier=f.field_id in identifiers,
            )
            t = f.field_type
            if not t.is_primitive:
                yield from walk(t.child_fields(), depth + 1, f"{path}.")  # type: ignore[attr-defined]

    return list(walk(schema.fields, 0, ""))


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One schema of the table and how it differs from the one before it (by field id).

    Attributes:
        schema_id: the schema id.
        is_current: whether it is the current schema.
        fields: how many fields (nested included) it has.
        first_snapshot_id, first_used_ms: the oldest valid snapshot written with it (None
            when no valid snapshot was).
        changes: one line per difference from the previous schema.
    """

    schema_id: int
    is_current: bool
    fields: int
    first_snapshot_id: int | None
    first_used_ms: int | None
    changes: tuple[str, ...]


def schema_history(metadata: TableMetadata) -> list[SchemaVersion]:
    """Every schema in id order, with the changes from the previous one and first use."""
    first_use: dict[int, Snapshot] = {}
    for snapshot in sorted(metadata.snapshots, key=lambda s: s.timestamp_ms):
        if snapshot.schema_id is not None:
            first_use.setdefault(snapshot.schema_id, snapshot)
    versions = []
    previous: Schema | None = None
    for schema in sorted(metadata.schemas, key=lambda s: s.schema_id):
        changes = schema_changes(previous, schema) if previous is not None else []
        used = first_use.get(schema.schema_id)
        versions.append(
            SchemaVersion(
                schema_id=schema.schema_id,
                is_current=schema.schema_id == metadata.current_schema_id,
                fields=len(schema.field_ids),
                first_snapshot_id=used.snapshot_id if used else None,
                first_used_ms=used.timestamp_ms if used else None,
                changes=tuple(change_text(c) for c in changes),
            )
        )
        previous = schema
    return versions


def change_text(change: FieldChange) -> str:
    """One schema difference as a phrase: ``added tip_amount double``, ``renamed a to b``."""
    kind, name, before, after = change.kind, change.name, change.before, change.after
    if kind == "added":
        return f"added {name} {after}"
    if kind == "removed":
        return f"dropped {name} {before}"
    if kind == "renamed":
        return f"renamed {before} to {after}"
    return f"{name}: {kind} {before or '∅'} → {after or '∅'}"


@dataclass(frozen=True, slots=True)
class SpecFieldRow:
    """One field of a partition spec or sort order, for a table of them.

    Attributes:
        spec_id: the partition spec id or sort order id.
        is_default: whether writers use that spec or order now.
        position: the field's position in it.
        name: the partition field name (the source column for sort fields).
        transform: the transform as the spec writes it.
        source: the source column's name (from the newest schema that has it).
        detail: the partition field id, or the sort direction and null order.
    """

    spec_id: int
    is_default: bool
    position: int
    name: str
    transform: str
    source: str
    detail: str


def _column_name(metadata: TableMetadata, field_id: int) -> str:
    for schema in sorted(metadata.schemas, key=lambda s: s.schema_id, reverse=True):
        name = schema.find_column_name(field_id)
        if name is not None:
            return name
    return f"(dropped column {field_id})"


def column_names(metadata: TableMetadata, field_ids: Iterable[int]) -> str:
    """Names of columns by id (from the newest schema that has each), comma-separated."""
    return ", ".join(_column_name(metadata, i) for i in field_ids)


def partition_spec_rows(
    metadata: TableMetadata, default_id: int | None = None
) -> list[SpecFieldRow]:
    """Every field of every partition spec, oldest spec first (unpartitioned shown as such).

    Args:
        metadata: the table's metadata.
        default_id: the spec to mark as the default (the table's default spec when None;
            the spec in force at an earlier snapshot otherwise).
    """
    default_id = metadata.default_spec_id if default_id is None else default_id
    rows = []
    for spec in sorted(metadata.partition_specs, key=lambda s: s.spec_id):
        default = spec.spec_id == default_id
        if spec.is_unpartitioned:
            rows.append(SpecFieldRow(spec.spec_id, default, 0, "(unpartitioned)", "", "", ""))
        for i, f in enumerate(spec.fields):
            rows.append(
                SpecFieldRow(
                    spec.spec_id,
                    default,
                    i,
                    f.name,
                    str(f.transform),
                    column_names(metadata, f.all_source_ids),
                    f"field id {f.field_id}",
                )
            )
    return rows


def sort_order_rows(metadata: TableMetadata, default_id: int | None = None) -> list[SpecFieldRow]:
    """Every field of every sort order, oldest first (the unsorted order shown as such).

    Args:
        metadata: the table's metadata.
        default_id: the order to mark as the default (as in :func:`partition_spec_rows`).
    """
    default_id = metadata.default_sort_order_id if default_id is None else default_id
    rows = []
    for order in sorted(metadata.sort_orders, key=lambda o: o.order_id):
        default = order.order_id == default_id
        if order.is_unsorted:
            rows.append(SpecFieldRow(order.order_id, default, 0, "(unsorted)", "", "", ""))
        for i, f in enumerate(order.fields):
            source = column_names(
                metadata, f.source_ids if f.source_ids is not None else (f.source_id,)
            )
            rows.append(
                SpecFieldRow(
                    order.order_id,
                    default,
                    i,
                    source,
                    str(f.transform),
                    source,
                    f"{f.direction.value} {f.null_order.value.replace('-', ' ')}",
                )
            )
    return rows


# ---------------------------------------------------------------------------------------
# Filter examples

_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NUMBERS = (IntegerType, LongType, FloatType, DoubleType, DecimalType)
_TIMES = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType, DateType)
_MAX_STRING_BOUND = 15
"""Writers truncate string bounds at 16 characters: a shorter bound is a real value."""


def quote_name(name: str) -> str:
    """A column name as a filter writes it: bare when simple, else in double quotes."""
    if _SIMPLE_NAME.match(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def filter_examples(table: TableData, snapshot: Snapshot | None, schema: Schema) -> list[str]:
    """A few filters that fit this table, with values taken from one of its data files.

    One on the time column the default spec partitions by (prunes by partition), one on a
    number (prunes by column metrics), one on a short string, and their conjunction. Reads
    the first data manifest only; an empty table gets examples without values.
    """
    columns = [f for f in schema.fields if f.field_type.is_primitive]
    bounds = _first_file_bounds(table, snapshot, schema)
    examples: list[str] = []
    time_column = _partition_time_column(table.metadata, schema)
    if time_column is not None and time_column.field_id in bounds:
        lower = bounds[time_column.field_id][0]
        day = to_human_string(time_column.field_type, lower)[:10]
        examples.append(f"{quote_name(time_column.name)} >= {sql_string(day)}")
    number = next(
        (f for f in columns if isinstance(f.field_type, _NUMBERS) and f.field_id in bounds), None
    )
    if number is not None:
        upper = bounds[number.field_id][1]
        examples.append(f"{quote_name(number.name)} > {sql_literal(number.field_type, upper)}")
    text = next(
        (
            f
            for f in columns
            if isinstance(f.field_type, StringType)
            and f.field_id in bounds
            and len(str(bounds[f.field_id][0])) <= _MAX_STRING_BOUND
        ),
        None,
    )
    if text is not None:
        value = str(bounds[text.field_id][0])
        examples.append(f"{quote_name(text.name)} IN ({sql_string(value)})")
    if len(examples) >= 2:
        examples.append(f"{examples[0]} AND {examples[1]}")
    optional = next((f for f in columns if not f.required), None)
    if optional is not None:
        examples.append(f"{quote_name(optional.name)} IS NOT NULL")
    return examples


def _partition_time_column(metadata: TableMetadata, schema: Schema) -> NestedField | None:
    for pf in metadata.default_spec().fields:
        source = schema.find_field(pf.source_id)
        if (
            source is not None
            and isinstance(pf.transform, TimeTransform)
            and isinstance(source.field_type, _TIMES)
            and schema.find_column_name(pf.source_id) == source.name
        ):
            return source
    return None


def _first_file_bounds(
    table: TableData, snapshot: Snapshot | None, schema: Schema
) -> Mapping[int, tuple[Any, Any]]:
    """Lower and upper bounds, by field id, of the first live data file that has any."""
    if snapshot is None:
        return {}
    from icecore.manifest_arrow import read_manifest  # pyarrow: only where a manifest is read

    metadata = table.metadata
    for manifest in table.manifests(snapshot):
        spec = metadata.spec_by_id(manifest.partition_spec_id)
        if manifest.content is not ManifestContent.DATA or spec is None:
            continue
        for entry in read_manifest(table.io, manifest, schema, spec, metadata.format_version):
            f = entry.data_file
            if entry.status is ManifestEntryStatus.DELETED or not f.lower_bounds:
                continue
            found = {}
            for fid, low in f.lower_bounds.items():
                high = (f.upper_bounds or {}).get(fid)
                t = schema.find_type(fid)
                if high is None or t is None or not t.is_primitive:
                    continue
                found[fid] = (from_bytes(t, low), from_bytes(t, high))
            if found:
                return found
        break
    return {}


__all__ = [
    "FieldRow",
    "SchemaVersion",
    "SpecFieldRow",
    "change_text",
    "column_names",
    "filter_examples",
    "partition_spec_rows",
    "quote_name",
    "schema_history",
    "schema_rows",
    "sort_order_rows",
]
