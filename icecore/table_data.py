"""What a table is, below every feature: its metadata, its files, and which snapshot is meant.

``TableData`` is one metadata file (metadata locations never change), so it is immutable and
anything derived from it can be cached by ``metadata_location``. It holds the one resolver
every feature asks "which snapshot, which schema": :meth:`TableData.resolve`, which turns
a point in time (:class:`icecore.point_in_time.At`) into the snapshot and schema read, once;
:meth:`TableData.snapshot` and :meth:`TableData.point` are its doors for the keywords and
for typed text. The features (scan, diff, changelog, inspect, evolution, ...) take a
``TableData`` and sit above this module; the :class:`icecore.table.Table` users hold adds
their entry points on top (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from icecore.access import FULL_ACCESS, Access
from icecore.errors import NotFound, Unsupported, ValidationError
from icecore.history import HistoryEntry, history
from icecore.identifier import TableIdentifier
from icecore.io import MAX_METADATA_BYTES, FileIO
from icecore.lru import LRU
from icecore.metadata import Snapshot, SnapshotRef, TableMetadata, parse_metadata
from icecore.point_in_time import CURRENT, At, Point, Resolved, point_of, snapshot_schema
from icecore.schema import Schema

if TYPE_CHECKING:
    # Manifests are decoded with pyarrow and numpy: imported by the methods that read them,
    # so a table loaded for its metadata (history, refs, schema) does not load them (issue
    # 32 item 4, PERFORMANCE.md "Targets").
    from icecore.manifest import ManifestEntry, ManifestFile
    from icecore.manifest_list_columns import ManifestListColumns


class TableSource(Protocol):
    """What a table and its features ask of the catalog it came from.

    :class:`icecore.catalog.base.Catalog` extends it; it is declared here, below the features,
    so that a table can name its catalog without importing the catalogs above it.
    """

    @property
    def can_commit(self) -> bool:
        """Whether it has a pointer a commit can swap (a bare metadata file has none)."""
        ...

    @property
    def hadoop_layout(self) -> bool:
        """Whether its tables are folders committed by renaming (spec, "File System Tables")."""
        ...

    def list_tables(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Tables in ``namespace``, or in every namespace when it is ``None``; sorted."""
        ...

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """Location of the table's current metadata.json."""
        ...

    def load_table(self, identifier: TableIdentifier) -> TableData:
        """The table's current version."""
        ...

    def access(self, identifier: TableIdentifier) -> Access:
        """What the principal this catalog was opened for may do with the table.

        :data:`icecore.access.FULL_ACCESS` for a catalog opened without a principal (a
        workstation, a library call); :class:`icecore.catalog.guarded.GuardedCatalog` answers
        from the deployment's grants.
        """
        ...

    def commit_metadata(
        self,
        identifier: TableIdentifier,
        base_location: str,
        metadata: TableMetadata,
        payload: bytes,
    ) -> str:
        """Write ``payload`` as the table's next metadata file and make it current.

        The swap succeeds only if ``base_location`` is still current (spec "Metastore
        Tables", "File System Tables"). Returns the new file's location.

        Raises:
            CommitConflict: another writer committed first; nothing of this commit is current.
            CommitStateUnknown: whether the swap happened cannot be told; the file is kept.
            Unsupported: the catalog cannot commit.
        """
        ...


def access_of(data: TableData) -> Access:
    """What the principal ``data`` was loaded for may do with it.

    Row reads, SQL, downloads and changelogs ask this before reading a row value
    (:meth:`icecore.access.Access.require` with reader) and leave out its masked columns.
    """
    if data.catalog is None:
        return FULL_ACCESS
    access = data.catalog.access(data.identifier)
    return _masks_in_every_schema(access, data.metadata) if access.mask else access


def _masks_in_every_schema(access: Access, metadata: TableMetadata) -> Access:
    """``access`` with its masks also under each masked field's names in older schemas.

    A grant names columns as the current schema does; a column keeps its id through a
    rename, so reading an older snapshot (whose schema has the old name) must hide it too:
    the masked fields are found by name in the current schema, then named as every schema
    of the table names their ids.
    """
    current = metadata.current_schema()
    ids = {fid for fid, name in current.id_to_name().items() if access.masks(name)}
    names = set(access.mask)
    for schema in metadata.schemas:
        by_id = schema.id_to_name()
        names.update(by_id[fid].lower() for fid in ids if fid in by_id)
    return Access(access.role, frozenset(names))


def read_table_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse one metadata.json through ``io``."""
    return parse_metadata(io.read(location, limit=MAX_METADATA_BYTES), location=location)


MANIFEST_LISTS_CACHED = 256
"""Manifest lists kept per process: a snapshot's list never changes once written (spec
"Manifest Lists"), so planning or inspecting a snapshot again does not decode it again
(2,000 entries: ~60 ms). Keyed by table uuid, list path and format version."""

_MANIFEST_LISTS: LRU[tuple[str, str, int], ManifestListColumns] = LRU(MANIFEST_LISTS_CACHED)


@dataclass(frozen=True, slots=True)
class TableData:
    """One version of an Iceberg table.

    Attributes:
        identifier: the table's name in its catalog.
        metadata: the parsed metadata.json.
        metadata_location: where that metadata.json is.
        io: the FileIO every read of this table goes through.
        catalog: the catalog it was loaded from (None for a bare metadata file).
    """

    identifier: TableIdentifier
    metadata: TableMetadata
    metadata_location: str
    io: FileIO
    catalog: TableSource | None = None

    @property
    def format_version(self) -> int:
        """The table's format version (1, 2 or 3)."""
        return self.metadata.format_version

    @property
    def location(self) -> str:
        """The table's base location."""
        return self.metadata.location

    def snapshots(self) -> tuple[Snapshot, ...]:
        """Every snapshot still in the metadata, in the order the file lists them."""
        return tuple(self.metadata.snapshots)

    def history(self) -> list[HistoryEntry]:
        """When each snapshot became current, oldest first (Spark's ``history`` table)."""
        return history(self.metadata)

    def refs(self) -> Mapping[str, SnapshotRef]:
        """Branches and tags by name (``main`` implied for tables written without refs)."""
        return self.metadata.refs

    def resolve(self, at: Point | None = None) -> Resolved:
        """The snapshot ``at`` reads in this version, and the schema it reads with.

        The one resolver of a point in time (:mod:`icecore.point_in_time`); features take
        its answer rather than resolve again.
        """
        return (at if at is not None else CURRENT).resolve(self)

    def snapshot(
        self,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: str | int | dt.datetime | None = None,
        at: Point | None = None,
    ) -> Snapshot | None:
        """The snapshot a selector names, or the current one (None for an empty table).

        Give ``at`` or one of the others (see :func:`icecore.point_in_time.point_of`).
        """
        return self.resolve(point_of(at, snapshot_id=snapshot_id, ref=ref, as_of=as_of)).snapshot

    def manifests(self, snapshot: Snapshot) -> list[ManifestFile]:
        """The manifest list of ``snapshot`` (v1 inline ``manifests`` are not supported yet)."""
        return self.manifest_list(snapshot).manifests()

    def manifest_list(self, snapshot: Snapshot) -> ManifestListColumns:
        """The manifest list of ``snapshot`` as columns, decoded once per process."""
        if snapshot.manifest_list is None:
            raise Unsupported(
                f"Snapshot {snapshot.snapshot_id} lists its manifests inline (a v1 layout "
                "from before manifest lists); Icecore reads manifest lists only."
            )
        key = (
            self.metadata.table_uuid or self.metadata.location,
            snapshot.manifest_list,
            self.metadata.format_version,
        )
        location = snapshot.manifest_list
        from icecore.manifest_list_columns import read_manifest_list_columns

        return _MANIFEST_LISTS.get_or_make(
            key,
            lambda: read_manifest_list_columns(
                self.io, location, format_version=self.metadata.format_version
            ),
        )

    def live_entries(
        self, snapshot: Snapshot, manifests: Iterable[ManifestFile] | None = None
    ) -> list[ManifestEntry]:
        """Every live (ADDED or EXISTING) data and delete file entry of ``snapshot``.

        Args:
            snapshot: the snapshot (its schema decodes partition values).
            manifests: only these of its manifests (default: all of them).
        """
        from icecore.manifest_arrow import entries_from_arrow, live_files

        return [
            entry
            for manifest, files in live_files(self, snapshot, self.read_schema(snapshot), manifests)
            for entry in entries_from_arrow(files, manifest.partition_spec_id)
        ]

    def point(self, text: str | int | Point) -> Snapshot:
        """Resolve what a user typed as a point in time: a snapshot id, a ref, or a time.

        A point already made (:class:`icecore.point_in_time.At`, or resolved) is taken as it
        is, so ``t.diff(At(ref="month_end"), At(ref="main"))`` says what it means.
        """
        if isinstance(text, At | Resolved):
            found = self.resolve(text).snapshot
            if found is None:  # only the current point of a table without snapshots
                raise NotFound(f"Table {self.identifier} has no snapshot yet.")
            return found
        try:
            at = At.guess(text, self.metadata.refs)
        except ValidationError as e:
            raise NotFound(
                f"{text!r} is neither a snapshot id, a branch or tag of {self.identifier}, "
                "nor an ISO-8601 time."
            ) from e
        snapshot = self.resolve(at).snapshot
        if snapshot is None:
            raise NotFound(f"Table {self.identifier} has no snapshot at {text!r}.")
        return snapshot

    def read_schema(self, snapshot: Snapshot | None) -> Schema:
        """The schema a read of ``snapshot`` by its id uses (``point_in_time.snapshot_schema``).

        A branch or the current table reads with the current schema instead: resolve those
        with :meth:`resolve`.
        """
        return snapshot_schema(self.metadata, snapshot)

    def refresh(self) -> TableData:
        """The table as its catalog has it now (itself when it has no catalog)."""
        if self.catalog is None:
            return self
        return self.catalog.load_table(self.identifier)
