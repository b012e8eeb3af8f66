"""Spark's own REST client (Iceberg Java's ``RESTCatalog``) using views through ``serve-rest``.

Spark runs CREATE VIEW, CREATE OR REPLACE VIEW, ALTER VIEW ... SET TBLPROPERTIES, SHOW
VIEWS, SELECT from the view and DROP VIEW against Icecore's server; what it sees through
REST must equal what Spark's JdbcCatalog on the same SQLite file sees (the rows are
JdbcCatalog's view rows). A view made through the server by PyIceberg is queried by Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from icecore.catalog import load_catalog
from icecore.catalog.base import TableIdentifier
from tests.icecore.server.conftest import RestServer, start_server, stop_server

CATALOG_NAME = "views_jdbc"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = start_server(tmp_path_factory.mktemp("spark_views") / "wh", catalog_name=CATALOG_NAME)
    yield server
    stop_server(server)


def _register(spark: Any, server: RestServer) -> None:
    from pipeline.spark import jdbc_catalog_conf

    spark.conf.set("spark.sql.catalog.vserved", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.vserved.type", "rest")
    spark.conf.set("spark.sql.catalog.vserved.uri", server.url)
    spark.conf.set("spark.sql.catalog.vserved.cache-enabled", "false")
    for key, value in jdbc_catalog_conf(
        CATALOG_NAME, str(server.catalog_db), server.warehouse
    ).items():
        spark.conf.set(key, value)


def _rows(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def _views(spark: Any, namespace: str) -> list[str]:
    """SHOW VIEWS' catalog views (the session's temporary views left out)."""
    return [r[1] for r in _rows(spark, f"SHOW VIEWS IN {namespace}") if not r[2]]


@pytest.mark.spark
@pytest.mark.slow
def test_spark_uses_views_through_the_server(spark: Any, served: RestServer) -> None:
    _register(spark, served)
    spark.sql("CREATE NAMESPACE vserved.vs")
    spark.sql("CREATE TABLE vserved.vs.t (id BIGINT, name STRING) USING iceberg")
    spark.sql("INSERT INTO vserved.vs.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql("CREATE VIEW vserved.vs.small AS SELECT id, name FROM vserved.vs.t WHERE id < 3")
    assert _rows(spark, "SELECT * FROM vserved.vs.small") == [(1, "a"), (2, "b")]
    spark.sql("CREATE OR REPLACE VIEW vserved.vs.small AS SELECT id FROM vserved.vs.t WHERE id > 1")
    spark.sql("ALTER VIEW vserved.vs.small SET TBLPROPERTIES ('owner-team' = 'ops')")
    through_rest = _rows(spark, "SELECT * FROM vserved.vs.small")
    assert through_rest == [(2,), (3,)]
    assert _views(spark, "vserved.vs") == ["small"]

    # Spark's JdbcCatalog on the same file sees the same view (JdbcCatalog's V1 rows).
    assert _rows(spark, f"SELECT * FROM {CATALOG_NAME}.vs.small") == through_rest
    assert _views(spark, f"{CATALOG_NAME}.vs") == ["small"]

    # Icecore's client: two versions, the property, the current SQL.
    catalog = load_catalog(served.url)
    view = catalog.load_view("vs.small")
    assert len(view.metadata.versions) == 2
    assert view.metadata.properties.get("owner-team") == "ops"
    sql = view.metadata.current_version.sql("spark")
    assert sql is not None and "id > 1" in sql

    # A view made through the server by PyIceberg is queried by Spark.
    peer = RestCatalog("peer", uri=served.url)
    peer.create_view(
        "vs.peer",
        Schema(NestedField(1, "id", LongType(), required=False)),
        ViewVersion(
            schema_id=0,
            representations=[
                SQLViewRepresentation(
                    type="sql", sql="SELECT id FROM vs.t WHERE id = 3", dialect="spark"
                )
            ],
            default_namespace=["vs"],
            default_catalog="vserved",
        ),
    )
    assert _rows(spark, "SELECT * FROM vserved.vs.peer") == [(3,)]

    spark.sql("DROP VIEW vserved.vs.small")
    assert catalog.list_views(("vs",)) == [TableIdentifier(("vs",), "peer")]
    assert _views(spark, "vserved.vs") == ["peer"]
