"""Icecore's REST catalog client against Iceberg Java's own REST server logic.

The reference server (tests/rest/RestReference.java: ``CatalogHandlers`` over a JdbcCatalog)
holds tables Spark wrote through its REST client (``rref``, see conftest). Spark and Iceberg
Java are the oracle: listings equal Spark's ``SHOW``, metadata tables equal Spark's, planned
files equal Java's ``planFiles()``, rows equal Spark's; Icecore's commits through REST are
read and appended to by Spark afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

import icecore
from icecore.catalog import TableIdentifier
from icecore.catalog.rest import RestCatalog
from icecore.errors import CommitConflict, ValidationError
from icecore.metadata.requirements import AssertCurrentSchemaId
from icecore.metadata.updates import SetProperties
from tests.icecore.catalog.conftest import SPARK_CATALOG
from tests.icecore.catalog.rest_reference import ReferenceServer
from tests.icecore.scan.test_planner import java_plan
from tests.icecore.test_inspect import _compare
from tests.oracle import arrow_rows, spark_rows

pytestmark = pytest.mark.spark

ORDERS = f"{SPARK_CATALOG}.sales.orders"


@pytest.fixture
def catalog(
    rest_reference: ReferenceServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[RestCatalog]:
    """The reference server as a named catalog listing one item per page."""
    config = tmp_path / "icecore.toml"
    config.write_text(f'[catalogs.ref]\nuri = "{rest_reference.url}"\n"rest.page-size" = "1"\n')
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.delenv("ICECORE_REST_CREDENTIAL", raising=False)
    monkeypatch.delenv("ICECORE_REST_TOKEN", raising=False)
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    opened = icecore.load_catalog("ref")
    assert isinstance(opened, RestCatalog)
    yield opened


def _spark_namespaces(spark: Any, parent: str) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for row in spark.sql(f"SHOW NAMESPACES IN {parent}").collect():
        ns = tuple(row[0].split("."))
        full = tuple(parent.split(".")[1:]) + ns[-1:] if "." in parent else ns
        found.append(full)
        found.extend(_spark_namespaces(spark, f"{SPARK_CATALOG}.{'.'.join(full)}"))
    return found


def test_namespaces_and_tables_listed_page_by_page(spark: Any, catalog: RestCatalog) -> None:
    expected_ns = sorted(_spark_namespaces(spark, SPARK_CATALOG))
    assert ("sales", "eu") in expected_ns  # the nested one is there to be listed
    assert catalog.list_namespaces() == expected_ns
    expected_tables = sorted(
        TableIdentifier(ns, row.tableName)
        for ns in expected_ns
        for row in spark.sql(f"SHOW TABLES IN {SPARK_CATALOG}.{'.'.join(ns)}").collect()
    )
    assert len([t for t in expected_tables if t.namespace == ("sales",)]) >= 3  # > a page
    assert catalog.list_tables() == expected_tables
    assert catalog.list_tables(("sales", "eu")) == [TableIdentifier(("sales", "eu"), "customers")]


@pytest.mark.parametrize("kind", ["snapshots", "files", "manifests", "history", "partitions"])
def test_metadata_tables_match_spark(spark: Any, catalog: RestCatalog, kind: str) -> None:
    table = catalog.load_table("sales.orders")
    assert table.catalog is catalog and table.format_version == 2
    _compare(spark, table, ORDERS, kind, None)


def _java_plan(spark: Any, name: str, flt: str) -> dict[str, set[str]]:
    """Iceberg Java's planFiles over its REST client: data file -> delete files."""
    return java_plan(spark, "", None, flt, name=name)


@pytest.mark.parametrize(
    "flt", ["", "region = 'north'", "id < 50", "ts >= '2024-02-01'", "amount = -1.0"]
)
def test_plans_and_rows_match_java_and_spark(spark: Any, catalog: RestCatalog, flt: str) -> None:
    table = icecore.load_table("ref::sales.orders")
    plan = table.scan(filter=flt or None).plan()
    ours = {task.file_path: {d.file_path for d in task.delete_files} for task in plan.tasks}
    expected = _java_plan(spark, ORDERS, flt)
    if not flt:
        assert any(expected.values()), "the table has position deletes to apply"
    assert ours == expected
    columns, rows = spark_rows(spark, f"SELECT * FROM {ORDERS}" + (f" WHERE {flt}" if flt else ""))
    result = plan.to_arrow()
    assert result.column_names == columns
    assert arrow_rows(result) == rows


def test_schema_and_spec_evolution_through_rest_then_spark(
    spark: Any, catalog: RestCatalog
) -> None:
    name = f"{SPARK_CATALOG}.ops.evolve"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, city STRING) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'Milan'), (2, 'Paris')")
    table = catalog.load_table("ops.evolve")
    with table.update_schema() as update:
        update.add_column("note", "string")
        update.rename_column("city", "town")
    table = table.refresh()
    with table.update_spec() as spec:
        spec.add_field("id", "bucket[4]")
    spark.sql(f"INSERT INTO {name} VALUES (3, 'Oslo', 'new')")
    assert spark.table(name).columns == ["id", "town", "note"]
    after = catalog.load_table("ops.evolve")
    assert [f.name for f in after.metadata.current_schema().fields] == ["id", "town", "note"]
    assert len(after.metadata.partition_specs) == 2
    columns, rows = spark_rows(spark, f"SELECT * FROM {name}")
    result = after.scan().plan().to_arrow()
    assert result.column_names == columns and arrow_rows(result) == rows
    assert len(rows) == 3
    plan = after.scan(filter="id = 3").plan()
    ours = {task.file_path for task in plan.tasks}
    assert ours == set(_java_plan(spark, name, "id = 3"))


def test_stale_commit_is_a_conflict(spark: Any, catalog: RestCatalog) -> None:
    name = f"{SPARK_CATALOG}.ops.contested"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg")
    stale = catalog.load_table("ops.contested")
    stale.update_schema().add_column("a", "int").commit()
    # The server itself refuses a requirement that no longer holds (409).
    with pytest.raises(CommitConflict, match="CommitFailedException") as caught:
        catalog.commit_table(
            stale,
            [AssertCurrentSchemaId(stale.metadata.current_schema_id)],
            [SetProperties({"k": "v"})],
        )
    assert "\n" not in str(caught.value)
    # Through the evolution API: re-checked on the fresh table, refused, nothing applied.
    with pytest.raises(CommitConflict, match="current schema changed"):
        stale.update_schema().add_column("b", "int").commit()
    fresh = catalog.load_table("ops.contested")
    assert "k" not in fresh.metadata.properties
    assert spark.table(name).columns == ["id", "a"]
    # A change that does not depend on the schema goes through from the stale base.
    stale.set_properties(owner="sales")
    assert catalog.load_table("ops.contested").metadata.properties["owner"] == "sales"


def test_reply_lost_after_the_commit_is_found_applied(
    spark: Any, catalog: RestCatalog, rest_reference: ReferenceServer
) -> None:
    """Java's server applies the commit, then answers 503: loading again finds it applied."""
    name = f"{SPARK_CATALOG}.ops.lost"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING iceberg")
    table = catalog.load_table("ops.lost")
    armed = requests.post(f"{rest_reference.url}/test/fail-next-commit-after", timeout=30)
    assert armed.status_code == 204
    committed = table.set_properties(marker="once")
    assert committed.metadata.properties["marker"] == "once"
    after = catalog.load_table("ops.lost")
    assert committed.metadata_location == after.metadata_location
    spark.sql(f"REFRESH TABLE {name}")
    assert spark.sql(f"SHOW TBLPROPERTIES {name} ('marker')").collect()[0][1] == "once"
    assert after.metadata.properties["marker"] == "once"
    # Applied exactly once: one metadata version after the create, not a retried second one.
    assert len(after.metadata.metadata_log) == len(table.metadata.metadata_log) + 1


def test_read_only_refuses_commits(
    spark: Any, catalog: RestCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    read_only = icecore.load_catalog("ref")
    table = read_only.load_table("sales.returns")
    with pytest.raises(ValidationError, match="read-only"):
        table.set_properties(x="1")
    assert "x" not in catalog.load_table("sales.returns").metadata.properties
