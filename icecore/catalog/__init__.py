"""Catalogs: find tables and their current metadata.json.

``load_catalog`` takes what a user types (docs/ARCHITECTURE.md "Contracts"): a warehouse folder (an
SQL catalog when it holds ``catalog.db``, else a filesystem warehouse), ``sqlite:///x.db``
(``?catalog=NAME`` picks one of several catalogs in the file), ``postgresql://...`` (see
:mod:`icecore.catalog.postgres`), the path of a metadata.json, or the name of a
``[catalogs.NAME]`` entry of ``icecore.toml`` (see :mod:`icecore.config`), else of PyIceberg's
configuration (``.pyiceberg.yaml``, ``PYICEBERG_CATALOG__NAME__KEY``; see
:mod:`icecore.catalog.pyiceberg_config`); an empty string (``::ns.table``) is PyIceberg's
default catalog (``default-catalog``, else ``default``) when its configuration has it. A
configured name wins over a folder of the same name: the config is the deployment's word.
``http(s)://`` opens an Iceberg REST catalog (:mod:`icecore.catalog.rest`; secrets from
``ICECORE_REST_CREDENTIAL``/``ICECORE_REST_TOKEN``), as does an entry with ``type = "rest"``
or an http(s) ``uri`` (secrets from the variables its ``credential-env``/``token-env`` name).
Which class opens which scheme or ``type`` is :data:`icecore.catalog.registry.CATALOG_TYPES`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icecore.catalog import pyiceberg_config, registry
from icecore.catalog.base import Catalog, TableIdentifier
from icecore.catalog.filesystem import FilesystemCatalog, current_metadata_file
from icecore.catalog.registry import CatalogSpec
from icecore.catalog.sql import SqlCatalog
from icecore.catalog.static import StaticCatalog
from icecore.config import catalog_entry, is_catalog_name, is_rest_entry, load_config
from icecore.config import read_only as config_read_only
from icecore.errors import NotFound, ValidationError
from icecore.io import FileIO, normalize_path
from icecore.table import Table, load_table_at

if TYPE_CHECKING:
    from icecore.catalog.postgres import PostgresCatalog
    from icecore.catalog.rest import RestCatalog


def __getattr__(name: str) -> Any:
    """``PostgresCatalog`` and ``RestCatalog``, imported with their drivers when asked for.

    psycopg and requests (with its TLS stack: ~15 MiB, ~50 ms) load only for the catalogs
    that speak them, so ``import icecore`` for a folder or SQLite catalog never pays for them.
    """
    if name == "PostgresCatalog":
        from icecore.catalog.postgres import PostgresCatalog

        return PostgresCatalog
    if name == "RestCatalog":
        from icecore.catalog.rest import RestCatalog

        return RestCatalog
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SQL_CATALOG_FILE = "catalog.db"

__all__ = [
    "Catalog",
    "FilesystemCatalog",
    "PostgresCatalog",
    "RestCatalog",
    "SqlCatalog",
    "StaticCatalog",
    "TableIdentifier",
    "load_catalog",
    "load_table",
]

TABLE_SEPARATOR = "::"
"""Separates the catalog from the table name in ``CATALOG::ns.table``."""


def load_catalog(
    uri: str | Path, io: FileIO | None = None, *, read_only: bool | None = None
) -> Catalog:
    """Open the catalog that ``uri`` names (see the module docstring).

    Args:
        uri: the catalog.
        io: the FileIO for its tables' files.
        read_only: open a SQLite catalog read-only (its folder is never written, commits
            are refused); None follows :func:`icecore.config.read_only`
            (``ICECORE_READ_ONLY``, else ``read_only`` in icecore.toml).

    Raises:
        NotFound: nothing is there, or ``uri`` is not a catalog string.
        ValidationError: ``uri`` is a name and icecore.toml or PyIceberg's configuration is
            malformed.
        Unsupported: ``uri`` names a PyIceberg catalog of a type Icecore does not open.
        IcecoreError: the catalog's storage or server could not be reached.
    """
    if read_only is None:
        read_only = config_read_only()
    text = str(uri).strip()
    if not text:
        # PyIceberg's load_catalog() with no name: its default-catalog, else "default".
        text = pyiceberg_config.default_catalog_name()
        if pyiceberg_config.find_catalog(text) is None:
            raise NotFound("No catalog given; pass a warehouse folder, sqlite:///file.db or a URI.")
    if is_catalog_name(text):
        config = load_config()
        if text in config.catalogs:
            entry = catalog_entry(text, config)
            if is_rest_entry(entry.properties):
                spec = CatalogSpec(entry.uri, entry.properties, name=text, read_only=read_only)
                return registry.find("rest", entry.uri, what=text).load(spec)
            return _open(entry.uri, io, read_only)
        found = pyiceberg_config.open_spec(text, read_only=read_only)
        if found is not None:
            kind, spec = found
            return kind.load(spec if io is None else replace(spec, io=io))
    return _open(text, io, read_only)


def _open(text: str, io: FileIO | None, read_only: bool) -> Catalog:
    """Open a catalog string (never a name: an entry's ``uri`` cannot name another entry).

    A URI's scheme picks its type in :data:`registry.CATALOG_TYPES`; a local path is a
    metadata.json, a folder holding ``catalog.db`` (sql) or a warehouse folder (hadoop).
    """
    kind = registry.for_uri(text)
    if kind is not None and (kind.name != "hadoop" or "://" in text):
        return kind.load(CatalogSpec(text, io=io, read_only=read_only))
    protocol, local = normalize_path(text)
    if text.endswith(".metadata.json"):
        return StaticCatalog(text, io=io)
    if protocol == "file":
        folder = Path(local)
        if (folder / SQL_CATALOG_FILE).is_file():
            return SqlCatalog(folder / SQL_CATALOG_FILE, io=io, read_only=read_only)
        if folder.is_file():
            raise NotFound(
                f"{text} is a file, not a catalog; give a warehouse folder, a sqlite:/// URI "
                "or a metadata.json path."
            )
        if not folder.is_dir():
            raise NotFound(f"Catalog {text} does not exist (no such folder).")
        return FilesystemCatalog(text, io=io)
    raise NotFound(
        f"Unknown catalog {text!r}; give a warehouse folder, sqlite:///file.db, "
        "postgresql://..., http(s):// (a REST catalog) or a metadata.json path."
    )


def load_table(spec: str | Path, io: FileIO | None = None) -> Table:
    """Open a table from what a user types (docs/ARCHITECTURE.md "Contracts").

    Accepts ``CATALOG::ns.table``, a table folder in the Hadoop layout, or a metadata.json path.
    """
    text = str(spec).strip()
    if TABLE_SEPARATOR in text:
        catalog_uri, name = text.rsplit(TABLE_SEPARATOR, 1)
        return load_catalog(catalog_uri, io=io).load_table(name)
    if text.endswith(".metadata.json"):
        static = StaticCatalog(text, io=io)
        return static.load_table(static.identifier)
    reader = io or FileIO()
    folder = text.rstrip("/")
    if "://" not in folder and not folder.startswith("file:"):
        folder = str(Path(folder).absolute())  # a relative folder still has a warehouse above
    if not reader.exists(f"{folder}/metadata"):
        raise NotFound(
            f"{text} is not a table: give CATALOG::namespace.table, a table folder with a "
            "metadata/ folder, or a metadata.json path."
        )
    parts = folder.split("/")
    identifier = TableIdentifier(
        (parts[-2] if len(parts) > 1 and parts[-2] else "default",), parts[-1]
    )
    root = "/".join(parts[:-2])
    # The folder's grandparent, as a filesystem warehouse, holds the table as ns/name: that
    # catalog can commit to it (it resolves and swaps versions in exactly this folder).
    catalog = FilesystemCatalog(root, io=reader) if len(parts) > 2 and root else None
    try:
        if catalog is not None and catalog.table_location(identifier) != folder:
            catalog = None
    except ValidationError:  # folder names no catalog would use: read the table on its own
        catalog = None
    return load_table_at(identifier, current_metadata_file(reader, folder), reader, catalog)
