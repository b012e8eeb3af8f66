"""The History page: snapshots, refs and metadata log as Spark lists them.

Picking a snapshot sets the shared time selector (session state and URL).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ui.helpers import OpenPage, as_shown, figures, metrics, no_problems, number, spark_count
from ui import app
from ui.figures import RECORDS_ADDED

PAGE = app.HISTORY.file

pytestmark = pytest.mark.spark


def test_snapshots_refs_and_log_are_sparks(spark: Any, open_page: OpenPage) -> None:
    at = open_page(PAGE, table="demo.trips")
    no_problems(at)
    snapshots = next(df.value for df in at.dataframe if "lane" in df.value.columns)
    theirs = {
        str(r.snapshot_id): r.operation
        for r in spark.sql(
            "SELECT snapshot_id, operation FROM icecore.demo.trips.snapshots"
        ).collect()
    }
    assert dict(zip(snapshots["snapshot"], snapshots["operation"], strict=True)) == theirs
    refs = next(df.value for df in at.dataframe if "kind" in df.value.columns)
    spark_refs = {
        r.name: (r.type.lower(), str(r.snapshot_id))
        for r in spark.sql("SELECT name, type, snapshot_id FROM icecore.demo.trips.refs").collect()
    }
    shown = {
        n: (k, s) for n, k, s in zip(refs["name"], refs["kind"], refs["snapshot"], strict=True)
    }
    assert shown == spark_refs
    log = next(df.value for df in at.dataframe if "metadata file" in df.value.columns)
    # Spark's metadata_log_entries also lists the current file; the page lists it apart.
    assert (
        len(log)
        == spark_count(spark, "SELECT count(*) FROM icecore.demo.trips.metadata_log_entries") - 1
    )
    # Each file name is visible (paths shortened from the left), the whole path beside it.
    names = [p.rsplit("/", 1)[1] for p in log["full path"]]
    assert [p.rsplit("/", 1)[1] for p in log["metadata file"]] == names
    assert all(n.endswith(".metadata.json") for n in names)


def test_the_timeline_draws_every_snapshot_with_its_rows(spark: Any, open_page: OpenPage) -> None:
    at = open_page(PAGE, table="demo.trips")
    (figure,) = figures(at)
    points = [
        (c[0], lane)
        for trace in figure["data"]
        if trace["type"] == "scatter"
        and trace.get("customdata")
        and trace.get("name") not in ("tag", "branch head", "current", "selected")
        for c, lane in zip(trace.get("customdata", []), trace["y"], strict=True)
    ]
    ids = {
        str(r.snapshot_id)
        for r in spark.sql("SELECT snapshot_id FROM icecore.demo.trips.snapshots").collect()
    }
    assert {p for p, _ in points} == ids
    audit = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'audit'"
    ).collect()[0][0]
    assert (str(audit), "audit") in points
    added = next(t for t in figure["data"] if t.get("name") == RECORDS_ADDED)
    summary = {
        str(r.snapshot_id): int(r.summary.get("added-records", 0))
        for r in spark.sql(
            "SELECT snapshot_id, summary FROM icecore.demo.trips.snapshots"
        ).collect()
    }
    by_id = {c[0]: y for c, y in zip(added["customdata"], added["y"], strict=True)}
    assert by_id == summary


def test_picking_a_snapshot_sets_the_time_selector(spark: Any, open_page: OpenPage) -> None:
    at = open_page(PAGE, table="demo.trips")
    tag = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'"
    ).collect()[0][0]
    at.selectbox(key="history_pick").set_value(tag).run()
    at.button(key="history_use").click().run()
    no_problems(at)
    assert at.query_params["snapshot"] in (str(tag), [str(tag)])
    assert at.sidebar.radio(key="sb_time_kind").value == "Snapshot"
    assert at.sidebar.selectbox(key="sb_snapshot").value == tag
    at.switch_page(app.OVERVIEW.file).run()
    no_problems(at)
    assert number(metrics(at)["Data files"]) == spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips.data_files VERSION AS OF {tag}"
    )


def test_an_unknown_snapshot_in_a_link_is_one_sentence(
    demo_warehouse: Path, open_page: OpenPage
) -> None:
    at = open_page(PAGE, table="demo.trips", snapshot="123")
    assert not at.exception
    assert [as_shown(e.value) for e in at.error] == [
        "Snapshot 123 does not exist in the table (never, or expired)."
    ]


def test_file_counts_are_sparks_and_zero_where_the_summary_leaves_them_out(
    spark: Any, open_page: OpenPage
) -> None:
    at = open_page(PAGE, table="demo.trips")
    no_problems(at)
    snapshots = next(df.value for df in at.dataframe if "lane" in df.value.columns)
    changed: dict[tuple[str, str], int] = {}
    for r in spark.sql(
        "SELECT snapshot_id, status, data_file.content AS content, "
        "count(DISTINCT data_file.file_path) AS n FROM icecore.demo.trips.all_entries "
        "WHERE status IN (1, 2) GROUP BY snapshot_id, status, data_file.content"
    ).collect():
        column = ("data files " if r.content == 0 else "delete files ") + (
            "+" if r.status == 1 else "−"
        )
        changed[(str(r.snapshot_id), column)] = changed.get((str(r.snapshot_id), column), 0) + r.n
    columns = ("data files +", "data files −", "delete files +", "delete files −")
    for _, row in snapshots.iterrows():
        for column in columns:  # a snapshot that changed none shows 0, never "None"
            assert row[column] == changed.get((row["snapshot"], column), 0), (
                row["snapshot"],
                column,
            )


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("demo.trips", "position deletes"),
        ("demo.events_v3", "deletion vectors"),
        ("demo.accounts", "equality deletes"),
    ],
)
def test_live_rows_and_rows_removed_are_sparks_counts(
    spark: Any, open_page: OpenPage, name: str, kind: str
) -> None:
    """Live rows drop on a DELETE that writes delete files, and rows − says by what."""
    at = open_page(PAGE, table=name)
    no_problems(at)
    table = next(df.value for df in at.dataframe if "lane" in df.value.columns)
    parents = dict(zip(table["snapshot"], table["parent"], strict=True))
    live: dict[str, int] = {}
    for sid in table["snapshot"]:
        live[sid] = spark_count(spark, f"SELECT count(*) FROM icecore.{name} VERSION AS OF {sid}")
    for _, row in table.iterrows():
        assert int(row["live rows"]) == live[row["snapshot"]]
        parent = parents[row["snapshot"]]
        if parent and parent not in live:
            continue  # an expired parent: Spark cannot count there
        before = live[parent] if parent else 0
        assert int(row["rows −"]) == before + int(row["rows +"]) - live[row["snapshot"]]
        assert row["note"] == ""
    by_deletes = [r for _, r in table.iterrows() if kind in r["removed by"]]
    assert by_deletes and all(int(r["rows −"]) > 0 for r in by_deletes)
    assert all(int(r["delete files +"]) > 0 for r in by_deletes)
