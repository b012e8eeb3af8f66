"""Full-table SQL on Spark: ``python -m pipeline.query TABLE SQL [--snapshot ID] [--master URL]``.

A preview answers from the rows it reads; an exact count or a group-by over a whole table at a
snapshot belongs on Spark. The query sees one view, ``rows``: the table at the snapshot (the
current one by default), read by Iceberg's Spark runtime. It keeps the SQL page's read-only
guarantees: the text must parse (Spark dialect) as exactly one query, may name no table but
``rows`` (no other table, no file path such as ``parquet.`/x```), and may call none of Spark's
functions that reach outside the data (``reflect``, ``java_method``, ``input_file_name``...).
Progress goes to stderr; the last line on stdout is one JSON object with the columns and rows
(at most ``--limit``), or one sentence on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from icecore.cli import jsonable
from pipeline.maintenance import (
    OneSentenceParser,
    answer,
    check_master,
    on_spark,
    spark_table,
)
from pipeline.spark import PipelineError, check_prerequisites, default_master

ROWS_VIEW = "rows"
FORBIDDEN_FUNCTIONS = frozenset(
    {"reflect", "java_method", "input_file_name", "current_user", "session_user", "user"}
)
"""Spark functions that call into the JVM or tell more than the rows; refused by name."""
DEFAULT_LIMIT = 10_000


def check_query(sql: str) -> str:
    """Accept one read-only query over ``rows``; raise :class:`PipelineError` otherwise."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.ParseError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "a syntax error"
        raise PipelineError(f"The SQL does not parse as Spark SQL: {first}.") from e
    if len(statements) != 1:
        raise PipelineError("Write exactly one SELECT query.")
    query = statements[0]
    if not isinstance(query, exp.Query):
        raise PipelineError(f"Only SELECT queries run on Spark from here, not {query.key.upper()}.")
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    for table in query.find_all(exp.Table):
        name = table.name.lower()
        if table.args.get("db") or table.args.get("catalog") or name not in {ROWS_VIEW, *ctes}:
            raise PipelineError(
                f"The query may read only `{ROWS_VIEW}` (the table at the chosen snapshot), "
                f"not {table.sql(dialect='spark')}."
            )
    for function in query.find_all(exp.Func):
        name = (
            function.name if isinstance(function, exp.Anonymous) else function.sql_name()
        ).lower()
        if name in FORBIDDEN_FUNCTIONS:
            raise PipelineError(f"The function {name} is not allowed in a query run from here.")
    return sql


def run_query(
    spark: Any, table_text: str, sql: str, snapshot_id: int | None, limit: int
) -> dict[str, Any]:
    """Run the checked query over ``rows`` on an existing session; the JSON result."""
    target, table = spark_table(table_text)
    check_query(sql)
    for key, value in target.conf.items():
        spark.conf.set(key, value)
    reader = spark.read
    if snapshot_id is not None:
        reader = reader.option("snapshot-id", str(snapshot_id))
    reader.table(target.qualified).createOrReplaceTempView(ROWS_VIEW)
    started = time.monotonic()
    try:
        frame = spark.sql(sql)
        rows = frame.limit(limit + 1).collect()
    except Exception as e:  # py4j and pyspark errors share no base class worth naming
        text = " ".join(str(e).split())[:300]
        raise PipelineError(f"Spark could not run the query ({text}).") from e
    current = table.metadata.current_snapshot()
    return {
        "table": table_text,
        "snapshot_id": snapshot_id
        if snapshot_id is not None
        else (current.snapshot_id if current else None),
        "columns": list(frame.columns),
        "rows": [jsonable(list(r)) for r in rows[:limit]],
        "truncated": len(rows) > limit,
        "seconds": round(time.monotonic() - started, 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run one query; exit 0 with the JSON result, or 1 with one sentence on stderr."""
    p = OneSentenceParser(prog="python -m pipeline.query", description=__doc__)
    p.add_argument("table", help="CATALOG::ns.table or a table folder")
    p.add_argument("sql", help=f"one SELECT over `{ROWS_VIEW}`")
    p.add_argument("--snapshot", type=int, help="the snapshot id (default: current)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="rows returned at most")
    p.add_argument("--master", help="Spark master URL (default ICECORE_SPARK_MASTER or local[*])")
    args: argparse.Namespace = p.parse_args(argv)
    return answer(lambda: _query(args))


def _query(args: argparse.Namespace) -> dict[str, Any]:
    target, _ = spark_table(args.table)
    check_query(args.sql)
    master = args.master or default_master()
    check_prerequisites()
    check_master(master)
    print(f"[query] starting Spark on {master}", file=sys.stderr, flush=True)
    result = on_spark(
        target,
        master,
        "icecore-query",
        lambda s: run_query(s, args.table, args.sql, args.snapshot, args.limit),
    )
    print(f"[query] done in {result['seconds']}s", file=sys.stderr, flush=True)
    return result


if __name__ == "__main__":
    sys.exit(main())
