"""The table's history as lanes: which branch each snapshot was written on, and where tags sit.

Spec "Snapshots" (parent links, summaries) and "Snapshot References". A snapshot belongs to
the lane of the first branch, ``main`` first, whose ancestry holds it; snapshots that no
branch reaches (rolled back, or the tip of a dropped branch) get the ``unreferenced`` lane.
A tag is a lane of its own with one marker, at the time of the snapshot it names.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
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
        added_records, removed_records: the summary's ``added-*``/``deleted-*`` counts:
            0 when the summary keeps totals but not this count (Iceberg's writers leave a
            zero count out), None when the writer recorded no counts at all.
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


TOTALS_KEY = "total-data-files"
"""A summary with this key was written by a writer that counts what a commit changes.

Iceberg Java's ``SnapshotSummary`` (and PyIceberg's) sets each ``added-*``/``deleted-*`` count
only when it is above zero, while the totals are always written: with a total present, a
missing change count is a true 0. Without one, the writer recorded nothing: unknown."""


def summary_count(snapshot: Snapshot, key: str) -> int | None:
    """A count of the snapshot's summary (:data:`TOTALS_KEY` says when missing means 0)."""
    if snapshot.summary is None:
        return None
    raw = snapshot.summary.get(key)
    if raw is None:
        return 0 if snapshot.summary.get(TOTALS_KEY) is not None else None
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
        added_data_files=summary_count(snapshot, "added-data-files"),
        removed_data_files=summary_count(snapshot, "deleted-data-files"),
        added_delete_files=summary_count(snapshot, "added-delete-files"),
        removed_delete_files=summary_count(snapshot, "removed-delete-files"),
        added_records=summary_count(snapshot, "added-records"),
        removed_records=summary_count(snapshot, "deleted-records"),
        total_records=summary_count(snapshot, "total-records"),
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


# Windows and bins: a long history drawn as counts per time bin ----------------------------

NICE_WIDTHS_MS = tuple(
    seconds * 1000
    for seconds in (
        1, 2, 5, 10, 15, 30,
        60, 2 * 60, 5 * 60, 10 * 60, 15 * 60, 30 * 60,
        3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600,
        86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 91 * 86400, 365 * 86400,
    )
)  # fmt: skip
"""Bin widths a reader can name (a minute, an hour, a day, a week...), smallest first."""


def bin_width_ms(start_ms: int, end_ms: int, max_bins: int) -> int:
    """The smallest nice width that cuts ``[start_ms, end_ms]`` into at most ``max_bins`` bins.

    Bins start at multiples of the width from the epoch (UTC), so a bin of a day is a day.
    """
    for width in NICE_WIDTHS_MS:
        if end_ms // width - start_ms // width + 1 <= max_bins:
            return width
    # Longer than max_bins years: whole years, as many as it takes.
    year = NICE_WIDTHS_MS[-1]
    return year * -(-(end_ms // year - start_ms // year + 1) // max_bins)


def in_window(
    points: Sequence[TimelinePoint], start_ms: int | None, end_ms: int | None
) -> Sequence[TimelinePoint]:
    """The points committed in ``[start_ms, end_ms]`` (either end open when None).

    ``points`` must be oldest first, as :class:`Timeline` holds them (found by bisection).
    """
    times = [p.timestamp_ms for p in points]
    lo = 0 if start_ms is None else bisect.bisect_left(times, start_ms)
    hi = len(points) if end_ms is None else bisect.bisect_right(times, end_ms)
    return points[lo:hi]


@dataclass(frozen=True, slots=True)
class TimeBin:
    """The snapshots of one lane committed in one time bin, counted.

    Attributes:
        lane: the lane.
        start_ms, end_ms: the bin, ``[start_ms, end_ms)``.
        snapshots: how many snapshots of the lane fall in it.
        operations: (operation, count) pairs, most frequent first.
        added_records, removed_records: sums of the snapshots' counts (unknown counts as 0).
        first_id, last_id: the oldest and the newest snapshot in the bin.
    """

    lane: str
    start_ms: int
    end_ms: int
    snapshots: int
    operations: tuple[tuple[str, int], ...]
    added_records: int
    removed_records: int
    first_id: int
    last_id: int


def bin_points(points: Sequence[TimelinePoint], width_ms: int) -> tuple[TimeBin, ...]:
    """Count ``points`` (oldest first) per lane and per bin of ``width_ms``; empty bins omitted.

    Bins are ordered by lane (first seen), then time.
    """
    groups: dict[tuple[str, int], list[TimelinePoint]] = {}
    for p in points:
        groups.setdefault((p.lane, p.timestamp_ms // width_ms), []).append(p)
    bins = []
    for (lane, index), members in groups.items():
        operations = Counter(p.operation or "no operation" for p in members)
        bins.append(
            TimeBin(
                lane=lane,
                start_ms=index * width_ms,
                end_ms=(index + 1) * width_ms,
                snapshots=len(members),
                operations=tuple(sorted(operations.items(), key=lambda kv: (-kv[1], kv[0]))),
                added_records=sum(p.added_records or 0 for p in members),
                removed_records=sum(p.removed_records or 0 for p in members),
                first_id=members[0].snapshot_id,
                last_id=members[-1].snapshot_id,
            )
        )
    return tuple(bins)


__all__ = [
    "UNREFERENCED",
    "Lane",
    "LaneKind",
    "TimeBin",
    "Timeline",
    "TimelinePoint",
    "bin_points",
    "bin_width_ms",
    "in_window",
    "timeline",
]
