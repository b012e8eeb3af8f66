"""The table's history as lanes: which branch each snapshot was written on, and where tags sit.

Spec "Snapshots" (parent links, summaries) and "Snapshot References". A snapshot belongs to
the lane of the first branch, ``main`` first, whose ancestry holds it; snapshots that no
branch reaches (rolled back, or the tip of a dropped branch) get the ``unreferenced`` lane.
A tag is a lane of its own with one marker, at the time of the snapshot it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from icecore.metadata import MAIN_BRANCH, Snapshot, TableMetadata

UNREFERENCED = "(unreferenced)"
"""The lane of snapshots no branch reaches."""


class LaneKind(StrEnum):
    """What a lane stands for."""

    BRANCH = "branch"
    TAG = "tag"
    UNREFERENCED = "unreferenced"


@dataclass(frozen=True, slots=True)
class Lane:
    """One horizontal lane of the timeline.

    Attributes:
        name: the branch or tag name (:data:`UNREFERENCED` for the orphan lane).
        kind: branch, tag or unreferenced.
        head: the snapshot the ref points at (None for the orphan lane).
    """

    name: str
    kind: LaneKind
    head: int | None


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """One snapshot (or a tag's marker) on a lane, with the numbers its summary gives.

    Attributes:
        snapshot_id, parent_id, timestamp_ms, sequence_number, schema_id: the snapshot's.
        lane: the lane it is drawn on.
        operation: the summary's operation ("" when there is none).
        refs: the branches and tags pointing at it.
        is_current: whether it is the table's current snapshot.
        added_data_files, removed_data_files, added_delete_files, removed_delete_files,
        added_records, removed_records: the summary's ``added-*``/``deleted-*`` counts
            (None when the writer did not record them).
        total_records: the summary's ``total-records`` (None when absent).
    """

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    sequence_number: int
    schema_id: int | None
    lane: str
    operation: str
    refs: tuple[str, ...]
    is_current: bool
    added_data_files: int | None
    removed_data_files: int | None
    added_delete_files: int | None
    removed_delete_files: int | None
    added_records: int | None
    removed_records: int | None
    total_records: int | None


@dataclass(frozen=True, slots=True)
class Timeline:
    """Lanes (main first, then branches, tags, and the orphan lane if needed) and points.

    ``points`` holds every valid snapshot once, on its lane, oldest first; ``markers`` holds
    one point per tag, on the tag's lane.
    """

    lanes: tuple[Lane, ...]
    points: tuple[TimelinePoint, ...]
    markers: tuple[TimelinePoint, ...]


def _count(snapshot: Snapshot, key: str) -> int | None:
    if snapshot.summary is None:
        return None
    raw = snapshot.summary.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def _point(
    snapshot: Snapshot, lane: str, refs: tuple[str, ...], current: int | None
) -> TimelinePoint:
    return TimelinePoint(
        snapshot_id=snapshot.snapshot_id,
        parent_id=snapshot.parent_snapshot_id,
        timestamp_ms=snapshot.timestamp_ms,
        sequence_number=snapshot.sequence_number,
        schema_id=snapshot.schema_id,
        lane=lane,
        operation=str(snapshot.operation) if snapshot.operation is not None else "",
        refs=refs,
        is_current=snapshot.snapshot_id == current,
        added_data_files=_count(snapshot, "added-data-files"),
        removed_data_files=_count(snapshot, "deleted-data-files"),
        added_delete_files=_count(snapshot, "added-delete-files"),
        removed_delete_files=_count(snapshot, "removed-delete-files"),
        added_records=_count(snapshot, "added-records"),
        removed_records=_count(snapshot, "deleted-records"),
        total_records=_count(snapshot, "total-records"),
    )


def timeline(metadata: TableMetadata) -> Timeline:
    """Lay out every valid snapshot of ``metadata`` on branch lanes, and tags on their own."""
    branches = sorted(metadata.branches().items(), key=lambda kv: (kv[0] != MAIN_BRANCH, kv[0]))
    tags = sorted(metadata.tags().items())
    refs_at: dict[int, list[str]] = {}
    for name, ref in metadata.refs.items():
        refs_at.setdefault(ref.snapshot_id, []).append(name)
    lane_of: dict[int, str] = {}
    for name, ref in branches:
        for snapshot in metadata.ancestors_of(ref.snapshot_id):
            lane_of.setdefault(snapshot.snapshot_id, name)
    lanes = [Lane(name, LaneKind.BRANCH, ref.snapshot_id) for name, ref in branches]
    lanes += [Lane(name, LaneKind.TAG, ref.snapshot_id) for name, ref in tags]
    if any(s.snapshot_id not in lane_of for s in metadata.snapshots):
        lanes.append(Lane(UNREFERENCED, LaneKind.UNREFERENCED, None))
    current = metadata.current_snapshot_id
    ordered = sorted(metadata.snapshots, key=lambda s: (s.timestamp_ms, s.sequence_number))
    points = tuple(
        _point(
            s,
            lane_of.get(s.snapshot_id, UNREFERENCED),
            tuple(sorted(refs_at.get(s.snapshot_id, ()))),
            current,
        )
        for s in ordered
    )
    markers = tuple(
        _point(tagged, name, tuple(sorted(refs_at.get(ref.snapshot_id, ()))), current)
        for name, ref in tags
        if (tagged := metadata.snapshot_by_id(ref.snapshot_id)) is not None
    )
    return Timeline(lanes=tuple(lanes), points=points, markers=markers)


__all__ = ["UNREFERENCED", "Lane", "LaneKind", "Timeline", "TimelinePoint", "timeline"]
