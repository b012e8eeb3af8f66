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
manifest lists and manifests it needs once, and caches nothing across calls. Each kind is one
record of :data:`~icecore.inspect.kinds.METADATA_TABLES`, which every consumer reads.
"""

from __future__ import annotations

import pyarrow as pa

from icecore.errors import NotFound
from icecore.inspect._common import table_view
from icecore.inspect.kinds import METADATA_TABLES, MetadataTable, Scope
from icecore.point_in_time import Point
from icecore.row_access import mask_metadata_table
from icecore.table_data import TableData, access_of

KINDS: tuple[str, ...] = tuple(METADATA_TABLES)
"""Every metadata table :func:`inspect_table` builds, by Spark's name."""

SNAPSHOT_KINDS = frozenset(k for k, r in METADATA_TABLES.items() if r.scope is Scope.SNAPSHOT)
"""The kinds that describe one snapshot and so honour a snapshot selector."""


def metadata_table(kind: str) -> MetadataTable:
    """The registry's record of ``kind``.

    Raises:
        NotFound: no metadata table has that name (the sentence lists the valid ones).
    """
    record = METADATA_TABLES.get(kind)
    if record is None:
        raise NotFound(f"There is no metadata table {kind!r}; choose one of {', '.join(KINDS)}.")
    return record


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
    record = metadata_table(kind)
    point = table.resolve(at)
    built = record.build(table_view(table), point.snapshot)
    # Viewer-level, but the values of a masked column (bounds, readable metrics, partition
    # values of a partition field it is the source of) are left out (icecore.row_access).
    access = access_of(table)
    if not access.mask:
        return built
    metadata = table.metadata
    schemas = [metadata.current_schema(), point.schema]
    return mask_metadata_table(built, schemas, metadata.partition_specs, access)


__all__ = [
    "KINDS",
    "METADATA_TABLES",
    "SNAPSHOT_KINDS",
    "MetadataTable",
    "Scope",
    "inspect_table",
    "metadata_table",
]
