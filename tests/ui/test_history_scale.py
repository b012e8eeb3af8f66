"""The History page on a long history: bins instead of markers, a paged table, a bounded picker.

The table is hand-written (tests/ui/long_history.py: 1,200 snapshots on main, a branch, a
tag, a long metadata log); every expected number is computed here from what was written, and
Spark's ``snapshots`` table is the oracle for the counts the page shows.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.helpers import as_shown, figures, no_problems, open_app
from tests.ui.long_history import (
    AUDIT,
    FORK,
    MINUTE,
    START_MS,
    TAG_AT,
    snaps,
    write_long_history,
)
from ui import app
from ui.figures import RECORDS_ADDED

PAGE = app.HISTORY.file
N = 1200
TABLE = "db.long"


@pytest.fixture(scope="module")
def long_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("long-history")
    write_long_history(root, N)
    return root


@pytest.fixture
def open_long(long_root: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., AppTest]:
    monkeypatch.setenv("ICECORE_CATALOG", str(long_root))
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)

    def opener(**params: str) -> AppTest:
        return open_app(PAGE, catalog=str(long_root), table=TABLE, **params)

    return opener


WRITTEN = snaps(N)
NEWEST_FIRST = sorted(WRITTEN, key=lambda s: s.timestamp_ms, reverse=True)


def _snapshot_table(at: AppTest) -> Any:
    return next(df for df in at.dataframe if "lane" in df.value.columns)


def _marked(figure: dict[str, Any]) -> set[str]:
    """Snapshot ids drawn as markers of their own (not tags, rings or bins)."""
    return {
        c[0]
        for t in figure["data"]
        if t["type"] == "scatter" and t.get("name") in {"append", "overwrite", "delete"}
        for c in t["customdata"]
    }


def _bins(figure: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    """(lane, start, end, size) of every bin marker."""
    return [
        (lane, int(c[1]), int(c[2]), size)
        for t in figure["data"]
        if t["type"] == "scatter" and str(t.get("name", "")).startswith("mostly ")
        for c, lane, size in zip(t["customdata"], t["y"], t["marker"]["size"], strict=True)
    ]


def test_a_long_history_is_drawn_as_counts_per_bin(open_long: Callable[..., AppTest]) -> None:
    at = open_long()
    no_problems(at)
    (figure,) = figures(at)
    assert not _marked(figure)  # 1,205 snapshots in view: no marker of their own
    bins = _bins(figure)
    assert 0 < len(bins) <= 2 * 150
    # Each bin counts the snapshots written on its lane in [start, end).
    for lane, start, end, size in bins:
        count = sum(1 for s in WRITTEN if s.lane == lane and start <= s.timestamp_ms < end)
        assert count > 0 and size == pytest.approx(8.0 + min(24.0, 2.0 * math.sqrt(count)))
    covered = {
        s.snapshot_id
        for s in WRITTEN
        for lane, start, end, _ in bins
        if s.lane == lane and start <= s.timestamp_ms < end
    }
    assert covered == {s.snapshot_id for s in WRITTEN}
    added = next(t for t in figure["data"] if t.get("name") == RECORDS_ADDED)
    assert sum(added["y"]) == sum(int(s.summary.get("added-records", 0)) for s in WRITTEN)
    tag = next(t for t in figure["data"] if t.get("name") == "tag")
    assert [c[0] for c in tag["customdata"]] == [str(10_000 + TAG_AT)]
    assert len(json.dumps(figure)) < 200_000


def test_a_narrow_window_draws_each_snapshot(open_long: Callable[..., AppTest]) -> None:
    at = open_long()
    slider = at.select_slider(key="history_window")
    options: list[int] = at.session_state["history_window_options"]  # the slider's stops
    lo = START_MS + (FORK - 10) * MINUTE
    hi = START_MS + (FORK + 30) * MINUTE
    start = max(o for o in options if o <= lo)
    end = min(o for o in options if o >= hi)
    slider.set_range(start, end).run()
    no_problems(at)
    (figure,) = figures(at)
    expected = {str(s.snapshot_id) for s in WRITTEN if start <= s.timestamp_ms <= end}
    assert 0 < len(expected) <= 500
    assert _marked(figure) == expected
    lanes = {
        c[0]: lane
        for t in figure["data"]
        if t.get("name") in {"append", "overwrite", "delete"}
        for c, lane in zip(t["customdata"], t["y"], strict=True)
    }
    assert {k for k, v in lanes.items() if v == "audit"} == {str(90_000 + k) for k in range(AUDIT)}
    at.button(key="history_window_all").click().run()
    (figure,) = figures(at)
    assert not _marked(figure) and _bins(figure)


def test_the_table_pages_newest_first_and_every_snapshot_is_reachable(
    open_long: Callable[..., AppTest],
) -> None:
    at = open_long()
    table = _snapshot_table(at).value
    assert list(table["snapshot"]) == [str(s.snapshot_id) for s in NEWEST_FIRST[:100]]
    picker = at.selectbox(key="history_pick")
    assert len(picker.options) <= 101
    seen: list[str] = []
    pages = math.ceil(len(WRITTEN) / 100)
    for page in range(1, pages + 1):
        at.number_input(key="history_page").set_value(page).run()
        seen += list(_snapshot_table(at).value["snapshot"])
    assert seen == [str(s.snapshot_id) for s in NEWEST_FIRST]


def test_the_operation_filter_and_the_jump_box(open_long: Callable[..., AppTest]) -> None:
    at = open_long()
    at.multiselect(key="history_ops").set_value(["delete"]).run()
    deletes = [s for s in NEWEST_FIRST if s.operation == "delete"]
    assert list(_snapshot_table(at).value["snapshot"]) == [str(s.snapshot_id) for s in deletes]
    # An id the filter hides: the filter is cleared and its page shown, the picker on it.
    old = 10_000 + 3
    at.text_input(key="history_jump").input(str(old)).run()
    no_problems(at)
    assert at.multiselect(key="history_ops").value == []
    index = [s.snapshot_id for s in NEWEST_FIRST].index(old)
    assert at.number_input(key="history_page").value == index // 100 + 1
    assert str(old) in list(_snapshot_table(at).value["snapshot"])
    assert at.selectbox(key="history_pick").value == old
    at.text_input(key="history_jump").input("v1").run()
    assert at.selectbox(key="history_pick").value == 10_000 + TAG_AT
    # A time: the snapshot current on main then (snapshot-log semantics).
    when = START_MS + 500 * MINUTE + 30_000
    iso = dt.datetime.fromtimestamp(when / 1000, tz=dt.UTC).isoformat()
    at.text_input(key="history_jump").input(iso).run()
    expected = max(
        (s for s in WRITTEN if s.lane == "main" and s.timestamp_ms <= when),
        key=lambda s: s.timestamp_ms,
    )
    assert at.selectbox(key="history_pick").value == expected.snapshot_id
    at.text_input(key="history_jump").input("no-such-thing").run()
    assert not at.exception
    assert [as_shown(e.value) for e in at.error] == [
        "'no-such-thing' is not an ISO-8601 time; write it like 2024-08-09T10:00:00Z."
    ]


def test_unknown_counts_are_blank_and_missing_ones_zero(
    open_long: Callable[..., AppTest],
) -> None:
    at = open_long()
    shown = _snapshot_table(at)
    # A null shows blank, not "None" (Streamlit's default placeholder).
    assert shown.proto.HasField("placeholder") and shown.proto.placeholder == ""
    rows = {r["snapshot"]: r for _, r in shown.value.iterrows()}
    columns = ("data files +", "data files −", "rows +", "rows −")
    on_page = NEWEST_FIRST[:100]
    unknown = [s for s in on_page if "total-records" not in s.summary]
    assert unknown
    for s in unknown:  # the writer recorded no counts: null (None or NaN), shown blank
        assert all(v is None or v != v for v in (rows[str(s.snapshot_id)][c] for c in columns))
    counted = [s for s in on_page if "total-records" in s.summary]
    for s in counted:  # Iceberg leaves zero counts out of a summary: they are 0
        row = rows[str(s.snapshot_id)]
        assert row["data files −"] == int(s.summary.get("deleted-data-files", 0))
        assert row["rows −"] == int(s.summary.get("deleted-records", 0))
        assert row["rows +"] == int(s.summary.get("added-records", 0))


@pytest.mark.spark
def test_the_counts_shown_are_sparks(
    spark: Any, open_long: Callable[..., AppTest], long_root: Path
) -> None:
    name = "long_history_oracle"
    spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", str(long_root))
    spark.conf.set(f"spark.sql.catalog.{name}.cache-enabled", "false")
    theirs = {
        str(r.snapshot_id): r.summary
        for r in spark.sql(f"SELECT snapshot_id, summary FROM {name}.db.long.snapshots").collect()
    }
    at = open_long()
    table = _snapshot_table(at).value
    assert len(theirs) == len(WRITTEN)
    for _, row in table.iterrows():
        summary = theirs[row["snapshot"]]
        if "total-records" in summary:
            assert row["rows +"] == int(summary.get("added-records", 0))
            assert row["rows −"] == int(summary.get("deleted-records", 0))
            assert row["records before deletes"] == int(summary["total-records"])
            assert row["live rows"] == int(summary["total-records"])  # no delete file here


def test_the_sidebar_offers_the_newest_snapshots_and_takes_any_other_typed(
    open_long: Callable[..., AppTest],
) -> None:
    """The sidebar's snapshot picker holds the 50 newest (and the chosen one), not 1,200."""
    old = NEWEST_FIRST[-3].snapshot_id
    at = open_long(snapshot=str(old)).run()  # the sidebar follows the link from its 2nd run
    no_problems(at)
    picker = at.sidebar.selectbox(key="sb_snapshot")
    offered = [int(label.split(" · ")[0]) for label in picker.options]
    assert offered == [s.snapshot_id for s in NEWEST_FIRST[:50]] + [old]
    assert at.session_state["sb_snapshot"] == old
    other = NEWEST_FIRST[700].snapshot_id
    at.sidebar.text_input(key="sb_snapshot_id").input(str(other)).run()
    no_problems(at)
    assert at.query_params["snapshot"] in (str(other), [str(other)])
    assert at.session_state["sb_snapshot"] == other
    at.sidebar.text_input(key="sb_snapshot_id").input("[x](http://evil) <b>").run()
    assert not at.exception
    assert len(at.error) == 1


def test_counts_that_need_reading_wait_for_a_button_and_say_why_they_are_missing(
    open_long: Callable[..., AppTest],
) -> None:
    """Snapshots whose summary has no totals need reading: asked for, never guessed.

    Their manifest lists were never written (tests/ui/long_history.py), so the count is
    left empty with a note saying why.
    """
    at = open_long()
    no_problems(at)
    unknown = [s for s in NEWEST_FIRST[:100] if "total-records" not in s.summary]
    button = at.button(key="history_count_rows_button")
    assert button.label.startswith("Count live rows on this page: reads ")
    assert button.label.endswith(" whose metadata cannot tell (an unknown size of data files)")
    rows = {r["snapshot"]: r for _, r in _snapshot_table(at).value.iterrows()}
    for s in unknown:
        row = rows[str(s.snapshot_id)]
        assert row["live rows"] is None or row["live rows"] != row["live rows"]
        assert row["note"] == "needs reading the data files with their deletes"
    button.click().run()
    no_problems(at)
    rows = {r["snapshot"]: r for _, r in _snapshot_table(at).value.iterrows()}
    for s in unknown:
        row = rows[str(s.snapshot_id)]
        assert row["live rows"] is None or row["live rows"] != row["live rows"]
        assert row["note"].startswith("its manifest list cannot be read: ")
    assert not [b for b in at.button if b.key == "history_count_rows_button"]
