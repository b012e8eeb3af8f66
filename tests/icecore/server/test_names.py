"""Names and schema depth over HTTP: ``serve-rest`` on SQLite and on a warehouse folder.

What a hostile client sends as a namespace or table name (``../../escape``, ``""``, a NUL,
3,000 characters, the unit separator (0x1F) between levels, a case twin) is answered 400 with one
sentence, never 500, and the file system shows nothing was written, inside the warehouse
or beside it. A schema nested 150 levels deep is a 400; 64 levels still work end to end.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests

from icecore.metadata.builder import encode_metadata
from icecore.server.create import new_table_metadata
from tests.conftest import REPO
from tests.icecore.server.conftest import RestServer, start_server, stop_server
from tests.pg_server import PgServer, with_catalog_tables

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}
UNSAFE = ["../../escape", "", "x\x00y", "x" * 3000, "a\x1fb", "a.b", "tab\there"]


@pytest.fixture(scope="module", params=["sqlite", "folder"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestServer]:
    """A server over SQLite (catalog.db in the warehouse) or over a bare warehouse folder."""
    warehouse = tmp_path_factory.mktemp(f"names_{request.param}") / "wh"
    if request.param == "sqlite":
        started = start_server(warehouse)
    else:
        warehouse.mkdir(parents=True)
        started = start_server(warehouse, catalog=str(warehouse))
    yield started
    stop_server(started)


def _post(server: RestServer, path: str, body: Any) -> requests.Response:
    return requests.post(f"{server.url}/v1/{path}", json=body, timeout=60)


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every folder and file below ``folder``, files with their bytes.

    catalog.db is left out: SQLite may touch it on a read.
    """
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
        if not p.name.startswith("catalog.db")
    }


def _one_sentence_400(answer: requests.Response) -> str:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "BadRequestException"
    assert "\n" not in error["message"]
    return str(error["message"])


def _deep_schema(levels: int) -> dict[str, Any]:
    """A schema whose one column nests ``levels`` structs."""
    column: Any = "long"
    for i in range(levels):
        column = {
            "type": "struct",
            "fields": [{"id": 1000 + i, "name": f"f{i}", "required": False, "type": column}],
        }
    return {
        "type": "struct",
        "schema-id": 0,
        "fields": [{"id": 1, "name": "top", "required": False, "type": column}],
    }


@pytest.mark.parametrize("name", UNSAFE)
def test_unsafe_names_are_400_and_write_nothing(server: RestServer, name: str) -> None:
    _post(server, "namespaces", {"namespace": ["ns"]})
    source = _post(server, "namespaces/ns/tables", {"name": "source", "schema": SCHEMA})
    existing = source.json()["metadata-location"] if source.ok else None
    if existing is None:  # made by an earlier parameter
        loaded = requests.get(f"{server.url}/v1/namespaces/ns/tables/source", timeout=60)
        existing = loaded.json()["metadata-location"]
    outside = server.warehouse.parent
    before = _tree(outside)
    created = _post(server, "namespaces/ns/tables", {"name": name, "schema": SCHEMA})
    assert "Invalid table name" in _one_sentence_400(created)
    for more in ({}, {"location": str(server.warehouse / "ns" / "elsewhere")}):
        staged = _post(
            server,
            "namespaces/ns/tables",
            {"name": name, "schema": SCHEMA, "stage-create": True, **more},
        )
        assert "Invalid table name" in _one_sentence_400(staged)
    registered = _post(
        server,
        "namespaces/ns/register",
        {"name": name, "metadata-location": existing},
    )
    assert "Invalid table name" in _one_sentence_400(registered)
    level = _post(server, "namespaces", {"namespace": ["ns", name]})
    assert level.status_code == 400, level.text
    assert _tree(outside) == before
    assert not (outside.parent / "escape").exists() and not (outside / "escape").exists()
    listed = requests.get(f"{server.url}/v1/namespaces/ns/tables", timeout=60).json()
    assert name not in [t["name"] for t in listed["identifiers"]]


def test_a_case_twin_is_400_and_the_first_table_stays(server: RestServer) -> None:
    _post(server, "namespaces", {"namespace": ["twins"]})
    assert _post(server, "namespaces/twins/tables", {"name": "trips", "schema": SCHEMA}).ok
    before = _tree(server.warehouse)
    for twin in ("TRIPS", "Trips"):
        answer = _post(server, "namespaces/twins/tables", {"name": twin, "schema": SCHEMA})
        assert "differs only by case" in _one_sentence_400(answer)
    answer = _post(server, "namespaces", {"namespace": ["TWINS"]})
    assert "differs only by case" in _one_sentence_400(answer)
    assert _tree(server.warehouse) == before
    listed = requests.get(f"{server.url}/v1/namespaces/twins/tables", timeout=60).json()
    assert [t["name"] for t in listed["identifiers"]] == ["trips"]
    assert requests.get(f"{server.url}/v1/namespaces/twins/tables/trips", timeout=60).ok


def test_rename_to_an_unsafe_name_or_a_twin_is_400(server: RestServer) -> None:
    _post(server, "namespaces", {"namespace": ["ren"]})
    for name in ("a1", "b1"):
        assert _post(server, "namespaces/ren/tables", {"name": name, "schema": SCHEMA}).ok
    before = _tree(server.warehouse.parent)
    for destination in ("../../escape", "x" * 3000, "a\x1fb", "B1"):
        answer = _post(
            server,
            "tables/rename",
            {
                "source": {"namespace": ["ren"], "name": "a1"},
                "destination": {"namespace": ["ren"], "name": destination},
            },
        )
        _one_sentence_400(answer)
    assert _tree(server.warehouse.parent) == before


def test_a_150_deep_schema_is_400_and_64_levels_still_work(server: RestServer) -> None:
    _post(server, "namespaces", {"namespace": ["deep"]})
    before = _tree(server.warehouse)
    answer = _post(server, "namespaces/deep/tables", {"name": "d150", "schema": _deep_schema(150)})
    assert "nested more than 64 levels" in _one_sentence_400(answer)
    assert _tree(server.warehouse) == before
    answer = _post(server, "namespaces/deep/tables", {"name": "d64", "schema": _deep_schema(64)})
    assert answer.status_code == 200, answer.text
    loaded = requests.get(f"{server.url}/v1/namespaces/deep/tables/d64", timeout=60)
    assert loaded.status_code == 200
    column: Any = loaded.json()["metadata"]["schemas"][0]["fields"][0]["type"]
    levels = 0
    while isinstance(column, dict):
        levels, column = levels + 1, column["fields"][0]["type"]
    assert (levels, column) == (64, "long")
    assert server.alive()


def test_names_already_in_the_catalog_stay_listed_and_loadable(tmp_path: Path) -> None:
    """Rows another writer made with names the rule refuses are still served."""
    warehouse = tmp_path / "wh"
    server = start_server(warehouse)
    try:
        assert _post(server, "namespaces", {"namespace": ["db"]}).ok
        made = _post(server, "namespaces/db/tables", {"name": "good", "schema": SCHEMA}).json()
        legacy = [("db", "my table"), ("db", "TRIPS"), ("db", "trips")]
        with closing(sqlite3.connect(server.catalog_db)) as conn, conn:
            for ns, name in legacy:
                conn.execute(
                    "INSERT INTO iceberg_tables VALUES ('icecore', ?, ?, ?, NULL)",
                    (ns, name, made["metadata-location"]),
                )
        listed = requests.get(f"{server.url}/v1/namespaces/db/tables", timeout=60).json()
        assert {"my table", "TRIPS", "trips", "good"} == {t["name"] for t in listed["identifiers"]}
        for _, name in legacy:
            loaded = requests.get(f"{server.url}/v1/namespaces/db/tables/{quote(name)}", timeout=60)
            assert loaded.status_code == 200, loaded.text
    finally:
        stop_server(server)


def test_the_cli_refuses_a_150_deep_schema_in_one_sentence(tmp_path: Path) -> None:
    metadata = new_table_metadata(location=str(tmp_path), schema=SCHEMA)
    document = json.loads(encode_metadata(metadata))
    document["schemas"] = [_deep_schema(150)]
    path = tmp_path / "v1.metadata.json"
    path.write_text(json.dumps(document))
    nested_json = tmp_path / "v2.metadata.json"
    nested_json.write_text("[" * 100_000 + "]" * 100_000)
    for target, expected in ((path, "nested more than 64 levels"), (nested_json, "too deeply")):
        result = subprocess.run(
            [sys.executable, "-m", "icecore", "history", str(target)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 1, result.stderr
        assert expected in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.stderr


def test_names_over_a_postgresql_backed_server(pg_server: PgServer, tmp_path: Path) -> None:
    """PostgreSQL's VARCHAR(255) made a 3,000-character name (or property key) a 500."""
    uri = with_catalog_tables(pg_server.create_database(f"names_{uuid.uuid4().hex[:8]}"))
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    # A PostgreSQL catalog has no warehouse folder of its own: the tables' root is named.
    server = start_server(warehouse, "--allow-location", str(warehouse), catalog=uri)
    try:
        made = _post(
            server,
            "namespaces",
            {"namespace": ["db"], "properties": {"location": str(warehouse / "db")}},
        )
        assert made.status_code == 200, made.text
        before = _tree(tmp_path)
        for name in UNSAFE:
            answer = _post(server, "namespaces/db/tables", {"name": name, "schema": SCHEMA})
            assert "Invalid table name" in _one_sentence_400(answer)
            answer = _post(server, "namespaces", {"namespace": ["db", name]})
            assert answer.status_code == 400, answer.text
        too_long = {"namespace": ["other"], "properties": {"k" * 300: "v"}}
        assert "too long" in _one_sentence_400(_post(server, "namespaces", too_long))
        assert _tree(tmp_path) == before
        assert _post(server, "namespaces/db/tables", {"name": "trips", "schema": SCHEMA}).ok
        twin = _post(server, "namespaces/db/tables", {"name": "TRIPS", "schema": SCHEMA})
        assert "differs only by case" in _one_sentence_400(twin)
        listed = requests.get(f"{server.url}/v1/namespaces/db/tables", timeout=60).json()
        assert [t["name"] for t in listed["identifiers"]] == ["trips"]
        assert server.alive()
    finally:
        stop_server(server)
