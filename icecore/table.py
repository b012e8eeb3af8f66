"""A table as a user holds it: its current metadata, where it came from, and how to read it.

``Table`` is immutable: it is one metadata file (metadata locations never change), so
anything derived from it can be cached by ``metadata_location``. ``refresh()`` returns a new
``Table`` for whatever the catalog now says is current, and so does every commit
(``update_schema()``, ``update_spec()``, ``update_sort_order()``, ``set_properties()``,
``remove_properties()``, ``transaction()``; see :mod:`icecore.evolution`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icecore.changelog import changelog
from icecore.diff import SnapshotDiff, diff_snapshots
from icecore.errors import InvalidMetadata, NotFound, Unsupported, ValidationError
from icecore.evolution import (
    Transaction,
    UpdateSchema,
    UpdateSortOrder,
    UpdateSpec,
    transaction_of,
)
from icecore.expressions.model import Expression
from icecore.history import HistoryEntry, history, resolve_snapshot
from icecore.identifier import TableIdentifier
from icecore.io import FileIO
from icecore.lru import LRU
from icecore.manifest import (
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest,
)
from icecore.manifest_list_columns import ManifestListColumns, read_manifest_list_columns
from icecore.metadata import Snapshot, SnapshotRef, TableMetadata, parse_metadata
from icecore.scan.planner import TableScan
from icecore.schema import Schema

if TYPE_CHECKING:
    import pyarrow as pa

    from icecore.catalog.base import Catalog
    from icecore.scan.context import PlanContext


def read_table_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse one metadata.json through ``io``."""
    return parse_metadata(io.read(location), location=location)


MANIFEST_LISTS_CACHED = 256
"""Manifest lists kept per process: a snapshot's list never changes once written (spec
"Manifest Lists"), so planning or inspecting a snapshot again does not decode it again
(2,000 entries: ~60 ms). Keyed by table uuid, list path and format version."""

_MANIFEST_LISTS: LRU[tuple[str, str, int], ManifestListColumns] = LRU(MANIFEST_LISTS_CACHED)


@dataclass(frozen=True, slots=True)
class Table:
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
    catalog: Catalog | None = None

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
        schema = self.read_schema(snapshot)
        entries: list[ManifestEntry] = []
        for manifest in self.manifests(snapshot) if manifests is None else manifests:
            spec = self.metadata.spec_by_id(manifest.partition_spec_id)
            if spec is None:
                raise InvalidMetadata(
                    f"Manifest {manifest.manifest_path} uses partition spec "
                    f"{manifest.partition_spec_id}, which {self.metadata_location} lacks."
                )
            entries.extend(
                e
                for e in read_manifest(
                    self.io, manifest, schema, spec, self.metadata.format_version
                )
                if e.status is not ManifestEntryStatus.DELETED
            )
        return entries

    def inspect(
        self,
        kind: str,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: str | int | dt.datetime | None = None,
    ) -> pa.Table:
        """A metadata table as Arrow, with Spark's column names (see :mod:`icecore.inspect`)."""
        from icecore.inspect import inspect_table

        return inspect_table(self, kind, snapshot_id=snapshot_id, ref=ref, as_of=as_of)

    def diff(self, from_point: str | int | None, to_point: str | int | None = None) -> SnapshotDiff:
        """What changed between two points (snapshot ids, refs or ISO times; None = current).

        ``from_point`` None compares against an empty table.
        """
        before = self.point(from_point) if from_point is not None else None
        after = self.point(to_point) if to_point is not None else self.snapshot()
        if after is None:
            raise NotFound(f"Table {self.identifier} has no snapshot to compare.")
        return diff_snapshots(self, before, after)

    def changelog(
        self,
        from_point: str | int | None,
        to_point: str | int | None = None,
        *,
        identifier_columns: list[str] | None = None,
        compute_updates: bool | None = None,
        net_changes: bool = False,
        columns: list[str] | None = None,
    ) -> pa.Table:
        """Rows inserted and deleted between two points, as Spark's create_changelog_view.

        See :func:`icecore.changelog.changelog`; ``from_point`` is exclusive (None: from the
        first snapshot), ``to_point`` inclusive (None: the current snapshot).
        """
        return changelog(
            self,
            from_point,
            to_point,
            identifier_columns=identifier_columns,
            compute_updates=compute_updates,
            net_changes=net_changes,
            columns=columns,
        )

    def point(self, text: str | int) -> Snapshot:
        """Resolve what a user typed as a point in time: a snapshot id, a ref, or a time."""
        if isinstance(text, int) or (isinstance(text, str) and text.strip().lstrip("-").isdigit()):
            snapshot = self.snapshot(snapshot_id=int(text))
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

    def scan(
        self,
        filter: str | Expression | None = None,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: str | int | dt.datetime | None = None,
        case_sensitive: bool = False,
        context: PlanContext | None = None,
    ) -> TableScan:
        """A filtered read of one snapshot; ``.plan()`` plans it (DESIGN.md "Contracts").

        ``context`` holds the caches plans share (default: the process's own).
        """
        return TableScan(
            self,
            filter,
            snapshot_id=snapshot_id,
            ref=ref,
            as_of=as_of,
            case_sensitive=case_sensitive,
            context=context,
        )

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

    def refresh(self) -> Table:
        """The table as its catalog has it now (itself when it has no catalog)."""
        if self.catalog is None:
            return self
        return self.catalog.load_table(self.identifier)

    # Evolution (DESIGN.md "Contracts"; spec "Schema Evolution", "Partition Evolution") -----

    def update_schema(self, *, case_sensitive: bool = True) -> UpdateSchema:
        """A schema change that commits on ``commit()`` or on leaving its ``with`` block.

        ``preview()`` instead returns the new metadata and a readable diff, writing nothing.
        """
        return transaction_of(self).update_schema(case_sensitive=case_sensitive)

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """A partition spec change (new data only), committed like :meth:`update_schema`."""
        return transaction_of(self).update_spec(case_sensitive=case_sensitive)

    def update_sort_order(self, *, case_sensitive: bool = True) -> UpdateSortOrder:
        """A new default sort order, committed like :meth:`update_schema`."""
        return transaction_of(self).update_sort_order(case_sensitive=case_sensitive)

    def set_properties(self, properties: Mapping[str, str] | None = None, /, **more: str) -> Table:
        """Set table properties now; returns the committed table."""
        transaction = transaction_of(self).set_properties(properties, **more)
        return transaction.result if transaction.result is not None else self

    def remove_properties(self, *keys: str) -> Table:
        """Remove table properties now; returns the committed table."""
        transaction = transaction_of(self).remove_properties(*keys)
        return transaction.result if transaction.result is not None else self

    def transaction(self) -> Transaction:
        """Several changes committed as one metadata version (``commit()`` or ``with``)."""
        return Transaction(self)


def load_table_at(
    identifier: TableIdentifier,
    metadata_location: str,
    io: FileIO,
    catalog: Catalog | None = None,
) -> Table:
    """Build a :class:`Table` by reading the metadata file at ``metadata_location``."""
    return Table(
        identifier, read_table_metadata(io, metadata_location), metadata_location, io, catalog
    )
