"""What a read selects and how its columns take the scan's types (spec "Column Projection").

The output schema of a read (the projected schema and the metadata columns of "Reserved
Field IDs"), and the reshaping of a file's arrays to the scan's types by field id at every
depth: "Schema Evolution" (renames, type promotion, dropped and re-added fields) and
"Default values" (a field missing from a file reads as its ``initial-default`` or null).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from icecore.arrow_types import arrow_field, arrow_type, arrow_value
from icecore.errors import IcecoreError, InvalidMetadata, Unsupported
from icecore.partitioning import PartitionSpec
from icecore.read.files import arrow_field_id
from icecore.schema import Schema
from icecore.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
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


def metadata_field(name: str, partition_type: StructType | None) -> pa.Field:
    """The Arrow field of a metadata column (raises Unsupported for an unknown one)."""
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


def all_field_ids(t: IcebergType) -> set[int]:
    """The ids of every field nested in ``t``."""
    found: set[int] = set()
    if isinstance(t, StructType | ListType | MapType):
        for child in t.child_fields():
            found.add(child.field_id)
            found |= all_field_ids(child.field_type)
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
        elif isinstance(t, ListType | MapType) and all_field_ids(t) & ids:
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
    fields.extend(metadata_field(name, partition_type) for name in metadata_columns)
    return pa.schema(fields)


def constant_array(value: Any, t: pa.DataType, n: int) -> pa.Array:
    """``n`` copies of ``value`` (nulls for None)."""
    if value is None:
        return pa.nulls(n, t)
    return pa.repeat(pa.scalar(value, type=t), n)


def missing_array(f: NestedField, n: int) -> pa.Array:
    """A field the file does not have: its initial-default, or nulls ("Default values")."""
    t = arrow_type(f.field_type)
    if f.initial_default is None:
        return pa.nulls(n, t)
    value = from_json(f.field_type, f.initial_default)
    return constant_array(arrow_value(f.field_type, value), t, n)


def cast_array(arr: pa.Array, target: pa.DataType, what: str) -> pa.Array:
    """``arr`` as ``target`` (a promotion); InvalidMetadata naming ``what`` when it cannot be."""
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
    return {fid: i for i in range(t.num_fields) if (fid := arrow_field_id(t.field(i))) is not None}


def project_array(arr: pa.Array, target: IcebergType, what: str) -> pa.Array:
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
                children.append(missing_array(f, len(arr)))
            else:
                children.append(project_array(arr.field(i), f.field_type, what))
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
        values = project_array(arr.values, target.element_type, what)
        offsets = arr.offsets
        if pa.types.is_large_list(t):
            offsets = offsets.cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, values, type=arrow_type(target), mask=mask)
    if isinstance(target, MapType):
        if not pa.types.is_map(t):
            raise InvalidMetadata(f"{what}: a map column is stored as {t}.")
        keys = project_array(arr.keys, target.key_type, what)
        items = project_array(arr.items, target.value_type, what)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=arrow_type(target), mask=mask)
    return cast_array(arr, arrow_type(target), what)
