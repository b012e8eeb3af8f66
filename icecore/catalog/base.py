"""What every catalog offers: table identifiers and the read-side Catalog protocol.

A catalog maps ``namespace.table`` names to the location of the table's current
metadata.json; everything else about a table is read from that file (spec: "Overview",
"Metastore Tables" and "File System Tables").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from icecore.access import FULL_ACCESS, Access
from icecore.errors import Unsupported
from icecore.identifier import TableIdentifier
from icecore.io import FileIO
from icecore.metadata import TableMetadata
from icecore.table import Table, load_table_at
from icecore.table_data import TableSource

if TYPE_CHECKING:
    from icecore.catalog.views import View, ViewStore

__all__ = ["Catalog", "CatalogBase", "TableIdentifier"]


class Catalog(TableSource, Protocol):
    """A catalog: names to current metadata files, and the swap that commits a new one.

    ``list_tables``, ``metadata_location``, ``commit_metadata``, ``can_commit`` and
    ``hadoop_layout`` are :class:`TableSource`'s.
    What the server, the app and the pipeline need to know about a catalog is asked here,
    never found by ``isinstance``: a new catalog type answers these and is served, shown
    and maintained like the others (:mod:`icecore.catalog.registry`).
    """

    @property
    def io(self) -> FileIO:
        """The FileIO its tables' files are read with."""
        ...

    @property
    def kind(self) -> str:
        """Its type in :data:`icecore.catalog.registry.CATALOG_TYPES` (``sql``, ``rest``, ...)."""
        ...

    @property
    def loads_whole_tables(self) -> bool:
        """Whether a table's metadata location costs loading the whole table.

        True for a REST catalog: ``loadTable`` returns the metadata with its location and
        credentials vended for that table's FileIO, so callers keep the loaded table rather
        than ask for the location and read the file again.
        """
        ...

    @property
    def warehouse_root(self) -> str | None:
        """The folder its tables live in by default (absolute when local), if it has one."""
        ...

    def iceberg_catalog(self) -> tuple[str | None, dict[str, str]]:
        """How Iceberg Java opens this catalog: (the name it must have, catalog properties).

        The properties are Iceberg's catalog properties (``type``, ``uri``, ``warehouse``,
        ``jdbc.*``, ``credential``, ...), secrets included: hand them to an engine, never
        print them. The name is None when any name will do (a JdbcCatalog's name is the
        ``catalog_name`` its rows carry). Empty properties: Iceberg Java cannot open it.
        """
        ...

    @property
    def uri(self) -> str:
        """The string ``load_catalog`` accepts to open this catalog again."""
        ...

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace that holds a table or was created explicitly."""
        ...

    def load_table(self, identifier: str | TableIdentifier) -> Table:
        """The table's current version."""
        ...

    def list_views(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """The views of ``namespace`` (every namespace when None); none where it keeps none."""
        ...

    def load_view(self, identifier: str | TableIdentifier) -> View:
        """The view's current metadata (:mod:`icecore.catalog.views`)."""
        ...


class CatalogBase:
    """What every catalog shares: loading a table from its current metadata location.

    Subclasses set ``io`` and implement ``metadata_location``.
    """

    io: FileIO
    kind: str = ""
    can_commit: bool = True
    hadoop_layout: bool = False
    loads_whole_tables: bool = False
    config_name: str | None = None
    """The configured name it was opened by, when :attr:`uri` gives that name back."""

    @property
    def warehouse_root(self) -> str | None:
        """No folder of its own unless a subclass says so."""
        return None

    def iceberg_catalog(self) -> tuple[str | None, dict[str, str]]:
        """Not openable by Iceberg Java unless a subclass says how."""
        return None, {}

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """Location of the table's current metadata.json."""
        raise NotImplementedError

    def access(self, identifier: TableIdentifier) -> Access:
        """Everything: a catalog opened without a principal is the caller's own."""
        return FULL_ACCESS

    def load_table(self, identifier: str | TableIdentifier) -> Table:
        """Read the table's current metadata through this catalog's FileIO."""
        ident = (
            identifier
            if isinstance(identifier, TableIdentifier)
            else (TableIdentifier.parse(identifier))
        )
        location = self.metadata_location(ident)
        return load_table_at(ident, location, self.io, catalog=self)  # type: ignore[arg-type]

    def view_store(self) -> ViewStore | None:
        """Where this catalog keeps views (:mod:`icecore.catalog.views`); None: it keeps none."""
        return None

    def list_views(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """The views of ``namespace`` (every namespace when None); none where it keeps none."""
        store = self.view_store()
        return [] if store is None else store.list_views(namespace)

    def load_view(self, identifier: str | TableIdentifier) -> View:
        """The view's current metadata, read through this catalog's FileIO.

        Raises:
            NotFound: no such view (or this catalog keeps no views).
        """
        from icecore.catalog.views import load_view
        from icecore.errors import NotFound

        ident = (
            identifier
            if isinstance(identifier, TableIdentifier)
            else (TableIdentifier.parse(identifier))
        )
        store = self.view_store()
        if store is None:
            raise NotFound(f"View {ident} does not exist: {type(self).__name__} keeps no views.")
        return load_view(store, ident)

    def commit_metadata(
        self,
        identifier: TableIdentifier,
        base_location: str,
        metadata: TableMetadata,
        payload: bytes,
    ) -> str:
        """Refused: this catalog has no pointer to swap (see :meth:`Catalog.commit_metadata`)."""
        raise Unsupported(
            f"{type(self).__name__} cannot commit: {identifier} is a bare metadata file; open "
            "the table through its catalog or its table folder to change it."
        )
