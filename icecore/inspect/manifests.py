"""``manifests`` and ``all_manifests``: manifest list entries ("Manifest Lists").

Columns and meaning follow Iceberg Java's ``ManifestsTable`` and ``AllManifestsTable``: the
manifest list's file counts are split by the manifest's content (a data manifest reports
0 delete files and the other way round), and each ``field_summary`` bound is decoded with
the partition field's result type and printed with its transform's human string (the form
of partition paths: ``2024-08-01``, ``2024-08-08-23``; a missing bound prints ``null``).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from icecore.errors import IcecoreError, InvalidMetadata
from icecore.inspect._common import TableView, from_rows
from icecore.manifest import ManifestContent, ManifestFile
from icecore.metadata import Snapshot
from icecore.partitioning import PartitionField
from icecore.types import IcebergType, UnknownType
from icecore.values import from_bytes

_SUMMARY = pa.struct(
    [
        pa.field("contains_null", pa.bool_(), nullable=False),
        pa.field("contains_nan", pa.bool_()),
        pa.field("lower_bound", pa.string()),
        pa.field("upper_bound", pa.string()),
    ]
)

_FIELDS = [
    pa.field("content", pa.int32(), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("length", pa.int64(), nullable=False),
    pa.field("partition_spec_id", pa.int32(), nullable=False),
    pa.field("added_snapshot_id", pa.int64(), nullable=False),
    pa.field("added_data_files_count", pa.int32()),
    pa.field("existing_data_files_count", pa.int32()),
    pa.field("deleted_data_files_count", pa.int32()),
    pa.field("added_delete_files_count", pa.int32()),
    pa.field("existing_delete_files_count", pa.int32()),
    pa.field("deleted_delete_files_count", pa.int32()),
    pa.field("partition_summaries", pa.list_(pa.field("element", _SUMMARY, nullable=False))),
]

MANIFESTS_SCHEMA = pa.schema(_FIELDS)
ALL_MANIFESTS_SCHEMA = pa.schema(
    [*_FIELDS, pa.field("reference_snapshot_id", pa.int64(), nullable=False)]
)


def _summaries(view: TableView, manifest: ManifestFile) -> list[dict[str, Any]] | None:
    if manifest.partitions is None:
        return None
    spec = view.table.metadata.spec_by_id(manifest.partition_spec_id)
    if spec is None:
        raise InvalidMetadata(
            f"Manifest {manifest.manifest_path} uses partition spec "
            f"{manifest.partition_spec_id}, which {view.table.metadata_location} lacks."
        )
    if len(manifest.partitions) != len(spec.fields):
        raise InvalidMetadata(
            f"Manifest list entry {manifest.manifest_path} has {len(manifest.partitions)} "
            f"partition summaries but partition spec {spec.spec_id} has {len(spec.fields)} fields."
        )
    rows = []
    for pf, summary in zip(spec.fields, manifest.partitions, strict=True):
        source = view.schema.find_type(pf.source_id) or UnknownType()
        rows.append(
            {
                "contains_null": summary.contains_null,
                "contains_nan": summary.contains_nan,
                "lower_bound": _human(manifest, pf, source, summary.lower_bound),
                "upper_bound": _human(manifest, pf, source, summary.upper_bound),
            }
        )
    return rows


def _human(
    manifest: ManifestFile, pf: PartitionField, source: IcebergType, raw: bytes | None
) -> str:
    """A summary bound as Java's ``Transform.toHumanString`` prints it (``null`` if absent)."""
    try:
        value = from_bytes(pf.transform.result_type(source), raw) if raw is not None else None
    except IcecoreError as e:
        raise InvalidMetadata(
            f"Manifest list entry {manifest.manifest_path} has a bad bound for partition "
            f"field {pf.name}: {e}"
        ) from e
    return pf.transform.to_human_string(source, value)


def _row(view: TableView, m: ManifestFile) -> dict[str, Any]:
    data = m.content == ManifestContent.DATA
    return {
        "content": int(m.content),
        "path": m.manifest_path,
        "length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "added_snapshot_id": m.added_snapshot_id,
        "added_data_files_count": m.added_files_count if data else 0,
        "existing_data_files_count": m.existing_files_count if data else 0,
        "deleted_data_files_count": m.deleted_files_count if data else 0,
        "added_delete_files_count": 0 if data else m.added_files_count,
        "existing_delete_files_count": 0 if data else m.existing_files_count,
        "deleted_delete_files_count": 0 if data else m.deleted_files_count,
        "partition_summaries": _summaries(view, m),
    }


def manifests_table(view: TableView, snapshot: Snapshot | None) -> pa.Table:
    """The manifest list of ``snapshot`` (empty for a table without snapshots)."""
    manifests = view.table.manifests(snapshot) if snapshot is not None else []
    return from_rows((_row(view, m) for m in manifests), MANIFESTS_SCHEMA)


def all_manifests_table(view: TableView) -> pa.Table:
    """Every valid snapshot's manifest list, each row naming it in ``reference_snapshot_id``.

    A manifest shared by several snapshots appears once per snapshot.
    """
    rows = []
    for snapshot in view.table.metadata.snapshots:
        for m in view.table.manifests(snapshot):
            row = _row(view, m)
            row["reference_snapshot_id"] = snapshot.snapshot_id
            rows.append(row)
    return from_rows(rows, ALL_MANIFESTS_SCHEMA)
