"""OAuth2 client credentials and ``--read-only`` on a real ``serve-rest`` process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog

from icecore.server.auth import (
    TOKEN_EXCHANGE,
    TOKEN_SECRET_ENV,
    OAuthError,
    TokenIssuer,
    token_secret,
)
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


class _Clock:
    """A settable wall clock for :class:`TokenIssuer` (seconds)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _exchange(issuer: TokenIssuer, token: str) -> dict[str, object]:
    return issuer.grant({"grant_type": TOKEN_EXCHANGE, "subject_token": token})


def _login(issuer: TokenIssuer, credential: str = CREDENTIAL) -> str:
    client_id, _, secret = credential.partition(":")
    granted = issuer.grant(
        {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    )
    return str(granted["access_token"])


def test_refreshing_again_and_again_ends_at_the_maximum_lifetime() -> None:
    clock = _Clock()
    ttl, max_lifetime = 10.0, 35.0
    issuer = TokenIssuer.from_credential(
        CREDENTIAL, ttl, max_lifetime_s=max_lifetime, signing_secret=b"x" * 32, clock=clock
    )
    first_issue = clock.now
    token = _login(issuer)
    for _ in range(1000):
        clock.now += ttl / 2  # a client refreshing well before each expiry
        if not issuer.valid(token):
            break
        try:
            token = str(_exchange(issuer, token)["access_token"])
        except OAuthError as refused:
            assert refused.error == "invalid_grant"
            assert "maximum lifetime" in refused.description
            break
    assert clock.now <= first_issue + max_lifetime + ttl / 2, "refresh never ends"
    clock.now = first_issue + max_lifetime
    assert not issuer.valid(token)
    with pytest.raises(OAuthError):
        _exchange(issuer, token)
    # The credential itself still logs in: a new chain starts.
    assert issuer.valid(_login(issuer))


def test_a_new_token_secret_revokes_every_token_and_the_credential_still_logs_in() -> None:
    clock = _Clock()
    old = TokenIssuer.from_credential(CREDENTIAL, signing_secret=b"a" * 32, clock=clock)
    token = _login(old)
    kept = TokenIssuer.from_credential(CREDENTIAL, signing_secret=b"a" * 32, clock=clock)
    assert kept.valid(token)  # a restart with the same secret keeps tokens
    rotated = TokenIssuer.from_credential(CREDENTIAL, signing_secret=b"b" * 32, clock=clock)
    assert not rotated.valid(token)
    with pytest.raises(OAuthError):
        _exchange(rotated, token)
    assert rotated.valid(_login(rotated))
    random_secret = TokenIssuer.from_credential(CREDENTIAL, clock=clock)
    assert not random_secret.valid(token)
    new_credential = TokenIssuer.from_credential(
        "reader:another-secret", signing_secret=b"a" * 32, clock=clock
    )
    assert not new_credential.valid(token)


def test_a_tampered_token_is_refused() -> None:
    clock = _Clock()
    issuer = TokenIssuer.from_credential(CREDENTIAL, 10.0, signing_secret=b"a" * 32, clock=clock)
    token = _login(issuer)
    prefix, origin, expiry, nonce, signature = token.split(".")
    later = str(int(expiry) + 10**9)
    for forged in (
        ".".join((prefix, origin, later, nonce, signature)),
        ".".join((prefix, origin, expiry, nonce, signature[:-2])),
        token + "x",
        "x" * 5000,
        "",
    ):
        assert not issuer.valid(forged)
    clock.now += 11
    assert not issuer.valid(token)


def test_restart_with_a_new_token_secret_revokes_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ICECORE_SERVE_CREDENTIAL", raising=False)
    secret_file = tmp_path / "token-secret"
    secret_file.write_text("first-" + "a" * 32, encoding="utf-8")
    warehouse = tmp_path / "wh"
    args = ("--credential", CREDENTIAL, "--token-secret-file", str(secret_file))

    def calls_with(server: RestServer, token: str) -> int:
        return requests.get(
            f"{server.url}/v1/namespaces", headers={"Authorization": f"Bearer {token}"}, timeout=10
        ).status_code

    server = start_server(warehouse, *args)
    try:
        token = _token(server, CREDENTIAL.split(":", 1)[1]).json()["access_token"]
        assert calls_with(server, token) == 200
    finally:
        stop_server(server)
    server = start_server(warehouse, *args)  # same secret: the token survives the restart
    try:
        assert calls_with(server, token) == 200
    finally:
        stop_server(server)
    secret_file.write_text("second-" + "b" * 32, encoding="utf-8")
    server = start_server(warehouse, *args)
    try:
        assert calls_with(server, token) == 401
        # The client's configuration (its credential) is unchanged and still works.
        cat = RestCatalog(
            "rotated",
            uri=server.url,
            credential=CREDENTIAL,
            **{"oauth2-server-uri": f"{server.url}/v1/oauth/tokens"},
        )
        cat.create_namespace("after_rotation")
        assert ("after_rotation",) in cat.list_namespaces()
    finally:
        stop_server(server)


def test_a_short_or_unreadable_token_secret_is_one_sentence(tmp_path: Path) -> None:
    assert token_secret(None, {}) is None
    assert token_secret(None, {TOKEN_SECRET_ENV: "k" * 32}) == b"k" * 32
    with pytest.raises(ValueError, match=f"^{TOKEN_SECRET_ENV} must hold at least") as short:
        token_secret(None, {TOKEN_SECRET_ENV: "hunter2"})
    assert "hunter2" not in str(short.value)
    with pytest.raises(ValueError, match="^Cannot read the token secret file"):
        token_secret(str(tmp_path / "missing"), {})
