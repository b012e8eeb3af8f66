"""Static catalog: one table given by the path of a metadata.json (read-only by nature)."""

from __future__ import annotations

from icecore.catalog.base import CatalogBase, TableIdentifier
from icecore.errors import NotFound
from icecore.io import FileIO, shown


class StaticCatalog(CatalogBase):
    """A catalog of exactly one table, named ``static.<table folder>``.

    Args:
        metadata_location: path of a ``*.metadata.json`` file.
        io: the FileIO to read it with.
    """

    kind = "static"
    can_commit = False

    def __init__(self, metadata_location: str, io: FileIO | None = None) -> None:
        self.io = io or FileIO()
        if not self.io.exists(metadata_location):
            raise NotFound(f"Metadata file {shown(metadata_location)} does not exist.")
        self._location = metadata_location
        parts = metadata_location.rstrip("/").split("/")
        # .../<table>/metadata/vN.metadata.json: name the table after its folder.
        name = parts[-3] if len(parts) >= 3 and parts[-2] == "metadata" else "table"
        self.identifier = TableIdentifier(("static",), name)

    @property
    def uri(self) -> str:
        """The metadata.json path."""
        return self._location

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """The one namespace, ``static``."""
        return [self.identifier.namespace]

    def list_tables(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """The one table."""
        if namespace in (None, self.identifier.namespace):
            return [self.identifier]
        return []

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """The given metadata.json (for the one table this catalog has)."""
        if identifier not in (self.identifier, TableIdentifier((), self.identifier.name)):
            raise NotFound(f"Table {identifier} is not the one table of {self._location}.")
        return self._location
