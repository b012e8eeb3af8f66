"""The Maintenance page: recommendations, a dry run, a confirmed job on Spark, before/after.

The job runs on a SQL-catalog copy of the fixture's trips table (rewrite_manifests adds
manifests into the copy's folder and deletes nothing). Expected numbers come from icecore's
API and from Spark, never from what the page printed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.layout import snapshot_files
from icecore.maintenance import Job, recommendations
from tests.icecore.evolution.conftest import EvoCatalogs
from tests.ui.copies import copy_sql_table
from tests.ui.helpers import no_problems, open_app

pytestmark = pytest.mark.spark

JOB_TIMEOUT = 300


def test_read_only_hides_maintenance(demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    monkeypatch.setenv("ICECORE_CATALOG", str(demo_warehouse))  # the served catalog
    at = open_app("pages/8_Maintenance.py", catalog=str(demo_warehouse), table="demo.trips")
    no_problems(at)
    assert not at.button and not at.checkbox
    assert any("maintenance is hidden" in i.value for i in at.info)


def test_recommend_estimate_confirm_run_and_compare(
    evo: EvoCatalogs,
    demo_warehouse: Path,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    monkeypatch.setenv("ICECORE_JOBS_DIR", str(tmp_path / "jobs"))
    monkeypatch.setenv("ICECORE_SPARK_MASTER", "local[2]")
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    table = icecore.load_table(f"{copy.catalog}::{copy.table}")
    snapshot = table.metadata.current_snapshot()
    assert snapshot is not None
    expected = {
        r.job: r
        for r in recommendations(
            table, table.manifests(snapshot), snapshot_files(table, snapshot), orphans=False
        )
    }

    monkeypatch.setenv("ICECORE_CATALOG", copy.catalog)  # the served catalog
    at = open_app("pages/8_Maintenance.py", catalog=copy.catalog, table=copy.table)
    no_problems(at)
    shown = " ".join(m.value for m in at.markdown)
    for job, rec in expected.items():
        assert f"`{job}`" in shown and rec.title in shown
    at.selectbox(key="mt_job").set_value(Job.REWRITE_DATA_FILES).run()
    no_problems(at)
    assert at.button(key="mt_run").disabled, "no run without the confirmation"
    estimate = expected[Job.REWRITE_DATA_FILES].estimate
    assert any(
        f"{estimate['rewritten_files_count']:,}" in df.value.to_string() for df in at.dataframe
    )
    assert any("pipeline.maintenance rewrite_data_files" in c.value for c in at.code)

    at.checkbox(key="mt_confirm").check().run()
    at.button(key="mt_run").click().run()
    deadline = time.monotonic() + JOB_TIMEOUT
    while time.monotonic() < deadline:
        text = " ".join(m.value for m in at.markdown)
        if "· succeeded" in text or "· failed" in text or "· lost" in text:
            break
        time.sleep(3)
        at.run()
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
