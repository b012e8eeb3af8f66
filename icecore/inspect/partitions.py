"""``partitions``: per-partition totals of one snapshot's live files.

Semantics of Iceberg Java's ``PartitionsTable`` (what Spark shows):

* every live (ADDED or EXISTING) entry of the snapshot's data *and* delete manifests counts;
* the partition tuple is coerced to the union of all specs' fields ("Partitioning",
  Java's ``Partitioning.partitionType``), and rows are grouped by that tuple and the number
  of fields of the file's spec: files of two specs share a row only when their coerced tuples
  are equal and their specs have as many fields (measured against Spark on Iceberg 1.10:
  files whose values are all NULL under specs of one, two and three fields make three rows,
  under two specs of two fields one row; so do ``'x'`` values);
* ``record_count``/``file_count``/``total_data_file_size_in_bytes`` count data files only;
  position deletes (deletion vectors included: their cardinality and one per vector)
  and equality deletes are counted apart;
* ``last_updated_at``/``last_updated_snapshot_id``: the newest commit time among the
  snapshots that added the group's entries (``snapshot_id`` of each entry); entries whose
  snapshot has been expired do not count, and a group with only such entries shows null;
* an unpartitioned table has neither ``partition`` nor ``spec_id``: one row for all files.

Where Java takes ``spec_id`` from whichever file it read last (its manifests are read in
parallel, so the answer may change between runs), Icecore takes the largest spec id of
the group's files, which is the same whenever the group holds one spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icecore.inspect._common import (
    TIMESTAMP,
    Decoded,
    TableView,
    entries,
    from_rows,
    ms_to_us,
)
from icecore.manifest import DataFileContent, ManifestEntry


def partitions_schema(view: TableView) -> pa.Schema:
    """Columns of ``partitions`` (no ``partition``/``spec_id`` when unpartitioned)."""
    fields = []
    if view.partitioned:
        fields += [
            pa.field("partition", view.partition_arrow_type(), nullable=False),
            pa.field("spec_id", pa.int32(), nullable=False),
        ]
    fields += [
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("file_count", pa.int32(), nullable=False),
        pa.field("total_data_file_size_in_bytes", pa.int64(), nullable=False),
        pa.field("position_delete_record_count", pa.int64(), nullable=False),
        pa.field("position_delete_file_count", pa.int32(), nullable=False),
        pa.field("equality_delete_record_count", pa.int64(), nullable=False),
        pa.field("equality_delete_file_count", pa.int32(), nullable=False),
        pa.field("last_updated_at", TIMESTAMP),
        pa.field("last_updated_snapshot_id", pa.int64()),
    ]
    return pa.schema(fields)


@dataclass(slots=True)
class _Totals:
    partition: dict[int, Any]
    spec_id: int = -1
    record_count: int = 0
    file_count: int = 0
    data_size: int = 0
    pos_records: int = 0
    pos_files: int = 0
    eq_records: int = 0
    eq_files: int = 0
    last_ms: int | None = None
    last_snapshot_id: int | None = None

    def add(self, view: TableView, e: ManifestEntry) -> None:
        f = e.data_file
        self.spec_id = max(self.spec_id, f.spec_id)
        if f.content == DataFileContent.DATA:
            self.record_count += f.record_count
            self.file_count += 1
            self.data_size += f.file_size_in_bytes
        elif f.content == DataFileContent.POSITION_DELETES:
            self.pos_records += f.record_count
            self.pos_files += 1
        else:
            self.eq_records += f.record_count
            self.eq_files += 1
        if e.snapshot_id is None:
            return
        snapshot = view.table.metadata.snapshot_by_id(e.snapshot_id)
        if snapshot is not None and (self.last_ms is None or snapshot.timestamp_ms > self.last_ms):
            self.last_ms = snapshot.timestamp_ms
            self.last_snapshot_id = snapshot.snapshot_id

    def row(self, view: TableView) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if view.partitioned:
            out["partition"] = view.partition_value(self.partition)
            out["spec_id"] = self.spec_id
        out.update(
            record_count=self.record_count,
            file_count=self.file_count,
            total_data_file_size_in_bytes=self.data_size,
            position_delete_record_count=self.pos_records,
            position_delete_file_count=self.pos_files,
            equality_delete_record_count=self.eq_records,
            equality_delete_file_count=self.eq_files,
            last_updated_at=ms_to_us(self.last_ms),
            last_updated_snapshot_id=self.last_snapshot_id,
        )
        return out


def partitions_table(view: TableView, manifests: Decoded) -> pa.Table:
    """Totals per coerced partition tuple (and spec width) over decoded live ``manifests``."""
    groups: dict[tuple[Any, ...], _Totals] = {}
    widths: dict[int, int] = {}
    for e in entries(manifests):
        spec_id = e.data_file.spec_id
        width = widths.get(spec_id)
        if width is None:
            spec = view.table.metadata.spec_by_id(spec_id)
            width = widths[spec_id] = -1 if spec is None else len(spec.fields)
        key = (width, *view.partition_key(e.data_file.partition))
        totals = groups.get(key)
        if totals is None:
            totals = groups[key] = _Totals(partition=dict(e.data_file.partition))
        totals.add(view, e)
    return from_rows((t.row(view) for t in groups.values()), partitions_schema(view))
