"""Time travel's points in the link, the link to every view, and the row changelog.

The points come from the link (``?from=…&to=…``) and go back into it when changed; the
sidebar shows the view's link as text to copy. The changed rows the page shows are Spark's
``create_changelog_view`` for the same range (a range of appends, which Spark answers).
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import icecore
from tests.ui.helpers import OpenPage, as_shown, drive, no_problems
from ui import app

PAGE = app.TIME_TRAVEL.file
CHANGE_COLUMNS = ["trip_id", "_change_type", "_change_ordinal", "_commit_snapshot_id"]

pytestmark = pytest.mark.spark

_views = itertools.count()


def _refs(spark: Any) -> dict[str, int]:
    rows = spark.sql("SELECT name, snapshot_id FROM icecore.demo.trips.refs").collect()
    return {r.name: r.snapshot_id for r in rows}


def _main_lineage(demo_warehouse: Path) -> list[int]:
    """Snapshot ids of trips' main history, oldest first."""
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    current = table.snapshot()
    assert current is not None
    return [s.snapshot_id for s in reversed(table.metadata.ancestors_of(current.snapshot_id))]


def _sidebar_link(at: Any) -> str:
    (link,) = [c.value for c in at.sidebar.code]
    return str(link)


def test_a_link_opens_on_its_points_and_changes_go_back_into_it(
    spark: Any, open_page: OpenPage, demo_warehouse: Path
) -> None:
    refs = _refs(spark)
    first = _main_lineage(demo_warehouse)[0]
    at = open_page(PAGE, table="demo.trips", **{"from": "month_end", "to": str(first)})
    no_problems(at)
    assert at.selectbox(key="tt_from").value == "month_end"
    assert at.selectbox(key="tt_to").value == str(first)
    said = [as_shown(c.value) for c in at.caption]
    assert any(
        t.startswith(f"From snapshot {refs['month_end']} to snapshot {first}.") for t in said
    ), said
    link = _sidebar_link(at)
    assert "from=month_end" in link and f"to={first}" in link and "table=demo.trips" in link

    at = drive(at, ("selectbox", "tt_to", "main"))
    no_problems(at)
    assert at.query_params["to"] == "main" and at.query_params["from"] == "month_end"
    assert "to=main" in _sidebar_link(at)

    # A point the pickers do not list (a time) opens as typed text.
    at = open_page(PAGE, table="demo.trips", **{"from": "2999-01-01T00:00:00Z", "to": "main"})
    no_problems(at)
    assert at.selectbox(key="tt_from").value == "Another time…"
    assert at.text_input(key="tt_from_time").value == "2999-01-01T00:00:00Z"
    assert at.query_params["from"] == "2999-01-01T00:00:00Z"


def test_every_page_shows_its_link(open_page: OpenPage) -> None:
    """The link of the view, with the selection's parameters, in the sidebar of each page."""
    for page in (app.OVERVIEW.file, app.HISTORY.file, app.SCAN_PREVIEW.file):
        at = open_page(page, table="demo.trips", ref="month_end")
        no_problems(at)
        link = _sidebar_link(at)
        assert "table=demo.trips" in link and "ref=month_end" in link, (page, link)


def _spark_changes(spark: Any, start: int, end: int) -> Counter[tuple[Any, ...]]:
    view = f"tt_changes_{next(_views)}"
    spark.sql(
        "CALL icecore.system.create_changelog_view(table => 'demo.trips', options => "
        f"map('start-snapshot-id', '{start}', 'end-snapshot-id', '{end}'), "
        f"changelog_view => '{view}')"
    )
    rows = spark.sql(f"SELECT {', '.join(CHANGE_COLUMNS)} FROM {view}").collect()
    return Counter(tuple(r) for r in rows)


def test_changed_rows_are_sparks_changelog(
    spark: Any, open_page: OpenPage, demo_warehouse: Path
) -> None:
    ids = _main_lineage(demo_warehouse)
    start, end = ids[0], ids[3]
    expected = _spark_changes(spark, start, end)
    assert expected
    at = open_page(PAGE, table="demo.trips", **{"from": str(start), "to": str(end)})
    at = drive(
        at, ("number_input", "tt_changelog_limit", 100_000), ("button", "tt_changelog", None)
    )
    no_problems(at)
    shown = next(df.value for df in at.dataframe if "_change_type" in df.value.columns)
    got = Counter(
        tuple(
            int(v) if k != "_change_type" else str(v)
            for k, v in zip(CHANGE_COLUMNS, row, strict=True)
        )
        for row in shown[CHANGE_COLUMNS].itertuples(index=False)
    )
    assert got == expected
    total = sum(expected.values())

    # The row limit is said, and bounds what is shown; the downloads hold every row.
    at = drive(at, ("number_input", "tt_changelog_limit", 5))
    no_problems(at)
    shown = next(df.value for df in at.dataframe if "_change_type" in df.value.columns)
    assert len(shown) == 5
    said = [as_shown(c.value) for c in at.caption]
    assert (
        f"{total:,} changed rows; the first 5 are shown (row limit 5); the downloads hold "
        f"all {total:,}." in said
    )
    labels = {b.label for b in at.get("download_button")}
    assert f"Download all {total:,} rows as CSV" in labels


def test_a_range_spark_refuses_is_one_sentence(spark: Any, open_page: OpenPage) -> None:
    """From must be in To's history (Spark: "not a parent ancestor"): one sentence, no rows."""
    refs = _refs(spark)
    at = open_page(PAGE, table="demo.trips", **{"from": "audit", "to": str(refs["month_end"])})
    at = drive(at, ("button", "tt_changelog", None))
    assert not at.exception
    (error,) = [as_shown(e.value) for e in at.error]
    assert "is not a parent ancestor of end snapshot" in error


HOSTILE_POINTS = [
    "",
    " ",
    "x" * 100_000,
    "[x](http://evil)",
    "<script>alert(1)</script>",
    "a\x00b",
    "ünï😀",
    "²",  # a digit to str.isdigit, not to int()
    "٣",
    "-1",
    "9" * 40,
    "-9223372036854775809",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "+99999-01-01",
    "other_tables_tag",
]


@pytest.mark.parametrize("side", ["from", "to"])
def test_any_point_in_a_link_is_one_sentence_and_shown_as_text(
    open_page: OpenPage, side: str
) -> None:
    other = "to" if side == "from" else "from"
    for point in HOSTILE_POINTS:
        at = open_page(PAGE, table="demo.trips", **{side: point, other: "main"})
        assert not at.exception, (point[:50], [e.value for e in at.exception])
        assert len(at.error) <= 1, point[:50]
        shown = [
            e.value
            for kind in ("markdown", "caption", "error", "info", "warning", "title")
            for e in getattr(at, kind)
        ]
        for text in shown:
            assert "](http://evil)" not in text and "<script>" not in text, text
            assert "x" * 1_000 not in text, point[:50]


def test_equal_and_reversed_points_are_one_sentence(open_page: OpenPage, spark: Any) -> None:
    refs = _refs(spark)
    for a, b in (("main", "main"), ("main", str(refs["month_end"]))):
        at = open_page(PAGE, table="demo.trips", **{"from": a, "to": b})
        assert not at.exception, [e.value for e in at.exception]
        assert len(at.error) <= 1
