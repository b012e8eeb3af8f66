"""The Iceberg REST catalog protocol served over any catalog Icecore opens.

``python -m icecore serve-rest CATALOG`` runs :func:`serve`: :mod:`icecore.server.app` holds
the routes, :mod:`~icecore.server.commit` the atomic commit, :mod:`~icecore.server.create`
new tables, :mod:`~icecore.server.auth` tokens, :mod:`~icecore.server.errors` the
``ErrorModel``, :mod:`~icecore.server.vend` the storage credentials it hands out and
:mod:`~icecore.server.limits` its connection and time limits. Starlette and uvicorn are
imported in this package and nowhere else in the core.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from icecore.catalog import load_catalog
from icecore.catalog.audit_store import audit_sink_for
from icecore.catalog.report_store import report_store_for
from icecore.config import is_catalog_name, load_config
from icecore.server.app import create_app
from icecore.server.auth import (
    DEFAULT_TOKEN_MAX_LIFETIME_S,
    DEFAULT_TOKEN_TTL_S,
    TokenIssuer,
    token_secret,
)
from icecore.server.limits import HttpLimits
from icecore.server.locations import served_catalog
from icecore.server.principals import TokenVerifier, served_name
from icecore.server.vend import vend_policy


def serve(
    catalog: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8181,
    read_only: bool = False,
    credential: str | None = None,
    token_ttl_s: float = DEFAULT_TOKEN_TTL_S,
    vend: Sequence[str] = (),
    vend_read_only: Sequence[str] = (),
    vend_to_anonymous: bool = False,
    token_max_lifetime_s: float = DEFAULT_TOKEN_MAX_LIFETIME_S,
    token_secret_file: str | None = None,
    limits: HttpLimits | None = None,
    allow_locations: Sequence[str] = (),
    name: str | None = None,
) -> None:
    """Serve ``catalog`` (as :func:`icecore.load_catalog` takes it) until interrupted.

    ``vend`` holds ``KEY=ENV_VAR`` pairs: storage properties read from this process's
    environment and handed to clients that ask for vended credentials; ``vend_read_only``
    the pairs a read-only server may vend, ``vend_to_anonymous`` allows vending without a
    credential (:func:`icecore.server.vend.vend_policy`). Tokens are signed with a key derived
    from ``credential`` and the token secret (``token_secret_file``, else
    ``ICECORE_SERVE_TOKEN_SECRET``, else random): a new secret revokes every earlier token;
    a refreshed token dies ``token_max_lifetime_s`` after its first issue
    (:mod:`icecore.server.auth`). ``limits`` bounds connections and request times
    (:mod:`icecore.server.limits`). ``allow_locations`` are prefixes where tables may live
    besides the catalog's warehouse (:mod:`icecore.server.locations`).

    icecore.toml's ``[auth]`` and ``[[grants]]`` (:func:`icecore.config.load_config`) make
    every call name a principal whose role is checked (:mod:`icecore.server.principals`);
    ``name`` is the catalog's name in grants (:func:`~icecore.server.principals.served_name`).

    Raises:
        ValueError: a malformed ``credential`` or ``vend`` pair, a vending the options do not
            allow, an unreadable or short token secret, a limit that is not positive, an
            unusable ``allow_locations`` prefix, a ``name`` that is not a word, or grants no
            one could sign in for (one sentence, no secret in it).
        ValidationError: icecore.toml is malformed.
    """
    import uvicorn

    if name is not None and not is_catalog_name(name):
        raise ValueError(
            f"--name {name[:100]!r} is not a word (letters, digits, _ and -, starting with a "
            "letter or _)."
        )
    config = load_config()
    policy = config.policy
    if policy is not None and config.auth is None and not credential:
        raise ValueError(
            f"{config.path} has [[grants]] but no [auth] and the server has no --credential, "
            "so no request could name a principal; add [auth] or --credential."
        )
    verifier: TokenVerifier | None = None
    if policy is not None and config.auth is not None:
        from icecore.server.oidc import JwtVerifier

        verifier = JwtVerifier(config.auth)
    vended, warning = vend_policy(
        vend,
        vend_read_only,
        authenticated=credential is not None or policy is not None,
        read_only=read_only,
        to_anonymous=vend_to_anonymous,
    )
    limits = limits or HttpLimits()
    run_options = limits.uvicorn_options()  # refused before anything is opened
    if warning:
        print(warning, file=sys.stderr, flush=True)
    backing = served_catalog(load_catalog(catalog, read_only=read_only))
    issuer = (
        TokenIssuer.from_credential(
            credential,
            token_ttl_s,
            max_lifetime_s=token_max_lifetime_s,
            signing_secret=token_secret(token_secret_file),
        )
        if credential
        else None
    )
    app = create_app(
        backing,
        read_only=read_only,
        issuer=issuer,
        vended=vended,
        allow_locations=allow_locations,
        policy=policy,
        verifier=verifier,
        name=served_name(catalog, config.catalogs, name),
        audit=audit_sink_for(backing),
        reports=None if read_only else report_store_for(backing),
    )
    uvicorn.run(
        limits.wrap(app), host=host, port=port, log_level="warning", access_log=False, **run_options
    )


__all__ = ["create_app", "serve"]
