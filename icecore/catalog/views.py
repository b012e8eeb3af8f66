"""Views in Icecore's catalogs: where a view's metadata file is kept, and its guarded commit.

A view is swapped like a table (view spec "Overview"): the catalog maps ``ns.view`` to its
current view metadata file, and a commit writes the next file and compare-and-swaps that
pointer. Two layouts are kept here, each behind the same :class:`ViewStore` interface:

- SQL catalogs (SQLite, PostgreSQL): Iceberg Java's JdbcCatalog "V1" schema, one
  ``iceberg_tables`` row per view with ``iceberg_type = 'VIEW'`` (JdbcUtil,
  JdbcViewOperations), metadata files ``<location>/metadata/<NNNNN>-<uuid>.metadata.json``
  (``write.metadata.path`` overrides the folder), the swap an ``UPDATE ... WHERE
  metadata_location = <base> AND iceberg_type = 'VIEW'``. A catalog in the "V0" schema (no
  ``iceberg_type`` column) gets the column added when its first view is created, as
  JdbcCatalog does with ``jdbc.schema-version=V1``; JdbcCatalog then sees the column and
  reads views too. Tables and views share the primary key, so a name is one or the other.
- Warehouse folders (the Hadoop layout has no views; this layout is Icecore's): a view of
  ``ns`` lives in ``<warehouse>/<ns...>/.views/<view>/`` with ``metadata/v<N>.metadata.json``
  and ``metadata/version-hint.text`` as a table's, committed by exclusive create of
  ``v<N+1>``. The ``.views`` folder is hidden, so table and namespace listings (and
  Iceberg Java's HadoopCatalog) skip it; a namespace holding views is not empty.

:func:`commit_view_updates` is the commit both layouts share and the REST server runs: load,
check the ``assert-view-uuid`` requirement, apply the updates, swap; on a lost swap load
again and re-apply (as Iceberg Java's ``CatalogHandlers.updateView`` retries), so two
concurrent replaces both land, each a version, or the loser gets :class:`CommitConflict`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from icecore.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    NotFound,
    ValidationError,
)
from icecore.identifier import TableIdentifier, check_new_identifier, check_no_case_twin
from icecore.io import MAX_METADATA_BYTES, FileIO, normalize_path
from icecore.metadata.view import (
    ViewMetadata,
    ViewUpdate,
    apply_view_updates,
    parse_view_metadata,
    serialize_view_metadata,
)

if TYPE_CHECKING:
    from icecore.catalog.filesystem import FilesystemCatalog
    from icecore.catalog.sql import SqlCatalog

COMMIT_ATTEMPTS = 4
"""Times a view commit is tried against a freshly loaded base (Iceberg Java: 4 retries)."""

VIEWS_FOLDER = ".views"
"""The hidden folder of a namespace's views in a warehouse-folder catalog."""

WRITE_METADATA_PATH = "write.metadata.path"
"""View property: where new metadata files go (Iceberg's ``ViewProperties``)."""


@dataclass(frozen=True, slots=True)
class View:
    """A loaded view: its name, its current metadata file and what that file holds."""

    identifier: TableIdentifier
    metadata_location: str
    metadata: ViewMetadata


class ViewStore(Protocol):
    """Where a catalog keeps its views' pointers (one per layout, see the module docstring)."""

    io: FileIO

    def list_views(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Views of ``namespace`` (every namespace when None)."""
        ...

    def view_metadata_location(self, identifier: TableIdentifier) -> str:
        """The view's current metadata file; :class:`NotFound` when there is no such view."""
        ...

    def create_view(self, identifier: TableIdentifier, metadata: ViewMetadata) -> str:
        """Write the first metadata file and add the view; returns the file's location."""
        ...

    def commit_view(
        self, identifier: TableIdentifier, base_location: str, metadata: ViewMetadata
    ) -> str:
        """Write the next file and swap from ``base_location``; :class:`CommitConflict` if moved."""
        ...

    def drop_view(self, identifier: TableIdentifier) -> None:
        """Remove the view from the catalog (its files stay)."""
        ...

    def rename_view(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Give a view another name."""
        ...

    def register_view(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Add a view for an existing view metadata file."""
        ...


def read_view(io: FileIO, identifier: TableIdentifier, location: str) -> View:
    """The view whose current metadata file is ``location``."""
    payload = io.read(location, limit=MAX_METADATA_BYTES)
    return View(identifier, location, parse_view_metadata(payload, location))


def load_view(store: ViewStore, identifier: TableIdentifier) -> View:
    """The view as its catalog has it now."""
    return read_view(store.io, identifier, store.view_metadata_location(identifier))


def commit_view_updates(
    store: ViewStore,
    identifier: TableIdentifier,
    updates: Sequence[ViewUpdate],
    *,
    expected_uuid: str | None = None,
    attempts: int = COMMIT_ATTEMPTS,
) -> View:
    """Apply ``updates`` to the view's current metadata and swap it in, retrying lost swaps.

    The requirement (``assert-view-uuid``) is checked against every fresh load: a view
    dropped and created again under the name is another view, and is not changed.

    Raises:
        NotFound: no such view.
        CommitConflict: the uuid differs, or every attempt lost its swap.
        ValidationError: an update cannot apply.
    """
    last: CommitConflict | None = None
    for _ in range(max(1, attempts)):
        base = load_view(store, identifier)
        if expected_uuid is not None and base.metadata.view_uuid != expected_uuid:
            raise CommitConflict(
                f"view {identifier} has uuid {base.metadata.view_uuid}, not {expected_uuid}"
            )
        metadata = apply_view_updates(base.metadata, updates)
        try:
            location = store.commit_view(identifier, base.metadata_location, metadata)
        except CommitConflict as e:
            last = e
            continue
        return View(identifier, location, metadata)
    assert last is not None
    raise last


def _metadata_folder(metadata: ViewMetadata) -> str:
    folder = metadata.properties.get(WRITE_METADATA_PATH)
    return (folder or f"{metadata.location.rstrip('/')}/metadata").rstrip("/")


def _make_local_parent(location: str) -> None:
    protocol, local = normalize_path(location)
    if protocol == "file":  # object stores have no folders; a local one must exist
        Path(local).parent.mkdir(parents=True, exist_ok=True)


# SQL catalogs ----------------------------------------------------------------------------------

VIEW_TYPE = "VIEW"
ADD_TYPE_COLUMN_SQL = "ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5)"
"""JdbcUtil's ``V1_UPDATE_CATALOG_SQL``: the V0 schema made able to hold views."""


class SqlViews:
    """Views of a SQL catalog (SQLite or PostgreSQL), kept as JdbcCatalog keeps them."""

    def __init__(self, catalog: SqlCatalog) -> None:
        from icecore.catalog.sql import SqlCatalogAdmin

        self.catalog = catalog
        self.admin = SqlCatalogAdmin(catalog)
        self.io = catalog.io

    def _key(self, identifier: TableIdentifier) -> tuple[str, str, str]:
        return (self.catalog.catalog_name, ".".join(identifier.namespace), identifier.name)

    def _can_hold_views(self) -> bool:
        """Whether ``iceberg_type`` exists, asked again while it did not.

        Another writer (Spark's JdbcCatalog with ``jdbc.schema-version=V1``, another
        server) may add the column after this catalog was opened; from then on its table
        listings leave views out too.
        """
        if not self.catalog._has_type_column:
            self.catalog._has_type_column = "iceberg_type" in self.catalog._columns(
                "iceberg_tables"
            )
        return self.catalog._has_type_column

    def list_views(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Rows of ``iceberg_type`` VIEW (none in a V0 catalog, which cannot hold views)."""
        if not self._can_hold_views():
            return []
        sql = (
            "SELECT table_namespace, table_name FROM iceberg_tables WHERE catalog_name = ? "
            "AND iceberg_type = 'VIEW'"
        )
        params: tuple[object, ...] = (self.catalog.catalog_name,)
        if namespace is not None:
            sql += " AND table_namespace = ?"
            params += (".".join(namespace),)
        rows = self.catalog._query(sql, params)
        return sorted(TableIdentifier(tuple(str(ns).split(".")), str(name)) for ns, name in rows)

    def view_metadata_location(self, identifier: TableIdentifier) -> str:
        """The view row's ``metadata_location``."""
        rows = (
            self.catalog._query(
                "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? "
                "AND table_namespace = ? AND table_name = ? AND iceberg_type = 'VIEW'",
                self._key(identifier),
            )
            if self._can_hold_views()
            else []
        )
        if not rows or rows[0][0] is None:
            raise NotFound(f"View {identifier} does not exist in SQL catalog {self.catalog.where}.")
        return str(rows[0][0])

    def _ensure_type_column(self) -> None:
        """Add ``iceberg_type`` to a V0 catalog (what JdbcCatalog does for views)."""
        if self.catalog._has_type_column:
            return
        if "iceberg_type" not in self.catalog._columns("iceberg_tables"):
            self.admin._write(lambda conn: self.admin._run(conn, ADD_TYPE_COLUMN_SQL))
        self.catalog._has_type_column = True

    def _refuse_taken(self, conn: Any, identifier: TableIdentifier) -> None:
        """AlreadyExists when a table or a view has this exact name (in ``conn``'s transaction)."""
        found = self.admin._run(
            conn,
            "SELECT iceberg_type FROM iceberg_tables WHERE catalog_name = ? "
            "AND table_namespace = ? AND table_name = ?",
            self._key(identifier),
        ).fetchall()
        if found:
            what = "View" if found[0][0] == VIEW_TYPE else "Table"
            raise AlreadyExists(f"{what} {identifier} already exists.")

    def _insert(self, identifier: TableIdentifier, location: str) -> None:
        """Add the view's row, refusing a name a table or view has (or its case twin)."""
        from icecore.catalog.sql import check_location_length

        check_location_length(location)
        key = self._key(identifier)

        def work(conn: Any) -> None:
            self._refuse_taken(conn, identifier)
            self.catalog._lock_names(conn, identifier.namespace)
            names = self.admin._names_in(conn, identifier.namespace)
            check_no_case_twin(identifier.name, names, "view")
            self.admin._run(
                conn,
                "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
                "metadata_location, previous_metadata_location, iceberg_type) "
                "VALUES (?, ?, ?, ?, NULL, 'VIEW')",
                (*key, location),
            )

        self.admin._write(work)

    def _check_new(self, identifier: TableIdentifier) -> None:
        check_new_identifier(identifier)
        if not self.admin.namespace_exists(identifier.namespace):
            raise NotFound(f"Namespace {'.'.join(identifier.namespace)} does not exist.")
        self._ensure_type_column()

    def create_view(self, identifier: TableIdentifier, metadata: ViewMetadata) -> str:
        """``00000-<uuid>.metadata.json`` in the view's metadata folder, then its row.

        Raises:
            NotFound: the namespace does not exist.
            AlreadyExists: a table or view has the name (the written file is deleted).
        """
        self._check_new(identifier)
        location = f"{_metadata_folder(metadata)}/00000-{uuid.uuid4()}.metadata.json"
        _make_local_parent(location)
        if not self.io.create_exclusive(location, serialize_view_metadata(metadata)):
            raise AlreadyExists(f"The metadata file {location} exists already.")
        try:
            self._insert(identifier, location)
        except ValidationError:
            self.io.delete(location)
            raise
        return location

    def register_view(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """A row for an existing view metadata file (read first: it must be a view's)."""
        self._check_new(identifier)
        read_view(self.io, identifier, metadata_location)
        self._insert(identifier, metadata_location)

    def commit_view(
        self, identifier: TableIdentifier, base_location: str, metadata: ViewMetadata
    ) -> str:
        """The next ``<N+1>-<uuid>.metadata.json``, swapped in by one compare-and-swap UPDATE.

        Raises:
            CommitConflict: the row no longer points at ``base_location`` (the file is deleted).
            CommitStateUnknown: the database failed during the swap (the file is kept).
        """
        from icecore.catalog.sql import _VERSION_PREFIX, first_line

        if self.catalog.read_only:
            raise ValidationError(
                f"Cannot commit to view {identifier}: the SQL catalog {self.catalog.where} is "
                "open read-only."
            )
        match = _VERSION_PREFIX.match(base_location.rsplit("/", 1)[-1])
        version = int(match.group(1)) + 1 if match else 0
        location = f"{_metadata_folder(metadata)}/{version:05d}-{uuid.uuid4()}.metadata.json"
        from icecore.catalog.sql import check_location_length

        check_location_length(location)
        _make_local_parent(location)
        if not self.io.create_exclusive(location, serialize_view_metadata(metadata)):
            raise CommitConflict(f"the new metadata file {location} exists already")

        def work(conn: Any) -> bool:
            cursor = self.admin._run(
                conn,
                "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
                "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? "
                "AND metadata_location = ? AND iceberg_type = 'VIEW'",
                (location, base_location, *self._key(identifier), base_location),
            )
            return bool(cursor.rowcount == 1)

        try:
            swapped = self.admin._write(work)
        except CommitStateUnknown as e:
            cause = e.__cause__
            if cause is not None and self.catalog._is_busy(cause):  # type: ignore[arg-type]
                self.io.delete(location)
                raise CommitConflict(
                    f"the SQL catalog {self.catalog.where} stayed locked by another writer "
                    f"({first_line(cause)})"
                ) from e
            raise CommitStateUnknown(
                f"The SQL catalog {self.catalog.where} failed while swapping view {identifier} "
                f"to {location}.",
                location,
            ) from e
        if not swapped:
            self.io.delete(location)
            raise CommitConflict(f"view {identifier} moved on from {base_location}")
        return location

    def drop_view(self, identifier: TableIdentifier) -> None:
        """Delete the view's row (its files stay, as JdbcCatalog's ``dropView``)."""
        self.view_metadata_location(identifier)

        def work(conn: Any) -> None:
            cursor = self.admin._run(
                conn,
                "DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? "
                "AND table_name = ? AND iceberg_type = 'VIEW'",
                self._key(identifier),
            )
            if cursor.rowcount != 1:
                raise NotFound(f"View {identifier} does not exist in {self.catalog.where}.")

        self.admin._write(work)

    def rename_view(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Move the row to the new name (files stay), refusing a name taken by a table or view."""
        check_new_identifier(destination)
        self.view_metadata_location(source)
        if not self.admin.namespace_exists(destination.namespace):
            raise NotFound(f"Namespace {'.'.join(destination.namespace)} does not exist.")
        same_namespace = source.namespace == destination.namespace

        def work(conn: Any) -> None:
            self._refuse_taken(conn, destination)
            self.catalog._lock_names(conn, destination.namespace)
            names = self.admin._names_in(conn, destination.namespace)
            others = [n for n in names if not (same_namespace and n == source.name)]
            check_no_case_twin(destination.name, others, "view")
            cursor = self.admin._run(
                conn,
                "UPDATE iceberg_tables SET table_namespace = ?, table_name = ? WHERE "
                "catalog_name = ? AND table_namespace = ? AND table_name = ? "
                "AND iceberg_type = 'VIEW'",
                (".".join(destination.namespace), destination.name, *self._key(source)),
            )
            if cursor.rowcount != 1:
                raise NotFound(f"View {source} does not exist in {self.catalog.where}.")

        self.admin._write(work)


# Warehouse folders -----------------------------------------------------------------------------


class FilesystemViews:
    """Views of a :class:`~icecore.catalog.filesystem.FilesystemCatalog` (Icecore's layout)."""

    def __init__(self, catalog: FilesystemCatalog) -> None:
        self.catalog = catalog
        self.io = catalog.io

    def view_folder(self, identifier: TableIdentifier) -> str:
        """``<warehouse>/<ns...>/.views/<view>``: inside the warehouse (names are checked)."""
        base = f"{self.catalog.namespace_location(identifier.namespace)}/{VIEWS_FOLDER}"
        return self.catalog._folder(base, identifier.name, "view name")

    def list_views(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Folders of ``.views`` holding a view version (every namespace when None)."""
        from icecore.catalog.filesystem_admin import FilesystemCatalogAdmin

        if namespace is None:
            spaces = FilesystemCatalogAdmin(self.catalog).all_namespaces()
        else:
            spaces = [namespace]
        found: list[TableIdentifier] = []
        for ns in spaces:
            folder = f"{self.catalog.namespace_location(ns)}/{VIEWS_FOLDER}"
            try:
                entries = self.io.ls(folder)
            except NotFound:
                continue
            for entry in entries:
                name = entry.path.rsplit("/", 1)[-1]
                if entry.is_dir and not name.startswith(".") and self._has_version(entry.path):
                    found.append(TableIdentifier(ns, name))
        return sorted(found)

    def _has_version(self, folder: str) -> bool:
        from icecore.catalog.filesystem import _versions

        try:
            return bool(_versions(self.io.ls(f"{folder}/metadata")))
        except NotFound:
            return False

    def view_metadata_location(self, identifier: TableIdentifier) -> str:
        """The view's newest ``v<N>.metadata.json`` (the table rule: hint, then listing)."""
        from icecore.catalog.filesystem import current_metadata_file

        folder = self.view_folder(identifier)
        if not self._has_version(folder):
            raise NotFound(f"View {identifier} does not exist: no view folder {folder}.")
        return current_metadata_file(self.io, folder)

    def _check_new(self, identifier: TableIdentifier, metadata: ViewMetadata) -> str:
        from icecore.catalog.filesystem_admin import FilesystemCatalogAdmin

        check_new_identifier(identifier)
        admin = FilesystemCatalogAdmin(self.catalog)
        if not admin.namespace_exists(identifier.namespace):
            raise NotFound(f"Namespace {'.'.join(identifier.namespace)} does not exist.")
        if admin._is_table(self.catalog.table_location(identifier)):
            raise AlreadyExists(f"Table {identifier} already exists.")
        folder = self.view_folder(identifier)
        if normalize_path(metadata.location.rstrip("/")) != normalize_path(folder):
            raise ValidationError(
                f"Cannot keep view {identifier} at {metadata.location[:300]}: a filesystem "
                f"warehouse keeps it at {folder}; leave the location unset or use that one."
            )
        return folder

    def _write_first(self, identifier: TableIdentifier, folder: str, payload: bytes) -> str:
        from icecore.catalog.filesystem import HINT_FILE
        from icecore.catalog.filesystem_admin import _NEW_NAMES

        with _NEW_NAMES:
            parent = folder.rsplit("/", 1)[0]
            try:
                beside = [e.path.rsplit("/", 1)[-1] for e in self.io.ls(parent) if e.is_dir]
            except NotFound:
                beside = []
            check_no_case_twin(identifier.name, [b for b in beside if b != identifier.name], "view")
            target = f"{folder}/metadata/v1.metadata.json"
            self.io.makedirs(f"{folder}/metadata")
            if not self.io.create_exclusive(target, payload):
                raise AlreadyExists(f"View {identifier} already exists.")
        self.io.write(f"{folder}/metadata/{HINT_FILE}", b"1")
        return target

    def create_view(self, identifier: TableIdentifier, metadata: ViewMetadata) -> str:
        """``metadata/v1.metadata.json`` in the view's folder, by exclusive create."""
        folder = self._check_new(identifier, metadata)
        return self._write_first(identifier, folder, serialize_view_metadata(metadata))

    def register_view(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Copy an existing view metadata file in as ``v1`` (its location must be the folder)."""
        view = read_view(self.io, identifier, metadata_location)
        folder = self._check_new(identifier, view.metadata)
        self._write_first(identifier, folder, serialize_view_metadata(view.metadata))

    def commit_view(
        self, identifier: TableIdentifier, base_location: str, metadata: ViewMetadata
    ) -> str:
        """``v<N+1>.metadata.json`` by exclusive create after ``v<N>``, then the hint."""
        from icecore.catalog.filesystem import _VERSION_FILE, HINT_FILE

        current = self.view_metadata_location(identifier)
        if normalize_path(current) != normalize_path(base_location):
            raise CommitConflict(f"{current} was committed after {base_location}")
        match = _VERSION_FILE.match(base_location.rsplit("/", 1)[-1])
        if match is None:
            raise CommitConflict(f"{base_location} is not a v<N>.metadata.json file")
        version = int(match.group(1)) + 1
        folder = f"{self.view_folder(identifier)}/metadata"
        target = f"{folder}/v{version}.metadata.json"
        if not self.io.create_exclusive(target, serialize_view_metadata(metadata)):
            raise CommitConflict(f"another writer created version {version} of {identifier} first")
        self.io.write(f"{folder}/{HINT_FILE}", str(version).encode())
        return target

    def drop_view(self, identifier: TableIdentifier) -> None:
        """Move the view's folder to ``.views/.dropped-<id>-<view>`` (no file is deleted)."""
        folder = self.view_folder(identifier)
        self.view_metadata_location(identifier)
        parent = folder.rsplit("/", 1)[0]
        self.io.move(folder, f"{parent}/.dropped-{uuid.uuid4().hex[:8]}-{identifier.name}")

    def rename_view(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Refused: a view's metadata names its folder as its location, as a table's does."""
        from icecore.errors import Unsupported

        raise Unsupported(
            f"Cannot rename view {source} to {destination}: a filesystem warehouse keeps each "
            "view at its path, which its metadata names, so views there cannot be renamed."
        )


def view_store_for(catalog: Any) -> ViewStore | None:
    """The view store of ``catalog`` (unwrapping a guard), or None when it holds no views."""
    inner = getattr(catalog, "inner", catalog)
    make = getattr(inner, "view_store", None)
    return make() if callable(make) else None


__all__ = [
    "COMMIT_ATTEMPTS",
    "VIEWS_FOLDER",
    "FilesystemViews",
    "SqlViews",
    "View",
    "ViewStore",
    "commit_view_updates",
    "load_view",
    "read_view",
    "view_store_for",
]
