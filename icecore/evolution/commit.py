"""Validate, write and swap: one commit of metadata updates, with bounded retries.

Spec "Optimistic Concurrency" and "Commit Conflict Resolution and Retry": a commit loads the
table as its catalog has it *now*, checks the requirements its updates were computed under
(:mod:`icecore.evolution.requirements`), applies the updates with
:class:`~icecore.metadata.builder.MetadataBuilder` (which checks the result against the
spec), serializes the new metadata and parses it back strictly before anything is written,
and asks the catalog to swap the table's pointer from the loaded file to the new one.

When the swap is lost to another writer, the table is loaded again and the updates are
re-applied only if every requirement still holds; a schema change therefore survives a
concurrent append or spec change, a spec change a concurrent schema change that keeps its
source columns. Retries follow the table's ``commit.retry.*`` properties (Iceberg Java's
names and defaults: 4 retries, 100 ms doubling to at most 60 s, 30 minutes in all).
Otherwise :class:`~icecore.errors.CommitConflict` says what changed.

When the catalog cannot tell whether the swap happened (:class:`CommitStateUnknown`), the
table is loaded again: the commit succeeded if the written file is current or in the
``metadata-log``, failed (and is retried) if the table moved on without it; if that cannot
be learnt either, the error reaches the caller with the file's location, and the file is
never deleted.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.diff import FieldChange, schema_changes
from icecore.errors import (
    CommitConflict,
    CommitStateUnknown,
    IcecoreError,
    Unsupported,
    ValidationError,
)
from icecore.evolution.requirements import Requirement, violations
from icecore.failpoints import failpoint
from icecore.io import normalize_path
from icecore.manifest import ManifestContent
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder, encode_metadata
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
    from icecore.table import Table


# Retry settings --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a lost swap is retried (``commit.retry.*`` properties)."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> RetryPolicy:
        """The policy a table's properties ask for (defaults as Iceberg Java's)."""
        values: dict[str, int] = {}
        for field in dataclasses.fields(cls):
            key = "commit.retry." + field.name.replace("_", "-")
            raw = properties.get(key)
            if raw is None:
                continue
            try:
                values[field.name] = max(0, int(raw))
            except ValueError as e:
                raise ValidationError(f"Table property {key}={raw!r} must be an integer.") from e
        return cls(**values)

    def wait_ms(self, attempt: int) -> float:
        """The pause before retry ``attempt`` (1-based): doubling, capped, 10% jitter."""
        base = min(self.min_wait_ms * (2 ** (attempt - 1)), self.max_wait_ms)
        return float(base) * (1.0 + random.random() / 10.0)


# Live files per partition spec -----------------------------------------------------------


def live_spec_ids(table: Table) -> frozenset[int]:
    """Ids of the partition specs that files live in any branch or tag were written with.

    Reads only manifest lists: a manifest with added or existing files (or unknown counts,
    as v1 writers may leave them) keeps its spec alive.
    """
    md = table.metadata
    snapshot_ids = {ref.snapshot_id for ref in md.refs.values()}
    if md.current_snapshot_id is not None:
        snapshot_ids.add(md.current_snapshot_id)
    live: set[int] = set()
    for snapshot_id in sorted(snapshot_ids):
        snapshot = md.snapshot_by_id(snapshot_id)
        if snapshot is None:
            continue
        for manifest in table.manifests(snapshot):
            if manifest.content in (ManifestContent.DATA, ManifestContent.DELETES) and (
                manifest.has_added_files() or manifest.has_existing_files()
            ):
                live.add(manifest.partition_spec_id)
    return frozenset(live)


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
        return "the table was dropped and re-created"
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
    table: Table, updates: Sequence[MetadataUpdate], requirements: Sequence[Requirement]
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


# The commit loop --------------------------------------------------------------------------


def _same_file(a: str, b: str) -> bool:
    return normalize_path(a) == normalize_path(b)


def commit_updates(
    table: Table,
    updates: Sequence[MetadataUpdate],
    requirements: Sequence[Requirement],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Table:
    """Commit ``updates`` to the table ``table`` was loaded from; returns the new version.

    ``table`` is the version the updates were computed from: the table is loaded again
    through its catalog before each attempt, and ``requirements`` are checked against that.

    Raises:
        Unsupported: the table was not loaded through a catalog that can commit.
        ValidationError: the updates break a rule of the spec; nothing was written.
        CommitConflict: another writer changed what the updates depend on, or retries ran
            out; nothing of this commit is in the table.
        CommitStateUnknown: the swap's outcome could not be learnt; the written file is kept.
    """
    if table.catalog is None:
        raise Unsupported(
            f"Table {table.identifier} was opened from a bare metadata file; open it through "
            "its catalog (CATALOG::ns.table) or its table folder to commit."
        )
    policy: RetryPolicy | None = None
    started = time.monotonic()
    attempt = 0
    while True:
        fresh = table.refresh()
        if policy is None:
            policy = RetryPolicy.from_properties(fresh.metadata.properties)
        try:
            result = _attempt(table, fresh, updates, requirements)
        except CommitConflict as e:
            if not e.retryable:
                raise
            result, lost = None, str(e)
        else:
            lost = "the table changed while committing"
        if result is not None:
            return result
        attempt += 1
        elapsed_ms = (time.monotonic() - started) * 1000.0
        if attempt > policy.num_retries or elapsed_ms >= policy.total_timeout_ms:
            raise CommitConflict(
                f"Cannot commit to {table.identifier}: the swap was lost {attempt} time(s), "
                f"last because {lost}; retries ran out (commit.retry.num-retries="
                f"{policy.num_retries}); nothing of this change is in the table."
            )
        sleep(policy.wait_ms(attempt) / 1000.0)


def _refused(message: str) -> CommitConflict:
    """A conflict that retrying the same updates cannot fix (a requirement no longer holds)."""
    conflict = CommitConflict(message)
    conflict.retryable = False
    return conflict


def _attempt(
    base: Table,
    fresh: Table,
    updates: Sequence[MetadataUpdate],
    requirements: Sequence[Requirement],
) -> Table | None:
    """One try: the committed table, or None when the swap was lost and may be retried."""
    failed = violations(requirements, fresh.metadata, lambda: live_spec_ids(fresh))
    if failed:
        raise _refused(
            f"Cannot commit to {base.identifier}: {'; '.join(failed)}. Since this change was "
            f"prepared: {what_changed(base.metadata, fresh.metadata)}. Reload the table and "
            "make the change again."
        )
    try:
        builder = MetadataBuilder(fresh.metadata).apply_all(updates)
        if not builder.changes:
            return fresh
        new = builder.build(previous_location=fresh.metadata_location)
    except ValidationError as e:
        if _same_file(fresh.metadata_location, base.metadata_location):
            raise
        raise _refused(
            f"Cannot commit to {base.identifier} after another writer's change "
            f"({what_changed(base.metadata, fresh.metadata)}): {e}"
        ) from e
    payload = encode_metadata(new)
    catalog = fresh.catalog
    assert catalog is not None
    try:
        location = catalog.commit_metadata(fresh.identifier, fresh.metadata_location, new, payload)
    except CommitStateUnknown as e:
        return _resolve_unknown(base, e)
    return dataclasses.replace(fresh, metadata=new, metadata_location=location)


def _resolve_unknown(table: Table, error: CommitStateUnknown, tries: int = 3) -> Table | None:
    """After an unknown outcome: the table with the commit in it, or None if it did not land.

    The commit landed if the file it wrote is current or in the ``metadata-log`` of the
    current version; it did not if the table can be loaded and neither holds.

    Raises:
        CommitStateUnknown: the table could not be loaded to find out.
    """
    location = error.metadata_location
    if location is None:
        raise error
    last: Exception | None = None
    for attempt in range(tries):
        try:
            failpoint("resolve-load")
            fresh = table.refresh()
        except (IcecoreError, OSError) as e:
            last = e
            time.sleep(0.05 * (attempt + 1))
            continue
        if _same_file(fresh.metadata_location, location) or any(
            _same_file(entry.metadata_file, location) for entry in fresh.metadata.metadata_log
        ):
            return fresh
        return None
    raise CommitStateUnknown(
        f"{error} Loading {table.identifier} again to check failed as well ({last}); the new "
        f"metadata file {location} is kept: load the table later to see whether it is current.",
        location,
    ) from error


__all__ = [
    "Preview",
    "RetryPolicy",
    "commit_updates",
    "describe_sort_order",
    "describe_spec",
    "describe_updates",
    "live_spec_ids",
    "preview_updates",
    "what_changed",
]
