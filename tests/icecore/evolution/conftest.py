"""Fixtures for evolution tests: hand-written tables for the rules, Spark tables for the oracle.

Rule tests use a small table written here by hand (a filesystem table in ``tmp_path`` with
no snapshots), so every expected value is derived from this file, not from the code under
test. Oracle tests create their own tables through Spark in catalogs registered on the
session for this module only (a JdbcCatalog on a temporary ``catalog.db`` and a Hadoop
catalog), so the shared fixture warehouse is never changed.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.table import Table
from pipeline.spark import jdbc_catalog_conf
from tests.pg_server import PgServer

from .hand_table import write_table


@pytest.fixture(params=[1, 2, 3], ids=["v1", "v2", "v3"])
def hand_table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    """The hand-written table in each format version, opened through its table folder."""
    return icecore.load_table(str(write_table(tmp_path, request.param)))


@pytest.fixture
def v2_table(tmp_path: Path) -> Table:
    return icecore.load_table(str(write_table(tmp_path, 2)))


@pytest.fixture
def v3_table(tmp_path: Path) -> Table:
    return icecore.load_table(str(write_table(tmp_path, 3)))


@pytest.fixture
def v1_table(tmp_path: Path) -> Table:
    return icecore.load_table(str(write_table(tmp_path, 1)))


# Spark -------------------------------------------------------------------------------------

_counter = itertools.count()


@dataclass(frozen=True)
class EvoCatalogs:
    """Two Spark catalogs over a private warehouse: ``sql`` (JdbcCatalog) and ``fs`` (Hadoop)."""

    spark: Any
    warehouse: Path
    sql: str
    fs: str
    pg: str | None = None
    pg_uri: str | None = None

    @property
    def sql_uri(self) -> str:
        return f"sqlite:///{self.warehouse / 'catalog.db'}"

    def spark_name(self, kind: str, name: str) -> str:
        catalog = {"sql": self.sql, "fs": self.fs, "pg": self.pg}[kind]
        return f"{catalog}.db.{name}"

    def table_arg(self, kind: str, name: str) -> str:
        """What icecore's load_table and CLI take for the table."""
        if kind == "sql":
            return f"{self.sql_uri}::db.{name}"
        if kind == "pg":
            return f"{self.pg_uri}::db.{name}"
        return str(self.warehouse / "hadoop" / "db" / name)

    def load(self, kind: str, name: str) -> Table:
        return icecore.load_table(self.table_arg(kind, name))

    def create(self, kind: str, name: str, ddl: str, *inserts: str) -> Table:
        """Create a table through Spark (``ddl`` after the table name), insert, load it."""
        full = self.spark_name(kind, name)
        self.spark.sql(f"CREATE TABLE {full} {ddl}")
        for values in inserts:
            self.spark.sql(f"INSERT INTO {full} VALUES {values}")
        return self.load(kind, name)


def register_catalogs(spark: Any, warehouse: Path, pg_uri: str | None = None) -> EvoCatalogs:
    """Register a JdbcCatalog and a Hadoop catalog on ``warehouse`` with caching off.

    With ``pg_uri``, also a JdbcCatalog on that PostgreSQL database (kind ``pg``).
    """
    n = next(_counter)
    sql, fs = f"evo_sql_{n}_{uuid.uuid4().hex[:6]}", f"evo_fs_{n}_{uuid.uuid4().hex[:6]}"
    warehouse.mkdir(parents=True, exist_ok=True)
    settings = {
        f"spark.sql.catalog.{sql}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{sql}.type": "jdbc",
        f"spark.sql.catalog.{sql}.uri": f"jdbc:sqlite:{warehouse / 'catalog.db'}",
        f"spark.sql.catalog.{sql}.warehouse": str(warehouse),
        f"spark.sql.catalog.{sql}.jdbc.busy_timeout": "10000",
        f"spark.sql.catalog.{sql}.jdbc.journal_mode": "WAL",
        f"spark.sql.catalog.{sql}.cache-enabled": "false",
        f"spark.sql.catalog.{fs}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{fs}.type": "hadoop",
        f"spark.sql.catalog.{fs}.warehouse": str(warehouse / "hadoop"),
        f"spark.sql.catalog.{fs}.cache-enabled": "false",
    }
    pg = f"evo_pg_{n}_{uuid.uuid4().hex[:6]}" if pg_uri else None
    if pg is not None and pg_uri is not None:
        settings |= jdbc_catalog_conf(pg, pg_uri, warehouse / "pg")
        settings[f"spark.sql.catalog.{pg}.cache-enabled"] = "false"
    for key, value in settings.items():
        spark.conf.set(key, value)
    # JdbcCatalog's catalog_name is the Spark catalog name; one catalog per database here.
    for catalog in (sql, fs, pg):
        if catalog is not None:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.db")
    return EvoCatalogs(spark, warehouse, sql, fs, pg, pg_uri)


@pytest.fixture(scope="module")
def evo(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EvoCatalogs]:
    """Private Spark catalogs for one test module (the shared warehouse stays untouched)."""
    yield register_catalogs(spark, tmp_path_factory.mktemp("evo"))


@pytest.fixture(scope="module")
def evo_pg(
    spark: Any, pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EvoCatalogs]:
    """As ``evo``, plus a JdbcCatalog on a fresh PostgreSQL database (kind ``pg``)."""
    uri = pg_server.create_database(f"evo_{uuid.uuid4().hex[:8]}")
    yield register_catalogs(spark, tmp_path_factory.mktemp("evo_pg"), pg_uri=uri)
