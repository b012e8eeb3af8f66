"""The REST bench's setup and a cheap measurement on a tiny table, so the bench does not rot.

The table is built by ``bench.tables`` (Iceberg's Java API, no Spark), registered in a SQLite
catalog and served by ``serve-rest``, as the bench does it. Expected values come from the
requested table shape and from the REST protocol (one ``GET /v1/config`` when a catalog is
opened, one ``loadTable`` per load, nothing while planning), never from the bench's output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.rest_bench import TOOLS, Served, main, measure, register, serve, stop
from bench.tables import build_table

# Bench harness runs (each builds a table, then times tools): the full gate's.
pytestmark = pytest.mark.slow

FILES = 64
NAME = "tiny"
LOAD = f"GET /v1/namespaces/bench/tables/{NAME}"


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str) -> str:
    """A 64-file, 4-manifest metadata-only table (its folder)."""
    warehouse = tmp_path_factory.mktemp("restbenchwh")
    built = build_table(warehouse, FILES, 16, days=4, name=NAME, progress=lambda _: None)
    return built.table


@pytest.fixture(scope="module")
def served(table: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    work = tmp_path_factory.mktemp("restbench")
    db, identifier = register(table, work)
    assert identifier == f"bench.{NAME}"
    server = serve(db, identifier, work)
    yield server
    stop(server)


@pytest.mark.parametrize("tool", TOOLS)
def test_each_tool_plans_every_file_with_one_load_per_load(served: Served, tool: str) -> None:
    result = measure(tool, str(served.db), served.url, served.identifier, "")
    assert result["files"] == FILES
    if tool == "sql":
        expected: dict[str, list[str]] = {s: [] for s in ("open", "load", "plan", "load2", "plan2")}
    else:
        expected = {
            "open": ["GET /v1/config"],
            "load": [LOAD],
            "plan": [],
            "load2": [LOAD],
            "plan2": [],
        }
    assert result["requests"] == expected
    assert result["cold"] > 0 and result["warm"] > 0


def test_a_filter_prunes_the_same_for_every_tool(served: Served) -> None:
    # Day 0 of 4: the builder spreads the 4 id groups (16 files each) one per day.
    day0 = "pickup_ts >= '2021-01-01T00:00:00+00:00' AND pickup_ts < '2021-01-02T00:00:00+00:00'"
    counts = {t: measure(t, str(served.db), served.url, served.identifier, day0) for t in TOOLS}
    assert {t: r["files"] for t, r in counts.items()} == dict.fromkeys(TOOLS, 16)


def test_the_command_line_runs_and_records(table: str, tmp_path: Path) -> None:
    record = tmp_path / "results.md"
    assert main(["--table", table, "--runs", "1", "--record", str(record)]) == 0
    text = record.read_text()
    assert f"| none | {FILES} | rest |" in text
    assert "REST overhead (rest / sql)" in text
    assert "| 1 / 1 / 0 / 1 / 0 |" in text
