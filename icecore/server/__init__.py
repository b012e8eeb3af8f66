"""The Iceberg REST catalog protocol served over any catalog Icecore opens.

``python -m icecore serve-rest CATALOG`` runs :func:`serve`: :mod:`icecore.server.app` holds
the routes, :mod:`~icecore.server.commit` the atomic commit, :mod:`~icecore.server.create`
new tables, :mod:`~icecore.server.auth` tokens, :mod:`~icecore.server.errors` the
``ErrorModel`` and :mod:`~icecore.server.vend` the storage credentials it hands out.
Starlette and uvicorn are imported here and nowhere else in the core.
"""

from __future__ import annotations

from collections.abc import Sequence

from icecore.catalog import load_catalog
from icecore.server.app import create_app
from icecore.server.auth import DEFAULT_TOKEN_TTL_S, TokenIssuer
from icecore.server.locations import served_catalog
from icecore.server.vend import vended_properties


def serve(
    catalog: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8181,
    read_only: bool = False,
    credential: str | None = None,
    token_ttl_s: float = DEFAULT_TOKEN_TTL_S,
    vend: Sequence[str] = (),
    allow_locations: Sequence[str] = (),
) -> None:
    """Serve ``catalog`` (as :func:`icecore.load_catalog` takes it) until interrupted.

    ``vend`` holds ``KEY=ENV_VAR`` pairs: storage properties read from this process's
    environment and handed to clients that ask for vended credentials. ``allow_locations``
    are prefixes where tables may live besides the catalog's warehouse
    (:mod:`icecore.server.locations`).

    Raises:
        ValueError: a malformed ``credential`` or ``vend`` pair (no secret in the message), or
            an unusable ``allow_locations`` prefix.
    """
    import uvicorn

    vended = vended_properties(vend)
    backing = served_catalog(load_catalog(catalog, read_only=read_only))
    issuer = TokenIssuer.from_credential(credential, token_ttl_s) if credential else None
    app = create_app(
        backing,
        read_only=read_only,
        issuer=issuer,
        vended=vended,
        allow_locations=allow_locations,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


__all__ = ["create_app", "serve"]
