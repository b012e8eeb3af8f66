"""Who sends each request to the REST server (DESIGN.md "Identity, roles and audit").

With no policy in icecore.toml (neither ``[auth]`` nor ``[[grants]]``) the server behaves as
it always did: with ``--credential`` every call needs one of its own tokens, without it every
call is anonymous, and every caller may do everything.

With a policy every call but ``POST /v1/oauth/tokens`` needs a bearer token, and the token
names a :class:`~icecore.access.Principal` whose grants decide what the call may do:

- one of the server's own client-credentials tokens (``--credential ID:SECRET``) is the
  principal ``ID``, member of the one group ``ID``: a ``[[grants]]`` entry with
  ``group = "ID"`` gives that client its role;
- any other bearer is an OpenID Connect JWT from ``[auth]``'s issuer, verified by a
  :class:`TokenVerifier` (:class:`icecore.server.oidc.JwtVerifier`: the JWKS signature,
  ``iss``, ``aud`` = :attr:`~icecore.access.AuthConfig.required_audience`, ``exp``, ``nbf``).

No token, or one that fails, is 401 ``NotAuthorizedException`` in one sentence that never
repeats the token.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from icecore.access import Principal
from icecore.catalog.postgres_uri import hide_password
from icecore.server.auth import TokenIssuer
from icecore.server.errors import RestError
from icecore.server.oidc import InvalidToken, IssuerUnavailable

MAX_BEARER_CHARS = 16_384
"""Longer bearer values are refused before any parsing (an ID token is a few KiB at most)."""

ANONYMOUS = Principal(subject="anonymous", name="anonymous", source="anonymous")
"""Who calls a server with neither a policy nor a credential."""

NO_TOKEN = (
    "Not authorized: send Authorization: Bearer <token> (a token of /v1/oauth/tokens or an ID "
    "token of the deployment's sign-in)."
)
BAD_TOKEN = "Not authorized: the bearer token is unknown or expired; fetch a new one."
_SHOWN = 300
"""Characters of a verifier's reason repeated in a 401 (it names a claim, never the token)."""


class TokenVerifier(Protocol):
    """Checks a bearer JWT and says whose it is (:class:`icecore.server.oidc.JwtVerifier`)."""

    def verify(self, token: str) -> Principal:
        """The principal ``token`` names.

        Raises:
            InvalidToken: it is not a valid token of the issuer (401).
            IssuerUnavailable: its keys cannot be had now (503).
        """
        ...


def served_name(catalog: str, configured: Collection[str], name: str | None = None) -> str:
    """The name grants spell the served catalog with (``CATALOG::ns.table``).

    ``--name`` when given; else the catalog argument itself when it names a
    ``[catalogs.NAME]`` entry of icecore.toml (``configured``), as the app names it; else the
    catalog string as given, any password hidden. A glob without ``::`` (``sales.*``)
    matches in every catalog, so grants written that way need no name at all.
    """
    if name:
        return name
    if catalog in configured:
        return catalog
    return hide_password(catalog)


def client_principal(client_id: str) -> Principal:
    """The principal of the server's own client-credentials client ``client_id``."""
    return Principal(subject=client_id, name=client_id, groups=(client_id,), source="client")


@dataclass(frozen=True)
class Authenticator:
    """Turns a request's ``Authorization`` header into its principal.

    Attributes:
        issuer: the server's own client-credentials tokens (``--credential``), if any.
        verifier: the verifier of ``[auth]``'s JWTs, if icecore.toml has ``[auth]``.
        enforced: a policy is in force: every call needs a token naming a principal.
    """

    issuer: TokenIssuer | None = None
    verifier: TokenVerifier | None = None
    enforced: bool = False

    @property
    def open(self) -> bool:
        """Whether calls need no token at all (no policy, no credential): as before issue 31."""
        return not self.enforced and self.issuer is None

    def principal(self, authorization: str | None) -> Principal:
        """Whose request this is.

        Raises:
            RestError: 401 when the token is missing or invalid; 503 when a JWT cannot be
                checked now (the issuer's keys are unreachable).
        """
        if not self.enforced:
            if self.issuer is None:
                return ANONYMOUS
            self.issuer.check(authorization)
            return client_principal(self.issuer.client_id)
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise RestError(401, "NotAuthorizedException", NO_TOKEN)
        if len(token) > MAX_BEARER_CHARS:
            raise RestError(401, "NotAuthorizedException", BAD_TOKEN)
        if self.issuer is not None and self.issuer.valid(token):
            return client_principal(self.issuer.client_id)
        if self.verifier is None:
            raise RestError(401, "NotAuthorizedException", BAD_TOKEN)
        try:
            return self.verifier.verify(token)
        except InvalidToken as e:
            reason = str(e).replace(token, "<token>")[:_SHOWN]
            raise RestError(
                401, "NotAuthorizedException", f"Not authorized: {reason or BAD_TOKEN}"
            ) from None
        except IssuerUnavailable:
            raise RestError(
                503,
                "ServiceUnavailableException",
                "The bearer token cannot be checked now: the sign-in issuer's keys are "
                "unreachable; try again shortly.",
            ) from None


__all__ = [
    "ANONYMOUS",
    "MAX_BEARER_CHARS",
    "Authenticator",
    "TokenVerifier",
    "client_principal",
    "served_name",
]
