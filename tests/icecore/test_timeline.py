"""Timeline lanes: Spark's refs and snapshot parents are the oracle for who sits where."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.metadata import parse_metadata
from icecore.timeline import UNREFERENCED, LaneKind, timeline

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
