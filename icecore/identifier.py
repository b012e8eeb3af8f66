r"""Table identifiers (``ns.table``, ``a.b.table``) and the one rule for new names.

Every catalog that creates names (a warehouse folder, SQLite, PostgreSQL, and the REST
server through them) checks a new namespace or table name here, at create, rename, register
and namespace create. The rule is the warehouse folder's, because a name there becomes a
folder, and a SQL catalog's default table location is a folder named the same way:

- a level (one namespace part, or a table name) is a letter, digit or ``_`` of any script
  (Python's ``\w``: precomposed letters such as ``é`` are letters, a combining accent alone
  is not), then letters, digits, ``_``, ``$`` and ``-``: never empty, no ``.`` (so no ``..``,
  no hidden folder, no clash with dotted identifiers), no ``/`` or ``\``, no NUL or other
  control character (so not the REST path's ``\x1f`` level separator), no space;
- a level is at most :data:`MAX_NAME_BYTES` bytes in UTF-8 (a folder name's limit on ext4,
  XFS and APFS), and a namespace's levels joined by dots are at most that too (the
  ``VARCHAR(255)`` of JdbcCatalog's ``table_namespace`` column);
- a namespace has at most :data:`MAX_NAMESPACE_LEVELS` levels (a warehouse folder finds
  tables no deeper);
- a new name must not differ only by case (or Unicode compatibility form) from a name beside
  it: Spark resolves names case-insensitively by default, so ``TRIPS`` beside ``trips`` is
  ambiguous, and on a case-insensitive file system they are one folder.

Names already in a catalog are read as they are: the rule refuses new names only. A new
table's namespace must pass it too (its levels become folders of the table's location).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from icecore.errors import NotFound, ValidationError

MAX_NAME_BYTES = 255
"""Longest name level (and dot-joined namespace), in UTF-8 bytes."""

MAX_NAMESPACE_LEVELS = 7
"""Most levels a new namespace may have (a warehouse folder looks 8 folders deep for tables)."""

_NAME = re.compile(r"\w[\w$-]*")
"""The characters of one level (an allow-list; the length is checked in bytes apart)."""


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


def _shown(name: object) -> str:
    return repr(name)[:80] if isinstance(name, str) else type(name).__name__


def check_name(name: str, what: str = "name") -> str:
    """``name`` if it is a valid level (see the module docstring); else :class:`ValidationError`.

    Also what keeps a warehouse folder's paths inside the warehouse: a level passing it is
    one folder name.
    """
    if (
        not isinstance(name, str)
        or _NAME.fullmatch(name) is None
        or len(name.encode("utf-8")) > MAX_NAME_BYTES
    ):
        raise ValidationError(
            f"Invalid {what} {_shown(name)}: use letters, digits, '_', '-' and '$' only, "
            f"starting with a letter, digit or '_' (no '/', '.', spaces or control characters; "
            f"at most {MAX_NAME_BYTES} bytes)."
        )
    return name


def check_new_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """``namespace`` if a catalog may create it; else :class:`ValidationError` (one sentence)."""
    if not namespace:
        raise ValidationError("A namespace needs at least one level.")
    if len(namespace) > MAX_NAMESPACE_LEVELS:
        raise ValidationError(
            f"Invalid namespace {_shown('.'.join(namespace))}: it has {len(namespace)} levels; "
            f"at most {MAX_NAMESPACE_LEVELS} are allowed."
        )
    for level in namespace:
        check_name(level, "namespace level")
    if len(".".join(namespace).encode("utf-8")) > MAX_NAME_BYTES:
        raise ValidationError(
            f"Invalid namespace {_shown('.'.join(namespace))}: its levels joined by dots are "
            f"longer than {MAX_NAME_BYTES} bytes."
        )
    return namespace


def check_new_identifier(identifier: TableIdentifier) -> TableIdentifier:
    """``identifier`` if a catalog may create (or rename, register) a table of that name."""
    check_new_namespace(identifier.namespace)
    check_name(identifier.name, "table name")
    return identifier


def name_key(name: str) -> str:
    """What two names share when they differ only by case or Unicode compatibility form."""
    return unicodedata.normalize("NFKC", name).casefold()


def check_no_case_twin(name: str, existing: Iterable[str], what: str) -> None:
    """Refuse ``name`` if a different name in ``existing`` has the same :func:`name_key`.

    ``existing`` are the names beside it (in the same namespace or parent); the same name
    itself is no twin (creating it again is the caller's "already exists").

    Raises:
        ValidationError: one sentence naming the name it would be confused with.
    """
    key = name_key(name)
    for other in existing:
        if other != name and name_key(other) == key:
            raise ValidationError(
                f"Cannot create {what} {_shown(name)}: {other!r} exists beside it and differs "
                "only by case, which engines such as Spark do not tell apart; use "
                f"{other!r} or another name."
            )


__all__ = [
    "MAX_NAMESPACE_LEVELS",
    "MAX_NAME_BYTES",
    "TableIdentifier",
    "check_name",
    "check_new_identifier",
    "check_new_namespace",
    "check_no_case_twin",
    "name_key",
]
