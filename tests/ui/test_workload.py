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
from urllib.parse import quote_plus

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


def test_a_served_plan_opens_in_scan_preview_with_its_filter_and_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan id in a link: Scan preview explains the plan serve-rest served (its values).

    An id that is not one (or is hostile) is a warning, and nothing is set.
    """
    from icecore.catalog.report_store import PLAN_ID_KEY, SERVED_PLAN_KEY
    from tests.ui.rows_table import NAME, write_rows_table

    root = tmp_path / "wh"
    write_rows_table(root, tmp_path / "scratch")
    catalog = FilesystemCatalog(str(root))
    snapshot = catalog.load_table(NAME).metadata.current_snapshot()
    assert snapshot is not None
    flt = {
        "type": "and",
        "left": {"type": "gt", "term": "id", "value": 1},
        "right": {"type": "eq", "term": "city", "value": "a'b"},
    }
    report = scan(1, 1, 10, flt)
    report["snapshot-id"] = snapshot.snapshot_id
    report["table-name"] = NAME
    report["metadata"] = {"engine-name": "icecore", SERVED_PLAN_KEY: "true", PLAN_ID_KEY: "p_1-x"}
    store = report_store_for(catalog)
    assert store is not None
    store.append(KeptReport(time.time_ns() // 1_000_000, NAME, None, report))
    monkeypatch.setenv("ICECORE_CATALOG", str(root))
    page = open_app(app.WORKLOAD.file, catalog=str(root), table=NAME)
    no_problems(page)
    served = next(df.value for df in page.dataframe if "open" in df.value.columns)
    link = f"Scan_preview?catalog={quote_plus(str(root))}&table={NAME}&plan=p_1-x"
    assert list(served["open"]) == [link]
    at = open_app(app.SCAN_PREVIEW.file, catalog=str(root), table=NAME, plan="p_1-x")
    no_problems(at)
    assert at.text_input(key="scan_filter").value == "(id > 1 AND city = 'a\\'b')"
    assert at.query_params["snapshot"] == str(snapshot.snapshot_id)
    for hostile in ("nope", "../../etc/passwd", "x" * 500):
        at = open_app(app.SCAN_PREVIEW.file, catalog=str(root), table=NAME, plan=hostile)
        assert any("No plan served" in w.value for w in at.warning)
        assert at.text_input(key="scan_filter").value == ""
