"""Fixtures for evolution tests: hand-written tables for the rules, Spark tables for the oracle.

Rule tests use a small table written here by hand (a filesystem table in ``tmp_path`` with
no snapshots), so every expected value is derived from this file, not from the code under
test. Oracle tests create their own tables through Spark in catalogs registered on the
session for this module only (a JdbcCatalog on a temporary ``catalog.db`` and a Hadoop
catalog), so the shared fixture warehouse is never changed.
"""

from __future__ import annotations

import copy
import itertools
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.table import Table

SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
        {"id": 3, "name": "qty", "required": False, "type": "int"},
        {"id": 4, "name": "score", "required": False, "type": "float"},
        {"id": 5, "name": "amount", "required": False, "type": "decimal(12,2)"},
        {"id": 6, "name": "ts", "required": False, "type": "timestamptz"},
        {
            "id": 7,
            "name": "loc",
            "required": False,
            "type": {
                "type": "struct",
                "fields": [
                    {"id": 10, "name": "lat", "required": False, "type": "double"},
                    {"id": 11, "name": "lon", "required": False, "type": "double"},
                ],
            },
        },
        {
            "id": 8,
            "name": "tags",
            "required": False,
            "type": {
                "type": "list",
                "element-id": 12,
                "element": {
                    "type": "struct",
                    "fields": [{"id": 13, "name": "k", "required": False, "type": "string"}],
                },
                "element-required": False,
            },
        },
        {
            "id": 9,
            "name": "attrs",
            "required": False,
            "type": {
                "type": "map",
                "key-id": 14,
                "key": "string",
                "value-id": 15,
                "value": {
                    "type": "struct",
                    "fields": [{"id": 16, "name": "v", "required": False, "type": "int"}],
                },
                "value-required": False,
            },
        },
    ],
}
LAST_COLUMN_ID = 16
SPEC: dict[str, Any] = {
    "spec-id": 0,
    "fields": [
        {"source-id": 1, "field-id": 1000, "name": "id_bucket", "transform": "bucket[4]"},
        {"source-id": 6, "field-id": 1001, "name": "ts_day", "transform": "day"},
    ],
}
SORT_ORDER: dict[str, Any] = {
    "order-id": 1,
    "fields": [
        {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"}
    ],
}


def table_json(format_version: int, location: str) -> dict[str, Any]:
    """The hand-written table's metadata JSON, in the shape Spark writes for the version."""
    md: dict[str, Any] = {
        "format-version": format_version,
        "table-uuid": "2b2f5a4e-7c1d-4f1e-9a62-2a0d6b7f3c11",
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": 1_700_000_000_000,
        "last-column-id": LAST_COLUMN_ID,
        "current-schema-id": 0,
        "schemas": [copy.deepcopy(SCHEMA)],
        "default-spec-id": 0,
        "partition-specs": [copy.deepcopy(SPEC)],
        "last-partition-id": 1001,
        "default-sort-order-id": 1,
        "sort-orders": [{"order-id": 0, "fields": []}, copy.deepcopy(SORT_ORDER)],
        "properties": {"owner": "tests", "write.metadata.metrics.column.name": "full"},
        "current-snapshot-id": -1,
        "refs": {},
        "snapshots": [],
        "statistics": [],
        "snapshot-log": [],
        "metadata-log": [],
        "a-future-key": {"kept": True},
    }
    if format_version == 1:
        del md["last-sequence-number"]
        md["schema"] = copy.deepcopy(SCHEMA)
        md["partition-spec"] = copy.deepcopy(SPEC["fields"])
    if format_version >= 3:
        md["next-row-id"] = 0
    return md


def write_table(root: Path, format_version: int = 2, name: str = "t") -> Path:
    """Write the hand-written table as ``<root>/db/<name>`` (Hadoop layout, version 1)."""
    folder = root / "db" / name
    (folder / "metadata").mkdir(parents=True)
    text = json.dumps(table_json(format_version, str(folder)), indent=2)
    (folder / "metadata" / "v1.metadata.json").write_text(text)
    (folder / "metadata" / "version-hint.text").write_text("1")
    return folder


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


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime: proof that nothing was written."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# Spark -------------------------------------------------------------------------------------

_counter = itertools.count()


@dataclass(frozen=True)
class EvoCatalogs:
    """Two Spark catalogs over a private warehouse: ``sql`` (JdbcCatalog) and ``fs`` (Hadoop)."""

    spark: Any
    warehouse: Path
    sql: str
    fs: str

    @property
    def sql_uri(self) -> str:
        return f"sqlite:///{self.warehouse / 'catalog.db'}"

    def spark_name(self, kind: str, name: str) -> str:
        return f"{self.sql if kind == 'sql' else self.fs}.db.{name}"

    def table_arg(self, kind: str, name: str) -> str:
        """What icecore's load_table and CLI take for the table."""
        if kind == "sql":
            return f"{self.sql_uri}::db.{name}"
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


def register_catalogs(spark: Any, warehouse: Path) -> EvoCatalogs:
    """Register a JdbcCatalog and a Hadoop catalog on ``warehouse`` with caching off."""
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
    for key, value in settings.items():
        spark.conf.set(key, value)
    # JdbcCatalog's catalog_name is the Spark catalog name; one catalog per database here.
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {sql}.db")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {fs}.db")
    return EvoCatalogs(spark, warehouse, sql, fs)


@pytest.fixture(scope="module")
def evo(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EvoCatalogs]:
    """Private Spark catalogs for one test module (the shared warehouse stays untouched)."""
    yield register_catalogs(spark, tmp_path_factory.mktemp("evo"))
