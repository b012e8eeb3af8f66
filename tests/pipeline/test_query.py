"""Full-table queries on Spark: the read-only check, and answers equal to Spark's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.query import check_query, run_query
from pipeline.spark import PipelineError


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("INSERT INTO rows VALUES (1)", "Only SELECT"),
        ("DROP TABLE rows", "Only SELECT"),
        ("SELECT 1; SELECT 2", "exactly one"),
        ("SELECT * FROM icecore.demo.trips", "only `rows`"),
        ("SELECT * FROM parquet.`/etc/passwd`", "only `rows`"),
        ("SELECT * FROM rows JOIN zones ON true", "only `rows`"),
        ("SELECT reflect('java.lang.System', 'exit', '0') FROM rows", "reflect"),
        ("SELECT java_method('java.lang.System', 'getenv') FROM rows", "java_method"),
        ("SELECT FROM WHERE", "does not parse"),
    ],
)
def test_only_one_read_only_query_over_rows_is_accepted(sql: str, says: str) -> None:
    with pytest.raises(PipelineError, match=says.replace("`", ".").replace("(", r"\(")):
        check_query(sql)


def test_a_query_over_rows_and_its_ctes_is_accepted() -> None:
    sql = "WITH big AS (SELECT * FROM rows WHERE fare > 30) SELECT count(*) FROM big"
    assert check_query(sql) == sql


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
