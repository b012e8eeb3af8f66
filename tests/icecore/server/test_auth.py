"""OAuth2 client credentials and ``--read-only`` on a real ``serve-rest`` process."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog

from tests.icecore.server.conftest import RestServer, start_server, stop_server

TTL_S = 2.0
CREDENTIAL = "reader:s3cr3t-value"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """A server that issues tokens living ``TTL_S`` seconds."""
    server = start_server(
        tmp_path_factory.mktemp("auth") / "warehouse",
        "--credential",
        CREDENTIAL,
        "--token-ttl",
        str(TTL_S),
    )
    yield server
    stop_server(server)


def _token(server: RestServer, secret: str) -> requests.Response:
    return requests.post(
        f"{server.url}/v1/oauth/tokens",
        data={
            "grant_type": "client_credentials",
            "client_id": "reader",
            "client_secret": secret,
            "scope": "catalog",
        },
        timeout=10,
    )


def test_wrong_secret_is_401(secured: RestServer) -> None:
    r = _token(secured, "wrong")
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    assert "s3cr3t" not in r.text


def test_missing_or_unknown_token_is_401(secured: RestServer) -> None:
    for headers in ({}, {"Authorization": "Bearer not-issued"}, {"Authorization": "Basic x"}):
        r = requests.get(f"{secured.url}/v1/namespaces", headers=headers, timeout=10)
        assert r.status_code == 401
        assert r.json()["error"]["type"] == "NotAuthorizedException"
    r = requests.get(f"{secured.url}/v1/config", timeout=10)
    assert r.status_code == 401


def test_expired_token_is_401_and_pyiceberg_refreshes(secured: RestServer) -> None:
    r = _token(secured, CREDENTIAL.split(":", 1)[1])
    assert r.status_code == 200
    token = r.json()["access_token"]
    assert r.json()["expires_in"] == int(TTL_S)
    headers = {"Authorization": f"Bearer {token}"}
    assert (
        requests.get(f"{secured.url}/v1/namespaces", headers=headers, timeout=10).status_code == 200
    )
    cat = RestCatalog(
        "secured",
        uri=secured.url,
        credential=CREDENTIAL,
        **{"oauth2-server-uri": f"{secured.url}/v1/oauth/tokens"},
    )
    cat.create_namespace("auth_ns")
    time.sleep(TTL_S + 0.5)
    r = requests.get(f"{secured.url}/v1/namespaces", headers=headers, timeout=10)
    assert r.status_code == 401
    # PyIceberg's token expired too: it gets a 401, fetches a new token and retries once.
    assert ("auth_ns",) in cat.list_namespaces()
    cat.create_namespace("after_refresh")
    assert cat.load_namespace_properties("after_refresh") == {}


def test_token_exchange_refreshes_a_valid_token(secured: RestServer) -> None:
    token = _token(secured, CREDENTIAL.split(":", 1)[1]).json()["access_token"]
    r = requests.post(
        f"{secured.url}/v1/oauth/tokens",
        data={
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        },
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert r.status_code == 200
    fresh = r.json()["access_token"]
    assert fresh != token
    ok = requests.get(
        f"{secured.url}/v1/namespaces", headers={"Authorization": f"Bearer {fresh}"}, timeout=10
    )
    assert ok.status_code == 200


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """A read-only server over a catalog that already holds one namespace and table."""
    warehouse = tmp_path_factory.mktemp("ro") / "warehouse"
    writer = start_server(warehouse)
    cat = RestCatalog("w", uri=writer.url)
    cat.create_namespace("ro")
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    cat.create_table("ro.t", Schema(NestedField(1, "id", LongType(), required=False)))
    stop_server(writer)
    server = start_server(warehouse, "--read-only")
    yield server
    stop_server(server)


def test_read_only_refuses_every_write(read_only: RestServer) -> None:
    cat = RestCatalog("ro", uri=read_only.url)
    assert cat.load_table("ro.t").schema().fields[0].name == "id"
    # PyIceberg reads the served endpoints and does not even send what is not listed
    with pytest.raises(NotImplementedError):
        cat.create_namespace("other")
    url = read_only.url
    for method, path in (
        ("POST", "/v1/namespaces"),
        ("POST", "/v1/namespaces/ro/tables"),
        ("POST", "/v1/namespaces/ro/tables/t"),
        ("POST", "/v1/namespaces/ro/register"),
        ("DELETE", "/v1/namespaces/ro/tables/t"),
        ("DELETE", "/v1/namespaces/ro"),
        ("POST", "/v1/tables/rename"),
        ("POST", "/v1/namespaces/ro/properties"),
    ):
        r = requests.request(method, url + path, json={}, timeout=10)
        assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException"
    config = requests.get(f"{url}/v1/config", timeout=10).json()
    assert "POST /v1/{prefix}/namespaces" not in config["endpoints"]
    assert [f.name for f in cat.load_table("ro.t").schema().fields] == ["id"]
