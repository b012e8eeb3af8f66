"""Bad input answered with the spec's ErrorModel, and the server stays up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import requests

from tests.icecore.server.conftest import RestServer


def _error(r: requests.Response, code: int, kind: str) -> str:
    assert r.status_code == code, r.text
    body = r.json()["error"]
    assert body["code"] == code and body["type"] == kind
    assert "Traceback" not in body["message"]
    return str(body["message"])


def _still_up(server: RestServer) -> None:
    assert requests.get(f"{server.url}/v1/config", timeout=10).status_code == 200


def _table(server: RestServer, ns: str, name: str) -> None:
    requests.post(f"{server.url}/v1/namespaces", json={"namespace": [ns]}, timeout=10)
    body: dict[str, Any] = {
        "name": name,
        "schema": {
            "type": "struct",
            "fields": [{"id": 1, "name": "a", "required": False, "type": "int"}],
        },
    }
    r = requests.post(f"{server.url}/v1/namespaces/{ns}/tables", json=body, timeout=10)
    assert r.status_code == 200, r.text


def test_malformed_json_is_400(rest_server: RestServer) -> None:
    r = requests.post(
        f"{rest_server.url}/v1/namespaces",
        data=b'{"namespace": ["x"',
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    _error(r, 400, "BadRequestException")
    _still_up(rest_server)


def test_unknown_endpoint_and_method(rest_server: RestServer) -> None:
    _error(
        requests.get(f"{rest_server.url}/v1/nothing/here", timeout=10),
        404,
        "NoSuchEndpointException",
    )
    _error(
        requests.put(f"{rest_server.url}/v1/namespaces", timeout=10),
        405,
        "MethodNotAllowedException",
    )
    _still_up(rest_server)


def test_unknown_table_and_namespace(rest_server: RestServer) -> None:
    _table(rest_server, "bad_ns", "known")
    r = requests.get(f"{rest_server.url}/v1/namespaces/bad_ns/tables/unknown", timeout=10)
    _error(r, 404, "NoSuchTableException")
    # Iceberg Java's server answers NoSuchTable here too (Spark relies on it to resolve
    # metadata tables such as ns.t.snapshots)
    r = requests.get(f"{rest_server.url}/v1/namespaces/missing/tables/unknown", timeout=10)
    _error(r, 404, "NoSuchTableException")
    r = requests.get(f"{rest_server.url}/v1/namespaces/missing/tables", timeout=10)
    _error(r, 404, "NoSuchNamespaceException")
    r = requests.get(f"{rest_server.url}/v1/namespaces/missing", timeout=10)
    _error(r, 404, "NoSuchNamespaceException")
    commit: dict[str, Any] = {"requirements": [], "updates": []}
    r = requests.post(
        f"{rest_server.url}/v1/namespaces/bad_ns/tables/unknown", json=commit, timeout=10
    )
    _error(r, 404, "NoSuchTableException")
    _still_up(rest_server)


def test_unsupported_requirement_and_update(rest_server: RestServer) -> None:
    _table(rest_server, "bad_req", "t")
    url = f"{rest_server.url}/v1/namespaces/bad_req/tables/t"
    before = requests.get(url, timeout=10).json()["metadata-location"]
    r = requests.post(
        url, json={"requirements": [{"type": "assert-the-moon"}], "updates": []}, timeout=10
    )
    assert "assert-the-moon" in _error(r, 400, "BadRequestException")
    r = requests.post(url, json={"requirements": [], "updates": [{"action": "fly"}]}, timeout=10)
    _error(r, 400, "BadRequestException")
    r = requests.post(url, json={"requirements": "x", "updates": []}, timeout=10)
    _error(r, 400, "BadRequestException")
    assert requests.get(url, timeout=10).json()["metadata-location"] == before


def test_failed_requirement_is_409_commit_failed(rest_server: RestServer) -> None:
    _table(rest_server, "bad_409", "t")
    url = f"{rest_server.url}/v1/namespaces/bad_409/tables/t"
    r = requests.post(
        url,
        json={
            "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 99}],
            "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
        },
        timeout=10,
    )
    _error(r, 409, "CommitFailedException")
    assert "k" not in requests.get(url, timeout=10).json()["metadata"].get("properties", {})


def test_huge_body_is_413_and_the_server_stays_up(rest_server: RestServer) -> None:
    payload = json.dumps({"namespace": ["x"], "properties": {"k": "v" * (9 * 1024 * 1024)}})
    r = requests.post(f"{rest_server.url}/v1/namespaces", data=payload, timeout=60)
    _error(r, 413, "RequestTooLargeException")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while streaming too
        for _ in range(10):
            yield b"x" * (1024 * 1024)

    r = requests.post(f"{rest_server.url}/v1/namespaces", data=chunks(), timeout=60)
    _error(r, 413, "RequestTooLargeException")
    _still_up(rest_server)
    assert requests.get(f"{rest_server.url}/v1/namespaces/x", timeout=10).status_code == 404
