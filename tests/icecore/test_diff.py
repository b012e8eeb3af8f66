"""Snapshot diff against Spark: live files at both points, compared through Spark's .files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import NotFound

pytestmark = pytest.mark.spark


def spark_files(spark: Any, table: str, point: str, content: str) -> dict[str, int]:
    # By snapshot id: Iceberg 1.10's metadata tables fail on `VERSION AS OF '<branch>'` for
    # a branch of this evolved table ("Cannot find source column for partition field").
    if not point.isdigit():
        point = str(
            spark.sql(f"SELECT snapshot_id FROM {table}.refs WHERE name = '{point}'").collect()[0][
                0
            ]
        )
    version = point
    rows = spark.sql(
        f"SELECT file_path, record_count FROM {table}.{content} VERSION AS OF {version}"
    ).collect()
    return {r.file_path: r.record_count for r in rows}


@pytest.mark.parametrize(
    ("table", "before", "after"),
    [
        ("trips", "month_end", "main"),
        ("trips", "main", "audit"),
        ("trips", "audit", "month_end"),
        ("events_v3", "first", "main"),
        ("accounts", "first", "main"),
    ],
)
def test_diff_matches_spark(
    spark: Any, demo_warehouse: Path, table: str, before: str, after: str
) -> None:
    full = f"icecore.demo.{table}"
    t = icecore.load_table(f"{demo_warehouse}::demo.{table}")
    if before == "first":
        before = str(min(t.snapshots(), key=lambda s: s.sequence_number).snapshot_id)
    d = t.diff(before, after)
    for content, added, removed in (
        ("data_files", d.data_files_added, d.data_files_removed),
        ("delete_files", d.delete_files_added, d.delete_files_removed),
    ):
        old = spark_files(spark, full, before, content)
        new = spark_files(spark, full, after, content)
        assert {f.file_path for f in added} == set(new) - set(old)
        assert {f.file_path for f in removed} == set(old) - set(new)
    old = spark_files(spark, full, before, "data_files")
    new = spark_files(spark, full, after, "data_files")
    assert d.rows_added == sum(v for p, v in new.items() if p not in old)
    assert d.rows_removed == sum(v for p, v in old.items() if p not in new)


def test_schema_changes_of_the_story(demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    changes = {
        (c.kind, c.name, c.before, c.after) for c in t.diff("month_end", "main").schema_changes
    }
    # The story: passenger_count int -> long, tip renamed, congestion_fee added,
    # store_and_fwd dropped.
    assert changes == {
        ("type", "passenger_count", "int", "long"),
        ("renamed", "tip_amount", "tip", "tip_amount"),
        ("added", "congestion_fee", "", "double"),
        ("removed", "store_and_fwd", "string", ""),
    }
    assert t.diff("main", "month_end").specs_after == (0,)


def test_unknown_points(demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    with pytest.raises(NotFound, match="neither a snapshot id"):
        t.diff("nowhere", "main")
    with pytest.raises(NotFound, match="does not exist"):
        t.diff("12345", "main")


def test_every_snapshot_against_its_parent_matches_spark(spark: Any, demo_warehouse: Path) -> None:
    """Neighbouring snapshots share most manifests, which the diff does not read."""
    full = "icecore.demo.trips"
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    ids = {s.snapshot_id for s in t.snapshots()}
    pairs = [
        (s.parent_snapshot_id, s.snapshot_id) for s in t.snapshots() if s.parent_snapshot_id in ids
    ]
    assert len(pairs) >= 5
    for parent, child in pairs:
        d = t.diff(str(parent), str(child))
        for content, added, removed in (
            ("data_files", d.data_files_added, d.data_files_removed),
            ("delete_files", d.delete_files_added, d.delete_files_removed),
        ):
            old = spark_files(spark, full, str(parent), content)
            new = spark_files(spark, full, str(child), content)
            assert {f.file_path for f in added} == set(new) - set(old), (parent, child)
            assert {f.file_path for f in removed} == set(old) - set(new), (parent, child)
        for snapshot, specs in ((parent, d.specs_before), (child, d.specs_after)):
            rows = spark.sql(
                f"SELECT DISTINCT spec_id FROM {full}.data_files VERSION AS OF {snapshot}"
            ).collect()
            assert specs == tuple(sorted(r.spec_id for r in rows)), snapshot


def test_a_diff_tells_the_progress_listener_each_manifest_it_reads(demo_warehouse: Path) -> None:
    """Reading manifests k of n, for the manifests not listed by both points, k = 1..n.

    Two points far apart read thousands of manifests; the app shows how far it is.
    """
    from icecore.progress import reporting

    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    first = min(t.snapshots(), key=lambda s: s.sequence_number)
    last = t.metadata.current_snapshot()
    assert last is not None
    old = {m.manifest_path for m in t.manifests(first)}
    new = {m.manifest_path for m in t.manifests(last)}
    n = len(old ^ new)
    assert n > 1
    heard: list[tuple[str, int, int]] = []
    with reporting(lambda what, done, total: heard.append((what, done, total))):
        t.diff(str(first.snapshot_id), str(last.snapshot_id))
    assert heard == [("Reading manifests", k, n) for k in range(1, n + 1)]
