"""What a table is, below every feature: its metadata, its files, and which snapshot is meant.

``TableData`` is one metadata file (metadata locations never change), so it is immutable and
anything derived from it can be cached by ``metadata_location``. It holds the one resolver
every feature asks "which snapshot, which schema": :meth:`TableData.snapshot`,
:meth:`TableData.point` and :meth:`TableData.read_schema`. The features (scan, diff,
changelog, inspect, evolution, ...) take a ``TableData`` and sit above this module; the
:class:`icecore.table.Table` users hold adds their entry points on top (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from icecore.errors import NotFound, Unsupported, ValidationError
from icecore.history import HistoryEntry, history, resolve_snapshot
from icecore.identifier import TableIdentifier
from icecore.io import MAX_METADATA_BYTES, FileIO
from icecore.lru import LRU
from icecore.manifest import ManifestEntry, ManifestFile
from icecore.manifest_arrow import entries_from_arrow, live_files
from icecore.manifest_list_columns import ManifestListColumns, read_manifest_list_columns
from icecore.metadata import Snapshot, SnapshotRef, TableMetadata, parse_metadata
from icecore.schema import Schema
from icecore.values import whole_number


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

    def snapshot(
        self,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: str | int | dt.datetime | None = None,
    ) -> Snapshot | None:
        """The snapshot a selector names, or the current one (None for an empty table)."""
        return resolve_snapshot(self.metadata, snapshot_id=snapshot_id, ref=ref, as_of=as_of)

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
        return [
            entry
            for manifest, files in live_files(self, snapshot, self.read_schema(snapshot), manifests)
            for entry in entries_from_arrow(files, manifest.partition_spec_id)
        ]

    def point(self, text: str | int) -> Snapshot:
        """Resolve what a user typed as a point in time: a snapshot id, a ref, or a time."""
        number = text if isinstance(text, int) else whole_number(text)
        if number is not None:
            snapshot = self.snapshot(snapshot_id=number)
        elif isinstance(text, str) and text in self.metadata.refs:
            snapshot = self.snapshot(ref=text)
        else:
            try:
                snapshot = self.snapshot(as_of=text)
            except ValidationError as e:
                raise NotFound(
                    f"{text!r} is neither a snapshot id, a branch or tag of {self.identifier}, "
                    "nor an ISO-8601 time."
                ) from e
        if snapshot is None:
            raise NotFound(f"Table {self.identifier} has no snapshot at {text!r}.")
        return snapshot

    def schema_for(
        self,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: str | int | dt.datetime | None = None,
    ) -> Schema:
        """The schema a read of that point uses (see :meth:`read_schema`)."""
        snapshot = self.snapshot(snapshot_id=snapshot_id, ref=ref, as_of=as_of)
        return self.read_schema(
            snapshot, ref=ref, time_travel=snapshot_id is not None or as_of is not None
        )

    def read_schema(
        self, snapshot: Snapshot | None, *, ref: str | None = None, time_travel: bool = True
    ) -> Schema:
        """The schema to read ``snapshot`` with, as Iceberg Java's ``SnapshotUtil.schemaFor``.

        A branch (and the current table) reads with the table's current schema, since its
        next write will; a tag, a snapshot id or a time reads with that snapshot's schema.

        Args:
            snapshot: the resolved snapshot (None for an empty table).
            ref: the branch or tag it was reached by, if any.
            time_travel: it was chosen by snapshot id or time rather than by a ref.
        """
        metadata = self.metadata
        named = metadata.refs.get(ref) if ref is not None else None
        reads_branch = not time_travel and (named is None or named.is_branch)
        if reads_branch or snapshot is None or snapshot.schema_id is None:
            return metadata.current_schema()
        return metadata.schema_by_id(snapshot.schema_id) or metadata.current_schema()

    def refresh(self) -> TableData:
        """The table as its catalog has it now (itself when it has no catalog)."""
        if self.catalog is None:
            return self
        return self.catalog.load_table(self.identifier)
