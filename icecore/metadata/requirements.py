"""Commit requirements: what must still hold in the freshly loaded table for an update to apply.

Each is a tagged value named as in the Iceberg REST catalog's ``TableRequirement``. A commit
checks them against the table as the catalog has it right before writing, and again after
every lost swap; an update is only ever re-applied where they all hold (spec "Commit
Conflict Resolution and Retry": schema and partition spec changes must validate that what
they were computed from has not changed).

A schema change asserts the current schema id *and* ``last-column-id``: the id alone misses
the case where another writer added a column and dropped it again (the current schema id is
back where it was, but the dropped column's field id is taken), after which a stale update
would reuse that id. A partition spec change asserts the default spec id and
``last-partition-id``; a sort order change the default sort order id; every change the
table uuid (a table dropped and re-created under the same name is another table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from icecore.metadata.model import TableMetadata


@dataclass(frozen=True, slots=True)
class AssertTableUUID:
    """The table is still the one the update was computed from."""

    kind: ClassVar[str] = "assert-table-uuid"
    uuid: str | None


@dataclass(frozen=True, slots=True)
class AssertCurrentSchemaId:
    """The current schema is still the one the update was computed from."""

    kind: ClassVar[str] = "assert-current-schema-id"
    current_schema_id: int


@dataclass(frozen=True, slots=True)
class AssertLastAssignedFieldId:
    """No column id was assigned since the update was computed (``last-column-id``)."""

    kind: ClassVar[str] = "assert-last-assigned-field-id"
    last_assigned_field_id: int


@dataclass(frozen=True, slots=True)
class AssertDefaultSpecId:
    """The default partition spec is still the one the update was computed from."""

    kind: ClassVar[str] = "assert-default-spec-id"
    default_spec_id: int


@dataclass(frozen=True, slots=True)
class AssertLastAssignedPartitionId:
    """No partition field id was assigned since the update was computed."""

    kind: ClassVar[str] = "assert-last-assigned-partition-id"
    last_assigned_partition_id: int


@dataclass(frozen=True, slots=True)
class AssertDefaultSortOrderId:
    """The default sort order is still the one the update was computed from."""

    kind: ClassVar[str] = "assert-default-sort-order-id"
    default_sort_order_id: int


@dataclass(frozen=True, slots=True)
class AssertNoLiveFilesInSpecs:
    """No snapshot a branch or tag points at holds files written with these specs.

    A schema change that drops a column used only by older partition specs is safe only
    while no live file still depends on those specs; an append may add such files
    meanwhile, so this is checked again on every attempt (it reads manifest lists).
    """

    kind: ClassVar[str] = "assert-no-live-files-in-specs"
    spec_ids: frozenset[int]


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId:
    """A branch or tag still points at ``snapshot_id`` (None: the ref must not exist).

    What a writer of snapshots asserts (REST ``assert-ref-snapshot-id``): nothing moved the
    ref since the new snapshot's parent was read.
    """

    kind: ClassVar[str] = "assert-ref-snapshot-id"
    ref: str
    snapshot_id: int | None


@dataclass(frozen=True, slots=True)
class AssertCreate:
    """The table must not exist yet (REST ``assert-create``, a staged create's commit)."""

    kind: ClassVar[str] = "assert-create"


Requirement = (
    AssertTableUUID
    | AssertCurrentSchemaId
    | AssertLastAssignedFieldId
    | AssertDefaultSpecId
    | AssertLastAssignedPartitionId
    | AssertDefaultSortOrderId
    | AssertNoLiveFilesInSpecs
    | AssertRefSnapshotId
    | AssertCreate
)
"""Any commit requirement."""

LiveSpecIds = Callable[[], frozenset[int]]
"""Returns the ids of partition specs that have live files in the freshly loaded table."""


def violation(
    requirement: Requirement, md: TableMetadata, live_spec_ids: LiveSpecIds
) -> str | None:
    """Why ``requirement`` fails against ``md``, as a clause of a sentence; None if it holds."""
    match requirement:
        case AssertTableUUID(uuid=uuid):
            if md.table_uuid != uuid:
                return (
                    f"the table's uuid is now {md.table_uuid} instead of {uuid} (it was dropped "
                    "and re-created)"
                )
        case AssertCurrentSchemaId(current_schema_id=expected):
            if md.current_schema_id != expected:
                return f"the current schema changed from id {expected} to {md.current_schema_id}"
        case AssertLastAssignedFieldId(last_assigned_field_id=expected):
            if md.last_column_id != expected:
                return (
                    f"column ids up to {md.last_column_id} were assigned (the update was "
                    f"computed when the last was {expected}; columns were added, perhaps "
                    "dropped again)"
                )
        case AssertDefaultSpecId(default_spec_id=expected):
            if md.default_spec_id != expected:
                return (
                    f"the default partition spec changed from id {expected} to {md.default_spec_id}"
                )
        case AssertLastAssignedPartitionId(last_assigned_partition_id=expected):
            if md.last_partition_id != expected:
                return (
                    f"partition field ids up to {md.last_partition_id} were assigned (the "
                    f"update was computed when the last was {expected})"
                )
        case AssertDefaultSortOrderId(default_sort_order_id=expected):
            if md.default_sort_order_id != expected:
                return (
                    f"the default sort order changed from id {expected} to "
                    f"{md.default_sort_order_id}"
                )
        case AssertNoLiveFilesInSpecs(spec_ids=spec_ids):
            live = sorted(spec_ids & live_spec_ids())
            if live:
                return f"files written with partition spec {live[0]} are live again"
        case AssertRefSnapshotId(ref=name, snapshot_id=expected):
            ref = md.refs.get(name)
            now = ref.snapshot_id if ref is not None else None
            if now != expected:
                return f"branch or tag {name} is at {now} instead of {expected}"
        case AssertCreate():
            return "the table exists already"
    return None


def violations(
    requirements: Iterable[Requirement], md: TableMetadata, live_spec_ids: LiveSpecIds
) -> list[str]:
    """Every requirement that fails against ``md``, explained (empty when all hold)."""
    found = (violation(r, md, live_spec_ids) for r in requirements)
    return [v for v in found if v is not None]


def merge_requirements(
    existing: Iterable[Requirement], new: Iterable[Requirement]
) -> tuple[Requirement, ...]:
    """Requirements of a transaction after staging one more update.

    The first requirement of each kind wins: it was computed against the transaction's
    base, which is what the freshly loaded table is compared with (a later update's
    requirement describes the transaction's own intermediate metadata). Spec ids that must
    have no live files accumulate, and ``assert-ref-snapshot-id`` is one kind per ref: a
    transaction that moves two refs must guard both (keeping only the first would let a
    concurrent move of the second be lost).
    """
    merged: list[Requirement] = list(existing)
    for req in new:
        if isinstance(req, AssertNoLiveFilesInSpecs):
            index = next(
                (i for i, r in enumerate(merged) if isinstance(r, AssertNoLiveFilesInSpecs)), None
            )
            if index is None:
                merged.append(req)
            else:
                old = merged[index]
                assert isinstance(old, AssertNoLiveFilesInSpecs)
                merged[index] = AssertNoLiveFilesInSpecs(old.spec_ids | req.spec_ids)
        elif isinstance(req, AssertRefSnapshotId):
            if not any(isinstance(r, AssertRefSnapshotId) and r.ref == req.ref for r in merged):
                merged.append(req)
        elif not any(type(r) is type(req) for r in merged):
            merged.append(req)
    return tuple(merged)


__all__ = [
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertCreate",
    "AssertNoLiveFilesInSpecs",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "LiveSpecIds",
    "Requirement",
    "merge_requirements",
    "violation",
    "violations",
]
