"""The Time travel page: what changed between two points, checked through Spark's .files."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.helpers import OpenPage, figures, metrics, no_problems, number, spark_count
from ui import app

PAGE = app.TIME_TRAVEL.file

pytestmark = pytest.mark.spark


def _files(spark: Any, snapshot_id: int, kind: str) -> dict[str, int]:
    rows = spark.sql(
        f"SELECT file_path, record_count FROM icecore.demo.trips.{kind} VERSION AS OF {snapshot_id}"
    ).collect()
    return {r.file_path: r.record_count for r in rows}


def test_the_diff_between_a_tag_and_main_is_sparks(spark: Any, open_page: OpenPage) -> None:
    refs = {
        r.name: r.snapshot_id
        for r in spark.sql("SELECT name, snapshot_id FROM icecore.demo.trips.refs").collect()
    }
    at = open_page(PAGE, table="demo.trips")
    at.selectbox(key="tt_from").set_value("month_end").run()
    at.selectbox(key="tt_to").set_value("main").run()
    no_problems(at)
    before = _files(spark, refs["month_end"], "data_files")
    after = _files(spark, refs["main"], "data_files")
    before_del = _files(spark, refs["month_end"], "delete_files")
    after_del = _files(spark, refs["main"], "delete_files")
    shown = metrics(at)
    assert number(shown["Data files added"]) == len(after.keys() - before.keys())
    assert number(shown["Data files removed"]) == len(before.keys() - after.keys())
    assert number(shown["Delete files added"]) == len(after_del.keys() - before_del.keys())
    assert number(shown["Delete files removed"]) == len(before_del.keys() - after_del.keys())
    rows_added = sum(after[p] for p in after.keys() - before.keys())
    # Rows removed as a reader sees them: deletes since the tag count, not only the records
    # of data files that went (which said 0 where thousands of rows were deleted).
    live_from = spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips VERSION AS OF {refs['month_end']}"
    )
    live_to = spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips VERSION AS OF {refs['main']}"
    )
    rows_removed = live_from + rows_added - live_to
    assert rows_removed > sum(before[p] for p in before.keys() - after.keys())
    assert number(shown["Rows added"]) == rows_added
    assert number(shown["Rows removed"]) == rows_removed
    assert f"Live rows (what a reader sees, deletes applied): {live_from:,} → {live_to:,}." in (
        " ".join(c.value for c in at.caption)
    )
    (figure,) = figures(at)
    bars = {t["name"]: t["x"] for t in figure["data"]}
    assert bars["rows added"] == [rows_added] and bars["rows removed"] == [-rows_removed]
    changes = next(df.value for df in at.dataframe if "change" in df.value.columns)
    assert {"added", "renamed", "type", "removed"} <= set(changes["change"])


def test_a_typed_time_works_and_a_bad_point_is_one_sentence(open_page: OpenPage) -> None:
    at = open_page(PAGE, table="demo.trips")
    at.selectbox(key="tt_from").set_value("Another time…").run()
    assert [i.value for i in at.info] == ["Type a time for the point marked “Another time…”."]
    at.text_input(key="tt_from_time").input("2999-01-01T00:00:00Z").run()
    no_problems(at)  # the current snapshot against itself
    assert number(metrics(at)["Data files added"]) == 0
    at.text_input(key="tt_from_time").input("2000-01-01T00:00:00Z").run()
    assert not at.exception
    assert len(at.error) == 1 and "no snapshot as of" in at.error[0].value
    at.text_input(key="tt_from_time").input("yesterday").run()
    assert not at.exception
    assert len(at.error) == 1 and "neither a snapshot id" in at.error[0].value


def test_any_snapshot_can_be_typed_by_id(spark: Any, open_page: OpenPage) -> None:
    refs = {
        r.name: r.snapshot_id
        for r in spark.sql("SELECT name, snapshot_id FROM icecore.demo.trips.refs").collect()
    }
    at = open_page(PAGE, table="demo.trips")
    assert len(at.selectbox(key="tt_from").options) <= len(refs) + 50 + 2 + 1
    at.selectbox(key="tt_from").set_value("Another time…").run()
    at.text_input(key="tt_from_time").input(str(refs["month_end"])).run()
    at.selectbox(key="tt_to").set_value("main").run()
    no_problems(at)
    before = _files(spark, refs["month_end"], "data_files")
    after = _files(spark, refs["main"], "data_files")
    shown = metrics(at)
    assert number(shown["Data files added"]) == len(after.keys() - before.keys())
    assert number(shown["Data files removed"]) == len(before.keys() - after.keys())
