from __future__ import annotations

import copy

import pytest

from icecore.errors import InvalidMetadata
from icecore.partitioning import (
    UNPARTITIONED_SPEC,
    PartitionField,
    PartitionSpec,
    partition_spec_from_json,
    partition_spec_to_json,
)
from icecore.schema import schema_from_json
from icecore.transforms import BucketTransform, DayTransform, UnknownTransform, VoidTransform
from icecore.types import (
    DateType,
    IntegerType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

SCHEMA = schema_from_json(
    {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "city", "required": False, "type": "string"},
            {"id": 3, "name": "amount", "required": False, "type": "decimal(9,2)"},
            {"id": 4, "name": "ts", "required": False, "type": "timestamptz"},
        ],
    }
)

# Appendix C example, plus a truncate and an unknown key.
SPEC = {
    "spec-id": 3,
    "fields": [
        {"source-id": 4, "field-id": 1000, "name": "ts_day", "transform": "day"},
        {"source-id": 1, "field-id": 1001, "name": "id_bucket", "transform": "bucket[16]"},
        {
            "source-id": 2,
            "field-id": 1002,
            "name": "city_trunc",
            "transform": "truncate[3]",
            "x-note": [1],
        },
        {"source-id": 3, "field-id": 1003, "name": "amount", "transform": "identity"},
    ],
}


def test_round_trip() -> None:
    spec = partition_spec_from_json(copy.deepcopy(SPEC))
    assert partition_spec_to_json(spec) == SPEC
    assert spec.spec_id == 3
    assert spec.fields[1] == PartitionField(1, 1001, "id_bucket", BucketTransform(16))
    assert dict(spec.fields[2].extra) == {"x-note": [1]}


def test_partition_type_uses_result_types() -> None:
    spec = partition_spec_from_json(SPEC)
    assert spec.partition_type(SCHEMA) == StructType(
        (
            NestedField(1000, "ts_day", DateType()),
            NestedField(1001, "id_bucket", IntegerType()),
            NestedField(1002, "city_trunc", StringType()),
            NestedField(1003, "amount", SCHEMA.find_type(3)),  # type: ignore[arg-type]
        )
    )
    assert all(not f.required for f in spec.partition_type(SCHEMA).fields)


def test_v1_fields_without_ids_are_numbered_from_1000() -> None:
    v1 = [
        {"source-id": 4, "name": "ts_day", "transform": "day"},
        {"source-id": 1, "name": "id_bucket", "transform": "bucket[16]"},
    ]
    spec = partition_spec_from_json(v1)  # the bare field list of the v1 `partition-spec`
    assert spec.spec_id == 0
    assert [f.field_id for f in spec.fields] == [1000, 1001]
    obj = partition_spec_from_json({"spec-id": 1, "fields": v1})
    assert [f.field_id for f in obj.fields] == [1000, 1001]  # per spec, not per table


def test_v3_source_ids_are_written_back_as_they_came() -> None:
    only_ids = {"source-ids": [1, 2], "field-id": 1000, "name": "z", "transform": "zorder"}
    both = {"source-id": 4, "source-ids": [4], "field-id": 1001, "name": "d", "transform": "day"}
    spec = partition_spec_from_json({"spec-id": 0, "fields": [only_ids, both]})
    assert partition_spec_to_json(spec)["fields"] == [only_ids, both]
    z = spec.fields[0]
    assert z.source_id == 1 and z.all_source_ids == (1, 2)
    assert z.transform == UnknownTransform("zorder")
    assert spec.fields_by_source_id(2) == (z,)
    # an unknown transform's partition values are typed string, the field is kept
    assert spec.partition_type(SCHEMA).fields[0].field_type == StringType()


def test_dropped_source_column_with_void() -> None:
    spec = PartitionSpec(1, (PartitionField(99, 1000, "gone", VoidTransform()),))
    assert spec.is_unpartitioned
    assert spec.partition_type(SCHEMA).fields[0].name == "gone"


def test_helpers() -> None:
    spec = partition_spec_from_json(SPEC)
    assert not spec.is_unpartitioned
    assert UNPARTITIONED_SPEC.is_unpartitioned
    assert spec.last_assigned_field_id == 1003
    assert UNPARTITIONED_SPEC.last_assigned_field_id == 999
    assert spec.field_by_id(1000) == PartitionField(4, 1000, "ts_day", DayTransform())
    assert spec.field_by_id(7) is None
    renumbered = PartitionSpec(9, spec.fields)
    assert spec.compatible_with(renumbered) and spec != renumbered
    assert hash(spec) == hash(partition_spec_from_json(SPEC))
    assert str(spec).startswith("[1000: ts_day: day(4)")
    assert SCHEMA.find_type(4) == TimestamptzType()


@pytest.mark.parametrize(
    "bad",
    [
        "x",
        {"spec-id": 0},
        {"spec-id": "0", "fields": []},
        {"spec-id": 0, "fields": [{"field-id": 1000, "name": "a", "transform": "day"}]},
        {"spec-id": 0, "fields": [{"source-id": 1, "name": 5, "transform": "day"}]},
        {"spec-id": 0, "fields": [{"source-ids": [], "name": "a", "transform": "day"}]},
        {"spec-id": 0, "fields": [{"source-id": 1, "name": "a", "transform": 7}]},
        {"spec-id": 0, "fields": [{"source-id": 1, "name": "a", "transform": "bucket[0]"}]},
    ],
)
def test_malformed_specs(bad: object) -> None:
    with pytest.raises(InvalidMetadata):
        partition_spec_from_json(bad)
