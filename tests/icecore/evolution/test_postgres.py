"""The PostgreSQL catalog shared by Spark (JdbcCatalog), PyIceberg (SqlCatalog) and Icecore.

Spark is the oracle: it creates and writes tables through Iceberg's JdbcCatalog on a real
PostgreSQL server, Icecore must list and read them as Spark does, and Spark must read and
write what Icecore commits. Then the commit protocol under load (eight processes changing
one table's schema while Spark appends) and under faults (a dropped connection, the server
stopped in the middle of a swap).
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

import icecore
from icecore.errors import CommitStateUnknown
from icecore.table import Table
from tests.pg_server import PgServer

from .conftest import EvoCatalogs
from .spark_checks import (
    assert_icecore_reads_like_spark,
    assert_spark_sees_schema,
    partitioning,
)
from .test_concurrency import (
    append,
    check_ids,
    committed_everywhere,
    run_to_the_end,
    start_workers,
    wait_until_loaded,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BUSY_DDL = (
    "(id bigint, data string, cat string) USING iceberg "
    "TBLPROPERTIES ('format-version' = '2', 'commit.retry.num-retries' = '30', "
    "'write.spark.accept-any-schema' = 'true', 'write.metadata.previous-versions-max' = '100', "
    "'commit.retry.min-wait-ms' = '20', 'commit.retry.max-wait-ms' = '500')"
)

FAULT_DDL = (
    "(id bigint, data string, cat string) USING iceberg "
    "TBLPROPERTIES ('format-version' = '2', 'commit.retry.min-wait-ms' = '10')"
)


def test_icecore_lists_and_reads_what_spark_wrote(evo_pg: EvoCatalogs) -> None:
    full = evo_pg.spark_name("pg", "trips")
    evo_pg.create(
        "pg",
        "trips",
        "(id bigint, city string, ts timestamp) USING iceberg PARTITIONED BY (days(ts))",
        "(1, 'Milan', TIMESTAMP '2024-08-09 10:00:00'), "
        "(2, 'Paris', TIMESTAMP '2024-08-10 11:00:00')",
        "(3, 'Milan', TIMESTAMP '2024-08-10 12:00:00')",
    )
    evo_pg.spark.sql(f"DELETE FROM {full} WHERE id = 2")
    evo_pg.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {evo_pg.pg}.empty_ns")
    catalog = icecore.load_catalog(str(evo_pg.pg_uri))
    spark_namespaces = {
        tuple(r.namespace.split("."))
        for r in evo_pg.spark.sql(f"SHOW NAMESPACES IN {evo_pg.pg}").collect()
    }
    assert set(catalog.list_namespaces()) == spark_namespaces
    spark_tables = {
        f"db.{r.tableName}" for r in evo_pg.spark.sql(f"SHOW TABLES IN {evo_pg.pg}.db").collect()
    }
    assert {str(t) for t in catalog.list_tables(("db",))} == spark_tables
    table = catalog.load_table("db.trips")
    spark_snapshots = [
        (r.snapshot_id, r.operation)
        for r in evo_pg.spark.sql(
            f"SELECT snapshot_id, operation FROM {full}.snapshots ORDER BY committed_at"
        ).collect()
    ]
    assert [(s.snapshot_id, s.operation) for s in table.metadata.snapshots] == spark_snapshots
    files = {r.file_path for r in evo_pg.spark.sql(f"SELECT file_path FROM {full}.files").collect()}
    assert {str(p) for p in table.inspect("files").column("file_path").to_pylist()} == files
    assert_icecore_reads_like_spark(evo_pg, "pg", "trips", "id, city, ts")


def test_spark_reads_and_writes_icecore_commits(evo_pg: EvoCatalogs) -> None:
    full = evo_pg.spark_name("pg", "evolve")
    table = evo_pg.create(
        "pg", "evolve", "(id bigint, cat string) USING iceberg", "(1, 'a'), (2, 'b')"
    )
    table = table.update_schema().add_column("note", "string").commit()
    assert table is not None
    table = table.update_spec().add_field("id", "bucket[4]").commit()
    assert table is not None
    assert_spark_sees_schema(evo_pg.spark, full, table.metadata.current_schema())
    assert partitioning(evo_pg.spark, full) == ["bucket(4, id)"]
    evo_pg.spark.sql(f"INSERT INTO {full} VALUES (3, 'c', 'new')")
    fresh = table.refresh()
    written = evo_pg.spark.sql(f"SELECT spec_id FROM {full}.files").collect()
    assert fresh.metadata.default_spec_id in {r.spec_id for r in written}
    assert_icecore_reads_like_spark(evo_pg, "pg", "evolve", "id, cat, note")


def pyiceberg_catalog(evo: EvoCatalogs) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    uri = str(evo.pg_uri).replace("postgresql://", "postgresql+psycopg://")
    return SqlCatalog(str(evo.pg), uri=uri, warehouse=f"file://{evo.warehouse / 'pyiceberg'}")


def test_pyiceberg_and_icecore_share_the_catalog(evo_pg: EvoCatalogs) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    peer = pyiceberg_catalog(evo_pg)
    (evo_pg.warehouse / "pyiceberg").mkdir(exist_ok=True)
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
    )
    registered = peer.create_table("db.from_pyiceberg", schema=schema)
    ours = icecore.load_table(evo_pg.table_arg("pg", "from_pyiceberg"))
    assert ours.metadata_location == registered.metadata_location
    assert [(f.field_id, f.name) for f in ours.metadata.current_schema()] == [
        (1, "id"),
        (2, "name"),
    ]
    committed = ours.update_schema().add_column("extra", "int").commit()
    assert committed is not None
    again = peer.load_table("db.from_pyiceberg")
    assert again.metadata_location == committed.metadata_location
    assert [f.name for f in again.schema().fields] == ["id", "name", "extra"]

    spark_made = evo_pg.create("pg", "from_spark", "(id bigint) USING iceberg", "(7)")
    theirs = peer.load_table("db.from_spark")
    assert theirs.metadata_location == spark_made.metadata_location
    assert theirs.scan().to_arrow().column("id").to_pylist() == [7]
    full = evo_pg.spark_name("pg", "from_pyiceberg")
    evo_pg.spark.sql(f"INSERT INTO {full} VALUES (1, 'x', 5)")
    assert_icecore_reads_like_spark(evo_pg, "pg", "from_pyiceberg", "id, name, extra")


def test_eight_schema_writers_and_spark_appends(evo_pg: EvoCatalogs, tmp_path: Path) -> None:
    """Eight processes add eight columns from one stale base while Spark appends three times.

    All eight bases require the same current schema, so at most one first attempt can land:
    at least seven CommitConflicts; each writer then reloads and tries again until its
    column is in. Every column must end up present, with its own field id.
    """
    full = evo_pg.spark_name("pg", "busy")
    evo_pg.create("pg", "busy", BUSY_DDL)
    append(evo_pg, full, [(1, "a", "p"), (2, "b", "q")])
    jobs = {
        f"w{i}": [{"kind": "add_column", "name": f"c{i}", "type": "string", "retries": 40}]
        for i in range(8)
    }
    procs = start_workers(evo_pg, "pg", "busy", tmp_path, jobs)
    wait_until_loaded(tmp_path, procs)
    (tmp_path / "go").write_text("go")
    for i in range(3):
        append(evo_pg, full, [(10 + i, "s", "r")])
    results = run_to_the_end(procs, tmp_path)

    errors = [r for entries in results.values() for r in entries if "error" in r]
    assert {r["error"] for r in errors} <= {"CommitConflict"}, errors
    assert len(errors) >= 7
    assert all("current schema changed" in r["message"] for r in errors)
    assert all("location" in entries[-1] for entries in results.values()), results

    table = evo_pg.load("pg", "busy")
    md = table.metadata
    check_ids(md)
    committed_everywhere(table, results)
    names = [f.name for f in md.current_schema().fields]
    assert names[:3] == ["id", "data", "cat"]
    assert sorted(names[3:]) == [f"c{i}" for i in range(8)]
    assert len([s for s in md.snapshots if s.operation == "append"]) == 4
    assert_spark_sees_schema(evo_pg.spark, full, md.current_schema())
    assert evo_pg.spark.sql(f"SELECT count(*) AS n FROM {full}").collect()[0].n == 5
    assert_icecore_reads_like_spark(evo_pg, "pg", "busy", "id, data, cat, c0, c7")


class RowLock:
    """Another session holding the table's catalog row locked, so a swap waits on it."""

    def __init__(self, uri: str, name: str) -> None:
        self.uri = uri
        self.conn = psycopg.connect(uri)
        self.conn.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_name = %s FOR UPDATE",
            (name,),
        )

    def waiting_swap(self, seconds: float = 60.0) -> int:
        """The backend pid of the swap blocked on this lock."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with psycopg.connect(self.uri, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE 'UPDATE iceberg_tables%%'"
                ).fetchone()
            if row is not None:
                return int(row[0])
            time.sleep(0.05)
        raise AssertionError("no swap waited on the lock")

    def release(self) -> None:
        """Roll back and close (the server may have ended the session already)."""
        with contextlib.suppress(psycopg.OperationalError):
            self.conn.rollback()
        self.conn.close()


def commit_in_thread(table: Table, column: str) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["table"] = table.update_schema().add_column(column, "string").commit()
        except Exception as e:  # the test inspects what reached the caller
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def metadata_files(evo: EvoCatalogs, name: str) -> set[str]:
    folder = evo.warehouse / "pg" / "db" / name / "metadata"
    return {p.name for p in folder.iterdir() if p.name.endswith(".metadata.json")}


def test_dropped_connection_mid_swap_is_resolved_and_retried(evo_pg: EvoCatalogs) -> None:
    before = evo_pg.create("pg", "dropped", FAULT_DDL, "(1, 'a', 'p')")
    files = metadata_files(evo_pg, "dropped")
    lock = RowLock(str(evo_pg.pg_uri), "dropped")
    try:
        thread, outcome = commit_in_thread(before, "z")
        pid = lock.waiting_swap()
        with psycopg.connect(str(evo_pg.pg_uri), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    finally:
        lock.release()
    thread.join(120)
    assert "error" not in outcome, outcome
    committed = outcome["table"]
    # The unknown outcome was settled by loading the table (not current, not logged), and
    # the change made again: the first file stays, unreferenced, and nothing is lost.
    new_files = metadata_files(evo_pg, "dropped") - files
    assert len(new_files) == 2
    assert committed.metadata_location.rsplit("/", 1)[1] in new_files
    assert committed.metadata.metadata_log[-1].metadata_file == before.metadata_location
    assert_spark_sees_schema(
        evo_pg.spark, evo_pg.spark_name("pg", "dropped"), committed.metadata.current_schema()
    )
    assert_icecore_reads_like_spark(evo_pg, "pg", "dropped", "id, data, cat, z")


def spark_after_restart(spark: Any, sql: str, tries: int = 4) -> None:
    """Run ``sql`` on Spark once its JdbcCatalog has replaced connections the restart ended.

    Iceberg's JdbcClientPool reconnects only for SQLSTATE 08xxx (and 40001); a pooled
    connection the server ended at shutdown fails once with 57P01 ("terminating connection
    due to administrator command") and then, closed, with 08003, after which it is replaced.
    """
    for attempt in range(tries):
        try:
            spark.sql(sql).collect()
            return
        except Exception as e:  # Py4J wraps the JDBC driver's PSQLException
            text = str(e)
            retry = "terminating connection" in text or "has been closed" in text
            if not retry or attempt == tries - 1:
                raise


def test_server_stopped_mid_swap(evo_pg: EvoCatalogs, pg_server: PgServer) -> None:
    before = evo_pg.create("pg", "stopped", FAULT_DDL, "(1, 'a', 'p')")
    lock = RowLock(str(evo_pg.pg_uri), "stopped")
    thread, outcome = commit_in_thread(before, "z")
    try:
        lock.waiting_swap()
        pg_server.stop("fast")
        thread.join(120)
    finally:
        lock.release()
        if not (pg_server.data / "postmaster.pid").exists():
            pg_server.start()
    error = outcome.get("error")
    assert isinstance(error, CommitStateUnknown), outcome
    assert error.metadata_location is not None
    assert pg_server.password not in str(error)
    # Resolved on the next load: the swap's transaction never committed, so the table is
    # where it was; the written file is kept; the change can be made again and Spark reads it.
    table = evo_pg.load("pg", "stopped")
    assert table.metadata_location == before.metadata_location
    assert Path(error.metadata_location.removeprefix("file:")).is_file()
    committed = table.update_schema().add_column("z", "string").commit()
    assert committed is not None
    full = evo_pg.spark_name("pg", "stopped")
    spark_after_restart(evo_pg.spark, f"INSERT INTO {full} VALUES (2, 'b', 'q', 'zz')")
    assert_icecore_reads_like_spark(evo_pg, "pg", "stopped", "id, data, cat, z")
