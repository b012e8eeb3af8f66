"""Where a served catalog's tables may live: the one place the server decides it.

The REST protocol lets a client name storage paths: a new table's ``location``
(``CreateTableRequest``), a ``set-location`` update, the table properties that steer writes
(``write.data.path``, ``write.metadata.path`` and their legacy names), the files a commit
adds (``add-snapshot``'s manifest list, ``set-statistics`` and
``set-partition-statistics`` paths) and ``register``'s ``metadata-location`` (REST catalog
OpenAPI spec, ``CreateTableRequest``, ``TableUpdate``, ``RegisterTableRequest``). The spec
leaves it to the server to accept them; this server accepts only paths strictly below the
locations it serves, which are:

- the backing catalog's warehouse: a warehouse folder's root, a SQLite catalog's folder
  (where its tables go by default);
- each extra prefix the operator names with ``serve-rest --allow-location PREFIX``.

Anything else is refused with 403 ``ForbiddenException`` and one sentence (every route
concerned lists 403 in the spec); a path that cannot be read as an absolute location at all
is a 400. Otherwise a writer could point a table at any file the server's user can reach and
have the server write metadata there, read it back, or delete it on purge
(:mod:`icecore.server.purge` keeps to the same bounds).

Paths are compared in one canonical spelling, so nothing escapes by spelling: ``file:``,
``file://`` and bare paths are one local path; ``//``, ``.`` and ``..`` are resolved; local
symlinks are resolved (:func:`os.path.realpath`), so a link inside the warehouse pointing out
leads out; a percent-encoded spelling must be inside both as written and decoded (readers
differ on whether they decode); ``/wh-evil`` is not below ``/wh``; ``s3a://``/``s3n://`` are
``s3://``. Object-store keys with empty (``//``), ``.`` or ``..`` segments, control characters
and fsspec chains (``::``) are refused outright (400).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from icecore.catalog import registry
from icecore.catalog.base import Catalog
from icecore.catalog.registry import CatalogSpec
from icecore.io import SCHEMES, normalize_path
from icecore.metadata import TableMetadata
from icecore.server.errors import RestError, bad_request

PATH_PROPERTIES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)
"""Table properties naming where engines (and, for metadata, this server) write files."""

HADOOP_HINT = "metadata/version-hint.text"
"""What makes a folder a Hadoop-layout table."""

NAMESPACE_LOCATION = "location"
"""The namespace property naming where its tables go by default (JdbcCatalog's)."""

ALLOWED_SCHEMES = frozenset(normalize_path(f"{scheme}://x")[0] for scheme in SCHEMES)
"""Schemes an ``--allow-location`` prefix may use, as :func:`normalize_path` names them: the
ones FileIO reads (:data:`icecore.io.SCHEMES`), so no served table can live where no read
reaches."""

_SLASHES = re.compile(r"/{2,}")
_SHOWN = 300
"""Characters of a client's path quoted back in a message."""


def _shown(path: str) -> str:
    return repr(path[:_SHOWN])


def _one_spelling(path: str) -> str:
    """``path`` in the canonical spelling (see the module docstring); 400 if unreadable."""
    protocol, rest = normalize_path(path)
    if protocol == "file":
        if not rest.startswith("/"):
            raise bad_request(f"The location {_shown(path)} is not an absolute path or URI.")
        return os.path.realpath(_SLASHES.sub("/", rest))
    # Object stores keep ``a//b`` and ``a/./b`` as keys of their own: refused, not resolved.
    key = rest.rstrip("/")
    if protocol == "memory":  # normalize_path gives fsspec's memory paths a leading "/"
        key = key[1:]
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") for p in parts):
        raise bad_request(f"The location {_shown(path)} is not a plain object-store path.")
    return f"{protocol}://{key}"


def spellings(path: str) -> frozenset[str]:
    """The canonical forms of ``path`` as written and percent-decoded (one when they agree).

    Raises:
        RestError: 400 when ``path`` is empty, holds control characters or an fsspec chain,
            or is not absolute.
    """
    if not isinstance(path, str) or not path:
        raise bad_request("A location must be a non-empty string.")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path) or "::" in path:
        raise bad_request(f"The location {_shown(path)} holds control characters or '::'.")
    decoded = unquote(path)
    if decoded == path:
        return frozenset({_one_spelling(path)})
    return frozenset({_one_spelling(path), _one_spelling(decoded)})


def canonical(path: str) -> str:
    """The one canonical spelling of ``path`` as written (for comparing file names)."""
    return _one_spelling(path)


def below(path: str, root: str, *, strict: bool = True) -> bool:
    """Whether canonical ``path`` lies below canonical ``root`` (or is it, unless ``strict``)."""
    if path == root:
        return not strict
    base = root if root.endswith("/") else root + "/"
    return path.startswith(base)


def served_roots(catalog: Catalog) -> list[str]:
    """Where the backing catalog keeps its tables: a warehouse folder, a SQLite file's folder.

    Catalogs with no folder of their own (PostgreSQL, REST) serve none: their tables need
    ``--allow-location``.
    """
    root = catalog.warehouse_root
    return [root] if root is not None else []


def served_catalog(catalog: Catalog) -> Catalog:
    """``catalog``, a warehouse folder given by a relative path opened by its absolute one.

    A table's location is absolute (every reader resolves it alone); a relative warehouse
    folder would give new tables relative locations, which the checks here refuse.
    """
    root = catalog.warehouse_root
    kind = registry.kind_of(catalog)
    if catalog.hadoop_layout and kind is not None and root is not None and root != catalog.uri:
        return kind.load(CatalogSpec(root, io=catalog.io))
    return catalog


def is_hadoop_table(folder: str) -> bool:
    """Whether local ``folder`` is a Hadoop-layout table (spec, "File System Tables").

    Such a folder is a warehouse-folder catalog's table, such as one of the demo's
    ``warehouse/hadoop`` inside its SQL warehouse.
    """
    return os.path.isfile(f"{folder}/{HADOOP_HINT}")


def check_allowed_prefix(prefix: str) -> str:
    """An ``--allow-location`` prefix as given; ValueError (one sentence) if unusable."""
    protocol, _ = normalize_path(prefix)
    if protocol not in ALLOWED_SCHEMES:
        raise ValueError(
            f"--allow-location {prefix[:_SHOWN]!r}: use a local folder or an object-store "
            f"prefix ({', '.join(sorted(ALLOWED_SCHEMES - {'file'}))})."
        )
    try:
        spellings(prefix)
    except RestError as e:
        raise ValueError(f"--allow-location {prefix[:_SHOWN]!r}: {e.message}") from None
    return prefix


@dataclass(frozen=True)
class ServedLocations:
    """The locations a server serves, and the checks every storage path passes.

    Args:
        roots: the served prefixes as configured (warehouse first, then the extra ones).
    """

    roots: tuple[str, ...]
    foreign_hadoop: bool = False
    """Hadoop-layout table folders below the roots belong to another catalog (the served one
    is not a warehouse folder): no table of this one is placed or purged in them."""

    @classmethod
    def for_catalog(cls, catalog: Catalog, extra: Sequence[str] = ()) -> ServedLocations:
        """The backing catalog's warehouse and the ``--allow-location`` prefixes."""
        return cls(
            (*served_roots(catalog), *(check_allowed_prefix(p) for p in extra)),
            foreign_hadoop=not catalog.hadoop_layout,
        )

    def hadoop_table_of(self, path: str, roots: Sequence[str] | None = None) -> str | None:
        """The Hadoop-layout table folder a local ``path`` is or lies in, below the roots."""
        roots = self._canonical_roots if roots is None else roots
        for folder in spellings(path):
            while folder.startswith("/") and any(below(folder, r) for r in roots):
                if is_hadoop_table(folder):
                    return folder
                folder = folder.rsplit("/", 1)[0] or "/"
        return None

    @property
    def _canonical_roots(self) -> list[str]:
        # Resolved per call: a local root's symlinks may change while the server runs.
        return [c for r in self.roots for c in spellings(r)]

    def contains(
        self, path: str, *, strict: bool = True, roots: Sequence[str] | None = None
    ) -> bool:
        """Whether every spelling of ``path`` lies below a served root (400 if unreadable).

        ``roots`` are the canonical roots when the caller resolved them already.
        """
        roots = self._canonical_roots if roots is None else roots
        return all(any(below(s, r, strict=strict) for r in roots) for s in spellings(path))

    def _served(self) -> str:
        if not self.roots:
            return "this server serves no warehouse folder; start it with --allow-location PREFIX"
        shown = ", ".join(r[:_SHOWN] for r in self.roots)
        return f"it serves only locations below {shown} (add others with --allow-location)"

    def require(
        self,
        path: Any,
        what: str,
        *,
        under: str | None = None,
        roots: Sequence[str] | None = None,
    ) -> None:
        """Refuse ``path`` (403) unless it is below a served root (and below ``under``).

        Args:
            path: the location or file a request names.
            what: what it is, for the message ("the table's location", ...).
            under: a further bound (a namespace's location for a new table).
            roots: the canonical roots, when resolved already (many paths in one request).
        """
        if not isinstance(path, str):
            raise bad_request(f"{what[:1].upper()}{what[1:]} must be a string.")
        if not self.contains(path, roots=roots):
            raise RestError(
                403,
                "ForbiddenException",
                f"The server refuses {what} {_shown(path)}: {self._served()}.",
            )
        if under is not None:
            bounds = spellings(under)
            if not all(any(below(s, b) for b in bounds) for s in spellings(path)):
                raise RestError(
                    403,
                    "ForbiddenException",
                    f"The server refuses {what} {_shown(path)}: a new table goes below its "
                    f"namespace's location {under[:_SHOWN]}.",
                )

    def require_namespace_properties(self, properties: Mapping[str, Any]) -> None:
        """Refuse (403) a namespace ``location`` outside the roots (it places new tables)."""
        if NAMESPACE_LOCATION in properties:
            self.require(properties[NAMESPACE_LOCATION], "the namespace location")

    def require_metadata(self, new: TableMetadata, base: TableMetadata | None = None) -> None:
        """Refuse (403) metadata that places or references storage outside the roots.

        What the server writes to (the location, the write paths) is checked whatever
        changed; the files referenced (manifest lists, inline v1 manifests, statistics and
        partition statistics files) only where new since ``base``, so a table whose history
        predates these checks can still be committed to.
        """
        roots = self._canonical_roots
        places = [(new.location, "the table's location")]
        places += [
            (new.properties[k], f"the table's {k}") for k in PATH_PROPERTIES if k in new.properties
        ]
        for path, what in places:
            self.require(path, what, roots=roots)
            hadoop = self.hadoop_table_of(path, roots) if self.foreign_hadoop else None
            if hadoop is not None:
                raise RestError(
                    403,
                    "ForbiddenException",
                    f"The server refuses {what} {_shown(path)}: it lies in {hadoop}, a table of "
                    "a warehouse-folder (Hadoop-layout) catalog, not of this one.",
                )
        for path, what in referenced_files(new, base):
            self.require(path, what, roots=roots)


def referenced_files(
    new: TableMetadata, base: TableMetadata | None = None
) -> Iterable[tuple[str, str]]:
    """Files ``new`` references that ``base`` does not: (path, what it is)."""
    old_snapshots = {s.snapshot_id for s in base.snapshots} if base is not None else set()
    old_stats: set[str] = set()
    if base is not None:
        old_stats.update(s.statistics_path for s in base.statistics)
        old_stats.update(s.statistics_path for s in base.partition_statistics)
    for snapshot in new.snapshots:
        if snapshot.snapshot_id in old_snapshots:
            continue
        if snapshot.manifest_list is not None:
            yield snapshot.manifest_list, f"snapshot {snapshot.snapshot_id}'s manifest list"
        for manifest in snapshot.manifests or ():
            yield manifest, f"snapshot {snapshot.snapshot_id}'s manifest"
    for stats in new.statistics:
        if stats.statistics_path not in old_stats:
            yield stats.statistics_path, "the statistics file"
    for part in new.partition_statistics:
        if part.statistics_path not in old_stats:
            yield part.statistics_path, "the partition statistics file"


__all__ = [
    "PATH_PROPERTIES",
    "ServedLocations",
    "below",
    "canonical",
    "check_allowed_prefix",
    "is_hadoop_table",
    "referenced_files",
    "served_catalog",
    "served_roots",
    "spellings",
]
