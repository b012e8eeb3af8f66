"""The Maintenance page's policy section: effective values with their source, last jobs.

The policy values are this test's own TOML and table property; the job is written to the
catalog's audit log through the same guarded-catalog calls ``python -m pipeline.maintenance``
makes when run by ``icecore maintain`` (an intent, then a failed outcome).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from icecore.access import os_principal
from icecore.catalog import FilesystemCatalog, TableIdentifier, load_catalog
from icecore.catalog.audit_store import audit_sink_for
from icecore.catalog.guarded import guard
from icecore.failpoints import ENV
from icecore.maintenance_policies import LOCK_ENV, table_lock
from tests.icecore.evolution.hand_table import write_table
from tests.ui.helpers import no_problems, open_app, tiny_warehouse
from ui import app, jobs


def test_the_page_shows_each_policy_s_source_and_the_last_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = tiny_warehouse(tmp_path / "wh")
    metadata = warehouse / "db" / "zones" / "metadata" / "v1.metadata.json"
    raw = json.loads(metadata.read_text())
    raw.setdefault("properties", {})["icecore.policy.expire_retain_last"] = "4"
    metadata.write_text(json.dumps(raw))
    config = tmp_path / "icecore.toml"
    config.write_text('[[policies]]\ntables = ["db.*"]\ncompact_small_file_share = 0.25\n')
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.setenv("ICECORE_CATALOG", str(warehouse))
    catalog = load_catalog(str(warehouse))
    sink = audit_sink_for(catalog)
    assert sink is not None
    guarded = guard(catalog, os_principal(), None, name=catalog.uri, audit=sink, source="cli")
    before = str(metadata)
    event = guarded.record_intent("job:rewrite_data_files", "db.zones", before, "maintain")
    guarded.record_outcome(
        event, "job:rewrite_data_files", "db.zones", "failed", before, None, "master refused"
    )

    at = open_app(app.MAINTENANCE.file, catalog=str(warehouse), table="db.zones")
    no_problems(at)
    frames = [df.value for df in at.dataframe]
    policies = next(f for f in frames if "policy" in f.columns)
    rows = {r["policy"]: r for r in policies.to_dict("records")}
    assert rows["compact_small_file_share"]["value"] == 0.25
    assert rows["compact_small_file_share"]["source"].startswith(str(config))
    assert rows["expire_retain_last"]["value"] == 4
    assert rows["expire_retain_last"]["source"] == (
        "table property icecore.policy.expire_retain_last"
    )
    runs = next(f for f in frames if "job" in f.columns and "result" in f.columns)
    (run,) = runs.to_dict("records")
    assert (run["job"], run["result"], run["details"]) == (
        "rewrite_data_files",
        "failed",
        "master refused",
    )
    assert run["metadata before"] == before


def test_an_app_job_and_icecore_maintain_share_one_lock_per_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(jobs.JOBS_ENV, str(tmp_path / "jobs"))
    monkeypatch.setenv(LOCK_ENV, str(tmp_path / "locks"))
    write_table(tmp_path / "wh", 2)
    catalog = FilesystemCatalog(str(tmp_path / "wh"))
    guarded = guard(catalog, os_principal(), None, name="wh", audit=audit_sink_for(catalog))
    ident = TableIdentifier(("db",), "t")

    def start() -> str:
        argv = ["expire_snapshots", f"{catalog.uri}::db.t", "--dry-run"]
        before = catalog.metadata_location(ident)
        return jobs.launch_maintenance(
            guarded, ident, argv, job="expire_snapshots", table="wh::db.t", before=before
        )

    # icecore maintain holds the table: the app refuses to start a job, and says why.
    with table_lock(catalog.uri, "db.t") as held:
        assert held is not None
        with pytest.raises(jobs.JobRunning, match="icecore maintain is running a job"):
            start()
    # The app's job holds maintain's lock for as long as it runs (stalled here), not longer.
    monkeypatch.setenv(ENV, "job-before-outcome=stall")
    job_id = start()
    deadline = time.monotonic() + 120
    while not any("estimate from metadata" in line for line in jobs.status(job_id).log_tail):
        assert time.monotonic() < deadline, "the job never got to its estimate"
        time.sleep(0.05)
    with table_lock(catalog.uri, "db.t") as held:
        assert held is None
    jobs.cancel(job_id, by="the test")
    while jobs.status(job_id).state is jobs.State.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # The lock goes with the job's last process: the state may say cancelled a moment
    # before the killed process has exited (3.13 CI saw it), so wait for the lock, bounded.
    while True:
        with table_lock(catalog.uri, "db.t") as held:
            if held is not None:
                break
        assert time.monotonic() < deadline, "the cancelled job still holds the table's lock"
        time.sleep(0.05)
