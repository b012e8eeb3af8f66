"""The before/after core bench on a tiny table, so it does not rot and measures the right tree.

Expected file counts come from the table's requested shape (``bench.tables``: 64 files over
4 days from 2021-01-01, so plan_bench's ``time10`` window, in June, keeps none), never from
the bench's output. The "after" tree here is a copy of this repository in a temporary folder:
a child that imported the repository's own ``icecore`` instead of its tree's would be caught.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.core_bench import main, run_tree
from bench.tables import build_table

REPO = Path(__file__).resolve().parents[2]
# Bench harness runs (each builds a table, then times tools): the full gate's.
pytestmark = pytest.mark.slow

FILES = 64


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str) -> str:
    """A 64-file, 4-manifest metadata-only table (its folder)."""
    warehouse = tmp_path_factory.mktemp("corebenchwh")
    built = build_table(warehouse, FILES, 16, days=4, name="tiny", progress=lambda _: None)
    return built.table


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second source tree: this repository's ``icecore`` and ``bench`` packages, copied."""
    tree = tmp_path_factory.mktemp("core-tree")
    for package in ("icecore", "bench"):
        shutil.copytree(
            REPO / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return tree


def test_a_run_plans_every_file_with_the_tree_it_is_given(table: str, copy: Path) -> None:
    result = run_tree(copy, table, "")
    assert Path(result["icecore"]) == copy.resolve()
    assert result["files"] == FILES
    assert result["cold"] >= result["cold_plan"] > 0
    assert result["warm"] > 0
    assert result["peak_mib"] > 0


def test_the_report_pairs_both_trees_per_filter(
    table: str, copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "results.md"
    argv = ["--before", str(REPO), "--after", str(copy), "--table", table, "--runs", "2"]
    assert main([*argv, "--filters", "none,time10", "--record", str(record)]) == 0
    rows = [line for line in record.read_text().splitlines() if line.startswith("| none ")]
    assert len(rows) == 10  # one row per figure
    assert all(row.split(" | ")[1] == f"{FILES}" for row in rows)
    time10 = [line for line in record.read_text().splitlines() if line.startswith("| time10 ")]
    assert time10 and all(row.split(" | ")[1] == "0" for row in time10)
    assert "DISAGREE" not in capsys.readouterr().out
