"""One registry of catalog types: a type name or a URI scheme -> the function that opens it.

Every way to name a catalog ends here: a catalog string (``sqlite:///x.db``,
``postgresql://...``, ``http(s)://...``, a warehouse folder), a ``[catalogs.NAME]`` entry of
icecore.toml, or a catalog of PyIceberg's configuration (``type: rest``, ``type: sql``).
Each :class:`CatalogType` names its loader as ``"module:function"``, imported only when a
catalog of that type is opened: psycopg and requests load only for the catalogs that speak
them (``tests/icecore/test_import_cost.py``).

A type is PyIceberg's name for it where PyIceberg has one (``rest``, ``sql``) and Iceberg
Java's otherwise (``hadoop``: PyIceberg has no filesystem catalog). Adding a catalog type
is one module with a loader and one line in :data:`CATALOG_TYPES` (docs/ARCHITECTURE.md,
"Adding a catalog type").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from icecore.catalog.postgres_uri import SCHEMES as POSTGRES_SCHEMES
from icecore.errors import Unsupported
from icecore.io import FileIO

if TYPE_CHECKING:
    from icecore.catalog.base import Catalog


@dataclass(frozen=True, slots=True)
class CatalogSpec:
    """What a loader is given: one catalog as configured.

    Attributes:
        uri: the catalog string (a URI or a folder), as Icecore spells it.
        properties: every configured property, PyIceberg's names (``warehouse``,
            ``credential``, ``token``, ``scope``, ``s3.*``, ...); empty for a bare string.
            Secrets may be among them: never put them in a message.
        name: the configured name the catalog was opened by, when its ``uri`` should give
            that name back (a PyIceberg catalog, a REST entry).
        io: the FileIO to read tables with (None: one from the ``s3.*`` properties).
        read_only: refuse commits.
        source: where the properties came from, as messages name it.
    """

    uri: str
    properties: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    io: FileIO | None = None
    read_only: bool = False
    source: str = "icecore.toml"

    def file_io(self) -> FileIO:
        """The given FileIO, else one configured by the ``s3.*`` properties."""
        if self.io is not None:
            return self.io
        return FileIO({k: v for k, v in self.properties.items() if k.startswith("s3.")})


Loader = Callable[[CatalogSpec], "Catalog"]


@dataclass(frozen=True, slots=True)
class CatalogType:
    """One kind of catalog.

    Attributes:
        name: the ``type`` property that selects it (and :attr:`Catalog.kind` of what it opens).
        loader: ``"module:function"`` taking a :class:`CatalogSpec`, imported when used.
        schemes: URI schemes that imply this type when no ``type`` is given.
        admin: ``"module:Class"`` managing namespaces and tables of such a catalog for the
            REST server (:class:`icecore.server.backend.CatalogAdmin`), if it can.
    """

    name: str
    loader: str
    schemes: tuple[str, ...] = ()
    admin: str | None = None

    def load(self, spec: CatalogSpec) -> Catalog:
        """Open the catalog ``spec`` describes."""
        return cast("Catalog", _attribute(self.loader)(spec))


CATALOG_TYPES: tuple[CatalogType, ...] = (
    CatalogType("rest", "icecore.catalog.rest:load_rest", ("http", "https")),
    CatalogType(
        "sql", "icecore.catalog.sql:load_sqlite", ("sqlite",), "icecore.catalog.sql:SqlCatalogAdmin"
    ),
    CatalogType(
        "sql",
        "icecore.catalog.postgres:load_postgres",
        POSTGRES_SCHEMES,
        "icecore.catalog.sql:SqlCatalogAdmin",
    ),
    CatalogType(
        "hadoop",
        "icecore.catalog.filesystem:load_filesystem",
        ("s3", "s3a", "s3n"),
        "icecore.catalog.filesystem_admin:FilesystemCatalogAdmin",
    ),
)
"""Every catalog type Icecore opens; one type may have one line per URI scheme family."""


def _attribute(path: str) -> Callable[..., object]:
    module, _, name = path.partition(":")
    return cast("Callable[..., object]", getattr(importlib.import_module(module), name))


def type_names() -> list[str]:
    """The ``type`` values a configured catalog may have, sorted."""
    return sorted({t.name for t in CATALOG_TYPES})


def scheme_of(uri: str) -> str | None:
    """``uri``'s scheme, lower-cased (SQLAlchemy's ``+driver`` dropped), or None."""
    scheme, sep, _ = uri.partition(":")
    if not sep or not scheme or not scheme.replace("+", "").replace("-", "").isalnum():
        return None
    return scheme.lower()


def for_uri(uri: str) -> CatalogType | None:
    """The type whose scheme ``uri`` has (``postgresql+psycopg`` is PostgreSQL), or None."""
    scheme = scheme_of(uri)
    if scheme is None:
        return None
    for kind in CATALOG_TYPES:
        if scheme in kind.schemes or scheme.split("+", 1)[0] in kind.schemes:
            return kind
    return None


def find(type_name: str, uri: str, *, what: str) -> CatalogType:
    """The line of type ``type_name`` for ``uri`` (its scheme picks among a type's lines).

    Raises:
        Unsupported: no such type, or the type opens no URI of that scheme; ``what`` names
            the catalog in the sentence.
    """
    wanted = type_name.strip().lower()
    lines = [t for t in CATALOG_TYPES if t.name == wanted]
    if not lines:
        raise Unsupported(
            f"{what} is of type {type_name!r}, which Icecore cannot open; it opens "
            f"{', '.join(type_names())} catalogs."
        )
    if len(lines) == 1:
        return lines[0]
    by_scheme = for_uri(uri)
    if by_scheme is not None and by_scheme in lines:
        return by_scheme
    schemes = sorted({s for t in lines for s in t.schemes})
    raise Unsupported(
        f"{what} is a {wanted} catalog whose uri is not one of {', '.join(schemes)}; "
        "give it a uri Icecore can open."
    )


def kind_of(catalog: Catalog) -> CatalogType | None:
    """The registered type of an open catalog (by :attr:`Catalog.kind`)."""
    return next((t for t in CATALOG_TYPES if t.name == catalog.kind), None)


def admin_for(catalog: Catalog) -> object | None:
    """The management side of ``catalog`` its type registers, or None."""
    kind = kind_of(catalog)
    if kind is None or kind.admin is None:
        return None
    return _attribute(kind.admin)(catalog)


__all__ = [
    "CATALOG_TYPES",
    "CatalogSpec",
    "CatalogType",
    "Loader",
    "admin_for",
    "find",
    "for_uri",
    "kind_of",
    "scheme_of",
    "type_names",
]
