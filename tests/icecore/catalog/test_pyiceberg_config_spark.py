"""Spark-written catalogs configured the PyIceberg way open by name, in Icecore and PyIceberg.

The demo warehouse's SQL catalog (Spark's JdbcCatalog, ``catalog_name`` ``icecore``) is
copied, then named in ``PYICEBERG_CATALOG__*`` variables or ``.pyiceberg.yaml``, directly
(``type: sql``) and behind Icecore's own ``serve-rest`` (``type: rest``). Spark says which
tables there are; PyIceberg, reading the same configuration, must list the same.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from icecore.catalog import load_catalog, load_table
from tests.icecore.server.conftest import RestServer, start_server, stop_server
from tests.icecore.test_cli import icecore_cli
from tests.pyiceberg_env import isolate, pyiceberg_tables

pytestmark = pytest.mark.spark

SPARK_CATALOG = "icecore"
"""The demo's Spark catalog: also the ``catalog_name`` its rows carry, so PyIceberg's name."""


@pytest.fixture(scope="module")
def catalog_copy(demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A consistent copy of the demo's catalog.db (the tables' files stay where Spark wrote)."""
    target = tmp_path_factory.mktemp("pyiceberg-sql") / "catalog.db"
    source = f"file:{demo_warehouse / 'catalog.db'}?mode=ro"
    with closing(sqlite3.connect(source, uri=True)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
    return target


@pytest.fixture(scope="module")
def spark_tables(spark: Any) -> set[str]:
    """What Spark lists in the demo's catalog."""
    rows = spark.sql(f"SHOW TABLES IN {SPARK_CATALOG}.demo").collect()
    return {f"{r.namespace}.{r.tableName}" for r in rows}


@pytest.fixture(scope="module")
def served(catalog_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """Icecore's serve-rest over the copy, read-only."""
    server = start_server(
        tmp_path_factory.mktemp("pyiceberg-rest"),
        "--read-only",
        catalog=f"sqlite:///{catalog_copy}?catalog={SPARK_CATALOG}",
    )
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No configuration but the test's, the home folder ``tmp_path``, run there."""
    isolate(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def configure(how: str, name: str, properties: dict[str, str], home: Path, mp: Any) -> None:
    """Name a catalog in variables or in ``$HOME/.pyiceberg.yaml``."""
    if how == "env":
        for key, value in properties.items():
            mp.setenv(f"PYICEBERG_CATALOG__{name.upper()}__{key.upper()}", value)
    else:
        body = "".join(f"    {k}: {v}\n" for k, v in properties.items())
        (home / ".pyiceberg.yaml").write_text(f"catalog:\n  {name}:\n{body}")


@pytest.mark.parametrize("how", ["env", "yaml"])
def test_a_spark_written_sql_catalog_opens_by_name(
    how: str,
    catalog_copy: Path,
    spark_tables: set[str],
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SQLAlchemy's absolute spelling (four slashes), as a PyIceberg user writes it.
    configure(how, SPARK_CATALOG, {"uri": f"sqlite:///{catalog_copy}"}, isolated, monkeypatch)
    assert {str(t) for t in load_catalog(SPARK_CATALOG).list_tables()} == spark_tables
    assert pyiceberg_tables(SPARK_CATALOG) == spark_tables
    table = load_table(f"{SPARK_CATALOG}::demo.trips")
    assert table.metadata_location == load_catalog(
        f"sqlite:///{catalog_copy}?catalog={SPARK_CATALOG}"
    ).metadata_location(table.identifier)


@pytest.mark.parametrize("how", ["env", "yaml"])
def test_a_rest_catalog_opens_by_name(
    how: str,
    served: RestServer,
    spark_tables: set[str],
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure(how, "lakehouse", {"type": "rest", "uri": served.url}, isolated, monkeypatch)
    opened = load_catalog("lakehouse")
    assert opened.kind == "rest" and opened.uri == "lakehouse"
    assert {str(t) for t in opened.list_tables()} == spark_tables
    assert pyiceberg_tables("lakehouse") == spark_tables


def test_the_cli_gives_the_same_history_by_name_and_by_uri(
    served: RestServer, catalog_copy: Path, tmp_path: Path
) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "ICECORE_CONFIG": str(tmp_path / "absent.toml"),
        "ICECORE_CACHE_DIR": str(tmp_path / "cache"),
        "PYICEBERG_CATALOG__SQLCAT__URI": f"sqlite:///{catalog_copy}",
        "PYICEBERG_CATALOG__SQLCAT__TYPE": "sql",
        "PYICEBERG_CATALOG__RESTCAT__URI": served.url,
    }

    def history(table: str) -> Any:
        done = icecore_cli("history", table, env=env, timeout=180)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    # PyIceberg's SQL catalog is named as its rows are: SQLCAT holds no table of `icecore`.
    direct = history(f"sqlite:///{catalog_copy}?catalog={SPARK_CATALOG}::demo.trips")
    assert history("restcat::demo.trips") == direct
    done = icecore_cli("history", "sqlcat::demo.trips", env=env, timeout=180)
    assert done.returncode == 1 and "demo.trips" in done.stderr
