"""Table metadata JSON (Appendix C) for format versions 1-3, to and from :class:`TableMetadata`.

Reading follows Appendix E for v1 files: the single ``schema`` stands in for ``schemas``, the
bare ``partition-spec`` field list for ``partition-specs`` (spec id 0), the last partition id
is derived from the specs, a missing sort order list means the unsorted order 0, and missing
sequence numbers are 0. Snapshots are read by the v1 rules in every version, because tables
upgraded from v1 keep their old snapshots ("Appendix E", last note).

Writing puts back exactly what was read: keys the model does not know (at every level), the
deprecated v1 keys, and which optional keys the file had. Metadata that was built rather than
parsed (no :class:`SourceLayout`) is written in the canonical shape of its format version.
A file may be gzip-compressed (``.gz.metadata.json``); :func:`parse_metadata` detects that
from the magic bytes.
"""

from __future__ import annotations

import copy
import json
import zlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from icecore.errors import InvalidMetadata, Unsupported
from icecore.io import MAX_METADATA_BYTES
from icecore.metadata.model import (
    MAIN_BRANCH,
    SUPPORTED_FORMAT_VERSIONS,
    BlobMetadata,
    EncryptedKey,
    MetadataLogEntry,
    Operation,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    SourceLayout,
    StatisticsFile,
    Summary,
    TableMetadata,
)
from icecore.partitioning import (
    PARTITION_DATA_ID_START,
    PartitionSpec,
    partition_field_to_json,
    partition_spec_from_json,
    partition_spec_to_json,
)
from icecore.schema import Schema, schema_from_json, schema_to_json
from icecore.sorting import (
    UNSORTED_SORT_ORDER,
    SortOrder,
    sort_order_from_json,
    sort_order_to_json,
)

T = TypeVar("T")

_GZIP_MAGIC = b"\x1f\x8b"

# Top-level keys, in the order Iceberg (Java) writes them; this is also the canonical order.
_TOP_KEYS = (
    "format-version",
    "table-uuid",
    "location",
    "last-sequence-number",
    "last-updated-ms",
    "last-column-id",
    "schema",
    "current-schema-id",
    "schemas",
    "partition-spec",
    "default-spec-id",
    "partition-specs",
    "last-partition-id",
    "default-sort-order-id",
    "sort-orders",
    "properties",
    "current-snapshot-id",
    "next-row-id",
    "refs",
    "snapshots",
    "statistics",
    "partition-statistics",
    "snapshot-log",
    "metadata-log",
    "encryption-keys",
)
_SNAPSHOT_KEYS = frozenset(
    {
        "sequence-number",
        "snapshot-id",
        "parent-snapshot-id",
        "timestamp-ms",
        "summary",
        "manifest-list",
        "manifests",
        "schema-id",
        "first-row-id",
        "added-rows",
        "key-id",
    }
)
_REF_KEYS = frozenset(
    {"snapshot-id", "type", "min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms"}
)
_SNAPSHOT_LOG_KEYS = frozenset({"timestamp-ms", "snapshot-id"})
_METADATA_LOG_KEYS = frozenset({"timestamp-ms", "metadata-file"})
_STATISTICS_KEYS = frozenset(
    {
        "snapshot-id",
        "statistics-path",
        "file-size-in-bytes",
        "file-footer-size-in-bytes",
        "key-metadata",
        "blob-metadata",
    }
)
_BLOB_KEYS = frozenset({"type", "snapshot-id", "sequence-number", "fields", "properties"})
_PARTITION_STATISTICS_KEYS = frozenset({"snapshot-id", "statistics-path", "file-size-in-bytes"})
_ENCRYPTION_KEY_KEYS = frozenset(
    {"key-id", "encrypted-key-metadata", "encrypted-by-id", "properties"}
)


# Reading helpers -------------------------------------------------------------------------


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidMetadata(f"{where} must be a JSON object, got {_kind(value)}.")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _req_int(obj: Mapping[str, Any], key: str, where: str) -> int:
    if key not in obj or obj[key] is None:
        raise InvalidMetadata(f"{where} is missing the required field {key!r}.")
    value = obj[key]
    if not _is_int(value):
        raise InvalidMetadata(f"{where} field {key!r} must be an integer, got {value!r}.")
    return value


def _opt_int(obj: Mapping[str, Any], key: str, where: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if not _is_int(value):
        raise InvalidMetadata(f"{where} field {key!r} must be an integer, got {value!r}.")
    return value


def _req_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    if key not in obj or obj[key] is None:
        raise InvalidMetadata(f"{where} is missing the required field {key!r}.")
    value = obj[key]
    if not isinstance(value, str):
        raise InvalidMetadata(f"{where} field {key!r} must be a string, got {_kind(value)}.")
    return value


def _opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidMetadata(f"{where} field {key!r} must be a string, got {_kind(value)}.")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    obj = _object(value, where)
    bad = [k for k, v in obj.items() if not isinstance(v, str)]
    if bad:
        raise InvalidMetadata(f"{where} must map strings to strings; {bad[0]!r} does not.")
    return dict(obj)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidMetadata(f"{where} must be a JSON list, got {_kind(value)}.")
    return value


def _opt_list(
    obj: Mapping[str, Any], key: str, parse: Callable[[Any, str], T], where: str
) -> tuple[T, ...]:
    value = obj.get(key)
    if value is None:
        return ()
    items = _list(value, f"{where} field {key!r}")
    return tuple(parse(item, f"entry {i}") for i, item in enumerate(items))


def _extra(obj: Mapping[str, Any], known: frozenset[str] | tuple[str, ...]) -> dict[str, Any]:
    """Unknown keys, plus known optional keys the JSON set to null (written back as null)."""
    return {k: v for k, v in obj.items() if k not in known or v is None}


# Entities --------------------------------------------------------------------------------


def _summary_from_json(value: Any, where: str) -> Summary:
    props = _string_map(value, f"{where} field 'summary'")
    raw = props.pop("operation", None)
    operation: Operation | str | None
    try:
        operation = Operation(raw) if raw is not None else None
    except ValueError:
        operation = raw
    return Summary(operation, props)


def snapshot_from_json(obj: Any, where: str = "Snapshot") -> Snapshot:
    """Parse one snapshot object ("Snapshots", Appendix C), by the lenient v1 rules.

    Raises:
        InvalidMetadata: a required field is missing or has the wrong JSON type.
    """
    obj = _object(obj, where)
    snapshot_id = _req_int(obj, "snapshot-id", where)
    where = f"Snapshot {snapshot_id}"
    manifest_list = _opt_str(obj, "manifest-list", where)
    manifests: tuple[str, ...] | None = None
    if obj.get("manifests") is not None:
        raw = _list(obj["manifests"], f"{where} field 'manifests'")
        if not all(isinstance(m, str) for m in raw):
            raise InvalidMetadata(f"{where} field 'manifests' must list strings.")
        manifests = tuple(raw)
    if manifest_list is None and manifests is None:
        raise InvalidMetadata(f"{where} has neither 'manifest-list' nor 'manifests'.")
    summary = None
    if obj.get("summary") is not None:
        summary = _summary_from_json(obj["summary"], where)
    sequence_number = _opt_int(obj, "sequence-number", where)
    return Snapshot(
        snapshot_id=snapshot_id,
        timestamp_ms=_req_int(obj, "timestamp-ms", where),
        parent_snapshot_id=_opt_int(obj, "parent-snapshot-id", where),
        sequence_number=sequence_number if sequence_number is not None else 0,
        manifest_list=manifest_list,
        manifests=manifests,
        summary=summary,
        schema_id=_opt_int(obj, "schema-id", where),
        first_row_id=_opt_int(obj, "first-row-id", where),
        added_rows=_opt_int(obj, "added-rows", where),
        key_id=_opt_str(obj, "key-id", where),
        sequence_number_in_json=sequence_number is not None,
        extra=_extra(obj, _SNAPSHOT_KEYS),
    )


def snapshot_to_json(snapshot: Snapshot) -> dict[str, Any]:
    """Serialize one snapshot; optional fields are written only when set."""
    out: dict[str, Any] = {}
    if snapshot.sequence_number_in_json:
        out["sequence-number"] = snapshot.sequence_number
    out["snapshot-id"] = snapshot.snapshot_id
    if snapshot.parent_snapshot_id is not None:
        out["parent-snapshot-id"] = snapshot.parent_snapshot_id
    out["timestamp-ms"] = snapshot.timestamp_ms
    if snapshot.summary is not None:
        summary: dict[str, Any] = {}
        if snapshot.summary.operation is not None:
            summary["operation"] = str(snapshot.summary.operation)
        summary.update(snapshot.summary.properties)
        out["summary"] = summary
    if snapshot.manifest_list is not None:
        out["manifest-list"] = snapshot.manifest_list
    if snapshot.manifests is not None:
        out["manifests"] = list(snapshot.manifests)
    for key, value in (
        ("schema-id", snapshot.schema_id),
        ("first-row-id", snapshot.first_row_id),
        ("added-rows", snapshot.added_rows),
        ("key-id", snapshot.key_id),
    ):
        if value is not None:
            out[key] = value
    return _with_extra(out, snapshot.extra)


def snapshot_ref_from_json(obj: Any, where: str = "Ref") -> SnapshotRef:
    """Parse one snapshot reference object ("Snapshot Reference").

    Raises:
        InvalidMetadata: a required field is missing, or ``type`` is not branch or tag.
    """
    obj = _object(obj, where)
    raw_type = _req_str(obj, "type", where)
    try:
        ref_type = SnapshotRefType(raw_type.lower())
    except ValueError as e:
        raise InvalidMetadata(
            f"{where} field 'type' must be 'branch' or 'tag', got {raw_type!r}."
        ) from e
    extra = _extra(obj, _REF_KEYS)
    if raw_type != ref_type.value:  # keep an odd spelling such as "BRANCH" as written
        extra["type"] = raw_type
    return SnapshotRef(
        snapshot_id=_req_int(obj, "snapshot-id", where),
        type=ref_type,
        min_snapshots_to_keep=_opt_int(obj, "min-snapshots-to-keep", where),
        max_snapshot_age_ms=_opt_int(obj, "max-snapshot-age-ms", where),
        max_ref_age_ms=_opt_int(obj, "max-ref-age-ms", where),
        extra=extra,
    )


def snapshot_ref_to_json(ref: SnapshotRef) -> dict[str, Any]:
    """Serialize one snapshot reference; retention fields only when set."""
    out: dict[str, Any] = {"snapshot-id": ref.snapshot_id}
    raw_type = ref.extra.get("type")
    keep_raw = isinstance(raw_type, str) and raw_type.lower() == ref.type.value
    out["type"] = raw_type if keep_raw else ref.type.value
    for key, value in (
        ("min-snapshots-to-keep", ref.min_snapshots_to_keep),
        ("max-snapshot-age-ms", ref.max_snapshot_age_ms),
        ("max-ref-age-ms", ref.max_ref_age_ms),
    ):
        if value is not None:
            out[key] = value
    return _with_extra(out, ref.extra)


def _snapshot_log_entry(obj: Any, where: str) -> SnapshotLogEntry:
    obj = _object(obj, f"'snapshot-log' {where}")
    where = f"'snapshot-log' {where}"
    return SnapshotLogEntry(
        timestamp_ms=_req_int(obj, "timestamp-ms", where),
        snapshot_id=_req_int(obj, "snapshot-id", where),
        extra=_extra(obj, _SNAPSHOT_LOG_KEYS),
    )


def _metadata_log_entry(obj: Any, where: str) -> MetadataLogEntry:
    where = f"'metadata-log' {where}"
    obj = _object(obj, where)
    return MetadataLogEntry(
        timestamp_ms=_req_int(obj, "timestamp-ms", where),
        metadata_file=_req_str(obj, "metadata-file", where),
        extra=_extra(obj, _METADATA_LOG_KEYS),
    )


def _blob_metadata(obj: Any, where: str) -> BlobMetadata:
    obj = _object(obj, where)
    fields = _list(obj.get("fields"), f"{where} field 'fields'")
    if not all(_is_int(f) for f in fields):
        raise InvalidMetadata(f"{where} field 'fields' must list integer field ids.")
    props = obj.get("properties")
    return BlobMetadata(
        type=_req_str(obj, "type", where),
        snapshot_id=_req_int(obj, "snapshot-id", where),
        sequence_number=_req_int(obj, "sequence-number", where),
        fields=tuple(fields),
        properties=_string_map(props, f"{where} field 'properties'") if props is not None else None,
        extra=_extra(obj, _BLOB_KEYS),
    )


def _statistics_file(obj: Any, where: str) -> StatisticsFile:
    where = f"'statistics' {where}"
    obj = _object(obj, where)
    blobs = _list(obj.get("blob-metadata"), f"{where} field 'blob-metadata'")
    return StatisticsFile(
        snapshot_id=_req_int(obj, "snapshot-id", where),
        statistics_path=_req_str(obj, "statistics-path", where),
        file_size_in_bytes=_req_int(obj, "file-size-in-bytes", where),
        file_footer_size_in_bytes=_req_int(obj, "file-footer-size-in-bytes", where),
        blob_metadata=tuple(_blob_metadata(b, f"{where} blob {i}") for i, b in enumerate(blobs)),
        key_metadata=_opt_str(obj, "key-metadata", where),
        extra=_extra(obj, _STATISTICS_KEYS),
    )


def _statistics_file_to_json(stats: StatisticsFile) -> dict[str, Any]:
    out: dict[str, Any] = {
        "snapshot-id": stats.snapshot_id,
        "statistics-path": stats.statistics_path,
        "file-size-in-bytes": stats.file_size_in_bytes,
        "file-footer-size-in-bytes": stats.file_footer_size_in_bytes,
    }
    if stats.key_metadata is not None:
        out["key-metadata"] = stats.key_metadata
    blobs = []
    for blob in stats.blob_metadata:
        b: dict[str, Any] = {
            "type": blob.type,
            "snapshot-id": blob.snapshot_id,
            "sequence-number": blob.sequence_number,
            "fields": list(blob.fields),
        }
        if blob.properties is not None:
            b["properties"] = dict(blob.properties)
        blobs.append(_with_extra(b, blob.extra))
    out["blob-metadata"] = blobs
    return _with_extra(out, stats.extra)


def _partition_statistics_file(obj: Any, where: str) -> PartitionStatisticsFile:
    where = f"'partition-statistics' {where}"
    obj = _object(obj, where)
    return PartitionStatisticsFile(
        snapshot_id=_req_int(obj, "snapshot-id", where),
        statistics_path=_req_str(obj, "statistics-path", where),
        file_size_in_bytes=_req_int(obj, "file-size-in-bytes", where),
        extra=_extra(obj, _PARTITION_STATISTICS_KEYS),
    )


def _encryption_key(obj: Any, where: str) -> EncryptedKey:
    where = f"'encryption-keys' {where}"
    obj = _object(obj, where)
    props = obj.get("properties")
    return EncryptedKey(
        key_id=_req_str(obj, "key-id", where),
        encrypted_key_metadata=_req_str(obj, "encrypted-key-metadata", where),
        encrypted_by_id=_opt_str(obj, "encrypted-by-id", where),
        properties=_string_map(props, f"{where} field 'properties'") if props is not None else None,
        extra=_extra(obj, _ENCRYPTION_KEY_KEYS),
    )


def _encryption_key_to_json(key: EncryptedKey) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key-id": key.key_id,
        "encrypted-key-metadata": key.encrypted_key_metadata,
    }
    if key.encrypted_by_id is not None:
        out["encrypted-by-id"] = key.encrypted_by_id
    if key.properties is not None:
        out["properties"] = dict(key.properties)
    return _with_extra(out, key.extra)


def statistics_file_from_json(obj: Any, where: str = "file") -> StatisticsFile:
    """Parse one table statistics file object ("Table Statistics").

    Raises:
        InvalidMetadata: a required field is missing or mistyped.
    """
    return _statistics_file(obj, where)


def statistics_file_to_json(stats: StatisticsFile) -> dict[str, Any]:
    """Serialize one table statistics file, unknown keys included."""
    return _statistics_file_to_json(stats)


def partition_statistics_file_from_json(obj: Any, where: str = "file") -> PartitionStatisticsFile:
    """Parse one partition statistics file object ("Partition Statistics").

    Raises:
        InvalidMetadata: a required field is missing or mistyped.
    """
    return _partition_statistics_file(obj, where)


def partition_statistics_file_to_json(stats: PartitionStatisticsFile) -> dict[str, Any]:
    """Serialize one partition statistics file, unknown keys included."""
    return _with_extra(_pstats_json(stats), stats.extra)


def encryption_key_from_json(obj: Any, where: str = "key") -> EncryptedKey:
    """Parse one encryption key object (v3 "Encryption Keys").

    Raises:
        InvalidMetadata: a required field is missing or mistyped.
    """
    return _encryption_key(obj, where)


def encryption_key_to_json(key: EncryptedKey) -> dict[str, Any]:
    """Serialize one encryption key, unknown keys included."""
    return _encryption_key_to_json(key)


def _with_extra(out: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        out.setdefault(key, copy.deepcopy(value))
    return out


# Table metadata --------------------------------------------------------------------------


def decode_metadata_json(data: str | bytes | bytearray | memoryview) -> Any:
    """A metadata file's JSON, gunzipped first when it is gzip (tables' and views' alike).

    Iceberg Java writes ``.gz.metadata.json`` files when ``write.metadata.compression-codec``
    is ``gzip``, the default for views; the magic bytes decide, not the name.

    Raises:
        InvalidMetadata: a gzip stream that is corrupt or inflates past the size bound.
        ValueError: the content is not JSON.
    """
    if isinstance(data, str):
        return json.loads(data)
    raw = bytes(data)
    if raw[:2] == _GZIP_MAGIC:
        raw = _gunzip(raw)
    return json.loads(raw)


def _gunzip(raw: bytes) -> bytes:
    """A gzip file's content, at most :data:`~icecore.io.MAX_METADATA_BYTES` of it.

    The cap holds after decompression: a few hundred KiB of gzip can hold gigabytes of
    zeros, which ``gzip.decompress`` would allocate before the JSON parser saw a byte.
    """
    out: list[bytes] = []
    room = MAX_METADATA_BYTES + 1
    rest = raw
    try:
        while rest and room > 0:  # a gzip file may hold several members, one after another
            member = zlib.decompressobj(wbits=31)
            out.append(member.decompress(rest, room))
            room -= len(out[-1])
            if room > 0 and not member.eof:
                raise InvalidMetadata("the gzip stream is truncated")
            rest = member.unused_data
    except zlib.error as e:
        raise InvalidMetadata(f"the gzip stream is corrupt or truncated ({e})") from e
    if room <= 0:
        raise InvalidMetadata(
            f"it decompresses to more than {MAX_METADATA_BYTES // 2**20} MiB, the most read "
            "of a metadata file"
        )
    return b"".join(out)


def parse_metadata(
    data: str | bytes | bytearray | memoryview, location: str | None = None
) -> TableMetadata:
    """Parse a metadata.json file (plain or gzip-compressed) into :class:`TableMetadata`.

    Args:
        data: the file's content.
        location: where the file was read from; named in every error message.

    Raises:
        Unsupported: the format version is higher than 3.
        InvalidMetadata: the file is not JSON (truncated, corrupt) or breaks the spec.
    """
    where = location if location is not None else "<metadata JSON>"
    try:
        obj = decode_metadata_json(data)
    except InvalidMetadata as e:
        raise InvalidMetadata(f"Table metadata file {where} is unreadable: {e}.") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidMetadata(
            f"Table metadata file {where} is not valid JSON (truncated or corrupt?): {e}."
        ) from e
    except RecursionError as e:  # arrays or objects nested thousands deep
        raise InvalidMetadata(
            f"Table metadata file {where} nests JSON arrays or objects too deeply to read."
        ) from e
    return parse_metadata_dict(obj, location)


def parse_metadata_dict(obj: Any, location: str | None = None) -> TableMetadata:
    """Build :class:`TableMetadata` from already-decoded metadata JSON.

    Args:
        obj: the decoded JSON object.
        location: where the JSON came from; named in every error message.

    Raises:
        Unsupported: the format version is higher than 3.
        InvalidMetadata: the JSON breaks the spec.
    """
    where = location if location is not None else "<metadata JSON>"
    try:
        return _metadata_from_json(obj)
    except Unsupported as e:
        raise Unsupported(f"Table metadata file {where}: {e}") from e
    except InvalidMetadata as e:
        raise InvalidMetadata(f"Invalid table metadata file {where}: {e}") from e
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise InvalidMetadata(
            f"Invalid table metadata file {where}: {type(e).__name__}: {e}."
        ) from e


def _metadata_from_json(value: Any) -> TableMetadata:
    obj = _object(value, "The top level")
    top = "The table metadata"
    if "format-version" not in obj:
        raise InvalidMetadata(f"{top} is missing the required field 'format-version'.")
    version = _req_int(obj, "format-version", top)
    if version > max(SUPPORTED_FORMAT_VERSIONS):
        raise Unsupported(
            f"format-version {version} is not supported; Icecore reads format versions "
            f"{', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}."
        )
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise InvalidMetadata(f"'format-version' must be 1, 2 or 3, got {version}.")
    v2 = version >= 2
    for key in _REQUIRED_ALWAYS + (_V2_ONLY_REQUIRED if v2 else ()):
        if obj.get(key) is None:
            raise InvalidMetadata(f"{top} is missing the required field {key!r}.")
    if version >= 3 and obj.get("next-row-id") is None:
        raise InvalidMetadata(f"{top} is missing the required v3 field 'next-row-id'.")

    # Schemas: `schemas` + `current-schema-id`, or the v1 `schema`.
    legacy_schema: Schema | None = None
    if obj.get("schema") is not None:
        legacy_schema = _nested(schema_from_json, obj["schema"], "field 'schema'")
    if obj.get("schemas") is not None:
        raw_schemas = _list(obj["schemas"], "field 'schemas'")
        schemas = tuple(
            _nested(schema_from_json, s, f"'schemas' entry {i}") for i, s in enumerate(raw_schemas)
        )
        current_schema_id = _opt_int(obj, "current-schema-id", top)
        if current_schema_id is None:
            if legacy_schema is None:
                raise InvalidMetadata(f"{top} is missing the required field 'current-schema-id'.")
            current_schema_id = legacy_schema.schema_id
    elif legacy_schema is not None:
        schemas = (legacy_schema,)
        current_schema_id = legacy_schema.schema_id
    else:
        raise InvalidMetadata(f"{top} has neither 'schemas' nor the v1 'schema' field.")
    if not any(s.schema_id == current_schema_id for s in schemas):
        raise InvalidMetadata(
            f"'current-schema-id' {current_schema_id} names no schema in 'schemas'."
        )

    # Partition specs: `partition-specs` + `default-spec-id`, or the v1 `partition-spec`.
    if obj.get("partition-specs") is not None:
        raw_specs = _list(obj["partition-specs"], "field 'partition-specs'")
        specs = tuple(
            _nested(partition_spec_from_json, s, f"'partition-specs' entry {i}")
            for i, s in enumerate(raw_specs)
        )
        default_spec_id = _opt_int(obj, "default-spec-id", top)
        if default_spec_id is None:
            default_spec_id = 0
    elif obj.get("partition-spec") is not None:
        raw_fields = _list(obj["partition-spec"], "field 'partition-spec'")
        specs = (_nested(partition_spec_from_json, raw_fields, "field 'partition-spec'"),)
        default_spec_id = specs[0].spec_id
    else:
        raise InvalidMetadata(f"{top} has neither 'partition-specs' nor the v1 'partition-spec'.")
    if not any(s.spec_id == default_spec_id for s in specs):
        raise InvalidMetadata(
            f"'default-spec-id' {default_spec_id} names no spec in 'partition-specs'."
        )
    last_partition_id = _opt_int(obj, "last-partition-id", top)
    if last_partition_id is None:
        last_partition_id = max(
            (s.last_assigned_field_id for s in specs), default=PARTITION_DATA_ID_START - 1
        )

    # Sort orders: absent in v1 means the unsorted order 0.
    if obj.get("sort-orders") is not None:
        raw_orders = _list(obj["sort-orders"], "field 'sort-orders'")
        sort_orders: tuple[SortOrder, ...] = tuple(
            _nested(sort_order_from_json, o, f"'sort-orders' entry {i}")
            for i, o in enumerate(raw_orders)
        )
    else:
        sort_orders = (UNSORTED_SORT_ORDER,)
    default_sort_order_id = _opt_int(obj, "default-sort-order-id", top)
    if default_sort_order_id is None:
        default_sort_order_id = UNSORTED_SORT_ORDER.order_id
    if not any(o.order_id == default_sort_order_id for o in sort_orders):
        raise InvalidMetadata(
            f"'default-sort-order-id' {default_sort_order_id} names no order in 'sort-orders'."
        )

    # Snapshots and refs.
    current_snapshot_id = _opt_int(obj, "current-snapshot-id", top)
    if current_snapshot_id == -1:
        current_snapshot_id = None
    snapshots = _opt_list(obj, "snapshots", _snapshot_entry, top)
    refs: dict[str, SnapshotRef] = {}
    if obj.get("refs") is not None:
        for name, raw_ref in _object(obj["refs"], "field 'refs'").items():
            refs[name] = snapshot_ref_from_json(raw_ref, f"Ref {name!r}")
    implied_main = False
    main = refs.get(MAIN_BRANCH)
    if main is None and current_snapshot_id is not None:
        refs = {MAIN_BRANCH: SnapshotRef(current_snapshot_id, SnapshotRefType.BRANCH), **refs}
        implied_main = True
    elif main is not None:
        if not main.is_branch:
            raise InvalidMetadata("ref 'main' must be a branch, but it is a tag.")
        if main.snapshot_id != current_snapshot_id:
            raise InvalidMetadata(
                f"'current-snapshot-id' {current_snapshot_id} differs from the 'main' "
                f"branch's snapshot {main.snapshot_id}; the spec requires them to match."
            )

    properties = (
        _string_map(obj["properties"], "field 'properties'")
        if obj.get("properties") is not None
        else {}
    )
    known = frozenset(_TOP_KEYS)
    layout = SourceLayout(
        keys=tuple(obj),
        null_keys=frozenset(k for k, v in obj.items() if v is None),
        schema=copy.deepcopy(obj.get("schema")),
        partition_spec=copy.deepcopy(obj.get("partition-spec")),
        schemas=_raw_by_id(obj.get("schemas"), "schema-id"),
        partition_specs=_raw_by_id(obj.get("partition-specs"), "spec-id"),
        sort_orders=_raw_by_id(obj.get("sort-orders"), "order-id"),
        implied_main=implied_main,
    )
    last_sequence_number = _opt_int(obj, "last-sequence-number", top)
    return TableMetadata(
        format_version=version,
        table_uuid=_opt_str(obj, "table-uuid", top),
        location=_req_str(obj, "location", top),
        last_sequence_number=last_sequence_number if last_sequence_number is not None else 0,
        last_updated_ms=_req_int(obj, "last-updated-ms", top),
        last_column_id=_req_int(obj, "last-column-id", top),
        schemas=schemas,
        current_schema_id=current_schema_id,
        partition_specs=specs,
        default_spec_id=default_spec_id,
        last_partition_id=last_partition_id,
        sort_orders=sort_orders,
        default_sort_order_id=default_sort_order_id,
        properties=properties,
        current_snapshot_id=current_snapshot_id,
        snapshots=snapshots,
        snapshot_log=_opt_list(obj, "snapshot-log", _snapshot_log_entry, top),
        metadata_log=_opt_list(obj, "metadata-log", _metadata_log_entry, top),
        refs=refs,
        statistics=_opt_list(obj, "statistics", _statistics_file, top),
        partition_statistics=_opt_list(
            obj, "partition-statistics", _partition_statistics_file, top
        ),
        next_row_id=_opt_int(obj, "next-row-id", top),
        encryption_keys=_opt_list(obj, "encryption-keys", _encryption_key, top),
        extra=_extra(obj, known),
        layout=layout,
    )


_REQUIRED_ALWAYS = ("location", "last-updated-ms", "last-column-id")
_V2_ONLY_REQUIRED = (
    "table-uuid",
    "last-sequence-number",
    "current-schema-id",
    "schemas",
    "partition-specs",
    "default-spec-id",
    "last-partition-id",
    "sort-orders",
    "default-sort-order-id",
)


def _raw_by_id(raw: Any, id_key: str) -> dict[int, Any]:
    """Each object of an already-validated list, as read, by its id."""
    if not isinstance(raw, list):
        return {}
    return {
        item[id_key]: copy.deepcopy(item)
        for item in raw
        if isinstance(item, Mapping) and _is_int(item.get(id_key))
    }


def _snapshot_entry(obj: Any, where: str) -> Snapshot:
    return snapshot_from_json(obj, f"'snapshots' {where}")


def _nested(parse: Callable[[Any], T], value: Any, where: str) -> T:
    """Run a schema/spec/order parser, naming the metadata field in its error."""
    try:
        return parse(value)
    except InvalidMetadata as e:
        raise InvalidMetadata(f"{where}: {e}") from e


# Writing ---------------------------------------------------------------------------------


def serialize_metadata(md: TableMetadata) -> dict[str, Any]:
    """Serialize table metadata to its Appendix C JSON object.

    Parsed metadata is written back as read: the same keys (unknown ones included), the
    deprecated v1 ``schema``/``partition-spec`` as found while they still describe the
    current schema and default spec, ``current-snapshot-id`` as ``-1`` or absent as found,
    and in the file's key order. Built metadata (no layout) gets the canonical shape of
    its format version, v1's deprecated fields included.
    """
    layout = md.layout
    present = layout.present if layout is not None else _canonical_keys(md)
    out: dict[str, Any] = {"format-version": md.format_version}

    def wanted(key: str, value: Any, default: Any) -> bool:
        # A key is written when the source had it, or when its value is not the default
        # a reader would assume for an absent key (so changes to parsed metadata survive).
        return key in present or value != default

    def put(key: str, value: Any, default: Any = None, force: bool = False) -> None:
        if force or wanted(key, value, default):
            out[key] = value

    if md.table_uuid is not None:
        out["table-uuid"] = md.table_uuid
    out["location"] = md.location
    put("last-sequence-number", md.last_sequence_number, 0)
    out["last-updated-ms"] = md.last_updated_ms
    out["last-column-id"] = md.last_column_id

    # Each list is written with the id that selects from it (Iceberg Java requires the pair).
    current_schema = md.current_schema()
    if "schema" in present:
        out["schema"] = _legacy_schema_json(md, current_schema)
    schemas_default = [schema_to_json(current_schema)] if "schema" in present else None
    schemas = [_as_read(s, s.schema_id, layout, "schemas") for s in md.schemas]
    with_schemas = wanted("schemas", schemas, schemas_default)
    put("current-schema-id", md.current_schema_id, _absent_schema_id(md), with_schemas)
    if with_schemas:
        out["schemas"] = schemas

    default_spec = md.default_spec()
    if "partition-spec" in present:
        out["partition-spec"] = _legacy_spec_json(md, default_spec)
    specs_default = [partition_spec_to_json(default_spec)] if "partition-spec" in present else None
    specs = [_as_read(s, s.spec_id, layout, "partition_specs") for s in md.partition_specs]
    with_specs = wanted("partition-specs", specs, specs_default)
    put("default-spec-id", md.default_spec_id, 0, with_specs)
    if with_specs:
        out["partition-specs"] = specs
    derived_last_partition_id = max(
        (s.last_assigned_field_id for s in md.partition_specs),
        default=PARTITION_DATA_ID_START - 1,
    )
    put("last-partition-id", md.last_partition_id, derived_last_partition_id, with_specs)

    orders = [_as_read(o, o.order_id, layout, "sort_orders") for o in md.sort_orders]
    with_orders = wanted("sort-orders", orders, [sort_order_to_json(UNSORTED_SORT_ORDER)])
    put(
        "default-sort-order-id", md.default_sort_order_id, UNSORTED_SORT_ORDER.order_id, with_orders
    )
    if with_orders:
        out["sort-orders"] = orders
    put("properties", dict(md.properties), {})
    if md.current_snapshot_id is not None:
        out["current-snapshot-id"] = md.current_snapshot_id
    elif "current-snapshot-id" in present:
        out["current-snapshot-id"] = -1
    elif layout is None:  # Iceberg (Java) writes null from v3 on, -1 before
        out["current-snapshot-id"] = None if md.format_version >= 3 else -1
    if md.next_row_id is not None:
        out["next-row-id"] = md.next_row_id

    refs = dict(md.refs)
    implied = (
        SnapshotRef(md.current_snapshot_id, SnapshotRefType.BRANCH)
        if md.current_snapshot_id is not None
        else None
    )
    if layout is not None and layout.implied_main and refs.get(MAIN_BRANCH) == implied:
        del refs[MAIN_BRANCH]
    put("refs", {name: snapshot_ref_to_json(r) for name, r in refs.items()}, {})
    put("snapshots", [snapshot_to_json(s) for s in md.snapshots], [])
    put("statistics", [_statistics_file_to_json(s) for s in md.statistics], [])
    put(
        "partition-statistics",
        [_with_extra(_pstats_json(p), p.extra) for p in md.partition_statistics],
        [],
    )
    put(
        "snapshot-log",
        [
            _with_extra({"timestamp-ms": e.timestamp_ms, "snapshot-id": e.snapshot_id}, e.extra)
            for e in md.snapshot_log
        ],
        [],
    )
    put(
        "metadata-log",
        [
            _with_extra({"timestamp-ms": e.timestamp_ms, "metadata-file": e.metadata_file}, e.extra)
            for e in md.metadata_log
        ],
        [],
    )
    put("encryption-keys", [_encryption_key_to_json(k) for k in md.encryption_keys], [])
    _with_extra(out, md.extra)
    if layout is None:
        return out
    order = {key: i for i, key in enumerate(layout.keys)}
    # Keys from the file keep their place; keys that were added go last, in canonical order.
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


def serialize_metadata_json(md: TableMetadata, indent: int | None = None) -> str:
    """Serialize table metadata to JSON text (compact unless ``indent`` is given)."""
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(serialize_metadata(md), indent=indent, separators=separators)


_PARSE: dict[str, Callable[[Any], Any]] = {
    "schemas": schema_from_json,
    "partition_specs": partition_spec_from_json,
    "sort_orders": sort_order_from_json,
}
_DUMP: dict[str, Callable[[Any], dict[str, Any]]] = {
    "schemas": schema_to_json,
    "partition_specs": partition_spec_to_json,
    "sort_orders": sort_order_to_json,
}


def _as_read(entity: Any, entity_id: int, layout: SourceLayout | None, kind: str) -> Any:
    """A schema, spec or order as the file spelled it while unchanged, else freshly dumped."""
    raw = getattr(layout, kind).get(entity_id) if layout is not None else None
    if raw is not None and _PARSE[kind](raw) == entity:
        return copy.deepcopy(raw)
    return _DUMP[kind](entity)


def _pstats_json(p: PartitionStatisticsFile) -> dict[str, Any]:
    return {
        "snapshot-id": p.snapshot_id,
        "statistics-path": p.statistics_path,
        "file-size-in-bytes": p.file_size_in_bytes,
    }


def _canonical_keys(md: TableMetadata) -> frozenset[str]:
    """The keys a writer of this format version always writes (as Iceberg Java does)."""
    keys = set(_TOP_KEYS) - {"encryption-keys"}
    if md.format_version == 1:
        keys -= {"last-sequence-number", "next-row-id"}
    else:
        keys -= {"schema", "partition-spec"}
    if md.format_version < 3:
        keys.discard("next-row-id")
    return frozenset(keys)


def _absent_schema_id(md: TableMetadata) -> int | None:
    """The current schema id a reader assumes when ``current-schema-id`` is absent."""
    return md.current_schema().schema_id if md.layout and md.layout.schema is not None else None


def _legacy_schema_json(md: TableMetadata, current: Schema) -> Any:
    """The v1 ``schema`` value: as read while it still parses to the current schema."""
    raw = md.layout.schema if md.layout is not None else None
    if raw is not None and schema_from_json(raw) == current:
        return copy.deepcopy(raw)
    return schema_to_json(current)


def _legacy_spec_json(md: TableMetadata, default: PartitionSpec) -> Any:
    """The v1 ``partition-spec`` value: as read while it still parses to the default spec."""
    raw = md.layout.partition_spec if md.layout is not None else None
    if raw is not None and partition_spec_from_json(raw).fields == default.fields:
        return copy.deepcopy(raw)
    return [partition_field_to_json(f) for f in default.fields]


__all__ = [
    "decode_metadata_json",
    "encryption_key_from_json",
    "encryption_key_to_json",
    "parse_metadata",
    "parse_metadata_dict",
    "serialize_metadata",
    "partition_statistics_file_from_json",
    "partition_statistics_file_to_json",
    "serialize_metadata_json",
    "snapshot_from_json",
    "snapshot_ref_from_json",
    "snapshot_ref_to_json",
    "snapshot_to_json",
    "statistics_file_from_json",
    "statistics_file_to_json",
]
