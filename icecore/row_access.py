"""Row values as one principal may read them: the reader role, and column masks.

DESIGN.md "Identity, roles and audit": a viewer sees metadata only (no row value anywhere); a
reader reads rows; a grant's ``mask`` lists columns that principal never sees. Every path
that returns row values (a scan's rows and batches, previews, SQL over ``rows``, exports,
changelogs) asks this module, in the core where the rows are read, so that hiding a button
is never the only guard:

- :func:`require_rows`: the reader role, or :class:`~icecore.errors.Forbidden`.
- :func:`readable_schema`: the schema without its masked fields. A masked struct hides all
  its fields; a masked field of a struct (``address.zip``) hides that field only (the reader
  prunes struct fields by id); a masked field inside a list or a map hides the whole list or
  map column, because the reader does not prune inside them.
- :func:`check_columns`: a requested masked column is refused in one sentence ("column X is
  masked for you"), never read as a silent null; asking for every column gives the others.
- :func:`check_filter`: a row filter on a masked column is refused, for reading and for
  planning alike: the rows it keeps, or the files its bounds prune, would let a reader find
  the hidden values one comparison at a time.
- :func:`reads_values`: what counts as reading values. A count with no column and no filter
  (``count(*)``, live rows after deletes) reads row positions only: the number is the data
  files' record counts less their deletes, metadata-derived, so a viewer may have it; any
  column, ``_partition``, or a filter (whose kept rows depend on values) needs the reader role.
- :func:`mask_metadata_table`: metadata tables (``files``, ``entries``, ``manifests``, ...)
  stay viewer-level, but their columns that carry values of a masked column (per-column
  ``lower_bounds``/``upper_bounds``, ``readable_metrics``, partition values and partition
  summaries of a partition field whose source is masked) are nulled for that principal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from icecore.access import Access, Role
from icecore.compute import pc
from icecore.errors import Forbidden
from icecore.expressions.model import Expression
from icecore.expressions.row_filter import filter_field_ids
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.types import IcebergType, ListType, MapType, NestedField, StructType

READ_ROWS = "read its rows"
"""The action the reader role allows, as errors and pages say it."""

PARTITION_COLUMN = "_partition"
"""The metadata column holding partition values (values of partition source columns)."""


def require_rows(access: Access, what: str) -> None:
    """Refuse reading row values of ``what`` unless ``access`` includes the reader role.

    Raises:
        Forbidden: one sentence naming the role it needs and the role held.
    """
    access.require(Role.READER, READ_ROWS, what)


def reads_values(
    columns: Sequence[str] | None, metadata_columns: Iterable[str], filter_ids: Iterable[int]
) -> bool:
    """Whether a read returns or depends on row values (see the module: counts do not)."""
    return (
        columns is None
        or len(columns) > 0
        or PARTITION_COLUMN in metadata_columns
        or any(True for _ in filter_ids)
    )


def _masked_below(access: Access, name: str) -> bool:
    prefix = name.lower() + "."
    return any(m.startswith(prefix) for m in access.mask)


def _visible_fields(
    fields: Sequence[NestedField], prefix: str, access: Access
) -> list[NestedField]:
    kept: list[NestedField] = []
    for f in fields:
        name = prefix + f.name
        if access.masks(name):
            continue
        if not _masked_below(access, name):
            kept.append(f)
            continue
        t = f.field_type
        if isinstance(t, StructType):
            children = _visible_fields(t.fields, name + ".", access)
            if children:
                kept.append(replace(f, field_type=StructType(tuple(children))))
        # A list or map with a masked field inside is left out whole: the reader prunes
        # struct fields, not the elements of a list or the values of a map.
    return kept


def readable_schema(schema: Schema, access: Access) -> Schema:
    """``schema`` without the fields ``access`` masks (itself when nothing is masked)."""
    if not access.mask:
        return schema
    fields = _visible_fields(schema.fields, "", access)
    if len(fields) == len(schema.fields) and all(
        a is b for a, b in zip(fields, schema.fields, strict=True)
    ):
        return schema
    return Schema(
        tuple(fields),
        schema_id=schema.schema_id,
        identifier_field_ids=tuple(i for i in schema.identifier_field_ids if i in _ids(fields)),
    )


def _ids(fields: Iterable[NestedField]) -> set[int]:
    found: set[int] = set()
    stack: list[NestedField] = list(fields)
    while stack:
        f = stack.pop()
        found.add(f.field_id)
        t: IcebergType = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            stack.extend(t.child_fields())
    return found


def masked_ids(schema: Schema, access: Access) -> frozenset[int]:
    """The ids of every field of ``schema`` that ``access`` hides (children included)."""
    if not access.mask:
        return frozenset()
    return frozenset(_ids(schema.fields) - _ids(readable_schema(schema, access).fields))


def _masked_error(name: str, what: str) -> Forbidden:
    return Forbidden(
        f"Column {name} is masked for you on {what}: your grant hides it, so it is not read; "
        "ask for the other columns (every column gives all of them without it)."
    )


def check_columns(schema: Schema, access: Access, columns: Sequence[str] | None, what: str) -> None:
    """Refuse a requested column ``access`` masks (None, every column, is never refused).

    Raises:
        Forbidden: "Column X is masked for you ...", one sentence.
    """
    if columns is None or not access.mask:
        return
    hidden = masked_ids(schema, access)
    for name in columns:
        fid = schema.find_id_by_name(name, case_sensitive=False)
        if (fid is not None and fid in hidden) or access.masks(name):
            shown = schema.find_column_name(fid) if fid is not None else None
            raise _masked_error(shown or name, what)


def check_filter(schema: Schema, access: Access, filter: Expression, what: str) -> None:
    """Refuse a bound row filter that reads a column ``access`` masks.

    Raises:
        Forbidden: one sentence: the column, and why a filter on it is refused.
    """
    check_filter_ids(schema, access, filter_field_ids(filter), what)


def check_filter_ids(schema: Schema, access: Access, filter_ids: Iterable[int], what: str) -> None:
    """:func:`check_filter` for the field ids a filter reads (a plan keeps those)."""
    if not access.mask:
        return
    hidden = masked_ids(schema, access) & frozenset(filter_ids)
    if hidden:
        name = schema.find_column_name(min(hidden)) or str(min(hidden))
        raise Forbidden(
            f"You cannot filter on column {name} of {what}: it is masked for you, and the "
            "rows or files a filter on it keeps would reveal its values one comparison at a "
            "time; filter on other columns."
        )


def check_names_in_query(schema: Schema, access: Access, names: Iterable[str], what: str) -> None:
    """Refuse user SQL over rows that names a masked column (top-level, or a masked field's name).

    ``names`` are the lower-cased identifiers the query uses
    (:func:`icecore.expressions.parser.names_in_query`); a name that is also a masked
    column's (or a masked nested field's last part, when its parent is named too) is
    refused, so the query fails in one sentence rather than on an unknown column.
    """
    if not access.mask:
        return
    used = {n.lower() for n in names}
    for masked in sorted(access.mask):
        parts = masked.split(".")
        named = parts[-1] in used and (len(parts) == 1 or parts[0] in used)
        if named and schema.find_id_by_name(masked, case_sensitive=False) is not None:
            raise _masked_error(masked, what)


def masked_partition_fields(
    specs: Iterable[PartitionSpec], schema: Schema, access: Access
) -> frozenset[int]:
    """Partition field ids whose source column ``access`` masks (their values are its values)."""
    hidden = masked_ids(schema, access)
    if not hidden:
        return frozenset()
    return frozenset(pf.field_id for spec in specs for pf in spec.fields if pf.source_id in hidden)


def null_struct_fields(
    array: pa.Array | pa.ChunkedArray,
    field_ids: frozenset[int],
    names: frozenset[str] = frozenset(),
) -> pa.Array:
    """A struct array with some children nulled (types kept).

    A child is nulled when its ``field_id`` metadata is in ``field_ids`` or, for a child
    without one, its name is in ``names``.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    t = array.type
    if not pa.types.is_struct(t) or not field_ids:
        return array
    children: list[pa.Array] = []
    changed = False
    for i, f in enumerate(t):
        child = pc.struct_field(array, [i])
        fid = (f.metadata or {}).get(b"field_id")
        if (int(fid) in field_ids) if fid is not None else f.name in names:
            child = pa.nulls(len(array), f.type)
            changed = True
        children.append(child)
    if not changed:
        return array
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)


def _drop_map_keys(column: pa.Array | pa.ChunkedArray, keys: frozenset[int]) -> pa.Array:
    """A ``map<int, ...>`` array (column id to bound) without the entries ``keys`` names."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_map(array.type) or not keys:
        return array
    # A map's offsets are absolute into its (unsliced) keys and items.
    old = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    lo, hi = int(old[0]), int(old[-1])
    key_array = array.keys.slice(lo, hi - lo)
    keep = pc.invert(pc.is_in(key_array, value_set=pa.array(sorted(keys), key_array.type)))
    kept = np.asarray(pc.fill_null(keep, True).to_numpy(zero_copy_only=False), dtype=bool)
    parents = np.repeat(np.arange(len(array)), np.diff(old))
    counts = np.bincount(parents[kept], minlength=len(array)).astype(np.int32)
    offsets = np.zeros(len(array) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    mask = array.is_null() if array.null_count else None
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        key_array.filter(keep),
        array.items.slice(lo, hi - lo).filter(keep),
        type=array.type,
        mask=mask,
    )


def _drop_struct_children(array: pa.Array, names: frozenset[str]) -> pa.Array:
    """A struct array without the children ``names`` (lower-cased) names."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    t = array.type
    if not pa.types.is_struct(t):
        return array
    keep = [i for i, f in enumerate(t) if f.name.lower() not in names]
    if len(keep) == t.num_fields:
        return array
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(
        [pc.struct_field(array, [i]) for i in keep], fields=[t.field(i) for i in keep], mask=mask
    )


BOUND_COLUMNS = ("lower_bounds", "upper_bounds")
"""Metadata columns mapping a column id to a bound: a masked column's entries are dropped."""
METRIC_MAP_COLUMNS = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts")
"""Per-column counts: numbers, not values, kept."""


def mask_metadata_table(
    table: pa.Table,
    schemas: Iterable[Schema],
    specs: Iterable[PartitionSpec],
    access: Access,
) -> pa.Table:
    """A metadata table as ``access`` may see it: values of masked columns left out.

    ``schemas``: the table's schemas a mask is matched in (a column keeps its id through a
    rename, so the current schema's names find it in older files' bounds too).

    Per-column bounds (``lower_bounds``/``upper_bounds``) lose the masked columns' entries;
    ``readable_metrics`` loses the masked columns' structs; ``partition`` (and a ``data_file``
    struct's, for the entries tables) has the fields whose source is masked nulled; a
    ``partition_summaries`` list (the manifests tables) has its bounds nulled when any
    partition field of the table is masked (a summary's position names a field of the
    manifest's own spec, not recorded there). Counts are kept: they are not values.
    """
    if not access.mask:
        return table
    hidden: set[int] = set()
    names: set[str] = set()
    chosen = list(schemas)
    for schema in chosen:
        found = masked_ids(schema, access)
        hidden |= found
        names |= {(schema.find_column_name(i) or "").lower() for i in found} - {""}
    if not hidden:
        return table
    spec_list = list(specs)
    partition_ids = frozenset(
        pf.field_id for spec in spec_list for pf in spec.fields if pf.source_id in hidden
    )
    partition_names = frozenset(
        pf.name for spec in spec_list for pf in spec.fields if pf.field_id in partition_ids
    )
    return _mask_columns(
        table, _Hidden(frozenset(hidden), partition_ids, partition_names, frozenset(names))
    )


@dataclass(frozen=True, slots=True)
class _Hidden:
    """What :func:`mask_metadata_table` leaves out: column ids and names, partition fields."""

    ids: frozenset[int]
    partition_ids: frozenset[int]
    partition_names: frozenset[str]
    names: frozenset[str]


def _mask_columns(table: pa.Table, hidden: _Hidden) -> pa.Table:
    out = [_mask_column(name, table.column(name), hidden) for name in table.column_names]
    return pa.Table.from_arrays(out, schema=_schema_of(table.schema, out))


def _schema_of(schema: pa.Schema, arrays: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Schema:
    return pa.schema(
        [
            pa.field(f.name, a.type, nullable=f.nullable, metadata=f.metadata)
            for f, a in zip(schema, arrays, strict=True)
        ],
        metadata=schema.metadata,
    )


def _mask_column(
    name: str, column: pa.Array | pa.ChunkedArray, hidden: _Hidden
) -> pa.Array | pa.ChunkedArray:
    if name in BOUND_COLUMNS:
        return _drop_map_keys(column, hidden.ids)
    if name == "readable_metrics":
        return _drop_struct_children(column, hidden.names)
    if name in ("partition", PARTITION_COLUMN):
        return null_struct_fields(column, hidden.partition_ids, hidden.partition_names)
    if name == "partition_summaries" and hidden.partition_ids:
        return _null_summary_bounds(column)
    if name == "data_file" and pa.types.is_struct(column.type):
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        t = array.type
        children = [
            _mask_column(t.field(i).name, pc.struct_field(array, [i]), hidden)
            for i in range(t.num_fields)
        ]
        fields = [
            pa.field(t.field(i).name, c.type, t.field(i).nullable, t.field(i).metadata)
            for i, c in enumerate(children)
        ]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    return column


def _null_summary_bounds(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_list(array.type):
        return array
    values = array.values
    nulled = null_struct_names(values, frozenset({"lower_bound", "upper_bound"}))
    mask = array.is_null() if array.null_count else None
    return pa.ListArray.from_arrays(array.offsets, nulled, type=array.type, mask=mask)


def null_struct_names(array: pa.Array, names: frozenset[str]) -> pa.Array:
    """A struct array with the children ``names`` names nulled (types kept)."""
    t = array.type
    if not pa.types.is_struct(t):
        return array
    children = [
        pa.nulls(len(array), f.type) if f.name in names else pc.struct_field(array, [i])
        for i, f in enumerate(t)
    ]
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)


def masked_columns(schema: Schema, access: Access) -> list[str]:
    """The full names of the masked fields ``schema`` has, for a page to list them."""
    hidden = masked_ids(schema, access)
    names = [schema.find_column_name(i) for i in sorted(hidden)]
    out: list[str] = []
    for name in names:
        if name and not any(name.startswith(o + ".") for o in out):
            out.append(name)
    return out


__all__ = [
    "READ_ROWS",
    "check_columns",
    "check_filter",
    "check_filter_ids",
    "check_names_in_query",
    "mask_metadata_table",
    "masked_columns",
    "masked_ids",
    "masked_partition_fields",
    "null_struct_fields",
    "readable_schema",
    "reads_values",
    "require_rows",
]
