"""SQL over ``rows`` streams into the query process, with the WHERE pushed into the scan.

Issue 32: the query process collected every batch of ``rows`` before DuckDB ran, so it held
the whole table; now a query that reads ``rows`` once pulls batches as DuckDB scans them, and
the WHERE's conjuncts that mean the same as a filter are planned with the scan. Spark is the
oracle for the answers; the streaming is shown by its effect (a table larger than the query
process's memory limit is counted, which the held path cannot do).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import icecore
from icecore.errors import IcecoreError
from icecore.expressions.parser import table_references
from icecore.scan.planner import Plan
from icecore.sql import SqlLimits, pushed_filter, query_arrow, run_sql
from tests.big_rows import write_big_table
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs

BATCH_ROWS = 1_000_000
BATCHES = 100  # 800 MB of int64, past the 600 MiB the query process may hold


def _generated() -> pa.RecordBatchReader:
    schema = pa.schema([("x", pa.int64())])
    batches = (
        pa.record_batch([pa.array(np.arange(i * BATCH_ROWS, (i + 1) * BATCH_ROWS))], schema=schema)
        for i in range(BATCHES)
    )
    return pa.RecordBatchReader.from_batches(schema, batches)


def test_a_streamed_table_larger_than_the_query_process_memory_is_counted() -> None:
    limits = SqlLimits(process_memory_mb=600, timeout_s=120)
    sql = "SELECT count(*) AS n, sum(x) AS s FROM rows"
    n = BATCH_ROWS * BATCHES
    got = query_arrow(sql, {"rows": _generated}, limits, stream=["rows"]).to_pylist()
    assert got == [{"n": n, "s": n * (n - 1) // 2}]
    # Held whole (not streamed), the same table does not fit: the effect is the streaming.
    with pytest.raises(IcecoreError):
        query_arrow(sql, {"rows": _generated}, limits)


def test_only_a_query_that_reads_rows_once_is_streamed() -> None:
    assert table_references("SELECT count(*) FROM rows WHERE id > 3", "rows") == 1
    assert table_references("SELECT * FROM rows a JOIN rows b ON a.id = b.id", "rows") == 2
    assert table_references("SELECT * FROM rows WHERE id IN (SELECT id FROM rows)", "rows") == 2
    assert table_references("WITH r AS (SELECT * FROM rows) SELECT * FROM r, r s", "rows") is None
    assert table_references("SELECT count(*) FROM files", "rows") == 0
    assert table_references("SELEC nonsense (", "rows") is None


@pytest.fixture(scope="module")
def big(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[EvoCatalogs, str]:
    catalogs = register_catalogs(spark, tmp_path_factory.mktemp("sql-stream"))
    return catalogs, write_big_table(catalogs, "big")


WHERES = [
    "k = 3 AND v <> 'v7'",
    "k IN (1, 2) OR id < 5",
    "NOT (k = 1) AND v IS NOT NULL",
    "id BETWEEN 1000 AND 200000 AND k >= 2",
    "k <> 3 AND v > 'v5' AND lower(v) LIKE 'v5%'",
    "v = 'it''s' OR k IS NULL",
    "(k = 2 OR k = 4) AND id > 400000",
    "id > 2.5 AND k < 6",
]


@pytest.mark.spark
@pytest.mark.parametrize("where", WHERES)
def test_pushed_where_gives_sparks_answer(big: tuple[EvoCatalogs, str], where: str) -> None:
    """Pushed or not, conjunct by conjunct, the answer is Spark's (deletes applied)."""
    catalogs, full = big
    table = catalogs.load("sql", "big")
    query = "SELECT k, count(*) AS n, sum(id) AS s FROM {t} WHERE " + where + " GROUP BY k"
    got = run_sql(table, query.format(t="rows"))
    theirs = catalogs.spark.sql(query.format(t=full)).collect()
    assert {(r["k"], r["n"], r["s"]) for r in got.to_pylist()} == {(r.k, r.n, r.s) for r in theirs}


@pytest.mark.spark
def test_pushed_filter_keeps_only_conjuncts_that_mean_the_same(trips_schema: Any) -> None:
    def pushed(where: str) -> str | None:
        return pushed_filter(f"SELECT count(*) FROM rows r WHERE {where}", trips_schema)

    assert pushed("vendor_id = 2 AND r.pickup_zone IN ('Soho', 'Chelsea')") == (
        "(vendor_id = 2) AND (pickup_zone IN ('Soho', 'Chelsea'))"
    )
    # A timestamp (time zones), a function, an OR with one side not pushable, a subquery,
    # an integer column against a fraction: none pushed.
    assert pushed("pickup_ts > '2024-01-01'") is None
    assert pushed("lower(pickup_zone) = 'soho'") is None
    assert pushed("vendor_id = 1 OR lower(pickup_zone) = 'x'") is None
    assert pushed("vendor_id IN (SELECT 1)") is None
    assert pushed("vendor_id = 2.5") is None
    assert pushed("fare > 2.5 AND trip_id IS NOT NULL") == "(fare > 2.5) AND (NOT trip_id IS NULL)"
    # Joins and several sources: nothing pushed.
    assert (
        pushed_filter(
            "SELECT * FROM rows a JOIN rows b ON a.trip_id = b.trip_id WHERE a.vendor_id = 1",
            trips_schema,
        )
        is None
    )


HOSTILE_STRINGS = (
    r"'a\b'",  # DuckDB keeps a backslash as it is; Spark's text escapes it
    "'it''s'",
    r"'ends with \'",
    r"'x\nq\t%_'",  # escapes that are not escapes in DuckDB, LIKE wildcards
    "'café \U0001f600'",
    "''",
)


@pytest.mark.parametrize("literal", HOSTILE_STRINGS)
def test_a_pushed_string_literal_is_the_value_duckdb_compares(literal: str) -> None:
    # The pushed conjunct is rendered as Spark SQL text and parsed again as a filter: the
    # value it compares must be the very string DuckDB reads from the query, or the scan
    # would drop rows DuckDB keeps (a wrong answer, not a slow one).
    import duckdb

    from icecore.expressions.model import UnboundPredicate
    from icecore.expressions.parser import parse_filter, pushable_where

    sql = f"SELECT * FROM rows WHERE s = {literal}"
    pushed = pushable_where(sql, "rows", {"s": "string"})
    assert pushed is not None
    parsed = parse_filter(pushed)
    assert isinstance(parsed, UnboundPredicate)
    (value,) = (lit.value for lit in parsed.literals)
    assert value == duckdb.connect().execute(f"SELECT {literal}").fetchall()[0][0]


@pytest.fixture(scope="module")
def trips_schema(demo_warehouse: Path) -> Any:
    return icecore.load_table(f"{demo_warehouse}::demo.trips").resolve().schema


@pytest.mark.spark
def test_a_pushed_where_prunes_files(
    demo_warehouse: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files the streamed scan reads are those the WHERE's own plan reads."""
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    read: list[list[str]] = []
    original = Plan.to_batches

    def recorded(self: Plan, *args: Any, **kwargs: Any) -> Any:
        read.append(self.data_files)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Plan, "to_batches", recorded)
    where = "vendor_id = 2 AND trip_distance > 20"
    got = run_sql(table, f"SELECT count(*) AS n FROM rows WHERE {where}").to_pylist()
    everything = table.scan().plan().data_files
    assert read and len(read[-1]) < len(everything)
    assert read[-1] == table.scan(filter=where).plan().data_files
    expected = spark.sql(f"SELECT count(*) AS n FROM icecore.demo.trips WHERE {where}").collect()
    assert got == [{"n": expected[0].n}]


@pytest.mark.spark
def test_a_pushed_filter_icecore_refuses_only_loses_the_shortcut(
    demo_warehouse: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pushing is an optimisation: a pushed filter that does not parse changes no answer."""
    import icecore.sql

    monkeypatch.setattr(icecore.sql, "pushed_filter", lambda sql, schema: "vendor_id = (((")
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    where = "vendor_id = 2"
    got = run_sql(table, f"SELECT count(*) AS n FROM rows WHERE {where}").to_pylist()
    expected = spark.sql(f"SELECT count(*) AS n FROM icecore.demo.trips WHERE {where}").collect()
    assert got == [{"n": expected[0].n}]
