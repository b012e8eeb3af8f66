"""Full-table SQL on Spark: ``python -m pipeline.query TABLE SQL [--snapshot ID] [--master URL]``.

A preview answers from the rows it reads; an exact count or a group-by over a whole table at a
snapshot belongs on Spark. The query sees one view, ``rows``: the table at the snapshot (the
current one by default), read by Iceberg's Spark runtime. Spark can do far more than read that
view (run shell commands, call JVM methods, read files and other tables), so the query must pass
the allow-list of :mod:`pipeline.query_check` before any JVM starts, and Spark runs the query as
that check wrote it back. Progress goes to stderr; the last line on stdout is one JSON object
with the columns and rows (at most ``--limit``), or one sentence on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from icecore.access import Access, Role
from icecore.cli import jsonable
from pipeline.maintenance import (
    OneSentenceParser,
    answer,
    check_master,
    on_spark,
    spark_table,
)
from pipeline.query_check import ROWS_VIEW, checked_query, rows_projection, snapshot_schema_of
from pipeline.spark import PipelineError, check_prerequisites, default_master

DEFAULT_LIMIT = 10_000
SUBSTITUTE_CONF = "spark.sql.variable.substitute"
"""Off while a query runs: Spark would fill ``${...}`` in its text with settings and
environment variables (the check refuses the sequence too)."""


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:300]


def run_query(
    spark: Any,
    table_text: str,
    sql: str,
    snapshot_id: int | None,
    limit: int,
    mask: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the checked query over ``rows`` on an existing session; the JSON result.

    ``mask``: the columns the principal who asked may not see (the app passes its grant's
    mask): ``rows`` then selects only the other columns (:func:`rows_projection`), never
    ``*``, and a query naming a masked column is refused before Spark reads anything.
    """
    target, table = spark_table(table_text)
    access = Access(Role.READER, frozenset(m.strip().lower() for m in mask if m.strip()))
    query = checked_query(sql, table, snapshot_id, access)
    projection = rows_projection(snapshot_schema_of(table, snapshot_id), access)
    for key, value in target.conf.items():
        spark.conf.set(key, value)
    reader = spark.read
    if snapshot_id is not None:
        reader = reader.option("snapshot-id", str(snapshot_id))
    try:
        frame = reader.table(target.qualified)
        if projection is not None:
            frame = frame.selectExpr(*projection)
        frame.createOrReplaceTempView(ROWS_VIEW)
    except Exception as e:  # py4j and pyspark errors share no base class worth naming
        raise PipelineError(
            f"Spark could not read {table_text} ({_one_line(e)}); check that Spark's catalog "
            "holds this table and that its metadata is intact."
        ) from e
    substitute = spark.conf.get(SUBSTITUTE_CONF, "true")
    spark.conf.set(SUBSTITUTE_CONF, "false")
    started = time.monotonic()
    try:
        frame = spark.sql(query)
        rows = frame.limit(limit + 1).collect()
    except Exception as e:  # py4j and pyspark errors share no base class worth naming
        raise PipelineError(f"Spark could not run the query ({_one_line(e)}).") from e
    finally:
        spark.conf.set(SUBSTITUTE_CONF, substitute)
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
    p.add_argument(
        "--mask",
        action="append",
        default=[],
        help="a column the asking principal may not see (repeatable): rows leaves it out",
    )
    args: argparse.Namespace = p.parse_args(argv)
    return answer(lambda: _query(args))


def _query(args: argparse.Namespace) -> dict[str, Any]:
    target, table = spark_table(args.table)
    access = Access(Role.READER, frozenset(m.strip().lower() for m in args.mask if m.strip()))
    checked_query(args.sql, table, args.snapshot, access)
    master = args.master or default_master()
    check_prerequisites()
    check_master(master)
    print(f"[query] starting Spark on {master}", file=sys.stderr, flush=True)
    result = on_spark(
        target,
        master,
        "icecore-query",
        lambda s: run_query(s, args.table, args.sql, args.snapshot, args.limit, args.mask),
    )
    print(f"[query] done in {result['seconds']}s", file=sys.stderr, flush=True)
    return result


if __name__ == "__main__":
    sys.exit(main())
