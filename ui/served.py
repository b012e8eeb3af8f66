"""The app's deployment boundary: which catalogs it serves, and what a link may name.

A deployment serves ``ICECORE_CATALOG`` (``./warehouse`` when unset; with the demo's
filesystem companion ``warehouse/hadoop``) and the ``[catalogs.NAME]`` entries of
``icecore.toml``, and nothing else. A link or the sidebar naming any other folder, file or
URI is refused *before* anything touches it (no stat, no listing, no connection), because
whatever a visitor names would otherwise be opened by the server: its folders listed, its
metadata files read, hosts and ports on its network probed. ``ICECORE_OPEN_CATALOGS=1``
(what ``make run`` sets on a workstation) lifts the boundary.

Catalogs configured the PyIceberg way (``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__*``) are a
user's, not the deployment's: they are not served unless ``ICECORE_CATALOG`` names one (or
``ICECORE_OPEN_CATALOGS`` lifts the boundary). A user's home folder holding a
``.pyiceberg.yaml`` must not widen what a deployment shows to every visitor.

A served catalog may be named by its name or by its non-secret string (a PostgreSQL URI
without its password, a folder in any spelling that normalizes to the same path); the app
then opens the served string itself, never the text of the link.

A REST catalog (``[catalogs.NAME]`` with ``type = "rest"``) is served by its name; its secret
stays in the environment variable the entry names, so neither the name nor the entry's
``uri`` ever carries it. A REST URI typed or linked under ``ICECORE_OPEN_CATALOGS`` is kept
only as ``scheme://host:port/path``: a ``user:secret@`` or a query it held is dropped before
the string reaches the selection, the link, the page or a cache key.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from icecore.catalog.postgres_uri import hide_password, redact
from icecore.config import CatalogEntry, load_config
from icecore.errors import IcecoreError, NotFound
from icecore.launch import CATALOG_ENV, DEFAULT_WAREHOUSE

OPEN_CATALOGS_ENV = "ICECORE_OPEN_CATALOGS"
DEMO_FILESYSTEM_SUBDIR = "hadoop"
"""The demo keeps its filesystem-catalog tables in this folder of the warehouse."""
_TRUE = ("1", "true", "yes", "on")

NOT_SERVED = (
    "This catalog is not served here: this app serves only the catalogs listed in the "
    "sidebar; choose one of them there."
)


class NotServed(NotFound):
    """A link or an input named a catalog outside the deployment's boundary."""


@dataclass(frozen=True, slots=True)
class ServedCatalog:
    """One catalog the app serves.

    Attributes:
        key: what the selection holds and ``load_catalog`` opens (a name, or the catalog
            string with any password hidden).
        aliases: the spellings a link may use for it (name, non-secret string, normalized
            folder).
    """

    key: str
    aliases: frozenset[str]


def open_catalogs_allowed() -> bool:
    """Whether links and the sidebar may open catalogs the deployment does not serve."""
    return os.environ.get(OPEN_CATALOGS_ENV, "").strip().lower() in _TRUE


def default_catalog() -> str:
    """The catalog a fresh visit opens: ``ICECORE_CATALOG`` or ``./warehouse``.

    A PostgreSQL URI's password is kept out of what the app shows and links (hide_password).
    """
    return public_catalog(os.environ.get(CATALOG_ENV) or DEFAULT_WAREHOUSE)


def public_catalog(text: str) -> str:
    """``text`` as the app may show, link and cache it: with no secret in it.

    A PostgreSQL URI loses its password (remembered for connecting, see hide_password); a
    REST URI its ``user:secret@`` and any query or fragment (a REST catalog's secret comes
    from the environment, never from its URI); other strings are returned unchanged.
    """
    text = text.strip()
    if text.lower().startswith(("http://", "https://")):
        parts = urlsplit(text)
        host = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    return hide_password(text)


def companion_catalogs(catalog: str) -> list[str]:
    """Other catalogs to show beside ``catalog``: the demo's filesystem warehouse if present."""
    folder = Path(catalog)
    fs_warehouse = folder / DEMO_FILESYSTEM_SUBDIR
    if folder.is_dir() and fs_warehouse.is_dir():
        return [str(fs_warehouse)]
    return []


def _spellings(text: str) -> set[str]:
    """Ways to write the catalog string ``text`` that name the same catalog (no file access)."""
    text = text.strip()
    found = {text}
    with contextlib.suppress(ValueError):  # not a URL (an unbalanced [ in the host)
        found.add(redact(text))
    if "://" not in text and not text.startswith(("sqlite:", "file:")):
        found.add(os.path.normpath(os.path.abspath(text)))
    return found


def served_catalogs() -> list[ServedCatalog]:
    """The catalogs this deployment serves: the default, its companion, then named ones.

    Only the served default folder is looked at (for its companion); a malformed
    icecore.toml serves no named catalog (the page that opens one says why).
    """
    base = default_catalog()
    raw = os.environ.get(CATALOG_ENV) or DEFAULT_WAREHOUSE
    served = [ServedCatalog(base, frozenset(_spellings(base) | _spellings(raw)))]
    served += [ServedCatalog(c, frozenset(_spellings(c))) for c in companion_catalogs(base)]
    entries: list[CatalogEntry] = []
    with contextlib.suppress(IcecoreError):
        entries = list(load_config().catalogs.values())
    for entry in entries:
        if entry.name not in (s.key for s in served):
            served.append(
                ServedCatalog(entry.name, frozenset({entry.name, *_spellings(entry.uri)}))
            )
    return served


def companions(catalog: str) -> list[str]:
    """The companion catalogs the landing page lists beside ``catalog`` (served ones only)."""
    if catalog == default_catalog() or open_catalogs_allowed():
        return companion_catalogs(catalog)
    return []


def served_keys() -> list[str]:
    """The served catalogs as the sidebar lists them."""
    return [s.key for s in served_catalogs()]


def admit(text: str) -> str:
    """The catalog the app opens for ``text`` from a link or an input.

    A served catalog's spelling gives the served catalog; anything else is refused unless
    ``ICECORE_OPEN_CATALOGS`` is set. Nothing named by ``text`` is touched to decide.

    Raises:
        NotServed: ``text`` names no served catalog and open catalogs are not allowed.
    """
    wanted = text.strip()
    spellings = _spellings(wanted) if wanted else set()
    for catalog in served_catalogs():
        if wanted == catalog.key or spellings & catalog.aliases:
            return catalog.key
    if open_catalogs_allowed() and wanted:
        return public_catalog(wanted)
    raise NotServed(NOT_SERVED)


__all__ = [
    "NOT_SERVED",
    "NotServed",
    "ServedCatalog",
    "admit",
    "companion_catalogs",
    "companions",
    "default_catalog",
    "open_catalogs_allowed",
    "public_catalog",
    "served_catalogs",
    "served_keys",
]
