"""Scan tasks built without the planner: every live data file, deletes from DeleteIndex."""

from __future__ import annotations

from icecore.manifest import DataFileContent, ManifestEntry
from icecore.point_in_time import At
from icecore.scan.delete_index import DeleteIndex
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.table import Table


def snapshot_schema(table: Table, ref: str | None = None) -> Schema:
    """The schema Spark reads a ref with: a tag's snapshot schema, else the table's."""
    return table.resolve(At(ref=ref)).schema


def live_entries(
    table: Table, ref: str | None = None
) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
    """(data entries, delete entries) of a ref's snapshot, live ones only."""
    snapshot = table.snapshot(ref=ref)
    assert snapshot is not None
    entries = table.live_entries(snapshot)
    data = [e for e in entries if e.data_file.content is DataFileContent.DATA]
    deletes = [e for e in entries if e.data_file.content is not DataFileContent.DATA]
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
