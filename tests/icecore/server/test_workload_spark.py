"""Spark's own metrics reports, kept by ``serve-rest`` and listed by ``icecore workload``.

Spark (Iceberg Java's ``RESTCatalog``, ``type=rest``) writes and queries a table through the
server; Iceberg's REST client POSTs a ``ScanReport`` per scan and a ``CommitReport`` per
commit on its own. ``icecore workload`` must list each scan with the filter Spark pushed and
the counts Spark's ScanReport carried: the expected values come from Spark itself (its
``files`` and ``snapshots`` metadata tables, read through its JdbcCatalog on the same
file) and from Java's documented masking (``100`` has 3 digits: ``(3-digit-int)``), never
from the code under test.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest

from icecore.workload import mask
from tests.conftest import REPO
from tests.icecore.server.conftest import RestServer, start_server, stop_server

TABLE = "wl.t"


CATALOG_NAME = f"wl_{uuid.uuid4().hex[:8]}"
"""The served catalog's name, this module's own: Spark keeps a catalog it loaded once, so a
name another module registered (with another server's address) cannot be reused."""
REST = f"served_{CATALOG_NAME}"


def _register(spark: Any, server: RestServer) -> None:
    """Spark's REST catalog on ``server`` and its JdbcCatalog on the same database."""
    from pipeline.spark import jdbc_catalog_conf

    spark.conf.set(f"spark.sql.catalog.{REST}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{REST}.type", "rest")
    spark.conf.set(f"spark.sql.catalog.{REST}.uri", server.url)
    for key, value in jdbc_catalog_conf(
        CATALOG_NAME, str(server.catalog_db), server.warehouse
    ).items():
        spark.conf.set(key, value)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = start_server(tmp_path_factory.mktemp("workload") / "wh", catalog_name=CATALOG_NAME)
    yield server
    stop_server(server)


def workload_of(server: RestServer, *extra: str) -> dict[str, Any]:
    spec = f"sqlite:///{server.catalog_db}?catalog={CATALOG_NAME}::{TABLE}"
    done = subprocess.run(
        [sys.executable, "-m", "icecore", "workload", spec, *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def raw_reports(server: RestServer) -> list[dict[str, Any]]:
    """The report bodies as the server received them, read straight from the database."""
    with closing(sqlite3.connect(server.catalog_db)) as conn:
        rows = conn.execute(
            "SELECT report FROM icecore_reports WHERE table_name = ? ORDER BY seq", (TABLE,)
        ).fetchall()
    return [json.loads(r[0]) for r in rows]


@pytest.mark.spark
def test_workload_lists_what_spark_reported(spark: Any, served: RestServer) -> None:
    _register(spark, served)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {REST}.wl")
    spark.sql(
        f"CREATE TABLE {REST}.wl.t (id BIGINT, name STRING, day DATE) USING iceberg "
        "PARTITIONED BY (day) TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(
        f"INSERT INTO {REST}.wl.t VALUES (1, 'a', DATE'2024-01-01'), (2, 'b', DATE'2024-01-02')"
    )
    spark.sql(f"INSERT INTO {REST}.wl.t VALUES (150, 'c', DATE'2024-01-03')")
    spark.sql(f"INSERT INTO {REST}.wl.t VALUES (7, 'd', DATE'2024-01-01')")

    queries = {
        "id": f"SELECT name FROM {REST}.wl.t WHERE id > 100",
        "day": f"SELECT id FROM {REST}.wl.t WHERE day = DATE'2024-01-01'",
        "all": f"SELECT * FROM {REST}.wl.t",
        "name": f"SELECT id FROM {REST}.wl.t WHERE name = 'c'",
    }
    got = {k: spark.sql(q).collect() for k, q in queries.items()}
    assert [r[0] for r in got["id"]] == ["c"] and len(got["all"]) == 4
    assert [r[0] for r in got["name"]] == [150]

    # The oracles, from Spark through its JdbcCatalog on the same file.
    files = f"{CATALOG_NAME}.wl.t.files"
    all_files = spark.sql(f"SELECT count(*) FROM {files}").collect()[0][0]
    day_files = spark.sql(
        f"SELECT count(*) FROM {files} WHERE partition.day = DATE'2024-01-01'"
    ).collect()[0][0]
    id_files = spark.sql(
        f"SELECT count(*) FROM {files} WHERE upper_bounds[1] IS NOT NULL"
    ).collect()
    snapshots = {
        r["snapshot_id"]: r["summary"]
        for r in spark.sql(
            f"SELECT snapshot_id, summary FROM {CATALOG_NAME}.wl.t.snapshots"
        ).collect()
    }
    assert all_files == 4 and day_files == 2 and id_files[0][0] == 4

    found = workload_of(served)
    scans = found["scans"]
    assert len(scans) == len(queries)
    by_filter = {s["filter"]: s for s in scans}
    print(json.dumps(scans, indent=1)[:6000])
    # Spark pushes id > 100 (with its not-null guard); Java masks 100 as (3-digit-int).
    id_scan = next(s for f, s in by_filter.items() if "id > (3-digit-int)" in f)
    day_scan = next(s for f, s in by_filter.items() if "day = " in f)
    full = [s for s in scans if s["filter"] == "true"]
    assert full and full[0]["result_data_files"] == all_files
    assert day_scan["result_data_files"] == day_files
    # Java counts as skipped only the files of the manifests it opened: read what Spark sent.
    sent = raw_reports(served)
    assert len(sent) == len(scans) + len(found["commits"])
    for scan, body in zip(
        scans, [b for b in sent if b["report-type"] == "scan-report"], strict=True
    ):
        metrics = body["metrics"]
        assert scan["skipped_data_files"] == metrics["skipped-data-files"]["value"]
        assert scan["result_data_files"] == metrics["result-data-files"]["value"]
        assert scan["total_file_size_in_bytes"] == metrics["total-file-size-in-bytes"]["value"]
        assert scan["snapshot_id"] == body["snapshot-id"]
    assert day_scan["skipped_data_files"] <= all_files - day_files
    # Java hashes a string literal as bucket[2147483647] of it: Icecore masks 'c' the same.
    assert any(f"name = {mask('c')}" in f for f in by_filter)
    # Metrics pruning of id > 100 keeps the one file whose upper bound on id is 150.
    assert id_scan["result_data_files"] == 1
    assert id_scan["projected_columns"] == ["id", "name"] or set(id_scan["projected_columns"]) >= {
        "name"
    }
    for scan in (id_scan, day_scan, full[0]):
        assert scan["engine"] is not None and scan["engine"].startswith("spark")
        assert scan["planning_ms"] is not None and scan["planning_ms"] >= 0
        assert scan["total_file_size_in_bytes"] > 0
    groups = {g["filter"] for g in found["filters"]}
    assert "true" in groups and any("id > (3-digit-int)" in g for g in groups)
    columns = [c["column"] for c in found["columns"]]
    assert {"id", "day"} <= set(columns)
    # Each INSERT's CommitReport: the files Spark's snapshot summary says it added.
    commits = {c["snapshot_id"]: c for c in found["commits"]}
    assert len(commits) >= 3
    for snapshot_id, commit in commits.items():
        assert commit["added_data_files"] == int(snapshots[snapshot_id]["added-data-files"])
        assert commit["attempts"] >= 1 and commit["duration_ms"] > 0
    # --since after everything: nothing.
    assert workload_of(served, "--since", "2999-01-01T00:00:00Z")["scans"] == []
