"""What the server needs of the backing catalog beyond reading and committing.

Reading tables and committing them is the :class:`icecore.catalog.base.Catalog` protocol.
Namespaces with properties and creating, dropping, renaming and registering tables are
catalog-specific: the SQL catalogs (SQLite, PostgreSQL) have them in
:class:`icecore.catalog.sql.SqlCatalogAdmin`; other catalogs are served read-and-commit
only, and these calls answer ``Unsupported`` (400) there.
"""

from __future__ import annotations

from icecore.catalog.base import Catalog, TableIdentifier
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin
from icecore.errors import NotFound, Unsupported
from icecore.io import FileIO
from icecore.metadata import TableMetadata


class Backend:
    """The served catalog and its management side.

    Args:
        catalog: the catalog to serve.
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.admin = SqlCatalogAdmin(catalog) if isinstance(catalog, SqlCatalog) else None

    @property
    def io(self) -> FileIO:
        """The FileIO the catalog reads its tables with."""
        io = getattr(self.catalog, "io", None)
        return io if isinstance(io, FileIO) else FileIO()

    def _need_admin(self, what: str) -> SqlCatalogAdmin:
        if self.admin is None:
            raise Unsupported(
                f"This served catalog ({type(self.catalog).__name__}) cannot {what}; serve a "
                "SQL catalog (SQLite or PostgreSQL) to manage namespaces and tables."
            )
        return self.admin

    def namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace, parents of nested ones included."""
        if self.admin is not None:
            return self.admin.all_namespaces()
        found: set[tuple[str, ...]] = set()
        for ns in self.catalog.list_namespaces():
            for i in range(1, len(ns) + 1):
                found.add(ns[:i])
        return sorted(found)

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        """Whether the namespace exists."""
        if self.admin is not None:
            return self.admin.namespace_exists(namespace)
        return namespace in self.namespaces()

    def namespace_properties(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The namespace's properties; NotFound if it does not exist."""
        if self.admin is not None:
            return self.admin.namespace_properties(namespace)
        if not self.namespace_exists(namespace):
            raise NotFound(f"Namespace {'.'.join(namespace)} does not exist.")
        return {}

    def create_namespace(self, namespace: tuple[str, ...], properties: dict[str, str]) -> None:
        """Create a namespace."""
        self._need_admin("create namespaces").create_namespace(namespace, properties)

    def update_properties(
        self, namespace: tuple[str, ...], updates: dict[str, str], removals: list[str]
    ) -> tuple[list[str], list[str], list[str]]:
        """Set and remove namespace properties: (updated, removed, missing)."""
        admin = self._need_admin("change namespace properties")
        return admin.update_namespace_properties(namespace, updates, removals)

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Drop an empty namespace."""
        self._need_admin("drop namespaces").drop_namespace(namespace)

    def default_location(self, identifier: TableIdentifier) -> str:
        """Where a new table goes when the request names no location."""
        return self._need_admin("create tables").default_table_location(identifier)

    def create_table(
        self, identifier: TableIdentifier, metadata: TableMetadata, payload: bytes
    ) -> str:
        """Write the first metadata file and add the table; returns its location."""
        return self._need_admin("create tables").create_table(identifier, metadata, payload)

    def register_table(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Add a table for an existing metadata file."""
        self._need_admin("register tables").register_table(identifier, metadata_location)

    def drop_table(self, identifier: TableIdentifier) -> str:
        """Remove a table from the catalog; returns its last metadata location."""
        return self._need_admin("drop tables").drop_table(identifier)

    def rename_table(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Rename a table."""
        self._need_admin("rename tables").rename_table(source, destination)


__all__ = ["Backend"]
