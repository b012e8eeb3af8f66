"""Scan tasks built without the planner: every live data file, deletes from DeleteIndex."""

from __future__ import annotations

from icecore.manifest import DataFileContent, ManifestEntry, ManifestEntryStatus, read_manifest
from icecore.scan.delete_index import DeleteIndex
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.table import Table


def snapshot_schema(table: Table, ref: str | None = None) -> Schema:
    """The schema Spark reads a ref with: a tag's snapshot schema, else the table's."""
    meta = table.metadata
    snapshot = table.snapshot(ref=ref)
    named = meta.refs.get(ref) if ref is not None else None
    if named is not None and not named.is_branch and snapshot is not None:
        found = meta.schema_by_id(snapshot.schema_id) if snapshot.schema_id is not None else None
        if found is not None:
            return found
    return meta.current_schema()


def live_entries(
    table: Table, ref: str | None = None
) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
    """(data entries, delete entries) of a ref's snapshot, live ones only."""
    snapshot = table.snapshot(ref=ref)
    assert snapshot is not None
    schema = snapshot_schema(table, ref)
    data: list[ManifestEntry] = []
    deletes: list[ManifestEntry] = []
    for manifest in table.manifests(snapshot):
        spec = table.metadata.spec_by_id(manifest.partition_spec_id)
        assert spec is not None
        for entry in read_manifest(table.io, manifest, schema, spec, table.format_version):
            if entry.status is ManifestEntryStatus.DELETED:
                continue
            if entry.data_file.content is DataFileContent.DATA:
                data.append(entry)
            else:
                deletes.append(entry)
    return data, deletes


def manual_tasks(table: Table, ref: str | None = None) -> list[FileScanTask]:
    """One task per live data file of the ref, with the deletes DeleteIndex attaches."""
    schema = snapshot_schema(table, ref)
    data, deletes = live_entries(table, ref)
    index = DeleteIndex(deletes, table.metadata.specs_by_id())
    tasks = []
    for entry in data:
        seq = entry.sequence_number or 0
        spec = table.metadata.spec_by_id(entry.data_file.spec_id)
        assert spec is not None
        tasks.append(
            FileScanTask(
                data_file=entry.data_file,
                data_sequence_number=seq,
                spec=spec,
                schema=schema,
                delete_files=index.for_data_file(entry.data_file, seq),
            )
        )
    return tasks
