"""SQL over ``rows`` answers over every live row, and says when it cuts the result.

Spark is the oracle: ``count(*)`` and a GROUP BY over a Spark-written table of 504,000 rows
(with position deletes) equal Spark's for the same snapshot, through run_sql and the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from icecore.errors import IcecoreError, ValidationError
from icecore.point_in_time import At
from icecore.schema import Schema
from icecore.sql import SqlLimits, query_arrow, result_cut, rows_columns, run_sql
from icecore.types import IntegerType, NestedField, StringType
from tests.big_rows import ROWS, write_big_table
from tests.conftest import REPO
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs


@pytest.fixture(scope="module")
def big(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[EvoCatalogs, str]:
    """The 504,000-row table in a private catalog, and its Spark name."""
    catalogs = register_catalogs(spark, tmp_path_factory.mktemp("sql-rows"))
    return catalogs, write_big_table(catalogs, "big")


@pytest.mark.spark
def test_count_and_group_by_over_every_row_equal_spark(big: tuple[EvoCatalogs, str]) -> None:
    catalogs, full = big
    table = catalogs.load("sql", "big")
    spark_count = catalogs.spark.sql(f"SELECT count(*) FROM {full}").collect()[0][0]
    assert spark_count > 100_000 and spark_count < ROWS  # deletes applied, past the old cap
    result = run_sql(table, "SELECT count(*) AS n FROM rows")
    assert result.to_pylist() == [{"n": spark_count}]
    assert not result_cut(result)

    groups = run_sql(table, "SELECT k, count(*) AS n, sum(id) AS s FROM rows GROUP BY k")
    theirs = catalogs.spark.sql(f"SELECT k, count(*) AS n, sum(id) AS s FROM {full} GROUP BY k")
    assert {(r["k"], r["n"], r["s"]) for r in groups.to_pylist()} == {
        (r.k, r.n, r.s) for r in theirs.collect()
    }

    # The same numbers at an older snapshot (before the delete).
    first = min(table.snapshots(), key=lambda s: s.sequence_number).snapshot_id
    then = run_sql(table, "SELECT count(*) AS n FROM rows", at=At(snapshot_id=first)).to_pylist()
    spark_then = catalogs.spark.sql(f"SELECT count(*) FROM {full} VERSION AS OF {first}")
    assert then == [{"n": spark_then.collect()[0][0]}]


@pytest.mark.spark
def test_a_result_cut_at_max_rows_says_so(big: tuple[EvoCatalogs, str]) -> None:
    catalogs, _ = big
    table = catalogs.load("sql", "big")
    cut = run_sql(table, "SELECT id FROM rows", limits=SqlLimits(max_rows=1_000))
    assert cut.num_rows == 1_000 and result_cut(cut)
    whole = run_sql(table, "SELECT id FROM rows LIMIT 1000", limits=SqlLimits(max_rows=1_000))
    assert whole.num_rows == 1_000 and not result_cut(whole)


@pytest.mark.spark
def test_rows_past_the_byte_bound_are_refused_in_one_sentence(
    big: tuple[EvoCatalogs, str],
) -> None:
    catalogs, _ = big
    table = catalogs.load("sql", "big")
    # Read twice (a self-join), rows is held whole by the query process: bounded first.
    twice = "SELECT count(*) FROM rows a JOIN rows b ON a.id = b.id"
    with pytest.raises(ValidationError, match=r"rows columns this query reads are about .*MiB"):
        run_sql(table, twice, limits=SqlLimits(max_input_bytes=2**20))
    # Read once, it streams: the same bound does not apply, the result cut does.
    streamed = run_sql(
        table, "SELECT * FROM rows", limits=SqlLimits(max_input_bytes=2**20, max_rows=10)
    )
    assert streamed.num_rows == 10 and result_cut(streamed)
    # count(*) reads no column of the table: under the same bound it answers.
    small = SqlLimits(max_input_bytes=8 * ROWS)
    assert run_sql(table, "SELECT count(*) AS n FROM rows", limits=small).num_rows == 1


@pytest.mark.spark
def test_cli_sql_counts_every_row_and_notes_a_cut(big: tuple[EvoCatalogs, str]) -> None:
    catalogs, full = big
    spark_count = catalogs.spark.sql(f"SELECT count(*) FROM {full}").collect()[0][0]
    arg = catalogs.table_arg("sql", "big")

    def cli(query: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "icecore", "sql", arg, query],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    counted = cli("SELECT count(*) AS n FROM rows")
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout) == [{"n": spark_count}]
    assert "first" not in counted.stderr
    listed = cli("SELECT id FROM rows")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == SqlLimits().max_rows
    assert f"first {SqlLimits().max_rows:,} rows of the result" in listed.stderr


def test_rows_columns_are_the_names_a_query_uses() -> None:
    schema = Schema(
        (
            NestedField(1, "id", IntegerType(), required=False),
            NestedField(2, "City", StringType(), required=False),
            NestedField(3, "note", StringType(), required=False),
        )
    )
    assert rows_columns(schema, "SELECT count(*) FROM rows") == []
    assert rows_columns(schema, "SELECT city, count(*) FROM rows GROUP BY 1") == ["City"]
    assert rows_columns(schema, "SELECT r.id FROM rows AS r WHERE note IS NULL") == ["id", "note"]
    for every in (
        "SELECT * FROM rows",
        "SELECT r.* FROM rows r",
        "SELECT * EXCLUDE (id) FROM rows",
        "SELECT COLUMNS('.*') FROM rows",
        "SELECT r FROM rows r",
        "SELECT rows FROM rows",
    ):
        assert rows_columns(schema, every) is None, every


def test_reading_a_streamed_table_counts_against_the_time_limit() -> None:
    """``rows`` is read while the query waits for it: a slow read is stopped at the limit."""

    def slow() -> Iterator[pa.RecordBatch]:
        for i in range(50):
            time.sleep(0.1)
            yield pa.record_batch([pa.array([i])], names=["n"])

    schema = pa.schema([("n", pa.int64())])
    started = time.monotonic()
    with pytest.raises(IcecoreError, match=r"ran longer than 1 s"):
        query_arrow(
            "SELECT count(*) FROM rows",
            {"rows": lambda: pa.RecordBatchReader.from_batches(schema, slow())},
            SqlLimits(timeout_s=1.0),
        )
    assert time.monotonic() - started < 4.0
    fast = pa.RecordBatchReader.from_batches(
        schema, iter([pa.record_batch([pa.array([1, 2])], names=["n"])])
    )
    answer = query_arrow("SELECT sum(n) AS s FROM rows", {"rows": lambda: fast}, SqlLimits())
    assert answer.to_pylist() == [{"s": 3}]
