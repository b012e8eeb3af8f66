"""User SQL over metadata tables and scan rows: answers equal Spark's, and nothing escapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore.errors import IcecoreError, ValidationError
from icecore.sql import SqlLimits, query_arrow, run_sql


@pytest.mark.spark
def test_sql_answers_equal_spark(spark: Any, demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    ours = run_sql(
        t, "SELECT payment_type, count(*) AS n FROM rows GROUP BY 1", filter="fare > 10"
    ).to_pylist()
    theirs = spark.sql(
        "SELECT payment_type, count(*) AS n FROM icecore.demo.trips WHERE fare > 10 GROUP BY 1"
    ).collect()
    assert {(r["payment_type"], r["n"]) for r in ours} == {(r.payment_type, r.n) for r in theirs}

    ours = run_sql(t, "SELECT content, count(*) AS n FROM files GROUP BY 1", ref="month_end")
    month_end = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'"
    ).collect()[0][0]
    theirs = spark.sql(
        f"SELECT content, count(*) AS n FROM icecore.demo.trips.files VERSION AS OF {month_end} "
        "GROUP BY 1"
    ).collect()
    assert {(r["content"], r["n"]) for r in ours.to_pylist()} == {(r.content, r.n) for r in theirs}


def test_only_safe_selects() -> None:
    tables = {"files": pa.table({"a": [1, 2, 3]})}
    assert query_arrow("SELECT sum(a) AS s FROM files", tables).to_pylist() == [{"s": 6}]
    for sql, error, message in [
        ("DROP TABLE files", ValidationError, "Only SELECT"),
        ("SELECT 1; SELECT 2", ValidationError, "exactly one"),
        ("SELEC 1", ValidationError, "does not parse"),
        ("SELECT * FROM nope", ValidationError, "Tables you can query: files"),
        ("SELECT * FROM read_csv('/etc/passwd')", IcecoreError, "disabled"),
        ("SELECT * FROM read_parquet('http://127.0.0.1:1/x.parquet')", IcecoreError, "failed"),
        ("SELECT current_setting('memory_limit')", None, ""),
    ]:
        if error is None:
            query_arrow(sql, tables)
            continue
        with pytest.raises(error, match=message):
            query_arrow(sql, tables)


def test_limits_are_applied() -> None:
    tables = {"files": pa.table({"a": list(range(1000))})}
    assert query_arrow("SELECT * FROM files", tables, SqlLimits(max_rows=10)).num_rows == 10
    setting = query_arrow(
        "SELECT current_setting('threads') AS t", tables, SqlLimits(threads=1)
    ).to_pylist()
    assert setting == [{"t": 1}]


def test_only_named_tables_are_built() -> None:
    built: list[str] = []

    def expensive() -> pa.Table:
        built.append("entries")
        return pa.table({"x": [1]})

    tables = {"files": pa.table({"a": [1]}), "entries": expensive}
    query_arrow("SELECT * FROM files", tables)
    assert built == []
    query_arrow("SELECT * FROM entries", tables)
    assert built == ["entries"]
