"""What every catalog offers: table identifiers and the read-side Catalog protocol.

A catalog maps ``namespace.table`` names to the location of the table's current
metadata.json; everything else about a table is read from that file (spec: "Overview",
"Metastore Tables" and "File System Tables").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from icecore.errors import NotFound


@dataclass(frozen=True, slots=True, order=True)
class TableIdentifier:
    """A table's name in its catalog: a namespace path and a table name."""

    namespace: tuple[str, ...]
    name: str

    @classmethod
    def parse(cls, text: str) -> TableIdentifier:
        """Parse ``ns.table`` or ``ns1.ns2.table`` (the last part is the table name)."""
        parts = text.strip().split(".")
        if len(parts) < 2 or any(not p for p in parts):
            raise NotFound(
                f"Table name {text!r} is not of the form namespace.table (for example demo.trips)."
            )
        return cls(namespace=tuple(parts[:-1]), name=parts[-1])

    def __str__(self) -> str:
        return ".".join((*self.namespace, self.name))


class Catalog(Protocol):
    """Read-side view of a catalog (commits are added by the evolution layer)."""

    @property
    def uri(self) -> str:
        """The string ``load_catalog`` accepts to open this catalog again."""
        ...

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace that holds a table or was created explicitly."""
        ...

    def list_tables(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Tables in ``namespace``, or in every namespace when it is ``None``; sorted."""
        ...

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """Location of the table's current metadata.json; :class:`NotFound` if no such table."""
        ...
