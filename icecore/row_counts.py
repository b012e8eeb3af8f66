"""Rows per snapshot as a reader sees them: added, removed (and by what), live after deletes.

DESIGN.md "Numbers on the pages". A snapshot's summary counts records of data files
(spec "Snapshots", ``added-records``, ``total-records``), which are rows *before* deletes: a
DELETE that writes position deletes, deletion vectors or equality deletes changes no data
file and leaves ``total-records`` where it was. What Spark's ``count(*)`` gives at a
snapshot is the live rows: every live data file's rows minus those its applicable deletes
remove (spec "Scan Planning", "Delete Formats"). Where no delete file is live that is the sum
of the data files' record counts (the summary's ``total-records``, else the manifest list's
row counts, no data read); where delete files are live only reading can tell (position
deletes may repeat a position or name a file already removed, equality deletes match
values), so the snapshot is counted by :func:`icecore.health.count_live_rows` (the plan's
count: a data file with only position deletes or deletion vectors is counted from those,
only files under equality deletes are read, row positions and key columns only), once per
(table uuid, snapshot id) per process.
When reading is impossible (a file is missing) or past :data:`READ_BOUND_BYTES`, the count is
None with a note saying why, never a guess.

Per snapshot: ``rows_added`` is the records of the data files it added; ``rows_removed`` is
``live(parent) + rows_added - live(snapshot)``, so ``live(parent) + added - removed =
live(snapshot)`` holds exactly; it is split by what removed the rows (removed data files,
position deletes, deletion vectors, equality deletes) where the commit's summary tells it
apart, else the split is None with a note.

The manifest list, counting and planning modules (pyarrow and numpy) are imported where a
count needs them, so the CLI's ``history`` of a table whose summaries answer loads none of
them (issue 32 item 4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.errors import IcecoreError
from icecore.lru import LRU
from icecore.metadata import Snapshot
from icecore.point_in_time import At
from icecore.progress import report
from icecore.timeline import summary_count

if TYPE_CHECKING:
    from icecore.table_data import TableData

READ_BOUND_BYTES = 16 * 2**30
"""Data file bytes a snapshot's count may read at most: the files it must read (those under
equality deletes, :class:`icecore.scan.count.CountTooLarge`), not the table's size (a file
counted from metadata or its position deletes is not read)."""

_LIVE: LRU[tuple[str, int], tuple[int | None, str]] = LRU(100_000)
"""Live rows (or None and why) by (table uuid, snapshot id): a snapshot never changes."""

REMOVED_KINDS = ("data_files", "position_deletes", "deletion_vectors", "equality_deletes")
"""The keys of ``rows_removed_by``: what removed the rows."""

_DELETE_KIND_KEYS = {
    "position_deletes": "added-position-delete-files",
    "deletion_vectors": "added-dvs",
    "equality_deletes": "added-equality-delete-files",
}
"""Summary keys (Iceberg Java's ``SnapshotSummary``) counting the delete files of each kind."""


@dataclass(frozen=True, slots=True)
class SnapshotRows:
    """The row numbers of one snapshot (None: unknown, ``rows_note`` says why).

    Attributes:
        snapshot_id: the snapshot.
        rows_added: records of the data files the snapshot added.
        rows_removed: rows live at the parent that are not live here (or were added and
            deleted in the same commit): ``live(parent) + rows_added - rows_live``.
        rows_removed_by: ``rows_removed`` split by :data:`REMOVED_KINDS`.
        rows_live: rows a reader sees at the snapshot (Spark's ``count(*)`` there).
        rows_note: why a number is None ("" when every number is known).
        delete_files_added: delete files the snapshot added.
        read: whether a number needed reading data files (a count with deletes applied).
    """

    snapshot_id: int
    rows_added: int | None
    rows_removed: int | None
    rows_removed_by: dict[str, int | None]
    rows_live: int | None
    rows_note: str
    delete_files_added: int | None
    read: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the keys ``icecore history`` prints)."""
        return {
            "rows_added": self.rows_added,
            "rows_removed": self.rows_removed,
            "rows_removed_by": dict(self.rows_removed_by),
            "rows_live": self.rows_live,
            "rows_note": self.rows_note,
            "delete_files_added": self.delete_files_added,
        }


def _summary_live(snapshot: Snapshot) -> int | None:
    """Live rows from the summary alone: ``total-records`` when no delete file is live."""
    deletes = summary_count(snapshot, "total-delete-files")
    records = summary_count(snapshot, "total-records")
    if snapshot.summary is None or snapshot.summary.get("total-delete-files") is None:
        return None
    return records if deletes == 0 else None


def _list_live(table: TableData, snapshot: Snapshot) -> int | None:
    """Live rows from the manifest list's counts when no delete file is live (else None)."""
    from icecore.manifest import ListField, ManifestContent

    columns = table.manifest_list(snapshot)
    data = columns.content == int(ManifestContent.DATA)
    if columns.live_files[~data].sum() > 0:
        return None
    for field in (
        ListField.ADDED_FILES,
        ListField.EXISTING_FILES,
        ListField.ADDED_ROWS,
        ListField.EXISTING_ROWS,
    ):
        values = columns.records.column(field)
        if len(columns) and (values is None or values.null_count):
            return None  # a (v1) writer left counts out: they cannot be summed
    return int(columns.live_rows[data].sum())


def _live_key(table: TableData, snapshot: Snapshot) -> tuple[str, int]:
    return (table.metadata.table_uuid or table.metadata.location, snapshot.snapshot_id)


def read_live_rows(table: TableData, snapshot: Snapshot, *, bound: int | None = None) -> int:
    """Rows a reader sees at ``snapshot``, read with its deletes applied.

    ``bound``: at most that many bytes read, else :class:`~icecore.scan.count.CountTooLarge`
    (None: any size).

    Kept with :func:`live_rows`'s counts, so Overview's count and History's or Time
    travel's of one snapshot read its files once per process.

    Raises:
        IcecoreError: a file cannot be read (nothing is kept: it may come back).
    """
    key = _live_key(table, snapshot)
    kept = _LIVE.get(key)
    if kept is not None and kept[0] is not None:
        return kept[0]
    from icecore.health import count_live_rows

    found = count_live_rows(table, at=At(snapshot_id=snapshot.snapshot_id), read_bound=bound)
    _LIVE.put(key, (found, ""))
    return found


def live_rows(
    table: TableData, snapshot: Snapshot, *, read: bool = True, bound: int = READ_BOUND_BYTES
) -> tuple[int | None, str]:
    """Rows a reader sees at ``snapshot`` (Spark's ``count(*)``), or None and why.

    From metadata when no delete file is live; else, with ``read``, by reading the data
    files with their deletes applied (row positions only), kept per (table uuid, snapshot
    id). Without ``read`` a count that needs reading is None ("needs reading").
    """
    from_summary = _summary_live(snapshot)
    if from_summary is not None:
        return from_summary, ""
    key = _live_key(table, snapshot)
    kept = _LIVE.get(key)
    if kept is not None:
        return kept
    if not read:
        return None, "needs reading the data files with their deletes"
    try:
        from_list = _list_live(table, snapshot)
    except IcecoreError as error:
        return None, f"its manifest list cannot be read: {error}"  # not kept: may be passing
    if from_list is not None:
        return _LIVE.put(key, (from_list, ""))
    from icecore.health import format_bytes
    from icecore.scan.count import CountTooLarge

    try:
        return read_live_rows(table, snapshot, bound=bound), ""
    except CountTooLarge as error:
        return None, (
            f"counting would read {format_bytes(error.needed)} of data files, more "
            f"than the {format_bytes(bound)} a count here may read; run count(*) on Spark"
        )
    except IcecoreError as error:
        return None, f"it cannot be read: {error}"


def _parent_delete_files(snapshot: Snapshot) -> int | None:
    """Delete files live at the parent, from this snapshot's summary (None: not recorded)."""
    if snapshot.summary is None or snapshot.summary.get("total-delete-files") is None:
        return None
    total = summary_count(snapshot, "total-delete-files")
    added = summary_count(snapshot, "added-delete-files")
    gone = summary_count(snapshot, "removed-delete-files")
    if total is None or added is None or gone is None:
        return None
    return total - added + gone


def _only_files_removed(snapshot: Snapshot) -> bool:
    """No delete file live before or added: only removed data files removed rows.

    Then the rows removed are the removed data files' records (``deleted-records``), exact
    from the summary with no count of the parent.
    """
    return (
        _parent_delete_files(snapshot) == 0
        and summary_count(snapshot, "added-delete-files") == 0
        and summary_count(snapshot, "deleted-records") is not None
    )


def _removed_by(snapshot: Snapshot, removed: int | None) -> tuple[dict[str, int | None], str]:
    """``removed`` split by what removed the rows, from the commit's summary."""
    unknown: dict[str, int | None] = dict.fromkeys(REMOVED_KINDS)
    if removed is None:
        return unknown, ""
    zero: dict[str, int | None] = dict.fromkeys(REMOVED_KINDS, 0)
    if removed == 0:
        return zero, ""
    delete_files = summary_count(snapshot, "added-delete-files")
    kinds = [k for k, key in _DELETE_KIND_KEYS.items() if (summary_count(snapshot, key) or 0) > 0]
    if delete_files == 0:
        return {**zero, "data_files": removed}, ""
    if delete_files is None or not kinds:
        return unknown, "the summary does not say which kind of delete files were added"
    if len(kinds) > 1:
        return unknown, "the commit added several kinds of delete files; the split is not known"
    by_files = summary_count(snapshot, "deleted-records") or 0
    if by_files and _parent_delete_files(snapshot) != 0:
        # Removed files' records count rows the parent's deletes had already removed.
        return unknown, "the removed data files had deletes; the split is not known"
    return {**zero, "data_files": by_files, kinds[0]: removed - by_files}, ""


def _needing_reads(table: TableData, chosen: Iterable[Snapshot]) -> list[Snapshot]:
    """The snapshots (of ``chosen`` and their parents) whose live rows need a count."""
    metadata = table.metadata
    found: dict[int, Snapshot] = {}
    for s in chosen:
        parent = (
            None if _only_files_removed(s) else metadata.snapshot_by_id(s.parent_snapshot_id or -1)
        )
        for p in (s, parent):
            if p is not None and _summary_live(p) is None:
                found.setdefault(p.snapshot_id, p)
    return list(found.values())


def _pending(table: TableData, chosen: Iterable[Snapshot]) -> list[Snapshot]:
    """The snapshots of :func:`_needing_reads` not counted yet in this process."""
    return [s for s in _needing_reads(table, chosen) if _live_key(table, s) not in _LIVE]


def reading_needed(table: TableData, snapshots: Iterable[Snapshot]) -> tuple[int, int | None]:
    """Snapshots :func:`snapshot_rows` would count by reading, and the data bytes they hold.

    Counted already (in this process) ones are left out. The bytes are the summaries'
    ``total-files-size`` (None when a summary does not say): what a caller weighs before
    reading, e.g. the History page counts on its own only below a bound.
    """
    pending = _pending(table, snapshots)
    sizes = [summary_count(s, "total-files-size") for s in pending]
    return len(pending), (None if None in sizes else sum(x or 0 for x in sizes))


def snapshot_rows(
    table: TableData,
    snapshots: Iterable[Snapshot] | None = None,
    *,
    read: bool = True,
    bound: int = READ_BOUND_BYTES,
) -> list[SnapshotRows]:
    """The row numbers of ``snapshots`` (default: every snapshot of the table), in order.

    With ``read``, counts that need reading are read (progress: "Counting live rows",
    one per snapshot read); without it they are None with a note. A snapshot's parent is
    counted too (its live rows give ``rows_removed``).
    """
    metadata = table.metadata
    chosen: Sequence[Snapshot] = list(snapshots if snapshots is not None else metadata.snapshots)
    to_read = {p.snapshot_id for p in _pending(table, chosen)} if read else set()
    counted: dict[int, tuple[int | None, str]] = {}

    def live(s: Snapshot) -> tuple[int | None, str]:
        if s.snapshot_id not in counted:
            counted[s.snapshot_id] = live_rows(table, s, read=read, bound=bound)
            if read and s.snapshot_id in to_read:
                report("Counting live rows", len(to_read & counted.keys()), len(to_read))
        return counted[s.snapshot_id]

    found = []
    for s in chosen:
        rows_live, note = live(s)
        added = summary_count(s, "added-records")
        parent = metadata.snapshot_by_id(s.parent_snapshot_id) if s.parent_snapshot_id else None
        removed: int | None = None
        if _only_files_removed(s):
            removed = summary_count(s, "deleted-records")
        elif s.parent_snapshot_id is None:
            removed = added - rows_live if added is not None and rows_live is not None else None
        elif parent is None:
            note = note or "its parent snapshot has expired"
        else:
            parent_live, parent_note = live(parent)
            if parent_live is None:
                note = note or f"the parent's live rows are unknown: {parent_note}"
            elif added is not None and rows_live is not None:
                removed = parent_live + added - rows_live
        if added is None:
            note = note or "the writer recorded no added-records in the summary"
        by, split_note = _removed_by(s, removed)
        found.append(
            SnapshotRows(
                snapshot_id=s.snapshot_id,
                rows_added=added,
                rows_removed=removed,
                rows_removed_by=by,
                rows_live=rows_live,
                rows_note="; ".join(n for n in (note, split_note) if n),
                delete_files_added=summary_count(s, "added-delete-files"),
                read=_summary_live(s) is None,
            )
        )
    return found


@dataclass(frozen=True, slots=True)
class RowsBetween:
    """Rows between two points, as a reader sees them at each.

    Attributes:
        live_from, live_to: rows a reader sees at each point (None: unknown, see ``note``).
        added: records of the data files live at ``to`` that were not at ``from``.
        removed: ``live_from + added - live_to``: rows of ``from`` no longer read, and rows
            of added files deleted since.
        note: why a number is None ("" when all are known).
    """

    live_from: int | None
    live_to: int | None
    added: int
    removed: int | None
    note: str


def rows_between(
    table: TableData, before: Snapshot | None, after: Snapshot, records_added: int
) -> RowsBetween:
    """Rows added and removed between two points, so that ``from + added - removed = to``.

    ``records_added`` is the records of the data files live at ``after`` but not at
    ``before`` (:attr:`icecore.diff.SnapshotDiff.rows_added`).
    """
    live_from, note_from = live_rows(table, before) if before is not None else (0, "")
    live_to, note_to = live_rows(table, after)
    removed = (
        live_from + records_added - live_to
        if live_from is not None and live_to is not None
        else None
    )
    note = "; ".join(
        f"{side}: {note}" for side, note in (("from", note_from), ("to", note_to)) if note
    )
    return RowsBetween(live_from, live_to, records_added, removed, note)


def forget_counts() -> None:
    """Drop the kept live-row counts (tests)."""
    _LIVE.clear()
