"""Icecore's REST server driven by PyIceberg's ``RestCatalog`` and raw HTTP.

What the server does is checked from outside: through PyIceberg's REST client (a peer that
follows the spec), and against the backing SQLite file read directly by Icecore and by
PyIceberg's own ``SqlCatalog`` (which shares Iceberg Java's JdbcCatalog schema).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import (
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer

SEP = "%1F"


def rest(server: RestServer) -> RestCatalog:
    """PyIceberg's REST client on the server."""
    return RestCatalog("served", uri=server.url)


def peer_sql(server: RestServer) -> PyIcebergSqlCatalog:
    """PyIceberg's SqlCatalog on the backing file (the JdbcCatalog schema's other reader)."""
    return PyIcebergSqlCatalog(
        "icecore", uri=f"sqlite:///{server.catalog_db}", warehouse=str(server.warehouse)
    )


@pytest.fixture
def ns(rest_server: RestServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test."""
    name = request.node.name.replace("[", "_").replace("]", "").replace("-", "_")[:60]
    rest(rest_server).create_namespace(name)
    yield name


def _schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "ts", TimestampType(), required=False),
    )


def test_config_lists_the_endpoints_served(rest_server: RestServer) -> None:
    body = requests.get(f"{rest_server.url}/v1/config", timeout=10).json()
    endpoints = set(body["endpoints"])
    for wanted in (
        "GET /v1/{prefix}/namespaces",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "POST /v1/{prefix}/tables/rename",
        "POST /v1/{prefix}/namespaces/{namespace}/register",
        "DELETE /v1/{prefix}/namespaces/{namespace}",
    ):
        assert wanted in endpoints
    assert body["defaults"] == {} and body["overrides"] == {}


def test_namespaces_create_load_update_list_drop(rest_server: RestServer) -> None:
    cat = rest(rest_server)
    cat.create_namespace("sales", {"owner": "ana"})
    cat.create_namespace(("sales", "eu"))
    cat.create_namespace(("sales", "us"))
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("sales")
    assert ("sales",) in cat.list_namespaces()
    assert cat.list_namespaces("sales") == [("sales", "eu"), ("sales", "us")]
    assert cat.load_namespace_properties("sales") == {"owner": "ana"}
    assert cat.load_namespace_properties(("sales", "eu")) == {}
    summary = cat.update_namespace_properties(
        "sales", removals={"owner", "nope"}, updates={"a": "1"}
    )
    assert summary.removed == ["owner"] and summary.updated == ["a"] and summary.missing == ["nope"]
    assert cat.load_namespace_properties("sales") == {"a": "1"}
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("sales")
    cat.drop_namespace(("sales", "eu"))
    cat.drop_namespace(("sales", "us"))
    cat.drop_namespace("sales")
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("sales")
    # JdbcCatalog's peer reads what the server wrote
    cat.create_namespace("shared", {"k": "v"})
    assert peer_sql(rest_server).load_namespace_properties("shared")["k"] == "v"


def test_list_tables_and_namespaces_by_pages(rest_server: RestServer, ns: str) -> None:
    cat = rest(rest_server)
    names = [f"t{i:02d}" for i in range(7)]
    for name in names:
        cat.create_table(f"{ns}.{name}", _schema())
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"pageSize": 3}
        if token:
            params["pageToken"] = token
        r = requests.get(f"{rest_server.url}/v1/namespaces/{ns}/tables", params=params, timeout=10)
        assert r.status_code == 200
        body = r.json()
        assert len(body["identifiers"]) <= 3
        seen += [i["name"] for i in body["identifiers"]]
        pages += 1
        token = body.get("next-page-token")
        if not token:
            break
    assert seen == names and pages == 3
    assert sorted(t[1] for t in cat.list_tables(ns)) == names
    # Digits to str.isdigit that int() refuses: a bad request, not a server error.
    for bad in ({"pageSize": "²"}, {"pageToken": "²"}, {"pageSize": "-1"}):
        r = requests.get(f"{rest_server.url}/v1/namespaces/{ns}/tables", params=bad, timeout=10)
        assert r.status_code == 400, (bad, r.status_code)


def test_create_table_assigns_fresh_ids_like_iceberg_java(rest_server: RestServer, ns: str) -> None:
    # Ids sent by the client are replaced. Iceberg Java's AssignFreshIds numbers a
    # struct's own fields first, then what they hold: a=1, b=2, e=3, then b's c=4, d=5,
    # then e's element=6 (worked out by hand from that rule).
    body: dict[str, Any] = {
        "name": "fresh",
        "schema": {
            "type": "struct",
            "schema-id": 7,
            "fields": [
                {"id": 50, "name": "a", "required": False, "type": "long"},
                {
                    "id": 40,
                    "name": "b",
                    "required": False,
                    "type": {
                        "type": "struct",
                        "fields": [
                            {"id": 41, "name": "c", "required": False, "type": "int"},
                            {"id": 42, "name": "d", "required": False, "type": "string"},
                        ],
                    },
                },
                {
                    "id": 30,
                    "name": "e",
                    "required": False,
                    "type": {
                        "type": "list",
                        "element-id": 31,
                        "element": "int",
                        "element-required": False,
                    },
                },
            ],
        },
        "partition-spec": {
            "spec-id": 0,
            "fields": [
                {"source-id": 50, "field-id": 1000, "name": "a_b", "transform": "bucket[4]"}
            ],
        },
        "write-order": {
            "order-id": 1,
            "fields": [
                {
                    "source-id": 42,
                    "transform": "identity",
                    "direction": "asc",
                    "null-order": "nulls-first",
                }
            ],
        },
    }
    r = requests.post(f"{rest_server.url}/v1/namespaces/{ns}/tables", json=body, timeout=10)
    assert r.status_code == 200, r.text
    md = r.json()["metadata"]
    fields = md["schemas"][0]["fields"]
    assert [f["id"] for f in fields] == [1, 2, 3]
    assert [f["id"] for f in fields[1]["type"]["fields"]] == [4, 5]
    assert fields[2]["type"]["element-id"] == 6
    assert md["last-column-id"] == 6
    assert md["partition-specs"][0]["fields"][0]["source-id"] == 1
    assert md["partition-specs"][0]["fields"][0]["field-id"] == 1000
    assert md["sort-orders"][0]["fields"][0]["source-id"] == 5
    assert md["default-sort-order-id"] == 1
    # The table is in the backing catalog, readable by Icecore and by PyIceberg's SqlCatalog.
    location = r.json()["metadata-location"]
    ident = f"{ns}.fresh"
    assert SqlCatalog(rest_server.catalog_db).load_table(ident).metadata_location == location
    assert peer_sql(rest_server).load_table(ident).metadata_location == location


def test_write_evolve_and_read_through_the_server(rest_server: RestServer, ns: str) -> None:
    cat = rest(rest_server)
    # (PyIceberg writes partitioned tables only with pyiceberg-core, not installed here)
    table = cat.create_table(f"{ns}.events", _schema())
    rows = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "name": ["a", "b", None],
            "ts": pa.array([0, 86_400_000_000, 2 * 86_400_000_000], pa.timestamp("us")),
        }
    )
    table.append(rows)
    with table.update_schema() as update:
        update.add_column("note", StringType())
    table.append(
        pa.table(
            {
                "id": pa.array([4], pa.int64()),
                "name": ["d"],
                "ts": pa.array([0], pa.timestamp("us")),
                "note": ["n"],
            }
        )
    )
    again = cat.load_table(f"{ns}.events")
    assert [f.name for f in again.schema().fields] == ["id", "name", "ts", "note"]
    assert again.schema().find_field("note").field_id == 4
    assert sorted(again.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    # What the backing catalog holds, read without the server, by Icecore and by PyIceberg.
    direct = SqlCatalog(rest_server.catalog_db).load_table(f"{ns}.events")
    assert direct.metadata_location == again.metadata_location
    assert len(direct.snapshots()) == 2
    assert direct.metadata.current_schema().find_field_by_name("note") is not None
    peer = peer_sql(rest_server).load_table(f"{ns}.events")
    assert peer.metadata_location == again.metadata_location
    assert sorted(peer.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    assert direct.scan().plan().to_arrow().num_rows == 4


def test_stale_commit_is_refused_and_nothing_is_lost(rest_server: RestServer, ns: str) -> None:
    cat = rest(rest_server)
    first = cat.create_table(f"{ns}.t", _schema())
    second = cat.load_table(f"{ns}.t")
    with first.update_schema() as update:
        update.add_column("x", IntegerType())
    with pytest.raises(CommitFailedException), second.update_schema() as update:
        update.add_column("y", IntegerType())
    names = [f.name for f in cat.load_table(f"{ns}.t").schema().fields]
    assert names == ["id", "name", "ts", "x"]


def test_stage_create_then_commit(rest_server: RestServer, ns: str) -> None:
    cat = rest(rest_server)
    with cat.create_table_transaction(f"{ns}.staged", _schema()) as tx:
        tx.set_properties(owner="ana")
        # staged: nothing in the catalog yet
        assert "staged" not in [t[1] for t in cat.list_tables(ns)]
    table = cat.load_table(f"{ns}.staged")
    assert table.properties["owner"] == "ana"
    assert (
        SqlCatalog(rest_server.catalog_db).load_table(f"{ns}.staged").metadata.properties["owner"]
        == "ana"
    )
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table(f"{ns}.staged", _schema())


def test_rename_drop_and_register(rest_server: RestServer, ns: str) -> None:
    cat = rest(rest_server)
    table = cat.create_table(f"{ns}.a", _schema())
    table.append(
        pa.table(
            {
                "id": pa.array([1], pa.int64()),
                "name": ["x"],
                "ts": pa.array([0], pa.timestamp("us")),
            }
        )
    )
    location = cat.load_table(f"{ns}.a").metadata_location
    cat.rename_table(f"{ns}.a", f"{ns}.b")
    assert [t[1] for t in cat.list_tables(ns)] == ["b"]
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"{ns}.a")
    cat.drop_table(f"{ns}.b")
    assert cat.list_tables(ns) == []
    with pytest.raises(NoSuchTableError):
        cat.drop_table(f"{ns}.b")
    registered = cat.register_table(f"{ns}.back", location)
    assert registered.metadata_location == location
    assert registered.scan().to_arrow()["id"].to_pylist() == [1]
    assert peer_sql(rest_server).load_table(f"{ns}.back").metadata_location == location


def test_nested_namespace_in_a_path(rest_server: RestServer) -> None:
    cat = rest(rest_server)
    cat.create_namespace(("deep", "er"))
    cat.create_table(("deep", "er", "t"), _schema())
    r = requests.get(f"{rest_server.url}/v1/namespaces/deep{SEP}er/tables/t", timeout=10)
    assert r.status_code == 200
    assert r.json()["metadata"]["schemas"][0]["fields"][0]["name"] == "id"
    assert SqlCatalog(rest_server.catalog_db).list_tables(("deep", "er"))[0].name == "t"
