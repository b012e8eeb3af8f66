"""In chromium: roll main back on History, then undo it with Set current; Spark agrees.

A copy of the demo's trips table is served by its own app (the fixture warehouse never
changes). The undo is offered right under the rollback's outcome, has its own dry run and
needs its own confirmation; afterwards Spark, through its catalog, sees the original current
snapshot and reads the same rows as before the rollback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.icecore.evolution.conftest import EvoCatalogs
from tests.ui.copies import copy_sql_table
from tests.ui.helpers import spark_count
from tests.ui.test_browser import _pick, _settle, _shot, _streamlit, browser  # noqa: F401

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _main(spark: Any, name: str) -> int:
    rows = spark.sql(f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'").collect()
    return int(rows[0].snapshot_id)


def test_a_rollback_is_undone_with_set_current(
    spark: Any,
    evo: EvoCatalogs,
    demo_warehouse: Path,
    browser: Any,  # noqa: F811
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    name = copy.spark_name
    original = _main(spark, name)
    rows = spark_count(spark, f"SELECT count(*) FROM {name}")
    (month_end,) = spark.sql(
        f"SELECT snapshot_id FROM {name}.refs WHERE name = 'month_end'"
    ).collect()[0]
    with _streamlit(copy.catalog, "streamlit-undo.log") as base:
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        page.goto(f"{base}/History?catalog={copy.catalog}&table={copy.table}")
        _settle(page)
        # The view's link, to copy from the sidebar: this page's address and its parameters.
        link = page.get_by_test_id("stSidebar").get_by_test_id("stCode").inner_text().strip()
        assert link.startswith(f"{base}/History?") and f"table={copy.table}" in link, link
        main = page.get_by_test_id("stMain")
        _pick(page, main, "Snapshot", re.compile("month_end"))
        commit = page.get_by_role("button", name="Commit", exact=True)
        confirm = page.get_by_test_id("stCheckbox").filter(has_text="I have read the dry run")

        main.get_by_test_id("stRadio").get_by_text("Roll back main to here").click()
        _settle(page)
        main.get_by_text(f"move branch main: snapshot {original} -> {month_end}").wait_for()
        confirm.click()
        _settle(page)
        commit.click()
        _settle(page)
        page.get_by_test_id("stAlertContentSuccess").wait_for()
        assert _main(spark, name) == month_end

        # The undo, right under the outcome: its dry run, its confirmation, its commit.
        undo = page.get_by_role("button", name=f"Undo: set main back to snapshot {original}")
        undo.click()
        _settle(page)
        main.get_by_text(f"move branch main: snapshot {month_end} -> {original}").wait_for()
        assert commit.is_disabled(), "no commit before the undo's dry run is confirmed"
        assert _main(spark, name) == month_end, "the undo's dry run wrote nothing"
        _shot(page, "2_history_undo")
        confirm.click()
        _settle(page)
        commit.click()
        _settle(page)
        page.get_by_test_id("stAlertContentSuccess").wait_for()
        page.close()
    assert _main(spark, name) == original
    assert spark_count(spark, f"SELECT count(*) FROM {name}") == rows
