"""Ref operations through a REST catalog (Icecore's own server): the server applies them.

Icecore's REST client sends ``set-snapshot-ref`` / ``remove-snapshot-ref`` with their
``assert-ref-snapshot-id`` requirements; Spark, through Iceberg's own REST client, must then
see what its own procedures leave on a twin table, and a ref moved meanwhile is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import icecore
from icecore.errors import CommitConflict
from icecore.table import Table
from tests.icecore.server.conftest import RestServer, start_server, stop_server

from .twins import rollback_and_tag_twins

pytestmark = pytest.mark.spark

SPARK_CATALOG = "refs_rest"


@pytest.fixture(scope="module")
def served(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = start_server(tmp_path_factory.mktemp("refs_rest") / "wh")
    prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "rest")
    spark.conf.set(f"{prefix}.uri", server.url)
    spark.conf.set(f"{prefix}.cache-enabled", "false")
    spark.sql(f"CREATE NAMESPACE {SPARK_CATALOG}.db")
    yield server
    stop_server(server)


def _load(server: RestServer, name: str) -> Table:
    return icecore.load_catalog(server.url, read_only=False).load_table(f"db.{name}")


def test_rest_catalog_rollback_tag_and_race(spark: Any, served: RestServer) -> None:
    ddl = "(id bigint, s string) USING iceberg TBLPROPERTIES ('format-version' = '2')"
    for name in ("ours", "theirs"):
        spark.sql(f"CREATE TABLE {SPARK_CATALOG}.db.{name} {ddl}")
        for values in ("(1, 'a')", "(2, 'b')", "(3, 'c')"):
            spark.sql(f"INSERT INTO {SPARK_CATALOG}.db.{name} VALUES {values}")
    rollback_and_tag_twins(
        spark,
        lambda: _load(served, "ours"),
        lambda: _load(served, "theirs"),
        f"{SPARK_CATALOG}.db.ours",
        f"{SPARK_CATALOG}.db.theirs",
    )
    # A Spark append between the dry run and the commit: refused, the append kept.
    table = _load(served, "ours")
    first = table.metadata.refs["first"].snapshot_id
    manage = table.manage_snapshots().rollback_to_snapshot(first)
    manage.preview()
    spark.sql(f"INSERT INTO {SPARK_CATALOG}.db.ours VALUES (5, 'e')")
    with pytest.raises(CommitConflict, match="main is at"):
        manage.commit()
    assert spark.sql(f"SELECT count(*) FROM {SPARK_CATALOG}.db.ours").collect()[0][0] == 3
