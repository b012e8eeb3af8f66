"""The page bench drives the real app in Debian's chromium on a tiny metadata-only table.

One page (Overview) besides the landing page, first and second visit, so it stays well under a
minute; the shape of the report and the sanity of its numbers are checked, not their size.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.app_bench import LANDING, PageResult, Visit, failed, markdown

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")


def test_app_bench_times_pages_in_chromium(tmp_path: Path) -> None:
    assert CHROMIUM.exists(), "install Debian's chromium (apt-get install chromium); .ci/run does"
    warehouse = tmp_path / "wh"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.tables",
            "--warehouse",
            str(warehouse),
            "--files",
            "64",
            "--files-per-manifest",
            "16",
            "--name",
            "tiny",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    out = tmp_path / "report.json"
    record = tmp_path / "results.md"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.app_bench",
            "--catalog",
            str(warehouse / "hadoop"),
            "--table",
            "bench.tiny",
            "--pages",
            "Overview",
            "--no-second-user",
            "--timeout",
            "120",
            "--json",
            str(out),
            "--record",
            str(record),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert json.loads(done.stdout.strip().splitlines()[-1]) == report
    assert [p["page"] for p in report["pages"]] == [LANDING, "Overview"]
    for page in report["pages"]:
        assert page["second_user"] is None
        for visit in (page["first"], page["second"]):
            assert visit["seconds"] > 0
            assert visit["peak_rss_mib"] > 0
            assert visit["vmhwm_mib"] > 0
            assert visit["errors"] == []
    assert report["server_peak_rss_mib"] >= report["pages"][1]["first"]["peak_rss_mib"]
    text = record.read_text()
    assert "### bench.tiny" in text
    assert "| Overview |" in text
    # The fresh cache folder is removed afterwards.
    assert not Path(report["server_log"]).parent.joinpath("cache").exists()


def _visit(seconds: float | None, errors: list[str] | None = None) -> Visit:
    return Visit(seconds, 100.0, 120.0, False, [], errors or [])


def test_an_error_box_or_a_timeout_fails_the_run() -> None:
    fine = PageResult("Overview", _visit(1.0), _visit(0.5), None)
    assert not failed([fine])
    shown = PageResult(
        "SQL",
        _visit(1.0),
        _visit(0.5, ["error: Could not parse the metadata file v3.metadata.json."]),
    )
    assert failed([fine, shown])
    hung = PageResult("History", _visit(None, ["not finished in 5 s"]))
    assert failed([hung])
    # On a metadata-only table, reading rows finds no data file: tolerated only when asked,
    # and only that error.
    missing = PageResult("SQL", _visit(2.0, ["error\n\nFile /t/data/a.parquet does not exist."]))
    assert failed([missing])
    assert not failed([fine, missing], missing_files_ok=True)
    assert failed([missing, shown], missing_files_ok=True)
    assert failed([hung], missing_files_ok=True)
    report = {
        "table": "bench.t",
        "date": "d",
        "catalog": "c",
        "filter": None,
        "commit": "abc",
        "machine": "m",
        "load_before": "1",
        "load_after": "2",
        "server_peak_rss_mib": 1.0,
        "server_vmhwm_mib": 1.0,
        "seconds": 1.0,
    }
    text = markdown(report, [fine, shown, hung])
    assert "| History | timeout | – | – |" in text
    assert "- SQL (second): error: Could not parse the metadata file v3.metadata.json." in text
