"""The test OpenID Connect provider does what the sign-in and bearer-token tests rely on.

A real django-oauth-toolkit provider (tests/oidc_provider): its discovery document names the
fixture's issuer, its ID tokens are RS256 JWTs that verify against its JWKS and carry each
user's group, the fixture's private key is the provider's signing key (so tests can forge
tokens the provider's JWKS accepts), and the app's authorization code flow with PKCE S256
works through Django's login form for a redirect URI registered at run time.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
import urllib.parse

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from tests.oidc_provider.fixture import USERS, OidcProvider


def _verify(provider: OidcProvider, token: str) -> jwt.Token:
    keys = KeySet.import_key_set(provider.jwks())  # type: ignore[arg-type]
    return jwt.decode(token, keys, algorithms=["RS256"])


def test_discovery_names_the_fixture_issuer_and_only_s256(oidc_provider: OidcProvider) -> None:
    discovery = oidc_provider.discovery()
    assert discovery["issuer"] == oidc_provider.issuer
    assert discovery["issuer"].startswith("http://127.0.0.1:")
    assert discovery["code_challenge_methods_supported"] == ["S256"]


@pytest.mark.parametrize("user", sorted(USERS))
def test_each_users_id_token_verifies_and_carries_their_group(
    oidc_provider: OidcProvider, user: str
) -> None:
    tokens = oidc_provider.tokens(user)
    token = _verify(oidc_provider, tokens["id_token"])
    assert token.header["alg"] == "RS256"
    assert token.header["kid"] == oidc_provider.kid
    claims = token.claims
    assert claims["iss"] == oidc_provider.issuer
    assert claims["aud"] == "icecore"
    assert claims["groups"] == [USERS[user].group]
    assert claims["preferred_username"] == user
    assert claims["name"] == USERS[user].name
    assert claims["email"] == USERS[user].email
    assert claims["exp"] > time.time()


def test_userinfo_carries_the_group_too(oidc_provider: OidcProvider) -> None:
    access = oidc_provider.tokens("owen")["access_token"]
    response = requests.get(
        oidc_provider.discovery()["userinfo_endpoint"],
        headers={"Authorization": f"Bearer {access}"},
        timeout=30,
    )
    response.raise_for_status()
    assert response.json()["groups"] == ["sales-owners"]


def test_the_other_client_gives_another_audience(oidc_provider: OidcProvider) -> None:
    claims = _verify(oidc_provider, oidc_provider.tokens("ana", "other")["id_token"]).claims
    assert claims["aud"] == "other"
    assert claims["groups"] == ["analysts"]


def test_a_wrong_client_secret_gets_no_token(oidc_provider: OidcProvider) -> None:
    real = dict(oidc_provider.client_secrets)
    forged = OidcProvider(
        **{**oidc_provider.__dict__, "client_secrets": {**real, "icecore": "not-the-secret"}}
    )
    with pytest.raises(Exception, match="401"):
        forged.tokens("ana")


def test_the_fixtures_private_key_is_the_providers_signing_key(
    oidc_provider: OidcProvider,
) -> None:
    key = RSAKey.import_key(oidc_provider.private_key_pem)
    claims = {"iss": oidc_provider.issuer, "sub": "forged", "aud": "icecore"}
    token = jwt.encode({"alg": "RS256", "kid": oidc_provider.kid}, claims, key)
    assert _verify(oidc_provider, token).claims["sub"] == "forged"


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _sign_in(session: requests.Session, authorize_url: str, user: str) -> requests.Response:
    """Follow the authorization request to Django's login form, submit it, stop at the app."""
    form = session.get(authorize_url, timeout=30)
    assert form.status_code == 200 and 'name="password"' in form.text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert csrf is not None
    next_url = re.search(r'name="next" value="([^"]+)"', form.text)
    assert next_url is not None
    signed_in = session.post(
        form.url,
        data={
            "csrfmiddlewaretoken": csrf.group(1),
            "username": user,
            "password": USERS[user].password,
            "next": next_url.group(1).replace("&amp;", "&"),
        },
        headers={"Referer": form.url},
        allow_redirects=False,
        timeout=30,
    )
    assert signed_in.status_code == 302, signed_in.text
    # Back to the authorization endpoint, which redirects to the app (not followed).
    return session.get(
        urllib.parse.urljoin(form.url, signed_in.headers["Location"]),
        allow_redirects=False,
        timeout=30,
    )


def test_authorization_code_with_pkce_through_the_login_form(oidc_provider: OidcProvider) -> None:
    callback = f"http://127.0.0.1:{secrets.randbelow(20000) + 30000}/oauth2callback"
    oidc_provider.add_redirect_uri(callback)
    assert callback in oidc_provider.redirect_uris()
    discovery = oidc_provider.discovery()
    verifier, challenge = _pkce()
    query = {
        "response_type": "code",
        "client_id": "icecore",
        "redirect_uri": callback,
        "scope": "openid profile email",
        "state": "st-1",
        "nonce": "n-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    session = requests.Session()
    back = _sign_in(
        session, discovery["authorization_endpoint"] + "?" + urllib.parse.urlencode(query), "vic"
    )
    assert back.status_code == 302
    location = back.headers["Location"]
    assert location.startswith(callback + "?")
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
    assert params["state"] == ["st-1"]
    exchange = requests.post(
        discovery["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": params["code"][0],
            "redirect_uri": callback,
            "code_verifier": verifier,
        },
        auth=("icecore", oidc_provider.client_secret),
        timeout=30,
    )
    exchange.raise_for_status()
    claims = _verify(oidc_provider, exchange.json()["id_token"]).claims
    assert claims["groups"] == ["viewers"]
    assert claims["nonce"] == "n-1"

    # The same session, without PKCE: refused (PKCE is required), sent back with an error.
    without = {k: v for k, v in query.items() if not k.startswith("code_challenge")}
    refused = session.get(
        discovery["authorization_endpoint"] + "?" + urllib.parse.urlencode(without),
        allow_redirects=False,
        timeout=30,
    )
    assert "code=" not in refused.headers.get("Location", "")
    assert "error=invalid_request" in refused.headers.get("Location", "")


def test_an_unregistered_redirect_uri_is_refused(oidc_provider: OidcProvider) -> None:
    _, challenge = _pkce()
    query = {
        "response_type": "code",
        "client_id": "icecore",
        "redirect_uri": "http://127.0.0.1:1/elsewhere",
        "scope": "openid",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    session = requests.Session()
    back = _sign_in(
        session,
        oidc_provider.discovery()["authorization_endpoint"] + "?" + urllib.parse.urlencode(query),
        "ana",
    )
    assert "127.0.0.1:1" not in back.headers.get("Location", "")
    with pytest.raises(ValueError):
        oidc_provider.add_redirect_uri("http://127.0.0.1:*/oauth2callback")
