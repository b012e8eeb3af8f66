"""Filesystem catalog: tables in the Hadoop layout under a warehouse folder.

Spec, "File System Tables": a table at ``<warehouse>/<ns...>/<table>`` keeps
``metadata/v<N>.metadata.json`` (``v<N>.gz.metadata.json`` when compressed) and
``metadata/version-hint.text`` naming the newest N. The hint is written after the new
version, so it may lag behind; it may also be missing. The current version is therefore the
hint's N advanced while ``v<N+1>`` exists, or the highest N present when there is no usable
hint. A hint naming a file that does not exist is an error, not a silent fallback.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from icecore.catalog.base import CatalogBase, TableIdentifier
from icecore.catalog.registry import CatalogSpec
from icecore.errors import (
    CommitConflict,
    CommitStateUnknown,
    IcecoreError,
    InvalidMetadata,
    NotFound,
    ValidationError,
)
from icecore.failpoints import failpoint
from icecore.identifier import MAX_NAMESPACE_LEVELS, check_name
from icecore.io import MAX_METADATA_BYTES, FileInfo, FileIO, normalize_path, reason, shown
from icecore.metadata import TableMetadata
from icecore.values import whole_number

if TYPE_CHECKING:
    from icecore.catalog.views import ViewStore

_VERSION_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")
HINT_FILE = "version-hint.text"
MAX_DEPTH = MAX_NAMESPACE_LEVELS + 1
"""How deep below the warehouse to look for tables (namespace levels + 1)."""


def _versions(listing: list[FileInfo]) -> dict[int, str]:
    found: dict[int, str] = {}
    for entry in listing:
        match = _VERSION_FILE.match(entry.path.rsplit("/", 1)[-1])
        if match and not entry.is_dir:
            found[int(match.group(1))] = entry.path
    return found


def _read_hint(io: FileIO, hint_path: str) -> int | None:
    """The version the hint names, or None.

    None when it is absent (Iceberg Java deletes it for a moment while replacing it) or
    not a number; a file longer than :data:`_HINT_BYTES` is not one either, and is not read
    further.
    """
    try:
        raw = io.read(hint_path, 0, _HINT_BYTES + 1)
    except NotFound:
        return None
    if len(raw) > _HINT_BYTES:
        return None
    return whole_number(raw.decode("utf-8", errors="replace").strip(), negative=False)


_HINT_BYTES = 64
"""Longest version hint read: a version number and a newline take at most ~20 bytes."""


def _version_file(io: FileIO, metadata_dir: str, version: int) -> str | None:
    """``v<version>.metadata.json`` (or its ``.gz`` form) in ``metadata_dir``, if it exists."""
    for name in (f"v{version}.metadata.json", f"v{version}.gz.metadata.json"):
        if io.exists(f"{metadata_dir}/{name}"):
            return f"{metadata_dir}/{name}"
    return None


def current_metadata_file(io: FileIO, table_location: str) -> str:
    """Resolve a Hadoop-layout table's current metadata.json (see the module docstring).

    The hint is read before the folder is listed: a writer creates ``v<N>`` before it
    writes hint N, so a version the hint names is then always in the listing.
    """
    metadata_dir = f"{table_location.rstrip('/')}/metadata"
    hint_path = f"{metadata_dir}/{HINT_FILE}"
    hint = _read_hint(io, hint_path)
    if hint is not None and (current := _version_file(io, metadata_dir, hint)) is not None:
        # Iceberg Java's HadoopTableOperations: no listing while the hint names a file (the
        # metadata folder also holds every manifest: 20,000 entries at 10,000 snapshots);
        # step forward while a newer version exists (a writer not done with the hint yet).
        while (following := _version_file(io, metadata_dir, hint + 1)) is not None:
            hint, current = hint + 1, following
        return current
    try:
        versions = _versions(io.ls(metadata_dir))
    except NotFound as e:
        raise NotFound(f"Table directory {table_location} has no metadata folder.") from e
    if hint is None:
        if not versions:
            raise NotFound(f"Table directory {table_location} has no v<N>.metadata.json file.")
        return versions[max(versions)]
    if hint not in versions:
        raise InvalidMetadata(
            f"{hint_path} names version {hint}, but {metadata_dir}/v{hint}.metadata.json does "
            "not exist; the table's metadata is incomplete."
        )
    while hint + 1 in versions:
        hint += 1
    return versions[hint]


def commit_version(
    io: FileIO, table_location: str, base_location: str, metadata: TableMetadata, payload: bytes
) -> str:
    """Commit ``payload`` as the next version of a Hadoop-layout table; returns its location.

    ``base_location`` is the current ``v<N>.metadata.json``; the new file is ``v<N+1>``.

    Raises:
        InvalidMetadata: ``base_location`` is not a ``v<N>.metadata.json`` file.
        CommitConflict: another writer made version N+1 (or later) first, or replaced ours.
        CommitStateUnknown: the new file could not be read back to confirm it.
        IcecoreError: the file could not be created (nothing was committed).
    """
    metadata_dir = f"{table_location.rstrip('/')}/metadata"
    match = _VERSION_FILE.match(base_location.rsplit("/", 1)[-1])
    if match is None:
        raise InvalidMetadata(
            f"{base_location} is not named v<N>.metadata.json, so it is not a version of a "
            "filesystem table and cannot be committed after."
        )
    version = int(match.group(1)) + 1
    current = current_metadata_file(io, table_location)
    if normalize_path(current) != normalize_path(base_location):
        raise CommitConflict(f"{current} was committed after {base_location}")
    from icecore.metadata.builder import is_gzip  # the commit path only: not at import

    target, other = _version_paths(metadata_dir, version, is_gzip(metadata))
    if io.exists(other) or io.exists(target):
        raise CommitConflict(f"another writer created version {version} first")
    if any(io.exists(p) for p in _version_paths(metadata_dir, version + 1, False)):
        # Filling the gap below a stray later version would make that file current.
        raise InvalidMetadata(
            f"{metadata_dir} holds a version {version + 1} file but no version {version}; "
            f"committing version {version} would make that stray file current; move it away "
            "first."
        )
    if not io.create_exclusive(target, payload):
        raise CommitConflict(f"another writer created version {version} first")
    failpoint("fs-after-create")
    try:
        failpoint("fs-hint")
        io.write(f"{metadata_dir}/{HINT_FILE}", str(version).encode())
        # Hadoop's local file system keeps a checksum beside each file it wrote; a stale
        # one makes Iceberg Java fail to read the new hint (it then lists the folder).
        io.delete(f"{metadata_dir}/.{HINT_FILE}.crc")
    except (IcecoreError, OSError):
        pass  # readers (Icecore's and Iceberg Java's) move past a stale or missing hint
    try:
        failpoint("fs-verify")
        written = io.read(target, limit=MAX_METADATA_BYTES)
    except (IcecoreError, OSError) as e:
        raise CommitStateUnknown(
            f"Version {version} of {table_location} was written but could not be read back "
            f"to confirm it ({e}).",
            target,
        ) from e
    if written != payload:
        raise CommitConflict(f"another writer replaced {target} right after it was created")
    return target


def _version_paths(metadata_dir: str, version: int, gzip: bool) -> tuple[str, str]:
    """Version ``version``'s file as this commit names it, then its other spelling."""
    plain = f"{metadata_dir}/v{version}.metadata.json"
    packed = f"{metadata_dir}/v{version}.gz.metadata.json"
    return (packed, plain) if gzip else (plain, packed)


def _is_table_dir(listing: list[FileInfo]) -> bool:
    return any(e.is_dir and e.path.rsplit("/", 1)[-1] == "metadata" for e in listing)


class FilesystemCatalog(CatalogBase):
    """Tables found under a warehouse folder in the Hadoop layout (no database).

    Args:
        root: the warehouse folder (any path FileIO reads: local or ``s3://``).
        io: the FileIO to read it with.
    """

    kind = "hadoop"
    hadoop_layout = True

    def __init__(self, root: str, io: FileIO | None = None, *, name: str | None = None) -> None:
        self.root = root.rstrip("/") or "/"
        self.io = io or FileIO()
        self.config_name = name
        if not self.io.exists(self.root):
            raise NotFound(f"Warehouse folder {root} does not exist.")

    @property
    def uri(self) -> str:
        """The warehouse folder (the configured name, when opened by one)."""
        return self.config_name if self.config_name is not None else self.root

    @property
    def warehouse_root(self) -> str:
        """The warehouse folder, absolute when local (a table's location is absolute)."""
        protocol, local = normalize_path(self.root)
        if protocol == "file" and not local.startswith("/"):
            return os.path.abspath(local)
        return self.root

    def iceberg_catalog(self) -> tuple[str | None, dict[str, str]]:
        """Iceberg Java's HadoopCatalog on the same warehouse (any name)."""
        return None, {"type": "hadoop", "warehouse": self.warehouse_root}

    def _walk(self) -> list[TableIdentifier]:
        tables: list[TableIdentifier] = []
        pending: list[tuple[str, tuple[str, ...]]] = [(self.root, ())]
        while pending:
            path, parts = pending.pop()
            listing = self.io.ls(path)
            if parts and _is_table_dir(listing):
                metadata = self.io.ls(f"{path}/metadata")
                if _versions(metadata) or any(e.path.endswith(HINT_FILE) for e in metadata):
                    if len(parts) >= 2:
                        tables.append(TableIdentifier(parts[:-1], parts[-1]))
                    continue
            if len(parts) >= MAX_DEPTH:
                continue
            for entry in listing:
                name = entry.path.rsplit("/", 1)[-1]
                if entry.is_dir and not name.startswith("."):
                    pending.append((entry.path, (*parts, name)))
        return sorted(tables)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """Namespaces (folder paths) that hold at least one table."""
        return sorted({t.namespace for t in self._walk()})

    def list_tables(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Tables under the warehouse, optionally in one namespace."""
        tables = self._walk()
        if namespace is None:
            return tables
        return [t for t in tables if t.namespace == namespace]

    def _folder(self, parent: str, name: str, what: str) -> str:
        """``parent/name`` if ``name`` passes the rule for names, or is a folder of ``parent``.

        The rule (:func:`icecore.identifier.check_name`, an allow-list) admits a name without
        looking; any other name must be one that listing ``parent`` shows, not hidden: a
        folder another writer made before the rule stays readable, and a name that is not
        an existing folder (``..``, ``a/b``, a NUL) never becomes a path.
        """
        try:
            return f"{parent}/{check_name(name, what)}"
        except ValidationError:
            if isinstance(name, str) and name and not name.startswith("."):
                try:
                    listing = self.io.ls(parent)
                except NotFound:
                    listing = []
                if any(e.is_dir and e.path.rsplit("/", 1)[-1] == name for e in listing):
                    return f"{parent}/{name}"
            raise

    def namespace_location(self, namespace: tuple[str, ...]) -> str:
        """The folder of ``namespace``; :class:`ValidationError` for a name unsafe as a folder.

        Always inside the warehouse: see :meth:`_folder` for the names accepted.
        """
        if not namespace:
            raise ValidationError("A namespace needs at least one level.")
        path = self.root
        for level in namespace:
            path = self._folder(path, level, "namespace level")
        return path

    def table_location(self, identifier: TableIdentifier) -> str:
        """The folder of ``identifier``, always inside the warehouse (names are checked)."""
        base = self.namespace_location(identifier.namespace)
        return self._folder(base, identifier.name, "table name")

    def view_store(self) -> ViewStore:
        """Its views, in ``<ns>/.views/`` (:class:`icecore.catalog.views.FilesystemViews`)."""
        from icecore.catalog.views import FilesystemViews

        return FilesystemViews(self)

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """The current metadata.json of ``identifier``."""
        location = self.table_location(identifier)
        if not self.io.exists(location):
            raise NotFound(f"Table {identifier} does not exist: no folder {location}.")
        return current_metadata_file(self.io, location)

    def commit_metadata(
        self,
        identifier: TableIdentifier,
        base_location: str,
        metadata: TableMetadata,
        payload: bytes,
    ) -> str:
        """Commit the next ``v<N>.metadata.json`` (see :func:`commit_version`)."""
        return commit_version(
            self.io, self.table_location(identifier), base_location, metadata, payload
        )


def load_filesystem(spec: CatalogSpec) -> FilesystemCatalog:
    """The registry's loader: a warehouse folder, local or on an object store.

    Raises:
        NotFound: the folder does not exist.
        IcecoreError: the object store could not be reached (one sentence naming why).
    """
    try:
        return FilesystemCatalog(spec.uri, io=spec.file_io(), name=spec.name)
    except NotFound:
        raise
    except IcecoreError as e:
        # FileIO's one sentence wraps what the store's client raised (credentials, DNS)
        cause = e.__cause__ if e.__cause__ is not None else e
        raise IcecoreError(
            f"Cannot open the warehouse {shown(spec.uri)}: {reason(cause)}; check its address "
            "and credentials."
        ) from e
