"""Eight processes changing the schema through the server while Spark appends through it.

Each PyIceberg writer adds its own column (requirements: the current schema id and the last
assigned field id), while Spark's REST client (Iceberg Java's ``RESTCatalog``) appends rows
(requirement: the ``main`` ref's snapshot id). The server checks every commit atomically
against the backing SQLite catalog, which is the judge afterwards: every schema change is
either present with a field id of its own or was refused with a 409, none is lost, and every
Spark append landed (Iceberg Java retries its append on a 409 by itself).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import (
    RestServer,
    add_columns_at_once,
    start_server,
    stop_server,
)

WRITERS = 8
APPENDS = 4
SPARK_CATALOG = "served_conc"
BACKING_NAME = "rest_conc"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    server = start_server(tmp_path_factory.mktemp("conc_spark") / "wh", catalog_name=BACKING_NAME)
    yield server
    stop_server(server)


def _register(spark: Any, server: RestServer) -> None:
    prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "rest")
    spark.conf.set(f"{prefix}.uri", server.url)
    # Load the table on every statement: each append starts from the server's current state.
    spark.conf.set(f"{prefix}.cache-enabled", "false")


@pytest.mark.spark
@pytest.mark.slow
def test_schema_changes_and_a_spark_append_at_once(spark: Any, served: RestServer) -> None:
    peer = RestCatalog("main", uri=served.url)
    peer.create_namespace("cs")
    peer.create_table(
        "cs.t",
        Schema(NestedField(1, "id", LongType(), required=False)),
        # Spark checks an INSERT against the schema it resolved, so once a writer adds a
        # column, INSERT INTO t (id) fails with CANNOT_FIND_DATA; with this property Spark
        # leaves the check to Iceberg, which accepts rows without the new optional columns.
        properties={"format-version": "2", "write.spark.accept-any-schema": "true"},
    )
    _register(spark, served)
    # Spark's JVM and plan warmed up
    spark.createDataFrame([(0,)], "id bigint").writeTo(f"{SPARK_CATALOG}.cs.t").append()

    lead_s = 15.0  # every writer has loaded the table before any commits
    start_at = time.time() + lead_s
    spark_errors: list[BaseException] = []

    def append() -> None:
        time.sleep(max(0.0, start_at - time.time() - 0.5))
        try:
            for i in range(1, APPENDS + 1):
                rows = spark.createDataFrame([(i,)], "id bigint")
                rows.writeTo(f"{SPARK_CATALOG}.cs.t").append()
        except BaseException as e:  # reported below, in the test's thread
            spark_errors.append(e)

    appender = threading.Thread(target=append)
    appender.start()
    columns = [f"c{i}" for i in range(WRITERS)]
    results = add_columns_at_once(served.url, "cs.t", columns, lead_s=start_at - time.time())
    appender.join(timeout=300)
    assert not appender.is_alive()
    assert not spark_errors, [getattr(e, "desc", None) or repr(e) for e in spark_errors]

    assert all(v in ("committed", "refused") for v in results.values()), results
    committed = {c for c, v in results.items() if v == "committed"}
    assert committed, results  # the first swap always wins
    table = SqlCatalog(served.catalog_db, catalog_name=BACKING_NAME).load_table("cs.t")
    schema = table.metadata.current_schema()
    names = [f.name for f in schema.fields]
    # every committed change is present, every refused one absent: none lost, none doubled
    assert set(names) == {"id"} | committed
    ids = [f.field_id for f in schema.fields]
    assert len(ids) == len(set(ids))
    # every append landed once: one snapshot each, every row there
    appends = [s for s in table.snapshots() if s.operation == "append"]
    assert len(appends) == APPENDS + 1
    rows = table.scan().plan().to_arrow(columns=["id"]).column("id").to_pylist()
    assert sorted(rows) == list(range(APPENDS + 1))
    spark_rows = spark.sql(f"SELECT id FROM {SPARK_CATALOG}.cs.t").collect()
    assert sorted(r[0] for r in spark_rows) == list(range(APPENDS + 1))
    assert served.alive()
