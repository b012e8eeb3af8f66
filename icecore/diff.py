"""What changed between two points of a table's history, from metadata alone.

Two snapshots are compared by their live files (spec "Manifests": ADDED and EXISTING
entries): data and delete files added and removed, the rows those files carry (record
counts, before deletes; delete files count delete records, not rows), the partitions
touched, and the schema and partition-spec differences (fields compared by id, so a
rename is a rename, not a drop and an add).

Only the manifests that are not in both manifest lists are read: a manifest is immutable,
so one listed by both snapshots holds the same live files on both sides, and a file is live
in one manifest of a snapshot at most, so the files of shared manifests cancel out (two
neighbouring snapshots of a 100,000-file table differ by a manifest or two).

The manifest reader and the row-access masks (pyarrow) are imported by the functions that
use them, so the schema comparisons the metadata log's events are made of load neither
(issue 32 item 4).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icecore.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icecore.metadata import Snapshot
from icecore.partitioning import PartitionSpec
from icecore.progress import report
from icecore.schema import Schema
from icecore.table_data import access_of
from icecore.types import NestedField

if TYPE_CHECKING:
    from icecore.table_data import TableData


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One schema difference, by field id.

    Attributes:
        kind: ``added``, ``removed``, ``renamed``, ``type``, ``required`` or ``doc``.
        field_id: the field's id.
        name: the field's full name (the newer one for renames and changes).
        before, after: the old and new name, type, nullability or doc ("" when absent).
    """

    kind: str
    field_id: int
    name: str
    before: str = ""
    after: str = ""


@dataclass(frozen=True, slots=True)
class SnapshotDiff:
    """Files, rows, partitions, schema and specs between two snapshots of one table."""

    from_snapshot_id: int | None
    to_snapshot_id: int
    data_files_added: tuple[DataFile, ...]
    data_files_removed: tuple[DataFile, ...]
    delete_files_added: tuple[DataFile, ...]
    delete_files_removed: tuple[DataFile, ...]
    partitions_touched: tuple[str, ...]
    schema_changes: tuple[FieldChange, ...]
    specs_before: tuple[int, ...]
    specs_after: tuple[int, ...]
    spec_fields: dict[int, str] = field(default_factory=dict)

    @property
    def rows_added(self) -> int:
        """Rows in data files that appeared (record counts, before any delete)."""
        return sum(f.record_count for f in self.data_files_added)

    @property
    def rows_removed(self) -> int:
        """Records of data files that disappeared: not rows a delete file removed.

        Rows removed as a reader sees them (deletes included) need the live rows at both
        points: :func:`icecore.row_counts.rows_between`.
        """
        return sum(f.record_count for f in self.data_files_removed)

    @property
    def delete_records_added(self) -> int:
        """Delete records (positions, keys, DV cardinalities) in delete files that appeared."""
        return sum(f.record_count for f in self.delete_files_added)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (file lists as paths)."""
        return {
            "from_snapshot_id": self.from_snapshot_id,
            "to_snapshot_id": self.to_snapshot_id,
            "data_files_added": [f.file_path for f in self.data_files_added],
            "data_files_removed": [f.file_path for f in self.data_files_removed],
            "delete_files_added": [f.file_path for f in self.delete_files_added],
            "delete_files_removed": [f.file_path for f in self.delete_files_removed],
            "rows_added": self.rows_added,
            "rows_removed": self.rows_removed,
            "data_file_records_added": self.rows_added,
            "data_file_records_removed": self.rows_removed,
            "delete_records_added": self.delete_records_added,
            "partitions_touched": list(self.partitions_touched),
            "schema_changes": [
                {
                    "kind": c.kind,
                    "field_id": c.field_id,
                    "name": c.name,
                    "before": c.before,
                    "after": c.after,
                }
                for c in self.schema_changes
            ],
            "specs_before": list(self.specs_before),
            "specs_after": list(self.specs_after),
            "spec_fields": {str(k): v for k, v in self.spec_fields.items()},
        }


def _by_path(entries: Iterable[ManifestEntry], data: bool) -> dict[str, DataFile]:
    return {
        e.data_file.file_path: e.data_file
        for e in entries
        if (e.data_file.content is DataFileContent.DATA) == data
    }


def _fields(schema: Schema) -> dict[int, tuple[str, NestedField]]:
    found: dict[int, tuple[str, NestedField]] = {}
    for fid in schema.field_ids:
        f = schema.find_field(fid)
        if f is not None:
            found[fid] = (schema.find_column_name(fid) or f.name, f)
    return found


def schema_changes(before: Schema | None, after: Schema) -> list[FieldChange]:
    """Differences between two schemas, matched by field id."""
    if before is None or before.schema_id == after.schema_id:
        return []
    old, new = _fields(before), _fields(after)
    changes: list[FieldChange] = []
    for fid, (name, f) in sorted(new.items()):
        if fid not in old:
            changes.append(FieldChange("added", fid, name, after=str(f.field_type)))
            continue
        old_name, g = old[fid]
        if old_name != name:
            changes.append(FieldChange("renamed", fid, name, old_name, name))
        if str(g.field_type) != str(f.field_type) and not _both_nested(g, f):
            changes.append(FieldChange("type", fid, name, str(g.field_type), str(f.field_type)))
        if g.required != f.required:
            changes.append(FieldChange("required", fid, name, _nullability(g), _nullability(f)))
        if (g.doc or "") != (f.doc or ""):
            changes.append(FieldChange("doc", fid, name, g.doc or "", f.doc or ""))
    for fid, (name, g) in sorted(old.items()):
        if fid not in new:
            changes.append(FieldChange("removed", fid, name, before=str(g.field_type)))
    return changes


def _both_nested(a: NestedField, b: NestedField) -> bool:
    return not a.field_type.is_primitive and not b.field_type.is_primitive


def _nullability(f: NestedField) -> str:
    return "required" if f.required else "optional"


MASKED = "masked"
"""How a partition value of a masked source column is labelled (icecore.row_access)."""


def _partition_label(
    spec: PartitionSpec | None,
    data_file: DataFile,
    schema: Schema,
    hidden: frozenset[int] = frozenset(),
) -> str:
    if spec is None or spec.is_unpartitioned:
        return f"spec {data_file.spec_id}: (unpartitioned)"
    parts = []
    for pf in spec.fields:
        value = data_file.partition.get(pf.field_id)
        source = schema.find_field(pf.source_id)
        if pf.field_id in hidden:
            text = MASKED  # its values are a masked column's values
        elif value is None:
            text = "null"
        elif source is not None:
            text = pf.transform.to_human_string(source.field_type, value)
        else:
            text = str(value)
        parts.append(f"{pf.name}={text}")
    return f"spec {data_file.spec_id}: " + "/".join(parts)


def _shared_data_specs(
    table: TableData, snapshot: Snapshot, shared: list[ManifestFile]
) -> set[int]:
    """Spec ids of the live data files in manifests both snapshots list.

    From the manifest list's file counts; a manifest whose counts a v1 writer left null is
    read to find out.
    """
    specs: set[int] = set()
    unknown: list[ManifestFile] = []
    for m in shared:
        if m.content is not ManifestContent.DATA:
            continue
        if m.added_files_count is None or m.existing_files_count is None:
            unknown.append(m)
        elif m.added_files_count + m.existing_files_count > 0:
            specs.add(m.partition_spec_id)
    if unknown:
        specs.update(
            e.data_file.spec_id
            for e in table.live_entries(snapshot, unknown)
            if e.data_file.content is DataFileContent.DATA
        )
    return specs


def _live_entries(
    table: TableData, snapshot: Snapshot, manifests: list[ManifestFile], start: int, total: int
) -> list[ManifestEntry]:
    """The live entries of ``manifests``, telling the progress listener after each one.

    Two points far apart differ by thousands of manifests (seconds of reading): the app
    shows "Reading manifests: k of n" (:mod:`icecore.progress`); ``start`` of ``total``
    were read before these.
    """
    from icecore.manifest_arrow import entries_from_arrow, live_files

    found: list[ManifestEntry] = []
    schema = table.read_schema(snapshot)
    for done, (manifest, files) in enumerate(
        live_files(table, snapshot, schema, manifests), start=start + 1
    ):
        found.extend(entries_from_arrow(files, manifest.partition_spec_id))
        report("Reading manifests", done, total)
    return found


def diff_snapshots(table: TableData, before: Snapshot | None, after: Snapshot) -> SnapshotDiff:
    """Compare two snapshots (``before`` may be None: everything in ``after`` is added)."""
    old_list = table.manifests(before) if before is not None else []
    new_list = table.manifests(after)
    shared = {m.manifest_path for m in old_list} & {m.manifest_path for m in new_list}
    old_read = [m for m in old_list if m.manifest_path not in shared]
    new_read = [m for m in new_list if m.manifest_path not in shared]
    total = len(old_read) + len(new_read)
    old_entries = _live_entries(table, before, old_read, 0, total) if before is not None else []
    new_entries = _live_entries(table, after, new_read, len(old_read), total)
    in_both = [m for m in new_list if m.manifest_path in shared]
    shared_specs = _shared_data_specs(table, after, in_both)
    old_data, new_data = _by_path(old_entries, True), _by_path(new_entries, True)
    old_del, new_del = _by_path(old_entries, False), _by_path(new_entries, False)
    from icecore.row_access import masked_partition_fields

    metadata = table.metadata
    schema = metadata.current_schema()
    hidden = masked_partition_fields(metadata.partition_specs, schema, access_of(table))
    added = tuple(f for p, f in new_data.items() if p not in old_data)
    removed = tuple(f for p, f in old_data.items() if p not in new_data)
    del_added = tuple(f for p, f in new_del.items() if p not in old_del)
    del_removed = tuple(f for p, f in old_del.items() if p not in new_del)
    touched = sorted(
        {
            _partition_label(metadata.spec_by_id(f.spec_id), f, schema, hidden)
            for f in (*added, *removed, *del_added, *del_removed)
        }
    )
    before_schema = (
        metadata.schema_by_id(before.schema_id)
        if before is not None and before.schema_id is not None
        else None
    )
    after_schema = (
        metadata.schema_by_id(after.schema_id) if after.schema_id is not None else None
    ) or schema
    specs_before = tuple(sorted(shared_specs | {f.spec_id for f in old_data.values()}))
    specs_after = tuple(sorted(shared_specs | {f.spec_id for f in new_data.values()}))
    spec_fields = {}
    for spec_id in sorted({*specs_before, *specs_after}):
        spec = metadata.spec_by_id(spec_id)
        if spec is not None:
            spec_fields[spec_id] = ", ".join(f"{f.name}: {f.transform}" for f in spec.fields) or (
                "unpartitioned"
            )
    return SnapshotDiff(
        from_snapshot_id=before.snapshot_id if before is not None else None,
        to_snapshot_id=after.snapshot_id,
        data_files_added=added,
        data_files_removed=removed,
        delete_files_added=del_added,
        delete_files_removed=del_removed,
        partitions_touched=tuple(touched),
        schema_changes=tuple(schema_changes(before_schema, after_schema)),
        specs_before=specs_before,
        specs_after=specs_after,
        spec_fields=spec_fields,
    )
