"""The Workload page (AppTest) over reports kept beside a real warehouse folder.

The reports are the REST spec's ScanReport/CommitReport shapes with Iceberg Java's metric
names, written into the folder's report store as ``serve-rest`` writes them; every number
the page must show is one the test put in a report. A column name an engine sent is
shown as text, never as Markdown.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest

from icecore.catalog import FilesystemCatalog
from icecore.catalog.report_store import KeptReport, report_store_for
from tests.icecore.catalog.test_report_store import COMMIT, SCAN
from tests.icecore.evolution.hand_table import write_table
from tests.ui.helpers import drive, no_problems, open_app
from ui import app

EVIL = "[x](http://evil.example)"


def scan(result: int, skipped: int, size: int, flt: Any) -> dict[str, Any]:
    report = copy.deepcopy(SCAN)
    report["filter"] = flt
    report["metrics"]["result-data-files"]["value"] = result
    report["metrics"]["skipped-data-files"]["value"] = skipped
    report["metrics"]["total-file-size-in-bytes"]["value"] = size
    return report


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    root = tmp_path / "wh"
    write_table(root, 2)
    store = report_store_for(FilesystemCatalog(str(root)))
    assert store is not None
    now = time.time_ns() // 1_000_000
    reports = [
        scan(3, 7, 4096, {"type": "gt", "term": "id", "value": "(3-digit-int)"}),
        scan(2, 8, 2048, {"type": "gt", "term": "id", "value": "(3-digit-int)"}),
        scan(10, 0, 9999, True),
        scan(1, 9, 100, {"type": "eq", "term": EVIL, "value": "(hash-0000abcd)"}),
    ]
    for n, report in enumerate(reports):
        store.append(KeptReport(now + n, "db.t", "Ann (u-ann)", report))
    store.append(KeptReport(now + 9, "db.t", None, COMMIT))
    return root


ORDER = ("over_time", "filters", "columns", "full", "scans", "commits")
"""The page's tables of one table's workload, in the order it shows them."""


def frame(at: Any, name: str) -> list[dict[str, Any]]:
    index = 0 if name == "summary" else ORDER.index(name)
    return list(at.dataframe[index].value.to_dict("records"))


def test_the_page_is_listed() -> None:
    assert app.WORKLOAD in app.PAGES


def test_the_page_shows_what_engines_reported(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(warehouse))
    at = open_app(app.WORKLOAD.file, catalog=str(warehouse), table="db.t")
    no_problems(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Scans": "4", "Full-table scans": "1", "Commits": "1", "Filters seen": "3"}
    groups = {g["filter"]: g for g in frame(at, "filters")}
    grouped = groups["id > (3-digit-int)"]
    assert (grouped["scans"], grouped["result_data_files"], grouped["skipped_data_files"]) == (
        2,
        3 + 2,
        7 + 8,
    )
    assert grouped["total_file_size_in_bytes"] == 4096 + 2048
    full = frame(at, "full")
    assert [(s["result_data_files"], s["total_file_size_in_bytes"]) for s in full] == [(10, 9999)]
    commits = frame(at, "commits")
    assert [(c["attempts"], c["duration_ms"]) for c in commits] == [(2, 5.0)]
    assert {c["column"]: c["scans"] for c in frame(at, "columns")} == {"id": 2, EVIL: 1}
    assert not any("evil.example" in m.value for m in at.markdown)
    # The catalog summary when no table is chosen.
    drive(at, ("selectbox", "wl_table", "All tables"))
    no_problems(at)
    (row,) = frame(at, "summary")
    assert (row["table"], row["scans"], row["full_scans"], row["commits"]) == ("db.t", 4, 1, 1)


def test_a_catalog_without_reports_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_table(tmp_path, 2)
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path))
    at = open_app(app.WORKLOAD.file)
    no_problems(at)
    assert "No reports yet" in at.info[0].value
