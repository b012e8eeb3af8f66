"""Storage credentials the server vends with ``loadTable`` (spec ``LoadTableResult.config``).

A client that sends ``X-Iceberg-Access-Delegation: vended-credentials`` gets, in the
``config`` of every ``LoadTableResult``, the storage properties its FileIO needs to read the
table's files, so a team hands out one catalog URI (and its OAuth2 credential) instead of
object-store keys. The values are read once, at start, from the server's own environment,
named by the operator (``--vend s3.access-key-id=ENV_VAR``): never from a request, a URL or a
file a visitor supplies. They are static keys, the same for every table: not scoped to one
(:func:`vend_policy` says who may receive them). Only the storage keys below are vended (an
allow-list), and their values never reach a log or an error message.
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


ANONYMOUS_WARNING = (
    "Warning: --vend-to-anonymous hands the vended storage keys to anyone who reaches this "
    "port, without a token; they are the keys named, not scoped to a table."
)


def vended_properties(
    specs: Iterable[str], environ: Mapping[str, str] | None = None, *, option: str = "--vend"
) -> dict[str, str]:
    """The properties to vend, from ``KEY=ENV_VAR`` pairs read in the server's environment.

    ``option`` is the command-line option the pairs came from, named in messages.

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
            raise ValueError(f"{option} takes KEY=ENV_VAR, e.g. s3.endpoint=S3_ENDPOINT.")
        if key not in VENDABLE:
            raise ValueError(
                f"{option} {key}: only these storage properties are vended: "
                f"{', '.join(sorted(VENDABLE))}."
            )
        value = env.get(var, "").strip()
        if not value:
            raise ValueError(
                f"{option} {key}={var}: the environment variable {var} is not set in the "
                "server's environment; set it before starting the server."
            )
        out[key] = value
    return out


def vend_policy(
    vend: Iterable[str],
    vend_read_only: Iterable[str],
    *,
    authenticated: bool,
    read_only: bool,
    to_anonymous: bool,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], str | None]:
    """What a server started with these options vends, and the warning to print, if any.

    Why refusals rather than defaults: vended keys are the server's own static storage keys,
    not scoped to a table, and ``--vend`` ones can write. A read-only server must not hand
    out write-capable keys, so it vends only pairs named with ``--vend-read-only`` (keys the
    operator made read-only at the store). Vending without ``--credential`` gives them to
    anyone who reaches the port, so it takes an explicit ``--vend-to-anonymous`` and a
    warning on stderr.

    Raises:
        ValueError: one sentence naming the options to change (never a value).
    """
    vend, vend_read_only = list(vend), list(vend_read_only)
    if read_only and vend:
        raise ValueError(
            "A --read-only server vends only keys named with --vend-read-only KEY=ENV_VAR, "
            "never the write-capable keys of --vend."
        )
    writable = vended_properties(vend, environ)
    readable = vended_properties(vend_read_only, environ, option="--vend-read-only")
    both = sorted(set(writable) & set(readable))
    if both:
        raise ValueError(f"{both[0]} is named by both --vend and --vend-read-only; keep one.")
    vended = {**writable, **readable}
    if not vended or authenticated:
        return vended, None
    if not to_anonymous:
        raise ValueError(
            "Vending storage keys without --credential hands them to anyone who reaches the "
            "port; set --credential (or ICECORE_SERVE_CREDENTIAL), or pass --vend-to-anonymous "
            "if that is really meant."
        )
    return vended, ANONYMOUS_WARNING


def wants_vended(header: str | None) -> bool:
    """Whether the request's access-delegation header asks for vended credentials."""
    if not header:
        return False
    return VENDED_CREDENTIALS in (part.strip().lower() for part in header.split(","))


__all__ = [
    "ANONYMOUS_WARNING",
    "DELEGATION_HEADER",
    "VENDABLE",
    "vend_policy",
    "vended_properties",
    "wants_vended",
]
