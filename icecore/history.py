"""History and time travel: which snapshot a user means, and how the table got there.

Spec: "Snapshots" (parent links), "Snapshot References" (branches and tags) and the
``snapshot-log`` of "Table Metadata Fields", which records when each snapshot became
current on ``main``. Time travel by timestamp follows Iceberg Java's
``SnapshotUtil.snapshotIdAsOfTime``: the last snapshot-log entry at or before the time.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from icecore.errors import NotFound, ValidationError
from icecore.metadata import Snapshot, TableMetadata

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One row of the table's history (Spark's ``history`` metadata table).

    Attributes:
        made_current_at_ms: when the snapshot became current (snapshot-log time).
        snapshot_id: the snapshot that became current.
        parent_id: its parent, or None (no parent, or the snapshot itself was expired).
        is_current_ancestor: whether it is in the current snapshot's lineage (not rolled back).
    """

    made_current_at_ms: int
    snapshot_id: int
    parent_id: int | None
    is_current_ancestor: bool


def current_ancestor_ids(metadata: TableMetadata) -> frozenset[int]:
    """Ids of the current snapshot and its (unexpired) ancestors."""
    if metadata.current_snapshot_id is None:
        return frozenset()
    return frozenset(s.snapshot_id for s in metadata.ancestors_of(metadata.current_snapshot_id))


def history(metadata: TableMetadata) -> list[HistoryEntry]:
    """The snapshot-log as history rows, oldest first, as Spark's ``history`` table has them."""
    ancestors = current_ancestor_ids(metadata)
    rows = []
    for entry in metadata.snapshot_log:
        snapshot = metadata.snapshot_by_id(entry.snapshot_id)
        rows.append(
            HistoryEntry(
                made_current_at_ms=entry.timestamp_ms,
                snapshot_id=entry.snapshot_id,
                parent_id=snapshot.parent_snapshot_id if snapshot is not None else None,
                is_current_ancestor=entry.snapshot_id in ancestors,
            )
        )
    return rows


def parse_timestamp_ms(value: str | int | dt.datetime) -> int:
    """Milliseconds from the epoch for an ISO-8601 string, a datetime, or ms already.

    A time without an offset is read as UTC (Spark's session time zone in Icecore's pipeline).
    """
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError as e:
            raise ValidationError(
                f"{text!r} is not an ISO-8601 time; write it like 2024-08-09T10:00:00Z."
            ) from e
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // dt.timedelta(milliseconds=1)


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


def snapshot_id_as_of(metadata: TableMetadata, at_ms: int) -> int | None:
    """Java's ``SnapshotUtil.nullableSnapshotIdAsOfTime``: the last log entry at or before.

    The id may name a snapshot since expired; None when the log has no entry that early.
    """
    found = None
    for entry in metadata.snapshot_log:
        if entry.timestamp_ms <= at_ms:
            found = entry.snapshot_id
    return found


def snapshot_as_of(metadata: TableMetadata, when: str | int | dt.datetime) -> Snapshot:
    """The snapshot that was current on ``main`` at ``when`` (snapshot-log semantics)."""
    at_ms = parse_timestamp_ms(when)
    chosen = snapshot_id_as_of(metadata, at_ms)
    if chosen is None:
        first = metadata.snapshot_log[0].timestamp_ms if metadata.snapshot_log else None
        after = f"; its first snapshot is from {_iso(first)}" if first is not None else ""
        raise NotFound(f"The table has no snapshot as of {_iso(at_ms)}{after}.")
    snapshot = metadata.snapshot_by_id(chosen)
    if snapshot is None:
        raise NotFound(
            f"Snapshot {chosen}, current as of {_iso(at_ms)}, has been expired from the table."
        )
    return snapshot
