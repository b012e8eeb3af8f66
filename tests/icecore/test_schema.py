from __future__ import annotations

import copy

import pytest

from icecore.errors import InvalidMetadata
from icecore.schema import Schema, schema_from_json, schema_to_json
from icecore.types import IntegerType, NestedField, StringType, StructType

SCHEMA = {
    "type": "struct",
    "schema-id": 7,
    "identifier-field-ids": [1, 12],
    "x-writer-note": "kept",
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {
            "id": 2,
            "name": "location",
            "required": False,
            "type": {
                "type": "struct",
                "fields": [
                    {"id": 3, "name": "lat", "required": False, "type": "double"},
                    {"id": 4, "name": "Lon", "required": False, "type": "double", "doc": "x"},
                ],
            },
        },
        {
            "id": 5,
            "name": "points",
            "required": False,
            "type": {
                "type": "list",
                "element-id": 6,
                "element-required": True,
                "element": {
                    "type": "struct",
                    "fields": [{"id": 7, "name": "x", "required": True, "type": "int"}],
                },
            },
        },
        {
            "id": 8,
            "name": "tags",
            "required": False,
            "type": {
                "type": "map",
                "key-id": 9,
                "key": "string",
                "value-id": 10,
                "value-required": False,
                "value": {
                    "type": "struct",
                    "fields": [{"id": 11, "name": "n", "required": False, "type": "int"}],
                },
            },
        },
        {
            "id": 13,
            "name": "a.b",
            "required": False,
            "type": "string",
            "initial-default": "",
            "write-default": "zz",
        },
        {
            "id": 14,
            "name": "s",
            "required": True,
            "type": {
                "type": "struct",
                "fields": [{"id": 12, "name": "k", "required": True, "type": "string"}],
            },
        },
    ],
}


@pytest.fixture
def schema() -> Schema:
    return schema_from_json(copy.deepcopy(SCHEMA))


def test_json_round_trip(schema: Schema) -> None:
    assert schema_to_json(schema) == SCHEMA
    assert schema_from_json(schema_to_json(schema)) == schema


def test_header_fields(schema: Schema) -> None:
    assert schema.schema_id == 7
    assert schema.identifier_field_ids == (1, 12)
    assert schema.identifier_field_names() == ("id", "s.k")
    assert schema.highest_field_id == 14
    assert dict(schema.extra) == {"x-writer-note": "kept"}


def test_find_field_by_id_at_any_depth(schema: Schema) -> None:
    f7 = schema.find_field(7)
    assert f7 is not None and f7.name == "x"
    element = schema.find_field(6)
    assert element is not None and element.name == "element" and element.required
    value = schema.find_field(10)
    assert value is not None and value.name == "value" and not value.required
    assert schema.find_field(99) is None


def test_full_column_names(schema: Schema) -> None:
    assert dict(schema.id_to_name()) == {
        1: "id",
        2: "location",
        3: "location.lat",
        4: "location.Lon",
        5: "points",
        6: "points.element",
        7: "points.element.x",
        8: "tags",
        9: "tags.key",
        10: "tags.value",
        11: "tags.value.n",
        13: "a.b",
        14: "s",
        12: "s.k",
    }
    assert schema.find_column_name(11) == "tags.value.n"


@pytest.mark.parametrize(
    ("name", "field_id"),
    [
        ("location.lat", 3),
        ("points.element", 6),
        ("points.element.x", 7),
        ("points.x", 7),  # short name without "element"
        ("tags.key", 9),
        ("tags.value", 10),
        ("tags.n", 11),  # short name without "value"
        ("a.b", 13),  # a dotted literal name
        ("s.k", 12),
    ],
)
def test_find_by_name(schema: Schema, name: str, field_id: int) -> None:
    found = schema.find_field_by_name(name)
    assert found is not None and found.field_id == field_id


def test_case_sensitivity(schema: Schema) -> None:
    assert schema.find_field_by_name("location.lon") is None
    found = schema.find_field_by_name("LOCATION.lon", case_sensitive=False)
    assert found is not None and found.field_id == 4
    assert schema.find_field_by_name("nope", case_sensitive=False) is None


def test_case_insensitive_ambiguity_raises() -> None:
    s = Schema((NestedField(1, "a", IntegerType()), NestedField(2, "A", IntegerType())))
    assert s.find_id_by_name("A") == 2
    with pytest.raises(InvalidMetadata, match="more than one"):
        s.find_field_by_name("a", case_sensitive=False)


def test_accessors_reach_struct_fields_only(schema: Schema) -> None:
    row = (10, (1.5, None), [(1,)], {}, "", ("key",))
    lat = schema.accessor(3)
    assert lat is not None and lat.positions == (1, 0) and lat.get(row) == 1.5
    lon = schema.accessor(4)
    assert lon is not None and lon.get(row) is None
    k = schema.accessor(12)
    assert k is not None and k.get(row) == "key"
    empty = schema.accessor(13)
    assert empty is not None and empty.get(row) == ""  # "" is a value
    assert schema.accessor(7) is None  # inside a list
    assert schema.accessor(11) is None  # inside a map
    assert lat.get((1, None, None, None, None, None)) is None  # null parent struct


def test_parent_ids(schema: Schema) -> None:
    assert schema.parent_id(3) == 2
    assert schema.parent_id(7) == 6
    assert schema.parent_id(1) is None


def test_duplicate_ids_are_invalid() -> None:
    with pytest.raises(InvalidMetadata, match="used twice"):
        Schema((NestedField(1, "a", IntegerType()), NestedField(1, "b", StringType())))


def test_v1_schema_without_id_and_identifiers() -> None:
    s = schema_from_json(
        {"type": "struct", "fields": [{"id": 1, "name": "a", "required": False, "type": "int"}]}
    )
    assert s.schema_id == 0 and s.identifier_field_ids == ()
    assert s.as_struct() == StructType((NestedField(1, "a", IntegerType()),))


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"type": "list", "fields": []},
        {"type": "struct"},
        {"type": "struct", "fields": [], "schema-id": "0"},
        {"type": "struct", "fields": [], "identifier-field-ids": ["1"]},
    ],
)
def test_malformed_schema_json(bad: object) -> None:
    with pytest.raises(InvalidMetadata):
        schema_from_json(bad)


def test_schema_is_hashable_and_immutable(schema: Schema) -> None:
    assert hash(schema) == hash(schema_from_json(copy.deepcopy(SCHEMA)))
    with pytest.raises(AttributeError):
        schema.schema_id = 3  # type: ignore[misc]
