"""How a maintenance job names a catalog to Spark: asked of the catalog, whatever opened it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.maintenance import spark_table
from tests.icecore.catalog.test_pyiceberg_config import sql_catalog
from tests.pyiceberg_env import isolate
from tests.ui.helpers import tiny_warehouse


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``lake/catalog.db`` whose catalog ``lake`` holds db.zones; no other configuration."""
    isolate(monkeypatch, tmp_path)
    tiny_warehouse(tmp_path / "lake", "db.zones")
    metadata = tmp_path / "lake/db/zones/metadata/v1.metadata.json"
    return sql_catalog(tmp_path / "lake" / "catalog.db", "lake", {"db.zones": str(metadata)})


def test_a_pyiceberg_sql_catalog_is_spark_s_jdbc_catalog_of_the_same_name(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", f"sqlite:///{lake}")
    target, table = spark_table("lake::db.zones")
    prefix = "spark.sql.catalog.lake"
    # JdbcCatalog reads the rows whose catalog_name is its own name: PyIceberg's name here.
    assert target.qualified == "lake.db.zones"
    assert target.conf[prefix] == "org.apache.iceberg.spark.SparkCatalog"
    assert target.conf[f"{prefix}.type"] == "jdbc"
    assert target.conf[f"{prefix}.uri"] == f"jdbc:sqlite:{lake}"
    assert target.conf[f"{prefix}.warehouse"] == str(lake.parent)
    assert target.conf[f"{prefix}.cache-enabled"] == "false"
    assert table.metadata_location.endswith("v1.metadata.json")


def test_a_pyiceberg_hadoop_catalog_is_spark_s_hadoop_catalog(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__FILES__TYPE", "hadoop")
    monkeypatch.setenv("PYICEBERG_CATALOG__FILES__WAREHOUSE", str(lake.parent))
    target, _ = spark_table("files::db.zones")
    prefix = f"spark.sql.catalog.{target.catalog}"
    assert target.catalog.startswith("icecore_fs_")
    assert target.conf[f"{prefix}.type"] == "hadoop"
    assert target.conf[f"{prefix}.warehouse"] == str(lake.parent)
