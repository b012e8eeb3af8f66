"""Parsing rules of Appendix C/E, error reporting, and writing back changed metadata."""

from __future__ import annotations

import dataclasses
import gzip
import json
from typing import Any

import pytest

from icecore.errors import IcecoreError, InvalidMetadata, Unsupported
from icecore.metadata import (
    EncryptedKey,
    Operation,
    PartitionStatisticsFile,
    SnapshotRefType,
    parse_metadata,
    serialize_metadata,
)
from icecore.partitioning import PartitionSpec
from icecore.schema import schema_from_json
from icecore.sorting import UNSORTED_SORT_ORDER
from icecore.transforms import parse_transform_lenient
from tests.icecore.metadata.conftest import golden_json, golden_text

V1 = "handwritten/v1-legacy.metadata.json"
V3 = "handwritten/v3-full.metadata.json"
V2_SPARK = "spark/trips-00000.metadata.json"
FILE = "s3://bucket/wh/db/t/metadata/00007-abc.metadata.json"


def _text(obj: dict[str, Any]) -> str:
    return json.dumps(obj)


# v1 (Appendix E) ---------------------------------------------------------------------------


def test_v1_legacy_schema_and_partition_spec_defaults(v1_legacy_text: str) -> None:
    md = parse_metadata(v1_legacy_text, V1)
    assert md.format_version == 1
    assert md.table_uuid is None  # optional in v1
    # "last-sequence-number must default to 0" when reading v1 metadata.
    assert md.last_sequence_number == 0
    # `schema` stands in for `schemas`; it has no schema-id, so it is schema 0.
    assert [s.schema_id for s in md.schemas] == [0]
    assert md.current_schema_id == 0
    assert [f.name for f in md.current_schema().fields] == ["id", "ts", "price"]
    # `partition-spec` (fields only) is spec 0; v1 field ids are numbered from 1000.
    assert [s.spec_id for s in md.partition_specs] == [0]
    assert md.default_spec_id == 0
    spec = md.default_spec()
    assert [(f.field_id, f.name, f.source_id, str(f.transform)) for f in spec.fields] == [
        (1000, "ts_day", 2, "day"),
        (1001, "id_bucket", 1, "bucket[8]"),
    ]
    assert md.last_partition_id == 1001
    # No sort orders: the unsorted order 0 (spec "Sorting": order id 0 is unsorted).
    assert md.sort_orders == (UNSORTED_SORT_ORDER,)
    assert md.default_sort_order_id == 0
    assert md.default_sort_order().fields == ()
    assert dict(md.properties) == {"owner": "legacy-writer"}


def test_v1_snapshots_inline_manifests_and_sequence_numbers(v1_legacy_text: str) -> None:
    md = parse_metadata(v1_legacy_text, V1)
    first, second = md.snapshots
    # "Snapshot field sequence-number must default to 0" (Appendix E).
    assert (first.sequence_number, second.sequence_number) == (0, 0)
    assert first.manifests == (
        "/warehouse/db/legacy/metadata/m1.avro",
        "/warehouse/db/legacy/metadata/m2.avro",
    )
    assert first.manifest_list is None
    assert first.summary is None and first.operation is None
    assert first.parent_snapshot_id is None
    assert second.manifests is None
    assert second.manifest_list == "/warehouse/db/legacy/metadata/snap-22.avro"
    assert second.operation is Operation.APPEND
    assert second.summary is not None
    assert dict(second.summary.properties) == {"added-data-files": "1"}
    assert second.schema_id is None


def test_v1_write_back_omits_what_the_file_did_not_have(v1_legacy_text: str) -> None:
    out = serialize_metadata(parse_metadata(v1_legacy_text, V1))
    for key in ("schemas", "partition-specs", "refs", "sort-orders", "last-sequence-number"):
        assert key not in out
    assert out["schema"] == json.loads(v1_legacy_text)["schema"]
    assert all("sequence-number" not in s for s in out["snapshots"])


def test_v1_changed_schema_regenerates_the_deprecated_field(v1_legacy_text: str) -> None:
    md = parse_metadata(v1_legacy_text, V1)
    new_schema = schema_from_json(
        {
            "type": "struct",
            "schema-id": 1,
            "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}],
        }
    )
    changed = dataclasses.replace(
        md, schemas=(*md.schemas, new_schema), current_schema_id=1, last_column_id=3
    )
    out = serialize_metadata(changed)
    assert out["schema"]["schema-id"] == 1
    assert [f["name"] for f in out["schema"]["fields"]] == ["id"]
    assert out["current-schema-id"] == 1
    assert [s["schema-id"] for s in out["schemas"]] == [0, 1]


def test_changed_parsed_metadata_keeps_new_values(v1_legacy_text: str) -> None:
    md = parse_metadata(v1_legacy_text, V1)
    spec = PartitionSpec(
        1,
        (
            dataclasses.replace(
                md.default_spec().fields[0], transform=parse_transform_lenient("month")
            ),
        ),
    )
    changed = dataclasses.replace(
        md,
        properties={"owner": "someone"},
        partition_specs=(*md.partition_specs, spec),
        default_spec_id=1,
    )
    out = serialize_metadata(changed)
    assert out["properties"] == {"owner": "someone"}
    assert out["default-spec-id"] == 1
    assert [s["spec-id"] for s in out["partition-specs"]] == [0, 1]
    assert [f["transform"] for f in out["partition-spec"]] == ["month"]


# v3 and unknown keys -----------------------------------------------------------------------


def test_v3_row_lineage_encryption_and_statistics(v3_full_text: str) -> None:
    md = parse_metadata(v3_full_text, V3)
    assert md.format_version == 3
    assert md.next_row_id == 1375
    assert md.last_sequence_number == 34
    assert md.encryption_keys == (
        EncryptedKey("table-key", "aWNlYmVyZwo="),
        EncryptedKey("snap-key-1", "c25hcAo=", "table-key", {"kms": "local"}),
    )
    (stats,) = md.statistics
    assert stats.snapshot_id == 3055729675574597004
    assert stats.statistics_path == "s3://bucket/wh/db/full/metadata/stats-1.puffin"
    assert (stats.file_size_in_bytes, stats.file_footer_size_in_bytes) == (413, 42)
    assert stats.key_metadata is None
    assert dict(stats.extra) == {"x-stats-note": "from a newer writer"}
    theta, dv = stats.blob_metadata
    assert theta.type == "apache-datasketches-theta-v1"
    assert (theta.snapshot_id, theta.sequence_number, theta.fields) == (
        3055729675574597004,
        34,
        (1, 2),
    )
    assert theta.properties == {"ndv": "150"}
    assert dv.properties is None
    assert md.partition_statistics == (
        PartitionStatisticsFile(
            3055729675574597004,
            "s3://bucket/wh/db/full/metadata/partition-stats-1.parquet",
            43,
        ),
    )


def test_v3_snapshot_fields_and_unknown_keys(v3_full_text: str) -> None:
    md = parse_metadata(v3_full_text, V3)
    assert dict(md.extra) == {"x-future-top-level": {"nested": [1, {"deep": True}]}}
    current = md.current_snapshot()
    assert current is not None
    assert (current.first_row_id, current.added_rows, current.key_id) == (1225, 150, "snap-key-1")
    assert current.sequence_number == 34
    assert dict(current.extra) == {"x-writer-extension": {"checksum": "abc123", "parts": [1, 2]}}
    assert current.operation == "overwrite"
    assert md.snapshot_log[1].extra == {"x-log-note": 7}


def test_v3_refs_retention_fields(v3_full_text: str) -> None:
    md = parse_metadata(v3_full_text, V3)
    main, audit, tag = md.refs["main"], md.refs["audit"], md.refs["v1.0"]
    assert (main.type, main.min_snapshots_to_keep, main.max_snapshot_age_ms) == (
        SnapshotRefType.BRANCH,
        3,
        None,
    )
    assert (audit.max_snapshot_age_ms, dict(audit.extra)) == (86400000, {"x-ref-note": "kept"})
    assert (tag.type, tag.max_ref_age_ms, tag.min_snapshots_to_keep) == (
        SnapshotRefType.TAG,
        604800000,
        None,
    )


def test_unknown_keys_survive_a_change_elsewhere(v3_full_text: str) -> None:
    md = parse_metadata(v3_full_text, V3)
    out = serialize_metadata(dataclasses.replace(md, last_updated_ms=1730000009999))
    expected = json.loads(v3_full_text)
    expected["last-updated-ms"] = 1730000009999
    assert out == expected


def test_null_optional_keys_are_written_back_as_null() -> None:
    raw = golden_json(V2_SPARK)
    raw["refs"] = None
    raw["statistics"] = None
    raw["current-snapshot-id"] = None
    md = parse_metadata(_text(raw), FILE)
    assert md.current_snapshot_id is None
    assert dict(md.refs) == {} and md.statistics == ()
    assert serialize_metadata(md) == raw


def test_ref_type_is_read_case_insensitively_and_written_as_found() -> None:
    raw = golden_json("spark/zones-00001.metadata.json")
    raw["refs"]["main"]["type"] = "BRANCH"
    md = parse_metadata(_text(raw), FILE)
    assert md.refs["main"].type is SnapshotRefType.BRANCH
    assert serialize_metadata(md) == raw


def test_built_metadata_gets_the_canonical_shape() -> None:
    md = parse_metadata(golden_text(V2_SPARK))
    built = dataclasses.replace(md, layout=None)
    out = serialize_metadata(built)
    assert out == golden_json(V2_SPARK)
    v1 = serialize_metadata(dataclasses.replace(parse_metadata(golden_text(V1)), layout=None))
    # A v1 writer writes the deprecated fields next to their replacements (Appendix E).
    assert v1["schema"] == v1["schemas"][0]
    assert v1["partition-spec"] == v1["partition-specs"][0]["fields"]
    assert "last-sequence-number" not in v1
    assert v1["refs"] == {"main": {"snapshot-id": 22, "type": "branch"}}


# Errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 5])
def test_newer_format_version_is_unsupported(version: int) -> None:
    raw = golden_json(V3)
    raw["format-version"] = version
    del raw["location"]  # the version check comes first
    with pytest.raises(Unsupported) as e:
        parse_metadata(_text(raw), FILE)
    assert f"format-version {version}" in str(e.value)
    assert FILE in str(e.value)


def _invalid(data: str | bytes, *needles: str) -> InvalidMetadata:
    with pytest.raises(InvalidMetadata) as e:
        parse_metadata(data, FILE)
    message = str(e.value)
    assert FILE in message
    for needle in needles:
        assert needle in message
    assert isinstance(e.value, IcecoreError)
    return e.value


def test_truncated_file(v3_full_text: str) -> None:
    _invalid(v3_full_text[: len(v3_full_text) // 2], "not valid JSON")


def test_truncated_gzip_file(v3_full_text: str) -> None:
    data = gzip.compress(v3_full_text.encode())
    _invalid(data[: len(data) // 2], "gzip")


@pytest.mark.parametrize("data", ["{'format-version': 1}", "", b"\xff\xfe\x00garbage"])
def test_invalid_json(data: str | bytes) -> None:
    _invalid(data)


def test_top_level_must_be_an_object() -> None:
    _invalid("[1, 2]", "JSON object")


@pytest.mark.parametrize("name", [V1, V2_SPARK, V3])
def test_missing_location(name: str) -> None:
    raw = golden_json(name)
    del raw["location"]
    _invalid(_text(raw), "'location'")


@pytest.mark.parametrize(
    "key",
    [
        "table-uuid",
        "last-sequence-number",
        "schemas",
        "current-schema-id",
        "partition-specs",
        "default-spec-id",
        "last-partition-id",
        "sort-orders",
        "default-sort-order-id",
        "last-updated-ms",
        "last-column-id",
        "format-version",
    ],
)
def test_missing_field_required_in_v2(key: str) -> None:
    raw = golden_json(V2_SPARK)
    del raw[key]
    _invalid(_text(raw), repr(key))


def test_missing_next_row_id_in_v3() -> None:
    raw = golden_json(V3)
    del raw["next-row-id"]
    _invalid(_text(raw), "'next-row-id'")


def test_v1_without_schema_or_schemas() -> None:
    raw = golden_json(V1)
    del raw["schema"]
    _invalid(_text(raw), "'schema'")


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (("last-updated-ms",), "soon", "'last-updated-ms'"),
        (("format-version",), 0, "'format-version'"),
        (("current-schema-id",), 7, "'current-schema-id' 7"),
        (("default-spec-id",), 7, "'default-spec-id' 7"),
        (("default-sort-order-id",), 7, "'default-sort-order-id' 7"),
        (("properties",), {"a": 1}, "'properties'"),
        (("refs", "audit", "type"), "bookmark", "'bookmark'"),
        (("refs", "main", "snapshot-id"), 3051729675574597004, "'main'"),
        (("snapshots", 0, "timestamp-ms"), None, "'timestamp-ms'"),
        (("snapshots", 0, "manifest-list"), None, "'manifest-list'"),
        (("statistics", 0, "file-size-in-bytes"), "big", "'file-size-in-bytes'"),
        (("encryption-keys", 0, "encrypted-key-metadata"), None, "'encrypted-key-metadata'"),
        (("schemas", 1, "fields"), "nope", "'schemas' entry 1"),
        (("snapshot-log", 0), "not an object", "'snapshot-log' entry 0"),
    ],
)
def test_invalid_field_is_named(path: tuple[Any, ...], value: Any, needle: str) -> None:
    raw = golden_json(V3)
    target: Any = raw
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    _invalid(_text(raw), needle)
