"""The Maintenance page: recommendations, a dry run, a confirmed job on Spark, before/after.

The job runs on a SQL-catalog copy of the fixture's trips table (rewrite_manifests adds
manifests into the copy's folder and deletes nothing). Expected numbers come from icecore's
API and from Spark, never from what the page printed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.layout import snapshot_files
from icecore.maintenance import Job, recommendations
from tests.ui.copies import Copy
from tests.ui.helpers import no_problems, open_app, rerun_until
from ui import app
from ui.shell import escape_markdown

pytestmark = pytest.mark.spark

JOB_TIMEOUT = 300


def test_read_only_hides_maintenance(demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    monkeypatch.setenv("ICECORE_CATALOG", str(demo_warehouse))  # the served catalog
    at = open_app(app.MAINTENANCE.file, catalog=str(demo_warehouse), table="demo.trips")
    no_problems(at)
    assert not at.button and not at.checkbox
    assert any("maintenance is hidden" in i.value for i in at.info)


def test_recommend_estimate_confirm_run_and_compare(
    jobs_copy: Copy, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_SPARK_MASTER", "local[2]")
    copy = jobs_copy
    table = icecore.load_table(f"{copy.catalog}::{copy.table}")
    snapshot = table.metadata.current_snapshot()
    assert snapshot is not None
    expected = {
        r.job: r
        for r in recommendations(
            table, table.manifests(snapshot), snapshot_files(table, snapshot), orphans=False
        )
    }

    at = open_app(app.MAINTENANCE.file, catalog=copy.catalog, table=copy.table)
    no_problems(at)
    shown = " ".join(m.value for m in at.markdown)
    for job, rec in expected.items():
        assert f"`{job}`" in shown and escape_markdown(rec.title) in shown
    at.selectbox(key="mt_job").set_value(Job.REWRITE_DATA_FILES).run()
    no_problems(at)
    assert at.button(key="mt_run").disabled, "no run without the confirmation"
    rewrite = expected[Job.REWRITE_DATA_FILES]
    estimate = rewrite.estimate
    assert any(
        f"{estimate['rewritten_files_count']:,}" in df.value.to_string() for df in at.dataframe
    )
    assert any("pipeline.maintenance rewrite_data_files" in c.value for c in at.code)
    # The demo's trips fan out: the page says so, does not call the rewrite recommended,
    # and runs it only once the force box is ticked (the command then says --force).
    assert rewrite.force_reason is not None
    assert any(escape_markdown(rewrite.force_reason) in w.value for w in at.warning)
    options = at.selectbox(key="mt_job").options
    assert "rewrite_data_files" in options, options  # listed, not "(recommended)"
    # Estimates in words and units; the coarser spec first, as a dry-run command.
    shown_estimates = [df.value for df in at.dataframe if "estimate" in df.value.columns]
    assert shown_estimates
    for frame in shown_estimates:
        assert not any(re.fullmatch(r"[a-z]+(_[a-z]+)+", label) for label in frame["estimate"])
    assert any(c.value.startswith("icecore evolve") and "--dry-run" in c.value for c in at.code), [
        c.value for c in at.code
    ]
    at.checkbox(key="mt_confirm").check().run()
    assert at.button(key="mt_run").disabled, "no fan-out rewrite without the force box"
    at.checkbox(key="mt_force").check().run()
    assert any("--force" in c.value for c in at.code)
    at.button(key="mt_run").click().run()
    rerun_until(
        at,
        lambda at: any(
            end in m.value for m in at.markdown for end in ("· succeeded", "· failed", "· lost")
        ),
        "the job never ended",
        JOB_TIMEOUT,
    )
    no_problems(at)
    assert any("· succeeded" in m.value for m in at.markdown), [c.value for c in at.code]
    # Spark's own view: the table moved on by one rewrite_data_files snapshot.
    after = icecore.load_table(f"{copy.catalog}::{copy.table}")
    assert after.metadata.current_snapshot().snapshot_id != snapshot.snapshot_id
    operation = spark.sql(
        f"SELECT operation FROM {copy.spark_name}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0][0]
    assert operation == "replace"
    files = spark.sql(f"SELECT count(*) FROM {copy.spark_name}.data_files").collect()[0][0]
    comparison = {df.value.iloc[0, 0]: df for df in at.dataframe if "measure" in df.value}
    assert "snapshot" in comparison, list(comparison)
    table_rows = comparison["snapshot"].value.set_index("measure")
    assert table_rows.loc["data files", "after"] == str(files)
    assert table_rows.loc["snapshot", "after"] == str(after.metadata.current_snapshot().snapshot_id)
    links = [p for p in at.get("page_link") if "History" in p.proto.label]
    assert links, "a link to the new snapshot in History"
