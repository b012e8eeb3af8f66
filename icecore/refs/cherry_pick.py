"""Cherry-pick a snapshot onto a branch, as Iceberg Java's ``CherryPickOperation`` does.

Iceberg Java 1.10 (``CherryPickOperation``, ``WapUtil``), applied to one branch's head:

- the picked snapshot's parent is the branch head (or both are empty): a fast-forward, only
  the ref moves; for an ``append`` or a dynamic overwrite a WAP id already published on the
  branch is refused first;
- an ``append``: a new snapshot on the head adding the picked snapshot's added data files,
  with ``source-snapshot-id`` and, when the picked one was staged with ``wap.id``,
  ``published-wap-id`` in its summary (:mod:`icecore.refs.snapshot_writer`). Refused when
  the picked snapshot is already an ancestor of the head, when an ancestor was already
  picked from it (its ``source-snapshot-id``), or when its WAP id was already published (an
  ancestor staged or published it). Java checks no delete files for an append: its
  ``validate`` does not call the merging producer's checks, and the picked files get the
  new snapshot's sequence number, so deletes committed meanwhile do not apply to them;
- a dynamic overwrite (``replace-partitions=true``) based on an ancestor of the head (or on
  nothing): replayed as Java does, after checking that no snapshot since its parent added a
  data file in a partition it replaces: a new ``overwrite`` snapshot adds its added data
  files and deletes the data files it removed (each must still be live on the branch), and
  with them the deletion vectors of those files and delete files older than every data
  file left (:func:`icecore.refs.snapshot_writer.write_snapshot`);
- anything else: refused, "not append, dynamic overwrite, or fast-forward".

Nothing is written before every check passes; the new manifest and manifest list are then
written under unique names, and a commit that fails leaves them unreferenced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icecore.errors import NotFound, ValidationError
from icecore.metadata import Snapshot, TableMetadata
from icecore.metadata.model import MAIN_BRANCH, Operation, SnapshotRef
from icecore.metadata.requirements import AssertRefSnapshotId, AssertTableUUID, Requirement
from icecore.metadata.updates import AddSnapshot, MetadataUpdate, SetSnapshotRef
from icecore.refs.snapshot_writer import (
    PickedFile,
    PickedManifest,
    snapshot_changes,
    write_snapshot,
)
from icecore.table_data import TableData

STAGED_WAP_ID = "wap.id"
"""Summary key of a snapshot staged by write-audit-publish (``spark.wap.id``)."""

PUBLISHED_WAP_ID = "published-wap-id"
"""Summary key of the snapshot that published a staged WAP id."""

SOURCE_SNAPSHOT_ID = "source-snapshot-id"
"""Summary key linking a cherry-picked snapshot to the snapshot it was picked from."""

REPLACE_PARTITIONS = "replace-partitions"
"""Summary key a dynamic overwrite (Java's ``ReplacePartitions``) sets to ``true``."""


def _summary(snapshot: Snapshot, key: str) -> str | None:
    return snapshot.summary.get(key) if snapshot.summary is not None else None


def ancestors(metadata: TableMetadata, head: Snapshot | None) -> list[Snapshot]:
    """``head`` and its ancestors still in the metadata, newest first (Java's ``ancestorIds``)."""
    out: list[Snapshot] = []
    seen: set[int] = set()
    current = head
    while current is not None and current.snapshot_id not in seen:
        out.append(current)
        seen.add(current.snapshot_id)
        parent = current.parent_snapshot_id
        current = metadata.snapshot_by_id(parent) if parent is not None else None
    return out


def _wap_id_to_publish(
    metadata: TableMetadata, picked: Snapshot, lineage: list[Snapshot], branch: str
) -> str | None:
    """Java's ``WapUtil.validateWapPublish``: the staged WAP id, unless already published."""
    wap_id = _summary(picked, STAGED_WAP_ID)
    if not wap_id:
        return wap_id
    for ancestor in lineage:
        if wap_id in (_summary(ancestor, STAGED_WAP_ID), _summary(ancestor, PUBLISHED_WAP_ID)):
            raise ValidationError(
                f"Cannot cherry-pick snapshot {picked.snapshot_id}: its WAP id {wap_id!r} was "
                f"already published on {branch} (snapshot {ancestor.snapshot_id}); nothing to "
                "publish."
            )
    return wap_id


def _check_not_picked(picked: Snapshot, lineage: list[Snapshot], branch: str) -> None:
    """Java's ``validateNonAncestor``: never pick what the branch already holds."""
    if any(s.snapshot_id == picked.snapshot_id for s in lineage):
        raise ValidationError(
            f"Cannot cherry-pick snapshot {picked.snapshot_id}: it is already an ancestor of "
            f"{branch}."
        )
    source = str(picked.snapshot_id)
    for s in lineage:
        if _summary(s, SOURCE_SNAPSHOT_ID) == source:
            raise ValidationError(
                f"Cannot cherry-pick snapshot {picked.snapshot_id}: it was already picked to "
                f"create snapshot {s.snapshot_id} of {branch}."
            )


def _check_replaced_partitions(
    table: TableData,
    metadata: TableMetadata,
    picked: Snapshot,
    lineage: list[Snapshot],
    added: list[PickedFile],
) -> None:
    """Java's ``validateReplacedPartitions``: no file was added meanwhile where it replaces.

    The snapshots from the branch head back to (not including) the picked snapshot's
    parent are read: the data files each one added, in the manifests it wrote.
    """
    replaced = {(f.spec_id, _key(f.partition)) for f in added}
    for snapshot in lineage:
        if snapshot.snapshot_id == picked.parent_snapshot_id:
            break
        for f in snapshot_changes(table, metadata, snapshot, for_copy=False)[0]:
            if (f.spec_id, _key(f.partition)) in replaced:
                raise ValidationError(
                    f"Cannot cherry-pick overwrite snapshot {picked.snapshot_id}: snapshot "
                    f"{snapshot.snapshot_id} added {f.path} since, in a partition it replaces."
                )


def _key(partition: Mapping[int, Any]) -> tuple[tuple[int, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in partition.items()))


@dataclass(frozen=True, slots=True)
class CherryPickPlan:
    """What cherry-picking a snapshot onto a branch will do, found without writing anything.

    Attributes:
        branch: the branch that moves.
        picked: the snapshot picked.
        head: the branch head before (None: the branch is empty).
        fast_forward: only the ref moves, to ``picked``.
        added: data files a new snapshot adds (empty for a fast-forward).
        removed: data files a new snapshot deletes (a replayed dynamic overwrite).
        summary_properties: what the new snapshot's summary starts with.
        requirements: assert-table-uuid and assert-ref-snapshot-id on ``branch``.
        ref: the branch's ref before (its retention is kept), or None.
        layouts: the Avro layout of the picked manifest of each spec id of ``added``.
    """

    branch: str
    picked: Snapshot
    head: Snapshot | None
    fast_forward: bool
    added: tuple[PickedFile, ...]
    removed: tuple[PickedFile, ...]
    summary_properties: Mapping[str, str]
    requirements: tuple[Requirement, ...]
    ref: SnapshotRef | None
    layouts: Mapping[int, PickedManifest]


def plan_cherry_pick(
    table: TableData, metadata: TableMetadata, snapshot_id: int, branch: str = MAIN_BRANCH
) -> CherryPickPlan:
    """Check a cherry-pick as Java does and say what it will do; reads manifests, writes nothing.

    For a dry run: every refusal of :func:`cherry_pick` is raised here, except a data file a
    dynamic overwrite removed that is gone from the branch, which is found while writing.

    Raises:
        NotFound, ValidationError, Unsupported: as :func:`cherry_pick`.
    """
    picked = metadata.snapshot_by_id(snapshot_id)
    if picked is None:
        raise NotFound(
            f"Cannot cherry-pick unknown snapshot {snapshot_id}: the table has no such snapshot."
        )
    ref = metadata.refs.get(branch)
    if ref is not None and not ref.is_branch:
        raise ValidationError(
            f"Cannot cherry-pick onto {branch}: it is a tag; tags do not move, pick onto a branch."
        )
    if ref is None and branch != MAIN_BRANCH:
        raise NotFound(f"Cannot cherry-pick onto branch {branch}: the table has no such branch.")
    head = metadata.snapshot_by_id(ref.snapshot_id) if ref is not None else None
    lineage = ancestors(metadata, head)
    guards: list[Requirement] = []
    if metadata.table_uuid is not None:
        guards.append(AssertTableUUID(metadata.table_uuid))
    guards.append(AssertRefSnapshotId(branch, head.snapshot_id if head is not None else None))

    operation = picked.operation
    is_append = operation == Operation.APPEND
    is_dynamic_overwrite = operation == Operation.OVERWRITE and (
        (_summary(picked, REPLACE_PARTITIONS) or "").lower() == "true"
    )
    fast_forward = (
        picked.parent_snapshot_id is not None
        and head is not None
        and picked.parent_snapshot_id == head.snapshot_id
    ) or (head is None and picked.parent_snapshot_id is None)

    wap_id: str | None = None
    if is_append or is_dynamic_overwrite:
        if is_dynamic_overwrite and not (
            picked.parent_snapshot_id is None
            or any(s.snapshot_id == picked.parent_snapshot_id for s in lineage)
        ):
            raise ValidationError(
                f"Cannot cherry-pick overwrite snapshot {snapshot_id}: it is not based on an "
                f"ancestor of {branch}."
            )
        wap_id = _wap_id_to_publish(metadata, picked, lineage, branch)
    elif not fast_forward:
        raise ValidationError(
            f"Cannot cherry-pick snapshot {snapshot_id}: not append, dynamic overwrite, or "
            f"fast-forward (its parent is not the head of {branch}); rebase the change on "
            f"{branch} instead."
        )
    properties: dict[str, str] = {}
    if wap_id:
        properties[PUBLISHED_WAP_ID] = wap_id
    properties[SOURCE_SNAPSHOT_ID] = str(snapshot_id)
    plan = CherryPickPlan(
        branch, picked, head, fast_forward, (), (), properties, tuple(guards), ref, {}
    )
    if fast_forward:
        return plan

    _check_not_picked(picked, lineage, branch)
    added, removed, layouts = snapshot_changes(table, metadata, picked)
    if is_dynamic_overwrite:
        _check_replaced_partitions(table, metadata, picked, lineage, added)
    else:
        removed = []
    return dataclasses.replace(plan, added=tuple(added), removed=tuple(removed), layouts=layouts)


def _moved(ref: SnapshotRef | None, snapshot_id: int) -> SnapshotRef:
    """The branch's ref at ``snapshot_id``, its retention kept."""
    if ref is None:
        return SnapshotRef(snapshot_id)
    return dataclasses.replace(ref, snapshot_id=snapshot_id)


def cherry_pick(
    table: TableData,
    metadata: TableMetadata,
    snapshot_id: int,
    branch: str = "main",
) -> tuple[tuple[MetadataUpdate, ...], tuple[Requirement, ...]]:
    """Updates (add-snapshot if a new one is written, set-snapshot-ref) and requirements
    (assert-table-uuid, assert-ref-snapshot-id on `branch`) that cherry-pick `snapshot_id`
    onto `branch` of `metadata`, as Iceberg Java's CherryPickOperation does.

    ``metadata`` is what the operation applies to (a transaction may have staged other
    changes); ``table`` gives the FileIO the picked manifests are read and the new ones
    written through. A new snapshot's manifests and manifest list are written before this
    returns (only when every check passed, :func:`plan_cherry_pick`); committing the
    updates makes them reachable.

    Raises:
        NotFound: the snapshot or the branch does not exist.
        ValidationError: Iceberg refuses this cherry-pick (see the module docstring).
        Unsupported: a v1 table that would need a new snapshot, or manifests written for
            another format version than the table's.
    """  # noqa: D205, D209, D415 (the contract's wording, kept exactly)
    return apply_cherry_pick(
        table, metadata, plan_cherry_pick(table, metadata, snapshot_id, branch)
    )


def apply_cherry_pick(
    table: TableData, metadata: TableMetadata, plan: CherryPickPlan
) -> tuple[tuple[MetadataUpdate, ...], tuple[Requirement, ...]]:
    """The updates and requirements of a checked pick (``plan``, made against ``metadata``).

    A fast-forward reads and writes nothing; otherwise the new snapshot's manifests and
    manifest list are written here (see :func:`cherry_pick`).
    """
    branch, snapshot_id = plan.branch, plan.picked.snapshot_id
    if plan.fast_forward:
        return (SetSnapshotRef(branch, _moved(plan.ref, snapshot_id)),), plan.requirements
    written = write_snapshot(
        table,
        metadata,
        plan.head,
        plan.added,
        plan.layouts,
        plan.summary_properties,
        removed_paths=[f.path for f in plan.removed],
        operation=str(plan.picked.operation),
    )
    new_id = written.snapshot.snapshot_id
    updates = (AddSnapshot(written.snapshot), SetSnapshotRef(branch, _moved(plan.ref, new_id)))
    return updates, plan.requirements


__all__ = [
    "PUBLISHED_WAP_ID",
    "REPLACE_PARTITIONS",
    "SOURCE_SNAPSHOT_ID",
    "STAGED_WAP_ID",
    "CherryPickPlan",
    "ancestors",
    "apply_cherry_pick",
    "cherry_pick",
    "plan_cherry_pick",
]
