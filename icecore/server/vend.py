"""Storage credentials the server vends with ``loadTable`` (spec ``LoadTableResult.config``).

A client that sends ``X-Iceberg-Access-Delegation: vended-credentials`` gets, in the
``config`` of every ``LoadTableResult``, the storage properties its FileIO needs to read the
table's files, so a team hands out one catalog URI (and its OAuth2 credential) instead of
object-store keys. The values are read once, at start, from the server's own environment,
named by the operator (``--vend s3.access-key-id=ENV_VAR``): never from a request, a URL or a
file a visitor supplies. Only the storage keys below are vended (an allow-list), and their
values never reach a log or an error message.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

VENDABLE = frozenset(
    {
        "s3.endpoint",
        "s3.access-key-id",
        "s3.secret-access-key",
        "s3.session-token",
        "s3.region",
        "s3.path-style-access",
    }
)
"""Storage properties a client's FileIO takes (PyIceberg's and Iceberg Java's names)."""

DELEGATION_HEADER = "x-iceberg-access-delegation"
VENDED_CREDENTIALS = "vended-credentials"


def vended_properties(
    specs: Iterable[str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The properties to vend, from ``KEY=ENV_VAR`` pairs read in the server's environment.

    Raises:
        ValueError: a pair is malformed, names a key outside :data:`VENDABLE`, or an unset
            variable (the message names the key and the variable, never a value).
    """
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for spec in specs:
        key, sep, var = spec.strip().partition("=")
        key, var = key.strip(), var.strip()
        if not sep or not key or not var:
            raise ValueError("--vend takes KEY=ENV_VAR, e.g. s3.endpoint=S3_ENDPOINT.")
        if key not in VENDABLE:
            raise ValueError(
                f"--vend {key}: only these storage properties are vended: "
                f"{', '.join(sorted(VENDABLE))}."
            )
        value = env.get(var, "").strip()
        if not value:
            raise ValueError(
                f"--vend {key}={var}: the environment variable {var} is not set in the "
                "server's environment; set it before starting the server."
            )
        out[key] = value
    return out


def wants_vended(header: str | None) -> bool:
    """Whether the request's access-delegation header asks for vended credentials."""
    if not header:
        return False
    return VENDED_CREDENTIALS in (part.strip().lower() for part in header.split(","))


__all__ = ["DELEGATION_HEADER", "VENDABLE", "vended_properties", "wants_vended"]
