"""Manifest lists and manifests: ManifestFile, ManifestEntry, DataFile, and inheritance.

Implements the spec's "Manifest Lists", "Manifests" (with "Manifest Entry Fields" and the
``data_file`` struct), "Sequence Number Inheritance" and, for v3, "First Row ID
Inheritance". Fields are found by their Avro ``field-id`` (Appendix A), not by name, so that
v1 writers' names and sanitized partition names read the same. Metrics maps, stored as
arrays of key/value records, become dicts keyed by field id; bounds stay raw bytes (decode
them with :func:`icecore.values.from_bytes`).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import pyarrow as pa

from icecore.avro import (
    HEADER_METADATA_PREFIX,
    AvroFile,
    datetime_to_micros,
    read_avro,
    read_avro_polars_arrow,
    time_to_micros,
)
from icecore.errors import InvalidMetadata
from icecore.io import FileIO
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema, schema_from_json
from icecore.types import (
    DateType,
    IcebergType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)
from icecore.values import EPOCH_DATE


class ManifestContent(IntEnum):
    """What a manifest tracks ("Manifest Lists", field 517)."""

    DATA = 0
    DELETES = 1


class ManifestEntryStatus(IntEnum):
    """A manifest entry's status ("Manifest Entry Fields", field 0)."""

    EXISTING = 0
    ADDED = 1
    DELETED = 2


class DataFileContent(IntEnum):
    """What a content file stores (``data_file`` field 134)."""

    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


@dataclass(frozen=True, slots=True)
class PartitionFieldSummary:
    """One ``field_summary`` of a manifest list entry (fields 509, 518, 510, 511).

    Attributes:
        contains_null: whether some partition value of the field is null.
        contains_nan: whether some value is NaN; None when the writer did not say.
        lower_bound: the lower bound, Appendix D bytes of the partition field's type.
        upper_bound: the upper bound, Appendix D bytes.
    """

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """One manifest list entry, the ``manifest_file`` struct ("Manifest Lists").

    v1 lists carry no content or sequence numbers: they read as DATA and 0. Counts are None
    when a v1 writer left them null ("assumed to be non-zero").
    """

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent
    sequence_number: int
    min_sequence_number: int
    added_snapshot_id: int
    added_files_count: int | None
    existing_files_count: int | None
    deleted_files_count: int | None
    added_rows_count: int | None
    existing_rows_count: int | None
    deleted_rows_count: int | None
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    def has_added_files(self) -> bool:
        """Whether the manifest may hold ADDED entries (null counts are "non-zero")."""
        return self.added_files_count is None or self.added_files_count > 0

    def has_existing_files(self) -> bool:
        """Whether the manifest may hold EXISTING entries."""
        return self.existing_files_count is None or self.existing_files_count > 0

    def has_deleted_files(self) -> bool:
        """Whether the manifest may hold DELETED entries."""
        return self.deleted_files_count is None or self.deleted_files_count > 0


@dataclass(frozen=True, slots=True)
class DataFile:
    """The ``data_file`` struct of a manifest entry: a data or delete file and its metrics.

    Attributes:
        content: data, position deletes or equality deletes (v1: always data).
        file_path: the file's full URI.
        file_format: ``PARQUET``, ``AVRO``, ``ORC`` or ``PUFFIN``, as written.
        spec_id: the id of the partition spec of ``partition`` (the manifest's spec).
        partition: partition values keyed by partition field id, in spec order; Python
            values as :mod:`icecore.values` documents (dates, integer micros, ...).
        record_count: rows in the file, or the cardinality of a deletion vector.
        file_size_in_bytes: the file's size.
        column_sizes, value_counts, null_value_counts, nan_value_counts: metrics keyed by
            column field id; None when the writer wrote null.
        lower_bounds, upper_bounds: Appendix D bytes keyed by column field id.
        key_metadata: encryption key metadata.
        split_offsets: suggested split offsets, ascending.
        equality_ids: equality delete field ids (content 2).
        sort_order_id: the sort order id, or None.
        first_row_id: v3 row lineage, after "First Row ID Inheritance".
        referenced_data_file: the data file all deletes reference (required for DVs).
        content_offset, content_size_in_bytes: a deletion vector blob's place in its file.
    """

    content: DataFileContent
    file_path: str
    file_format: str
    spec_id: int
    partition: dict[int, Any]
    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A ``manifest_entry`` after inheritance ("Manifest Entry Fields").

    Attributes:
        status: EXISTING, ADDED or DELETED.
        snapshot_id: the snapshot that added (or deleted) the file; inherited when null.
        sequence_number: the data sequence number; inherited only for ADDED entries (and 0
            for v1 manifests). None only when a writer broke the spec.
        file_sequence_number: the file sequence number; same inheritance.
        data_file: the file.
    """

    status: ManifestEntryStatus
    snapshot_id: int | None
    sequence_number: int | None
    file_sequence_number: int | None
    data_file: DataFile


# ---------------------------------------------------------------------------------------
# Field ids of the manifest list and manifest structs (the spec's tables)

_ML_PATH, _ML_LENGTH, _ML_SPEC_ID, _ML_ADDED_SNAPSHOT = 500, 501, 502, 503
_ML_ADDED_FILES, _ML_EXISTING_FILES, _ML_DELETED_FILES = 504, 505, 506
_ML_PARTITIONS, _ML_ADDED_ROWS, _ML_EXISTING_ROWS, _ML_DELETED_ROWS = 507, 512, 513, 514
_ML_SEQ, _ML_MIN_SEQ, _ML_CONTENT, _ML_KEY_METADATA, _ML_FIRST_ROW_ID = 515, 516, 517, 519, 520
_FS_CONTAINS_NULL, _FS_LOWER, _FS_UPPER, _FS_CONTAINS_NAN = 509, 510, 511, 518


class ListField(IntEnum):
    """Field ids of the manifest list that columnar planning reads (spec "Manifest Lists")."""

    PARTITION_SPEC_ID = _ML_SPEC_ID
    PARTITIONS = _ML_PARTITIONS
    CONTENT = _ML_CONTENT
    ADDED_FILES = _ML_ADDED_FILES
    EXISTING_FILES = _ML_EXISTING_FILES
    ADDED_ROWS = _ML_ADDED_ROWS
    EXISTING_ROWS = _ML_EXISTING_ROWS
    CONTAINS_NULL = _FS_CONTAINS_NULL
    CONTAINS_NAN = _FS_CONTAINS_NAN
    LOWER_BOUND = _FS_LOWER
    UPPER_BOUND = _FS_UPPER


_ME_STATUS, _ME_SNAPSHOT_ID, _ME_DATA_FILE, _ME_SEQ, _ME_FILE_SEQ = 0, 1, 2, 3, 4
_DF_CONTENT, _DF_PATH, _DF_FORMAT, _DF_PARTITION = 134, 100, 101, 102
_DF_RECORD_COUNT, _DF_SIZE, _DF_COLUMN_SIZES, _DF_VALUE_COUNTS = 103, 104, 108, 109
_DF_NULL_COUNTS, _DF_NAN_COUNTS, _DF_LOWER, _DF_UPPER = 110, 137, 125, 128
_DF_KEY_METADATA, _DF_SPLITS, _DF_EQ_IDS, _DF_SORT_ORDER = 131, 132, 135, 140
_DF_FIRST_ROW_ID, _DF_REFERENCED, _DF_CONTENT_OFFSET, _DF_CONTENT_SIZE = 142, 143, 144, 145


def non_null_branch(avro_type: Any) -> Any:
    """The non-null branch of an Avro union (the type itself when it is no union)."""
    if isinstance(avro_type, list):
        return next((b for b in avro_type if b != "null"), "null")
    return avro_type


class _Fields:
    """Avro field names of one record schema, looked up by Iceberg field id."""

    __slots__ = ("names", "types", "path")

    def __init__(self, record: Any, path: str, what: str) -> None:
        record = non_null_branch(record)
        if not isinstance(record, dict) or record.get("type") != "record":
            raise InvalidMetadata(f"{what} in {path} is not an Avro record.")
        self.path = path
        self.names: dict[int, str] = {}
        self.types: dict[int, Any] = {}
        for f in record.get("fields", []):
            fid = f.get("field-id")
            if isinstance(fid, int):
                self.names[fid] = f["name"]
                self.types[fid] = f["type"]

    def get(self, record: Mapping[str, Any], field_id: int) -> Any:
        name = self.names.get(field_id)
        return record.get(name) if name is not None else None

    def require(self, record: Mapping[str, Any], field_id: int, what: str) -> Any:
        value = self.get(record, field_id)
        if value is None:
            raise InvalidMetadata(f"{self.path} has an entry without required {what}.")
        return value


def _id_map(value: Any) -> dict[int, Any] | None:
    """An Avro map (array of key/value records, or a string-keyed map) as a dict by int id."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {int(k): v for k, v in value.items()}
    return {int(kv["key"]): kv["value"] for kv in value}


def _int_tuple(value: Any) -> tuple[int, ...] | None:
    return tuple(int(v) for v in value) if value is not None else None


# ---------------------------------------------------------------------------------------
# Manifest lists


def read_manifest_list(
    file_io: FileIO, path: str, format_version: int | None = None
) -> list[ManifestFile]:
    """Read a snapshot's manifest list ("Manifest Lists").

    Args:
        file_io: the table's FileIO.
        path: the snapshot's ``manifest-list`` location.
        format_version: the table's format version; when None, the file's
            ``format-version`` header (1 when absent).

    Returns:
        the manifest files in list order. v1 lists read with content DATA and sequence
        numbers 0, as the spec says.

    Raises:
        NotFound: the file does not exist.
        InvalidMetadata: the file is corrupt, truncated or misses a required field.
    """
    return read_manifest_list_records(file_io, path, format_version).manifest_files()


@dataclass(frozen=True, slots=True)
class ManifestListRecords:
    """A manifest list decoded to Arrow columns, read by field id; objects on demand.

    Planning over thousands of manifests reads a few columns of every entry and builds
    :class:`ManifestFile` objects only for the manifests it keeps
    (:mod:`icecore.manifest_list_columns`); :func:`read_manifest_list` builds them all.
    Decoding is columnar (polars, ~3 ms for 2,000 entries against ~15 ms for records).
    """

    path: str
    format_version: int
    table: pa.Table
    fields: _Fields
    summary_fields: _Fields | None

    def __len__(self) -> int:
        return self.table.num_rows

    def column(self, field_id: int) -> pa.Array | None:
        """One manifest_file field of every entry, by field id (None: not in the file)."""
        name = self.fields.names.get(field_id)
        if name is None or name not in self.table.column_names:
            return None
        return self.table.column(name).combine_chunks()

    def summary_name(self, field_id: int) -> str | None:
        """The Avro name of a field_summary field (None: not in the file)."""
        return self.summary_fields.names.get(field_id) if self.summary_fields else None

    def manifest_file(self, index: int) -> ManifestFile:
        """The ``index``-th entry as a :class:`ManifestFile` (required fields checked)."""
        record = self.table.slice(index, 1).to_pylist()[0]
        return _manifest_file(record, self.fields, self.summary_fields, self.format_version)

    def manifest_files(self) -> list[ManifestFile]:
        """Every entry as a :class:`ManifestFile`, in list order."""
        f, sf, version = self.fields, self.summary_fields, self.format_version
        return [_manifest_file(r, f, sf, version) for r in self.table.to_pylist()]


def read_manifest_list_records(
    file_io: FileIO, path: str, format_version: int | None = None
) -> ManifestListRecords:
    """Decode a manifest list without building objects (see :func:`read_manifest_list`)."""
    table = read_avro_polars_arrow(file_io.read(path), path)
    header = {
        k[len(HEADER_METADATA_PREFIX) :].decode(): v.decode()
        for k, v in (table.schema.metadata or {}).items()
        if k.startswith(HEADER_METADATA_PREFIX)
    }
    version = format_version if format_version is not None else _version(header, path)
    fields = _Fields(json.loads(header["avro.schema"]), path, "The manifest list schema")
    summary_fields: _Fields | None = None
    if _ML_PARTITIONS in fields.types:
        array = non_null_branch(fields.types[_ML_PARTITIONS])
        if isinstance(array, dict) and array.get("type") == "array":
            summary_fields = _Fields(array["items"], path, "The field_summary schema")
    return ManifestListRecords(path, version, table, fields, summary_fields)


def _version(header: Mapping[str, str], path: str) -> int:
    text = header.get("format-version", "1")
    try:
        return int(text)
    except ValueError as e:
        raise InvalidMetadata(f"{path} has a bad format-version {text!r}.") from e


def _manifest_file(
    r: Mapping[str, Any], f: _Fields, sf: _Fields | None, version: int
) -> ManifestFile:
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    raw_partitions = f.get(r, _ML_PARTITIONS)
    if raw_partitions is not None and sf is not None:
        partitions = tuple(
            PartitionFieldSummary(
                contains_null=bool(sf.get(s, _FS_CONTAINS_NULL)),
                contains_nan=sf.get(s, _FS_CONTAINS_NAN),
                lower_bound=sf.get(s, _FS_LOWER),
                upper_bound=sf.get(s, _FS_UPPER),
            )
            for s in raw_partitions
        )
    if version >= 2:
        content = ManifestContent(f.require(r, _ML_CONTENT, "content"))
        sequence_number = int(f.require(r, _ML_SEQ, "sequence_number"))
        min_sequence_number = int(f.require(r, _ML_MIN_SEQ, "min_sequence_number"))
    else:
        content, sequence_number, min_sequence_number = ManifestContent.DATA, 0, 0
    return ManifestFile(
        manifest_path=f.require(r, _ML_PATH, "manifest_path"),
        manifest_length=int(f.require(r, _ML_LENGTH, "manifest_length")),
        partition_spec_id=int(f.require(r, _ML_SPEC_ID, "partition_spec_id")),
        content=content,
        sequence_number=sequence_number,
        min_sequence_number=min_sequence_number,
        added_snapshot_id=int(f.require(r, _ML_ADDED_SNAPSHOT, "added_snapshot_id")),
        added_files_count=f.get(r, _ML_ADDED_FILES),
        existing_files_count=f.get(r, _ML_EXISTING_FILES),
        deleted_files_count=f.get(r, _ML_DELETED_FILES),
        added_rows_count=f.get(r, _ML_ADDED_ROWS),
        existing_rows_count=f.get(r, _ML_EXISTING_ROWS),
        deleted_rows_count=f.get(r, _ML_DELETED_ROWS),
        partitions=partitions,
        key_metadata=f.get(r, _ML_KEY_METADATA),
        first_row_id=f.get(r, _ML_FIRST_ROW_ID) if version >= 3 else None,
    )


# ---------------------------------------------------------------------------------------
# Manifests


def read_manifest(
    file_io: FileIO,
    manifest_file: ManifestFile,
    schema: Schema,
    spec: PartitionSpec,
    format_version: int,
) -> list[ManifestEntry]:
    """Read a manifest's entries and apply the spec's inheritance rules.

    - ``snapshot_id`` null: inherits the manifest's ``added_snapshot_id``.
    - ``sequence_number`` / ``file_sequence_number`` null: inherit the manifest's
      ``sequence_number`` for ADDED entries only ("Sequence Number Inheritance"); a v1
      manifest (no such columns) reads 0 for every entry.
    - v3 ``first_row_id`` null on a data file: the manifest's ``first_row_id`` plus the
      ``record_count`` of the preceding data files that also had a null one ("First Row ID
      Inheritance"). DELETED entries neither receive nor consume ids: the id range a manifest
      list reserves covers only added and existing rows ("First Row ID Assignment"). Delete
      files keep null.

    Args:
        file_io: the table's FileIO.
        manifest_file: the manifest list entry (gives path, length and inherited values).
        schema: the table schema, for the partition tuple's types (source columns missing
            from it are looked up in the manifest's own ``schema`` header).
        spec: the partition spec with id ``manifest_file.partition_spec_id``.
        format_version: the table's format version.

    Raises:
        NotFound: the manifest does not exist.
        InvalidMetadata: the manifest is corrupt, truncated (shorter or longer than the
            manifest list says), or does not match its spec.
    """
    path = manifest_file.manifest_path
    if spec.spec_id != manifest_file.partition_spec_id:
        raise InvalidMetadata(
            f"Manifest {path} was written with partition spec "
            f"{manifest_file.partition_spec_id}, not spec {spec.spec_id}."
        )
    data = file_io.read(path)
    entries = manifest_entries_from_bytes(data, manifest_file, schema, spec, format_version)
    if len(data) != manifest_file.manifest_length and not _counts_match(manifest_file, entries):
        raise InvalidMetadata(
            f"Manifest {path} is {len(data)} bytes but its manifest list says "
            f"{manifest_file.manifest_length}, and it holds {len(entries)} entries where the "
            "manifest list counts differ; the file is truncated or was replaced."
        )
    return entries


def _counts_match(manifest_file: ManifestFile, entries: Sequence[ManifestEntry]) -> bool:
    """Whether a manifest holds as many entries as its manifest list entry counts.

    A length that disagrees with the manifest list is not proof of damage on its own:
    Iceberg 1.10's ``rewrite_table_path`` rewrites manifests with new paths but keeps their
    old lengths (Java never checks them). A complete Avro file whose entry count matches the
    list's added + existing + deleted file counts is read; anything else is refused.
    """
    counts = (
        manifest_file.added_files_count,
        manifest_file.existing_files_count,
        manifest_file.deleted_files_count,
    )
    if any(c is None for c in counts):
        return False
    return len(entries) == sum(c for c in counts if c is not None)


def _entries(
    avro: AvroFile,
    manifest_file: ManifestFile,
    schema: Schema,
    spec: PartitionSpec,
    format_version: int,
) -> list[ManifestEntry]:
    path = avro.path
    ef = _Fields(avro.schema, path, "The manifest_entry schema")
    if _ME_DATA_FILE not in ef.types:
        raise InvalidMetadata(f"Manifest {path} has no data_file field.")
    df = _Fields(ef.types[_ME_DATA_FILE], path, "The data_file schema")
    partition = _PartitionReader(avro, df, schema, spec)
    has_sequence_numbers = _ME_SEQ in ef.names and format_version >= 2
    inherited_seq = manifest_file.sequence_number
    next_row_id = manifest_file.first_row_id if format_version >= 3 else None

    entries: list[ManifestEntry] = []
    for r in avro.records:
        status = ManifestEntryStatus(ef.require(r, _ME_STATUS, "status"))
        d = ef.require(r, _ME_DATA_FILE, "data_file")
        snapshot_id = ef.get(r, _ME_SNAPSHOT_ID)
        if snapshot_id is None:
            snapshot_id = manifest_file.added_snapshot_id
        if has_sequence_numbers:
            seq = ef.get(r, _ME_SEQ)
            file_seq = ef.get(r, _ME_FILE_SEQ)
            # Java also inherits when the manifest's number is 0 (v1 manifests in v2 tables).
            inherits = status == ManifestEntryStatus.ADDED or inherited_seq == 0
            if seq is None and inherits:
                seq = inherited_seq
            if file_seq is None and inherits:
                file_seq = inherited_seq
        else:
            seq = file_seq = 0

        content = (
            DataFileContent(df.get(d, _DF_CONTENT) or 0)
            if format_version >= 2
            else (DataFileContent.DATA)
        )
        record_count = int(df.require(d, _DF_RECORD_COUNT, "record_count"))
        first_row_id = df.get(d, _DF_FIRST_ROW_ID) if format_version >= 3 else None
        if (
            first_row_id is None
            and next_row_id is not None
            and content == DataFileContent.DATA
            and status != ManifestEntryStatus.DELETED
        ):
            first_row_id = next_row_id
            next_row_id += record_count

        data_file = DataFile(
            content=content,
            file_path=df.require(d, _DF_PATH, "file_path"),
            file_format=df.require(d, _DF_FORMAT, "file_format"),
            spec_id=spec.spec_id,
            partition=partition.read(df.require(d, _DF_PARTITION, "partition")),
            record_count=record_count,
            file_size_in_bytes=int(df.require(d, _DF_SIZE, "file_size_in_bytes")),
            column_sizes=_id_map(df.get(d, _DF_COLUMN_SIZES)),
            value_counts=_id_map(df.get(d, _DF_VALUE_COUNTS)),
            null_value_counts=_id_map(df.get(d, _DF_NULL_COUNTS)),
            nan_value_counts=_id_map(df.get(d, _DF_NAN_COUNTS)),
            lower_bounds=_id_map(df.get(d, _DF_LOWER)),
            upper_bounds=_id_map(df.get(d, _DF_UPPER)),
            key_metadata=df.get(d, _DF_KEY_METADATA),
            split_offsets=_int_tuple(df.get(d, _DF_SPLITS)),
            equality_ids=_int_tuple(df.get(d, _DF_EQ_IDS)),
            sort_order_id=df.get(d, _DF_SORT_ORDER),
            first_row_id=first_row_id,
            referenced_data_file=df.get(d, _DF_REFERENCED),
            content_offset=df.get(d, _DF_CONTENT_OFFSET),
            content_size_in_bytes=df.get(d, _DF_CONTENT_SIZE),
        )
        entries.append(
            ManifestEntry(
                status=status,
                snapshot_id=snapshot_id,
                sequence_number=seq,
                file_sequence_number=file_seq,
                data_file=data_file,
            )
        )
    return entries


def partition_record_fields(
    data_file_types: Mapping[int, Any], spec: PartitionSpec, path: str
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The Avro fields of a manifest's ``partition`` record, checked against its spec.

    Returns the fields in file order and their names by partition field id (``field-id``;
    very old writers omit it, and callers then match by position).

    Raises:
        InvalidMetadata: there is no partition record, or its field count differs from the spec's.
    """
    record = non_null_branch(data_file_types.get(_DF_PARTITION))
    if not isinstance(record, dict) or record.get("type") != "record":
        raise InvalidMetadata(f"Manifest {path} has no partition record.")
    avro_fields: list[dict[str, Any]] = record.get("fields", [])
    if len(avro_fields) != len(spec.fields):
        raise InvalidMetadata(
            f"Manifest {path} has {len(avro_fields)} partition fields but partition "
            f"spec {spec.spec_id} has {len(spec.fields)}."
        )
    return avro_fields, {f["field-id"]: f["name"] for f in avro_fields if "field-id" in f}


class _PartitionReader:
    """Turns a decoded ``partition`` record into {partition field id: value} for one spec.

    The record's Avro fields carry the partition field ids (``field-id``); without them
    (very old writers) fields are matched to the spec by position.
    """

    __slots__ = ("_plan", "_path")

    def __init__(self, avro: AvroFile, df: _Fields, schema: Schema, spec: PartitionSpec) -> None:
        self._path = avro.path
        avro_fields, by_id = partition_record_fields(df.types, spec, avro.path)
        struct = partition_type_for(avro.metadata.get("schema"), schema, spec)
        plan: list[tuple[int, str, IcebergType]] = []
        for i, (pf, nested) in enumerate(zip(spec.fields, struct.fields, strict=True)):
            name = by_id.get(pf.field_id) if by_id else avro_fields[i]["name"]
            if name is None:
                raise InvalidMetadata(
                    f"Manifest {avro.path} has no partition field with id {pf.field_id} "
                    f"({pf.name}) of partition spec {spec.spec_id}."
                )
            plan.append((pf.field_id, name, nested.field_type))
        self._plan = tuple(plan)

    def read(self, record: Mapping[str, Any]) -> dict[int, Any]:
        return {fid: _partition_value(record.get(name), t) for fid, name, t in self._plan}


def partition_type_for(
    header_schema: str | None, schema: Schema, spec: PartitionSpec
) -> StructType:
    """The spec's partition type; for sources the table schema lacks, the manifest's schema.

    ``header_schema`` is the manifest's ``schema`` header (the table schema it was written
    with), which still has a column dropped from the table since.
    """
    struct = spec.partition_type(schema)
    if header_schema is None or not any(
        isinstance(f.field_type, UnknownType) for f in struct.fields
    ):
        return struct
    try:
        written = schema_from_json(json.loads(header_schema))
    except (json.JSONDecodeError, InvalidMetadata):
        return struct
    fallback = spec.partition_type(written)
    return StructType(
        tuple(
            b if isinstance(a.field_type, UnknownType) else a
            for a, b in zip(struct.fields, fallback.fields, strict=True)
        )
    )


def _partition_value(value: Any, t: IcebergType) -> Any:
    """A fastavro-decoded partition value in :mod:`icecore.values`' Python form."""
    if value is None:
        return None
    if isinstance(t, (TimestampType, TimestamptzType)) and isinstance(value, dt.datetime):
        return datetime_to_micros(value)
    if isinstance(t, (TimestampNanoType, TimestamptzNanoType)) and isinstance(value, dt.datetime):
        return datetime_to_micros(value) * 1_000
    if isinstance(t, TimeType) and isinstance(value, dt.time):
        return time_to_micros(value)
    if isinstance(t, DateType) and isinstance(value, int) and not isinstance(value, bool):
        return EPOCH_DATE + dt.timedelta(days=value)
    if isinstance(t, UUIDType) and isinstance(value, bytes | str):
        return uuid.UUID(bytes=value) if isinstance(value, bytes) else uuid.UUID(value)
    return value


def manifest_entries_from_bytes(
    data: bytes,
    manifest_file: ManifestFile,
    schema: Schema,
    spec: PartitionSpec,
    format_version: int,
) -> list[ManifestEntry]:
    """Like :func:`read_manifest`, from bytes already read (for callers that cache them)."""
    return _entries(
        read_avro(data, manifest_file.manifest_path), manifest_file, schema, spec, format_version
    )


def live_entries(entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """The entries a scan uses: ADDED and EXISTING (DELETED ones are informational)."""
    return [e for e in entries if e.status != ManifestEntryStatus.DELETED]
