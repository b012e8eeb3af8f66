from __future__ import annotations

import datetime as dt
import uuid

import pyarrow as pa
import pytest

from icecore.errors import ValidationError
from icecore.transforms import IdentityTransform, VoidTransform
from icecore.types import (
    BinaryType,
    DateType,
    GeometryType,
    IntegerType,
    ListType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
    VariantType,
)


def test_identity_keeps_values_including_falsy_ones() -> None:
    ident = IdentityTransform()
    for t, value in [(IntegerType(), 0), (StringType(), ""), (BinaryType(), b""), (TimeType(), 0)]:
        assert ident.apply(t, value) == value
    assert ident.apply(IntegerType(), None) is None
    assert ident.result_type(DateType()) == DateType()
    assert ident.preserves_order and ident.is_identity
    assert ident.satisfies_order_of(IdentityTransform())


@pytest.mark.parametrize("t", [GeometryType(), VariantType(), ListType(1, IntegerType())])
def test_identity_rejects_non_primitive_and_geo(t: object) -> None:
    with pytest.raises(ValidationError):
        IdentityTransform().apply(t, 1)  # type: ignore[arg-type]


def test_identity_human_strings_follow_java() -> None:
    # java.time's toString forms used by Iceberg's reference partition paths
    ident = IdentityTransform()
    micros = ((17486 * 24 + 22) * 60 + 31) * 60_000_000 + 8_000_000  # 2017-11-16T22:31:08
    assert ident.to_human_string(TimestampType(), micros) == "2017-11-16T22:31:08"
    assert ident.to_human_string(TimestamptzType(), micros + 1) == "2017-11-16T22:31:08.000001Z"
    assert ident.to_human_string(TimestampType(), -1) == "1969-12-31T23:59:59.999999"
    assert ident.to_human_string(DateType(), dt.date(2024, 8, 9)) == "2024-08-09"
    assert ident.to_human_string(TimeType(), 10 * 3_600_000_000) == "10:00"
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    assert ident.to_human_string(UUIDType(), u) == str(u)
    assert ident.to_human_string(StringType(), None) == "null"


def test_identity_arrow_is_the_same_array() -> None:
    array = pa.array([1, None])
    assert IdentityTransform().apply_arrow(array) is array


def test_void() -> None:
    void = VoidTransform()
    assert void.apply(StringType(), "x") is None
    assert void.apply(ListType(1, IntegerType()), [1]) is None
    assert void.result_type(StringType()) == StringType()
    assert void.to_human_string(StringType(), None) == "null"
    assert void.is_void and not void.preserves_order
    result = void.apply_arrow(pa.array(["a", None]))
    assert result.type == pa.string() and result.to_pylist() == [None, None]
