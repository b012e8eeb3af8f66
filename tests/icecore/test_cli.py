"""``python -m icecore``: JSON out, one sentence and exit 1 on error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def icecore_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icecore", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.spark
def test_tables_and_history_match_spark(spark: Any, demo_warehouse: Path) -> None:
    result = icecore_cli("tables", str(demo_warehouse))
    assert result.returncode == 0, result.stderr
    listed = {row["identifier"] for row in json.loads(result.stdout)}
    spark_tables = {
        f"demo.{r.tableName}" for r in spark.sql("SHOW TABLES IN icecore.demo").collect()
    }
    assert listed == spark_tables

    result = icecore_cli("history", f"{demo_warehouse}::demo.trips")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    expected = {
        r.snapshot_id: (r.parent_id, r.operation)
        for r in spark.sql("SELECT * FROM icecore.demo.trips.snapshots").collect()
    }
    assert {r["snapshot_id"]: (r["parent_id"], r["operation"]) for r in rows} == expected
    refs = {
        r.name: r.snapshot_id for r in spark.sql("SELECT * FROM icecore.demo.trips.refs").collect()
    }
    for name, snapshot_id in refs.items():
        assert name in next(r["refs"] for r in rows if r["snapshot_id"] == snapshot_id)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tables", "/no/such/warehouse"], "does not exist"),
        (["history", "/no/such/warehouse::demo.t"], "does not exist"),
        (["frobnicate"], "invalid choice"),
        (["tables"], "required"),
        (["tables", "postgresql://nobody@127.0.0.1/db"], "not supported yet"),
    ],
)
def test_errors_are_one_sentence(args: list[str], message: str) -> None:
    result = icecore_cli(*args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert result.stdout == ""
