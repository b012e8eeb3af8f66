"""Dry runs and explanations: what a commit would write, and what another writer changed.

A :class:`Preview` is computed exactly as a commit computes its new metadata (the same
builder, the same strict serialization check), against the table as loaded, and writes
nothing. :func:`describe_updates` turns applied updates into one line each (schema
differences by field id, as :func:`icecore.diff.schema_changes` reports them); and
:func:`what_changed` says, for a conflict, what another writer committed meanwhile.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.diff import FieldChange, schema_changes
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder, encode_metadata
from icecore.metadata.requirements import Requirement
from icecore.metadata.serde import serialize_metadata
from icecore.metadata.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
    MetadataUpdate,
    RemoveProperties,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetProperties,
)
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.sorting import SortOrder
from icecore.types import NestedField

if TYPE_CHECKING:
    from icecore.table_data import TableData


# What a change does, in words ------------------------------------------------------------


def describe_spec(spec: PartitionSpec, schema: Schema) -> str:
    """A partition spec as a dry run shows it."""
    if not spec.fields:
        return "unpartitioned"
    parts = []
    for f in spec.fields:
        source = schema.find_column_name(f.source_id) or f"column {f.source_id}"
        parts.append(f"{f.name}={f.transform}({source}) [id {f.field_id}]")
    return ", ".join(parts)


def describe_sort_order(order: SortOrder, schema: Schema) -> str:
    """A sort order as a dry run shows it."""
    if order.is_unsorted:
        return "unsorted"
    parts = []
    for f in order.fields:
        source = schema.find_column_name(f.source_id) or f"column {f.source_id}"
        term = source if f.transform.is_identity else f"{f.transform}({source})"
        parts.append(f"{term} {f.direction.value} {f.null_order.value}")
    return ", ".join(parts)


def _field_change(change: FieldChange) -> str:
    text = f"{change.kind} {change.name} (id {change.field_id})"
    if change.before and change.after:
        return f"{text}: {change.before} -> {change.after}"
    return f"{text}: {change.after or change.before}"


def _field_extras(before: Schema, after: Schema) -> list[str]:
    """What :func:`icecore.diff.schema_changes` does not tell: defaults and column order."""
    lines: list[str] = []
    for fid in sorted(after.field_ids & before.field_ids):
        old, new = before.find_field(fid), after.find_field(fid)
        assert old is not None and new is not None
        if old.write_default != new.write_default:
            name = after.find_column_name(fid)
            lines.append(f"write default of {name}: {old.write_default!r} -> {new.write_default!r}")

    def order(fields: Sequence[NestedField], keep: frozenset[int]) -> list[int]:
        return [f.field_id for f in fields if f.field_id in keep]

    common = before.field_ids & after.field_ids
    if order(before.fields, common) != order(after.fields, common):
        names = ", ".join(f.name for f in after.fields)
        lines.append(f"column order is now: {names}")
    if sorted(before.identifier_field_names()) != sorted(after.identifier_field_names()):
        ids = ", ".join(after.identifier_field_names()) or "none"
        lines.append(f"identifier fields: {ids}")
    return lines


def describe_updates(
    old: TableMetadata, new: TableMetadata, updates: Iterable[MetadataUpdate]
) -> list[str]:
    """One line per effect of applied (resolved) updates, for dry runs and logs."""
    lines: list[str] = []
    schema = new.current_schema()
    for update in updates:
        match update:
            case AddSchema(schema=added):
                before = old.current_schema()
                lines.append(f"add schema {added.schema_id}")
                lines.extend(f"  {_field_change(c)}" for c in schema_changes(before, added))
                lines.extend(f"  {line}" for line in _field_extras(before, added))
            case SetCurrentSchema(schema_id=schema_id):
                lines.append(f"make schema {schema_id} current")
            case AddPartitionSpec(spec=spec):
                lines.append(f"add partition spec {spec.spec_id}: {describe_spec(spec, schema)}")
            case SetDefaultSpec(spec_id=spec_id):
                lines.append(f"make partition spec {spec_id} the default")
            case AddSortOrder(order=order):
                lines.append(
                    f"add sort order {order.order_id}: {describe_sort_order(order, schema)}"
                )
            case SetDefaultSortOrder(order_id=order_id):
                lines.append(f"make sort order {order_id} the default")
            case SetProperties(updates=props):
                lines.extend(f"set property {k} = {v}" for k, v in sorted(props.items()))
            case RemoveProperties(removals=removals):
                lines.extend(f"remove property {k}" for k in removals)
    return lines


def what_changed(before: TableMetadata, after: TableMetadata) -> str:
    """What another writer committed between two versions of a table, in a few words."""
    parts: list[str] = []
    if before.table_uuid != after.table_uuid:
        return "a new table under the same name"
    new_snapshots = [s for s in after.snapshots if before.snapshot_by_id(s.snapshot_id) is None]
    if new_snapshots:
        ops = sorted({str(s.operation or "snapshot") for s in new_snapshots})
        parts.append(f"{len(new_snapshots)} new snapshot(s) ({', '.join(ops)})")
    elif before.current_snapshot_id != after.current_snapshot_id:
        parts.append(
            f"current snapshot {before.current_snapshot_id} -> {after.current_snapshot_id}"
        )
    if (
        before.current_schema_id != after.current_schema_id
        or before.last_column_id != after.last_column_id
    ):
        changes = schema_changes(before.current_schema(), after.current_schema())
        detail = ", ".join(f"{c.kind} {c.name}" for c in changes) or "ids assigned"
        parts.append(f"schema {before.current_schema_id} -> {after.current_schema_id} ({detail})")
    if (
        before.default_spec_id != after.default_spec_id
        or before.last_partition_id != after.last_partition_id
    ):
        parts.append(
            f"partition spec {before.default_spec_id} -> {after.default_spec_id} "
            f"({describe_spec(after.default_spec(), after.current_schema())})"
        )
    if before.default_sort_order_id != after.default_sort_order_id:
        parts.append(f"sort order {before.default_sort_order_id} -> {after.default_sort_order_id}")
    changed_props = sorted(
        k
        for k in set(before.properties) | set(after.properties)
        if before.properties.get(k) != after.properties.get(k)
    )
    if changed_props:
        parts.append("properties " + ", ".join(changed_props))
    return "; ".join(parts) or "a new metadata version with no visible change"


# Dry runs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Preview:
    """What a commit would write, computed without writing anything.

    Attributes:
        metadata_location: the metadata file the commit would replace.
        base: the table's metadata now.
        metadata: the metadata the commit would write (its ``metadata-log`` already names
            ``metadata_location``).
        updates: the updates as they resolve against ``base`` (ids assigned).
        requirements: what must still hold when the commit is made.
        changes: one readable line per effect.
    """

    metadata_location: str
    base: TableMetadata
    metadata: TableMetadata
    updates: tuple[MetadataUpdate, ...]
    requirements: tuple[Requirement, ...]
    changes: tuple[str, ...]

    @property
    def is_noop(self) -> bool:
        """Whether the commit would change nothing (and so write nothing)."""
        return not self.updates

    def diff(self) -> str:
        """A unified diff of the metadata JSON, before and after."""
        before = json.dumps(serialize_metadata(self.base), indent=2).splitlines()
        after = json.dumps(serialize_metadata(self.metadata), indent=2).splitlines()
        return "\n".join(
            difflib.unified_diff(before, after, "current", "after commit", lineterm="", n=2)
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the changes, the requirements, the diff and the new metadata."""
        return {
            "dry_run": True,
            "metadata_location": self.metadata_location,
            "changes": list(self.changes),
            "updates": [u.action for u in self.updates],
            "requirements": [_requirement_json(r) for r in self.requirements],
            "diff": self.diff(),
            "metadata": serialize_metadata(self.metadata),
        }


def _requirement_json(requirement: Requirement) -> dict[str, Any]:
    out: dict[str, Any] = {"type": requirement.kind}
    for field in dataclasses.fields(requirement):
        value = getattr(requirement, field.name)
        out[field.name.replace("_", "-")] = sorted(value) if isinstance(value, frozenset) else value
    return out


def preview_updates(
    table: TableData, updates: Sequence[MetadataUpdate], requirements: Sequence[Requirement]
) -> Preview:
    """What committing ``updates`` to ``table`` (as loaded) would write; writes nothing.

    Raises:
        ValidationError: the updates break a rule of the spec against this table.
    """
    builder = MetadataBuilder(table.metadata).apply_all(updates)
    new = builder.build(previous_location=table.metadata_location)
    encode_metadata(new)
    resolved = tuple(builder.changes)
    return Preview(
        metadata_location=table.metadata_location,
        base=table.metadata,
        metadata=new,
        updates=resolved,
        requirements=tuple(requirements),
        changes=tuple(describe_updates(table.metadata, new, resolved)),
    )


__all__ = [
    "Preview",
    "describe_sort_order",
    "describe_spec",
    "describe_updates",
    "preview_updates",
    "what_changed",
]
