"""MetadataBuilder applies every REST ``TableUpdate``, checked as the spec and Java require.

The base is the hand-written v3 golden file (tests/data/metadata/handwritten): two schemas
(0, named by the older snapshot; 1, current), one spec (0, default), statistics and
partition statistics for the current snapshot, two encryption keys (``snap-key-1`` used by
the current snapshot). Expected values are read off that file by hand.
"""

from __future__ import annotations

import dataclasses

import pytest

from icecore.errors import ValidationError
from icecore.metadata.builder import MetadataBuilder, encode_metadata
from icecore.metadata.model import (
    EncryptedKey,
    PartitionStatisticsFile,
    StatisticsFile,
    TableMetadata,
)
from icecore.metadata.serde import parse_metadata
from icecore.metadata.updates import (
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    MetadataUpdate,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveSchemas,
    RemoveSnapshots,
    RemoveStatistics,
    SetPartitionStatistics,
    SetStatistics,
    UpgradeFormatVersion,
)
from icecore.partitioning import partition_spec_from_json
from icecore.schema import schema_from_json

CURRENT = 3055729675574597004
OLDER = 3051729675574597004


@pytest.fixture
def base(v3_full_text: str) -> TableMetadata:
    return parse_metadata(v3_full_text, location="s3://bucket/wh/db/full/metadata/v2.metadata.json")


def _build(base: TableMetadata, *updates: MetadataUpdate) -> TableMetadata:
    new = MetadataBuilder(base).apply_all(updates).build("s3://old.metadata.json")
    encode_metadata(new)  # what would be written reads back the same
    return new


def test_set_statistics_replaces_the_snapshots_file_and_adds_another(base: TableMetadata) -> None:
    replacement = StatisticsFile(CURRENT, "s3://b/stats-2.puffin", 500, 50, ())
    other = StatisticsFile(OLDER, "s3://b/stats-0.puffin", 300, 30, ())
    new = _build(base, SetStatistics(replacement), SetStatistics(other))
    assert {(s.snapshot_id, s.statistics_path) for s in new.statistics} == {
        (CURRENT, "s3://b/stats-2.puffin"),
        (OLDER, "s3://b/stats-0.puffin"),
    }


def test_remove_statistics(base: TableMetadata) -> None:
    assert _build(base, RemoveStatistics(CURRENT)).statistics == ()
    same = MetadataBuilder(base).apply(RemoveStatistics(OLDER))
    assert same.changes == []  # nothing to remove: no change recorded


def test_partition_statistics(base: TableMetadata) -> None:
    pstats = PartitionStatisticsFile(OLDER, "s3://b/p.parquet", 10)
    new = _build(base, SetPartitionStatistics(pstats), RemovePartitionStatistics(CURRENT))
    assert [(p.snapshot_id, p.statistics_path) for p in new.partition_statistics] == [
        (OLDER, "s3://b/p.parquet")
    ]


def test_remove_schemas_refuses_the_current_one(base: TableMetadata) -> None:
    with pytest.raises(ValidationError, match="current schema"):
        _build(base, RemoveSchemas((1,)))


def test_remove_schemas_refuses_one_a_snapshot_names_until_it_is_expired(
    base: TableMetadata,
) -> None:
    with pytest.raises(ValidationError, match="snapshot still in the table"):
        _build(base, RemoveSchemas((0,)))
    new = _build(base, RemoveSnapshots((OLDER,)), RemoveSchemas((0, 77)))
    assert [s.schema_id for s in new.schemas] == [1]


def test_remove_partition_specs_refuses_the_default_and_drops_others(base: TableMetadata) -> None:
    with pytest.raises(ValidationError, match="default spec"):
        _build(base, RemovePartitionSpecs((0,)))
    spec = partition_spec_from_json(
        {
            "spec-id": 9,
            "fields": [{"name": "b", "transform": "bucket[4]", "source-id": 1, "field-id": 1001}],
        }
    )
    added = _build(base, AddPartitionSpec(spec))
    assert [s.spec_id for s in added.partition_specs] == [0, 1]
    assert [s.spec_id for s in _build(added, RemovePartitionSpecs((1,))).partition_specs] == [0]


def test_encryption_keys(base: TableMetadata) -> None:
    key = EncryptedKey("k2", "a2V5Cg==", "table-key", None)
    new = _build(base, AddEncryptionKey(key))
    assert [k.key_id for k in new.encryption_keys] == ["table-key", "snap-key-1", "k2"]
    assert [k.key_id for k in _build(new, RemoveEncryptionKey("k2")).encryption_keys] == [
        "table-key",
        "snap-key-1",
    ]
    with pytest.raises(ValidationError, match="exists already"):
        _build(
            base,
            AddEncryptionKey(EncryptedKey("k2x", "eA==", None, None)),
            AddEncryptionKey(EncryptedKey("k2x", "eQ==", None, None)),
        )
    with pytest.raises(ValidationError, match="a snapshot still uses it"):
        _build(base, RemoveEncryptionKey("snap-key-1"))


def test_encryption_keys_need_v3(base: TableMetadata) -> None:
    v2 = dataclasses.replace(base, format_version=2, encryption_keys=(), next_row_id=None)
    with pytest.raises(ValidationError, match="format version 3"):
        MetadataBuilder(v2).apply(AddEncryptionKey(EncryptedKey("k", "eA==", None, None)))


def test_upgrade_then_v3_type_in_one_commit(base: TableMetadata) -> None:
    v2 = dataclasses.replace(base, format_version=2, encryption_keys=(), next_row_id=None)
    schema = schema_from_json(
        {
            "type": "struct",
            "schema-id": 5,
            "fields": [
                {"id": 1, "name": "id", "required": True, "type": "long"},
                {"id": 4, "name": "ts", "required": False, "type": "timestamp_ns"},
            ],
        }
    )
    with pytest.raises(ValidationError, match="needs format version 3"):
        MetadataBuilder(v2).apply(AddSchema(schema, None))
    new = (
        MetadataBuilder(v2)
        .apply_all([UpgradeFormatVersion(3), AddSchema(schema, None)])
        .build(None)
    )
    assert new.format_version == 3
    assert new.next_row_id == 0
    assert new.last_column_id == 4  # None: the higher of the table's (3) and the schema's (4)
