"""Maintenance jobs in the audit log: the owner role checked at launch, start and end recorded.

Real jobs (``python -m pipeline.maintenance`` through :func:`ui.jobs.launch_maintenance`) on
the hand-written table in a warehouse folder: dry runs and refused options, which end
without Spark. A job stalled at a failpoint before its outcome and then cancelled (its
process group killed) stays an intent: ``unknown``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from icecore.access import Grant, Policy, Principal, Role
from icecore.audit import audit_changes
from icecore.catalog import FilesystemCatalog, TableIdentifier
from icecore.catalog.audit_store import AUDIT_FILE, audit_sink_for
from icecore.catalog.guarded import GuardedCatalog, guard
from icecore.errors import Forbidden
from icecore.failpoints import ENV
from tests.icecore.evolution.hand_table import write_table
from ui import jobs

T = TableIdentifier(("db",), "t")
ANN = Principal(subject="u-ann", name="Ann", groups=("owners",), source="oidc")
BOB = Principal(subject="u-bob", name="Bob", groups=("analysts",), source="oidc")
POLICY = Policy((Grant("owners", Role.OWNER), Grant("analysts", Role.READER)))


@pytest.fixture(autouse=True)
def _jobs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "jobs"
    monkeypatch.setenv(jobs.JOBS_ENV, str(folder))
    return folder


def catalog_as(root: Path, who: Principal) -> GuardedCatalog:
    catalog = FilesystemCatalog(str(root))
    return guard(catalog, who, POLICY, name="wh", audit=audit_sink_for(catalog), source="app")


def finished(job_id: str, timeout_s: float = 120.0) -> jobs.JobStatus:
    deadline = time.monotonic() + timeout_s
    while (found := jobs.status(job_id)).state is jobs.State.RUNNING:
        assert time.monotonic() < deadline, f"job {job_id} still running"
        time.sleep(0.05)
    return found


def start(catalog: GuardedCatalog, *options: str, job: str = "expire_snapshots") -> str:
    key = f"{catalog.name}::db.t"
    argv = [job, f"{catalog.inner.uri}::db.t", *options]  # type: ignore[attr-defined]
    before = catalog.metadata_location(T)
    return jobs.launch_maintenance(catalog, T, argv, job=job, table=key, before=before)


def test_an_owners_job_records_its_start_and_its_end(tmp_path: Path) -> None:
    folder = write_table(tmp_path / "wh", 2)
    catalog = catalog_as(tmp_path / "wh", ANN)
    before = str(folder / "metadata" / "v1.metadata.json")
    done = finished(start(catalog, "--dry-run"))
    assert done.state is jobs.State.SUCCEEDED, done
    failed = finished(start(catalog, "--retain-last", "0"))
    assert failed.state is jobs.State.FAILED
    sink = audit_sink_for(catalog)
    assert sink is not None
    events = list(sink.read())
    assert [(e.phase, e.result) for e in events] == [
        ("intent", "started"),
        ("outcome", "committed"),
        ("intent", "started"),
        ("outcome", "failed"),
    ]
    # the job process wrote each outcome under the id the launcher's intent has
    assert events[0].id == events[1].id and events[2].id == events[3].id
    assert {(e.principal, e.source, e.action) for e in events} == {
        ("Ann (u-ann)", "app", "job:expire_snapshots")
    }
    newest, oldest = audit_changes(events)
    assert (oldest.result, oldest.metadata_before, oldest.metadata_after) == (
        "committed",
        before,
        before,  # a dry run changes nothing
    )
    assert (newest.result, newest.metadata_after) == ("failed", None)
    assert "--retain-last must be at least 1" in newest.reason
    assert "--retain-last 0" in newest.summary


def test_a_reader_cannot_launch_a_job_and_the_refusal_is_recorded(tmp_path: Path) -> None:
    write_table(tmp_path / "wh", 2)
    catalog = catalog_as(tmp_path / "wh", BOB)
    with pytest.raises(Forbidden, match="owner"):
        start(catalog, "--dry-run")
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").glob("*/job.json"))
    sink = audit_sink_for(catalog)
    assert sink is not None
    [change] = audit_changes(sink.read())
    assert (change.result, change.principal, change.table) == ("refused", "Bob (u-bob)", "db.t")


def test_a_job_killed_before_its_end_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_table(tmp_path / "wh", 2)
    catalog = catalog_as(tmp_path / "wh", ANN)
    monkeypatch.setenv(ENV, "job-before-outcome=stall")
    job_id = start(catalog, "--dry-run")
    deadline = time.monotonic() + 120
    while not any("estimate from metadata" in line for line in jobs.status(job_id).log_tail):
        assert time.monotonic() < deadline, "the job never got to its estimate"
        time.sleep(0.05)
    jobs.cancel(job_id, by="the test")
    assert finished(job_id).state is jobs.State.CANCELLED
    lines = (tmp_path / "wh" / AUDIT_FILE).read_text().splitlines()
    assert len(lines) == 1  # the intent alone
    [change] = audit_changes(audit_sink_for(catalog).read())  # type: ignore[union-attr]
    assert (change.result, change.action) == ("unknown", "job:expire_snapshots")
