"""Table identifiers: a namespace path and a table name (``ns.table``, ``a.b.table``)."""

from __future__ import annotations

from dataclasses import dataclass

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
