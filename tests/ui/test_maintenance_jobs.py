"""Jobs belong to the server: two AppTest sessions on one table share its jobs.

A real ``rewrite_data_files`` on a SQL-catalog copy of the fixture's trips table, started
from one session's page: a second session sees it running with Spark's stage and task
progress, is refused a second start in one sentence, cancels it, and is shown the files the
job left. Those are checked against the folder listed here and the table's metadata read by
Spark (``all_files``, ``all_delete_files``, ``all_manifests``, ``snapshots``,
``metadata_log_entries``), never against the code under test.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from icecore.health import format_bytes
from icecore.maintenance import Job
from tests.ui.copies import Copy
from tests.ui.helpers import no_problems, open_app, rerun_until, texts
from ui import app, jobs

pytestmark = pytest.mark.spark

TIMEOUT_S = 300


def _strip(path: str) -> str:
    return path.removeprefix("file:").replace("//", "/")


def _unreferenced_since(spark: Any, copy: Copy, since_ms: int) -> set[str]:
    """Files under the copy's folder written since ``since_ms`` that no metadata reaches.

    Hidden files (``.`` or ``_`` first, as Hadoop's checksums) are not the table's: Spark's
    ``remove_orphan_files`` skips them, and deleting a file deletes its checksum.
    """
    name = copy.spark_name
    referenced: set[str] = set()
    for query in (
        f"SELECT file_path FROM {name}.all_files",
        f"SELECT file_path FROM {name}.all_delete_files",
        f"SELECT path FROM {name}.all_manifests",
        f"SELECT manifest_list FROM {name}.snapshots",
        f"SELECT file FROM {name}.metadata_log_entries",
    ):
        referenced |= {_strip(str(r[0])) for r in spark.sql(query).collect()}
    found = set()
    for root, _, names in os.walk(copy.folder):
        for file in names:
            path = Path(root) / file
            if file.startswith((".", "_")) or path.stat().st_mtime * 1000 < since_ms:
                continue
            if _strip(str(path)) not in referenced:
                found.add(_strip(str(path)))
    return found


def test_a_second_session_sees_refuses_and_cancels_the_job_and_names_its_leftovers(
    jobs_copy: Copy, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_SPARK_MASTER", "local[1]")
    copy = jobs_copy
    table_key = f"{copy.catalog}::{copy.table}"
    first = open_app(app.MAINTENANCE.file, catalog=copy.catalog, table=copy.table)
    second = open_app(app.MAINTENANCE.file, catalog=copy.catalog, table=copy.table)
    no_problems(second)
    assert "Jobs on this table" not in texts(second)

    first.selectbox(key="mt_job").set_value(Job.REWRITE_DATA_FILES).run()
    if any(c.key == "mt_force" for c in first.checkbox):  # a rewrite that fans files out
        first.checkbox(key="mt_force").check().run()
    first.checkbox(key="mt_confirm").check().run()
    first.button(key="mt_run").click().run()
    no_problems(first)
    (job,) = jobs.table_jobs(table_key)
    assert job.state is jobs.State.RUNNING

    # The second session never started it, and sees it, running, with its Spark progress.
    second.run()
    no_problems(second)
    assert f"job `{job.job_id}` · running" in texts(second)
    assert second.button(key="mt_run").disabled
    assert job.job_id in " ".join(i.value for i in second.info)
    # A start that raced past the page's check is refused by the table's lock: one sentence.
    with pytest.raises(jobs.JobRunning) as refused:
        jobs.launch(["0"], module="tests.ui.quick_job", one_per_table=True, table=table_key)
    assert job.job_id in str(refused.value)
    # Cancel once Spark has written rewritten files and finished a task (a task stopped
    # while writing deletes its own file; one that finished leaves its files behind).
    data = copy.folder / "data"
    deadline = time.monotonic() + TIMEOUT_S
    while not (
        data.exists()
        and any(f.suffix == ".parquet" for f in data.rglob("*"))
        and _tasks_done(jobs.status(job.job_id)) > 0
    ):
        assert jobs.status(job.job_id).state is jobs.State.RUNNING, jobs.status(job.job_id)
        assert time.monotonic() < deadline, "the rewrite never wrote a file"
        time.sleep(0.1)
    second.run()
    progress = [p.proto.text for p in second.get("progress")] + [c.value for c in second.caption]
    assert any("Spark job" in t and "tasks" in t for t in progress), progress
    second.button(key=f"mt_cancel_{job.job_id}").click().run()
    rerun_until(second, lambda at: f"job `{job.job_id}` · cancelled" in texts(at), "cancelled")
    no_problems(second)
    assert jobs.status(job.job_id).state is jobs.State.CANCELLED
    rerun_until(first, lambda at: f"job `{job.job_id}` · cancelled" in texts(at), "first sees it")
    assert "Nothing was committed" in texts(second)
    second.selectbox(key="mt_job").set_value(Job.REWRITE_DATA_FILES).run()
    if any(c.key == "mt_force" for c in second.checkbox):  # as the first session chose
        second.checkbox(key="mt_force").check().run()
    second.checkbox(key="mt_confirm").check().run()
    assert not second.button(key="mt_run").disabled, "the table is free again"

    expected = _unreferenced_since(spark, copy, job.started_ms)
    listed = {
        _strip(path) for df in second.dataframe if "file" in df.value for path in df.value["file"]
    }
    assert listed == expected
    if not expected:  # Spark's shutdown got to abort every file group: the page says so
        assert "It left no file under the table's location" in texts(second)
        return
    size = format_bytes(sum(os.path.getsize(p) for p in expected))
    assert f"It left {len(expected):,} files ({size})" in texts(second)
    assert any(f"remove_orphan_files {table_key} --older-than" in c.value for c in second.code)


def _tasks_done(status: jobs.JobStatus) -> int:
    """Spark tasks the job reports completed (its progress file; 0 before the first)."""
    progress = status.progress or {}
    return sum(s["completed"] for j in progress.get("jobs", []) for s in j["stages"])
