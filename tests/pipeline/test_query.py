"""Full-table queries on Spark: answers equal to Spark's own (the check: test_query_check.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.query import run_query


@pytest.mark.spark
def test_a_group_by_over_the_whole_table_at_a_snapshot_equals_spark(
    spark: Any, demo_warehouse: Path
) -> None:
    tag = spark.sql("SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'")
    snapshot = int(tag.collect()[0][0])
    sql = "SELECT payment_type, count(*) AS n FROM rows GROUP BY payment_type ORDER BY 1"
    answer = run_query(spark, f"{demo_warehouse}::demo.trips", sql, snapshot, 100)
    expected = spark.sql(
        f"SELECT payment_type, count(*) FROM icecore.demo.trips VERSION AS OF {snapshot} "
        "GROUP BY payment_type ORDER BY 1"
    ).collect()
    assert answer["rows"] == [list(r) for r in expected]
    assert answer["columns"] == ["payment_type", "n"] and answer["snapshot_id"] == snapshot


@pytest.mark.spark
def test_a_window_over_a_cte_runs_as_checked_and_equals_spark(
    spark: Any, demo_warehouse: Path
) -> None:
    # What runs is the checked tree written back by sqlglot; Spark's answer to the text as
    # typed, over the table itself, is the oracle.
    sql = (
        "WITH v AS (SELECT vendor_id, count(*) AS n, sum(fare) AS total FROM {t} "
        "GROUP BY vendor_id) SELECT vendor_id, n, rank() OVER (ORDER BY total DESC) AS r "
        "FROM v ORDER BY vendor_id -- trailing comment"
    )
    answer = run_query(spark, f"{demo_warehouse}::demo.trips", sql.format(t="rows"), None, 100)
    expected = spark.sql(sql.format(t="icecore.demo.trips")).collect()
    assert answer["rows"] == [list(r) for r in expected]
    assert answer["columns"] == ["vendor_id", "n", "r"]
