"""Guarded ref operations: rollback, set-current, cherry-pick, fast-forward, branches, tags, WAP.

Spec "Snapshot References" and "Snapshot Retention Policy"; semantics as Iceberg Java's
``ManageSnapshots`` (``SetSnapshotOperation``, ``UpdateSnapshotReferencesOperation``,
``CherryPickOperation``) and Spark's procedures (``rollback_to_snapshot``,
``rollback_to_timestamp``, ``set_current_snapshot``, ``cherrypick_snapshot``,
``fast_forward``, ``publish_changes``), with PyIceberg's method names.

Every operation is checked when it is called, against the metadata as the operations before
it in the same :class:`ManageSnapshots` left it, and refused with one sentence
(:class:`~icecore.errors.ValidationError`) before anything is written. All of them commit
together as one metadata version through :func:`icecore.evolution.commit.commit_updates`,
guarded by ``assert-table-uuid`` and one ``assert-ref-snapshot-id`` per ref touched (null for
a ref that must not exist yet). Where Java re-applies a rollback on top of whatever another
writer committed meanwhile (its ``SetSnapshotOperation`` retries on a refreshed base), this
refuses with :class:`~icecore.errors.CommitConflict` instead: a rollback computed before a
concurrent append must never discard that append silently.

Moving ``main`` makes the snapshot current and appends a ``snapshot-log`` entry stamped with
the commit time, as Java's ``TableMetadata.Builder.setRef`` does; a moved branch keeps its
retention settings (Java's ``SnapshotRef.builderFrom``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING

from icecore.errors import ValidationError
from icecore.evolution.base import CommitsOnExit
from icecore.evolution.commit import commit_updates
from icecore.evolution.preview import preview_updates
from icecore.history import parse_timestamp_ms
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder
from icecore.metadata.model import MAIN_BRANCH, Snapshot, SnapshotRef, SnapshotRefType
from icecore.metadata.requirements import (
    AssertRefSnapshotId,
    AssertTableUUID,
    Requirement,
    merge_requirements,
)
from icecore.metadata.updates import MetadataUpdate, RemoveSnapshotRef, SetSnapshotRef
from icecore.refs.cherry_pick import CherryPickPlan, apply_cherry_pick, plan_cherry_pick
from icecore.refs.dry_run import RefDryRun, dry_run

if TYPE_CHECKING:
    from icecore.table_data import TableData

__all__ = ["ManageSnapshots", "RefMove", "STAGED_WAP_ID", "PUBLISHED_WAP_ID"]

STAGED_WAP_ID = "wap.id"
"""Snapshot summary key of a staged write-audit-publish snapshot (Spark's ``spark.wap.id``)."""

PUBLISHED_WAP_ID = "published-wap-id"
"""Summary key Java's cherry-pick sets on the snapshot that published a WAP id."""

MAX_REF_NAME_LENGTH = 255
"""Longest ref name accepted: names arrive from links and forms, so they are bounded."""

Plan = tuple[tuple[MetadataUpdate, ...], tuple[Requirement, ...]]


@dataclasses.dataclass(frozen=True, slots=True)
class RefMove:
    """One ref an operation creates, moves or removes (for dry runs and reports).

    Attributes:
        ref: the branch or tag name.
        kind: ``branch`` or ``tag``.
        from_snapshot_id: where it pointed before (None: it did not exist).
        to_snapshot_id: where it points after (None: it is removed).
        note: what the operation is, in words (``rollback``, ``set-current``, ...).
    """

    ref: str
    kind: str
    from_snapshot_id: int | None
    to_snapshot_id: int | None
    note: str

    def describe(self) -> str:
        """The move as one line of a dry run."""
        if self.from_snapshot_id is None:
            return f"create {self.kind} {self.ref} at snapshot {self.to_snapshot_id} ({self.note})"
        if self.to_snapshot_id is None:
            why = "" if self.note == "drop" else f"; {self.note}"
            return f"drop {self.kind} {self.ref} (was at snapshot {self.from_snapshot_id}{why})"
        return (
            f"{self.kind} {self.ref}: snapshot {self.from_snapshot_id} -> "
            f"{self.to_snapshot_id} ({self.note})"
        )


def _check_name(name: str, what: str) -> str:
    """A ref name a user typed: non-empty, bounded, printable (it is shown and stored)."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"A {what} needs a name.")
    if len(name) > MAX_REF_NAME_LENGTH:
        raise ValidationError(
            f"A {what} name is at most {MAX_REF_NAME_LENGTH} characters; this one has {len(name)}."
        )
    if not name.isprintable():
        raise ValidationError(f"A {what} name cannot hold control characters: {name!r}.")
    return name


def _check_retention(value: int | None, key: str) -> int | None:
    """A retention setting: absent, or a positive integer (Java's ``SnapshotRef`` builder)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValidationError(f"{key} must be a positive whole number, not {value!r}.")
    return value


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


class ManageSnapshots(CommitsOnExit):
    """Ref operations on one version of a table, committed together as one guarded commit.

    A context manager that commits on a clean exit, like the evolution builders; each
    operation returns the builder, so calls chain (``m.create_tag("t").remove_branch("b")``).

    Args:
        table: the version the operations are computed from; the commit is refused with
            :class:`~icecore.errors.CommitConflict` if any ref they touch moved since.

    Attributes:
        result: the committed table, after :meth:`commit`.
        moves: every ref created, moved or removed so far, in order.
    """

    def __init__(self, table: TableData) -> None:
        self.table = table
        self.metadata: TableMetadata = table.metadata
        self.updates: tuple[MetadataUpdate, ...] = ()
        self.moves: list[RefMove] = []
        self.notes: list[str] = []
        self._ref_requirements: dict[str, AssertRefSnapshotId] = {}
        self._other_requirements: tuple[Requirement, ...] = ()
        self._pending_pick: CherryPickPlan | None = None
        self._pending_note = ""
        self.result: TableData | None = None

    # Context manager --------------------------------------------------------------------

    def __enter__(self) -> ManageSnapshots:
        return self

    # Rollback and set-current (Java SetSnapshotOperation) --------------------------------

    def rollback_to_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> ManageSnapshots:
        """Point ``branch`` back at ``snapshot_id``, which must be in the branch's history.

        Raises:
            ValidationError: unknown snapshot or branch, or not an ancestor of its head.
        """
        snapshot = self._snapshot(snapshot_id, f"roll back {branch} to")
        head = self._branch(branch, "roll back")
        if not self._is_ancestor(snapshot.snapshot_id, head.snapshot_id):
            raise ValidationError(
                f"Cannot roll back {branch} of {self.table.identifier} to snapshot {snapshot_id}: "
                f"it is not an ancestor of the branch head {head.snapshot_id}; use "
                "set_current_snapshot to point the branch at any snapshot."
            )
        return self._move_branch(branch, head, snapshot_id, "rollback")

    def rollback_to_timestamp(
        self, timestamp: str | int | dt.datetime, branch: str = MAIN_BRANCH
    ) -> ManageSnapshots:
        """Roll ``branch`` back to its last ancestor committed strictly before ``timestamp``.

        As Java's ``rollbackToTime``: among the branch head and its ancestors, the one with
        the latest ``timestamp-ms`` below the time.

        Raises:
            ValidationError: no ancestor was committed before that time, or no such branch.
        """
        at_ms = parse_timestamp_ms(timestamp)
        head = self._branch(branch, "roll back")
        chosen: Snapshot | None = None
        for snapshot in self.metadata.ancestors_of(head.snapshot_id):
            if snapshot.timestamp_ms < at_ms and (
                chosen is None or snapshot.timestamp_ms > chosen.timestamp_ms
            ):
                chosen = snapshot
        if chosen is None:
            raise ValidationError(
                f"Cannot roll back {branch} of {self.table.identifier} to {_iso(at_ms)}: no "
                "snapshot in its history was committed before that time."
            )
        return self._move_branch(branch, head, chosen.snapshot_id, f"rollback to {_iso(at_ms)}")

    def set_current_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> ManageSnapshots:
        """Point ``branch`` at any snapshot of the table, an ancestor or not.

        Unlike a rollback this may move the branch onto another line of history (Java's
        ``setCurrentSnapshot``); the dry run says so.

        Raises:
            ValidationError: unknown snapshot, or ``branch`` is missing or a tag.
        """
        self._snapshot(snapshot_id, f"set {branch} to")
        head = self._branch_or_none(branch, "set")
        note = "set-current"
        if head is not None and not self._is_ancestor(snapshot_id, head.snapshot_id):
            note = "set-current: not an ancestor of the branch head"
            self.notes.append(
                f"snapshot {snapshot_id} is not in the history of {branch} (head "
                f"{head.snapshot_id}): the branch moves onto another line of history."
            )
        return self._move_branch(branch, head, snapshot_id, note)

    # Cherry-pick and write-audit-publish (Java CherryPickOperation) ----------------------

    def cherrypick_snapshot(self, snapshot_id: int, branch: str = MAIN_BRANCH) -> ManageSnapshots:
        """Apply the changes of ``snapshot_id`` to ``branch`` (Spark's ``cherrypick_snapshot``).

        A snapshot whose parent is the branch head fast-forwards the branch to it.

        Raises:
            ValidationError: unknown snapshot or branch, or a pick Iceberg refuses.
        """
        self._snapshot(snapshot_id, f"cherry-pick onto {branch}")
        self._branch_or_none(branch, "cherry-pick onto")
        self._refuse_after_pending_pick()
        pick = plan_cherry_pick(self.table, self.metadata, snapshot_id, branch)
        if pick.fast_forward:
            self._stage_plan(apply_cherry_pick(self.table, self.metadata, pick))
            return self
        # A pick that writes a new snapshot writes its manifests only at commit, so that
        # preview() writes nothing; until then the dry run names what it will add and remove.
        self._pending_pick = pick
        added_rows = sum(f.record_count for f in pick.added)
        head = pick.head.snapshot_id if pick.head is not None else None
        self._pending_note = (
            f"cherry-pick of snapshot {snapshot_id} onto {branch} (head {head}) writes a new "
            f"snapshot at commit: it adds {len(pick.added)} file(s) with {added_rows} row(s) "
            f"and removes {len(pick.removed)} data file(s), and moves {branch} onto it; the "
            "branch contents below do not include it yet."
        )
        self.notes.append(self._pending_note)
        return self

    def publish_wap(self, wap_id: str, branch: str = MAIN_BRANCH) -> ManageSnapshots:
        """Publish the snapshot staged with ``wap.id`` = ``wap_id`` (Spark's ``publish_changes``).

        Raises:
            ValidationError: no snapshot was staged with that id, several were, or the id
                was published to ``branch`` already.
        """
        if not isinstance(wap_id, str) or not wap_id:
            raise ValidationError("Publishing needs a WAP id (the spark.wap.id of the write).")
        staged = [s for s in self.metadata.snapshots if _summary(s, STAGED_WAP_ID) == wap_id]
        if not staged:
            raise ValidationError(
                f"Cannot publish WAP id {wap_id!r}: no snapshot of {self.table.identifier} was "
                "staged with it (a write with spark.wap.id set); check the id."
            )
        if len(staged) > 1:
            ids = ", ".join(str(s.snapshot_id) for s in staged)
            raise ValidationError(
                f"Cannot publish WAP id {wap_id!r}: several snapshots were staged with it "
                f"({ids}); cherry-pick the one you mean."
            )
        head = self._branch_or_none(branch, "publish to")
        if head is not None:
            for ancestor in self.metadata.ancestors_of(head.snapshot_id):
                if wap_id in (
                    _summary(ancestor, STAGED_WAP_ID),
                    _summary(ancestor, PUBLISHED_WAP_ID),
                ):
                    raise ValidationError(
                        f"Cannot publish WAP id {wap_id!r} to {branch}: it was published "
                        f"already (snapshot {ancestor.snapshot_id} is in the branch's history)."
                    )
        return self.cherrypick_snapshot(staged[0].snapshot_id, branch)

    def _refuse_after_pending_pick(self) -> None:
        """Refuse to stage more after a pick that writes a snapshot (it would build on it)."""
        if self._pending_pick is not None:
            raise ValidationError(
                f"A cherry-pick of snapshot {self._pending_pick.picked.snapshot_id} that writes a "
                "new snapshot must be the last operation of its commit; commit it, then continue."
            )

    # Branch-to-branch (Java UpdateSnapshotReferencesOperation) ---------------------------

    def fast_forward(self, branch: str, to: str) -> ManageSnapshots:
        """Move ``branch`` to the snapshot of ref ``to``, whose history holds ``branch``'s head.

        Raises:
            ValidationError: either ref is missing, ``branch`` is a tag, or ``to`` is not
                ahead of ``branch`` (their histories diverged).
        """
        ref = self._branch(branch, "fast-forward")
        source = self.metadata.refs.get(to)
        if source is None:
            raise ValidationError(
                f"Cannot fast-forward {branch} of {self.table.identifier} to {to}: there is no "
                f"branch or tag named {to}."
            )
        if source.snapshot_id == ref.snapshot_id:
            return self
        if not self._is_ancestor(ref.snapshot_id, source.snapshot_id):
            raise ValidationError(
                f"Cannot fast-forward {branch} of {self.table.identifier} to {to}: the head of "
                f"{branch} ({ref.snapshot_id}) is not in the history of {to} "
                f"({source.snapshot_id}); the two have diverged."
            )
        return self._move_branch(branch, ref, source.snapshot_id, f"fast-forward to {to}")

    # Creating, renaming, replacing and dropping refs -------------------------------------

    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        max_ref_age_ms: int | None = None,
        max_snapshot_age_ms: int | None = None,
        min_snapshots_to_keep: int | None = None,
    ) -> ManageSnapshots:
        """Create branch ``name`` at ``snapshot_id`` (default: the current snapshot).

        The retention settings override the table's ``history.expire.*`` properties for this
        branch (spec "Snapshot Retention Policy").

        Raises:
            ValidationError: the name exists, the snapshot is unknown, or a setting is not
                a positive number.
        """
        ref = SnapshotRef(
            self._target(name, snapshot_id, "branch"),
            SnapshotRefType.BRANCH,
            min_snapshots_to_keep=_check_retention(min_snapshots_to_keep, "min-snapshots-to-keep"),
            max_snapshot_age_ms=_check_retention(max_snapshot_age_ms, "max-snapshot-age-ms"),
            max_ref_age_ms=_check_retention(max_ref_age_ms, "max-ref-age-ms"),
        )
        return self._stage_refs(
            [(name, ref)], [], RefMove(name, "branch", None, ref.snapshot_id, "new")
        )

    def create_tag(
        self, name: str, snapshot_id: int | None = None, max_ref_age_ms: int | None = None
    ) -> ManageSnapshots:
        """Create tag ``name`` at ``snapshot_id`` (default: the current snapshot).

        Raises:
            ValidationError: the name exists, the snapshot is unknown, or ``max_ref_age_ms``
                is not a positive number.
        """
        ref = SnapshotRef(
            self._target(name, snapshot_id, "tag"),
            SnapshotRefType.TAG,
            max_ref_age_ms=_check_retention(max_ref_age_ms, "max-ref-age-ms"),
        )
        return self._stage_refs(
            [(name, ref)], [], RefMove(name, "tag", None, ref.snapshot_id, "new")
        )

    def rename_branch(self, name: str, new_name: str) -> ManageSnapshots:
        """Rename a branch other than ``main``, keeping its snapshot and retention."""
        return self._rename(name, new_name, SnapshotRefType.BRANCH)

    def rename_tag(self, name: str, new_name: str) -> ManageSnapshots:
        """Rename a tag, keeping its snapshot and retention."""
        return self._rename(name, new_name, SnapshotRefType.TAG)

    def replace_branch(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Point an existing branch at any snapshot, keeping its retention (Java's replaceBranch).

        Raises:
            ValidationError: no such branch, it is a tag, or the snapshot is unknown.
        """
        self._snapshot(snapshot_id, f"replace branch {name} with")
        ref = self._existing(name, SnapshotRefType.BRANCH, "replace")
        return self._move_branch(name, ref, snapshot_id, "replace")

    def replace_tag(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Point an existing tag at another snapshot, keeping its retention.

        Raises:
            ValidationError: no such tag, it is a branch, or the snapshot is unknown.
        """
        self._snapshot(snapshot_id, f"replace tag {name} with")
        ref = self._existing(name, SnapshotRefType.TAG, "replace")
        if ref.snapshot_id == snapshot_id:
            return self
        new = dataclasses.replace(ref, snapshot_id=snapshot_id)
        move = RefMove(name, "tag", ref.snapshot_id, snapshot_id, "replace")
        return self._stage_refs([(name, new)], [], move)

    def remove_branch(self, name: str) -> ManageSnapshots:
        """Drop a branch; ``main`` is refused (the table would lose its current snapshot)."""
        if name == MAIN_BRANCH:
            raise ValidationError(
                f"Cannot drop the main branch of {self.table.identifier}: it holds the table's "
                "current state; roll it back or replace it instead."
            )
        ref = self._existing(name, SnapshotRefType.BRANCH, "drop")
        return self._stage_refs([], [name], RefMove(name, "branch", ref.snapshot_id, None, "drop"))

    def remove_tag(self, name: str) -> ManageSnapshots:
        """Drop a tag."""
        ref = self._existing(name, SnapshotRefType.TAG, "drop")
        return self._stage_refs([], [name], RefMove(name, "tag", ref.snapshot_id, None, "drop"))

    # Preview and commit -----------------------------------------------------------------

    def requirements(self) -> tuple[Requirement, ...]:
        """What must still hold at commit: the table uuid and every touched ref's position.

        Requirements are kept per ref (the first recorded for each, computed against the
        table as loaded), not per kind as a :class:`~icecore.evolution.Transaction` keeps
        them: one commit may move several refs, and each must be asserted.
        """
        return (
            AssertTableUUID(self.table.metadata.table_uuid),
            *self._ref_requirements.values(),
            *self._other_requirements,
        )

    def preview(self) -> RefDryRun:
        """The dry run: ref moves, what each moved branch will hold, expiry, warnings.

        It carries the commit's own preview (new metadata, updates, requirements, change
        lines) and writes nothing (:func:`icecore.refs.dry_run.dry_run`).

        Raises:
            ValidationError: the updates break a rule of the spec against this table.
        """
        preview = preview_updates(self.table, self.updates, self.requirements())
        changes = tuple(m.describe() for m in self.moves) + tuple(self.notes)
        preview = dataclasses.replace(preview, changes=changes)
        result = dry_run(self.table, preview.metadata, preview=preview)
        if self._pending_pick is not None:
            result = dataclasses.replace(result, pending=(self._pending_note,))
        return result

    def commit(self) -> TableData:
        """Commit every staged operation as one metadata version; returns the new table.

        Raises:
            ValidationError: an update breaks a rule of the spec; nothing was written.
            CommitConflict: a ref touched here (or the table itself) changed since the table
                was loaded; nothing was written.
            CommitStateUnknown: see :func:`icecore.evolution.commit.commit_updates`.
        """
        if self.result is not None:
            return self.result
        pick, self._pending_pick = self._pending_pick, None
        if pick is not None:
            # Nothing was staged after the pick, so its plan still describes self.metadata.
            self._stage_plan(apply_cherry_pick(self.table, self.metadata, pick))
        if not self.updates:
            self.result = self.table
            return self.table
        self.result = commit_updates(self.table, self.updates, self.requirements())
        return self.result

    # Helpers ----------------------------------------------------------------------------

    def _snapshot(self, snapshot_id: int, doing: str) -> Snapshot:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise ValidationError(f"A snapshot id is a whole number, not {snapshot_id!r}.")
        snapshot = self.metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise ValidationError(
                f"Cannot {doing} snapshot {snapshot_id}: {self.table.identifier} has no such "
                "snapshot (it may have been expired)."
            )
        return snapshot

    def _branch(self, name: str, doing: str) -> SnapshotRef:
        """The branch ``name``.

        Raises:
            ValidationError: there is no such ref, or it is a tag.
        """
        ref = self._branch_or_none(name, doing)
        if ref is None:
            raise ValidationError(
                f"Cannot {doing} {name}: {self.table.identifier} has no branch named {name}."
            )
        return ref

    def _branch_or_none(self, name: str, doing: str) -> SnapshotRef | None:
        """The branch ``name``, or None for a ``main`` an empty table does not have yet."""
        ref = self.metadata.refs.get(name)
        if ref is None:
            if name == MAIN_BRANCH and self.metadata.current_snapshot_id is None:
                return None
            raise ValidationError(
                f"Cannot {doing} {name}: {self.table.identifier} has no branch named {name}."
            )
        if not ref.is_branch:
            raise ValidationError(
                f"Cannot {doing} {name}: it is a tag, not a branch (a tag only moves with "
                "replace_tag)."
            )
        return ref

    def _existing(self, name: str, kind: SnapshotRefType, doing: str) -> SnapshotRef:
        ref = self.metadata.refs.get(name)
        if ref is None:
            raise ValidationError(
                f"Cannot {doing} {kind.value} {name}: {self.table.identifier} has no "
                f"{kind.value} named {name}."
            )
        if ref.type is not kind:
            raise ValidationError(
                f"Cannot {doing} {kind.value} {name}: it is a {ref.type.value}, not a {kind.value}."
            )
        return ref

    def _target(self, name: str, snapshot_id: int | None, kind: str) -> int:
        """The snapshot a new ref points at, after checking the name is free."""
        _check_name(name, kind)
        if name in self.metadata.refs:
            existing = self.metadata.refs[name]
            raise ValidationError(
                f"Cannot create {kind} {name}: {self.table.identifier} has a "
                f"{existing.type.value} of that name already (at snapshot "
                f"{existing.snapshot_id}); pick another name or replace it."
            )
        if snapshot_id is None:
            current = self.metadata.current_snapshot_id
            if current is None:
                raise ValidationError(
                    f"Cannot create {kind} {name}: {self.table.identifier} has no snapshot yet; "
                    "write to it first."
                )
            return current
        return self._snapshot(snapshot_id, f"create {kind} {name} at").snapshot_id

    def _rename(self, name: str, new_name: str, kind: SnapshotRefType) -> ManageSnapshots:
        if kind is SnapshotRefType.BRANCH and name == MAIN_BRANCH:
            raise ValidationError(
                f"Cannot rename the main branch of {self.table.identifier}: Iceberg keeps the "
                "table's current state on main; create a branch at its snapshot instead."
            )
        ref = self._existing(name, kind, "rename")
        _check_name(new_name, kind.value)
        existing = self.metadata.refs.get(new_name)
        if existing is not None:
            raise ValidationError(
                f"Cannot rename {kind.value} {name} to {new_name}: a {existing.type.value} of "
                f"that name exists already in {self.table.identifier}."
            )
        moves = (
            RefMove(name, kind.value, ref.snapshot_id, None, f"renamed to {new_name}"),
            RefMove(new_name, kind.value, None, ref.snapshot_id, f"renamed from {name}"),
        )
        # Java removes the old name before setting the new one; so do the updates.
        self._stage_refs([(new_name, ref)], [name], *moves)
        return self

    def _move_branch(
        self, branch: str, ref: SnapshotRef | None, snapshot_id: int, note: str
    ) -> ManageSnapshots:
        """Move (or, for an empty table's ``main``, create) a branch, keeping its retention."""
        if ref is not None and ref.snapshot_id == snapshot_id:
            return self
        new = (
            dataclasses.replace(ref, snapshot_id=snapshot_id)
            if ref is not None
            else SnapshotRef(snapshot_id, SnapshotRefType.BRANCH)
        )
        move = RefMove(branch, "branch", ref.snapshot_id if ref else None, snapshot_id, note)
        return self._stage_refs([(branch, new)], [], move)

    def _stage_refs(
        self,
        sets: list[tuple[str, SnapshotRef]],
        removals: list[str],
        *moves: RefMove,
    ) -> ManageSnapshots:
        updates: list[MetadataUpdate] = [RemoveSnapshotRef(name) for name in removals]
        updates += [SetSnapshotRef(name, ref) for name, ref in sets]
        requirements: list[Requirement] = [AssertTableUUID(self.metadata.table_uuid)]
        for name in [*removals, *(n for n, _ in sets)]:
            current = self.metadata.refs.get(name)
            requirements.append(
                AssertRefSnapshotId(name, current.snapshot_id if current is not None else None)
            )
        self._stage_plan((tuple(updates), tuple(requirements)))
        self.moves.extend(moves)
        return self

    def _stage_plan(self, plan: Plan) -> None:
        """Apply a plan to the staged metadata and keep it for the commit.

        A ref's requirement is the first one recorded for it: it describes the table as
        loaded, which is what the catalog's version is compared with at commit.

        Raises:
            ValidationError: the updates break a rule of the spec; nothing is staged.
        """
        if self.result is not None:
            raise ValidationError("These ref operations were committed; start a new one.")
        self._refuse_after_pending_pick()
        updates, requirements = plan
        builder = MetadataBuilder(self.metadata).apply_all(updates)
        if not builder.changes:
            return
        self.metadata = builder.build(previous_location=None, now_ms=self.metadata.last_updated_ms)
        self.updates += updates
        for requirement in requirements:
            if isinstance(requirement, AssertRefSnapshotId):
                self._ref_requirements.setdefault(requirement.ref, requirement)
            elif not isinstance(requirement, AssertTableUUID):
                # e.g. what a cherry-pick that writes a snapshot depends on besides refs.
                self._other_requirements = merge_requirements(
                    self._other_requirements, (requirement,)
                )

    def _is_ancestor(self, ancestor_id: int, of_id: int) -> bool:
        """Whether ``ancestor_id`` is ``of_id`` or in its (unexpired) history."""
        return any(s.snapshot_id == ancestor_id for s in self.metadata.ancestors_of(of_id))


def _summary(snapshot: Snapshot, key: str) -> str | None:
    return snapshot.summary.get(key) if snapshot.summary is not None else None
