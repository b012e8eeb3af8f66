"""Spark's REST client through Icecore's server over a warehouse folder and over PostgreSQL.

The backing catalog is the judge: Spark's own HadoopCatalog on the same folder, Spark's
JdbcCatalog on the same PostgreSQL database, and Icecore opening either directly must see
what Spark (``type=rest``) and PyIceberg's RestCatalog wrote through the server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from icecore.catalog import load_catalog
from icecore.catalog.filesystem import FilesystemCatalog
from tests.icecore.server.conftest import RestServer, start_server, stop_server
from tests.pg_server import PgServer, with_catalog_tables


def _set(spark: Any, conf: dict[str, str]) -> None:
    for key, value in conf.items():
        spark.conf.set(key, value)


def _rest_conf(name: str, url: str) -> dict[str, str]:
    prefix = f"spark.sql.catalog.{name}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": url,
        f"{prefix}.cache-enabled": "false",
    }


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, name, note FROM {table}").collect())


def _snapshots(spark: Any, table: str) -> list[int]:
    return sorted(r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect())


def _write_and_evolve(spark: Any, table: str) -> None:
    """Create, insert twice, delete one row (merge-on-read), add a column, insert again."""
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING, day DATE) USING iceberg "
        "PARTITIONED BY (day) TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read')"
    )
    spark.sql(
        f"INSERT INTO {table} VALUES (1, 'a', DATE'2024-01-01'), (2, 'b', DATE'2024-01-01'), "
        "(3, 'c', DATE'2024-01-02')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (4, 'd', DATE'2024-01-02')")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN note STRING")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'e', DATE'2024-01-03', 'new')")


EXPECTED = [(1, "a", None), (3, "c", None), (4, "d", None), (5, "e", "new")]
"""The rows the statements above leave, worked out by hand."""


def _icecore_rows(table: Any) -> list[tuple[Any, ...]]:
    rows = table.scan().plan().to_arrow(columns=["id", "name", "note"]).to_pylist()
    return sorted((r["id"], r["name"], r["note"]) for r in rows)


# A warehouse folder -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fs_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    warehouse = tmp_path_factory.mktemp("fs_spark") / "wh"
    server = start_server(warehouse, catalog=str(warehouse))
    yield server
    stop_server(server)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


@pytest.mark.spark
def test_spark_rest_over_a_warehouse_folder_equals_spark_hadoop_catalog(
    spark: Any, fs_served: RestServer
) -> None:
    rest, hadoop = f"fsrest_{uuid.uuid4().hex[:6]}", f"fshadoop_{uuid.uuid4().hex[:6]}"
    _set(spark, _rest_conf(rest, fs_served.url))
    _set(
        spark,
        {
            f"spark.sql.catalog.{hadoop}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{hadoop}.type": "hadoop",
            f"spark.sql.catalog.{hadoop}.warehouse": str(fs_served.warehouse),
            f"spark.sql.catalog.{hadoop}.cache-enabled": "false",
        },
    )
    spark.sql(f"CREATE NAMESPACE {rest}.sp")
    assert (fs_served.warehouse / "sp").is_dir()
    _write_and_evolve(spark, f"{rest}.sp.t")
    spark.sql(f"CREATE TABLE {rest}.sp.other (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {rest}.sp.other VALUES (10), (11)")

    through_rest = _rows(spark, f"{rest}.sp.t")
    assert through_rest == EXPECTED
    assert _rows(spark, f"{hadoop}.sp.t") == through_rest
    assert _snapshots(spark, f"{hadoop}.sp.t") == _snapshots(spark, f"{rest}.sp.t")
    direct = FilesystemCatalog(str(fs_served.warehouse)).load_table("sp.t")
    assert _icecore_rows(direct) == through_rest
    peer = RestCatalog("peer", uri=fs_served.url).load_table("sp.t")
    assert sorted(peer.scan().to_arrow()["id"].to_pylist()) == [1, 3, 4, 5]

    # Spark's HadoopCatalog commits on the same folder; the server serves the new version.
    spark.sql(f"INSERT INTO {hadoop}.sp.t VALUES (6, 'f', DATE'2024-01-04', NULL)")
    assert _rows(spark, f"{rest}.sp.t") == [*EXPECTED, (6, "f", None)]

    # Spark's DROP ... PURGE over REST: SparkCatalog (Iceberg 1.10) drops without purge, then
    # deletes what the old metadata file reaches only if that file still exists. A dropped
    # filesystem table keeps every file, its version files moved aside: Spark deletes
    # nothing, and the table can be registered back (or purged through REST).
    table_dir = fs_served.warehouse / "sp" / "t"
    other_before = _files(fs_served.warehouse / "sp" / "other")
    data_before = {n for n in _files(table_dir) if n.startswith("data/")}
    spark.sql(f"DROP TABLE {rest}.sp.t PURGE")
    assert [r[1] for r in spark.sql(f"SHOW TABLES IN {hadoop}.sp").collect()] == ["other"]
    assert {n for n in _files(table_dir) if n.startswith("data/")} == data_before
    (current,) = sorted(
        (table_dir / "metadata").glob("dropped-*/v*.metadata.json"),
        key=lambda p: int(p.name[1:].split(".")[0]),
    )[-1:]
    peer_catalog = RestCatalog("peer", uri=fs_served.url)
    peer_catalog.register_table("sp.t", str(current))
    assert _rows(spark, f"{hadoop}.sp.t") == [*EXPECTED, (6, "f", None)]
    assert _rows(spark, f"{rest}.sp.t") == [*EXPECTED, (6, "f", None)]

    # Purged through REST: the table's files go, the other table's stay.
    peer_catalog.purge_table("sp.t")
    assert not table_dir.exists(), sorted(_files(table_dir)) if table_dir.exists() else None
    assert _files(fs_served.warehouse / "sp" / "other") == other_before
    assert [r[1] for r in spark.sql(f"SHOW TABLES IN {hadoop}.sp").collect()] == ["other"]
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {hadoop}.sp.other").collect()) == [
        10,
        11,
    ]


# PostgreSQL ---------------------------------------------------------------------------------

PG_CATALOG = "pgserved"
"""The ``catalog_name`` the server uses in PostgreSQL, and Spark's JdbcCatalog's name."""


@pytest.fixture(scope="module")
def pg_served(
    pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RestServer, str]]:
    uri = with_catalog_tables(pg_server.create_database(f"rest_{uuid.uuid4().hex[:8]}"))
    bare = uri.replace(f":{pg_server.password}@", "@") + f"?catalog={PG_CATALOG}"
    warehouse = tmp_path_factory.mktemp("pg_rest") / "wh"
    server = start_server(
        warehouse,
        # PostgreSQL has no warehouse folder: the operator names where tables may live.
        "--allow-location",
        str(warehouse / "tables"),
        catalog=bare,
        env={"PGPASSWORD": pg_server.password},
    )
    yield server, uri + f"?catalog={PG_CATALOG}"
    stop_server(server)


@pytest.mark.spark
def test_spark_and_pyiceberg_through_the_server_on_postgresql(
    spark: Any, pg_served: tuple[RestServer, str]
) -> None:
    from pipeline.spark import jdbc_catalog_conf

    server, pg_uri = pg_served
    tables = server.warehouse / "tables"
    rest = f"pgrest_{uuid.uuid4().hex[:6]}"
    _set(spark, _rest_conf(rest, server.url))
    jdbc = jdbc_catalog_conf(PG_CATALOG, pg_uri.split("?", 1)[0], tables)
    jdbc[f"spark.sql.catalog.{PG_CATALOG}.cache-enabled"] = "false"
    _set(spark, jdbc)

    # A PostgreSQL catalog has no warehouse folder: the namespace names where tables go.
    spark.sql(f"CREATE NAMESPACE {rest}.sp LOCATION '{tables}/sp'")
    _write_and_evolve(spark, f"{rest}.sp.t")

    # PyIceberg's RestCatalog creates, writes and evolves a second table.
    peer = RestCatalog("peer", uri=server.url)
    made = peer.create_table(
        "sp.py",
        Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "name", StringType(), required=False),
        ),
    )
    made.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["x", "y"]}))
    with made.update_schema() as update:
        update.add_column("note", StringType())
    made.refresh().append(pa.table({"id": pa.array([3], pa.int64()), "name": ["z"], "note": ["n"]}))

    direct = load_catalog(pg_uri)
    for name, expected in (
        ("t", EXPECTED),
        ("py", [(1, "x", None), (2, "y", None), (3, "z", "n")]),
    ):
        through_rest = _rows(spark, f"{rest}.sp.{name}")
        assert through_rest == expected
        assert _rows(spark, f"{PG_CATALOG}.sp.{name}") == through_rest
        table = direct.load_table(f"sp.{name}")
        assert _icecore_rows(table) == through_rest
        assert table.metadata_location == peer.load_table(f"sp.{name}").metadata_location
        assert sorted(s.snapshot_id for s in table.snapshots()) == _snapshots(
            spark, f"{rest}.sp.{name}"
        )
        pyiceberg_rows = peer.load_table(f"sp.{name}").scan().to_arrow().to_pylist()
        assert sorted((r["id"], r["name"], r["note"]) for r in pyiceberg_rows) == expected
    assert str(tables / "sp" / "t") in direct.load_table("sp.t").metadata.location
