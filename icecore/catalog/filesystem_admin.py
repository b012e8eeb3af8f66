"""Namespace and table management on a filesystem warehouse, as Iceberg's HadoopCatalog does it.

In the Hadoop layout the folders are the catalog: a namespace is a folder that is not a
table, a table is a folder holding ``metadata/v<N>.metadata.json`` (spec, "File System
Tables"). What HadoopCatalog (Iceberg Java) refuses is refused here too, with one sentence:

- namespace properties: HadoopCatalog keeps none (``createNamespace`` with properties fails,
  ``setProperties`` is unsupported); loading a namespace gives its ``location``;
- a table anywhere but at its path (``<warehouse>/<ns...>/<table>``): its metadata holds
  absolute locations, so a custom location, a rename, or registering a metadata file
  written for another place would leave a table whose files are elsewhere.

Creating a table writes ``v1.metadata.json`` by exclusive create, so of two creators exactly
one wins, then ``version-hint.text``. Dropping a table moves its version files and hint into
a ``metadata/dropped-...`` folder: the table is gone from the catalog (a folder without
version files is no table) and no file is deleted; purging its files is the caller's next
step (:mod:`icecore.server.purge`). Registering a file moved aside moves its versions back.

Spark's ``DROP TABLE ... PURGE`` through REST does not ask the server to purge: Iceberg's
SparkCatalog (1.10) drops without purge and then deletes what the old metadata file reaches,
only if that file still exists. Here it has moved, so Spark deletes nothing and the table's
files stay (HadoopCatalog itself deletes the whole folder on every drop). Purge through the
REST call instead (``purgeRequested=true``; PyIceberg's ``purge_table``).
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid

from icecore.catalog.base import TableIdentifier
from icecore.catalog.filesystem import (
    _VERSION_FILE,
    HINT_FILE,
    MAX_DEPTH,
    FilesystemCatalog,
    _version_paths,
    _versions,
)
from icecore.errors import (
    AlreadyExists,
    CommitStateUnknown,
    NamespaceNotEmpty,
    NotFound,
    Unsupported,
    ValidationError,
)
from icecore.identifier import (
    check_new_identifier,
    check_new_namespace,
    check_no_case_twin,
)
from icecore.io import MAX_METADATA_BYTES, normalize_path
from icecore.metadata import TableMetadata, parse_metadata
from icecore.metadata.builder import is_gzip

_NEW_NAMES = threading.Lock()
"""Held from a new name's case-twin check to its folder's creation: without it, two requests
of one server creating ``TRIPS`` and ``trips`` at once both find no twin and both create.
One process only; another process writing the same warehouse is not held back."""

DROPPED_PREFIX = "dropped-"
"""A dropped table's metadata files go to ``metadata/dropped-<UTC time>-<id>/``."""

SPARK_OWNER = "owner"
"""The one property Spark puts on every new namespace; Iceberg's SparkCatalog leaves it out
when the catalog is a HadoopCatalog (its ``DEFAULT_NS_KEYS``), and so does this one."""

MOVE_ROUNDS = 5
"""Times a drop lists ``metadata/`` again for versions committed while it moved files."""


def _dot(parts: tuple[str, ...]) -> str:
    return ".".join(parts)


def _same_place(a: str, b: str) -> bool:
    return normalize_path(a.rstrip("/")) == normalize_path(b.rstrip("/"))


class FilesystemCatalogAdmin:
    """The management side of a :class:`FilesystemCatalog` (the interface ``Backend`` uses).

    Args:
        catalog: the warehouse to manage.
    """

    def __init__(self, catalog: FilesystemCatalog) -> None:
        self.catalog = catalog
        self.io = catalog.io

    # Namespaces ----------------------------------------------------------------------------

    def _is_table(self, path: str) -> bool:
        """A folder whose ``metadata/`` holds a version file or a hint (HadoopCatalog's test)."""
        try:
            listing = self.io.ls(f"{path}/metadata")
        except NotFound:
            return False
        return bool(_versions(listing)) or any(
            e.path.rsplit("/", 1)[-1] == HINT_FILE for e in listing
        )

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        """A folder that is neither a table nor inside one (HadoopCatalog's ``isNamespace``)."""
        path = self.catalog.namespace_location(namespace)
        if not self.io.exists(path) or not self.io.info(path).is_dir:
            return False
        levels = [namespace[:i] for i in range(1, len(namespace) + 1)]
        return not any(self._is_table(self.catalog.namespace_location(ns)) for ns in levels)

    def all_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace folder below the warehouse (not descending into tables)."""
        found: list[tuple[str, ...]] = []
        pending: list[tuple[str, tuple[str, ...]]] = [(self.catalog.root, ())]
        while pending:
            path, parts = pending.pop()
            if len(parts) >= MAX_DEPTH:
                continue
            for entry in self.io.ls(path):
                name = entry.path.rsplit("/", 1)[-1]
                if not entry.is_dir or name.startswith("."):
                    continue
                if self._is_table(entry.path):
                    continue
                found.append((*parts, name))
                pending.append((entry.path, (*parts, name)))
        return sorted(found)

    def namespace_properties(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """HadoopCatalog's only namespace property: its ``location``.

        Raises:
            NotFound: no such namespace.
        """
        if not self.namespace_exists(namespace):
            raise NotFound(f"Namespace {_dot(namespace)} does not exist.")
        return {"location": self.catalog.namespace_location(namespace)}

    def create_namespace(self, namespace: tuple[str, ...], properties: dict[str, str]) -> None:
        """Create the namespace's folder (and its parents), as HadoopCatalog does.

        Properties are refused, except Spark's automatic ``owner`` alone, which is dropped.

        Raises:
            ValidationError: properties were given, or a level is a table.
            AlreadyExists: the namespace exists.
        """
        path = self.catalog.namespace_location(check_new_namespace(namespace))
        if set(properties) == {SPARK_OWNER}:
            properties = {}  # Spark adds it on its own; its SparkCatalog drops it, as here
        if properties:
            raise ValidationError(
                f"Cannot create namespace {_dot(namespace)} with properties: a filesystem "
                "warehouse (Iceberg's HadoopCatalog layout) keeps none; create it without them."
            )
        if self.namespace_exists(namespace):
            raise AlreadyExists(f"Namespace {_dot(namespace)} already exists.")
        for i in range(1, len(namespace) + 1):
            if self._is_table(self.catalog.namespace_location(namespace[:i])):
                raise ValidationError(
                    f"Cannot create namespace {_dot(namespace)}: {_dot(namespace[:i])} is a "
                    "table, and a namespace cannot live inside a table."
                )
        with _NEW_NAMES:
            for i in range(len(namespace)):
                self._check_no_twin(namespace[:i], namespace[i], "namespace level")
            self.io.makedirs(path)

    def _folders(self, namespace: tuple[str, ...]) -> list[str]:
        """The folder names directly in ``namespace`` (the warehouse for ``()``), if it exists."""
        path = self.catalog.namespace_location(namespace) if namespace else self.catalog.root
        try:
            return [e.path.rsplit("/", 1)[-1] for e in self.io.ls(path) if e.is_dir]
        except NotFound:
            return []

    def _check_no_twin(self, namespace: tuple[str, ...], name: str, what: str) -> None:
        """Refuse a new folder ``name`` in ``namespace`` beside one differing only by case.

        Tables and namespaces are both folders there, and one folder on a case-insensitive
        file system, so a new name is compared with every folder beside it.
        """
        check_no_case_twin(name, self._folders(namespace), what)

    def update_namespace_properties(
        self, namespace: tuple[str, ...], updates: dict[str, str], removals: list[str]
    ) -> tuple[list[str], list[str], list[str]]:
        """Refused, as HadoopCatalog refuses ``setProperties`` and ``removeProperties``."""
        raise Unsupported(
            f"Cannot change the properties of namespace {_dot(namespace)}: a filesystem "
            "warehouse (Iceberg's HadoopCatalog layout) keeps no namespace properties."
        )

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Remove an empty namespace folder.

        Raises:
            NotFound: no such namespace.
            NamespaceNotEmpty: its folder holds anything (tables, namespaces or other files).
        """
        if not self.namespace_exists(namespace):
            raise NotFound(f"Namespace {_dot(namespace)} does not exist.")
        path = self.catalog.namespace_location(namespace)
        if self.io.ls(path) or not self.io.remove_empty_dir(path):
            raise NamespaceNotEmpty(
                f"Namespace {_dot(namespace)} is not empty: its folder {path} holds tables, "
                "namespaces or other files; drop or move them first."
            )

    # Tables --------------------------------------------------------------------------------

    def default_table_location(self, identifier: TableIdentifier) -> str:
        """The only place a table can live: ``<warehouse>/<ns...>/<table>``."""
        return self.catalog.table_location(identifier)

    def _check_location(self, identifier: TableIdentifier, location: str, what: str) -> str:
        expected = self.catalog.table_location(identifier)
        if not _same_place(location, expected):
            raise ValidationError(
                f"Cannot {what} {identifier} at {location[:300]}: a filesystem warehouse keeps it "
                f"at {expected} (its metadata holds absolute locations), so leave the location "
                "unset or use that one."
            )
        return expected

    def _check_absent(self, identifier: TableIdentifier, table_dir: str) -> None:
        if self._is_table(table_dir):
            raise AlreadyExists(f"Table {identifier} already exists.")
        if identifier in self.catalog.list_views(identifier.namespace):  # one name, one kind
            raise AlreadyExists(f"View {identifier} already exists.")

    def _write_first_version(
        self, identifier: TableIdentifier, table_dir: str, payload: bytes, gzip: bool
    ) -> str:
        """``v1`` by exclusive create (one creator wins), then the version hint."""
        metadata_dir = f"{table_dir}/metadata"
        target, other = _version_paths(metadata_dir, 1, gzip)
        self.io.makedirs(metadata_dir)
        if self.io.exists(other) or not self.io.create_exclusive(target, payload):
            raise AlreadyExists(f"Table {identifier} already exists.")
        self.io.write(f"{metadata_dir}/{HINT_FILE}", b"1")
        return target

    def create_table(
        self, identifier: TableIdentifier, metadata: TableMetadata, payload: bytes
    ) -> str:
        """Write ``metadata/v1.metadata.json`` and the hint; returns the file's location.

        Raises:
            NotFound: the namespace does not exist.
            ValidationError: the metadata's location is not the table's folder.
            AlreadyExists: the table exists (or another creator won the race).
        """
        check_new_identifier(identifier)
        if not self.namespace_exists(identifier.namespace):
            raise NotFound(f"Namespace {_dot(identifier.namespace)} does not exist.")
        table_dir = self._check_location(identifier, metadata.location, "create table")
        self._check_absent(identifier, table_dir)
        with _NEW_NAMES:
            self._check_no_twin(identifier.namespace, identifier.name, "table")
            return self._write_first_version(identifier, table_dir, payload, is_gzip(metadata))

    def register_table(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Copy an existing metadata file in as the table's ``v1`` (HadoopCatalog's register).

        Only a metadata file whose ``location`` is this table's folder can be registered: the
        table's files are found through that location. A file a drop moved aside is moved
        back with the versions before it instead (:meth:`_restore`).

        Raises:
            NotFound: the namespace or the file does not exist.
            ValidationError: the file's ``location`` is not the table's folder.
            AlreadyExists: the table exists.
        """
        check_new_identifier(identifier)
        if not self.namespace_exists(identifier.namespace):
            raise NotFound(f"Namespace {_dot(identifier.namespace)} does not exist.")
        # One read: the bytes parsed are the bytes copied in as v1.
        payload = self.io.read(metadata_location, limit=MAX_METADATA_BYTES)
        metadata = parse_metadata(payload, location=metadata_location)
        table_dir = self._check_location(identifier, metadata.location, "register table")
        self._check_absent(identifier, table_dir)
        with _NEW_NAMES:
            self._check_no_twin(identifier.namespace, identifier.name, "table")
            if self._restore(table_dir, metadata_location):
                return
            self._write_first_version(identifier, table_dir, payload, payload[:2] == b"\x1f\x8b")

    def _restore(self, table_dir: str, metadata_location: str) -> bool:
        """Undo a drop: move the versions up to the one registered back into ``metadata/``.

        Only for a file that :meth:`drop_table` moved aside; the table then has its history
        again under the same names, so its metadata log stays true. The newest goes first,
        so the table reappears at that version at once.
        """
        metadata_dir = f"{table_dir}/metadata"
        folder, name = metadata_location.rsplit("/", 1)
        parent, aside = folder.rsplit("/", 1)
        match = _VERSION_FILE.match(name)
        if match is None or not aside.startswith(DROPPED_PREFIX):
            return False
        if not _same_place(parent, metadata_dir):
            return False
        version = int(match.group(1))
        listing = self.io.ls(folder)
        names = {e.path.rsplit("/", 1)[-1] for e in listing if not e.is_dir}
        for found, path in sorted(_versions(listing).items(), reverse=True):
            if found > version:
                continue
            base = path.rsplit("/", 1)[-1]
            self.io.move(path, f"{metadata_dir}/{base}")
            if f".{base}.crc" in names:
                self.io.move(f"{folder}/.{base}.crc", f"{metadata_dir}/.{base}.crc")
        self.io.write(f"{metadata_dir}/{HINT_FILE}", str(version).encode())
        self.io.delete(f"{folder}/{HINT_FILE}")
        self.io.delete(f"{folder}/.{HINT_FILE}.crc")
        self.io.remove_empty_dir(folder)
        return True

    def drop_table(self, identifier: TableIdentifier) -> str:
        """Move the table's metadata files aside; returns its current file's new location.

        The ``v<N>.metadata.json`` files and the hint go to ``metadata/dropped-<time>-<id>/``:
        with none left in ``metadata/`` the folder is no table, for Icecore as for
        HadoopCatalog. Nothing is deleted and manifests, manifest lists and data files stay
        where the metadata says they are, so the moved current file can be registered again.

        Raises:
            NotFound: no such table.
        """
        current = self.catalog.metadata_location(identifier)
        metadata_dir = f"{self.catalog.table_location(identifier)}/metadata"
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = f"{metadata_dir}/{DROPPED_PREFIX}{stamp}-{uuid.uuid4().hex[:8]}"
        self.io.makedirs(aside)
        for _ in range(MOVE_ROUNDS):  # a commit racing the drop leaves one more version
            listing = self.io.ls(metadata_dir)
            names = [e.path.rsplit("/", 1)[-1] for e in listing if not e.is_dir]
            hints = [n for n in names if n == HINT_FILE]
            versions = sorted(_versions(listing).items())
            if not versions and not hints:
                break
            for name in [*hints, *(path.rsplit("/", 1)[-1] for _, path in versions)]:
                self.io.move(f"{metadata_dir}/{name}", f"{aside}/{name}")
                if f".{name}.crc" in names:  # Hadoop's checksum of that file goes with it
                    self.io.move(f"{metadata_dir}/.{name}.crc", f"{aside}/.{name}.crc")
        else:
            raise CommitStateUnknown(
                f"Table {identifier} kept getting new versions while it was dropped; some of "
                f"its metadata files are in {aside}: look before using the table again."
            )
        return f"{aside}/{current.rsplit('/', 1)[-1]}"

    def rename_table(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Refused, as HadoopCatalog refuses it."""
        raise Unsupported(
            f"Cannot rename {source} to {destination}: a filesystem warehouse keeps each table "
            "at its path and its metadata holds absolute file locations, so tables there "
            "cannot be renamed (Iceberg's HadoopCatalog refuses it too)."
        )


__all__ = ["DROPPED_PREFIX", "FilesystemCatalogAdmin"]
