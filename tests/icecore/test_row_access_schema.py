"""Masks over a schema and over metadata columns, by hand (no table needed).

What :mod:`icecore.row_access` hides for a mask: a struct's masked field only, a list or map
with a masked field inside as a whole (the reader prunes struct fields, not inside lists and
maps), and, in a metadata table, the masked columns' bound entries (a map column possibly
sliced: its offsets are absolute into its keys).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from icecore.access import Access, Role
from icecore.errors import Forbidden
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.row_access import (
    check_columns,
    check_names_in_query,
    mask_metadata_table,
    masked_columns,
    readable_schema,
)
from icecore.schema import Schema
from icecore.transforms import parse_transform
from icecore.types import ListType, LongType, NestedField, StringType, StructType

SCHEMA = Schema(
    (
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "email", StringType()),
        NestedField(
            3,
            "address",
            StructType((NestedField(4, "city", StringType()), NestedField(5, "zip", StringType()))),
        ),
        NestedField(
            6,
            "orders",
            ListType(7, StructType((NestedField(8, "sku", StringType()),)), element_required=False),
        ),
    ),
    schema_id=0,
)


def _masked(*names: str) -> Access:
    return Access(Role.READER, frozenset(names))


def _names(schema: Schema) -> list[str]:
    return sorted(schema.id_to_name().values())


def test_a_struct_field_is_pruned_and_a_list_with_a_masked_field_hidden_whole() -> None:
    assert _names(readable_schema(SCHEMA, _masked("address.zip"))) == sorted(
        set(SCHEMA.id_to_name().values()) - {"address.zip"}
    )
    whole = readable_schema(SCHEMA, _masked("address"))
    assert [f.name for f in whole.fields] == ["id", "email", "orders"]
    in_list = readable_schema(SCHEMA, _masked("orders.element.sku"))
    assert [f.name for f in in_list.fields] == ["id", "email", "address"]
    assert readable_schema(SCHEMA, Access(Role.READER)) is SCHEMA
    assert masked_columns(SCHEMA, _masked("address.zip", "email")) == ["email", "address.zip"]


def test_masked_names_are_refused_by_column_and_in_a_query() -> None:
    access = _masked("email", "address.zip")
    check_columns(SCHEMA, access, ["id", "address.city"], "t")  # allowed
    for columns in (["Email"], ["address.zip"]):
        with pytest.raises(Forbidden, match="is masked for you on t"):
            check_columns(SCHEMA, access, columns, "t")
    check_names_in_query(SCHEMA, access, {"id", "zip"}, "t")  # zip without address: not it
    for names in ({"email"}, {"address", "zip"}):
        with pytest.raises(Forbidden, match="is masked for you"):
            check_names_in_query(SCHEMA, access, names, "t")


def test_bounds_of_a_masked_column_are_dropped_from_a_sliced_map() -> None:
    bounds = pa.array(
        [
            [(1, b"a"), (2, b"secret")],
            None,
            [(2, b"hidden"), (4, b"c")],
            [(1, b"d"), (2, b"e"), (4, b"f")],
        ],
        pa.map_(pa.int32(), pa.binary()),
    )
    spec = PartitionSpec(1, (PartitionField(2, 1000, "email", parse_transform("identity")),))
    partition = pa.array(
        [{"email": "x"}] * 3,
        pa.struct([pa.field("email", pa.string(), metadata={b"field_id": b"1000"})]),
    )
    table = pa.table({"lower_bounds": bounds.slice(1), "partition": partition})
    masked = mask_metadata_table(table, [SCHEMA], [spec], _masked("email"))
    assert masked["lower_bounds"].to_pylist() == [None, [(4, b"c")], [(1, b"d"), (4, b"f")]]
    assert masked["partition"].to_pylist() == [{"email": None}] * 3
    assert mask_metadata_table(table, [SCHEMA], [spec], _masked("id")).equals(
        pa.table(
            {
                "lower_bounds": pa.array(
                    [None, [(2, b"hidden"), (4, b"c")], [(2, b"e"), (4, b"f")]],
                    pa.map_(pa.int32(), pa.binary()),
                ),
                "partition": partition,
            }
        )
    )
