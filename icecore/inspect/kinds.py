"""The registry of metadata tables: one record per kind, read by every place that offers them.

``Table.inspect(kind)`` and its typed methods (:mod:`icecore.inspect.accessor`), the CLI's
``inspect`` choices, the tables user SQL may name (:mod:`icecore.sql`) and that SQL's size
guard all read :data:`METADATA_TABLES`, so adding a kind is adding one record here (and its
typed method, which a test checks against this registry). Before, a kind was listed in four
parallel string tables, and one forgotten in the per-entry table was silently never refused
by the SQL page's size guard; here what the guard needs (:attr:`MetadataTable.scope` and
:attr:`MetadataTable.entries`) is a field every record must fill in.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import pyarrow as pa

from icecore.inspect._common import (
    Pick,
    TableView,
    decoded,
    is_data,
    reachable_manifests,
    snapshot_files,
    snapshot_manifests,
)
from icecore.inspect.files import entries_table, files_table, is_delete
from icecore.inspect.manifests import all_manifests_table, manifests_table
from icecore.inspect.partitions import partitions_table
from icecore.inspect.snapshots import (
    history_table,
    metadata_log_table,
    refs_table,
    snapshots_table,
)
from icecore.manifest import DataFile, ManifestContent, ManifestFile
from icecore.metadata import Snapshot
from icecore.table_data import TableData

Builder = Callable[[TableView, Snapshot | None], pa.Table]
"""Builds a kind's Arrow table from the table and the selected snapshot (None: no snapshot)."""


class Scope(enum.Enum):
    """What a metadata table describes, and so what it reads and whether a selector matters."""

    TABLE = "table"
    """The table as metadata.json holds it; a snapshot selector does not change it."""
    SNAPSHOT = "snapshot"
    """One snapshot: the current one, or the one a selector names."""
    ALL_SNAPSHOTS = "all_snapshots"
    """Every valid snapshot: reads each one's manifest list (a selector changes nothing)."""


def all_manifests(manifests: list[ManifestFile]) -> list[ManifestFile]:
    """Every manifest of a list (a :data:`~icecore.inspect._common.Pick`)."""
    return manifests


def data_manifests(manifests: list[ManifestFile]) -> list[ManifestFile]:
    """The data manifests of a list."""
    return [m for m in manifests if m.content == ManifestContent.DATA]


def delete_manifests(manifests: list[ManifestFile]) -> list[ManifestFile]:
    """The delete manifests of a list."""
    return [m for m in manifests if m.content == ManifestContent.DELETES]


@dataclass(frozen=True, slots=True)
class Entries:
    """How a per-entry kind reads manifests: which ones, and live entries only or every one.

    Such a kind is made one Python object per manifest entry (a million-file snapshot costs
    minutes and gigabytes), so a bounded caller counts these entries first from the manifest
    lists' counts (:meth:`MetadataTable.entry_count`).
    """

    pick: Pick
    live: bool


@dataclass(frozen=True, slots=True)
class MetadataTable:
    """One kind of metadata table.

    Attributes:
        name: its name, which is also Spark's (``SELECT * FROM cat.db.t.<name>``), PyIceberg's
            typed method's (``t.inspect.<name>()``) and the table user SQL names.
        scope: what it describes (:class:`Scope`).
        entries: for a kind built entry by entry from manifests, which ones (see
            :class:`Entries`); None for a kind made from metadata.json or manifest lists only.
        build: makes the Arrow table.
        summary: what a row is, for help texts.
    """

    name: str
    scope: Scope
    entries: Entries | None
    build: Builder
    summary: str

    @property
    def per_entry(self) -> bool:
        """Whether it is made one object per manifest entry (what the SQL size guard bounds)."""
        return self.entries is not None

    def entry_count(self, table: TableData, snapshot: Snapshot | None) -> int:
        """How many entries building it reads, from the manifest lists' counts alone.

        A per-entry kind counts its manifests' entries (live ones or all, as it reads
        them); an every-snapshot kind that is not per-entry (``all_manifests``) counts its
        rows, a manifest list entry per snapshot and manifest (~800,000 at 10,000
        snapshots); the others read metadata.json or one manifest list: 0. A manifest whose
        list omits its counts (optional in v1) counts as 0.
        """
        every = self.scope is Scope.ALL_SNAPSHOTS
        if self.entries is None:
            if every:
                return sum(len(table.manifest_list(s)) for s in table.metadata.snapshots)
            return 0
        manifests = reachable_manifests(table) if every else snapshot_manifests(table, snapshot)
        live = self.entries.live
        return sum(
            (m.added_files_count or 0)
            + (m.existing_files_count or 0)
            + (0 if live else (m.deleted_files_count or 0))
            for m in self.entries.pick(manifests)
        )


def _entries_of(v: TableView, s: Snapshot | None, how: Entries, every: bool) -> pa.Table:
    manifests = reachable_manifests(v.table) if every else snapshot_manifests(v.table, s)
    return entries_table(v, decoded(v, how.pick(manifests), live=how.live))


Keep = Callable[[DataFile], bool] | None


def _files_of(v: TableView, s: Snapshot | None, pick: Pick, every: bool, keep: Keep) -> pa.Table:
    found = decoded(v, pick(reachable_manifests(v.table))) if every else snapshot_files(v, s, pick)
    return files_table(v, found) if keep is None else files_table(v, found, keep)


def _entries_kind(name: str, scope: Scope, summary: str) -> MetadataTable:
    how = Entries(all_manifests, live=False)
    every = scope is Scope.ALL_SNAPSHOTS
    return MetadataTable(name, scope, how, lambda v, s: _entries_of(v, s, how, every), summary)


def _files_kind(name: str, scope: Scope, pick: Pick, keep: Keep, summary: str) -> MetadataTable:
    every = scope is Scope.ALL_SNAPSHOTS
    return MetadataTable(
        name,
        scope,
        Entries(pick, live=True),
        lambda v, s: _files_of(v, s, pick, every, keep),
        summary,
    )


_TABLE, _SNAPSHOT, _ALL = Scope.TABLE, Scope.SNAPSHOT, Scope.ALL_SNAPSHOTS

_RECORDS = (
    MetadataTable(
        "snapshots", _TABLE, None, lambda v, s: snapshots_table(v.table), "a valid snapshot"
    ),
    MetadataTable(
        "history", _TABLE, None, lambda v, s: history_table(v.table), "a snapshot log entry"
    ),
    MetadataTable("refs", _TABLE, None, lambda v, s: refs_table(v.table), "a branch or tag"),
    MetadataTable(
        "metadata_log_entries",
        _TABLE,
        None,
        lambda v, s: metadata_log_table(v.table),
        "a metadata file of the log, the current one too",
    ),
    MetadataTable("manifests", _SNAPSHOT, None, manifests_table, "a manifest of the snapshot"),
    MetadataTable(
        "all_manifests",
        _ALL,
        None,
        lambda v, s: all_manifests_table(v),
        "a manifest of any valid snapshot, per snapshot",
    ),
    _entries_kind("entries", _SNAPSHOT, "a manifest entry (live or deleted) of the snapshot"),
    _files_kind("files", _SNAPSHOT, all_manifests, None, "a live data or delete file"),
    _files_kind("data_files", _SNAPSHOT, data_manifests, is_data, "a live data file"),
    _files_kind("delete_files", _SNAPSHOT, delete_manifests, is_delete, "a live delete file"),
    MetadataTable(
        "partitions",
        _SNAPSHOT,
        Entries(all_manifests, live=True),
        lambda v, s: partitions_table(v, snapshot_files(v, s, all_manifests)),
        "a partition of the snapshot, with its file and row counts",
    ),
    _entries_kind("all_entries", _ALL, "a manifest entry of any valid snapshot, once"),
    _files_kind("all_files", _ALL, all_manifests, None, "a file of any valid snapshot, once"),
    _files_kind(
        "all_data_files", _ALL, data_manifests, is_data, "a data file of any valid snapshot, once"
    ),
    _files_kind(
        "all_delete_files",
        _ALL,
        delete_manifests,
        is_delete,
        "a delete file of any valid snapshot, once",
    ),
)

METADATA_TABLES: Mapping[str, MetadataTable] = MappingProxyType({r.name: r for r in _RECORDS})
"""Every metadata table kind by name, in Spark's documentation order (a read-only view)."""


__all__ = [
    "METADATA_TABLES",
    "Builder",
    "Entries",
    "MetadataTable",
    "Scope",
    "all_manifests",
    "data_manifests",
    "delete_manifests",
]
