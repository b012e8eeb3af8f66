"""Icecore's REST client against Icecore's REST server: both halves of issue 17 together.

PyIceberg (a peer) creates and writes the table through the server; Icecore's client lists,
loads, plans, reads and evolves it over HTTP; what the backing SQLite catalog holds, read
without the server, is the judge.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

import icecore
from icecore.catalog.sql import SqlCatalog
from icecore.errors import CommitConflict
from tests.icecore.server.conftest import RestServer


def _written(server: RestServer, name: str) -> None:
    peer = RestCatalog("peer", uri=server.url)
    peer.create_namespace("rt")
    table = peer.create_table(
        f"rt.{name}",
        Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "name", StringType(), required=False),
        ),
    )
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", None, "c"]}))


def test_icecore_client_reads_and_evolves_through_icecore_server(rest_server: RestServer) -> None:
    _written(rest_server, "events")
    catalog = icecore.load_catalog(rest_server.url)
    assert ("rt",) in catalog.list_namespaces()
    assert [str(i) for i in catalog.list_tables(("rt",))] == ["rt.events"]

    table = catalog.load_table("rt.events")
    direct = SqlCatalog(rest_server.catalog_db).load_table("rt.events")
    assert table.metadata_location == direct.metadata_location
    rows = table.scan(filter="NOT (name = 'a')").plan().to_arrow()
    assert sorted(rows["id"].to_pylist()) == [3]  # NULL name is not kept by NOT (SQL)

    with table.update_schema() as update:
        update.add_column("note", "string")
    after = SqlCatalog(rest_server.catalog_db).load_table("rt.events")
    assert after.metadata_location != direct.metadata_location
    field = after.metadata.current_schema().find_field_by_name("note")
    assert field is not None and field.field_id == 3

    # The version loaded before the change is stale now: the server refuses its commit.
    with pytest.raises(CommitConflict), table.update_schema() as update:
        update.add_column("other", "int")
    final = SqlCatalog(rest_server.catalog_db).load_table("rt.events").metadata
    assert [f.name for f in final.current_schema().fields] == ["id", "name", "note"]
