"""OAuth2 client credentials for the served catalog: ``POST /v1/oauth/tokens`` and bearer checks.

With ``--credential ID:SECRET`` the server issues short-lived bearer tokens to a client that
presents that pair (``grant_type=client_credentials``, RFC 6749 4.4, the form Iceberg Java's
and PyIceberg's REST clients send), and exchanges a still-valid token for a fresh one
(``urn:ietf:params:oauth:grant-type:token-exchange``, which Iceberg Java uses to refresh):
spec ``/v1/oauth/tokens``, cases 1 and 3 of its description. The secret is compared in
constant time and never logged or echoed. Errors on the token endpoint use the spec's
``OAuthError`` shape (``error``, ``error_description``), as clients parse it there.

Tokens are signed, not stored: ``ic1.<first issue ms>.<expiry ms>.<nonce>.<HMAC-SHA256>``,
keyed by a signing key derived from the credential and a token secret (``--token-secret-file``
or ``ICECORE_SERVE_TOKEN_SECRET``; without one, random bytes drawn at start, so a restart
ends every token). Why signed:

- Refresh has a maximum lifetime (``--token-max-lifetime``): a refreshed token keeps the time
  of the first issue, signed, and expires at the latest that long after it, however often it
  is exchanged; then the client logs in again with its credential.
- Revocation is a rotation: start the server with a new token secret (or a new credential) and
  every token issued before fails its signature (401), while clients keep their
  ``client_id:client_secret`` configuration and simply fetch a new token. Keeping the secret
  across a restart keeps the tokens valid.
- Nothing grows with the number of tokens issued.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from icecore.server.errors import RestError

DEFAULT_TOKEN_TTL_S = 3600.0
DEFAULT_TOKEN_MAX_LIFETIME_S = 86_400.0
"""How long a chain of refreshed tokens lives after its first issue (a day)."""
TOKEN_SECRET_ENV = "ICECORE_SERVE_TOKEN_SECRET"
MIN_TOKEN_SECRET_CHARS = 16
MAX_TOKEN_CHARS = 200
"""Longer bearer values are refused before any parsing."""
TOKEN_PREFIX = "ic1"

CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


def token_secret(file: str | None = None, environ: Mapping[str, str] | None = None) -> bytes | None:
    """The operator's token secret: ``file``'s content, else ``ICECORE_SERVE_TOKEN_SECRET``.

    None when neither is set (the server then draws a random one at start).

    Raises:
        ValueError: the file cannot be read or the secret is shorter than
            :data:`MIN_TOKEN_SECRET_CHARS` (the message never holds the secret).
    """
    env = os.environ if environ is None else environ
    if file:
        try:
            text = Path(file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(
                f"Cannot read the token secret file {file} ({type(e).__name__})."
            ) from None
        where = f"The token secret file {file}"
    else:
        text = env.get(TOKEN_SECRET_ENV, "").strip()
        if not text:
            return None
        where = TOKEN_SECRET_ENV
    if len(text) < MIN_TOKEN_SECRET_CHARS:
        raise ValueError(
            f"{where} must hold at least {MIN_TOKEN_SECRET_CHARS} characters, e.g. from "
            "openssl rand -hex 32."
        )
    return text.encode()


@dataclass(frozen=True)
class OAuthError(Exception):
    """A refused token request: RFC 6749 5.2's ``error`` code and a description."""

    code: int
    error: str
    description: str

    def body(self) -> dict[str, str]:
        """The ``OAuthError`` response body."""
        return {"error": self.error, "error_description": self.description}


@dataclass
class TokenIssuer:
    """Issues and checks signed bearer tokens for one ``client_id:client_secret`` pair.

    Attributes:
        client_id: the accepted client id.
        ttl_s: how long a token is valid, in seconds.
        max_lifetime_s: how long after its first issue a token can still be refreshed.
    """

    client_id: str
    _secret: str = field(repr=False)
    ttl_s: float = DEFAULT_TOKEN_TTL_S
    max_lifetime_s: float = DEFAULT_TOKEN_MAX_LIFETIME_S
    _key: bytes = field(default=b"", repr=False)
    clock: Callable[[], float] = field(default=time.time, repr=False)
    """Wall-clock seconds: tokens outlive a restart when the token secret is kept."""

    @classmethod
    def from_credential(
        cls,
        credential: str,
        ttl_s: float = DEFAULT_TOKEN_TTL_S,
        *,
        max_lifetime_s: float = DEFAULT_TOKEN_MAX_LIFETIME_S,
        signing_secret: bytes | None = None,
        clock: Callable[[], float] = time.time,
    ) -> TokenIssuer:
        """Read ``ID:SECRET`` (the secret may itself contain ``:``).

        ``signing_secret`` is the operator's token secret (:func:`token_secret`); None draws
        a random one, so tokens end with this process.
        """
        client_id, sep, secret = credential.partition(":")
        if not sep or not client_id or not secret:
            raise ValueError("The credential must be CLIENT_ID:CLIENT_SECRET, both non-empty.")
        if not 0 < ttl_s <= max_lifetime_s:
            raise ValueError(
                "The token time to live must be positive and at most the token's maximum lifetime."
            )
        material = signing_secret if signing_secret is not None else secrets.token_bytes(32)
        key = hmac.new(
            material,
            b"icecore-serve-token\0" + client_id.encode() + b"\0" + secret.encode(),
            hashlib.sha256,
        ).digest()
        return cls(client_id, secret, ttl_s, max_lifetime_s, key, clock)

    def grant(self, form: Mapping[str, str]) -> dict[str, object]:
        """Answer a token request (its form fields); raises :class:`OAuthError` if refused."""
        grant_type = form.get("grant_type", "")
        now = self.clock()
        if grant_type == CLIENT_CREDENTIALS:
            given_id = form.get("client_id", "")
            given_secret = form.get("client_secret", "")
            ok_id = hmac.compare_digest(given_id.encode(), self.client_id.encode())
            ok_secret = hmac.compare_digest(given_secret.encode(), self._secret.encode())
            if not (ok_id and ok_secret):
                raise OAuthError(401, "invalid_client", "Unknown client id or wrong secret.")
            origin = now
        elif grant_type == TOKEN_EXCHANGE:
            claims = self._claims(form.get("subject_token", ""))
            if claims is None or now >= claims[1]:
                raise OAuthError(
                    401, "invalid_grant", "The subject token is unknown or expired; log in again."
                )
            origin = claims[0]
            if now >= origin + self.max_lifetime_s:
                raise OAuthError(
                    401,
                    "invalid_grant",
                    "The token reached its maximum lifetime; log in again with the client "
                    "credential.",
                )
        else:
            raise OAuthError(
                400,
                "unsupported_grant_type",
                "Only client_credentials and token-exchange grants are supported.",
            )
        expiry = min(now + self.ttl_s, origin + self.max_lifetime_s)
        return {
            "access_token": self._sign(origin, expiry),
            "token_type": "bearer",
            "expires_in": max(1, int(expiry - now)),
            "issued_token_type": ACCESS_TOKEN_TYPE,
        }

    def _signature(self, payload: str) -> str:
        digest = hmac.new(self._key, payload.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def _sign(self, origin: float, expiry: float) -> str:
        nonce = secrets.token_urlsafe(12)
        payload = f"{TOKEN_PREFIX}.{int(origin * 1000)}.{int(expiry * 1000)}.{nonce}"
        return f"{payload}.{self._signature(payload)}"

    def _claims(self, token: str) -> tuple[float, float] | None:
        """The first issue and expiry (seconds) of a token signed here; None otherwise."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        payload, _, signature = token.rpartition(".")
        if not hmac.compare_digest(signature.encode(), self._signature(payload).encode()):
            return None
        _prefix, origin_ms, expiry_ms, _nonce = payload.split(".")
        return int(origin_ms) / 1000.0, int(expiry_ms) / 1000.0

    def valid(self, token: str) -> bool:
        """Whether ``token`` was signed with this server's key and has not expired."""
        claims = self._claims(token)
        return claims is not None and self.clock() < claims[1]

    def check(self, authorization: str | None) -> None:
        """Refuse a request without a valid bearer token (401 ``NotAuthorizedException``)."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise RestError(
                401,
                "NotAuthorizedException",
                "Not authorized: send Authorization: Bearer <token> from /v1/oauth/tokens.",
            )
        if not self.valid(token.strip()):
            raise RestError(
                401,
                "NotAuthorizedException",
                "Not authorized: the bearer token is unknown or expired; fetch a new one.",
            )


__all__ = [
    "DEFAULT_TOKEN_MAX_LIFETIME_S",
    "DEFAULT_TOKEN_TTL_S",
    "TOKEN_SECRET_ENV",
    "OAuthError",
    "TokenIssuer",
    "token_secret",
]
