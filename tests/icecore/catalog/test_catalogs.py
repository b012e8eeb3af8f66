"""Catalog listing and current-metadata resolution, checked against Spark and PyIceberg."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from icecore.catalog import (
    FilesystemCatalog,
    SqlCatalog,
    StaticCatalog,
    TableIdentifier,
    load_catalog,
)
from icecore.errors import CatalogUnavailable, InvalidMetadata, NotFound
from tests.conftest import _free_port


@pytest.mark.spark
def test_sql_catalog_lists_what_spark_lists(spark: Any, demo_warehouse: Path) -> None:
    catalog = load_catalog(demo_warehouse)
    assert isinstance(catalog, SqlCatalog)
    spark_tables = {
        f"{r.namespace}.{r.tableName}" for r in spark.sql("SHOW TABLES IN icecore.demo").collect()
    }
    assert {str(t) for t in catalog.list_tables()} == spark_tables
    assert catalog.list_namespaces() == [("demo",)]
    for ident in catalog.list_tables():
        # Spark's metadata_log_entries' newest entry is the table's current metadata file.
        latest = spark.sql(
            f"SELECT file FROM icecore.{ident}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
        ).collect()[0][0]
        assert catalog.metadata_location(ident).removeprefix("file:") == latest.removeprefix(
            "file:"
        )


@pytest.mark.spark
def test_filesystem_catalog_resolves_what_spark_reads(spark: Any, demo_warehouse: Path) -> None:
    catalog = load_catalog(demo_warehouse / "hadoop")
    assert isinstance(catalog, FilesystemCatalog)
    assert [str(t) for t in catalog.list_tables()] == ["demo.customers_v1"]
    latest = spark.sql(
        "SELECT file FROM hadoop.demo.customers_v1.metadata_log_entries "
        "ORDER BY timestamp DESC LIMIT 1"
    ).collect()[0][0]
    location = catalog.metadata_location(TableIdentifier.parse("demo.customers_v1"))
    assert location.removeprefix("file:") == latest.removeprefix("file:")


@pytest.mark.spark
def test_sql_catalog_is_shared_with_pyiceberg(demo_warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    peer = PyIcebergSqlCatalog(
        "icecore", uri=f"sqlite:///{demo_warehouse / 'catalog.db'}", warehouse=str(demo_warehouse)
    )
    ours = load_catalog(demo_warehouse)
    assert {".".join(t) for t in peer.list_tables("demo")} == {str(t) for t in ours.list_tables()}
    for ident in ours.list_tables():
        assert peer.load_table(str(ident)).metadata_location == ours.metadata_location(ident)


def make_hadoop_table(root: Path, versions: list[int], hint: str | None) -> Path:
    metadata = root / "db" / "t" / "metadata"
    metadata.mkdir(parents=True)
    for v in versions:
        (metadata / f"v{v}.metadata.json").write_text("{}")
    if hint is not None:
        (metadata / "version-hint.text").write_text(hint)
    return metadata


@pytest.mark.parametrize(
    ("versions", "hint", "expected"),
    [
        ([1, 2, 3], "3", 3),  # the hint is current
        ([1, 2, 3], "2", 3),  # stale hint: v3 was written after it
        ([1, 2, 3], None, 3),  # no hint: the highest version
        ([1, 2, 5], "junk", 5),  # unreadable hint: the highest version
        ([1, 2, 5], "1", 2),  # a gap ends the walk forward, as Hadoop tables do
    ],
)
def test_version_hint_resolution(
    tmp_path: Path, versions: list[int], hint: str | None, expected: int
) -> None:
    metadata = make_hadoop_table(tmp_path, versions, hint)
    catalog = FilesystemCatalog(str(tmp_path))
    location = catalog.metadata_location(TableIdentifier.parse("db.t"))
    assert location == str(metadata / f"v{expected}.metadata.json")


def test_version_hint_naming_a_missing_file(tmp_path: Path) -> None:
    make_hadoop_table(tmp_path, [1, 2], "7")
    with pytest.raises(InvalidMetadata, match=r"version-hint.text names version 7"):
        FilesystemCatalog(str(tmp_path)).metadata_location(TableIdentifier.parse("db.t"))


def test_missing_table_and_missing_metadata(tmp_path: Path) -> None:
    catalog = FilesystemCatalog(str(tmp_path))
    with pytest.raises(NotFound, match="db.nope"):
        catalog.metadata_location(TableIdentifier.parse("db.nope"))
    (tmp_path / "db" / "empty" / "metadata").mkdir(parents=True)
    with pytest.raises(NotFound, match="no v<N>.metadata.json"):
        catalog.metadata_location(TableIdentifier.parse("db.empty"))


def test_sql_catalog_with_several_catalog_names(tmp_path: Path) -> None:
    db = tmp_path / "catalog.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace "
            "VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location "
            "VARCHAR(1000), previous_metadata_location VARCHAR(1000), iceberg_type VARCHAR(5), "
            "PRIMARY KEY (catalog_name, table_namespace, table_name))"
        )
        conn.executemany(
            "INSERT INTO iceberg_tables VALUES (?, ?, ?, ?, NULL, ?)",
            [
                ("a", "ns.sub", "t1", "/x/t1.metadata.json", "TABLE"),
                ("a", "ns.sub", "v1", "/x/v1.metadata.json", "VIEW"),
                ("b", "other", "t2", "/x/t2.metadata.json", None),
            ],
        )
    with pytest.raises(Exception, match=r"several catalogs \(a, b\)"):
        load_catalog(f"sqlite:///{db}")
    catalog = load_catalog(f"sqlite:///{db}?catalog=a")
    assert catalog.list_tables() == [TableIdentifier(("ns", "sub"), "t1")]
    assert catalog.metadata_location(TableIdentifier.parse("ns.sub.t1")) == "/x/t1.metadata.json"
    with pytest.raises(NotFound):
        catalog.metadata_location(TableIdentifier.parse("ns.sub.v1"))


def test_load_catalog_dispatch_and_errors(tmp_path: Path) -> None:
    metadata = make_hadoop_table(tmp_path, [1], "1")
    static = load_catalog(str(metadata / "v1.metadata.json"))
    assert isinstance(static, StaticCatalog)
    assert [str(t) for t in static.list_tables()] == ["static.t"]
    assert isinstance(load_catalog(tmp_path), FilesystemCatalog)
    with pytest.raises(NotFound, match="does not exist"):
        load_catalog(tmp_path / "nowhere")
    with pytest.raises(NotFound, match="Unknown catalog"):
        load_catalog("ftp2://host/x")
    port = _free_port()  # nothing listens there: one sentence naming host and database
    with pytest.raises(CatalogUnavailable, match=rf'database "db" on 127.0.0.1:{port}'):
        load_catalog(f"postgresql://u:secret@127.0.0.1:{port}/db")
    not_sqlite = tmp_path / "bad.db"
    not_sqlite.write_text("this is not a database")
    with pytest.raises(InvalidMetadata, match="bad.db"):
        load_catalog(f"sqlite:///{not_sqlite}")
    with pytest.raises(NotFound, match="namespace.table"):
        TableIdentifier.parse("justone")


def test_relative_warehouse_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_hadoop_table(tmp_path / "wh", [1, 2], "2")
    monkeypatch.chdir(tmp_path)
    catalog = load_catalog("wh")
    assert [str(t) for t in catalog.list_tables()] == ["db.t"]
    assert (
        catalog.metadata_location(TableIdentifier.parse("db.t"))
        == "wh/db/t/metadata/v2.metadata.json"
    )


def test_table_created_by_pyiceberg_opens_in_icecore(tmp_path: Path) -> None:
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    peer = PyIcebergSqlCatalog(
        "shared", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path}"
    )
    peer.create_namespace("sales")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Milan", "Paris", None]})
    created = peer.create_table("sales.orders", schema=data.schema)
    created.append(data)
    created.append(data.slice(0, 1))

    catalog = load_catalog(tmp_path)
    assert isinstance(catalog, SqlCatalog) and catalog.catalog_name == "shared"
    assert [str(t) for t in catalog.list_tables()] == ["sales.orders"]
    table = catalog.load_table("sales.orders")
    reloaded = peer.load_table("sales.orders")
    assert table.metadata_location == reloaded.metadata_location
    assert [s.snapshot_id for s in table.snapshots()] == [
        s.snapshot_id for s in reloaded.metadata.snapshots
    ]
    assert table.metadata.current_snapshot_id == reloaded.metadata.current_snapshot_id
    assert [f.name for f in table.metadata.current_schema().fields] == ["id", "city"]
