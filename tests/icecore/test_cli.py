"""``python -m icecore``: JSON out, one sentence and exit 1 on error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def icecore_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m icecore ARGS`` from the checkout (``env``: the whole environment)."""
    return subprocess.run(
        [sys.executable, "-m", "icecore", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
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
        (["tables", "postgresql://nobody@127.0.0.1:1/db"], 'database "db" on 127.0.0.1:1'),
    ],
)
def test_errors_are_one_sentence(args: list[str], message: str) -> None:
    result = icecore_cli(*args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert result.stdout == ""


@pytest.mark.spark
def test_plan_and_scan(spark: Any, demo_warehouse: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    table = f"{demo_warehouse}::demo.trips"
    result = icecore_cli("plan", table, "--ref", "month_end", "--filter", "trip_id < 2000000")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (
        plan["snapshot_id"]
        == spark.sql(
            "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'"
        ).collect()[0][0]
    )
    assert plan["data_files"] and set(plan["delete_files"]) <= {
        d for t in plan["tasks"] for d in t["delete_files"]
    }
    assert plan["report"]["data_files"]["planned"] == len(plan["data_files"])

    output = tmp_path / "out.parquet"
    result = icecore_cli(
        "scan", table, "--filter", "fare > 40", "--columns", "trip_id,fare", "--output", str(output)
    )
    assert result.returncode == 0, result.stderr
    written = pq.read_table(output)
    expected = spark.sql("SELECT trip_id, fare FROM icecore.demo.trips WHERE fare > 40").collect()
    assert sorted(written.column("trip_id").to_pylist()) == sorted(r.trip_id for r in expected)
    assert json.loads(result.stdout)["rows"] == len(expected)

    result = icecore_cli(
        "scan", table, "--filter", "fare >> 3", "--output", str(tmp_path / "x.parquet")
    )
    assert result.returncode == 1 and "fare >> 3" in result.stderr
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.spark
def test_changelog_command(demo_warehouse: Path, tmp_path: Path) -> None:
    import icecore

    table = f"{demo_warehouse}/hadoop::demo.customers_v1"
    expected = icecore.load_table(table).changelog(None)
    result = icecore_cli("changelog", table, "start", "--limit", "5")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == min(5, expected.num_rows)
    output = tmp_path / "changes.parquet"
    result = icecore_cli("changelog", table, "start", "--output", str(output))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rows"] == expected.num_rows
    result = icecore_cli("changelog", table, "no-such-ref")
    assert result.returncode == 1 and "no-such-ref" in result.stderr


@pytest.mark.spark
def test_count_command(spark: Any, demo_warehouse: Path) -> None:
    """``icecore count``: Spark's count(*) at the ref and filter, and how files were counted."""
    where = "vendor_id = 2"
    result = icecore_cli(
        "count", f"{demo_warehouse}::demo.trips", "--ref", "month_end", "--filter", where
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    source = "icecore.demo.trips VERSION AS OF 'month_end'"
    assert out["count"] == spark.sql(f"SELECT count(*) FROM {source} WHERE {where}").first()[0]
    refs = spark.sql("SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'")
    assert out["snapshot_id"] == refs.first()[0]
    assert set(out) == {
        "count",
        "snapshot_id",
        "from_metadata_files",
        "from_delete_files",
        "read_files",
    }
    assert out["read_files"] > 0  # month_end predates vendor_id's partition field: values decide
