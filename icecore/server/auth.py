"""OAuth2 client credentials for the served catalog: ``POST /v1/oauth/tokens`` and bearer checks.

With ``--credential ID:SECRET`` the server issues short-lived random bearer tokens to a client
that presents that pair (``grant_type=client_credentials``, RFC 6749 4.4, the form Iceberg
Java's and PyIceberg's REST clients send), and exchanges a still-valid token for a fresh one
(``urn:ietf:params:oauth:grant-type:token-exchange``, which Iceberg Java uses to refresh).
Every other call must carry ``Authorization: Bearer <token>``. Tokens live in memory only,
bounded in number; the secret is compared in constant time and never logged or echoed.
Errors on the token endpoint use the spec's ``OAuthError`` shape (``error``,
``error_description``), as clients parse it there.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from icecore.server.errors import RestError

DEFAULT_TOKEN_TTL_S = 3600.0
MAX_TOKENS = 10_000
"""Live tokens kept; the oldest are forgotten first (their holders fetch new ones)."""

CLIENT_CREDENTIALS = "client_credentials"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


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
    """Issues and checks bearer tokens for one ``client_id:client_secret`` pair.

    Attributes:
        client_id: the accepted client id.
        ttl_s: how long a token is valid, in seconds.
    """

    client_id: str
    _secret: str = field(repr=False)
    ttl_s: float = DEFAULT_TOKEN_TTL_S
    _tokens: OrderedDict[str, float] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_credential(cls, credential: str, ttl_s: float = DEFAULT_TOKEN_TTL_S) -> TokenIssuer:
        """Read ``ID:SECRET`` (the secret may itself contain ``:``)."""
        client_id, sep, secret = credential.partition(":")
        if not sep or not client_id or not secret:
            raise ValueError("The credential must be CLIENT_ID:CLIENT_SECRET, both non-empty.")
        return cls(client_id, secret, ttl_s)

    def grant(self, form: Mapping[str, str]) -> dict[str, object]:
        """Answer a token request (its form fields); raises :class:`OAuthError` if refused."""
        grant_type = form.get("grant_type", "")
        if grant_type == CLIENT_CREDENTIALS:
            given_id = form.get("client_id", "")
            given_secret = form.get("client_secret", "")
            ok_id = hmac.compare_digest(given_id.encode(), self.client_id.encode())
            ok_secret = hmac.compare_digest(given_secret.encode(), self._secret.encode())
            if not (ok_id and ok_secret):
                raise OAuthError(401, "invalid_client", "Unknown client id or wrong secret.")
        elif grant_type == TOKEN_EXCHANGE:
            if not self.valid(form.get("subject_token", "")):
                raise OAuthError(
                    401, "invalid_grant", "The subject token is unknown or expired; log in again."
                )
        else:
            raise OAuthError(
                400,
                "unsupported_grant_type",
                "Only client_credentials and token-exchange grants are supported.",
            )
        return {
            "access_token": self._issue(),
            "token_type": "bearer",
            "expires_in": max(1, int(self.ttl_s)),
            "issued_token_type": ACCESS_TOKEN_TYPE,
        }

    def _issue(self) -> str:
        token = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            for old, expiry in list(self._tokens.items()):
                if expiry <= now:
                    del self._tokens[old]
            self._tokens[token] = now + self.ttl_s
            while len(self._tokens) > MAX_TOKENS:
                self._tokens.popitem(last=False)
        return token

    def valid(self, token: str) -> bool:
        """Whether ``token`` was issued here and has not expired."""
        with self._lock:
            expiry = self._tokens.get(token)
        return expiry is not None and time.monotonic() < expiry

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


__all__ = ["DEFAULT_TOKEN_TTL_S", "OAuthError", "TokenIssuer"]
