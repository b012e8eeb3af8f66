from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg import transforms as ptr

from icecore.errors import InvalidMetadata, ValidationError
from icecore.transforms.truncate import TruncateTransform
from icecore.types import (
    BinaryType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
)

from ..peer import peer_type


# The spec's truncation table ("Truncate Transform Details").
@pytest.mark.parametrize(
    ("t", "width", "value", "expected"),
    [
        (IntegerType(), 10, 1, 0),
        (IntegerType(), 10, -1, -10),
        (LongType(), 10, 1, 0),
        (LongType(), 10, -1, -10),
        (DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50")),
        (StringType(), 3, "iceberg", "ice"),
        (BinaryType(), 3, b"\x01\x02\x03\x04\x05", b"\x01\x02\x03"),
    ],
)
def test_spec_examples(t: IcebergType, width: int, value: Any, expected: Any) -> None:
    result = TruncateTransform(width).apply(t, value)
    assert result == expected
    if isinstance(expected, Decimal):
        assert result.as_tuple().exponent == expected.as_tuple().exponent  # keeps the scale


def test_falsy_values_and_null() -> None:
    tr = TruncateTransform(10)
    assert tr.apply(IntegerType(), 0) == 0
    assert tr.apply(StringType(), "") == ""
    assert tr.apply(BinaryType(), b"") == b""
    assert tr.apply(IntegerType(), None) is None


def test_strings_truncate_by_code_points() -> None:
    tr = TruncateTransform(2)
    # U+1F600 is one code point, two UTF-16 units and four UTF-8 bytes
    assert tr.apply(StringType(), "😀😀😀") == "😀😀"
    assert tr.apply(StringType(), "aé😀") == "aé"
    assert tr.apply(StringType(), "a") == "a"


def test_validation() -> None:
    with pytest.raises(InvalidMetadata):
        TruncateTransform(0)
    with pytest.raises(ValidationError):
        TruncateTransform(4).apply(FixedType(8), b"12345678")
    assert TruncateTransform(4).result_type(StringType()) == StringType()
    assert TruncateTransform(4).preserves_order


PEER_SAMPLES: list[tuple[IcebergType, list[Any]]] = [
    (IntegerType(), [0, -1, 1, 9, 10, -10, -11, 2**31 - 1, -(2**31) + 10]),
    (LongType(), [0, -1, 2**62, -(2**62), 123456789]),
    (DecimalType(9, 2), [Decimal("0.00"), Decimal("-0.01"), Decimal("10.65"), Decimal("-10.65")]),
    (StringType(), ["", "a", "iceberg", "😀😀😀😀", "é日本語", "\U0010ffffx"]),
    (BinaryType(), [b"", b"\x00", b"\xff" * 20]),
]


@pytest.mark.parametrize(("t", "samples"), PEER_SAMPLES)
def test_agrees_with_pyiceberg(t: IcebergType, samples: list[Any]) -> None:
    for width in (1, 3, 10, 50):
        theirs = ptr.TruncateTransform(width).transform(peer_type(t))
        ours = TruncateTransform(width).bind(t)
        for value in [*samples, None]:
            assert ours(value) == theirs(value), (t, width, value)


@pytest.mark.parametrize(
    ("t", "values", "arrow_type"),
    [
        (IntegerType(), [0, -1, 1, -11, None], pa.int32()),
        (LongType(), [0, -1, 2**62 + 7, None], pa.int64()),
        (StringType(), ["iceberg", "😀😀😀😀", "", None], pa.string()),
        (StringType(), ["iceberg", None], pa.large_string()),
        (BinaryType(), [b"\x01\x02\x03\x04", b"", None], pa.binary()),
        (DecimalType(9, 2), [Decimal("10.65"), Decimal("-0.01"), None], pa.decimal128(9, 2)),
    ],
)
def test_apply_arrow_matches_apply(t: IcebergType, values: list[Any], arrow_type: Any) -> None:
    tr = TruncateTransform(3)
    result = tr.apply_arrow(pa.array(values, arrow_type))
    assert result.type == arrow_type
    assert result.to_pylist() == [tr.apply(t, x) for x in values]
