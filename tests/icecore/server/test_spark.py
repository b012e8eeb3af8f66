"""Spark's own REST client (Iceberg Java's ``RESTCatalog``) writing through Icecore's server.

Spark creates, writes (INSERT, a merge-on-read DELETE), evolves and compacts a table
through the server; what it reads back through REST must equal what the backing SQLite
catalog holds, read by Spark through its JdbcCatalog on the same file and by Icecore
directly, and PyIceberg's REST client must read the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.rest import RestCatalog

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer, start_server, stop_server

CATALOG_NAME = "rest_jdbc"
"""The Spark name of the JdbcCatalog on the backing file: JdbcCatalog keys its rows by it."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = start_server(tmp_path_factory.mktemp("spark_rest") / "wh", catalog_name=CATALOG_NAME)
    yield server
    stop_server(server)


def _register(spark: Any, server: RestServer) -> None:
    from pipeline.spark import jdbc_catalog_conf

    spark.conf.set("spark.sql.catalog.served", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.served.type", "rest")
    spark.conf.set("spark.sql.catalog.served.uri", server.url)
    for key, value in jdbc_catalog_conf(
        CATALOG_NAME, str(server.catalog_db), server.warehouse
    ).items():
        spark.conf.set(key, value)


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, name, note FROM {table}").collect())


def _snapshots(spark: Any, table: str) -> list[int]:
    return sorted(r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect())


@pytest.mark.spark
def test_spark_writes_evolves_and_compacts_through_the_server(
    spark: Any, served: RestServer, tmp_path: Path
) -> None:
    _register(spark, served)
    spark.sql("CREATE NAMESPACE served.sp")
    spark.sql(
        "CREATE TABLE served.sp.t (id BIGINT, name STRING, day DATE) USING iceberg "
        "PARTITIONED BY (day) TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read')"
    )
    spark.sql(
        "INSERT INTO served.sp.t VALUES (1, 'a', DATE'2024-01-01'), (2, 'b', DATE'2024-01-01'), "
        "(3, 'c', DATE'2024-01-02')"
    )
    spark.sql("INSERT INTO served.sp.t VALUES (4, 'd', DATE'2024-01-02')")
    spark.sql("DELETE FROM served.sp.t WHERE id = 2")
    spark.sql("ALTER TABLE served.sp.t ADD COLUMN note STRING")
    spark.sql("INSERT INTO served.sp.t VALUES (5, 'e', DATE'2024-01-03', 'new')")

    # Through REST, through Spark's JdbcCatalog on the backing file, and by Icecore directly.
    through_rest = _rows(spark, "served.sp.t")
    through_jdbc = _rows(spark, f"{CATALOG_NAME}.sp.t")
    assert through_rest == through_jdbc
    assert [r[0] for r in through_rest] == [1, 3, 4, 5]
    direct = SqlCatalog(served.catalog_db, catalog_name=CATALOG_NAME).load_table("sp.t")
    icecore_rows = direct.scan().plan().to_arrow(columns=["id", "name", "note"]).to_pylist()
    assert sorted((r["id"], r["name"], r["note"]) for r in icecore_rows) == through_rest
    assert _snapshots(spark, "served.sp.t") == _snapshots(spark, f"{CATALOG_NAME}.sp.t")
    assert sorted(s.snapshot_id for s in direct.snapshots()) == _snapshots(spark, "served.sp.t")
    assert direct.metadata.current_schema().find_field_by_name("note") is not None

    # PyIceberg's REST client reads the same rows (position deletes applied).
    peer = RestCatalog("peer", uri=served.url).load_table("sp.t")
    assert peer.metadata_location == direct.metadata_location
    assert sorted(peer.scan().to_arrow()["id"].to_pylist()) == [1, 3, 4, 5]

    # Maintenance through REST: rewrite_data_files commits a replace snapshot via the server.
    before = len(direct.snapshots())
    result = spark.sql(
        "CALL served.system.rewrite_data_files(table => 'sp.t', "
        "options => map('min-input-files', '1'))"
    ).collect()
    assert result[0]["rewritten_data_files_count"] > 0
    after = SqlCatalog(served.catalog_db, catalog_name=CATALOG_NAME).load_table("sp.t")
    assert len(after.snapshots()) == before + 1
    current = after.metadata.current_snapshot()
    assert current is not None and current.operation == "replace"
    assert _rows(spark, "served.sp.t") == through_rest
    assert _rows(spark, f"{CATALOG_NAME}.sp.t") == through_rest
    spark.sql("DROP TABLE served.sp.t")
    assert SqlCatalog(served.catalog_db, catalog_name=CATALOG_NAME).list_tables(("sp",)) == []
