"""Bearer JWTs from the deployment's OpenID Connect issuer (DESIGN.md "Identity, roles and audit").

The REST server takes the same ``[auth]`` as the app: a bearer JWT signed by ``issuer``
(checked against the issuer's JWKS, ``iss``, ``aud``, ``exp``, ``nbf``) is a principal whose
groups the grants match. :class:`JwtVerifier` is that check:

- The token is a JWS compact serialization (RFC 7515 section 7.1) of at most
  :data:`MAX_TOKEN_CHARS`; its ``alg`` must be one of :data:`ALGORITHMS`, asymmetric only
  (RFC 8725 section 3.1: never ``none``, never an HMAC whose key a verifier could be fooled
  into taking from a public key); a ``crit`` header is refused (we understand no extension).
- The key is the JWKS entry its ``kid`` names, of the algorithm's key type (``RSA``, ``EC``,
  ``OKP``; never a symmetric ``oct`` key), for signing. The issuer's discovery document
  (OpenID Connect Discovery 1.0 section 4) gives the ``jwks_uri``; both are fetched with the
  standard library, bounded in size and time, and cached. An unknown ``kid`` makes ONE
  refetch of the JWKS (a rotated key), at most once every ``refetch_interval`` seconds, so a
  flood of tokens with made-up key ids cannot make the server hammer the issuer. The cached
  keys are also refreshed when older than ``max_age``.
- The claims (RFC 7519 section 4.1; OpenID Connect Core 1.0 section 3.1.3.7): ``iss`` equals
  the issuer as its discovery document spells it, ``aud`` (a string or a list) contains
  :attr:`icecore.access.AuthConfig.required_audience`, ``exp`` is required and in the future,
  ``nbf`` (when present) is not in the future, and ``sub`` is present; clocks may differ by
  ``leeway`` seconds (60 by default) either way.

Every refusal is an :class:`InvalidToken` of one sentence that never holds the token (the
server answers it with 401). An issuer that cannot be reached when there are no keys yet is an
:class:`IssuerUnavailable` (a 503: the token may be good). Thread-safe: one verifier serves
every request.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey, RSAKey

from icecore.access import AuthConfig, Principal, principal_from_claims
from icecore.errors import IcecoreError

ALGORITHMS: Mapping[str, str] = {
    "RS256": "RSA",
    "RS384": "RSA",
    "RS512": "RSA",
    "PS256": "RSA",
    "PS384": "RSA",
    "PS512": "RSA",
    "ES256": "EC",
    "ES384": "EC",
    "ES512": "EC",
    "Ed25519": "OKP",
}
"""The signature algorithms accepted (an allow-list), and the JWK key type each needs."""

_KEY_TYPES: Mapping[str, type[RSAKey] | type[ECKey] | type[OKPKey]] = {
    "RSA": RSAKey,
    "EC": ECKey,
    "OKP": OKPKey,
}

MAX_TOKEN_CHARS = 32_768
"""Longer bearer values are refused before any parsing (Entra ID tokens with many groups run
to about 8 KiB)."""
MAX_DOCUMENT_BYTES = 512 * 1024
"""The most a discovery document or a JWKS may weigh."""
MAX_KEYS = 100
"""The most keys a JWKS may hold."""
MAX_KID_CHARS = 256
DEFAULT_LEEWAY_S = 60.0
DEFAULT_REFETCH_INTERVAL_S = 30.0
DEFAULT_MAX_AGE_S = 3600.0


class InvalidToken(IcecoreError):
    """A bearer JWT is refused: malformed, badly signed, or its claims do not hold (401)."""


class IssuerUnavailable(IcecoreError):
    """The issuer's discovery document or JWKS cannot be fetched, and no keys are cached (503)."""


@dataclass(frozen=True, slots=True)
class _Keys:
    """One fetch of the issuer's metadata and keys."""

    issuer: str
    jwks_uri: str
    keys: Mapping[str, RSAKey | ECKey | OKPKey]
    fetched_at: float


class JwtVerifier:
    """Verifies bearer JWTs of ``auth.issuer`` and turns them into principals.

    Args:
        auth: the deployment's ``[auth]``.
        timeout: seconds for each fetch of the discovery document or the JWKS.
        leeway: seconds of clock difference allowed on ``exp`` and ``nbf``.
        refetch_interval: the least time between two JWKS fetches caused by unknown ``kid``s.
        max_age: keys older than this are fetched again before they are used.
        clock: the current time in seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        auth: AuthConfig,
        *,
        timeout: float = 5.0,
        leeway: float = DEFAULT_LEEWAY_S,
        refetch_interval: float = DEFAULT_REFETCH_INTERVAL_S,
        max_age: float = DEFAULT_MAX_AGE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.auth = auth
        self.timeout = timeout
        self.leeway = leeway
        self.refetch_interval = refetch_interval
        self.max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: _Keys | None = None
        self._last_fetch = float("-inf")
        self._registry = jws.JWSRegistry(algorithms=list(ALGORITHMS), strict_check_header=False)
        self.fetches = 0
        """How many times the issuer's keys were fetched (for metrics and tests)."""

    def verify(self, token: str) -> Principal:
        """The principal ``token`` names, once its signature and claims hold.

        Raises:
            InvalidToken: one sentence saying what is wrong (never the token).
            IssuerUnavailable: the issuer cannot be reached and no keys are cached.
        """
        header = _header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise InvalidToken(
                "The bearer token is not signed with an algorithm this server accepts "
                f"({', '.join(ALGORITHMS)})."
            )
        if "crit" in header:
            raise InvalidToken("The bearer token has critical header extensions; none is known.")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid or len(kid) > MAX_KID_CHARS:
            raise InvalidToken("The bearer token names no key (kid) to check its signature with.")
        keys, key = self._key(kid)
        if key is None:
            raise InvalidToken("The bearer token is signed by a key the issuer does not publish.")
        if _KEY_TYPES[ALGORITHMS[alg]] is not type(key):
            raise InvalidToken("The bearer token's algorithm does not match its key's type.")
        key_alg = key.get("alg")
        if key_alg is not None and key_alg != alg:
            raise InvalidToken("The bearer token's algorithm is not the one its key is for.")
        try:
            signed = jws.deserialize_compact(token, key, algorithms=[alg], registry=self._registry)
        except (JoseError, ValueError, TypeError):
            raise InvalidToken("The bearer token's signature does not verify.") from None
        claims = _json_object(signed.payload)
        if claims is None:
            raise InvalidToken("The bearer token's claims are not a JSON object.")
        self._check_claims(claims, keys.issuer)
        return principal_from_claims(claims, self.auth.groups_claim, source="oidc")

    def _check_claims(self, claims: Mapping[str, Any], issuer: str) -> None:
        """``iss``, ``aud``, ``exp``, ``nbf`` and ``sub`` (RFC 7519 section 4.1)."""
        if claims.get("iss") != issuer:
            raise InvalidToken("The bearer token was not issued by this deployment's issuer.")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.auth.required_audience not in audiences:
            raise InvalidToken(
                f"The bearer token is not meant for this server (its aud lacks "
                f"{self.auth.required_audience!r})."
            )
        now = self._clock()
        exp = _seconds(claims.get("exp"))
        if exp is None:
            raise InvalidToken("The bearer token has no expiry (exp) in seconds.")
        if now > exp + self.leeway:
            raise InvalidToken("The bearer token has expired.")
        if "nbf" in claims:
            nbf = _seconds(claims["nbf"])
            if nbf is None or nbf > now + self.leeway:
                raise InvalidToken("The bearer token is not valid yet (nbf is in the future).")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise InvalidToken("The bearer token names no subject (sub).")

    def _key(self, kid: str) -> tuple[_Keys, RSAKey | ECKey | OKPKey | None]:
        """The cached keys and the one ``kid`` names, fetching when they are missing or stale.

        Fetches (the first, a stale set's, an unknown ``kid``'s) happen at most once every
        ``refetch_interval`` seconds, whatever the tokens say: a flood of made-up key ids, or
        an issuer that is down, costs one fetch per interval. The lock makes concurrent
        requests share a fetch (they wait for it, at most twice ``timeout``).
        """
        with self._lock:
            now = self._clock()
            may_fetch = now - self._last_fetch >= self.refetch_interval
            keys = self._keys
            if keys is None:
                if not may_fetch:
                    raise IssuerUnavailable(
                        f"The issuer's keys could not be fetched from {self.auth.discovery_url} "
                        "a moment ago; try again shortly."
                    )
                keys, may_fetch = self._refresh(None, now), False
            elif may_fetch and now - keys.fetched_at >= self.max_age:
                keys, may_fetch = self._refresh(keys, now), False
            key = keys.keys.get(kid)
            if key is None and may_fetch:
                keys = self._refresh(keys, now)
                key = keys.keys.get(kid)
            return keys, key

    def _refresh(self, cached: _Keys | None, now: float) -> _Keys:
        """Fetch discovery and the JWKS; keep ``cached`` when the issuer cannot be reached."""
        self._last_fetch = now
        try:
            fresh = self._fetch(now)
        except IssuerUnavailable:
            if cached is None:
                raise
            return cached
        self._keys = fresh
        return fresh

    def _fetch(self, now: float) -> _Keys:
        self.fetches += 1
        discovery = _get_json(self.auth.discovery_url, self.timeout, "discovery document")
        issuer = discovery.get("issuer")
        # OpenID Connect Discovery 1.0 section 4.3: the document's issuer is the issuer asked.
        if not isinstance(issuer, str) or issuer.rstrip("/") != self.auth.issuer.rstrip("/"):
            raise IssuerUnavailable(
                f"The discovery document at {self.auth.discovery_url} names another issuer."
            )
        jwks_uri = discovery.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not _allowed_url(jwks_uri, self.auth.issuer):
            raise IssuerUnavailable(
                f"The discovery document at {self.auth.discovery_url} has no usable jwks_uri."
            )
        jwks = _get_json(jwks_uri, self.timeout, "JWKS")
        entries = jwks.get("keys")
        if not isinstance(entries, list) or len(entries) > MAX_KEYS:
            raise IssuerUnavailable(f"The issuer's JWKS at {jwks_uri} holds no list of keys.")
        return _Keys(issuer=issuer, jwks_uri=jwks_uri, keys=_signing_keys(entries), fetched_at=now)


def _signing_keys(entries: list[object]) -> dict[str, RSAKey | ECKey | OKPKey]:
    """The JWKS entries usable to verify: asymmetric, for signing, with a ``kid``.

    Entries of other types (``oct``), for encryption (``use: enc``) or that do not import
    are skipped, not fatal: a JWKS may hold keys for other purposes.
    """
    keys: dict[str, RSAKey | ECKey | OKPKey] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        kid, kty = entry.get("kid"), entry.get("kty")
        if not isinstance(kid, str) or not kid or not isinstance(kty, str):
            continue
        if kty not in _KEY_TYPES or entry.get("use", "sig") != "sig":
            continue
        public = {k: v for k, v in entry.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}
        try:
            keys[kid] = _KEY_TYPES[kty].import_key(public)
        except (JoseError, ValueError, TypeError):
            continue
    return keys


def _header(token: object) -> dict[str, Any]:
    """The protected header of a compact JWS, before anything is trusted."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise InvalidToken("The bearer token is empty or too long to be a JWT.")
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        raise InvalidToken("The bearer token is not a signed JWT (three dot-separated parts).")
    try:
        raw = base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken("The bearer token's header is not base64url.") from None
    header = _json_object(raw)
    if header is None:
        raise InvalidToken("The bearer token's header is not a JSON object.")
    return header


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _seconds(value: object) -> float | None:
    """A NumericDate (RFC 7519 section 2) as a finite float, else None."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


def _allowed_url(url: str, issuer: str) -> bool:
    """https, or http on loopback when the issuer itself is (tests, as parse_auth allows)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    return parts.scheme == "http" and loopback and issuer.startswith("http://")


_OPENER = urllib.request.OpenerDirector()
"""HTTP(S) only, redirects included (no file:// or ftp:// a redirect could lead to), through
the proxies the environment names (``HTTPS_PROXY``, ``NO_PROXY``)."""
for _handler in (
    urllib.request.ProxyHandler(),
    urllib.request.HTTPHandler(),
    urllib.request.HTTPSHandler(),
    urllib.request.HTTPRedirectHandler(),
    urllib.request.HTTPDefaultErrorHandler(),
    urllib.request.HTTPErrorProcessor(),
):
    _OPENER.add_handler(_handler)


def _get_json(url: str, timeout: float, what: str) -> dict[str, Any]:
    """GET ``url`` as a JSON object of at most :data:`MAX_DOCUMENT_BYTES`.

    Raises:
        IssuerUnavailable: it cannot be fetched in ``timeout``, is too big, or is no object.
    """
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            body = response.read(MAX_DOCUMENT_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise IssuerUnavailable(
            f"Cannot fetch the issuer's {what} at {url} ({type(e).__name__})."
        ) from None
    if len(body) > MAX_DOCUMENT_BYTES:
        raise IssuerUnavailable(f"The issuer's {what} at {url} is larger than we accept.")
    value = _json_object(body)
    if value is None:
        raise IssuerUnavailable(f"The issuer's {what} at {url} is not a JSON object.")
    return value


__all__ = ["ALGORITHMS", "InvalidToken", "IssuerUnavailable", "JwtVerifier"]
