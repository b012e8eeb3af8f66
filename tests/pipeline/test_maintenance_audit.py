"""A maintenance job run by hand records itself in the audit log as the OS user's.

No Spark: a job refused for its options fails before Spark starts, after its start was
recorded; a dry run records nothing (it changes nothing, and must work read-only).
"""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest

from icecore.audit import audit_changes
from icecore.catalog import FilesystemCatalog
from icecore.catalog.audit_store import AUDIT_FILE, JOB_AUDIT_ENV, audit_sink_for
from pipeline import maintenance
from tests.icecore.evolution.hand_table import write_table


def test_a_job_run_by_hand_records_its_start_and_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(JOB_AUDIT_ENV, raising=False)
    folder = write_table(tmp_path, 2)
    assert maintenance.main(["expire_snapshots", str(folder), "--retain-last", "0"]) == 1
    sink = audit_sink_for(FilesystemCatalog(str(tmp_path)))
    assert sink is not None
    events = list(sink.read())
    assert [(e.phase, e.result) for e in events] == [("intent", "started"), ("outcome", "failed")]
    [change] = audit_changes(events)
    assert (change.principal, change.source, change.action, change.table) == (
        getpass.getuser(),
        "cli",
        "job:expire_snapshots",
        "db.t",
    )
    assert change.metadata_before == str(folder / "metadata" / "v1.metadata.json")
    assert "--retain-last must be at least 1" in change.reason


def test_a_dry_run_by_hand_records_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOB_AUDIT_ENV, raising=False)
    folder = write_table(tmp_path, 2)
    assert maintenance.main(["expire_snapshots", str(folder), "--dry-run"]) == 0
    assert not (tmp_path / AUDIT_FILE).exists()
