"""Catalog fixtures: the reference REST catalog server (Iceberg Java's CatalogHandlers).

``reference_classes`` compiles tests/rest/RestReference.java once per session;
``rest_reference`` starts one server and has Spark (Iceberg's own REST client, catalog
``rref``) write the tables the client tests read; tests that need another server (auth)
start their own with :func:`start_reference` and stop it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.icecore.catalog.rest_reference import (
    ReferenceServer,
    compile_reference,
    start_reference,
)

SPARK_CATALOG = "rref"


@pytest.fixture(scope="session")
def reference_classes(tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str) -> Path:
    """The compiled reference server."""
    return compile_reference(tmp_path_factory.mktemp("rest-reference-classes"))


@pytest.fixture(scope="session")
def rest_reference(
    spark: Any, reference_classes: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReferenceServer]:
    """A reference server holding tables Spark wrote through REST (see ``_write_tables``)."""
    server = start_reference(reference_classes, tmp_path_factory.mktemp("rest-reference"))
    try:
        prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
        spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")  # type: ignore[attr-defined]
        spark.conf.set(f"{prefix}.type", "rest")  # type: ignore[attr-defined]
        spark.conf.set(f"{prefix}.uri", server.url)  # type: ignore[attr-defined]
        # Spark must see Icecore's commits at once, not a table it cached.
        spark.conf.set(f"{prefix}.cache-enabled", "false")  # type: ignore[attr-defined]
        _write_tables(spark)
        yield server
    finally:
        server.stop()


def _write_tables(spark: Any) -> None:
    """Spark writes the client tests' tables through REST.

    A partitioned v2 table with position deletes, more tables in the same namespace (for
    paging), and a table in a nested namespace.
    """
    c = SPARK_CATALOG
    spark.sql(f"CREATE NAMESPACE {c}.sales")
    spark.sql(f"CREATE NAMESPACE {c}.sales.eu")
    spark.sql(f"CREATE NAMESPACE {c}.ops")
    spark.sql(
        f"CREATE TABLE {c}.sales.orders (id BIGINT, region STRING, amount DOUBLE, ts TIMESTAMP) "
        "USING iceberg PARTITIONED BY (region, days(ts)) TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    regions = ["north", "south", "east"]
    for batch in range(3):
        values = ", ".join(
            f"({batch * 100 + i}, '{regions[i % 3]}', {i * 1.5}, "
            f"TIMESTAMP '2024-0{batch + 1}-1{i % 9} 10:00:00')"
            for i in range(40)
        )
        spark.sql(f"INSERT INTO {c}.sales.orders VALUES {values}")
    spark.sql(f"DELETE FROM {c}.sales.orders WHERE id % 7 = 0")
    spark.sql(f"UPDATE {c}.sales.orders SET amount = -1.0 WHERE id % 11 = 0")
    spark.sql(f"CREATE TABLE {c}.sales.returns (id BIGINT, reason STRING) USING iceberg")
    spark.sql(f"INSERT INTO {c}.sales.returns VALUES (1, 'broken'), (2, NULL)")
    spark.sql(f"CREATE TABLE {c}.sales.empty (id INT) USING iceberg")
    spark.sql(f"CREATE TABLE {c}.sales.eu.customers (id INT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {c}.sales.eu.customers VALUES (1, 'Åsa'), (2, 'Zoë')")
