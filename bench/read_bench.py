"""Rows read as users read them: Icecore beside PyIceberg, Polars, DuckDB and Spark, in one run.

    python -m bench.read_bench --warehouse /tmp/readwh [--rows 10000000] [--files 200]
        [--rounds 3] [--tables t1,t2,t3,t4] [--workloads scan,filter,count,first100]
        [--readers icecore,pyiceberg,polars,duckdb,spark] [--record bench/read_bench.results.md]
        [--baseline /path/to/another/checkout]

Issue 32, Deliver 6; the workload of PERFORMANCE.md "Reading rows". The tables are built once
by Spark into ``--warehouse`` (a SQL catalog in SQLite, ``catalog.db``, which every reader can
open) and reused while they are there (``--rebuild`` makes them again):

- ``t1``: ``--rows`` rows in ``--files`` Parquet files, 10 columns, ``days(pickup_ts)``, ids
  growing with time (so an id range prunes to a file); no deletes;
- ``t2``: t1's rows, v2, 5% of them deleted by position deletes (merge-on-read DELETE);
- ``t3``: t1's rows, v2, 1% deleted by equality deletes on ``uid`` (``id + 2^32``), one file
  per day partition (Iceberg Java's ``RowDelta`` in Spark's JVM, as the demo's accounts table:
  ``pipeline.demo.write_equality_deletes``);
- ``t4``: t1's rows, v3, the rows of t2 deleted as deletion vectors.

Workloads: ``scan`` (3 columns to Arrow), ``filter`` (an id range of 0.1% of the rows, to
Arrow), ``count`` (``count(*)`` after deletes), ``first100`` (100 rows with ``fare > 50``).
Each measurement is a fresh process (``python -m bench.read_bench child ...``) for Icecore,
PyIceberg, Polars and DuckDB, the readers taking turns in an order rotated round by round;
its import time is measured apart and left out. Spark runs every workload in one session
(the JVM start left out). Each answer's row count and checksum (the sum of ``id``; for
``first100`` the rows matching the filter) must agree across readers: a mismatch is printed
and makes the run fail. A reader that refuses a table is recorded as refused. The report gives
medians and spread of each reader's seconds and the ratio peer / Icecore (below 1: the peer is
faster), and each child's peak RSS (``VmHWM``). ``--baseline`` adds Icecore from another
checkout (``baseline``, e.g. main before a change) as one more peer of the same run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._harness import peak_mib, publish

TABLES = ("t1", "t2", "t3", "t4")
WORKLOADS = ("scan", "filter", "count", "first100")
READERS = ("icecore", "pyiceberg", "polars", "duckdb", "spark")
BASELINE = "baseline"
"""The reader name of ``--baseline``: Icecore from another checkout (the code before a change),
measured in the same run as a peer, so a change is judged by a ratio, not by seconds."""
COLUMNS = ("id", "fare", "zone")
NAMESPACE = "bench"
REPO = Path(__file__).resolve().parent.parent
_UID_OFFSET = 2**32
_FIRST_DAY = 19723
"""2024-01-01 in days since the epoch: row ``id`` is on day ``_FIRST_DAY + id // rows_per_file``."""


def _filter_range(rows: int) -> tuple[int, int]:
    """An id range of 0.1% of the rows, in the middle of the table."""
    width = max(rows // 1000, 1)
    low = rows // 2
    return low, low + width - 1


# ---------------------------------------------------------------------------------------
# Building the tables (Spark)


def build(warehouse: Path, rows: int, files: int, rebuild: bool) -> None:
    """Write t1..t4 with Spark into ``warehouse`` (skipped when there, unless ``rebuild``)."""
    marker = warehouse / "read_bench.json"
    wanted = {"rows": rows, "files": files}
    if not rebuild and marker.exists() and json.loads(marker.read_text()) == wanted:
        return
    from pyspark.sql.functions import days

    from pipeline.demo import write_equality_deletes
    from pipeline.spark import SQL_CATALOG, build_session

    warehouse.mkdir(parents=True, exist_ok=True)
    spark = build_session(str(warehouse), app_name="read-bench")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {SQL_CATALOG}.{NAMESPACE}")
    per_day = max(rows // files, 1)
    source = spark.range(rows).selectExpr(
        "id",
        f"timestamp_seconds({_FIRST_DAY * 86400} + (id DIV {per_day}) * 86400 + (id % {per_day}))"
        " AS pickup_ts",
        "CAST(id % 3 + 1 AS INT) AS vendor",
        "concat('zone-', CAST(id % 263 AS STRING)) AS zone",
        "CAST((id * 7919) % 10000 AS DOUBLE) / 100 AS fare",
        "CAST((id * 104729) % 2000 AS DOUBLE) / 100 AS tip",
        "CAST(id % 5 + 1 AS INT) AS passengers",
        "CASE WHEN id % 3 = 0 THEN 'cash' ELSE 'card' END AS payment",
        "CAST(id % 1000 AS DOUBLE) / 7 AS distance",
        f"id + {_UID_OFFSET} AS uid",
    )
    for name, version in (("t1", 2), ("t2", 2), ("t3", 2), ("t4", 3)):
        full = f"{SQL_CATALOG}.{NAMESPACE}.{name}"
        spark.sql(f"DROP TABLE IF EXISTS {full} PURGE")
        (
            source.repartitionByRange(files, "id")
            .sortWithinPartitions("id")
            .writeTo(full)
            .partitionedBy(days("pickup_ts"))
            .tableProperty("format-version", str(version))
            .tableProperty("write.delete.mode", "merge-on-read")
            .tableProperty("write.update.mode", "merge-on-read")
            .tableProperty("write.distribution-mode", "none")
            .create()
        )
    spark.sql(f"DELETE FROM {SQL_CATALOG}.{NAMESPACE}.t2 WHERE id % 20 = 3")
    spark.sql(f"DELETE FROM {SQL_CATALOG}.{NAMESPACE}.t4 WHERE id % 20 = 3")
    # 1% of the ids, one equality delete file per day partition (a partitioned table's
    # delete file belongs to a partition).
    # By ``uid`` (``id`` + 2^32, a long): py4j passes a Python int below 2^31 to Java as an
    # Integer, which Iceberg's long column refuses.
    by_day: dict[int, list[list[Any]]] = {}
    for i in range(7, rows, 100):
        by_day.setdefault(_FIRST_DAY + i // per_day, []).append([i + _UID_OFFSET])
    for day, ids in sorted(by_day.items()):
        write_equality_deletes(
            spark, f"{SQL_CATALOG}.{NAMESPACE}.t3", ["uid"], ids, partition={"pickup_ts_day": day}
        )
    spark.stop()
    marker.write_text(json.dumps(wanted))


# ---------------------------------------------------------------------------------------
# One measurement (a child process)


def _answer(rows: int, checksum: int) -> dict[str, Any]:
    return {"rows": int(rows), "checksum": int(checksum)}


def _arrow_answer(table: Any, workload: str, fare_bound: float) -> dict[str, Any]:
    import pyarrow.compute as pc

    if workload == "first100":
        matching = int(pc.sum(pc.greater(table.column("fare"), fare_bound)).as_py() or 0)
        found = _answer(table.num_rows, matching)
    else:
        found = _answer(table.num_rows, int(pc.sum(table.column("id")).as_py() or 0))
    # The result's own size, for the target "peak memory under twice the result's Arrow size"
    # (issue 32): the report puts it beside the rows, so a peak reads against it.
    found["arrow_mib"] = table.nbytes / 2**20
    return found


def _icecore(warehouse: Path, name: str, workload: str, low: int, high: int) -> dict[str, int]:
    import icecore

    table = icecore.load_table(f"{warehouse}::{NAMESPACE}.{name}")
    if workload == "count":
        return _answer(table.scan().plan().count().rows, 0)
    if workload == "scan":
        found = table.scan().plan().to_arrow(columns=list(COLUMNS))
    elif workload == "filter":
        found = table.scan(filter=f"id BETWEEN {low} AND {high}").plan().to_arrow(list(COLUMNS))
    else:
        found = table.scan(filter="fare > 50").plan().to_arrow(list(COLUMNS), limit=100)
    return _arrow_answer(found, workload, 50.0)


def _pyiceberg_table(warehouse: Path, name: str) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    # Named as Spark's JdbcCatalog names it in its rows (PyIceberg reads by catalog name).
    catalog = SqlCatalog(
        "icecore", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}"
    )
    return catalog.load_table(f"{NAMESPACE}.{name}")


def _pyiceberg(warehouse: Path, name: str, workload: str, low: int, high: int) -> dict[str, int]:
    table = _pyiceberg_table(warehouse, name)
    if workload == "count":
        return _answer(table.scan().count(), 0)
    if workload == "scan":
        found = table.scan(selected_fields=COLUMNS).to_arrow()
    elif workload == "filter":
        found = table.scan(
            row_filter=f"id >= {low} and id <= {high}", selected_fields=COLUMNS
        ).to_arrow()
    else:
        found = table.scan(row_filter="fare > 50", selected_fields=COLUMNS, limit=100).to_arrow()
    return _arrow_answer(found, workload, 50.0)


def _polars(warehouse: Path, name: str, workload: str, low: int, high: int) -> dict[str, int]:
    import polars as pl

    frame = pl.scan_iceberg(_pyiceberg_table(warehouse, name))
    if workload == "count":
        return _answer(frame.select(pl.len()).collect().item(), 0)
    frame = frame.select(list(COLUMNS))
    if workload == "filter":
        frame = frame.filter(pl.col("id").is_between(low, high))
    elif workload == "first100":
        frame = frame.filter(pl.col("fare") > 50).head(100)
    return _arrow_answer(frame.collect().to_arrow(), workload, 50.0)


def _duckdb(warehouse: Path, name: str, workload: str, low: int, high: int) -> dict[str, int]:
    import duckdb

    connection = duckdb.connect()
    try:
        connection.execute("LOAD iceberg")
    except duckdb.Error:
        try:
            connection.execute("INSTALL iceberg")
            connection.execute("LOAD iceberg")
        except duckdb.Error as e:
            raise RuntimeError(f"no iceberg extension offline ({str(e).splitlines()[0]})") from e
    metadata = _pyiceberg_table(warehouse, name).metadata_location
    scan = f"iceberg_scan('{metadata}')"
    if workload == "count":
        return _answer(connection.execute(f"SELECT count(*) FROM {scan}").fetchone()[0], 0)  # type: ignore[index]
    cols = ", ".join(COLUMNS)
    where = {
        "scan": "",
        "filter": f" WHERE id BETWEEN {low} AND {high}",
        "first100": " WHERE fare > 50 LIMIT 100",
    }[workload]
    found = connection.sql(f"SELECT {cols} FROM {scan}{where}").fetch_arrow_table()
    return _arrow_answer(found, workload, 50.0)


RUNNERS = {"icecore": _icecore, "pyiceberg": _pyiceberg, "polars": _polars, "duckdb": _duckdb}
# pyarrow imports pandas (when installed) on its first ``pa.array``, ``pa.scalar`` or
# ``to_numpy`` of a process (its pandas shim checks every input): ~0.26 s that any reader
# building Arrow arrays pays once, reported as import time for the two that do.
# Icecore loads its planner, reader and filter parser (sqlglot) on first use, to keep
# ``import icecore`` small (bench/import_bench.py); PyIceberg's catalog import loads its own.
# Both are imports, so both are reported apart.
IMPORTS = {
    "icecore": (
        "icecore",
        "pyarrow.parquet",
        "polars",
        "fastavro",
        "pandas",
        "icecore.scan.planner",
        "icecore.read.tasks",
        "icecore.expressions.parser",
    ),
    "pyiceberg": ("pyiceberg.catalog.sql", "pyarrow.parquet", "pandas"),
    "polars": ("polars", "pyiceberg.catalog.sql"),
    "duckdb": ("duckdb", "pyiceberg.catalog.sql"),
}


def child(reader: str, warehouse: Path, name: str, workload: str, rows: int) -> dict[str, Any]:
    """One measurement in this process: imports apart, then the workload."""
    import importlib

    started = time.perf_counter()
    for module in IMPORTS[reader]:
        importlib.import_module(module)
    imported = time.perf_counter() - started
    low, high = _filter_range(rows)
    started = time.perf_counter()
    try:
        answer: dict[str, Any] = RUNNERS[reader](warehouse, name, workload, low, high)
    except Exception as e:  # noqa: BLE001 - a reader refusing a table is a result
        return {"refused": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    answer["seconds"] = time.perf_counter() - started
    answer["import_seconds"] = imported
    answer["peak_mib"] = peak_mib()
    return answer


def _spark_all(
    warehouse: Path, tables: list[str], workloads: list[str], rows: int, rounds: int
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every workload in one Spark session (its JVM start left out), ``rounds`` times."""
    from pipeline.spark import SQL_CATALOG, build_session

    spark = build_session(str(warehouse), app_name="read-bench-spark")
    low, high = _filter_range(rows)
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    cols = ", ".join(COLUMNS)
    for _ in range(rounds):
        for name in tables:
            full = f"{SQL_CATALOG}.{NAMESPACE}.{name}"
            for workload in workloads:
                sql = {
                    "count": f"SELECT count(*) FROM {full}",
                    "scan": f"SELECT {cols} FROM {full}",
                    "filter": f"SELECT {cols} FROM {full} WHERE id BETWEEN {low} AND {high}",
                    "first100": f"SELECT {cols} FROM {full} WHERE fare > 50 LIMIT 100",
                }[workload]
                started = time.perf_counter()
                frame = spark.sql(sql)
                if workload == "count":
                    answer = _answer(frame.collect()[0][0], 0)
                else:
                    batches = frame._collect_as_arrow()  # noqa: SLF001 - Spark's own Arrow path
                    answer = _arrow_answer(_arrow_of_spark(batches), workload, 50.0)
                answer["seconds"] = time.perf_counter() - started
                found.setdefault((name, workload), []).append(answer)
    spark.stop()
    return found


def _arrow_of_spark(batches: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_batches(batches)


# ---------------------------------------------------------------------------------------
# The run


def _run_child(
    reader: str,
    warehouse: Path,
    name: str,
    workload: str,
    rows: int,
    baseline: Path | None = None,
) -> dict[str, Any]:
    """One measurement in a fresh process; ``baseline`` runs Icecore from that checkout."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.read_bench",
            "child",
            "icecore" if reader == BASELINE else reader,
            str(warehouse),
            name,
            workload,
            str(rows),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=baseline if reader == BASELINE and baseline is not None else REPO,
        timeout=900,
    )
    if out.returncode != 0:
        return {"refused": f"exit {out.returncode}: {out.stderr.strip().splitlines()[-1:]}"}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _cell(values: list[float]) -> str:
    if not values:
        return "–"
    median = statistics.median(values)
    return f"{median:.2f} s (±{(max(values) - min(values)) / 2:.2f})"


def main(argv: list[str] | None = None) -> int:
    """Build (once), measure, check the answers agree, report."""
    args = argv if argv is not None else sys.argv[1:]
    if args and args[0] == "child":
        reader, warehouse, name, workload, rows = args[1:6]
        print(json.dumps(child(reader, Path(warehouse), name, workload, int(rows))))
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.read_bench")
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tables", default=",".join(TABLES))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--readers", default=",".join(READERS))
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--record", default=None)
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another Icecore checkout (e.g. main) measured as the peer 'baseline'",
    )
    options = parser.parse_args(args)
    warehouse = options.warehouse.resolve()
    tables = options.tables.split(",")
    workloads = options.workloads.split(",")
    readers = options.readers.split(",")
    if options.baseline is not None and BASELINE not in readers:
        readers.insert(1, BASELINE)
    started = time.perf_counter()
    build(warehouse, options.rows, options.files, options.rebuild)
    built = time.perf_counter() - started
    results: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    children = [r for r in readers if r != "spark"]
    for round_ in range(options.rounds):
        order = children[round_ % len(children) :] + children[: round_ % len(children)]
        for name in tables:
            for workload in workloads:
                for reader in order:
                    found = _run_child(
                        reader, warehouse, name, workload, options.rows, options.baseline
                    )
                    results.setdefault((reader, name, workload), []).append(found)
    if "spark" in readers:
        spark = _spark_all(warehouse, tables, workloads, options.rows, options.rounds)
        for (name, workload), answers in spark.items():
            results[("spark", name, workload)] = answers
    mismatches = _check(results, readers, tables, workloads)
    report = _report(results, readers, tables, workloads, options, built, mismatches)
    publish(report, options.record)
    return 1 if mismatches else 0


def _check(
    results: dict[tuple[str, str, str], list[dict[str, Any]]],
    readers: list[str],
    tables: list[str],
    workloads: list[str],
) -> list[str]:
    """Answers that disagree across readers and rounds (row count and checksum)."""
    wrong: list[str] = []
    for name in tables:
        for workload in workloads:
            answers = {
                (reader, a["rows"], a["checksum"])
                for reader in readers
                for a in results.get((reader, name, workload), [])
                if "refused" not in a
            }
            distinct = {(rows, checksum) for _, rows, checksum in answers}
            if workload == "first100":
                distinct = {(rows, checksum) for rows, checksum in distinct}
                bad = [a for a in answers if a[1] != 100 or a[2] != 100]
                if bad:
                    wrong.append(f"{name} {workload}: {sorted(bad)}")
            elif len(distinct) > 1:
                wrong.append(f"{name} {workload}: {sorted(answers)}")
    return wrong


def _report(
    results: dict[tuple[str, str, str], list[dict[str, Any]]],
    readers: list[str],
    tables: list[str],
    workloads: list[str],
    options: argparse.Namespace,
    built: float,
    mismatches: list[str],
) -> str:
    load = os.getloadavg()
    lines = [
        f"## {dt.date.today().isoformat()} · {platform.node()} · {os.cpu_count()} CPUs · "
        f"load {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}",
        "",
        "`python -m bench.read_bench "
        + " ".join(sys.argv[1:])
        + "`"
        + f" (tables built or reused in {built:.0f} s). Medians (± half "
        "the spread) of each reader's seconds, imports apart; ratio = peer / Icecore (below "
        "1: the peer is faster); peak = the child's peak RSS; Arrow = the first reader's "
        "result's ``nbytes``.",
        "",
        "| table | workload | " + " | ".join(readers) + " | answer |",
        "| --- | --- | " + " | ".join("---" for _ in readers) + " | --- |",
    ]
    for name in tables:
        for workload in workloads:
            mine = [
                a["seconds"]
                for a in results.get(("icecore", name, workload), [])
                if "refused" not in a
            ]
            base = statistics.median(mine) if mine else None
            cells = []
            answer = ""
            for reader in readers:
                found = results.get((reader, name, workload), [])
                refused = [a["refused"] for a in found if "refused" in a]
                ok = [a for a in found if "refused" not in a]
                if not ok:
                    cells.append(f"refused: {refused[0][:60]}" if refused else "–")
                    continue
                seconds = [a["seconds"] for a in ok]
                text = _cell(seconds)
                if reader != "icecore" and base:
                    text += f", {statistics.median(seconds) / base:.2f}x"
                peaks = [a.get("peak_mib", 0) for a in ok if a.get("peak_mib")]
                if peaks:
                    text += f", {max(peaks):.0f} MiB"
                cells.append(text)
                if not answer:
                    answer = f"{ok[0]['rows']:,} rows"
                    if ok[0].get("arrow_mib") is not None:
                        answer += f", {ok[0]['arrow_mib']:.0f} MiB Arrow"
            lines.append(f"| {name} | {workload} | " + " | ".join(cells) + f" | {answer} |")
    lines.append("")
    imports = []
    for reader in readers:
        took = [
            a["import_seconds"]
            for (r, _, _), found in results.items()
            if r == reader
            for a in found
            if "import_seconds" in a
        ]
        if took:
            imports.append(f"{reader} {statistics.median(took):.2f} s")
    if imports:
        lines.append("Imports, reported apart (median per process): " + ", ".join(imports) + ".")
        lines.append("")
    lines.append(
        "Answers agree across readers."
        if not mismatches
        else "MISMATCHES: " + "; ".join(mismatches)
    )
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
