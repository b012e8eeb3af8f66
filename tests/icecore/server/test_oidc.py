"""Bearer JWTs against a real OpenID Connect provider (icecore.server.oidc).

The provider is django-oauth-toolkit (tests/oidc_provider): real tokens come from it; forged
ones are signed with its own private key (which the fixture holds) or with keys it never
published. Expected principals come from the provider's userinfo and the fixture's users,
never from the verifier.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from typing import Any

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from icecore.access import AuthConfig
from icecore.server.oidc import InvalidToken, IssuerUnavailable, JwtVerifier
from tests.oidc_provider.fixture import USERS, OidcProvider

JWKS_PATH = "/.well-known/jwks.json"


class Clock:
    """The wall clock, moved forward by tests instead of waiting."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def verifier(oidc_provider: OidcProvider, clock: Clock) -> JwtVerifier:
    auth = AuthConfig(issuer=oidc_provider.issuer, client_id="icecore", audience="icecore")
    return JwtVerifier(auth, clock=clock)


def _provider_key(provider: OidcProvider) -> RSAKey:
    return RSAKey.import_key(provider.private_key_pem)


def _claims(provider: OidcProvider, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": provider.issuer,
        "aud": "icecore",
        "sub": "forged-1",
        "name": "Forged",
        "groups": ["admins"],
        "iat": now,
        "exp": now + 600,
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def _sign(claims: dict[str, Any], key: Any, kid: str, alg: str = "RS256") -> str:
    return jwt.encode({"alg": alg, "kid": kid}, claims, key, algorithms=[alg])


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _refused(verifier: JwtVerifier, token: str, match: str) -> str:
    with pytest.raises(InvalidToken, match=match) as caught:
        verifier.verify(token)
    message = str(caught.value)
    assert message.count(".") <= 2 and message.endswith((".", ")."))  # one sentence
    for part in token.split("."):
        assert len(part) < 8 or part not in message, "a refusal must never hold the token"
    return message


def _wait_for_requests(provider: OidcProvider, path: str, count: int) -> int:
    """The provider's request count for ``path`` once it reaches ``count``, or after 10 s.

    The provider logs a request just after answering it, so the count is polled for.
    """
    deadline = time.monotonic() + 10
    seen = provider.requests_to(path)
    while seen < count and time.monotonic() < deadline:
        time.sleep(0.02)
        seen = provider.requests_to(path)
    return seen


@pytest.mark.parametrize("user", sorted(USERS))
def test_a_real_id_token_verifies_as_its_user(
    oidc_provider: OidcProvider, verifier: JwtVerifier, user: str
) -> None:
    tokens = oidc_provider.tokens(user)
    userinfo = requests.get(
        oidc_provider.discovery()["userinfo_endpoint"],
        headers={"Authorization": f"Bearer {tokens['access_token']}"},
        timeout=30,
    ).json()
    principal = verifier.verify(tokens["id_token"])
    assert principal.subject == userinfo["sub"]
    assert principal.name == USERS[user].name
    assert principal.groups == (USERS[user].group,)
    assert principal.source == "oidc"
    assert principal.expires_at is not None
    assert time.time() < principal.expires_at <= time.time() + tokens["expires_in"] + 5


def test_a_token_signed_with_the_providers_key_verifies(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    # The baseline of every forgery below: only the changed part makes them fail.
    token = _sign(_claims(oidc_provider), _provider_key(oidc_provider), oidc_provider.kid)
    assert verifier.verify(token).groups == ("admins",)


def test_a_changed_payload_is_refused(oidc_provider: OidcProvider, verifier: JwtVerifier) -> None:
    header, payload, signature = oidc_provider.tokens("vic")["id_token"].split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["groups"] = ["sales-owners"]
    _refused(verifier, f"{header}.{_b64(claims)}.{signature}", "signature does not verify")


def test_another_key_with_the_providers_kid_is_refused(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    impostor = RSAKey.generate_key(2048)
    token = _sign(_claims(oidc_provider), impostor, oidc_provider.kid)
    _refused(verifier, token, "signature does not verify")


def test_an_expired_token_is_refused_beyond_the_leeway(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    key = _provider_key(oidc_provider)
    now = int(time.time())
    expired = _sign(_claims(oidc_provider, iat=now - 7200, exp=now - 3600), key, oidc_provider.kid)
    _refused(verifier, expired, "expired")
    # Within the leeway (60 s) a clock difference is forgiven.
    just = _sign(_claims(oidc_provider, exp=now - 20), key, oidc_provider.kid)
    assert verifier.verify(just).subject == "forged-1"


def test_a_real_token_expires_when_the_clock_passes_it(
    oidc_provider: OidcProvider, verifier: JwtVerifier, clock: Clock
) -> None:
    tokens = oidc_provider.tokens("ana")
    verifier.verify(tokens["id_token"])
    clock.offset = tokens["expires_in"] + 120
    _refused(verifier, tokens["id_token"], "expired")


def test_a_token_of_another_audience_is_refused(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    _refused(verifier, oidc_provider.tokens("ana", client="other")["id_token"], "not meant")


def test_an_audience_list_holding_ours_is_accepted(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    key = _provider_key(oidc_provider)
    token = _sign(_claims(oidc_provider, aud=["other", "icecore"]), key, oidc_provider.kid)
    assert verifier.verify(token).subject == "forged-1"
    without = _sign(_claims(oidc_provider, aud=["other"]), key, oidc_provider.kid)
    _refused(verifier, without, "not meant")


def test_another_issuer_is_refused(oidc_provider: OidcProvider, verifier: JwtVerifier) -> None:
    key = _provider_key(oidc_provider)
    for iss in ("http://127.0.0.1:1", oidc_provider.issuer + "/x", None):
        token = _sign(_claims(oidc_provider, iss=iss), key, oidc_provider.kid)
        _refused(verifier, token, "not issued by")


def test_a_future_nbf_is_refused_beyond_the_leeway(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    key = _provider_key(oidc_provider)
    now = int(time.time())
    _refused(
        verifier,
        _sign(_claims(oidc_provider, nbf=now + 600), key, oidc_provider.kid),
        "not valid yet",
    )
    soon = _sign(_claims(oidc_provider, nbf=now + 20), key, oidc_provider.kid)
    assert verifier.verify(soon).subject == "forged-1"


def test_missing_exp_or_sub_is_refused(oidc_provider: OidcProvider, verifier: JwtVerifier) -> None:
    key = _provider_key(oidc_provider)
    _refused(verifier, _sign(_claims(oidc_provider, exp=None), key, oidc_provider.kid), "expiry")
    _refused(verifier, _sign(_claims(oidc_provider, exp="soon"), key, oidc_provider.kid), "exp")
    _refused(verifier, _sign(_claims(oidc_provider, sub=None), key, oidc_provider.kid), "subject")


def test_alg_none_is_refused(oidc_provider: OidcProvider, verifier: JwtVerifier) -> None:
    header = _b64({"alg": "none", "kid": oidc_provider.kid, "typ": "JWT"})
    payload = _b64(_claims(oidc_provider))
    _refused(verifier, f"{header}.{payload}.", "not a signed JWT")
    _refused(verifier, f"{header}.{payload}.c2lnbmF0dXJl", "algorithm")


def test_hs256_keyed_with_the_public_key_is_refused(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    # The classic confusion: HMAC keyed with the RSA public key a verifier holds (signed with
    # the standard library: joserfc itself refuses to use a public key as an HMAC secret).
    public_jwk = oidc_provider.jwks()["keys"][0]
    for secret in (
        RSAKey.import_key(public_jwk).as_pem(private=False),
        json.dumps(public_jwk).encode(),
    ):
        signing_input = (
            _b64({"alg": "HS256", "kid": oidc_provider.kid, "typ": "JWT"})
            + "."
            + _b64(_claims(oidc_provider))
        )
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        signature = base64.urlsafe_b64encode(mac).decode().rstrip("=")
        _refused(verifier, f"{signing_input}.{signature}", "algorithm")


def test_an_ec_token_against_an_rsa_key_is_refused(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    ec = ECKey.generate_key("P-256")
    token = _sign(_claims(oidc_provider), ec, oidc_provider.kid, alg="ES256")
    _refused(verifier, token, "does not match its key")


@pytest.mark.parametrize(
    "token",
    ["", "abc", "a.b", "a.b.c", "a.b.c.d.e", "!!!.e30.e30", "e30.e30.e30", "W10.e30.e30"],
)
def test_malformed_tokens_are_refused(verifier: JwtVerifier, token: str) -> None:
    with pytest.raises(InvalidToken):
        verifier.verify(token)


def test_an_oversized_token_is_refused_before_parsing(verifier: JwtVerifier) -> None:
    with pytest.raises(InvalidToken, match="too long"):
        verifier.verify("e" * 40_000 + ".e30.e30")
    assert verifier.fetches == 0


def test_an_unknown_kid_refetches_once_and_a_flood_cannot_refetch_more(
    oidc_provider: OidcProvider, verifier: JwtVerifier, clock: Clock
) -> None:
    verifier.verify(oidc_provider.tokens("ana")["id_token"])  # the first fetch
    before = _wait_for_requests(oidc_provider, JWKS_PATH, 1)
    assert verifier.fetches == 1

    rotated = RSAKey.generate_key(2048)
    token = _sign(_claims(oidc_provider), rotated, "rotated-key-1")
    clock.offset = 31  # past the refetch interval (30 s)
    _refused(verifier, token, "does not publish")
    assert verifier.fetches == 2
    assert _wait_for_requests(oidc_provider, JWKS_PATH, before + 1) == before + 1

    for i in range(50):  # made-up key ids, all within the interval
        _refused(verifier, _sign(_claims(oidc_provider), rotated, f"flood-{i}"), "does not")
    assert verifier.fetches == 2
    # A real token still verifies from the cache meanwhile.
    assert verifier.verify(oidc_provider.tokens("owen")["id_token"]).groups == ("sales-owners",)

    clock.offset = 62  # the next interval: one more refetch
    _refused(verifier, token, "does not publish")
    assert verifier.fetches == 3
    assert _wait_for_requests(oidc_provider, JWKS_PATH, before + 2) == before + 2


def test_concurrent_first_requests_share_one_fetch(
    oidc_provider: OidcProvider, verifier: JwtVerifier
) -> None:
    tokens = [oidc_provider.tokens(user)["id_token"] for user in sorted(USERS)] * 4
    seen: list[str] = []
    errors: list[BaseException] = []

    def work(token: str) -> None:
        try:
            seen.append(verifier.verify(token).name)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert sorted(seen) == sorted(USERS[u].name for u in USERS for _ in range(4))
    assert verifier.fetches == 1


def test_stale_keys_are_fetched_again(
    oidc_provider: OidcProvider, verifier: JwtVerifier, clock: Clock
) -> None:
    token = oidc_provider.tokens("vic")["id_token"]
    verifier.verify(token)
    clock.offset = verifier.max_age + 1
    verifier.verify(token)
    assert verifier.fetches == 2


def test_an_unreachable_issuer_is_unavailable_and_not_hammered(
    oidc_provider: OidcProvider, clock: Clock
) -> None:
    from tests.conftest import _free_port

    down = AuthConfig(issuer=f"http://127.0.0.1:{_free_port()}", client_id="icecore")
    verifier = JwtVerifier(down, timeout=2, clock=clock)
    token = oidc_provider.tokens("ana")["id_token"]
    with pytest.raises(IssuerUnavailable, match="Cannot fetch"):
        verifier.verify(token)
    with pytest.raises(IssuerUnavailable, match="a moment ago"):
        verifier.verify(token)
    assert verifier.fetches == 1


def test_a_discovery_document_of_another_issuer_is_not_trusted(
    oidc_provider: OidcProvider,
) -> None:
    # Same server, but configured with localhost: its discovery names 127.0.0.1.
    elsewhere = oidc_provider.issuer.replace("127.0.0.1", "localhost")
    verifier = JwtVerifier(AuthConfig(issuer=elsewhere, client_id="icecore"))
    with pytest.raises(IssuerUnavailable, match="another issuer"):
        verifier.verify(oidc_provider.tokens("ana")["id_token"])
