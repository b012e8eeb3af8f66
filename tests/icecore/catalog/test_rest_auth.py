"""REST client auth and secrets, against the reference server with its OAuth2 endpoint on.

The reference server (tests/rest/RestReference.java, ``--credential``) issues random tokens
for ``client_credentials`` and refuses every other call without one (401); Iceberg Java's
``CatalogHandlers`` serve the catalog behind it. Its token endpoint is the test program's
own, minimal code (Iceberg Java ships no OAuth2 server): documented there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

import icecore
from icecore.catalog.rest import RestCatalog, scrub
from icecore.errors import CatalogUnavailable, IcecoreError, ValidationError
from tests.icecore.catalog.rest_reference import ReferenceServer, start_reference

CLIENT_ID = "analyst"
SECRET = "s3cr3t-Zq9"
TTL_S = 3


@pytest.fixture(scope="module")
def authed(
    reference_classes: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReferenceServer]:
    server = start_reference(
        reference_classes,
        tmp_path_factory.mktemp("rest-auth"),
        "--credential",
        f"{CLIENT_ID}:{SECRET}",
        "--token-ttl",
        str(TTL_S),
    )
    try:
        token = _token(server)
        created = requests.post(
            f"{server.url}/v1/ref/namespaces",
            json={"namespace": ["secured"]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert created.status_code == 200, created.text
        yield server
    finally:
        server.stop()


def _token(server: ReferenceServer) -> str:
    response = requests.post(
        f"{server.url}/v1/oauth/tokens",
        data={"grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": SECRET},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def _no_secret(text: str) -> None:
    assert SECRET not in text
    assert f"{CLIENT_ID}:{SECRET}" not in text


def test_client_credentials_from_the_environment(
    authed: ReferenceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_REST_CREDENTIAL", f"{CLIENT_ID}:{SECRET}")
    catalog = icecore.load_catalog(authed.url)
    assert isinstance(catalog, RestCatalog)
    assert catalog.list_namespaces() == [("secured",)]
    _no_secret(repr(catalog))
    _no_secret(catalog.uri)
    assert catalog.uri == authed.url


def test_missing_token_is_one_sentence(
    authed: ReferenceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ICECORE_REST_CREDENTIAL", raising=False)
    monkeypatch.delenv("ICECORE_REST_TOKEN", raising=False)
    with pytest.raises(CatalogUnavailable) as caught:
        icecore.load_catalog(authed.url)
    message = str(caught.value)
    assert "NotAuthorizedException" in message and "ICECORE_REST_CREDENTIAL" in message
    assert "\n" not in message and message.endswith(".")


def test_wrong_secret_is_one_sentence_without_the_secret(
    authed: ReferenceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "wrong-Secret-77"
    monkeypatch.setenv("ICECORE_REST_CREDENTIAL", f"{CLIENT_ID}:{wrong}")
    with pytest.raises(CatalogUnavailable) as caught:
        icecore.load_catalog(authed.url)
    message = str(caught.value)
    assert "invalid_client" in message and "ICECORE_REST_CREDENTIAL" in message
    assert wrong not in message and "\n" not in message


def test_bearer_token_from_the_environment(
    authed: ReferenceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = _token(authed)
    monkeypatch.delenv("ICECORE_REST_CREDENTIAL", raising=False)
    monkeypatch.setenv("ICECORE_REST_TOKEN", token)
    catalog = icecore.load_catalog(authed.url)
    assert catalog.list_namespaces() == [("secured",)]
    assert token not in repr(catalog) and token not in catalog.uri


def test_token_refreshed_before_expiry_and_on_a_401(
    authed: ReferenceServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_REST_CREDENTIAL", f"{CLIENT_ID}:{SECRET}")
    catalog = icecore.load_catalog(authed.url)
    assert isinstance(catalog, RestCatalog)
    first = catalog._token
    time.sleep(TTL_S + 0.5)  # the server now refuses the first token
    assert catalog.list_namespaces() == [("secured",)]
    assert catalog._token != first
    # A token the server forgot (restarted, revoked) before its expiry: one 401, one refresh.
    catalog._token = "revoked"
    catalog._token_expires = time.monotonic() + 3600
    assert catalog.list_namespaces() == [("secured",)]
    assert catalog._token != "revoked"


def test_named_catalog_takes_the_secret_from_the_variable_it_names(
    authed: ReferenceServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "icecore.toml"
    config.write_text(
        f'[catalogs.secure]\ntype = "rest"\nuri = "{authed.url}"\n'
        'credential-env = "SECURE_REST_CREDENTIAL"\nscope = "catalog"\n'
    )
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.delenv("ICECORE_REST_CREDENTIAL", raising=False)
    monkeypatch.delenv("SECURE_REST_CREDENTIAL", raising=False)
    with pytest.raises(ValidationError, match="SECURE_REST_CREDENTIAL .*is not set"):
        icecore.load_catalog("secure")
    monkeypatch.setenv("SECURE_REST_CREDENTIAL", f"{CLIENT_ID}:{SECRET}")
    catalog = icecore.load_catalog("secure")
    assert catalog.uri == "secure" and repr(catalog) == "RestCatalog('secure')"
    assert catalog.list_namespaces() == [("secured",)]
    with pytest.raises(IcecoreError) as caught:
        catalog.load_table("secured.nothing")
    assert "NoSuchTableException" in str(caught.value)
    _no_secret(str(caught.value))


def test_uri_with_credentials_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError) as caught:
        icecore.load_catalog(f"http://{CLIENT_ID}:{SECRET}@127.0.0.1:9/")
    _no_secret(str(caught.value))
    assert "must not hold credentials" in str(caught.value)
    with pytest.raises(ValidationError, match="no query string"):
        icecore.load_catalog(f"http://127.0.0.1:9/?token={SECRET}")


def test_unreachable_server_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ICECORE_REST_CREDENTIAL", raising=False)
    monkeypatch.delenv("ICECORE_REST_TOKEN", raising=False)
    with pytest.raises(
        CatalogUnavailable, match="Cannot reach the REST catalog http://127.0.0.1:9"
    ):
        icecore.load_catalog("http://127.0.0.1:9")


def test_vended_storage_properties_reach_that_tables_fileio_only(
    reference_classes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loadTable ``config`` (what a catalog vends per table) goes to that table's FileIO."""
    vended = {"s3.access-key-id": "VENDED-KEY", "s3.secret-access-key": "VENDED-SECRET"}
    options = [x for k, v in vended.items() for x in ("--table-config", f"{k}={v}")]
    server = start_reference(reference_classes, tmp_path / "vending", *options)
    try:
        ns = requests.post(f"{server.url}/v1/ref/namespaces", json={"namespace": ["v"]}, timeout=30)
        assert ns.status_code == 200, ns.text
        schema = {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "id", "type": "int", "required": False}],
        }
        created = requests.post(
            f"{server.url}/v1/ref/namespaces/v/tables",
            json={"name": "t", "schema": schema},
            timeout=30,
        )
        assert created.status_code == 200, created.text
        monkeypatch.delenv("ICECORE_REST_CREDENTIAL", raising=False)
        monkeypatch.delenv("ICECORE_REST_TOKEN", raising=False)
        catalog = icecore.load_catalog(server.url)
        table = catalog.load_table("v.t")
        for key, value in vended.items():
            assert table.io.properties[key] == value
            assert key not in catalog.io.properties  # type: ignore[attr-defined]
        assert "VENDED-SECRET" not in repr(catalog) and "VENDED-SECRET" not in catalog.uri
        assert "VENDED-SECRET" not in repr(table)  # a Table's repr shows its FileIO
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("text", "secrets", "expected"),
    [
        # A one-character secret is hidden where it stands alone, not inside words.
        ("variable b is set; token=b", ["a:b", "b"], "variable <hidden> is set; token=<hidden>"),
        ("client a:b refused", ["a:b", "b"], "client <hidden> refused"),
        # A long secret is hidden wherever it appears, even glued to other text.
        ("x" + SECRET + "y", [SECRET], "x<hidden>y"),
        # The longer secret first: the credential, not only its secret part.
        (f"{CLIENT_ID}:{SECRET}", [f"{CLIENT_ID}:{SECRET}", SECRET], "<hidden>"),
    ],
)
def test_scrub_hides_secrets_without_garbling_words(
    text: str, secrets: list[str], expected: str
) -> None:
    assert scrub(text, secrets) == expected
