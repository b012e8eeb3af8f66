from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg import transforms as ptr

from icecore.errors import InvalidMetadata, ValidationError
from icecore.transforms.bucket import BucketTransform, hash_function, hash_string
from icecore.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from ..peer import peer_type

# Values computed from the spec's test inputs by hand (see tests/icecore/test_values.py).
DAYS_2017_11_16 = 17486
MICROS_22_31_08 = (22 * 3600 + 31 * 60 + 8) * 1_000_000
TS = DAYS_2017_11_16 * 86_400_000_000 + MICROS_22_31_08  # 2017-11-16T22:31:08
TZ = TS  # 2017-11-16T14:31:08-08:00 is the same instant

# Every row of Appendix B (latest spec), including the "not currently valid" table.
APPENDIX_B: list[tuple[IcebergType, Any, int]] = [
    (IntegerType(), 34, 2017239379),
    (LongType(), 34, 2017239379),
    (DecimalType(4, 2), Decimal("14.20"), -500754589),
    (DateType(), dt.date(2017, 11, 16), -653330422),
    (DateType(), DAYS_2017_11_16, -653330422),
    (TimeType(), MICROS_22_31_08, -662762989),
    (TimeType(), dt.time(22, 31, 8), -662762989),
    (TimestampType(), TS, -2047944441),
    (TimestampType(), TS + 1, -1207196810),
    (TimestamptzType(), TZ, -2047944441),
    (TimestamptzType(), TZ + 1, -1207196810),
    (TimestampNanoType(), TS * 1000, -2047944441),
    (TimestampNanoType(), TS * 1000 + 1001, -1207196810),
    (TimestamptzNanoType(), TZ * 1000, -2047944441),
    (TimestamptzNanoType(), TZ * 1000 + 1001, -1207196810),
    (StringType(), "iceberg", 1210000089),
    (UUIDType(), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
    (UUIDType(), bytes.fromhex("F79C3E09677C4BBDA4793F349CB785E7"), 1488055340),
    (FixedType(4), b"\x00\x01\x02\x03", -188683207),
    (BinaryType(), b"\x00\x01\x02\x03", -188683207),
    (BooleanType(), True, 1392991556),
    (FloatType(), 1.0, -142385009),
    (FloatType(), 0.0, 1669671676),
    (FloatType(), -0.0, 1669671676),
    (DoubleType(), 1.0, -142385009),
    (DoubleType(), 0.0, 1669671676),
    (DoubleType(), -0.0, 1669671676),
]


@pytest.mark.parametrize(("t", "value", "expected"), APPENDIX_B)
def test_appendix_b_hashes(t: IcebergType, value: Any, expected: int) -> None:
    assert hash_function(t)(value) == expected


@pytest.mark.parametrize(("t", "value", "expected"), APPENDIX_B[:20])
def test_bucket_is_masked_hash_mod_n(t: IcebergType, value: Any, expected: int) -> None:
    for n in (1, 2, 16, 1000, 2**31 - 1):
        assert BucketTransform(n).apply(t, value) == (expected & 0x7FFFFFFF) % n


def test_nan_hashes_canonically() -> None:
    # All NaN bit patterns hash as 0x7ff8000000000000L: the hash of that long.
    canonical = hash_function(LongType())(0x7FF8000000000000)
    assert hash_function(DoubleType())(math.nan) == canonical
    assert hash_function(DoubleType())(-math.nan) == canonical
    assert hash_function(FloatType())(float("nan")) == canonical


def test_int_and_long_agree() -> None:
    for value in (0, -1, 1, 2**31 - 1, -(2**31)):
        assert hash_function(IntegerType())(value) == hash_function(LongType())(value)


def test_decimal_hash_ignores_scale() -> None:
    # 14.20 at scale 2 and 1.420 at scale 3 share the unscaled value 1420.
    assert hash_function(DecimalType(9, 3))(Decimal("1.420")) == -500754589


def test_surrogate_pairs_hash_like_java_utf8() -> None:
    emoji = "\U0001f600"
    assert hash_string("\ud83d\ude00") == hash_string(emoji)
    assert hash_string("a\ud800") == hash_string("a?")


def test_null_and_validation() -> None:
    assert BucketTransform(16).apply(IntegerType(), None) is None
    with pytest.raises(ValidationError):
        BucketTransform(16).apply(BooleanType(), True)
    with pytest.raises(InvalidMetadata):
        BucketTransform(0)
    assert BucketTransform(16).result_type(StringType()) == IntegerType()
    assert not BucketTransform(16).preserves_order
    assert BucketTransform(16).to_human_string(IntegerType(), 0) == "0"
    assert BucketTransform(16).to_human_string(IntegerType(), None) == "null"


PEER_SAMPLES: list[tuple[IcebergType, list[Any]]] = [
    (IntegerType(), [0, -1, 1, 34, 2**31 - 1, -(2**31)]),
    (LongType(), [0, -1, 2**63 - 1, -(2**63), 1 << 40]),
    (DecimalType(9, 2), [Decimal("0.00"), Decimal("-0.01"), Decimal("14.20"), Decimal("-128.00")]),
    (DecimalType(38, 10), [Decimal("1234567890123456789012345678.0123456789")]),
    (TimeType(), [0, 1, MICROS_22_31_08, 86_399_999_999]),
    (TimestampType(), [0, -1, TS, -62_135_596_800_000_000]),
    (TimestamptzType(), [0, -1, TZ + 1]),
    (StringType(), ["", "iceberg", "é", "😀", "\U0010ffff", "日本語"]),
    (UUIDType(), [uuid.UUID(int=0), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")]),
    (FixedType(3), [b"\x00\x00\x00", b"\xff\xfe\xfd"]),
    (BinaryType(), [b"", b"\x00", bytes(range(256))]),
]


@pytest.mark.parametrize(("t", "samples"), PEER_SAMPLES)
def test_bucket_agrees_with_pyiceberg(t: IcebergType, samples: list[Any]) -> None:
    for n in (1, 7, 16, 1024):
        theirs = ptr.BucketTransform(n).transform(peer_type(t))
        ours = BucketTransform(n).bind(t)
        for value in [*samples, None]:
            assert ours(value) == theirs(value), (t, n, value)


def test_date_bucket_agrees_with_pyiceberg() -> None:
    theirs = ptr.BucketTransform(16).transform(peer_type(DateType()))
    for days in (0, -1, DAYS_2017_11_16, -719_162):
        expected = theirs(days)
        assert BucketTransform(16).apply(DateType(), days) == expected
        date = dt.date(1970, 1, 1) + dt.timedelta(days=days)
        assert BucketTransform(16).apply(DateType(), date) == expected


def test_nanosecond_timestamps_bucket_like_micros_even_before_1970() -> None:
    b = BucketTransform(16)
    for micros in (0, -1, TS):
        for extra in (0, 1, 999):
            nanos = micros * 1000 + extra
            assert b.apply(TimestampNanoType(), nanos) == b.apply(TimestampType(), micros)


ARROW_CASES: list[tuple[IcebergType, list[Any], pa.DataType]] = [
    (IntegerType(), [0, -1, 34, None], pa.int32()),
    (LongType(), [0, -1, 2**63 - 1, None], pa.int64()),
    (StringType(), ["iceberg", "", None, "😀"], pa.string()),
    (BinaryType(), [b"\x00\x01\x02\x03", b"", None], pa.binary()),
    (FixedType(4), [b"\x00\x01\x02\x03", None], pa.binary(4)),
    (DecimalType(4, 2), [Decimal("14.20"), None], pa.decimal128(4, 2)),
    (DateType(), [DAYS_2017_11_16, -1, None], pa.date32()),
    (TimeType(), [MICROS_22_31_08, None], pa.time64("us")),
    (TimestampType(), [TS, -1, None], pa.timestamp("us")),
    (TimestamptzType(), [TZ, None], pa.timestamp("us", tz="UTC")),
    (TimestampNanoType(), [TS * 1000 + 1001, -1, None], pa.timestamp("ns")),
]


def _arrow(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    if pa.types.is_date32(arrow_type):
        return pa.array(values, pa.int32()).cast(arrow_type)
    if pa.types.is_temporal(arrow_type):
        return pa.array(values, pa.int64()).cast(arrow_type)
    return pa.array(values, arrow_type)


@pytest.mark.parametrize(("t", "values", "arrow_type"), ARROW_CASES)
def test_apply_arrow_matches_apply(
    t: IcebergType, values: list[Any], arrow_type: pa.DataType
) -> None:
    b = BucketTransform(16)
    result = b.apply_arrow(_arrow(values, arrow_type))
    assert result.type == pa.int32()
    assert result.to_pylist() == [b.apply(t, x) for x in values]
