"""Timeline lanes: Spark's refs and snapshot parents are the oracle for who sits where."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.metadata import Operation, Summary, parse_metadata
from icecore.timeline import (
    UNREFERENCED,
    LaneKind,
    bin_points,
    bin_width_ms,
    in_window,
    timeline,
)

GOLDEN = Path(__file__).resolve().parents[1] / "data/metadata/spark/trips-00024.metadata.json"


@pytest.mark.spark
def test_lanes_follow_spark_refs_and_parents(spark: Any, demo_warehouse: Path) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    tl = timeline(table.metadata)
    refs = {
        r.name: (r.type.lower(), r.snapshot_id)
        for r in spark.sql("SELECT name, type, snapshot_id FROM icecore.demo.trips.refs").collect()
    }
    assert [lane.name for lane in tl.lanes] == ["main", "audit", "month_end"]
    assert {lane.name: (str(lane.kind), lane.head) for lane in tl.lanes} == refs
    parents = {
        r.snapshot_id: r.parent_id
        for r in spark.sql(
            "SELECT snapshot_id, parent_id FROM icecore.demo.trips.snapshots"
        ).collect()
    }
    assert {p.snapshot_id: p.parent_id for p in tl.points} == parents

    def ancestors(head: int) -> set[int]:
        found = set()
        current: int | None = head
        while current is not None and current in parents:
            found.add(current)
            current = parents[current]
        return found

    on_main = ancestors(refs["main"][1])
    only_audit = ancestors(refs["audit"][1]) - on_main
    assert {p.snapshot_id for p in tl.points if p.lane == "main"} == on_main
    assert {p.snapshot_id for p in tl.points if p.lane == "audit"} == only_audit
    (marker,) = tl.markers
    assert (marker.lane, marker.snapshot_id) == ("month_end", refs["month_end"][1])
    current = [p.snapshot_id for p in tl.points if p.is_current]
    assert current == [refs["main"][1]]
    times = [p.timestamp_ms for p in tl.points]
    assert times == sorted(times)


def test_snapshots_no_branch_reaches_get_their_own_lane() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    refs = {k: v for k, v in metadata.refs.items() if k != "audit"}
    tl = timeline(dataclasses.replace(metadata, refs=refs))
    assert tl.lanes[-1].kind is LaneKind.UNREFERENCED
    orphans = [p for p in tl.points if p.lane == UNREFERENCED]
    assert len(orphans) == 2  # the audit branch's own delete and append


def test_summary_counts_are_read_from_the_summary() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    tl = timeline(metadata)
    first = tl.points[0]
    summary = metadata.snapshot_by_id(first.snapshot_id).summary  # type: ignore[union-attr]
    assert summary is not None
    assert first.added_records == int(summary.get("added-records") or -1)
    assert first.operation == "append"


def test_a_count_spark_leaves_out_is_zero_and_one_never_recorded_is_unknown() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    first = timeline(metadata).points[0]
    summary = metadata.snapshot_by_id(first.snapshot_id).summary  # type: ignore[union-attr]
    assert summary is not None and summary.get("deleted-data-files") is None
    assert summary.get("total-data-files") is not None  # a writer that counts: absent is 0
    assert (first.removed_data_files, first.removed_records, first.removed_delete_files) == (
        0,
        0,
        0,
    )
    bare = [
        dataclasses.replace(s, summary=Summary(operation=Operation.APPEND))
        for s in metadata.snapshots
    ]
    point = timeline(dataclasses.replace(metadata, snapshots=tuple(bare))).points[0]
    assert (point.added_records, point.removed_data_files, point.total_records) == (
        None,
        None,
        None,
    )


def test_bins_are_nice_widths_that_count_every_point_once() -> None:
    day = 86_400_000
    assert bin_width_ms(0, day - 1, 150) == 600_000  # 144 bins of 10 min (5 min: 288)
    assert bin_width_ms(0, 51_000, 150) == 1_000
    assert bin_width_ms(0, 1000 * day, 150) == 7 * day  # 143 weeks (2 days: 501)
    assert (100 * 365 * day) // bin_width_ms(0, 100 * 365 * day, 50) + 1 <= 50
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    tl = timeline(metadata)
    width = 60_000
    bins = bin_points(tl.points, width)
    assert sum(b.snapshots for b in bins) == len(tl.points)
    for b in bins:
        members = [
            p for p in tl.points if p.lane == b.lane and b.start_ms <= p.timestamp_ms < b.end_ms
        ]
        assert b.snapshots == len(members) and b.end_ms - b.start_ms == width
        assert b.added_records == sum(p.added_records or 0 for p in members)
        assert sum(n for _, n in b.operations) == len(members)
    middle = tl.points[len(tl.points) // 2].timestamp_ms
    window = in_window(tl.points, middle, None)
    assert list(window) == [p for p in tl.points if p.timestamp_ms >= middle]
    assert list(in_window(tl.points, None, middle - 1)) == [
        p for p in tl.points if p.timestamp_ms < middle
    ]
