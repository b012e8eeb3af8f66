"""The Maintenance page's policy section: effective values with their source, last jobs.

The policy values are this test's own TOML and table property; the job is written to the
catalog's audit log through the same guarded-catalog calls ``python -m pipeline.maintenance``
makes when run by ``icecore maintain`` (an intent, then a failed outcome).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icecore.access import os_principal
from icecore.catalog import load_catalog
from icecore.catalog.audit_store import audit_sink_for
from icecore.catalog.guarded import guard
from tests.ui.helpers import no_problems, open_app, tiny_warehouse
from ui import app


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
