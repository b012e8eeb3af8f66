"""Iceberg's metadata tables as Arrow tables, with the columns and meaning of Spark's.

``inspect_table(table, kind)`` answers what ``SELECT * FROM catalog.db.table.<kind>`` answers
in Spark 3.5 with Iceberg 1.10: same column names, Arrow types as close to Spark's as Arrow
allows (timestamps are ``timestamp('us', 'UTC')``), same rows. The kinds:

* whole-table, from metadata.json: ``snapshots``, ``history``, ``refs``,
  ``metadata_log_entries``, and ``all_manifests`` (every snapshot's manifest list);
* of one snapshot (the current one, or the one a selector names): ``manifests``,
  ``entries``, ``files``, ``data_files``, ``delete_files``, ``partitions``;
* over every manifest reachable from any valid snapshot, each manifest once:
  ``all_entries``, ``all_files``, ``all_data_files``, ``all_delete_files``.

A table without snapshots gives empty tables with the right columns. Each call reads the
manifest lists and manifests it needs once, and caches nothing across calls.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from icecore.errors import NotFound
from icecore.inspect._common import (
    Decoded,
    Pick,
    TableView,
    decoded,
    is_data,
    reachable_manifests,
    snapshot_files,
    snapshot_manifests,
    table_view,
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
from icecore.manifest import ManifestContent, ManifestFile
from icecore.metadata import Snapshot
from icecore.point_in_time import Point
from icecore.table_data import TableData

_Builder = Callable[[TableView, Snapshot | None], pa.Table]


def _all(manifests: list[ManifestFile]) -> list[ManifestFile]:
    return manifests


def _data(manifests: list[ManifestFile]) -> list[ManifestFile]:
    return [m for m in manifests if m.content == ManifestContent.DATA]


def _deletes(manifests: list[ManifestFile]) -> list[ManifestFile]:
    return [m for m in manifests if m.content == ManifestContent.DELETES]


def _reachable(v: TableView, pick: Pick, live: bool = True) -> Decoded:
    return decoded(v, pick(reachable_manifests(v.table)), live=live)


_KINDS: dict[str, _Builder] = {
    "snapshots": lambda v, s: snapshots_table(v.table),
    "history": lambda v, s: history_table(v.table),
    "refs": lambda v, s: refs_table(v.table),
    "metadata_log_entries": lambda v, s: metadata_log_table(v.table),
    "manifests": manifests_table,
    "all_manifests": lambda v, s: all_manifests_table(v),
    "entries": lambda v, s: entries_table(
        v, decoded(v, snapshot_manifests(v.table, s), live=False)
    ),
    "files": lambda v, s: files_table(v, snapshot_files(v, s, _all)),
    "data_files": lambda v, s: files_table(v, snapshot_files(v, s, _data), is_data),
    "delete_files": lambda v, s: files_table(v, snapshot_files(v, s, _deletes), is_delete),
    "partitions": lambda v, s: partitions_table(v, snapshot_files(v, s, _all)),
    "all_entries": lambda v, s: entries_table(v, _reachable(v, _all, live=False)),
    "all_files": lambda v, s: files_table(v, _reachable(v, _all)),
    "all_data_files": lambda v, s: files_table(v, _reachable(v, _data), is_data),
    "all_delete_files": lambda v, s: files_table(v, _reachable(v, _deletes), is_delete),
}

KINDS: tuple[str, ...] = tuple(_KINDS)
"""Every metadata table :func:`inspect_table` builds, by Spark's name."""

SNAPSHOT_KINDS = frozenset(
    {"manifests", "entries", "files", "data_files", "delete_files", "partitions"}
)
"""The kinds that describe one snapshot and so honour a snapshot selector."""

EVERY_SNAPSHOT_KINDS = frozenset(
    {"all_manifests", "all_entries", "all_files", "all_data_files", "all_delete_files"}
)
"""The kinds that read the manifest list of every valid snapshot."""


_PER_ENTRY: dict[str, tuple[bool, Pick, bool]] = {
    # kind: (every reachable snapshot?, which manifests, live entries only?)
    "entries": (False, _all, False),
    "files": (False, _all, True),
    "data_files": (False, _data, True),
    "delete_files": (False, _deletes, True),
    "partitions": (False, _all, True),
    "all_entries": (True, _all, False),
    "all_files": (True, _all, True),
    "all_data_files": (True, _data, True),
    "all_delete_files": (True, _deletes, True),
}
"""The kinds built from manifest entries, one Python object per entry (see :func:`entry_count`)."""


def entry_count(
    table: TableData,
    kind: str,
    *,
    at: Point | None = None,
) -> int:
    """How many manifest entries building ``kind`` reads, from the manifest lists' counts.

    The file-level tables are made entry by entry (a million-file snapshot costs minutes
    and gigabytes), so a caller that must stay bounded (the app's SQL page) asks first; it
    reads only manifest lists. ``all_manifests`` counts its rows (a manifest list entry per
    snapshot and manifest: ~800,000 at 10,000 snapshots). 0 for the other kinds; a manifest
    whose list omits its counts (optional in v1) counts as 0.
    """
    if kind == "all_manifests":
        return sum(len(table.manifest_list(s)) for s in table.metadata.snapshots)
    shape = _PER_ENTRY.get(kind)
    if shape is None:
        return 0
    whole, pick, live = shape
    if whole:
        manifests = reachable_manifests(table)
    else:
        manifests = snapshot_manifests(table, table.resolve(at).snapshot)
    counts = (
        (m.added_files_count or 0)
        + (m.existing_files_count or 0)
        + (0 if live else (m.deleted_files_count or 0))
        for m in pick(manifests)
    )
    return sum(counts)


def inspect_table(
    table: TableData,
    kind: str,
    *,
    at: Point | None = None,
) -> pa.Table:
    """One metadata table of ``table`` as Arrow, as Spark's ``<table>.<kind>`` shows it.

    Args:
        table: the table.
        kind: one of :data:`KINDS` (``files``, ``partitions``, ...).
        at: for the kinds in :data:`SNAPSHOT_KINDS`, read the snapshot of this point (a
            snapshot id, a branch or tag, or the snapshot current on ``main`` at a time;
            :class:`icecore.point_in_time.At`); default: the current snapshot.

    A point given with a whole-table kind is still checked (an unknown ref fails) but
    does not change the result: those tables describe every snapshot.

    Raises:
        NotFound: an unknown kind, snapshot, ref or time, or a missing manifest file.
        InvalidMetadata: a corrupt or truncated manifest list or manifest.
    """
    builder = _KINDS.get(kind)
    if builder is None:
        raise NotFound(f"There is no metadata table {kind!r}; choose one of {', '.join(KINDS)}.")
    return builder(table_view(table), table.resolve(at).snapshot)


__all__ = ["EVERY_SNAPSHOT_KINDS", "KINDS", "SNAPSHOT_KINDS", "entry_count", "inspect_table"]
