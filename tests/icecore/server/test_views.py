"""The REST protocol's view operations on ``serve-rest``: PyIceberg 0.12 and plain HTTP.

PyIceberg's ``RestCatalog`` (a peer client) creates, lists, loads, registers and drops views;
``replaceView`` (which PyIceberg does not send) is driven over HTTP as the OpenAPI spec
shapes it. The catalog's own database rows are read with sqlite3 to judge what was written.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import requests

from icecore.catalog.base import TableIdentifier
from icecore.errors import NotFound
from tests.icecore.server.conftest import RestServer, start_server, stop_server

pyiceberg = pytest.importorskip("pyiceberg")

from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import LongType, NestedField  # noqa: E402
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion  # noqa: E402

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _version(sql: str) -> ViewVersion:
    return ViewVersion(
        schema_id=0,
        summary={"engine-name": "pyiceberg"},
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=["db"],
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    started = start_server(tmp_path_factory.mktemp("rest-views") / "warehouse")
    yield started
    stop_server(started)


@pytest.fixture(scope="module")
def client(server: RestServer) -> RestCatalog:
    catalog = RestCatalog("views", uri=server.url)
    catalog.create_namespace("db")
    catalog.create_table("db.trips", schema=SCHEMA)
    return catalog


def _rows(server: RestServer) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(server.catalog_db)) as conn:
        return sorted(conn.execute("SELECT table_name, iceberg_type FROM iceberg_tables"))


def test_config_advertises_the_eight_view_routes(server: RestServer) -> None:
    endpoints = requests.get(f"{server.url}/v1/config", timeout=10).json()["endpoints"]
    views = {e for e in endpoints if "view" in e}
    assert views == {
        "GET /v1/{prefix}/namespaces/{namespace}/views",
        "POST /v1/{prefix}/namespaces/{namespace}/views",
        "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "POST /v1/{prefix}/views/rename",
        "POST /v1/{prefix}/namespaces/{namespace}/register-view",
    }


def test_pyiceberg_creates_lists_loads_and_drops_a_view(
    server: RestServer, client: RestCatalog
) -> None:
    created = client.create_view("db.recent", SCHEMA, _version("SELECT * FROM db.trips"))
    assert client.list_views("db") == [("db", "recent")]
    assert client.view_exists("db.recent")
    loaded = client.load_view("db.recent")
    assert loaded.metadata.view_uuid == created.metadata.view_uuid
    rep = loaded.metadata.versions[0].representations[0].root
    assert rep.sql == "SELECT * FROM db.trips"
    assert ("recent", "VIEW") in _rows(server)  # JdbcCatalog's layout
    assert client.list_tables("db") == [("db", "trips")]
    with pytest.raises(ViewAlreadyExistsError, match="Table"):  # a table's name cannot be a view's
        client.create_view("db.trips", SCHEMA, _version("SELECT 1"))
    # register the same file under another name, then drop both
    location = requests.get(f"{server.url}/v1/namespaces/db/views/recent", timeout=10).json()[
        "metadata-location"
    ]
    client.register_view("db.again", location)
    assert sorted(client.list_views("db")) == [("db", "again"), ("db", "recent")]
    client.drop_view("db.again")
    client.drop_view("db.recent")
    assert client.list_views("db") == []
    assert not client.view_exists("db.recent")
    with pytest.raises(NoSuchViewError):
        client.load_view("db.recent")


def test_a_view_of_a_missing_table_still_loads(client: RestCatalog) -> None:
    client.create_view("db.ghost", SCHEMA, _version("SELECT * FROM db.no_such_table"))
    loaded = client.load_view("db.ghost")
    assert "no_such_table" in loaded.metadata.versions[0].representations[0].root.sql
    client.drop_view("db.ghost")


def _replace(url: str, view: str, sql: str, uuid: str | None) -> requests.Response:
    version = {
        "version-id": 1,
        "schema-id": -1,
        "timestamp-ms": 1_700_000_000_000,
        "summary": {"engine-name": "test"},
        "default-namespace": ["db"],
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
    }
    body = {
        "requirements": [] if uuid is None else [{"type": "assert-view-uuid", "uuid": uuid}],
        "updates": [
            {
                "action": "add-schema",
                "schema": {
                    "type": "struct",
                    "schema-id": 0,
                    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
                },
            },
            {"action": "add-view-version", "view-version": version},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }
    return requests.post(f"{url}/v1/namespaces/db/views/{view}", json=body, timeout=60)


def test_concurrent_replaces_never_lose_a_version(server: RestServer, client: RestCatalog) -> None:
    uuid = client.create_view("db.busy", SCHEMA, _version("SELECT 0")).metadata.view_uuid
    answers: list[requests.Response] = []
    start = threading.Barrier(4)

    def replace(n: int) -> None:
        start.wait()
        answers.append(_replace(server.url, "busy", f"SELECT {n}", uuid))

    threads = [threading.Thread(target=replace, args=(n,)) for n in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    landed = {a.json()["metadata"]["current-version-id"] for a in answers if a.status_code == 200}
    refused = [a for a in answers if a.status_code != 200]
    assert all(a.status_code == 409 for a in refused), [a.text for a in refused]
    md = client.load_view("db.busy").metadata
    kept = {v.representations[0].root.sql for v in md.versions}
    # every replace that was answered 200 is a version of the view; none was lost
    assert {f"SELECT {n}" for n in range(1, 5)} >= kept - {"SELECT 0"}
    assert len(kept - {"SELECT 0"}) == len(landed) == 4 - len(refused)
    assert md.current_version_id in landed


def test_replace_checks_the_view_uuid_and_missing_views(
    server: RestServer, client: RestCatalog
) -> None:
    client.create_view("db.once", SCHEMA, _version("SELECT 0"))
    stale = _replace(server.url, "once", "SELECT 1", "00000000-0000-0000-0000-000000000000")
    assert stale.status_code == 409
    assert stale.json()["error"]["type"] == "CommitFailedException"
    missing = _replace(server.url, "nope", "SELECT 1", None)
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "NoSuchViewException"
    bad = requests.post(
        f"{server.url}/v1/namespaces/db/views/once",
        json={"updates": [{"action": "add-snapshot", "snapshot": {}}]},
        timeout=10,
    )
    assert bad.status_code == 400


def test_rename_view(server: RestServer, client: RestCatalog) -> None:
    client.create_view("db.old", SCHEMA, _version("SELECT 0"))
    ok = requests.post(
        f"{server.url}/v1/views/rename",
        json={
            "source": {"namespace": ["db"], "name": "old"},
            "destination": {"namespace": ["db"], "name": "new"},
        },
        timeout=10,
    )
    assert ok.status_code == 204
    assert client.view_exists("db.new") and not client.view_exists("db.old")
    taken = requests.post(
        f"{server.url}/v1/views/rename",
        json={
            "source": {"namespace": ["db"], "name": "new"},
            "destination": {"namespace": ["db"], "name": "trips"},
        },
        timeout=10,
    )
    assert taken.status_code == 409
    assert taken.json()["error"]["type"] == "AlreadyExistsException"


def test_icecores_client_lists_and_loads_views_of_a_rest_catalog(
    server: RestServer, client: RestCatalog
) -> None:
    from icecore.catalog import load_catalog

    client.create_namespace("other")
    client.create_view("other.seen", SCHEMA, _version("SELECT id FROM db.trips"))
    catalog = load_catalog(server.url)
    assert catalog.kind == "rest"
    assert catalog.list_views(("other",)) == [TableIdentifier(("other",), "seen")]
    assert TableIdentifier(("other",), "seen") in catalog.list_views()
    view = catalog.load_view("other.seen")
    assert view.metadata.current_version.sql("spark") == "SELECT id FROM db.trips"
    pyiceberg_view = client.load_view("other.seen")
    assert view.metadata.view_uuid == pyiceberg_view.metadata.view_uuid
    with pytest.raises(NotFound):
        catalog.load_view("other.missing")


def test_a_view_location_outside_the_served_locations_is_refused(
    server: RestServer, client: RestCatalog, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    body = {
        "name": "stray",
        "location": str(outside),
        "schema": {"type": "struct", "schema-id": 0, "fields": []},
        "view-version": {
            "version-id": 1,
            "schema-id": 0,
            "timestamp-ms": 1,
            "summary": {},
            "default-namespace": ["db"],
            "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
        },
        "properties": {},
    }
    answer = requests.post(f"{server.url}/v1/namespaces/db/views", json=body, timeout=10)
    assert answer.status_code == 403, answer.text
    assert not outside.exists()
    props = {**body, "location": None, "properties": {"write.metadata.path": str(outside)}}
    answer = requests.post(f"{server.url}/v1/namespaces/db/views", json=props, timeout=10)
    assert answer.status_code == 403, answer.text
    assert not outside.exists()
    assert not client.view_exists("db.stray")


def test_a_warehouse_folder_served_keeps_views_in_its_hidden_folder(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    folder_server = start_server(warehouse, catalog=str(warehouse))
    try:
        peer = RestCatalog("folder", uri=folder_server.url)
        peer.create_namespace("db")
        peer.create_table("db.trips", schema=SCHEMA)
        peer.create_view("db.recent", SCHEMA, _version("SELECT * FROM db.trips"))
        assert peer.list_views("db") == [("db", "recent")]
        assert peer.list_tables("db") == [("db", "trips")]
        assert (warehouse / "db" / ".views" / "recent" / "metadata" / "v1.metadata.json").is_file()
        answer = _replace(folder_server.url, "recent", "SELECT 2", None)
        assert answer.status_code == 200, answer.text
        assert (warehouse / "db" / ".views" / "recent" / "metadata" / "v2.metadata.json").is_file()
        renamed = requests.post(
            f"{folder_server.url}/v1/views/rename",
            json={
                "source": {"namespace": ["db"], "name": "recent"},
                "destination": {"namespace": ["db"], "name": "other"},
            },
            timeout=10,
        )
        assert renamed.status_code == 406  # a folder view's metadata names its folder
        peer.drop_view("db.recent")
        assert peer.list_views("db") == []
    finally:
        stop_server(folder_server)


def test_views_on_a_served_postgresql_catalog(pg_server: Any, tmp_path: Path) -> None:
    import uuid as uuid_module

    from tests.pg_server import with_catalog_tables

    uri = with_catalog_tables(pg_server.create_database(f"v_{uuid_module.uuid4().hex[:8]}"))
    bare = uri.replace(f":{pg_server.password}@", "@") + "?catalog=pgviews"
    tables = tmp_path / "wh" / "tables"
    pg_served = start_server(
        tmp_path / "wh",
        "--allow-location",
        str(tables),
        catalog=bare,
        env={"PGPASSWORD": pg_server.password},
    )
    try:
        peer = RestCatalog("pg", uri=pg_served.url)
        peer.create_namespace("db", {"location": str(tables / "db")})
        peer.create_view("db.recent", SCHEMA, _version("SELECT 1"))
        assert peer.list_views("db") == [("db", "recent")]
        assert _replace(pg_served.url, "recent", "SELECT 2", None).status_code == 200
        assert len(peer.load_view("db.recent").metadata.versions) == 2
        assert next((tables / "db" / "recent" / "metadata").glob("00001-*.metadata.json"))
        peer.drop_view("db.recent")
        assert peer.list_views("db") == []
    finally:
        stop_server(pg_served)
