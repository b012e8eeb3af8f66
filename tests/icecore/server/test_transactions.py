"""``POST /v1/transactions/commit``: several tables' changes in one backing transaction.

Driven over raw HTTP (PyIceberg's REST client has no multi-table commit); what changed is
read from the backing SQLite file directly, by Icecore's SqlCatalog and PyIceberg's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from icecore.catalog import load_catalog
from icecore.catalog.base import TableIdentifier
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin
from icecore.errors import CommitConflict
from icecore.metadata.builder import MetadataBuilder, encode_metadata
from icecore.metadata.updates import SetProperties
from icecore.server.commit import supports_transactions
from icecore.server.create import new_table_metadata
from tests.conftest import REPO
from tests.icecore.server.conftest import RestServer, free_port
from tests.pg_server import PgServer, with_catalog_tables

ENDPOINT = "POST /v1/{prefix}/transactions/commit"


def _tables(server: RestServer, ns: str, names: list[str]) -> dict[str, str]:
    """Create tables through PyIceberg's REST client; name -> table uuid."""
    catalog = RestCatalog("tx", uri=server.url)
    catalog.create_namespace(ns)
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    return {n: str(catalog.create_table(f"{ns}.{n}", schema).metadata.table_uuid) for n in names}


def _locations(server: RestServer, ns: str, names: list[str]) -> dict[str, str]:
    direct = SqlCatalog(server.catalog_db)
    return {n: direct.metadata_location(direct.load_table(f"{ns}.{n}").identifier) for n in names}


def _change(ns: str, name: str, uuid: str, **extra_req: Any) -> dict[str, Any]:
    requirements: list[dict[str, Any]] = [{"type": "assert-table-uuid", "uuid": uuid}]
    if extra_req:
        requirements.append(extra_req)
    return {
        "identifier": {"namespace": [ns], "name": name},
        "requirements": requirements,
        "updates": [{"action": "set-properties", "updates": {"tx": name}}],
    }


def test_config_advertises_transactions_for_a_sql_catalog(rest_server: RestServer) -> None:
    body = requests.get(f"{rest_server.url}/v1/config", timeout=10).json()
    assert ENDPOINT in body["endpoints"]


def test_one_failed_requirement_changes_no_table(rest_server: RestServer) -> None:
    ns, names = "tx_fail", ["a", "b", "c"]
    uuids = _tables(rest_server, ns, names)
    before = _locations(rest_server, ns, names)
    changes = [_change(ns, n, uuids[n]) for n in names]
    # the last table's requirement is stale: its schema is 0, not 5
    changes[-1]["requirements"].append({"type": "assert-current-schema-id", "current-schema-id": 5})
    answer = requests.post(
        f"{rest_server.url}/v1/transactions/commit", json={"table-changes": changes}, timeout=30
    )
    assert answer.status_code == 409
    assert answer.json()["error"]["type"] == "CommitFailedException"
    assert _locations(rest_server, ns, names) == before
    peer = PyIcebergSqlCatalog(
        "icecore", uri=f"sqlite:///{rest_server.catalog_db}", warehouse=str(rest_server.warehouse)
    )
    assert all("tx" not in peer.load_table(f"{ns}.{n}").properties for n in names)
    files = [p for p in rest_server.warehouse.rglob("*.metadata.json") if ns in str(p)]
    assert len(files) == len(names)  # nothing written beyond each table's first file


def test_all_tables_change_together(rest_server: RestServer) -> None:
    ns, names = "tx_ok", ["a", "b", "c"]
    uuids = _tables(rest_server, ns, names)
    before = _locations(rest_server, ns, names)
    changes = [_change(ns, n, uuids[n]) for n in names]
    answer = requests.post(
        f"{rest_server.url}/v1/transactions/commit", json={"table-changes": changes}, timeout=30
    )
    assert answer.status_code == 204, answer.text
    after = _locations(rest_server, ns, names)
    assert all(after[n] != before[n] for n in names)
    peer = PyIcebergSqlCatalog(
        "icecore", uri=f"sqlite:///{rest_server.catalog_db}", warehouse=str(rest_server.warehouse)
    )
    for n in names:
        table = peer.load_table(f"{ns}.{n}")
        assert table.properties["tx"] == n
        assert table.metadata.metadata_log[-1].metadata_file == before[n]


def test_a_table_that_moved_meanwhile_fails_the_whole_transaction(rest_server: RestServer) -> None:
    ns, names = "tx_moved", ["a", "b"]
    uuids = _tables(rest_server, ns, names)
    catalog = RestCatalog("tx", uri=rest_server.url)
    schema_before = catalog.load_table(f"{ns}.b").metadata.current_schema_id
    with catalog.load_table(f"{ns}.b").update_schema() as update:
        update.add_column("x", LongType())
    before = _locations(rest_server, ns, names)
    changes = [
        _change(ns, "a", uuids["a"]),
        _change(
            ns,
            "b",
            uuids["b"],
            type="assert-current-schema-id",
            **{"current-schema-id": schema_before},
        ),
    ]
    answer = requests.post(
        f"{rest_server.url}/v1/transactions/commit", json={"table-changes": changes}, timeout=30
    )
    assert answer.status_code == 409
    assert _locations(rest_server, ns, names) == before


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"table-changes": []},
        {"table-changes": [{"identifier": {"namespace": ["x"], "name": "t"}, "updates": [7]}]},
        {
            "table-changes": [
                {"identifier": {"namespace": ["x"], "name": "t"}},
                {"identifier": {"namespace": ["x"], "name": "t"}},
            ]
        },
    ],
)
def test_malformed_transactions_are_refused(rest_server: RestServer, body: Any) -> None:
    answer = requests.post(f"{rest_server.url}/v1/transactions/commit", json=body, timeout=30)
    assert answer.status_code == 400


def test_a_filesystem_catalog_does_not_offer_transactions(tmp_path: Path) -> None:
    warehouse = tmp_path / "fs"
    warehouse.mkdir()
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "icecore", "serve-rest", str(warehouse), "--port", str(port)],
        cwd=REPO,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                body = requests.get(f"{url}/v1/config", timeout=1).json()
                break
            except requests.ConnectionError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        assert ENDPOINT not in body["endpoints"]
        change: dict[str, Any] = {"identifier": {"namespace": ["db"], "name": "t"}, "updates": []}
        answer = requests.post(
            f"{url}/v1/transactions/commit", json={"table-changes": [change]}, timeout=30
        )
        assert answer.status_code == 406
        assert answer.json()["error"]["type"] == "UnsupportedOperationException"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_lost_swap_rolls_back_the_tables_already_swapped(rest_server: RestServer) -> None:
    # The catalog's half of the transaction: b's row moved after it was loaded, so the swap
    # of a (done first, in the same SQL transaction) is rolled back and the new files go.
    ns, names = "tx_swap", ["a", "b"]
    _tables(rest_server, ns, names)
    direct = SqlCatalog(rest_server.catalog_db)
    loaded = {n: direct.load_table(f"{ns}.{n}") for n in names}
    with RestCatalog("tx", uri=rest_server.url).load_table(f"{ns}.b").transaction() as tx:
        tx.set_properties(moved="yes")
    before = _locations(rest_server, ns, names)
    commits = []
    for n in names:
        t = loaded[n]
        new = MetadataBuilder(t.metadata).apply(SetProperties({"tx": n})).build(t.metadata_location)
        commits.append((t.identifier, t.metadata_location, new, encode_metadata(new)))
    with pytest.raises(CommitConflict, match=f"{ns}.b"):
        direct.commit_metadata_all(commits)
    assert _locations(rest_server, ns, names) == before
    files = [p for p in rest_server.warehouse.rglob("*.metadata.json") if f"{ns}" in str(p)]
    assert len(files) == 3  # two creates and b's property change; the new files were deleted


def test_the_transaction_is_atomic_on_postgresql_too(pg_server: PgServer, tmp_path: Path) -> None:
    # Same all-or-none on a real PostgreSQL server (READ COMMITTED, row locks).
    uri = with_catalog_tables(pg_server.create_database(f"tx_{uuid.uuid4().hex[:8]}"))
    catalog = load_catalog(uri)
    assert isinstance(catalog, SqlCatalog) and supports_transactions(catalog)
    admin = SqlCatalogAdmin(catalog)
    admin.create_namespace(("db",), {})
    schema = {
        "type": "struct",
        "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
    }
    for name in ("a", "b"):
        md = new_table_metadata(location=str(tmp_path / name), schema=schema)
        admin.create_table(TableIdentifier(("db",), name), md, encode_metadata(md))
    loaded = {n: catalog.load_table(f"db.{n}") for n in ("a", "b")}

    def commits(tag: str) -> list[Any]:
        out = []
        for t in loaded.values():
            new = (
                MetadataBuilder(t.metadata)
                .apply(SetProperties({"tx": tag}))
                .build(t.metadata_location)
            )
            out.append((t.identifier, t.metadata_location, new, encode_metadata(new)))
        return out

    stale = commits("stale")
    stale[1] = (stale[1][0], "elsewhere.metadata.json", stale[1][2], stale[1][3])
    with pytest.raises(CommitConflict):
        catalog.commit_metadata_all(stale)
    assert {n: catalog.metadata_location(t.identifier) for n, t in loaded.items()} == {
        n: t.metadata_location for n, t in loaded.items()
    }
    catalog.commit_metadata_all(commits("ok"))
    assert [catalog.load_table(f"db.{n}").metadata.properties["tx"] for n in ("a", "b")] == [
        "ok",
        "ok",
    ]
