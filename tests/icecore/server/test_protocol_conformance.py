"""The protocol as engines expect it: answers Iceberg Java's server gives and the spec documents.

Each test drives the real server over HTTP and judges the answer: its status, its
``ErrorModel`` type (what clients dispatch on), its headers, and what the catalog holds after.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import requests

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer

SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"id": 1, "name": "a", "required": False, "type": "int"},
        {"id": 2, "name": "b", "required": False, "type": "string"},
    ],
}


def _error(r: requests.Response, code: int, kind: str) -> str:
    assert r.status_code == code, r.text
    body = r.json()["error"]
    assert body["code"] == code and body["type"] == kind, body
    assert "Traceback" not in body["message"]
    return str(body["message"])


def _namespace(server: RestServer, ns: str) -> None:
    r = requests.post(f"{server.url}/v1/namespaces", json={"namespace": [ns]}, timeout=10)
    assert r.status_code == 200, r.text


def _table(server: RestServer, ns: str, name: str) -> dict[str, Any]:
    body = {"name": name, "schema": SCHEMA}
    r = requests.post(f"{server.url}/v1/namespaces/{ns}/tables", json=body, timeout=10)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_head_answers_204_without_reading_the_metadata_file(rest_server: RestServer) -> None:
    _namespace(rest_server, "heads")
    created = _table(rest_server, "heads", "t")
    url = f"{rest_server.url}/v1/namespaces/heads/tables/t"
    # The metadata file is damaged: loading the table fails, the existence probe does not.
    Path(created["metadata-location"].removeprefix("file://")).write_bytes(b"not json")
    assert requests.get(url, timeout=10).status_code != 200
    r = requests.head(url, timeout=10)
    assert r.status_code == 204 and r.content == b""
    assert requests.head(f"{url}_missing", timeout=10).status_code == 404
    assert requests.head(f"{rest_server.url}/v1/namespaces/heads", timeout=10).status_code == 204
    r = requests.head(f"{rest_server.url}/v1/namespaces/no_such_ns", timeout=10)
    assert r.status_code == 404


def test_create_table_without_a_schema_is_400_and_creates_nothing(
    rest_server: RestServer,
) -> None:
    _namespace(rest_server, "no_schema")
    url = f"{rest_server.url}/v1/namespaces/no_schema/tables"
    for body in ({"name": "t"}, {"name": "t", "schema": None}, {"name": "t", "schema": "x"}):
        _error(requests.post(url, json=body, timeout=10), 400, "BadRequestException")
    # A schema whose fields are not a list of fields (the fuzz run's one 5xx: fields: true).
    for fields in (True, 3, [True], [{"id": 1, "name": "a", "type": "int"}, "b"]):
        body = {"name": "t", "schema": {"type": "struct", "fields": fields}}
        _error(requests.post(url, json=body, timeout=10), 400, "BadRequestException")
    # A partition spec or sort order that is not an object with a list of fields.
    for key in ("partition-spec", "write-order"):
        for value in (True, "x", {"fields": 3}, {"fields": [True]}):
            body = {"name": "t", "schema": SCHEMA, key: value}
            _error(requests.post(url, json=body, timeout=10), 400, "BadRequestException")
    assert requests.get(url, timeout=10).json()["identifiers"] == []


def test_404_types_name_what_is_missing(rest_server: RestServer, tmp_path: Path) -> None:
    _namespace(rest_server, "typed")
    _table(rest_server, "typed", "present")
    change = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    for ns in ("typed", "nowhere"):
        body = {
            "table-changes": [
                {"identifier": {"namespace": ["typed"], "name": "present"}, **change},
                {"identifier": {"namespace": [ns], "name": "absent"}, **change},
            ]
        }
        r = requests.post(f"{rest_server.url}/v1/transactions/commit", json=body, timeout=10)
        _error(r, 404, "NoSuchTableException")
    props = requests.get(f"{rest_server.url}/v1/namespaces/typed/tables/present", timeout=10)
    assert "k" not in props.json()["metadata"].get("properties", {})
    missing = rest_server.warehouse / "typed" / "gone" / "metadata" / "v1.metadata.json"
    r = requests.post(
        f"{rest_server.url}/v1/namespaces/typed/register",
        json={"name": "reg", "metadata-location": str(missing)},
        timeout=10,
    )
    _error(r, 404, "NotFoundException")
    r = requests.post(
        f"{rest_server.url}/v1/namespaces/nowhere/register",
        json={"name": "reg", "metadata-location": str(missing)},
        timeout=10,
    )
    _error(r, 404, "NoSuchNamespaceException")
    # A metrics report names its table: an absent one is the spec's NoSuchTable too.
    report = {"report-type": "scan-report", "table-name": "typed.absent", "snapshot-id": 1}
    url = f"{rest_server.url}/v1/namespaces/typed/tables"
    _error(
        requests.post(f"{url}/absent/metrics", json=report, timeout=10), 404, "NoSuchTableException"
    )
    # ... and a present one answers the spec's 400 to a report that is not a ScanReport.
    _error(
        requests.post(f"{url}/present/metrics", json=report, timeout=10), 400, "BadRequestException"
    )
    report.update(
        {
            "filter": True,
            "schema-id": 0,
            "projected-field-ids": [],
            "projected-field-names": [],
            "metrics": {},
        }
    )
    assert requests.post(f"{url}/present/metrics", json=report, timeout=10).status_code == 204


def test_commit_identifier_must_name_the_table_of_the_path(rest_server: RestServer) -> None:
    _namespace(rest_server, "ident")
    _table(rest_server, "ident", "one")
    _table(rest_server, "ident", "two")
    url = f"{rest_server.url}/v1/namespaces/ident/tables/one"
    update = [{"action": "set-properties", "updates": {"k": "v"}}]
    other = {"namespace": ["ident"], "name": "two"}
    r = requests.post(
        url, json={"identifier": other, "requirements": [], "updates": update}, timeout=10
    )
    _error(r, 400, "BadRequestException")
    for name in ("one", "two"):
        md = requests.get(f"{rest_server.url}/v1/namespaces/ident/tables/{name}", timeout=10)
        assert "k" not in md.json()["metadata"].get("properties", {})
    same = {"namespace": ["ident"], "name": "one"}
    r = requests.post(
        url, json={"identifier": same, "requirements": [], "updates": update}, timeout=10
    )
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["properties"]["k"] == "v"


def test_page_token_is_opaque_and_resumes_after_the_last_name(rest_server: RestServer) -> None:
    _namespace(rest_server, "paged")
    for name in ("t1", "t2", "t3", "t4"):
        _table(rest_server, "paged", name)
    url = f"{rest_server.url}/v1/namespaces/paged/tables"
    first = requests.get(url, params={"pageSize": 2}, timeout=10).json()
    token = first["next-page-token"]
    assert [i["name"] for i in first["identifiers"]] == ["t1", "t2"]
    # Not an offset a client can guess or forge by counting.
    for guessed in ("2", "1", "0"):
        r = requests.get(url, params={"pageSize": 2, "pageToken": guessed}, timeout=10)
        _error(r, 400, "BadRequestException")
    # A table dropped on the first page does not make the next page skip one.
    assert requests.delete(f"{url}/t1", timeout=10).status_code == 204
    second = requests.get(url, params={"pageSize": 2, "pageToken": token}, timeout=10).json()
    assert [i["name"] for i in second["identifiers"]] == ["t3", "t4"]
    assert second.get("next-page-token") is None
    forged = base64.urlsafe_b64encode(json.dumps({"offset": 1}).encode()).decode()
    r = requests.get(url, params={"pageToken": forged}, timeout=10)
    assert "pageToken" in _error(r, 400, "BadRequestException")
    r = requests.get(url, params={"pageSize": 5000}, timeout=10)
    assert r.status_code == 200 and len(r.json()["identifiers"]) == 3
    r = requests.get(f"{rest_server.url}/v1/namespaces", params={"pageSize": 1}, timeout=10)
    token = r.json()["next-page-token"]
    r = requests.get(
        f"{rest_server.url}/v1/namespaces", params={"pageSize": 1, "pageToken": token}, timeout=10
    )
    assert r.status_code == 200 and len(r.json()["namespaces"]) == 1


def test_405_names_every_method_the_path_takes(rest_server: RestServer) -> None:
    r = requests.put(f"{rest_server.url}/v1/namespaces", timeout=10)
    _error(r, 405, "MethodNotAllowedException")
    allowed = {m.strip() for m in r.headers["Allow"].split(",")}
    assert {"GET", "POST"} <= allowed
    r = requests.put(f"{rest_server.url}/v1/namespaces/x/tables/y", timeout=10)
    _error(r, 405, "MethodNotAllowedException")
    assert {"GET", "HEAD", "POST", "DELETE"} <= {m.strip() for m in r.headers["Allow"].split(",")}


def test_control_characters_in_locations_are_400(rest_server: RestServer) -> None:
    _namespace(rest_server, "nul")
    created = _table(rest_server, "nul", "t")
    base = f"{rest_server.url}/v1/namespaces/nul"
    r = requests.post(
        f"{base}/register",
        json={"name": "r", "metadata-location": "/tmp/a\x00b.metadata.json"},
        timeout=10,
    )
    _error(r, 400, "BadRequestException")
    r = requests.post(
        f"{base}/tables", json={"name": "c", "schema": SCHEMA, "location": "/tmp/x\x00"}, timeout=10
    )
    _error(r, 400, "BadRequestException")
    r = requests.post(
        f"{base}/tables/t",
        json={"requirements": [], "updates": [{"action": "set-location", "location": "/a\nb"}]},
        timeout=10,
    )
    _error(r, 400, "BadRequestException")
    r = requests.post(
        f"{rest_server.url}/v1/namespaces",
        json={"namespace": ["nul_loc"], "properties": {"location": "/tmp/a\x00b"}},
        timeout=10,
    )
    _error(r, 400, "BadRequestException")
    r = requests.post(f"{base}/properties", json={"updates": {"location": "/x\x00"}}, timeout=10)
    _error(r, 400, "BadRequestException")
    assert "location" not in requests.get(base, timeout=10).json()["properties"]
    assert requests.get(f"{rest_server.url}/v1/namespaces/nul_loc", timeout=10).status_code == 404
    table = SqlCatalog(rest_server.catalog_db).load_table("nul.t")
    assert table.metadata_location == created["metadata-location"]
    assert requests.get(f"{base}/tables", timeout=10).json()["identifiers"] == [
        {"namespace": ["nul"], "name": "t"}
    ]


def test_add_schema_keeps_the_larger_last_column_id(rest_server: RestServer) -> None:
    """Iceberg Java clients send the new schema's highest id; dropping column 2 sends 1."""
    _namespace(rest_server, "lcid")
    created = _table(rest_server, "lcid", "t")
    url = f"{rest_server.url}/v1/namespaces/lcid/tables/t"
    before = created["metadata"]["last-column-id"]
    only_a = {"type": "struct", "fields": SCHEMA["fields"][:1]}
    body = {
        "requirements": [],
        "updates": [
            {"action": "add-schema", "schema": only_a, "last-column-id": 1},
            {"action": "set-current-schema", "schema-id": -1},
        ],
    }
    r = requests.post(url, json=body, timeout=10)
    assert r.status_code == 200, r.text
    md = r.json()["metadata"]
    assert md["last-column-id"] == before == 2
    current = next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])
    assert [f["name"] for f in current["fields"]] == ["a"]
    # The dropped column's id is still never handed out again.
    reused = {
        "type": "struct",
        "fields": [
            *SCHEMA["fields"][:1],
            {"id": 2, "name": "c", "required": False, "type": "long"},
        ],
    }
    body["updates"][0] = {"action": "add-schema", "schema": reused, "last-column-id": 2}
    _error(requests.post(url, json=body, timeout=10), 400, "BadRequestException")
