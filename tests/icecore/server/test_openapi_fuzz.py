"""An OpenAPI-driven fuzz run of ``serve-rest``: requests generated from the spec itself.

schemathesis (pinned in requirements-dev.txt) generates requests from the vendored
``openapi/rest-catalog-open-api.yaml`` (apache/iceberg ``open-api/``), both valid ones and
ones that break the spec's schemas, for every operation the server lists in ``GET
/v1/config``, and sends them to a real server over a SQLite catalog and over a warehouse
folder. Every answer must be one the spec documents: no 5xx, a documented status code, a
JSON body matching that status's schema. Half the generated paths are pointed at a
namespace and table that exist, so commits, loads and drops reach real tables (failures on
today's server before this test: HEAD answered 200, which the spec does not document).

The number of examples is bounded (and the generation derandomized, so a run is repeatable):
the run is a smoke test of the protocol surface, kept near a minute.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.icecore.server.conftest import RestServer, start_server, stop_server

pytestmark = pytest.mark.slow

SPEC = Path(__file__).parent / "openapi" / "rest-catalog-open-api.yaml"
EXAMPLES = 5
"""Examples per operation and generation mode (valid / invalid): ~17 operations each."""

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

KNOWN_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [{"id": 1, "name": "a", "required": False, "type": "int"}],
}


def served_spec(server: RestServer) -> dict[str, Any]:
    """The spec as this server serves it: empty ``{prefix}``, only the operations it lists."""
    raw = yaml.safe_load(SPEC.read_text())
    served = set(requests.get(f"{server.url}/v1/config", timeout=10).json()["endpoints"])
    paths: dict[str, Any] = {}
    for path, item in raw["paths"].items():
        operations: dict[str, Any] = {}
        for method, operation in item.items():
            if method == "parameters":
                operations[method] = [
                    p for p in operation if not str(p.get("$ref", "")).endswith("/prefix")
                ]
            elif f"{method.upper()} {path}" in served or path == "/v1/config":
                operations[method] = operation
        if set(operations) - {"parameters"}:
            paths[path.replace("/v1/{prefix}/", "/v1/")] = operations
    raw["paths"] = _wrapped_errors(paths)
    raw["servers"] = [{"url": server.url}]
    raw.pop("security", None)  # the server runs without --credential here
    return dict(raw)


def _wrapped_errors(node: Any) -> Any:
    """The view routes' error responses as ``IcebergErrorResponse``, as every other route's.

    The vendored spec gives some view errors (404, 409 of ``loadView``, ``replaceView``,
    ...) the bare ``ErrorModel`` schema while its own examples for them
    (``NoSuchViewError``, ``ViewAlreadyExistsError``) wrap it in ``error``: the mistake
    apache/iceberg#8914 fixed for the table routes. Iceberg Java's server and client and
    PyIceberg all send and read the wrapped form, which ``serve-rest`` answers.
    """
    if isinstance(node, dict):
        if node.get("$ref") == "#/components/schemas/ErrorModel" and len(node) == 1:
            return {"$ref": "#/components/schemas/IcebergErrorResponse"}
        return {k: _wrapped_errors(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_wrapped_errors(v) for v in node]
    return node


def _confine(case: Any) -> None:
    """Keep generated writes inside the test's warehouse.

    Where a table lives is chosen by the server's own rules (the default location); a
    generated ``location``, ``set-location``, storage-path property or namespace
    ``location`` could name any folder on this machine, which a fuzz run must not write.
    """
    body = case.body
    if not isinstance(body, dict):
        return
    body.pop("location", None)
    for props in (body.get("properties"), body.get("updates")):
        if isinstance(props, dict):
            for key in [k for k in props if k == "location" or str(k).startswith("write.")]:
                del props[key]
    changes = body.get("table-changes")
    for change in [body, *(changes if isinstance(changes, list) else [])]:
        updates = change.get("updates") if isinstance(change, dict) else None
        if not isinstance(updates, list):
            continue
        # set-location names a folder to write to; drop it whole.
        updates[:] = [
            u for u in updates if not (isinstance(u, dict) and u.get("action") == "set-location")
        ]
        for u in updates:
            props = u.get("updates") if isinstance(u, dict) else None
            if isinstance(props, dict):
                for key in [k for k in props if str(k).startswith("write.")]:
                    del props[key]


def _fuzz_operation(
    server: RestServer, operation: Any, mode: Any, failures: dict[str, str]
) -> None:
    """Send ``EXAMPLES`` generated requests for one operation; record what the spec refutes."""

    @given(operation.as_strategy(generation_mode=mode), st.booleans())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any, known: bool) -> None:
        if known:  # a DELETE drops the spare table, so later operations still find "t"
            table = "u" if case.method == "DELETE" else "t"
            for name, value in (("namespace", "fuzz"), ("table", table)):
                if name in (case.path_parameters or {}):
                    case.path_parameters[name] = value
        _confine(case)
        response = case.call(base_url=server.url, timeout=30)
        try:
            case.validate_response(response, checks=CHECKS)
        except BaseException as e:  # schemathesis raises an exception group
            text = str(e)
            first = text.split("\n\n")[1] if "\n\n" in text else text
            key = f"{operation.label} -> {response.status_code}: {first.strip()[:200]}"
            request = f"{case.path_parameters} {case.query} {str(case.body)[:300]}"
            failures.setdefault(key, f"{key} (request: {request})")

    with contextlib.suppress(Unsatisfiable):  # nothing to break in some operations
        run()


def fuzz(server: RestServer) -> list[str]:
    """Every distinct failure of the fuzz run against ``server``, one line each."""
    schema = schemathesis.openapi.from_dict(served_spec(server))
    failures: dict[str, str] = {}
    for result in schema.get_all_operations():
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            _fuzz_operation(server, result.ok(), mode, failures)
    assert server.process.poll() is None, "the server died during the fuzz run"
    return sorted(failures.values())


@pytest.fixture(params=["sqlite", "folder"])
def fuzzed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RestServer]:
    """A server over a SQLite catalog or a warehouse folder, with one namespace and table."""
    warehouse = tmp_path / "wh"
    server = start_server(warehouse, catalog=str(warehouse) if request.param == "folder" else None)
    try:
        r = requests.post(f"{server.url}/v1/namespaces", json={"namespace": ["fuzz"]}, timeout=10)
        assert r.status_code == 200, r.text
        for name in ("t", "u"):
            r = requests.post(
                f"{server.url}/v1/namespaces/fuzz/tables",
                json={"name": name, "schema": KNOWN_SCHEMA},
                timeout=10,
            )
            assert r.status_code == 200, r.text
        yield server
    finally:
        stop_server(server)


def test_fuzzed_requests_get_answers_the_spec_documents(fuzzed: RestServer) -> None:
    failures = fuzz(fuzzed)
    assert not failures, "\n".join(failures)
