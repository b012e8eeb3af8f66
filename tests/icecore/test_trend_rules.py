"""The regression rules of icecore.trend on series written here by hand.

Every series and its expected regressions are set by hand from the rules the module states;
the empty table is the hand-written one of the evolution tests
(Spark-written histories are checked in test_trend_spark.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import icecore
from icecore.errors import NotFound
from icecore.retention import retention
from icecore.trend import TrendPoint, regressions, trend
from tests.icecore.evolution.hand_table import write_table

WRITER = {"engine-name": "spark", "spark.app.id": "batch"}


def point(
    i: int,
    *,
    added: tuple[int, int] = (0, 0),
    deletes: int = 0,
    manifests: int = 1,
    writer: dict[str, str] | None = None,
    operation: str = "append",
) -> TrendPoint:
    files, size = added
    return TrendPoint(
        snapshot_id=i,
        parent_id=i - 1 if i > 1 else None,
        timestamp_ms=1_700_000_000_000 + i * 1000,
        operation=operation,
        writer=writer or WRITER,
        data_bytes=0,
        data_files=0,
        rows=0,
        avg_file_bytes=None,
        delete_files=deletes,
        delete_bytes=0,
        manifests=manifests,
        added_data_files=files,
        added_data_bytes=files * size,
        avg_added_file_bytes=size if files else None,
    )


def test_small_added_files_flagged_where_they_start_with_their_writer() -> None:
    stream = {"engine-name": "spark", "spark.sql.streaming.queryId": "q-1"}
    points = [
        point(1, added=(2, 100_000_000)),
        point(2, added=(1, 120_000_000)),
        point(3),  # no files added: ignored
        point(4, added=(1, 80_000_000)),
        point(5, added=(50, 1_000_000), writer=stream),
        point(6, added=(40, 2_000_000), writer=stream),
        point(7, added=(30, 3_000_000), writer=stream),
        point(8, added=(1, 90_000_000), operation="replace"),
        point(9, added=(1, 95_000_000)),
    ]
    found = regressions(points, min_count_to_merge=100)
    assert len(found) == 1
    (r,) = found
    assert (r.snapshot_id, r.what, r.operation) == (5, "avg_added_file_bytes", "append")
    assert r.writer == stream
    assert r.before == 100_000_000  # median of 100, 120, 80 MB
    assert r.after == 2_000_000  # median of 1, 2, 3 MB
    assert (r.last_snapshot_id, r.snapshots) == (7, 3)


def test_a_ninefold_fall_or_a_first_small_writer_is_not_a_regression() -> None:
    assert not regressions(
        [point(1, added=(1, 900)), point(2, added=(1, 100)), point(3, added=(1, 1_000))]
    )
    # Small from the start: no healthy period to fall from.
    assert not regressions([point(1, added=(1, 10)), point(2, added=(1, 10))])
    # Exactly tenfold is a fall.
    found = regressions([point(1, added=(1, 1_000)), point(2, added=(1, 100))])
    assert [(r.snapshot_id, r.before, r.after) for r in found] == [(2, 1_000, 100)]


def test_delete_files_piling_up_flagged_at_the_first_rise() -> None:
    counts = [0, 0, 1, 1, 2, 3, 5, 0, 1]
    found = regressions(
        [point(i, deletes=n) for i, n in enumerate(counts, start=1)], min_count_to_merge=100
    )
    assert [(r.what, r.snapshot_id, r.before, r.after, r.last_snapshot_id) for r in found] == [
        ("delete_files", 3, 0, 5, 7)
    ]


def test_delete_files_compacted_away_before_piling_up_are_no_regression() -> None:
    counts = [2, 3, 4, 1, 2, 1, 3]  # never 3 more than, and twice, the level before the rise
    assert not regressions([point(i, deletes=n) for i, n in enumerate(counts, start=1)])


def test_manifests_climbing_past_the_merge_count_flagged_where_the_climb_began() -> None:
    counts = [1, 2, 3, 1, 2, 3, 4, 5, 5, 6]
    found = regressions(
        [point(i, manifests=n) for i, n in enumerate(counts, start=1)], min_count_to_merge=4
    )
    # The first climb (1 to 3) grows less than the merge count; the second grows by 4.
    assert [(r.what, r.snapshot_id, r.before, r.after, r.last_snapshot_id) for r in found] == [
        ("manifests", 5, 1, 6, 10)
    ]


def test_manifests_within_the_merge_count_are_healthy() -> None:
    counts = [1, 2, 3, 4, 1, 2, 3, 4]
    assert not regressions(
        [point(i, manifests=n) for i, n in enumerate(counts, start=1)], min_count_to_merge=4
    )


def test_a_table_without_snapshots_has_an_empty_trend_and_costs_nothing(tmp_path: Path) -> None:
    table = icecore.load_table(str(write_table(tmp_path, 2)))
    assert trend(table).to_dict() == {"branch": "main", "snapshots": [], "regressions": []}
    costs = retention(table).to_dict()
    assert (costs["snapshots"], costs["refs"], costs["total"]["bytes"]) == ([], [], 0)
    with pytest.raises(NotFound, match="no branch 'audit'"):
        trend(table, "audit")
