"""What every catalog offers: table identifiers and the read-side Catalog protocol.

A catalog maps ``namespace.table`` names to the location of the table's current
metadata.json; everything else about a table is read from that file (spec: "Overview",
"Metastore Tables" and "File System Tables").
"""

from __future__ import annotations

from typing import Protocol

from icecore.errors import Unsupported
from icecore.identifier import TableIdentifier
from icecore.io import FileIO
from icecore.metadata import TableMetadata
from icecore.table import Table, load_table_at
from icecore.table_data import TableSource

__all__ = ["Catalog", "CatalogBase", "TableIdentifier"]


class Catalog(TableSource, Protocol):
    """A catalog: names to current metadata files, and the swap that commits a new one.

    ``list_tables``, ``metadata_location`` and ``commit_metadata`` are :class:`TableSource`'s.
    """

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


class CatalogBase:
    """What every catalog shares: loading a table from its current metadata location.

    Subclasses set ``io`` and implement ``metadata_location``.
    """

    io: FileIO

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """Location of the table's current metadata.json."""
        raise NotImplementedError

    def load_table(self, identifier: str | TableIdentifier) -> Table:
        """Read the table's current metadata through this catalog's FileIO."""
        ident = (
            identifier
            if isinstance(identifier, TableIdentifier)
            else (TableIdentifier.parse(identifier))
        )
        location = self.metadata_location(ident)
        return load_table_at(ident, location, self.io, catalog=self)  # type: ignore[arg-type]

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
