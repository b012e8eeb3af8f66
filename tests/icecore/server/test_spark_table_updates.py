"""Spark's maintenance procedures commit every newer update type through Icecore's server.

``compute_table_stats`` writes a Puffin file and commits ``set-statistics``;
``compute_partition_stats`` commits ``set-partition-statistics``; ``expire_snapshots`` with
``clean_expired_metadata => true`` (Iceberg 1.10) commits ``remove-snapshots`` with
``remove-schemas`` and ``remove-partition-specs``. Before these were applied, the server
answered each with 400 and the procedure failed. Spark is the oracle: what the procedure
reports, what Spark's JdbcCatalog (Iceberg Java parsing the file the server wrote) reads
on the same backing catalog, and what PyIceberg's SqlCatalog reads there after the expiry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer, start_server, stop_server

SERVED = "served_upd"
JDBC = "rest_jdbc_upd"
"""Spark names of the REST catalog and of the JdbcCatalog on the server's backing file."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = start_server(tmp_path_factory.mktemp("spark_upd") / "wh", catalog_name=JDBC)
    yield server
    stop_server(server)


def _register(spark: Any, server: RestServer) -> None:
    from pipeline.spark import jdbc_catalog_conf

    spark.conf.set(f"spark.sql.catalog.{SERVED}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{SERVED}.type", "rest")
    spark.conf.set(f"spark.sql.catalog.{SERVED}.uri", server.url)
    for key, value in jdbc_catalog_conf(JDBC, str(server.catalog_db), server.warehouse).items():
        spark.conf.set(key, value)


def _load(server: RestServer, name: str) -> Any:
    return SqlCatalog(server.catalog_db, catalog_name=JDBC).load_table(name)


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {table}").collect())


@pytest.mark.spark
def test_statistics_and_expiry_with_metadata_cleanup_through_the_server(
    spark: Any, served: RestServer
) -> None:
    _register(spark, served)
    spark.sql(f"CREATE NAMESPACE {SERVED}.up")
    table = f"{SERVED}.up.t"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING) USING iceberg PARTITIONED BY (name) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'a')")

    # compute_table_stats: a Puffin file, registered by set-statistics.
    stats_row = spark.sql(f"CALL {SERVED}.system.compute_table_stats(table => 'up.t')").collect()
    stats_path = stats_row[0]["statistics_file"]
    t = _load(served, "up.t")
    current = t.metadata.current_snapshot_id
    assert [(s.snapshot_id, s.statistics_path) for s in t.metadata.statistics] == [
        (current, stats_path)
    ]
    # The file the server wrote, read as plain JSON, names the same file; and Iceberg Java
    # (Spark's JdbcCatalog on the same backing catalog) parses it and reads the table.
    raw = json.loads(t.io.read(t.metadata_location))
    assert [s["statistics-path"] for s in raw["statistics"]] == [stats_path]
    blob_types = {b["type"] for b in raw["statistics"][0]["blob-metadata"]}
    assert blob_types == {"apache-datasketches-theta-v1"}
    assert _rows(spark, f"{JDBC}.up.t") == [(1, "a"), (2, "b"), (3, "a")]

    # compute_partition_stats: set-partition-statistics.
    pstats_row = spark.sql(
        f"CALL {SERVED}.system.compute_partition_stats(table => 'up.t')"
    ).collect()
    pstats_path = pstats_row[0]["partition_statistics_file"]
    t = _load(served, "up.t")
    assert [(p.snapshot_id, p.statistics_path) for p in t.metadata.partition_statistics] == [
        (current, pstats_path)
    ]

    # A new schema and a new partition spec; the overwrite leaves no file of the old spec.
    spark.sql(f"ALTER TABLE {table} ADD COLUMN note STRING")
    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD bucket(4, id)")
    # Two overwrites: the first one's manifests still list the old files as deleted (spec 0),
    # the second one's only files of spec 1; expiring all but it leaves spec 0 and schema 0
    # reachable from no snapshot (Iceberg Java's RemoveSnapshots.cleanExpiredMetadata).
    spark.sql(f"INSERT OVERWRITE {table} SELECT id, name, 'n' FROM {table}")
    spark.sql(f"INSERT OVERWRITE {table} SELECT id, name, note FROM {table}")
    before = _load(served, "up.t").metadata
    assert sorted(s.schema_id for s in before.schemas) == [0, 1]
    assert sorted(s.spec_id for s in before.partition_specs) == [0, 1]
    newest = before.current_snapshot_id
    manifest_specs = {
        r[0] for r in spark.sql(f"SELECT partition_spec_id FROM {table}.manifests").collect()
    }
    assert manifest_specs == {1}

    # expire_snapshots with clean_expired_metadata: remove-snapshots, -schemas, -partition-specs.
    result = spark.sql(
        f"CALL {SERVED}.system.expire_snapshots(table => 'up.t', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1, "
        "clean_expired_metadata => true)"
    ).collect()
    assert result[0]["deleted_manifest_lists_count"] >= 1
    after = _load(served, "up.t").metadata
    assert [s.snapshot_id for s in after.snapshots] == [newest]
    assert [s.schema_id for s in after.snapshots] == [1]
    assert [s.schema_id for s in after.schemas] == [1], after.metadata_log
    assert [s.spec_id for s in after.partition_specs] == [1]
    # The statistics of the expired snapshot went with it.
    assert after.statistics == () and after.partition_statistics == ()
    expected = [(1, "a", "n"), (2, "b", "n"), (3, "a", "n")]
    assert _rows(spark, table) == expected
    # PyIceberg's SqlCatalog on the backing file reads the same rows from what is left.
    peer = PyIcebergSqlCatalog(
        JDBC, uri=f"sqlite:///{served.catalog_db}", warehouse=str(served.warehouse)
    ).load_table("up.t")
    assert sorted(tuple(r.values()) for r in peer.scan().to_arrow().to_pylist()) == expected
    spark.sql(f"DROP TABLE {table}")


def _state(spark: Any, server: RestServer, catalog: str, backing: str) -> tuple[Any, ...]:
    """What a DDL left on ``ddl.t``: current schema's fields, ``last-column-id``, rows.

    The metadata is read by Icecore from the backing file (``backing`` names the
    JdbcCatalog rows), the rows by Spark through ``catalog``.
    """
    md = SqlCatalog(server.catalog_db, catalog_name=backing).load_table("ddl.t").metadata
    return md.current_schema().fields, md.last_column_id, _rows(spark, f"{catalog}.ddl.t")


@pytest.mark.spark
def test_dropping_the_newest_column_and_replacing_with_fewer_columns_equal_jdbc(
    spark: Any, served: RestServer
) -> None:
    """Iceberg Java's REST client sends the new schema's highest id as ``last-column-id``.

    Dropping the newest column lowers that id; the server answered 400 "would lower
    last-column-id" where Iceberg Java's server keeps the larger value. The same DDL on a
    table of Spark's own JdbcCatalog (a catalog of its own in the same backing file, run
    first: SQLite refuses a write from a JDBC connection whose snapshot the server's
    writes made stale) is the oracle.
    """
    from pipeline.spark import jdbc_catalog_conf

    _register(spark, served)
    oracle = "rest_jdbc_ddl"
    for key, value in jdbc_catalog_conf(oracle, str(served.catalog_db), served.warehouse).items():
        spark.conf.set(key, value)
    states: dict[str, list[tuple[Any, ...]]] = {}
    for catalog in (oracle, SERVED):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.ddl")
        table = f"{catalog}.ddl.t"
        spark.sql(
            f"CREATE TABLE {table} (id BIGINT, name STRING, extra STRING) USING iceberg "
            "TBLPROPERTIES ('format-version'='2')"
        )
        spark.sql(f"INSERT INTO {table} VALUES (1, 'a', 'x'), (2, 'b', 'y')")
        spark.sql(f"ALTER TABLE {table} DROP COLUMN extra")
        backing = JDBC if catalog == SERVED else oracle
        dropped = _state(spark, served, catalog, backing)
        spark.sql(
            f"REPLACE TABLE {table} USING iceberg TBLPROPERTIES ('format-version'='2') "
            "AS SELECT CAST(7 AS BIGINT) AS id"
        )
        states[catalog] = [dropped, _state(spark, served, catalog, backing)]
    assert states[SERVED] == states[oracle]
    (fields, _, rows), (replaced_fields, _, replaced_rows) = states[SERVED]
    assert [f.name for f in fields] == ["id", "name"] and rows == [(1, "a"), (2, "b")]
    assert [f.name for f in replaced_fields] == ["id"] and replaced_rows == [(7,)]
