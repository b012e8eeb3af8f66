from __future__ import annotations

import json

import pytest

from icecore.errors import InvalidMetadata, Unsupported
from icecore.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
    VariantType,
    field_from_json,
    field_to_json,
    type_from_json,
    type_to_json,
)

# Appendix C: every primitive's canonical JSON string and the type it names.
PRIMITIVES = [
    ("unknown", UnknownType()),
    ("boolean", BooleanType()),
    ("int", IntegerType()),
    ("long", LongType()),
    ("float", FloatType()),
    ("double", DoubleType()),
    ("date", DateType()),
    ("time", TimeType()),
    ("timestamp", TimestampType()),
    ("timestamptz", TimestamptzType()),
    ("timestamp_ns", TimestampNanoType()),
    ("timestamptz_ns", TimestamptzNanoType()),
    ("string", StringType()),
    ("uuid", UUIDType()),
    ("fixed[16]", FixedType(16)),
    ("binary", BinaryType()),
    ("decimal(9,2)", DecimalType(9, 2)),
    ("decimal(38,0)", DecimalType(38, 0)),
    ("variant", VariantType()),
    ("geometry", GeometryType()),
    ("geometry(srid:4326)", GeometryType("srid:4326")),
    ("geography", GeographyType()),
    ("geography(srid:4326)", GeographyType("srid:4326")),
    ("geography(srid:4326, spherical)", GeographyType("srid:4326", "spherical")),
]


@pytest.mark.parametrize(("text", "expected"), PRIMITIVES)
def test_primitive_strings_round_trip(text: str, expected: object) -> None:
    assert type_from_json(text) == expected
    assert type_to_json(expected) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("decimal(9, 2)", DecimalType(9, 2)),  # the spec's second example
        (" decimal( 9 ,2 ) ", DecimalType(9, 2)),
        ("fixed[ 3 ]", FixedType(3)),
        ("geography( OGC:CRS84 , karney )", GeographyType("OGC:CRS84", "karney")),
    ],
)
def test_whitespace_in_parameters_is_accepted(text: str, expected: object) -> None:
    assert type_from_json(text) == expected


def test_str_prints_spec_notation() -> None:
    assert str(DecimalType(9, 2)) == "decimal(9,2)"
    assert str(FixedType(16)) == "fixed(16)"
    assert str(ListType(3, StringType(), True)) == "list<string>"
    assert str(MapType(4, StringType(), 5, DoubleType(), False)) == "map<string, double>"
    struct = StructType((NestedField(1, "a", IntegerType(), True, doc="the a"),))
    assert str(struct) == "struct<1: a: required int (the a)>"


def test_unknown_type_string_is_unsupported() -> None:
    with pytest.raises(Unsupported, match="decimal128"):
        type_from_json("decimal128")
    with pytest.raises(Unsupported):
        type_from_json({"type": "tuple"})


@pytest.mark.parametrize("bad", [42, None, {"type": "struct"}, {"type": "list", "element": "int"}])
def test_malformed_type_json_is_invalid_metadata(bad: object) -> None:
    with pytest.raises(InvalidMetadata):
        type_from_json(bad)


def test_decimal_precision_over_38_is_invalid() -> None:
    with pytest.raises(InvalidMetadata, match="precision"):
        type_from_json("decimal(39,2)")


# Appendix C example struct, extended with a map, nested defaults and unknown keys.
NESTED = {
    "type": "struct",
    "fields": [
        {
            "id": 1,
            "name": "id",
            "required": True,
            "type": "uuid",
            "initial-default": "0db3e2a8-9d1d-42b9-aa7b-74ebe558dceb",
            "write-default": "ec5911be-b0a7-458c-8438-c9a3e53cffae",
        },
        {
            "id": 2,
            "name": "data",
            "required": False,
            "type": {
                "type": "list",
                "element-id": 3,
                "element-required": True,
                "element": "string",
            },
            "doc": "payload",
        },
        {
            "id": 4,
            "name": "props",
            "required": False,
            "type": {
                "type": "map",
                "key-id": 5,
                "key": "string",
                "value-id": 6,
                "value-required": False,
                "value": {
                    "type": "struct",
                    "fields": [
                        {
                            "id": 7,
                            "name": "x",
                            "required": True,
                            "type": "int",
                            "initial-default": 0,
                            "write-default": -1,
                            "x-future": {"nested": [1, 2]},
                        }
                    ],
                },
            },
            "initial-default": {},
            "write-default": None,
        },
    ],
}


def test_nested_struct_json_round_trips_exactly() -> None:
    parsed = type_from_json(NESTED)
    assert type_to_json(parsed) == NESTED
    # and through text, as a metadata file would
    assert type_to_json(type_from_json(json.loads(json.dumps(NESTED)))) == NESTED


def test_field_keeps_defaults_doc_and_unknown_keys() -> None:
    props = type_from_json(NESTED)
    assert isinstance(props, StructType)
    f = props.field(4)
    assert f is not None and isinstance(f.field_type, MapType)
    value = f.field_type.value_type
    assert isinstance(value, StructType)
    x = value.fields[0]
    assert (x.initial_default, x.write_default) == (0, -1)  # 0 is a value, not "absent"
    assert dict(x.extra) == {"x-future": {"nested": [1, 2]}}
    assert f.initial_default == {}
    data = props.field(2)
    assert data is not None and data.doc == "payload"


def test_falsy_defaults_survive() -> None:
    for default in (0, "", False, 0.0, []):
        obj = {"id": 1, "name": "a", "required": False, "type": "int", "initial-default": default}
        assert field_to_json(field_from_json(obj)) == obj


def test_field_without_required_is_invalid() -> None:
    with pytest.raises(InvalidMetadata, match="required"):
        field_from_json({"id": 1, "name": "a", "type": "int"})


def test_types_are_hashable_values() -> None:
    assert DecimalType(9, 2) == DecimalType(9, 2)
    assert hash(DecimalType(9, 2)) == hash(DecimalType(9, 2))
    assert IntegerType() != LongType()
    f1 = NestedField(1, "a", IntegerType(), initial_default={"1": 2})
    f2 = NestedField(1, "a", IntegerType(), initial_default={"1": 2})
    assert f1 == f2 and hash(f1) == hash(f2)
    assert len({StructType((f1,)), StructType((f2,))}) == 1


def test_list_and_map_child_fields() -> None:
    lst = ListType(3, StringType(), element_required=False)
    assert lst.element_field == NestedField(3, "element", StringType(), False)
    m = MapType(4, StringType(), 5, IntegerType(), value_required=True)
    assert [c.name for c in m.child_fields()] == ["key", "value"]
    assert m.key_field.required
