"""Write one snapshot that adds (and may delete) data files: new manifests, a new manifest list.

Icecore otherwise writes only metadata JSON; cherry-picking an append whose parent is not
the branch head needs a new snapshot, as Iceberg Java's ``CherryPickOperation`` (a
``MergingSnapshotProducer``) makes one. Spec "Manifests", "Manifest Lists", "Snapshots",
"Sequence Numbers" and "Row Lineage":

- the new manifest holds the picked data files as ADDED entries of the new snapshot, with
  null sequence numbers (inherited from the manifest list, "Sequence Number Inheritance")
  and, in v3, a null ``first_row_id`` (Java suppresses it: the files get new row ids from
  the manifest's ``first_row_id``); every other ``data_file`` field (metrics, split
  offsets, ...) is copied as written, in the Avro schema the picked manifest was written
  with (its field ids, partition struct and header);
- the manifest list is the branch head's data and delete manifests that still have added
  or existing files, after the new manifest, grouped by spec id from the highest (Java's
  ``ManifestMergeManager`` order; small tables are not merged below
  ``commit.manifest.min-count-to-merge``, and Icecore never merges: a valid, if longer,
  list); in v3, each data manifest without a ``first_row_id`` gets the next one, and the
  snapshot's ``added-rows`` is what was assigned;
- a replayed dynamic overwrite also deletes data files: each head manifest holding one is
  written again (the file DELETED by the new snapshot, the other live files EXISTING with
  their inherited values made explicit, as Java's ``ManifestFilterManager`` does), and
  deletion vectors of removed files and delete files older than every data file left are
  dropped from their delete manifests the same way;
- the summary is Java's: the picked properties, ``added-*``/``deleted-*``/``removed-*``
  counts, ``changed-partition-count``, ``total-*`` carried from the branch head.

Files are created under the table's metadata folder with names no other writer uses
(``<uuid>-m<n>.avro``, ``snap-<id>-1-<uuid>.avro``) and never replace anything: a commit
that then fails leaves them unreferenced, as Java does.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icecore.avro import AvroFile, read_avro, write_avro
from icecore.errors import IcecoreError, InvalidMetadata, Unsupported, ValidationError
from icecore.io import MAX_METADATA_BYTES
from icecore.manifest import (
    AvroFields,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    non_null_branch,
)
from icecore.manifest_arrow import read_manifest
from icecore.metadata import Snapshot, TableMetadata
from icecore.metadata.model import Summary
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.table_data import TableData
from icecore.types import DoubleType, FloatType, IcebergType
from icecore.values import to_bytes

_ENTRY_STATUS, _ENTRY_SNAPSHOT, _ENTRY_SEQ, _ENTRY_FILE_SEQ, _ENTRY_FILE = 0, 1, 3, 4, 2
_DF_CONTENT, _DF_PATH, _DF_RECORDS, _DF_FIRST_ROW_ID = 134, 100, 103, 142

_ML = {  # manifest list field ids ("Manifest Lists")
    "path": 500,
    "length": 501,
    "spec": 502,
    "content": 517,
    "seq": 515,
    "min_seq": 516,
    "snapshot": 503,
    "added_files": 504,
    "existing_files": 505,
    "deleted_files": 506,
    "added_rows": 512,
    "existing_rows": 513,
    "deleted_rows": 514,
    "partitions": 507,
    "key_metadata": 519,
    "first_row_id": 520,
}
_FS = {"contains_null": 509, "contains_nan": 518, "lower_bound": 510, "upper_bound": 511}


def _opt(name: str, avro_type: Any, field_id: int) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}


def _req(name: str, avro_type: Any, field_id: int) -> dict[str, Any]:
    return {"name": name, "type": avro_type, "field-id": field_id}


def manifest_list_schema(format_version: int) -> dict[str, Any]:
    """The Avro schema Iceberg Java writes manifest lists with (v2 and v3, "Manifest Lists")."""
    summary = {
        "type": "record",
        "name": "r508",
        "fields": [
            _req("contains_null", "boolean", 509),
            _opt("contains_nan", "boolean", 518),
            _opt("lower_bound", "bytes", 510),
            _opt("upper_bound", "bytes", 511),
        ],
    }
    fields = [
        _req("manifest_path", "string", 500),
        _req("manifest_length", "long", 501),
        _req("partition_spec_id", "int", 502),
        _req("content", "int", 517),
        _req("sequence_number", "long", 515),
        _req("min_sequence_number", "long", 516),
        _req("added_snapshot_id", "long", 503),
        _req("added_files_count", "int", 504),
        _req("existing_files_count", "int", 505),
        _req("deleted_files_count", "int", 506),
        _req("added_rows_count", "long", 512),
        _req("existing_rows_count", "long", 513),
        _req("deleted_rows_count", "long", 514),
        _opt("partitions", {"type": "array", "items": summary, "element-id": 508}, 507),
        _opt("key_metadata", "bytes", 519),
    ]
    if format_version >= 3:
        fields.append(_opt("first_row_id", "long", 520))
    return {"type": "record", "name": "manifest_file", "fields": fields}


def new_snapshot_id(metadata: TableMetadata) -> int:
    """A fresh positive snapshot id, as Java's ``SnapshotIdGeneratorUtil`` makes them."""
    while True:
        u = uuid.uuid4().int
        candidate = ((u >> 64) ^ (u & (2**64 - 1))) & (2**63 - 1)
        if candidate and metadata.snapshot_by_id(candidate) is None:
            return candidate


def metadata_folder(metadata: TableMetadata) -> str:
    """Where the table's metadata files go (``write.metadata.path`` or ``<location>/metadata``)."""
    custom = metadata.properties.get("write.metadata.path")
    if custom:
        return custom.rstrip("/")
    return f"{metadata.location.rstrip('/')}/metadata"


# Picked files ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PickedFile:
    """A content file a new snapshot adds or removes: its Avro record and what summaries need.

    Attributes:
        record: the ``manifest_entry`` record as decoded from its manifest.
        spec_id: the partition spec of its manifest.
        partition: partition values by partition field id (Icecore's Python values).
        record_count: rows in the file (deletes in a delete file).
        file_size_in_bytes: the size Java's summaries count (a deletion vector's blob size).
        content: data, position deletes or equality deletes.
        is_dv: a deletion vector (a position delete with a content offset).
        path: the file's location.
    """

    record: dict[str, Any]
    spec_id: int
    partition: Mapping[int, Any]
    record_count: int
    file_size_in_bytes: int
    content: DataFileContent = DataFileContent.DATA
    is_dv: bool = False
    path: str = ""


def _picked(record: dict[str, Any], spec_id: int, entry: ManifestEntry) -> PickedFile:
    f = entry.data_file
    is_dv = f.content == DataFileContent.POSITION_DELETES and f.content_offset is not None
    size = f.content_size_in_bytes if is_dv and f.content_size_in_bytes is not None else None
    return PickedFile(
        record=record,
        spec_id=spec_id,
        partition=f.partition,
        record_count=f.record_count,
        file_size_in_bytes=size if size is not None else f.file_size_in_bytes,
        content=f.content,
        is_dv=is_dv,
        path=f.file_path,
    )


@dataclass(frozen=True, slots=True)
class _Decoded:
    """One manifest decoded twice: raw Avro records (to copy) and Icecore's entries."""

    manifest: ManifestFile
    spec: PartitionSpec
    raw: AvroFile
    fields: AvroFields
    file_fields: AvroFields
    entries: list[ManifestEntry]


def _decode(
    table: TableData,
    metadata: TableMetadata,
    manifest: ManifestFile,
    schema: Schema,
    *,
    for_copy: bool = True,
) -> _Decoded:
    """Both decodings of ``manifest``, checked to list the same files in the same order.

    ``for_copy``: its records will be written into a manifest of the table's format version,
    so the manifest must have been written for that version too.
    """
    spec = metadata.spec_by_id(manifest.partition_spec_id)
    if spec is None:
        raise InvalidMetadata(
            f"Manifest {manifest.manifest_path} names partition spec "
            f"{manifest.partition_spec_id}, which the table does not have."
        )
    path = manifest.manifest_path
    raw = read_avro(table.io.read(path, limit=MAX_METADATA_BYTES), path)
    version = raw.metadata.get("format-version", "1")
    if for_copy and version != str(metadata.format_version):
        raise Unsupported(
            f"Manifest {manifest.manifest_path} was written for format version {version} "
            f"and the table is now v{metadata.format_version}; Icecore copies files "
            "between manifests of the same version only: cherry-pick this snapshot with "
            "Spark's cherrypick_snapshot."
        )
    entries = read_manifest(table.io, manifest, schema, spec, metadata.format_version)
    fields = AvroFields(raw.schema, manifest.manifest_path, "The manifest entry schema")
    file_fields = AvroFields(
        non_null_branch(fields.types[_ENTRY_FILE]), manifest.manifest_path, "data_file"
    )
    same = len(entries) == len(raw.records) and all(
        file_fields.get(fields.get(r, _ENTRY_FILE), _DF_PATH) == e.data_file.file_path
        for r, e in zip(raw.records, entries, strict=False)
    )
    if not same:
        raise InvalidMetadata(f"Manifest {manifest.manifest_path} decoded two ways differs.")
    return _Decoded(manifest, spec, raw, fields, file_fields, entries)


@dataclass(frozen=True, slots=True)
class PickedManifest:
    """The Avro layout of a manifest the picked snapshot wrote, to write the copy alike."""

    schema: Mapping[str, Any]
    header: Mapping[str, str]


def snapshot_changes(
    table: TableData, metadata: TableMetadata, snapshot: Snapshot, *, for_copy: bool = True
) -> tuple[list[PickedFile], list[PickedFile], dict[int, PickedManifest]]:
    """The data files ``snapshot`` added and removed (Java's added/removed data files).

    Reads only the data manifests the snapshot wrote (``added_snapshot_id``): their ADDED
    and DELETED entries, and the Avro layout of the manifest of each partition spec.
    ``for_copy=False`` when the files are only looked at, not copied.

    Raises:
        Unsupported: copying from a manifest written for another format version.
        InvalidMetadata: a manifest is broken.
    """
    schema = _schema_of(metadata, snapshot)
    added: list[PickedFile] = []
    removed: list[PickedFile] = []
    layouts: dict[int, PickedManifest] = {}
    for manifest in table.manifests(snapshot):
        if manifest.content != ManifestContent.DATA:
            continue
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        d = _decode(table, metadata, manifest, schema, for_copy=for_copy)
        layouts.setdefault(
            d.spec.spec_id,
            PickedManifest(json.loads(d.raw.metadata["avro.schema"]), dict(d.raw.metadata)),
        )
        for record, entry in zip(d.raw.records, d.entries, strict=True):
            if entry.data_file.content != DataFileContent.DATA:
                continue
            if entry.status == ManifestEntryStatus.ADDED:
                added.append(_picked(record, d.spec.spec_id, entry))
            elif entry.status == ManifestEntryStatus.DELETED:
                removed.append(_picked(record, d.spec.spec_id, entry))
    return added, removed, layouts


def added_data_files(
    table: TableData, metadata: TableMetadata, snapshot: Snapshot
) -> tuple[list[PickedFile], dict[int, PickedManifest]]:
    """The data files ``snapshot`` added (Java's ``Snapshot.addedDataFiles``)."""
    added, _, layouts = snapshot_changes(table, metadata, snapshot)
    return added, layouts


def _schema_of(metadata: TableMetadata, snapshot: Snapshot) -> Schema:
    by_id = metadata.schema_by_id(snapshot.schema_id) if snapshot.schema_id is not None else None
    return by_id or metadata.current_schema()


# The new manifest --------------------------------------------------------------------------


def _entry_record(
    record: Mapping[str, Any], fields: AvroFields, file_fields: AvroFields, snapshot_id: int
) -> dict[str, Any]:
    """The picked entry as an ADDED entry of the new snapshot (inherits sequence numbers)."""
    out = dict(record)
    out[fields.names[_ENTRY_STATUS]] = int(ManifestEntryStatus.ADDED)
    out[fields.names[_ENTRY_SNAPSHOT]] = snapshot_id
    for fid in (_ENTRY_SEQ, _ENTRY_FILE_SEQ):
        if fid in fields.names:
            out[fields.names[fid]] = None
    data_file = dict(out[fields.names[_ENTRY_FILE]])
    if _DF_FIRST_ROW_ID in file_fields.names:
        data_file[file_fields.names[_DF_FIRST_ROW_ID]] = None
    out[fields.names[_ENTRY_FILE]] = data_file
    return out


def _bound_key(t: IcebergType) -> Callable[[Any], Any]:
    return (lambda v: (v != v, v)) if isinstance(t, FloatType | DoubleType) else (lambda v: v)


def field_summaries(
    spec: PartitionSpec, partition_types: Sequence[IcebergType], files: Sequence[PickedFile]
) -> list[dict[str, Any]]:
    """The manifest list ``partitions`` of a manifest holding ``files`` (field_summary).

    As Java's ``PartitionSummary``: ``contains_nan`` written (false unless a NaN was seen),
    bounds as Appendix D bytes of the partition value, over non-null, non-NaN values.
    """
    out: list[dict[str, Any]] = []
    for field, t in zip(spec.fields, partition_types, strict=True):
        values = [f.partition.get(field.field_id) for f in files]
        present = [v for v in values if v is not None]
        nan = any(isinstance(v, float) and v != v for v in present)
        ordered = sorted(
            (v for v in present if not (isinstance(v, float) and v != v)), key=_bound_key(t)
        )
        out.append(
            {
                "contains_null": len(present) < len(values),
                "contains_nan": nan,
                "lower_bound": to_bytes(t, ordered[0]) if ordered else None,
                "upper_bound": to_bytes(t, ordered[-1]) if ordered else None,
            }
        )
    return out


# The snapshot ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WrittenSnapshot:
    """A snapshot written to storage but not committed, and every file written for it."""

    snapshot: Snapshot
    files: tuple[str, ...]


_TOTALS = (
    ("total-records", "added-records", "deleted-records"),
    ("total-files-size", "added-files-size", "removed-files-size"),
    ("total-data-files", "added-data-files", "deleted-data-files"),
    ("total-delete-files", "added-delete-files", "removed-delete-files"),
    ("total-position-deletes", "added-position-deletes", "removed-position-deletes"),
    ("total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"),
)


def _metrics(added: Sequence[PickedFile], removed: Sequence[PickedFile]) -> dict[str, str]:
    """Java's ``UpdateMetrics.addTo``: each count only when above 0, in Java's order."""
    n: dict[str, int] = {}

    def bump(key: str, by: int) -> None:
        n[key] = n.get(key, 0) + by

    for files, side in ((added, "added"), (removed, "removed")):
        for f in files:
            bump(f"{side}-size", f.file_size_in_bytes)
            if f.content == DataFileContent.DATA:
                bump(f"{side}-files", 1)
                bump(f"{side}-records", f.record_count)
            elif f.content == DataFileContent.POSITION_DELETES:
                bump(f"{side}-dvs" if f.is_dv else f"{side}-pos-files", 1)
                bump(f"{side}-delete-files", 1)
                bump(f"{side}-pos-deletes", f.record_count)
            else:
                bump(f"{side}-delete-files", 1)
                bump(f"{side}-eq-files", 1)
                bump(f"{side}-eq-deletes", f.record_count)
    order = (
        ("added-files", "added-data-files"),
        ("removed-files", "deleted-data-files"),
        ("added-eq-files", "added-equality-delete-files"),
        ("removed-eq-files", "removed-equality-delete-files"),
        ("added-pos-files", "added-position-delete-files"),
        ("removed-pos-files", "removed-position-delete-files"),
        ("added-delete-files", "added-delete-files"),
        ("removed-delete-files", "removed-delete-files"),
        ("added-dvs", "added-dvs"),
        ("removed-dvs", "removed-dvs"),
        ("added-records", "added-records"),
        ("removed-records", "deleted-records"),
        ("added-size", "added-files-size"),
        ("removed-size", "removed-files-size"),
        ("added-pos-deletes", "added-position-deletes"),
        ("removed-pos-deletes", "removed-position-deletes"),
        ("added-eq-deletes", "added-equality-deletes"),
        ("removed-eq-deletes", "removed-equality-deletes"),
    )
    return {key: str(n[name]) for name, key in order if n.get(name, 0) > 0}


def append_summary(
    properties: Mapping[str, str],
    files: Sequence[PickedFile],
    previous: Snapshot | None,
    removed: Sequence[PickedFile] = (),
) -> dict[str, str]:
    """The summary Java's ``SnapshotProducer`` writes for adding ``files`` (removing ``removed``).

    ``properties`` first (``published-wap-id``, ``source-snapshot-id``), then the added and
    removed counts (each only when above 0), ``changed-partition-count`` (partitions of
    every added or removed file), and the totals: the branch head's plus what was added,
    minus what was removed (a total the head lacks or cannot parse is left out; with no head
    they start at 0).
    """
    summary = dict(properties)
    summary.update(_metrics(files, removed))
    # Java counts distinct partition paths; repr keeps NaN equal to NaN and -0.0 apart from 0.0.
    partitions = {
        (f.spec_id, tuple(sorted((k, repr(v)) for k, v in f.partition.items())))
        for f in (*files, *removed)
    }
    summary["changed-partition-count"] = str(len(partitions))
    if previous is None:
        before: Mapping[str, str] = {total: "0" for total, _, _ in _TOTALS}
    elif previous.summary is None:
        before = {}
    else:
        before = previous.summary.properties
    for total, added_key, removed_key in _TOTALS:
        text = before.get(total)
        if text is None:
            continue
        try:
            value = int(text)
            if value >= 0 and added_key in summary:
                value += int(summary[added_key])
            if value >= 0 and removed_key in summary:
                value -= int(summary[removed_key])
        except ValueError:
            continue
        if value >= 0:
            summary[total] = str(value)
    summary["engine-name"] = "icecore"
    return summary


def _list_entry(
    source: Mapping[str, Any], fields: AvroFields, sfields: AvroFields | None
) -> dict[str, Any]:
    """A manifest list record of the head's list, renamed to the schema written here."""
    out = {name: fields.get(source, fid) for name, fid in _ML.items()}
    parts = out.pop("partitions")
    if parts is not None and sfields is not None:
        parts = [{name: sfields.get(p, fid) for name, fid in _FS.items()} for p in parts]
        for p in parts:
            p["contains_null"] = bool(p["contains_null"])
    out["partitions"] = parts
    return out


_LIST_NAMES = {
    "path": "manifest_path",
    "length": "manifest_length",
    "spec": "partition_spec_id",
    "content": "content",
    "seq": "sequence_number",
    "min_seq": "min_sequence_number",
    "snapshot": "added_snapshot_id",
    "added_files": "added_files_count",
    "existing_files": "existing_files_count",
    "deleted_files": "deleted_files_count",
    "added_rows": "added_rows_count",
    "existing_rows": "existing_rows_count",
    "deleted_rows": "deleted_rows_count",
    "partitions": "partitions",
    "key_metadata": "key_metadata",
    "first_row_id": "first_row_id",
}


def _kept(m: ManifestFile) -> bool:
    """Java keeps a manifest of the parent only if it has added or existing files."""
    return m.has_added_files() or m.has_existing_files()


def _java_order(records: list[dict[str, Any]], merge_enabled: bool) -> list[dict[str, Any]]:
    """Java's ``ManifestMergeManager`` emits the manifests grouped by spec id, highest first."""
    if not merge_enabled:
        return records
    specs = sorted({r["spec"] for r in records}, reverse=True)
    return [r for s in specs for r in records if r["spec"] == s]


def _rewritten_record(d: _Decoded, index: int, deleted: bool, snapshot_id: int) -> dict[str, Any]:
    """A live entry kept in a rewritten manifest: EXISTING, or DELETED by the new snapshot.

    As Java's ``ManifestWriter.existing``/``delete``: inherited values become explicit (the
    snapshot id of an existing file, both sequence numbers, a data file's first row id).
    """
    entry, fields, file_fields = d.entries[index], d.fields, d.file_fields
    out = dict(d.raw.records[index])
    status = ManifestEntryStatus.DELETED if deleted else ManifestEntryStatus.EXISTING
    out[fields.names[_ENTRY_STATUS]] = int(status)
    out[fields.names[_ENTRY_SNAPSHOT]] = snapshot_id if deleted else entry.snapshot_id
    if _ENTRY_SEQ in fields.names:
        out[fields.names[_ENTRY_SEQ]] = entry.sequence_number
    if _ENTRY_FILE_SEQ in fields.names:
        out[fields.names[_ENTRY_FILE_SEQ]] = entry.file_sequence_number
    data_file = dict(out[fields.names[_ENTRY_FILE]])
    if _DF_FIRST_ROW_ID in file_fields.names and entry.data_file.first_row_id is not None:
        data_file[file_fields.names[_DF_FIRST_ROW_ID]] = entry.data_file.first_row_id
    out[fields.names[_ENTRY_FILE]] = data_file
    return out


@dataclass(slots=True)
class _Rewrite:
    """A manifest of the branch head to write again without some of its files."""

    decoded: _Decoded
    deleted: list[int]  # indexes of the live entries the new snapshot deletes
    list_index: int  # its place among the kept manifests


def _live(d: _Decoded) -> list[int]:
    return [i for i, e in enumerate(d.entries) if e.status != ManifestEntryStatus.DELETED]


def write_append_snapshot(
    table: TableData,
    metadata: TableMetadata,
    parent: Snapshot | None,
    files: Sequence[PickedFile],
    layouts: Mapping[int, PickedManifest],
    summary_properties: Mapping[str, str],
    *,
    now_ms: int | None = None,
) -> WrittenSnapshot:
    """Write an ``append`` of ``files`` on ``parent`` (see :func:`write_snapshot`)."""
    return write_snapshot(
        table, metadata, parent, files, layouts, summary_properties, now_ms=now_ms
    )


def write_snapshot(
    table: TableData,
    metadata: TableMetadata,
    parent: Snapshot | None,
    files: Sequence[PickedFile],
    layouts: Mapping[int, PickedManifest],
    summary_properties: Mapping[str, str],
    *,
    removed_paths: Collection[str] = (),
    operation: str = "append",
    now_ms: int | None = None,
) -> WrittenSnapshot:
    """Write the manifests and manifest list of a snapshot on ``parent`` adding ``files``.

    With ``removed_paths`` (a dynamic overwrite replayed), as Java's ``MergingSnapshotProducer``
    with deleted files: every data manifest of ``parent`` holding one of them is written
    again (the file DELETED by the new snapshot, the rest EXISTING); then delete files
    left without rows to apply to are dropped the same way: deletion vectors of removed data
    files, and delete files older than every data file left (their data sequence number
    below the smallest of the data manifests). Everything is read and checked before the
    first file is written.

    Args:
        table: gives the FileIO the files are read and written through.
        metadata: the metadata the snapshot is added to (sequence number, next row id,
            current schema, properties).
        parent: the branch head the snapshot follows (None: the branch is empty).
        files: the data files to add (:func:`snapshot_changes`).
        layouts: the Avro layout of a picked manifest for each spec id of ``files``.
        summary_properties: summary keys put first (``source-snapshot-id``, ...).
        removed_paths: data files the snapshot deletes; each must be live in ``parent``.
        operation: the snapshot's operation.
        now_ms: the snapshot's timestamp (default: now).

    Raises:
        Unsupported: the table is v1 (Icecore writes v2 and v3 manifests only).
        ValidationError: a file to delete is not live in ``parent``.
        IcecoreError: a file could not be written (what was written stays unreferenced).
    """
    version = metadata.format_version
    if version not in (2, 3):
        raise Unsupported(
            f"Icecore writes snapshots for format versions 2 and 3 only, and this table is "
            f"v{version}; use Spark's cherrypick_snapshot procedure for it."
        )
    snapshot_id = new_snapshot_id(metadata)
    sequence_number = metadata.last_sequence_number + 1
    schema = metadata.current_schema()

    # Plan: read the parent's list and the manifests that lose files -----------------------
    kept: list[tuple[ManifestFile, dict[str, Any]]] = []
    rewrites: list[_Rewrite] = []
    removed_files: list[PickedFile] = []
    to_remove = set(removed_paths)
    if parent is not None and parent.manifest_list is not None:
        path = parent.manifest_list
        raw = read_avro(table.io.read(path, limit=MAX_METADATA_BYTES), path)
        fields = AvroFields(raw.schema, parent.manifest_list, "The manifest list schema")
        sfields = None
        if _ML["partitions"] in fields.types:
            array = non_null_branch(fields.types[_ML["partitions"]])
            if isinstance(array, dict) and array.get("type") == "array":
                sfields = AvroFields(array["items"], parent.manifest_list, "field_summary")
        manifests = table.manifests(parent)
        if len(manifests) != len(raw.records):
            raise InvalidMetadata(f"Manifest list {parent.manifest_list} decoded two ways differs.")
        parent_schema = _schema_of(metadata, parent)
        dropped_data_min: list[int] = []  # data manifests without live files count too
        for manifest, record in zip(manifests, raw.records, strict=True):
            if not _kept(manifest):
                if manifest.content == ManifestContent.DATA:
                    dropped_data_min.append(manifest.min_sequence_number)
                continue
            entry = _list_entry(record, fields, sfields)
            # Absent in lists written before v2: the spec's defaults (Appendix E).
            entry["content"] = int(manifest.content)
            entry["seq"], entry["min_seq"] = manifest.sequence_number, manifest.min_sequence_number
            for key in (
                "added_files",
                "existing_files",
                "deleted_files",
                "added_rows",
                "existing_rows",
                "deleted_rows",
            ):
                entry[key] = entry[key] if entry[key] is not None else 0
            if to_remove and manifest.content == ManifestContent.DATA:
                d = _decode(table, metadata, manifest, parent_schema)
                hits = [i for i in _live(d) if d.entries[i].data_file.file_path in to_remove]
                if hits:
                    rewrites.append(_Rewrite(d, hits, len(kept)))
                    removed_files += [
                        _picked(d.raw.records[i], d.spec.spec_id, d.entries[i]) for i in hits
                    ]
            kept.append((manifest, entry))
        if to_remove:
            # Java: deletes older than every data file left, and DVs of removed files, go too.
            rewritten_min: dict[int, list[int]] = {}
            for r in rewrites:
                rewritten_min[r.list_index] = [
                    seq
                    for i in _live(r.decoded)
                    if i not in r.deleted
                    and (seq := r.decoded.entries[i].sequence_number) is not None
                ]
            data_min = list(dropped_data_min)
            for n, (m, e) in enumerate(kept):
                if m.content != ManifestContent.DATA:
                    continue
                if n in rewritten_min:
                    if rewritten_min[n]:  # a rewrite without live files has no minimum
                        data_min.append(min(rewritten_min[n]))
                else:
                    data_min.append(int(e["min_seq"]))
            min_data_sequence = min([metadata.last_sequence_number, *data_min])
            for n, (m, _) in enumerate(kept):
                if m.content != ManifestContent.DELETES:
                    continue
                d = _decode(table, metadata, m, parent_schema)
                hits = []
                for i in _live(d):
                    df, seq = d.entries[i].data_file, d.entries[i].sequence_number
                    dangling = (
                        df.content_offset is not None and df.referenced_data_file in to_remove
                    )
                    old = seq is not None and 0 < seq < min_data_sequence
                    if dangling or old:
                        hits.append(i)
                if hits:
                    rewrites.append(_Rewrite(d, hits, n))
                    removed_files += [
                        _picked(d.raw.records[i], d.spec.spec_id, d.entries[i]) for i in hits
                    ]

    missing = to_remove - {f.path for f in removed_files}
    if missing:
        raise ValidationError(
            f"Cannot replay the deletes of this snapshot: {len(missing)} data file(s) it "
            f"removed are no longer in the branch (e.g. {sorted(missing)[0]}); they were "
            "removed or rewritten since."
        )

    # Write --------------------------------------------------------------------------------
    folder = metadata_folder(metadata)
    commit = str(uuid.uuid4())
    written: list[str] = []
    counter = iter(range(1_000_000))

    def create(data: bytes) -> str:
        path = f"{folder}/{commit}-m{next(counter)}.avro"
        if not table.io.create_exclusive(path, data):
            raise IcecoreError(f"Cannot write {path}: a file is there already; try again.")
        written.append(path)
        return path

    new_records: list[dict[str, Any]] = []
    for spec_id in sorted({f.spec_id for f in files}, reverse=True):
        spec_files = [f for f in files if f.spec_id == spec_id]
        layout = layouts[spec_id]
        fields = AvroFields(layout.schema, "the new manifest", "The manifest entry schema")
        file_fields = AvroFields(
            non_null_branch(fields.types[_ENTRY_FILE]), "the new manifest", "data_file"
        )
        records = [_entry_record(f.record, fields, file_fields, snapshot_id) for f in spec_files]
        header = {k: v for k, v in layout.header.items() if not k.startswith("avro.")}
        data = write_avro(layout.schema, records, header)
        path = create(data)
        spec = metadata.spec_by_id(spec_id)
        assert spec is not None
        partition_types = [f.field_type for f in spec.partition_type(schema).fields]
        new_records.append(
            {
                "path": path,
                "length": len(data),
                "spec": spec_id,
                "content": int(ManifestContent.DATA),
                "seq": sequence_number,
                "min_seq": sequence_number,
                "snapshot": snapshot_id,
                "added_files": len(spec_files),
                "existing_files": 0,
                "deleted_files": 0,
                "added_rows": sum(f.record_count for f in spec_files),
                "existing_rows": 0,
                "deleted_rows": 0,
                "partitions": field_summaries(spec, partition_types, spec_files),
                "key_metadata": None,
                "first_row_id": None,
            }
        )

    for r in rewrites:
        d = r.decoded
        live = _live(d)
        records = [_rewritten_record(d, i, i in r.deleted, snapshot_id) for i in live]
        header = {k: v for k, v in d.raw.metadata.items() if not k.startswith("avro.")}
        data = write_avro(json.loads(d.raw.metadata["avro.schema"]), records, header)
        path = create(data)
        gone = [d.entries[i] for i in live if i in r.deleted]
        stay = [d.entries[i] for i in live if i not in r.deleted]
        stay_seq = [e.sequence_number for e in stay if e.sequence_number is not None]
        partition_types = [f.field_type for f in d.spec.partition_type(schema).fields]
        everything = [_picked({}, d.spec.spec_id, d.entries[i]) for i in live]
        _, entry = kept[r.list_index]
        kept[r.list_index] = (
            kept[r.list_index][0],
            {
                "path": path,
                "length": len(data),
                "spec": d.spec.spec_id,
                "content": entry["content"],
                "seq": sequence_number,
                "min_seq": min(stay_seq) if stay_seq else sequence_number,
                "snapshot": snapshot_id,
                "added_files": 0,
                "existing_files": len(stay),
                "deleted_files": len(gone),
                "added_rows": 0,
                "existing_rows": sum(e.data_file.record_count for e in stay),
                "deleted_rows": sum(e.data_file.record_count for e in gone),
                "partitions": field_summaries(d.spec, partition_types, everything),
                "key_metadata": None,
                "first_row_id": None,
            },
        )

    kept_data = [e for m, e in kept if m.content == ManifestContent.DATA]
    kept_deletes = [e for m, e in kept if m.content != ManifestContent.DATA]
    merge = metadata.properties.get("commit.manifest-merge.enabled", "true").lower() == "true"
    ordered = _java_order(new_records + kept_data, merge) + _java_order(kept_deletes, merge)

    first_row_id: int | None = None
    added_rows: int | None = None
    if version >= 3:
        first_row_id = metadata.next_row_id if metadata.next_row_id is not None else 0
        next_row_id = first_row_id
        for entry in ordered:
            if entry["content"] == int(ManifestContent.DATA) and entry["first_row_id"] is None:
                entry["first_row_id"] = next_row_id
                next_row_id += entry["existing_rows"] + entry["added_rows"]
        added_rows = next_row_id - first_row_id
    else:
        for entry in ordered:
            entry.pop("first_row_id", None)

    list_meta = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": str(parent.snapshot_id) if parent is not None else "null",
        "sequence-number": str(sequence_number),
        "format-version": str(version),
    }
    if version >= 3:
        list_meta["first-row-id"] = str(first_row_id)
    list_records = [{_LIST_NAMES[k]: v for k, v in e.items()} for e in ordered]
    list_path = f"{folder}/snap-{snapshot_id}-1-{commit}.avro"
    list_data = write_avro(manifest_list_schema(version), list_records, list_meta)
    if not table.io.create_exclusive(list_path, list_data):
        raise IcecoreError(f"Cannot write {list_path}: a file is there already; try again.")
    written.append(list_path)

    summary = append_summary(summary_properties, files, parent, removed_files)
    snapshot = Snapshot(
        snapshot_id=snapshot_id,
        timestamp_ms=now_ms if now_ms is not None else int(time.time() * 1000),
        parent_snapshot_id=parent.snapshot_id if parent is not None else None,
        sequence_number=sequence_number,
        manifest_list=list_path,
        summary=Summary(operation, summary),
        schema_id=metadata.current_schema_id,
        first_row_id=first_row_id,
        added_rows=added_rows,
    )
    return WrittenSnapshot(snapshot, tuple(written))


__all__ = [
    "PickedFile",
    "PickedManifest",
    "WrittenSnapshot",
    "added_data_files",
    "append_summary",
    "field_summaries",
    "manifest_list_schema",
    "metadata_folder",
    "new_snapshot_id",
    "snapshot_changes",
    "write_append_snapshot",
    "write_snapshot",
]
