"""Spark's stage and task progress, written by a job while it runs (pipeline/progress.py).

A real rewrite on a SQL-catalog copy of the fixture's trips table, watched through the
session's status tracker. The numbers come from Spark itself; the test checks they reach the
progress file while the job runs and that the last record holds every stage, each finished.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from icecore.maintenance import Job
from pipeline.maintenance import parser, run_job
from pipeline.progress import PROGRESS_ENV, SparkProgress, reported
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.ui.copies import copy_sql_table

pytestmark = pytest.mark.spark

RUNNING_LINE = re.compile(r"Spark job \d+: stage \d+ of ~\d+, tasks \d+/\d+ \(\d+ running\)")


@pytest.fixture(scope="module")
def evo(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    return register_catalogs(spark, tmp_path_factory.mktemp("progress"))


def test_a_rewrite_writes_its_stages_and_tasks_while_it_runs(
    evo: EvoCatalogs, demo_warehouse: Path, spark: Any, tmp_path: Path
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    arg = f"{evo.sql_uri}::{copy.table}"
    path = tmp_path / "progress.json"
    seen: list[dict[str, Any]] = []
    stop = threading.Event()

    def watch() -> None:  # what a page polling the job folder would read
        while not stop.wait(0.02):
            try:
                seen.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    job = Job.REWRITE_DATA_FILES
    with SparkProgress(spark, path, interval_s=0.1):
        out = run_job(spark, job, arg, parser().parse_args([str(job), arg]), lambda _: None)
    stop.set()
    watcher.join()
    assert out["result"]["rewritten_data_files_count"] > 0

    lines = [r["line"] for r in seen]
    assert any(RUNNING_LINE.fullmatch(line.split("; ")[0]) for line in lines), lines[-5:]
    final = json.loads(path.read_text())
    assert final["finished"] is True
    assert final["jobs"], "the rewrite ran Spark jobs"
    for spark_job in final["jobs"]:
        assert spark_job["status"] == "SUCCEEDED"
        assert spark_job["stages"], spark_job
        for stage in spark_job["stages"]:
            assert stage["tasks"] > 0 and stage["completed"] == stage["tasks"], stage
            assert not stage["running"] and stage["active"] == 0
    # Spark's own count of the jobs it ran for the call equals the jobs recorded.
    ids = [j["job_id"] for j in final["jobs"]]
    assert ids == list(range(ids[0], ids[0] + len(ids)))
    tasks = sum(s["tasks"] for j in final["jobs"] for s in j["stages"])
    assert (
        final["line"]
        == f"{len(ids):,} of {len(ids):,} Spark jobs done, tasks {tasks:,}/{tasks:,} overall"
    )


def test_without_the_apps_progress_file_nothing_is_written(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    assert reported(spark, lambda: spark.range(10).count()) == 10
    monkeypatch.setenv(PROGRESS_ENV, str(tmp_path / "progress.json"))
    assert reported(spark, lambda: spark.range(10).count()) == 10
    final = json.loads((tmp_path / "progress.json").read_text())
    # A count is one Spark job, or two with adaptive execution (its shuffle stage, then the
    # result): every one of them, and only them, after the first count.
    statuses = [j["status"] for j in final["jobs"]]
    assert final["finished"] and 1 <= len(statuses) <= 2 and set(statuses) == {"SUCCEEDED"}
