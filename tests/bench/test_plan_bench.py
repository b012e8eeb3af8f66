"""plan_bench end to end on a tiny table: every tool plans, and consumes, the same files.

The table is built by ``bench.tables`` (Iceberg's Java API, no Spark) with 64 files in 4 id
groups over 4 days from 2021-01-01, so the expected counts come from its requested shape, not
from the bench: no filter keeps 64 files, ``sel`` on group 2 keeps that group's 16 (one per
bucket), ``point`` the same 16 (one group, one day).
Iceberg Java runs in its own JVM (py4j), hence ``slow``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.plan_bench import REPO, STREAM, SUMS, TOOLS, filters, java_terms, main, run_tool
from bench.tables import build_table

pytestmark = pytest.mark.slow

FILES = 64
GROUP = 2


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str) -> str:
    """A 64-file, 4-manifest metadata-only table (its folder)."""
    warehouse = tmp_path_factory.mktemp("planbenchwh")
    built = build_table(warehouse, FILES, 16, days=4, name="tiny", progress=lambda _: None)
    return built.metadata


def test_every_tool_consumes_the_same_files(table: str) -> None:
    flt = filters(GROUP)["sel"]
    tools = (*TOOLS, STREAM)
    results = {tool: run_tool(tool, REPO, table, flt) for tool in tools}
    assert {tool: r["files"] for tool, r in results.items()} == dict.fromkeys(tools, 16)
    for key in SUMS:
        assert len({r[key] for r in results.values()}) == 1, key
    assert results["icecore"]["records"] > 0
    assert results["icecore"]["deletes"] == 0  # an append-only table
    ice = results["icecore"]
    assert ice["restart"] > 0 and ice["held_mib"] >= ice["peak_mib"] > 0
    assert results["java"]["held_mib"] > 0 and results["java"]["import"] > 0


def test_the_report_has_one_row_per_filter_with_the_expected_counts(
    table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CACHE_DIR", str(tmp_path / "cache"))  # main() sets it "off"
    record = tmp_path / "results.md"
    argv = ["--table", table, "--runs", "1", "--group", str(GROUP), "--record", str(record)]
    assert main([*argv, "--filters", "none,point"]) == 0
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")
        for line in record.read_text().splitlines()
        if line.startswith("| ") and not line.startswith(("| filter", "| ---"))
    }
    assert {name: row[1] for name, row in rows.items()} == {
        "none": f"{FILES}",
        "point": "16",
    }
    stream_cold_warm_restart = rows["none"][4].split(" / ")  # plan_files() consumed
    assert len(stream_cold_warm_restart) == 3
    assert all(float(s) > 0 for s in stream_cold_warm_restart)
    java_cold_warm = rows["none"][5].split(" / ")
    assert len(java_cold_warm) == 2 and all(float(s) > 0 for s in java_cold_warm)


def test_the_java_filter_grammar_takes_the_bench_filters_and_refuses_the_rest() -> None:
    assert java_terms("") == []
    assert java_terms("id >= 5 AND pickup_ts < '2021-01-02T00:00:00+00:00'") == [
        ("id", ">=", 5),
        ("pickup_ts", "<", "2021-01-02T00:00:00+00:00"),
    ]
    for name, sql in filters().items():
        if sql:
            assert java_terms(sql.format(day="2021-01-01", next_day="2021-01-02")), name
    with pytest.raises(ValueError, match="column op literal"):
        java_terms("id = 1 OR id = 2")
    with pytest.raises(ValueError):
        java_terms("id IN (1, 2)")
