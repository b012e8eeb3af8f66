"""What a ref operation would do to a table, told before it is committed.

A dry run compares the table as loaded with the metadata the operation would commit, and
nothing else: it writes nothing and asks the catalog nothing. It says

* which refs move, appear, disappear, are renamed or change their retention (spec
  "Snapshot References", "Snapshot Retention Policy");
* for each moved branch, what it will hold afterwards, as Icecore's snapshot diff (files,
  rows, schema, partition specs) between its old head and its new one, and how the two heads
  are related: the new head an ancestor of the old (a rollback), a descendant (a
  fast-forward), or neither (the branch leaves its history: said plainly);
* which snapshots no ref reaches any more, and which of them the next ``expire_snapshots``
  would remove under the table's retention (:func:`icecore.health.snapshots_to_expire`,
  judged on both versions so that only what the operation changes is shown);
* a warning when a branch rewinds past a schema change or a partition spec change.

Rows are record counts of the live data files (as the manifest lists count them), before
delete files are applied: exact without reading a data file, and the count Spark's
``count(*)`` gives whenever no delete file is live. Delete records are given beside them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.diff import SnapshotDiff, diff_snapshots
from icecore.errors import IcecoreError
from icecore.evolution.preview import Preview, describe_spec
from icecore.health import snapshots_to_expire
from icecore.manifest import DataFileContent, ManifestContent
from icecore.metadata import MAIN_BRANCH, Snapshot, SnapshotRef, TableMetadata
from icecore.metadata.requirements import Requirement

if TYPE_CHECKING:
    from icecore.table_data import TableData


@dataclass(frozen=True, slots=True)
class Retention:
    """A ref's own retention ("Snapshot Retention Policy"); None: the table property applies."""

    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    @classmethod
    def of(cls, ref: SnapshotRef) -> Retention:
        """The retention a ref carries."""
        return cls(ref.min_snapshots_to_keep, ref.max_snapshot_age_ms, ref.max_ref_age_ms)

    def to_dict(self) -> dict[str, int | None]:
        """JSON-ready, with the spec's key names."""
        return {
            "min-snapshots-to-keep": self.min_snapshots_to_keep,
            "max-snapshot-age-ms": self.max_snapshot_age_ms,
            "max-ref-age-ms": self.max_ref_age_ms,
        }

    def text(self, kind: str = "branch") -> str:
        """One line: each setting, or that the table's default applies (a tag has only an age)."""
        parts = [
            f"{key}={value}" if value is not None else f"{key}=table default"
            for key, value in self.to_dict().items()
            if kind == "branch" or key == "max-ref-age-ms"
        ]
        return ", ".join(parts)


class Change:
    """What happens to a ref (plain strings, stable in JSON)."""

    CREATED = "created"
    REMOVED = "removed"
    MOVED = "moved"
    RENAMED = "renamed"
    RETENTION = "retention"


class Relation:
    """How a branch's new head relates to its old one."""

    SAME = "same"
    REWIND = "rewind"  # the new head is an ancestor of the old one
    FORWARD = "forward"  # the old head is an ancestor of the new one
    UNRELATED = "unrelated"  # neither: the branch leaves its history


@dataclass(frozen=True, slots=True)
class RefChange:
    """One ref that the operation creates, removes, moves, renames or re-tunes.

    Attributes:
        name: the ref's name afterwards (its old name for a removal).
        kind: ``branch`` or ``tag``.
        change: one of :class:`Change`'s values.
        from_snapshot_id: where it pointed before (None when created).
        to_snapshot_id: where it points afterwards (None when removed).
        renamed_from: the old name of a renamed ref.
        retention_before, retention_after: its retention (None where it does not exist).
    """

    name: str
    kind: str
    change: str
    from_snapshot_id: int | None
    to_snapshot_id: int | None
    renamed_from: str | None = None
    retention_before: Retention | None = None
    retention_after: Retention | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "name": self.name,
            "kind": self.kind,
            "change": self.change,
            "from_snapshot_id": self.from_snapshot_id,
            "to_snapshot_id": self.to_snapshot_id,
            "renamed_from": self.renamed_from,
            "retention_before": self.retention_before.to_dict() if self.retention_before else None,
            "retention_after": self.retention_after.to_dict() if self.retention_after else None,
        }

    def text(self) -> str:
        """One line for people."""
        what = f"{self.kind} {self.name}"
        if self.change == Change.CREATED:
            line = f"create {what} at snapshot {self.to_snapshot_id}"
        elif self.change == Change.REMOVED:
            line = f"drop {what} (at snapshot {self.from_snapshot_id})"
        elif self.change == Change.RENAMED:
            line = f"rename {self.kind} {self.renamed_from} to {self.name}"
            if self.from_snapshot_id != self.to_snapshot_id:
                line += f", moving it {self.from_snapshot_id} -> {self.to_snapshot_id}"
            else:
                line += f" (at snapshot {self.to_snapshot_id})"
        elif self.change == Change.MOVED:
            line = f"move {what}: snapshot {self.from_snapshot_id} -> {self.to_snapshot_id}"
        else:
            line = f"{what} stays at snapshot {self.to_snapshot_id}"
        if self.retention_after is not None and self.retention_after != self.retention_before:
            line += f"; retention: {self.retention_after.text(self.kind)}"
        return line


@dataclass(frozen=True, slots=True)
class BranchContents:
    """What a moved branch holds afterwards, against what it holds now.

    Attributes:
        name: the branch.
        from_snapshot_id, to_snapshot_id: its old and new head.
        relation: one of :class:`Relation`'s values.
        common_ancestor_id: the newest snapshot in both heads' histories (None if none).
        rows_before, rows_after: record counts of the live data files at each head.
        delete_records_after: records of the live delete files at the new head (rows they
            hide are not subtracted from ``rows_after``).
        diff: Icecore's diff from the old head to the new one; None when the new head's
            files cannot be read (``diff_error`` says why).
        diff_error: why there is no diff.
    """

    name: str
    from_snapshot_id: int
    to_snapshot_id: int
    relation: str
    common_ancestor_id: int | None
    rows_before: int | None
    rows_after: int | None
    delete_records_after: int | None
    diff: SnapshotDiff | None
    diff_error: str = ""

    @property
    def leaves_history(self) -> bool:
        """Whether the new head is neither an ancestor nor a descendant of the old one."""
        return self.relation == Relation.UNRELATED

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the diff's file lists as paths)."""
        return {
            "branch": self.name,
            "from_snapshot_id": self.from_snapshot_id,
            "to_snapshot_id": self.to_snapshot_id,
            "relation": self.relation,
            "new_head_is_ancestor": self.relation in (Relation.SAME, Relation.REWIND),
            "common_ancestor_id": self.common_ancestor_id,
            "rows_before": self.rows_before,
            "rows_after": self.rows_after,
            "delete_records_after": self.delete_records_after,
            "diff": self.diff.to_dict() if self.diff is not None else None,
            "diff_error": self.diff_error or None,
        }

    def lines(self) -> list[str]:
        """What the branch will contain, one fact a line."""
        out = [f"{self.name}: snapshot {self.from_snapshot_id} -> {self.to_snapshot_id}"]
        if self.relation == Relation.REWIND:
            out.append(f"  rolls back to an ancestor of its head (in {self.name}'s history)")
        elif self.relation == Relation.FORWARD:
            out.append(f"  moves forward: its head stays in {self.name}'s history")
        elif self.relation == Relation.UNRELATED:
            out.append(f"  {self.name} will point at a snapshot that is not in its history")
        if self.rows_before is not None and self.rows_after is not None:
            out.append(
                f"  rows in data files: {self.rows_before:,} -> {self.rows_after:,} "
                "(record counts, before delete files)"
            )
        if self.delete_records_after:
            out.append(f"  delete records live afterwards: {self.delete_records_after:,}")
        d = self.diff
        if d is None:
            if self.diff_error:
                out.append(f"  no file diff: {self.diff_error}")
            return out
        out.append(
            f"  data files: +{len(d.data_files_added):,} ({d.rows_added:,} rows) "
            f"-{len(d.data_files_removed):,} ({d.rows_removed:,} rows)"
        )
        if d.delete_files_added or d.delete_files_removed:
            out.append(
                f"  delete files: +{len(d.delete_files_added):,} -{len(d.delete_files_removed):,}"
            )
        for c in d.schema_changes:
            detail = f"{c.before} -> {c.after}" if c.before and c.after else c.after or c.before
            out.append(f"  schema: {c.kind} {c.name} (id {c.field_id}): {detail}")
        return out


@dataclass(frozen=True, slots=True)
class RefDryRun:
    """Everything a ref operation would change, before it is committed.

    Attributes:
        table: the table's name.
        moves: the refs created, removed, moved, renamed or re-tuned, by name.
        branches: for each moved branch (``main`` first), what it holds afterwards.
        unreachable: snapshots some ref reaches now and none reaches afterwards.
        would_expire: snapshots the next ``expire_snapshots`` would remove afterwards
            but not now (judged at ``now_ms`` with the table's retention).
        kept_from_expiry: snapshots it would remove now but not afterwards (a new tag or
            branch protects them).
        warnings: what deserves a second look, one sentence each.
        now_ms: when expiry was judged.
        metadata: the metadata the operation would commit.
        preview: the commit's own preview (updates, requirements, its change lines), when
            the dry run was made for a :class:`~icecore.refs.manage.ManageSnapshots`.
        pending: what the commit writes beyond the metadata compared here, one sentence
            each: a cherry-pick that is not a fast-forward writes its snapshot (and moves
            the branch onto it) only at commit, so no ref move can be shown before it.
    """

    table: str
    moves: tuple[RefChange, ...]
    branches: tuple[BranchContents, ...]
    unreachable: tuple[int, ...]
    would_expire: tuple[int, ...]
    kept_from_expiry: tuple[int, ...]
    warnings: tuple[str, ...]
    now_ms: int
    metadata: TableMetadata
    preview: Preview | None = None
    pending: tuple[str, ...] = ()

    @property
    def is_noop(self) -> bool:
        """Whether the commit would change nothing (no ref moves, no update, nothing pending)."""
        if self.pending:
            return False
        if self.preview is not None:
            return self.preview.is_noop
        return not self.moves

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """What must still hold at commit (from the commit's preview; none without it)."""
        return self.preview.requirements if self.preview is not None else ()

    @property
    def changes(self) -> tuple[str, ...]:
        """The operation's own lines (its moves and notes), else the ref lines."""
        if self.preview is not None:
            return self.preview.changes
        return tuple(m.text() for m in self.moves)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, for the CLI's ``--dry-run`` (with the commit's preview when known)."""
        base = self.preview.to_dict() if self.preview is not None else {"dry_run": True}
        return {
            **base,
            "table": self.table,
            "refs": [m.to_dict() for m in self.moves],
            "branches": [b.to_dict() for b in self.branches],
            "unreachable_snapshot_ids": list(self.unreachable),
            "would_expire_snapshot_ids": list(self.would_expire),
            "kept_from_expiry_snapshot_ids": list(self.kept_from_expiry),
            "warnings": list(self.warnings),
            "pending": list(self.pending),
            "expiry_judged_at": _iso(self.now_ms),
        }

    def lines(self) -> list[str]:
        """The dry run as plain text lines (for ``st.code``/``st.text``, never Markdown)."""
        if self.is_noop:
            return ["Nothing would change: every ref stays where it is."]
        out = ["Refs:"]
        out.extend(f"  {m.text()}" for m in self.moves)
        if not self.moves:
            out.append("  none move before the commit writes its snapshot (below)")
        out.extend(f"At commit: {p}" for p in self.pending)
        for b in self.branches:
            out.extend(b.lines())
        if self.unreachable:
            out.append(
                "No ref reaches these snapshots afterwards: "
                + ", ".join(str(i) for i in self.unreachable)
            )
        if self.would_expire:
            out.append(
                "The next expire_snapshots would remove (under the table's retention): "
                + ", ".join(str(i) for i in self.would_expire)
            )
        else:
            out.append(
                "The next expire_snapshots would remove no more snapshots than it would now."
            )
        if self.kept_from_expiry:
            out.append(
                "Kept from expiry by this change: "
                + ", ".join(str(i) for i in self.kept_from_expiry)
            )
        out.extend(f"Warning: {w}" for w in self.warnings)
        return out

    def text(self) -> str:
        """:meth:`lines` joined."""
        return "\n".join(self.lines())


# Building the dry run ----------------------------------------------------------------------


def _kind(ref: SnapshotRef) -> str:
    return "branch" if ref.is_branch else "tag"


def _ref_moves(before: TableMetadata, after: TableMetadata) -> list[RefChange]:
    """Refs that differ, with a removal + creation at one snapshot paired as a rename."""
    old, new = before.refs, after.refs
    removed = [n for n in old if n not in new]
    created = [n for n in new if n not in old]
    renamed: dict[str, str] = {}  # new name -> old name
    for name in created:
        ref = new[name]
        match = next(
            (
                o
                for o in removed
                if o not in renamed.values()
                and old[o].type is ref.type
                and old[o].snapshot_id == ref.snapshot_id
            ),
            None,
        )
        if match is not None:
            renamed[name] = match
    moves: list[RefChange] = []
    for name in sorted(set(old) | set(new), key=lambda n: (n != MAIN_BRANCH, n)):
        if name in renamed.values():
            continue
        a, b = old.get(name), new.get(name)
        if b is not None and name in renamed:
            source = old[renamed[name]]
            moves.append(
                RefChange(
                    name,
                    _kind(b),
                    Change.RENAMED,
                    source.snapshot_id,
                    b.snapshot_id,
                    renamed_from=renamed[name],
                    retention_before=Retention.of(source),
                    retention_after=Retention.of(b),
                )
            )
        elif a is None and b is not None:
            moves.append(
                RefChange(
                    name,
                    _kind(b),
                    Change.CREATED,
                    None,
                    b.snapshot_id,
                    retention_after=Retention.of(b),
                )
            )
        elif a is not None and b is None:
            moves.append(
                RefChange(
                    name,
                    _kind(a),
                    Change.REMOVED,
                    a.snapshot_id,
                    None,
                    retention_before=Retention.of(a),
                )
            )
        elif a is not None and b is not None and (a != b or a.type is not b.type):
            change = Change.MOVED if a.snapshot_id != b.snapshot_id else Change.RETENTION
            moves.append(
                RefChange(
                    name,
                    _kind(b),
                    change,
                    a.snapshot_id,
                    b.snapshot_id,
                    retention_before=Retention.of(a),
                    retention_after=Retention.of(b),
                )
            )
    return moves


def _relation(
    before: TableMetadata, after: TableMetadata, old_head: int, new_head: int
) -> tuple[str, int | None]:
    """How ``new_head`` relates to ``old_head``, and their newest common ancestor."""
    if old_head == new_head:
        return Relation.SAME, old_head
    old_line = [s.snapshot_id for s in before.ancestors_of(old_head)]
    new_line = [s.snapshot_id for s in after.ancestors_of(new_head)]
    if new_head in old_line:
        return Relation.REWIND, new_head
    if old_head in new_line:
        return Relation.FORWARD, old_head
    old_set = set(old_line)
    common = next((i for i in new_line if i in old_set), None)
    return Relation.UNRELATED, common


def _rows(table: TableData, snapshot: Snapshot) -> tuple[int, int]:
    """Record counts of the live data files and live delete files of a snapshot.

    The manifest list's row counts suffice when the writer filled them in (spec "Manifest
    Lists"); a manifest whose counts are missing (optional in v1) is read instead.
    """
    rows = deletes = 0
    unknown = []
    for m in table.manifests(snapshot):
        if m.added_rows_count is None or m.existing_rows_count is None:
            unknown.append(m)
            continue
        live = m.added_rows_count + m.existing_rows_count
        if m.content is ManifestContent.DATA:
            rows += live
        else:
            deletes += live
    for entry in table.live_entries(snapshot, unknown) if unknown else []:
        if entry.data_file.content is DataFileContent.DATA:
            rows += entry.data_file.record_count
        else:
            deletes += entry.data_file.record_count
    return rows, deletes


def _branch_contents(
    table: TableData, after_table: TableData, name: str, old_head: int, new_head: int
) -> BranchContents:
    before, after = table.metadata, after_table.metadata
    relation, common = _relation(before, after, old_head, new_head)
    old_snapshot = before.snapshot_by_id(old_head)
    new_snapshot = after.snapshot_by_id(new_head)
    rows_before = rows_after = deletes_after = None
    diff: SnapshotDiff | None = None
    error = ""
    try:
        if old_snapshot is not None:
            rows_before, _ = _rows(table, old_snapshot)
        if new_snapshot is not None:
            rows_after, deletes_after = _rows(after_table, new_snapshot)
            diff = diff_snapshots(after_table, old_snapshot, new_snapshot)
    except IcecoreError as e:
        error = str(e)
    return BranchContents(
        name=name,
        from_snapshot_id=old_head,
        to_snapshot_id=new_head,
        relation=relation,
        common_ancestor_id=common,
        rows_before=rows_before,
        rows_after=rows_after,
        delete_records_after=deletes_after,
        diff=diff,
        diff_error=error,
    )


def _reachable(metadata: TableMetadata) -> set[int]:
    """Snapshots some ref reaches: every ancestor of a branch head, and each tagged snapshot."""
    found: set[int] = set()
    for ref in metadata.refs.values():
        if ref.is_branch:
            found.update(s.snapshot_id for s in metadata.ancestors_of(ref.snapshot_id))
        elif metadata.snapshot_by_id(ref.snapshot_id) is not None:
            found.add(ref.snapshot_id)
    return found


def _newest_spec(diff: SnapshotDiff, before: bool) -> int | None:
    specs = diff.specs_before if before else diff.specs_after
    return max(specs) if specs else None


def _warnings(
    before: TableMetadata,
    after: TableMetadata,
    branches: list[BranchContents],
    moves: list[RefChange],
) -> list[str]:
    """Rewinds past schema or spec changes, histories left, and the ``main`` ref dropped."""
    out: list[str] = []
    schema = after.current_schema()
    for b in branches:
        old_snapshot = before.snapshot_by_id(b.from_snapshot_id)
        new_snapshot = after.snapshot_by_id(b.to_snapshot_id)
        if b.leaves_history:
            common = (
                f"; their last common snapshot is {b.common_ancestor_id}"
                if b.common_ancestor_id is not None
                else "; they share no ancestor"
            )
            out.append(
                f"{b.name} will point at a snapshot that is not in its history: "
                f"{b.to_snapshot_id} is neither an ancestor nor a descendant of "
                f"{b.from_snapshot_id}{common}."
            )
        if b.relation != Relation.REWIND or old_snapshot is None or new_snapshot is None:
            continue
        if (
            old_snapshot.schema_id is not None
            and new_snapshot.schema_id is not None
            and old_snapshot.schema_id != new_snapshot.schema_id
        ):
            changes = b.diff.schema_changes if b.diff is not None else ()
            named = "; ".join(
                f"{c.kind} {c.name}"
                + (f" ({c.before} -> {c.after})" if c.before and c.after else "")
                for c in changes
            )
            out.append(
                f"{b.name} rewinds past a schema change: its head was written with schema "
                f"{old_snapshot.schema_id}, snapshot {b.to_snapshot_id} with schema "
                f"{new_snapshot.schema_id}"
                + (f" (from the head's schema to that one: {named})" if named else "")
                + f"; the table keeps its current schema {after.current_schema_id}."
            )
        if b.diff is None:
            continue
        spec_old, spec_new = _newest_spec(b.diff, True), _newest_spec(b.diff, False)
        if spec_old is not None and spec_new is not None and spec_old != spec_new:
            old_spec, new_spec = after.spec_by_id(spec_old), after.spec_by_id(spec_new)
            old_text = describe_spec(old_spec, schema) if old_spec is not None else "unknown"
            new_text = describe_spec(new_spec, schema) if new_spec is not None else "unknown"
            out.append(
                f"{b.name} rewinds past a partition spec change: its newest files use spec "
                f"{spec_old} ({old_text}), snapshot {b.to_snapshot_id}'s newest use spec "
                f"{spec_new} ({new_text}); new writes keep using the default spec "
                f"{after.default_spec_id}."
            )
    for m in moves:
        if m.change == Change.REMOVED and m.name == MAIN_BRANCH:
            out.append("main would be dropped: the table would have no current snapshot.")
    return out


def dry_run(
    table: TableData,
    after: TableMetadata,
    *,
    now_ms: int | None = None,
    preview: Preview | None = None,
) -> RefDryRun:
    """What committing ``after`` over ``table`` would do to its refs; writes nothing.

    Args:
        table: the table as loaded (the state the commit would replace).
        after: the metadata the operation would commit (it may add a snapshot, as a
            cherry-pick does; its manifest list is read if it exists).
        now_ms: when to judge snapshot expiry (default: now).
        preview: the commit's preview, kept with the dry run (its JSON joins the dry run's).
    """
    before = table.metadata
    when = now_ms if now_ms is not None else int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    after_table = dataclasses.replace(table, metadata=after)
    moves = _ref_moves(before, after)
    branches: list[BranchContents] = []
    for m in moves:
        if m.kind != "branch" or m.from_snapshot_id is None or m.to_snapshot_id is None:
            continue
        if m.from_snapshot_id == m.to_snapshot_id:
            continue
        branches.append(
            _branch_contents(table, after_table, m.name, m.from_snapshot_id, m.to_snapshot_id)
        )
    unreachable = _reachable(before) - _reachable(after)
    expire_before = set(snapshots_to_expire(before, when))
    expire_after = set(snapshots_to_expire(after, when))
    order = list(dict.fromkeys(s.snapshot_id for s in (*before.snapshots, *after.snapshots)))
    return RefDryRun(
        table=str(table.identifier),
        moves=tuple(moves),
        branches=tuple(branches),
        unreachable=tuple(i for i in order if i in unreachable),
        would_expire=tuple(i for i in order if i in expire_after - expire_before),
        kept_from_expiry=tuple(i for i in order if i in expire_before - expire_after),
        warnings=tuple(_warnings(before, after, branches, moves)),
        now_ms=when,
        metadata=after,
        preview=preview,
    )


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


__all__ = [
    "BranchContents",
    "Change",
    "RefDryRun",
    "RefChange",
    "Relation",
    "Retention",
    "dry_run",
]
