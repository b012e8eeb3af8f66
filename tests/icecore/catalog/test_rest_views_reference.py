"""Icecore's REST client reads views that Spark wrote through Iceberg Java's own REST server.

The reference server (tests/rest/RestReference.java: ``CatalogHandlers`` over a JdbcCatalog
in the "V1" schema) serves the view routes; Spark creates and replaces a view through it
(catalog ``rref``), and is the oracle for the view's SQL, versions and what it reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from icecore.catalog import TableIdentifier, load_catalog
from icecore.catalog.rest import RestCatalog
from icecore.view_lineage import view_detail
from tests.icecore.catalog.conftest import SPARK_CATALOG
from tests.icecore.catalog.rest_reference import ReferenceServer

pytestmark = pytest.mark.spark

REPLACED = "SELECT id FROM orders WHERE amount > 20"


@pytest.fixture
def spark_in_sales(spark: Any) -> Iterator[Any]:
    """Spark with ``rref.sales`` current (views keep it as their default), restored after."""
    catalog, database = spark.catalog.currentCatalog(), spark.catalog.currentDatabase()
    spark.sql(f"USE {SPARK_CATALOG}.sales")
    try:
        yield spark
    finally:
        spark.catalog.setCurrentCatalog(catalog)
        if database:
            spark.catalog.setCurrentDatabase(database)


def test_views_spark_wrote_through_the_reference_server(
    spark_in_sales: Any, rest_reference: ReferenceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark = spark_in_sales
    monkeypatch.delenv("ICECORE_REST_CREDENTIAL", raising=False)
    monkeypatch.delenv("ICECORE_REST_TOKEN", raising=False)
    view = f"{SPARK_CATALOG}.sales.big_orders"
    spark.sql(f"CREATE VIEW {view} AS SELECT id, amount FROM orders WHERE amount > 10")
    spark.sql(f"CREATE OR REPLACE VIEW {view} AS {REPLACED}")
    assert (
        spark.sql(f"SELECT count(*) FROM {view}").collect()[0][0]
        == (spark.sql("SELECT count(*) FROM orders WHERE amount > 20").collect()[0][0])
    )
    try:
        catalog = load_catalog(rest_reference.url)
        assert isinstance(catalog, RestCatalog)
        ident = TableIdentifier(("sales",), "big_orders")
        assert catalog.list_views(("sales",)) == [ident]
        assert ident not in catalog.list_tables(("sales",))
        loaded = catalog.load_view(ident)
        # Spark keeps a view's SQL as written after AS: the replace's text is current.
        assert loaded.metadata.current_version.sql("spark") == REPLACED
        assert loaded.metadata.current_version.default_namespace == ("sales",)
        assert len(loaded.metadata.versions) == 2
        shown = view_detail(loaded, catalog)
        assert shown["reads"] == ["sales.orders"] and shown["missing"] == []
    finally:
        spark.sql(f"DROP VIEW IF EXISTS {view}")
