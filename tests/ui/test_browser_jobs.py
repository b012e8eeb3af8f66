"""A job started in one browser is seen and cancelled from another (Debian's chromium).

Two browser contexts share no cookie or storage, so they are two Streamlit sessions, as two
colleagues are: one starts a compaction of a copy of the trips table on the Maintenance
page, the other opens the page afterwards, sees the job running and cancels it, and both see
it cancelled. The jobs folder (ui/jobs.py) says the same.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.icecore.evolution.conftest import EvoCatalogs
from tests.ui.copies import copy_sql_table
from tests.ui.test_browser import _pick, _settle, _streamlit, browser  # noqa: F401
from ui import jobs

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WAIT_MS = 240_000


def test_a_job_started_in_one_browser_is_seen_and_cancelled_from_another(
    evo: EvoCatalogs,
    demo_warehouse: Path,
    browser: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    monkeypatch.setenv(jobs.JOBS_ENV, str(tmp_path / "jobs"))
    monkeypatch.setenv("ICECORE_SPARK_MASTER", "local[1]")
    monkeypatch.setenv("ICECORE_SPARK_DRIVER_MEMORY", "1g")
    before = copy.location()
    url_path = f"/Maintenance?catalog={copy.catalog}&table={copy.table}"
    with _streamlit(copy.catalog, "streamlit-jobs.log") as base:
        alice = browser.new_context(viewport={"width": 1400, "height": 2200})
        bob = browser.new_context(viewport={"width": 1400, "height": 2200})
        try:
            starter = alice.new_page()
            starter.goto(base + url_path)
            _settle(starter)
            main = starter.get_by_test_id("stMain")
            main.get_by_text("Recommendations").first.wait_for()
            _pick(starter, main, "Job", re.compile(r"^rewrite_data_files"))
            force = starter.get_by_test_id("stCheckbox").filter(has_text="Run it anyway")
            if force.count():  # a rewrite that fans files out asks to be forced
                force.click()
                _settle(starter)
            starter.get_by_test_id("stCheckbox").filter(has_text="I understand").click()
            _settle(starter)
            starter.get_by_role("button", name="Run on Spark").click()
            _settle(starter)
            (job,) = jobs.table_jobs(f"{copy.catalog}::{copy.table}")

            # A second session, opened after the start, sees the job and cancels it.
            other = bob.new_page()
            other.goto(base + url_path)
            _settle(other)
            seen = other.get_by_test_id("stMain")
            seen.get_by_text(re.compile(f"job {job.job_id} · running")).wait_for(timeout=WAIT_MS)
            assert other.get_by_role("button", name="Run on Spark").is_disabled()
            other.get_by_role("button", name="Cancel the job").click()
            seen.get_by_text(re.compile(f"job {job.job_id} · cancelled")).wait_for(timeout=WAIT_MS)
            # The session that started it follows it to the same end, by its own polling.
            main.get_by_text(re.compile(f"job {job.job_id} · cancelled")).wait_for(timeout=WAIT_MS)
            assert not starter.get_by_role("button", name="Cancel the job").count()
        finally:
            alice.close()
            bob.close()
    assert jobs.status(job.job_id).state is jobs.State.CANCELLED
    assert copy.location() == before, "a cancelled rewrite commits nothing"
