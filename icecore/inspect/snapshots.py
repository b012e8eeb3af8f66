"""Whole-table metadata tables read from metadata.json alone.

``snapshots`` ("Snapshots"), ``history`` (the ``snapshot-log`` of "Table Metadata Fields"),
``refs`` ("Snapshot References") and ``metadata_log_entries`` (the ``metadata-log``), with
the columns of Spark's tables of the same names (Iceberg Java's ``SnapshotsTable``,
``HistoryTable``, ``RefsTable``, ``MetadataLogEntriesTable``).
"""

from __future__ import annotations

import pyarrow as pa

from icecore.history import history, snapshot_id_as_of
from icecore.inspect._common import TIMESTAMP, from_rows, ms_to_us
from icecore.table_data import TableData

SNAPSHOTS_SCHEMA = pa.schema(
    [
        pa.field("committed_at", TIMESTAMP, nullable=False),
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("parent_id", pa.int64()),
        pa.field("operation", pa.string()),
        pa.field("manifest_list", pa.string()),
        pa.field("summary", pa.map_(pa.string(), pa.string())),
    ]
)

HISTORY_SCHEMA = pa.schema(
    [
        pa.field("made_current_at", TIMESTAMP, nullable=False),
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("parent_id", pa.int64()),
        pa.field("is_current_ancestor", pa.bool_(), nullable=False),
    ]
)

REFS_SCHEMA = pa.schema(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("max_reference_age_in_ms", pa.int64()),
        pa.field("min_snapshots_to_keep", pa.int32()),
        pa.field("max_snapshot_age_in_ms", pa.int64()),
    ]
)

METADATA_LOG_SCHEMA = pa.schema(
    [
        pa.field("timestamp", TIMESTAMP, nullable=False),
        pa.field("file", pa.string(), nullable=False),
        pa.field("latest_snapshot_id", pa.int64()),
        pa.field("latest_schema_id", pa.int32()),
        pa.field("latest_sequence_number", pa.int64()),
    ]
)


def snapshots_table(table: TableData) -> pa.Table:
    """One row per valid snapshot, in metadata order; ``summary`` without ``operation``."""
    rows = []
    for s in table.metadata.snapshots:
        summary = s.summary
        rows.append(
            {
                "committed_at": ms_to_us(s.timestamp_ms),
                "snapshot_id": s.snapshot_id,
                "parent_id": s.parent_snapshot_id,
                "operation": str(s.operation) if s.operation is not None else None,
                "manifest_list": s.manifest_list,
                "summary": list(summary.properties.items()) if summary is not None else None,
            }
        )
    return from_rows(rows, SNAPSHOTS_SCHEMA)


def history_table(table: TableData) -> pa.Table:
    """The snapshot-log: when each snapshot became current on ``main``, oldest first.

    ``parent_id`` is null when the snapshot itself was expired (the log keeps its id).
    """
    rows = [
        {
            "made_current_at": ms_to_us(h.made_current_at_ms),
            "snapshot_id": h.snapshot_id,
            "parent_id": h.parent_id,
            "is_current_ancestor": h.is_current_ancestor,
        }
        for h in history(table.metadata)
    ]
    return from_rows(rows, HISTORY_SCHEMA)


def refs_table(table: TableData) -> pa.Table:
    """Branches and tags; ``type`` is ``BRANCH`` or ``TAG`` as Java's enum prints it."""
    rows = [
        {
            "name": name,
            "type": ref.type.name,
            "snapshot_id": ref.snapshot_id,
            "max_reference_age_in_ms": ref.max_ref_age_ms,
            "min_snapshots_to_keep": ref.min_snapshots_to_keep,
            "max_snapshot_age_in_ms": ref.max_snapshot_age_ms,
        }
        for name, ref in table.metadata.refs.items()
    ]
    return from_rows(rows, REFS_SCHEMA)


def metadata_log_table(table: TableData) -> pa.Table:
    """Previous metadata files and, as the last row, the current one.

    ``latest_*`` describe the snapshot that the *current* ``snapshot-log`` says was current
    on ``main`` at the entry's time, as Spark derives them; the old files are not read. So
    files from before the oldest surviving log entry (trimmed by snapshot expiry) show
    null, and a snapshot that was expired shows its id with null schema and sequence number.
    """
    metadata = table.metadata
    entries = [(e.timestamp_ms, e.metadata_file) for e in metadata.metadata_log]
    entries.append((metadata.last_updated_ms, table.metadata_location))
    rows = []
    for timestamp_ms, path in entries:
        snapshot_id = snapshot_id_as_of(metadata, timestamp_ms)
        snapshot = metadata.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
        rows.append(
            {
                "timestamp": ms_to_us(timestamp_ms),
                "file": path,
                "latest_snapshot_id": snapshot_id,
                "latest_schema_id": snapshot.schema_id if snapshot is not None else None,
                "latest_sequence_number": (
                    snapshot.sequence_number if snapshot is not None else None
                ),
            }
        )
    return from_rows(rows, METADATA_LOG_SCHEMA)
