"""What the server needs of the backing catalog beyond reading and committing.

Reading tables and committing them is the :class:`icecore.catalog.base.Catalog` protocol.
Namespaces and creating, dropping, renaming and registering tables are catalog-specific:
:class:`CatalogAdmin` is that interface, which a catalog type names in its registry line
(:data:`icecore.catalog.registry.CATALOG_TYPES`): the SQL catalogs (SQLite, PostgreSQL) have
:class:`icecore.catalog.sql.SqlCatalogAdmin` and a filesystem warehouse
:class:`icecore.catalog.filesystem_admin.FilesystemCatalogAdmin`. Other catalogs are served
read-and-commit only, and these calls answer ``Unsupported`` (400) there.

Dropping with purge (any admin) deletes the table's files after its catalog entry is gone
(:mod:`icecore.server.purge`).
"""

from __future__ import annotations

import logging
from typing import Protocol, cast

from icecore.catalog import registry
from icecore.catalog.base import Catalog, TableIdentifier
from icecore.errors import IcecoreError, NotFound, Unsupported
from icecore.io import FileIO
from icecore.metadata import TableMetadata
from icecore.server.errors import RestError
from icecore.server.locations import PATH_PROPERTIES, ServedLocations
from icecore.server.purge import PurgeRefused, PurgeReport, plan_purge, purge_table, table_files
from icecore.table import load_table_at

log = logging.getLogger("icecore.server")


class CatalogAdmin(Protocol):
    """Namespace and table management of a served catalog (what ``Backend`` calls)."""

    def all_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace, parents of nested ones included."""
        ...

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        """Whether the namespace exists."""
        ...

    def namespace_properties(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The namespace's properties; NotFound if it does not exist."""
        ...

    def create_namespace(self, namespace: tuple[str, ...], properties: dict[str, str]) -> None:
        """Create a namespace; AlreadyExists if it exists."""
        ...

    def update_namespace_properties(
        self, namespace: tuple[str, ...], updates: dict[str, str], removals: list[str]
    ) -> tuple[list[str], list[str], list[str]]:
        """Set and remove properties: (updated, removed, missing)."""
        ...

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Drop an empty namespace; NamespaceNotEmpty otherwise."""
        ...

    def default_table_location(self, identifier: TableIdentifier) -> str:
        """Where a new table goes when the request names no location."""
        ...

    def create_table(
        self, identifier: TableIdentifier, metadata: TableMetadata, payload: bytes
    ) -> str:
        """Write the first metadata file and add the table; returns its location."""
        ...

    def register_table(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Add a table for an existing metadata file."""
        ...

    def drop_table(self, identifier: TableIdentifier) -> str:
        """Remove the table from the catalog, deleting no file; returns its current file now."""
        ...

    def rename_table(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Rename a table."""
        ...


def admin_for(catalog: Catalog) -> CatalogAdmin | None:
    """The management side of ``catalog``, if its type registers one (``CatalogType.admin``)."""
    return cast("CatalogAdmin | None", registry.admin_for(catalog))


class Backend:
    """The served catalog and its management side.

    Args:
        catalog: the catalog to serve.
        locations: where its tables may live (a purge deletes nothing elsewhere).
    """

    def __init__(self, catalog: Catalog, locations: ServedLocations | None = None) -> None:
        self.catalog = catalog
        self.admin = admin_for(catalog)
        self.locations = locations or ServedLocations.for_catalog(catalog)

    @property
    def io(self) -> FileIO:
        """The FileIO the catalog reads its tables with."""
        return self.catalog.io

    def _need_admin(self, what: str) -> CatalogAdmin:
        if self.admin is None:
            raise Unsupported(
                f"This served catalog ({type(self.catalog).__name__}) cannot {what}; serve a "
                "SQL catalog (SQLite or PostgreSQL) or a warehouse folder to manage namespaces "
                "and tables."
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

    def drop_table(self, identifier: TableIdentifier, *, purge: bool = False) -> PurgeReport | None:
        """Remove a table from the catalog; with ``purge``, then delete its files.

        Without ``purge`` no file is deleted. With it, the purge is checked first
        (:func:`~icecore.server.purge.plan_purge`): one that would leave its bounds is
        refused with 403 and the table stays. The files purged are those of the metadata
        current at the drop, checked again; if a commit in between broke the bounds, the
        entry is gone and every file stays (logged).

        Returns:
            What the purge deleted and skipped (None without purge).
        """
        admin = self._need_admin("drop tables")
        if not purge:
            admin.drop_table(identifier)
            return None
        loaded = self.catalog.load_table(identifier)
        before = loaded.metadata_location
        others = self._other_locations(exclude=identifier)
        reached = table_files(loaded)
        try:
            plan_purge(
                loaded.metadata.location,
                reached[0],
                others,
                self.locations,
                self.locations.foreign_hadoop,
            )
        except PurgeRefused as e:
            raise RestError(
                403,
                "ForbiddenException",
                f"Cannot purge {identifier}: {e}; nothing was dropped or deleted (drop it "
                "without purge to keep its files).",
            ) from None
        now_at = admin.drop_table(identifier)
        # The metadata current when the entry went (a commit may have come in between).
        table = load_table_at(identifier, now_at, self.io)
        (old, name_before), (new, name_now) = before.rsplit("/", 1), now_at.rsplit("/", 1)
        try:
            report = purge_table(
                table,
                (old, new) if old != new else None,
                others,
                self.locations,
                self.locations.foreign_hadoop,
                # The same metadata file (moved aside, or where it was) reaches the same files:
                # its manifests are not walked twice. A commit in between is walked anew.
                reached if name_now == name_before else None,
            )
        except PurgeRefused as e:
            log.warning("Purge of %s refused after its drop; no file deleted: %s", identifier, e)
            return PurgeReport((), (), (str(e),))
        log.info(
            "Purged %s: %d files deleted, %d skipped, %d failed",
            identifier,
            len(report.deleted),
            len(report.skipped),
            len(report.failed),
        )
        for path in report.skipped:
            log.warning(
                "Purge of %s skipped %s: outside its location or inside another table's",
                identifier,
                path,
            )
        for problem in report.failed:
            log.warning("Purge of %s: %s", identifier, problem)
        return report

    def _other_locations(self, exclude: TableIdentifier | None = None) -> list[str]:
        """Where the catalog's other tables keep their files (a purge leaves them alone).

        Each table's metadata file's folder (``<location>/metadata``, as every writer lays
        it out, less ``/metadata``), and from its metadata its ``location`` and write paths
        (``write.data.path``, ...): a table whose metadata cannot be read protects the folder
        of its metadata file still. Purges are rare; reading every table's metadata is the
        price of never deleting another table's file.
        """
        found: list[str] = []
        for identifier in self.catalog.list_tables():
            if identifier == exclude:
                continue
            try:
                where = self.catalog.metadata_location(identifier)
            except IcecoreError:
                continue
            folder = where.rsplit("/", 1)[0]
            found.append(folder[: -len("/metadata")] if folder.endswith("/metadata") else folder)
            try:
                metadata = load_table_at(identifier, where, self.io).metadata
            except IcecoreError:
                continue
            found.append(metadata.location)
            found += [metadata.properties[k] for k in PATH_PROPERTIES if k in metadata.properties]
        return found

    def rename_table(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Rename a table."""
        self._need_admin("rename tables").rename_table(source, destination)


__all__ = ["Backend"]
