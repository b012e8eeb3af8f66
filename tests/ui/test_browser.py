"""End to end in a real browser: ``streamlit run app.py`` driven through Debian's chromium.

The walk an analyst takes: open the app, pick a table in the sidebar, read its history and
set the shared time selector from it, preview a filtered scan at that point, and compare two
points in time. Then a data owner's: on a copy of a table (served by a second app whose
catalog is a temporary warehouse, so the fixture warehouse is never changed), a schema
change's dry run on the Evolution page, its explicit confirmation and commit, and Spark
reading the evolved table afterwards; on History, a rollback of main and a new tag, each
confirmed after its dry run and checked in Spark's refs; and on the Maintenance page, a
confirmed compaction run on Spark in the background and followed until its before/after
comparison shows. Numbers on the pages are checked against Spark; a screenshot of every page
is saved under ``test-artifacts/screenshots/`` (the README's tour is made from them).

The browser is ``/usr/bin/chromium`` (Debian's package, which ``.ci/run`` installs), launched
by Playwright with ``executable_path``; no browser is ever downloaded.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from bench.app_bench import CHROMIUM, CHROMIUM_ARGS, streamlit_app
from tests.icecore.evolution.conftest import EvoCatalogs
from tests.icecore.evolution.spark_checks import describe
from tests.ui.copies import copy_sql_table
from tests.ui.helpers import REPO, spark_count

SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
FILTER = "fare > 30"

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@contextmanager
def _streamlit(catalog: str, log_name: str) -> Iterator[str]:
    """``streamlit run app.py`` on 127.0.0.1 and a free port, with ``catalog`` as default."""
    env = {**os.environ, "ICECORE_CATALOG": catalog}
    env.pop("ICECORE_READ_ONLY", None)
    log = (REPO / "test-artifacts").resolve()
    log.mkdir(parents=True, exist_ok=True)
    with streamlit_app(env, log / log_name, start_timeout=60) as (base, _):
        yield base


@pytest.fixture(scope="module")
def server(demo_warehouse: Path) -> Iterator[str]:
    """The app on the fixture warehouse."""
    with _streamlit(str(demo_warehouse), "streamlit.log") as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright (never a downloaded browser)."""
    assert CHROMIUM.exists(), "install Debian's chromium (apt-get install chromium); .ci/run does"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


RUN_STARTS_S = 2.0
"""How long the run an action asks for may take to be reported as started by the server."""

_APP = "[data-testid=stApp]"


def _settle(page: Any) -> None:
    """Wait until the app has finished the run the last action started.

    Conditions, not fixed sleeps: Streamlit's app root says what the script does
    (``data-test-script-state``: running, rerunRequested, notRunning). First the run the
    action asked for is waited for (bounded: an action that asks for none, or a run done
    before the first look, ends that wait), then its end, then no element left stale from
    the run before. Every later ``wait_for`` on the page may take as long as a slow run on
    a loaded machine (120 s).
    """
    page.set_default_timeout(120_000)
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_selector(
            f"{_APP}:not([data-test-script-state=notRunning])",
            state="attached",
            timeout=RUN_STARTS_S * 1000,
        )
    page.wait_for_selector(f"{_APP}[data-test-script-state=notRunning]", state="attached")
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stStatusWidget]')"
        " && !document.querySelector('[data-stale=true]')"
    )


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _go(page: Any, name: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=name, exact=True).click()
    _settle(page)


def _pick(page: Any, where: Any, label: str, option: str | re.Pattern[str]) -> None:
    where.get_by_test_id("stSelectbox").filter(has_text=label).first.click()
    page.get_by_role("option", name=option).first.click()
    _settle(page)


def _metric(page: Any, label: str) -> str:
    text = page.get_by_test_id("stMetric").filter(has_text=label).first.inner_text()
    return text.splitlines()[-1].strip()


def test_an_analyst_walks_from_a_table_to_time_travel(
    spark: Any, server: str, browser: Any
) -> None:
    refs = {
        r.name: r.snapshot_id
        for r in spark.sql("SELECT name, snapshot_id FROM icecore.demo.trips.refs").collect()
    }
    tag = refs["month_end"]
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(server)
    _settle(page)
    _shot(page, "0_tables")
    # The page list opens on the landing page by what it shows, not by its file name.
    links = page.get_by_test_id("stSidebarNav").get_by_role("link")
    assert links.first.inner_text().splitlines()[-1].strip() == "Tables"

    # Pick the table in the sidebar: the URL follows.
    sidebar = page.get_by_test_id("stSidebar")
    _pick(page, sidebar, "Table", re.compile(r"^trips$"))
    assert "table=demo.trips" in page.url
    _go(page, "Overview")
    assert _metric(page, "Data files").replace(",", "") == str(
        spark_count(spark, "SELECT count(*) FROM icecore.demo.trips.data_files")
    )
    _shot(page, "1_overview")

    # History: choose the month_end snapshot and read the table there.
    _go(page, "History")
    page.get_by_role("heading", name="History of demo.trips").wait_for()
    _shot(page, "2_history")
    # Clicking a snapshot on the timeline sets the time selector...
    point = page.locator(".js-plotly-plot path.point").first
    box = point.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    _settle(page)
    assert re.search(r"snapshot=\d+", page.url), page.url
    # ... and so does choosing one in the list: the month_end snapshot.
    _pick(page, page.get_by_test_id("stMain"), "Snapshot", re.compile("month_end"))
    page.get_by_role("button", name="Read the table at this snapshot").click()
    _settle(page)
    assert f"snapshot={tag}" in page.url

    _go(page, "Metadata tree")
    assert _metric(page, "Live files").replace(",", "") == str(
        spark_count(spark, f"SELECT count(*) FROM icecore.demo.trips.files VERSION AS OF {tag}")
    )
    _shot(page, "3_metadata_tree")

    # A filtered scan preview at that snapshot (the time selector followed us here).
    _go(page, "Scan preview")
    assert f"snapshot={tag}" in page.url
    box = page.get_by_label("Filter (a SQL boolean expression)")
    box.fill(FILTER)
    box.press("Enter")
    _settle(page)
    assert "filter=fare+%3E+30" in page.url
    page.get_by_role("button", name="Count rows returned").click()
    _settle(page)
    expected = spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips VERSION AS OF {tag} WHERE {FILTER}"
    )
    assert _metric(page, "Rows returned").replace(",", "") == str(expected)
    _shot(page, "4_scan_preview")

    # Time travel: from the tag to main.
    _go(page, "Time travel")
    main = page.get_by_test_id("stMain")
    _pick(page, main, "From", re.compile(r"^month_end"))
    _pick(page, main, "To", re.compile(r"^main"))
    before = {
        r.file_path: r.record_count
        for r in spark.sql(
            f"SELECT file_path, record_count FROM icecore.demo.trips.data_files VERSION AS OF {tag}"
        ).collect()
    }
    after = {
        r.file_path: r.record_count
        for r in spark.sql(
            "SELECT file_path, record_count FROM icecore.demo.trips.data_files "
            f"VERSION AS OF {refs['main']}"
        ).collect()
    }
    rows_added = sum(after[p] for p in after.keys() - before.keys())
    assert _metric(page, "Rows added").replace(",", "") == str(rows_added)
    _shot(page, "5_time_travel")

    _go(page, "SQL")
    page.get_by_test_id("stDataFrame").first.wait_for()
    _shot(page, "7_sql")
    page.close()


def test_a_data_owner_evolves_a_copy_of_a_table(
    spark: Any, evo: EvoCatalogs, demo_warehouse: Path, browser: Any
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    with _streamlit(copy.catalog, "streamlit-evolution.log") as base:
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(base)
        _settle(page)
        sidebar = page.get_by_test_id("stSidebar")
        _pick(page, sidebar, "Table", re.compile(f"^{copy.table.split('.')[-1]}$"))
        assert "table=" + copy.table in page.url
        _go(page, "Evolution")

        # The form: a new column with a doc. Each entry reruns the dry run.
        for label, value in (("Column name", "note"), ("Doc (optional)", "Said in the browser")):
            box = page.get_by_label(label, exact=True)
            box.fill(value)
            box.press("Enter")
            _settle(page)
        main = page.get_by_test_id("stMain")
        main.get_by_text("added note (id", exact=False).wait_for()
        commit = page.get_by_role("button", name="Commit", exact=True)
        assert commit.is_disabled(), "no commit before the dry run is confirmed"
        before = copy.location()
        _shot(page, "6_evolution")
        assert copy.location() == before, "the dry run wrote nothing"
        assert "note" not in [c[0] for c in describe(spark, copy.spark_name)]

        # Explicit confirmation, then the commit and its result.
        page.get_by_test_id("stCheckbox").filter(has_text="I have read the dry run").click()
        _settle(page)
        commit.click()
        _settle(page)
        success = page.get_by_test_id("stAlertContentSuccess")
        success.wait_for()
        after = copy.location()
        assert after != before and after in success.inner_text()
        _shot(page, "6_evolution_committed")
        page.close()

    # Spark, through its own catalog, reads the evolved table.
    assert ("note", "string") in describe(spark, copy.spark_name)
    rows = spark_count(spark, "SELECT count(*) FROM icecore.demo.trips")
    counted = spark.sql(f"SELECT count(*), count(note) FROM {copy.spark_name}").collect()[0]
    assert tuple(counted) == (rows, 0)


def test_a_data_owner_rolls_back_and_tags_a_copy_of_a_table(
    spark: Any, evo: EvoCatalogs, demo_warehouse: Path, browser: Any
) -> None:
    """On History: roll main back to month_end, then tag that snapshot; Spark sees both refs."""
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    refs = {
        r.name: r.snapshot_id
        for r in spark.sql(f"SELECT name, snapshot_id FROM {copy.spark_name}.refs").collect()
    }
    month_end = refs["month_end"]
    with _streamlit(copy.catalog, "streamlit-refs.log") as base:
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        page.goto(f"{base}/History?catalog={copy.catalog}&table={copy.table}")
        _settle(page)
        main = page.get_by_test_id("stMain")
        _pick(page, main, "Snapshot", re.compile("month_end"))
        commit = page.get_by_role("button", name="Commit", exact=True)
        confirm = page.get_by_test_id("stCheckbox").filter(has_text="I have read the dry run")

        # Roll back: the dry run says where main goes and warns; confirm; commit.
        main.get_by_test_id("stRadio").get_by_text("Roll back main to here").click()
        _settle(page)
        main.get_by_text(f"move branch main: snapshot {refs['main']} -> {month_end}").wait_for()
        assert commit.is_disabled(), "no commit before the dry run is confirmed"
        _shot(page, "2_history_rollback")
        confirm.click()
        _settle(page)
        commit.click()
        _settle(page)
        rolled_back = page.get_by_test_id("stAlertContentSuccess")
        rolled_back.wait_for()
        # The success stays on the page while its commit is the table's current version, so
        # the tag's commit is waited for by an alert naming another metadata file.
        rollback_file = rolled_back.inner_text().rsplit("New metadata file:", 1)[1].strip()
        after_rollback = {
            r.name: r.snapshot_id
            for r in spark.sql(f"SELECT name, snapshot_id FROM {copy.spark_name}.refs").collect()
        }
        assert after_rollback["main"] == month_end

        # Tag the same snapshot.
        main.get_by_test_id("stRadio").get_by_text("Tag this snapshot").click()
        _settle(page)
        box = page.get_by_label("Name of the new tag", exact=True)
        box.fill("reviewed")
        box.press("Enter")
        _settle(page)
        _shot(page, "2_history_tag")
        main.get_by_text(f"create tag reviewed at snapshot {month_end}").wait_for()
        confirm.click()
        _settle(page)
        commit.click()
        _settle(page)
        page.get_by_test_id("stAlertContentSuccess").filter(has_not_text=rollback_file).wait_for()
        page.close()
    tags = spark.sql(
        f"SELECT snapshot_id FROM {copy.spark_name}.refs WHERE name = 'reviewed' AND type = 'TAG'"
    ).collect()
    assert [r.snapshot_id for r in tags] == [month_end]
    assert spark_count(spark, f"SELECT count(*) FROM {copy.spark_name}") == spark_count(
        spark, f"SELECT count(*) FROM {copy.spark_name} VERSION AS OF {month_end}"
    )


def test_a_data_owner_compacts_a_copy_of_a_table(
    spark: Any,
    evo: EvoCatalogs,
    demo_warehouse: Path,
    browser: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    monkeypatch.setenv("ICECORE_JOBS_DIR", str(tmp_path / "jobs"))
    monkeypatch.setenv("ICECORE_SPARK_MASTER", "local[2]")
    monkeypatch.setenv("ICECORE_SPARK_DRIVER_MEMORY", "1g")
    before = copy.location()
    with _streamlit(copy.catalog, "streamlit-maintenance.log") as base:
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        page.goto(f"{base}/Maintenance?catalog={copy.catalog}&table={copy.table}")
        _settle(page)
        main = page.get_by_test_id("stMain")
        main.get_by_text("Recommendations").first.wait_for()
        _pick(page, main, "Job", re.compile(r"^rewrite_data_files"))
        run = page.get_by_role("button", name="Run on Spark")
        assert run.is_disabled(), "no job before the explicit confirmation"
        page.get_by_test_id("stCheckbox").filter(has_text="I understand").click()
        _settle(page)
        # The demo's trips fan out when rewritten: the page runs it only when forced.
        assert run.is_disabled(), "no fan-out rewrite before the force box"
        page.get_by_test_id("stCheckbox").filter(has_text="Run it anyway").click()
        _settle(page)
        run.click()
        # The job runs in the background; the page follows it until it is done.
        main.get_by_text("Before and after").wait_for(timeout=400_000)
        _settle(page)
        _shot(page, "8_maintenance")
        page.close()
    assert copy.location() != before
    files = spark_count(spark, f"SELECT count(*) FROM {copy.spark_name}.data_files")
    rows = spark_count(spark, "SELECT count(*) FROM icecore.demo.trips")
    assert spark_count(spark, f"SELECT count(*) FROM {copy.spark_name}") == rows
    assert files > 0
