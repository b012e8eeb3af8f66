from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from decimal import Decimal
from typing import Any

import pytest
from pyiceberg import conversions as pc

from icecore import values as v
from icecore.errors import InvalidMetadata, Unsupported, ValidationError
from icecore.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeometryType,
    IcebergType,
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
)

from .peer import peer_type

SPEC_UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
# 2017-11-16 is 17486 days after 1970-01-01: 47 years with 12 leap days (1972..2016) give
# 17167 days to 2017-01-01, then 304 days of January-October and 15 more of November.
DAYS_2017_11_16 = 47 * 365 + 12 + 304 + 15
MICROS_22_31_08 = (22 * 3600 + 31 * 60 + 8) * 1_000_000
MICROS_2017_11_16_22_31_08 = DAYS_2017_11_16 * 86_400_000_000 + MICROS_22_31_08

# Appendix D bytes written from the spec's text, not from the code under test.
BINARY_VECTORS: list[tuple[IcebergType, Any, bytes]] = [
    (BooleanType(), True, b"\x01"),
    (BooleanType(), False, b"\x00"),
    (IntegerType(), 34, b"\x22\x00\x00\x00"),
    (IntegerType(), 0, b"\x00\x00\x00\x00"),
    (IntegerType(), -1, b"\xff\xff\xff\xff"),
    (IntegerType(), 2**31 - 1, b"\xff\xff\xff\x7f"),
    (IntegerType(), -(2**31), b"\x00\x00\x00\x80"),
    (LongType(), 34, b"\x22" + b"\x00" * 7),
    (LongType(), -1, b"\xff" * 8),
    (LongType(), -(2**63), b"\x00" * 7 + b"\x80"),
    (FloatType(), 1.0, b"\x00\x00\x80\x3f"),  # 0x3f800000
    (FloatType(), -2.0, b"\x00\x00\x00\xc0"),  # 0xc0000000
    (FloatType(), 0.0, b"\x00\x00\x00\x00"),
    (FloatType(), math.inf, b"\x00\x00\x80\x7f"),
    (DoubleType(), 1.0, b"\x00" * 6 + b"\xf0\x3f"),  # 0x3ff0000000000000
    (DoubleType(), 0.0, b"\x00" * 8),
    (DoubleType(), -math.inf, b"\x00" * 6 + b"\xf0\xff"),
    (DateType(), dt.date(2017, 11, 16), b"\x4e\x44\x00\x00"),  # 17486 == 0x444e
    (DateType(), dt.date(1970, 1, 1), b"\x00\x00\x00\x00"),
    (DateType(), dt.date(1969, 12, 31), b"\xff\xff\xff\xff"),
    (TimeType(), MICROS_22_31_08, MICROS_22_31_08.to_bytes(8, "little")),
    (TimeType(), 0, b"\x00" * 8),
    (TimestampType(), MICROS_2017_11_16_22_31_08, MICROS_2017_11_16_22_31_08.to_bytes(8, "little")),
    (TimestamptzType(), -1, b"\xff" * 8),
    (TimestampNanoType(), 1, b"\x01" + b"\x00" * 7),
    (TimestamptzNanoType(), -1000, (-1000).to_bytes(8, "little", signed=True)),
    (StringType(), "iceberg", b"iceberg"),
    (StringType(), "", b""),
    (StringType(), "é😀", b"\xc3\xa9\xf0\x9f\x98\x80"),
    (UUIDType(), SPEC_UUID, bytes.fromhex("F79C3E09677C4BBDA4793F349CB785E7")),
    (FixedType(4), b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    (BinaryType(), b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    (BinaryType(), b"", b""),
    # decimals: the unscaled value, two's complement big-endian, minimum bytes
    (DecimalType(4, 2), Decimal("14.20"), b"\x05\x8c"),  # 1420 == 0x058c
    (DecimalType(9, 2), Decimal("0.00"), b"\x00"),
    (DecimalType(9, 2), Decimal("-0.01"), b"\xff"),
    (DecimalType(9, 0), Decimal("127"), b"\x7f"),
    (DecimalType(9, 0), Decimal("128"), b"\x00\x80"),
    (DecimalType(9, 0), Decimal("-128"), b"\x80"),
    (DecimalType(9, 0), Decimal("-129"), b"\xff\x7f"),
    # 10**38 - 1 < 2**127: 16 bytes, top byte 0x4b with the sign bit clear
    (DecimalType(38, 0), Decimal(10**38 - 1), (10**38 - 1).to_bytes(16, "big", signed=True)),
]


@pytest.mark.parametrize(("t", "value", "data"), BINARY_VECTORS)
def test_binary_vectors_both_ways(t: IcebergType, value: Any, data: bytes) -> None:
    assert v.to_bytes(t, value) == data
    decoded = v.from_bytes(t, data)
    assert decoded == value
    assert type(decoded) is type(value)


def test_decimal_keeps_scale_exactly() -> None:
    decoded = v.from_bytes(DecimalType(38, 10), (10**37 + 7).to_bytes(16, "big", signed=True))
    assert str(decoded) == "1000000000000000000000000000.0000000007"  # no 28-digit rounding
    assert v.from_bytes(DecimalType(4, 2), b"\x05\x8c").as_tuple().exponent == -2


def test_negative_zero_and_nan_bytes() -> None:
    assert v.to_bytes(FloatType(), -0.0) == b"\x00\x00\x00\x80"
    assert v.to_bytes(DoubleType(), -0.0) == b"\x00" * 7 + b"\x80"
    neg_zero = v.from_bytes(DoubleType(), b"\x00" * 7 + b"\x80")
    assert neg_zero == 0.0 and math.copysign(1.0, neg_zero) == -1.0
    assert v.to_bytes(FloatType(), math.nan) == b"\x00\x00\xc0\x7f"  # 0x7fc00000
    assert v.to_bytes(DoubleType(), math.nan) == b"\x00" * 6 + b"\xf8\x7f"
    # any NaN bit pattern decodes as NaN, including a negative quiet NaN
    assert math.isnan(v.from_bytes(FloatType(), b"\x01\x00\xc0\xff"))
    assert math.isnan(v.from_bytes(DoubleType(), b"\x01" + b"\x00" * 5 + b"\xf0\x7f"))


def test_promoted_bounds_are_read() -> None:
    # a long column promoted from int keeps 4-byte bounds; double from float likewise
    assert v.from_bytes(LongType(), b"\xfe\xff\xff\xff") == -2
    assert v.from_bytes(DoubleType(), b"\x00\x00\x80\x3f") == 1.0


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (BooleanType(), b""),
        (IntegerType(), b"\x01\x02\x03"),
        (IntegerType(), b"\x01\x02\x03\x04\x05"),
        (LongType(), b"\x01\x02\x03\x04\x05"),
        (FloatType(), b"\x00\x00\x80"),
        (DoubleType(), b"\x00" * 7),
        (DateType(), b"\x00\x00"),
        (TimeType(), b"\x00" * 4),
        (TimestampType(), b"\x00" * 7),
        (TimestamptzType(), b""),
        (TimestampNanoType(), b"\x00" * 9),
        (TimestamptzNanoType(), b"\x00"),
        (UUIDType(), bytes(15)),
        (DecimalType(9, 2), b""),
        (StringType(), b"\xff\xfe"),
    ],
)
def test_short_or_bad_bytes_raise_invalid_metadata(t: IcebergType, data: bytes) -> None:
    with pytest.raises(InvalidMetadata, match=str(t).split("(")[0]):
        v.from_bytes(t, data)


@pytest.mark.parametrize("t", [UnknownType(), VariantType(), StructType(), ListType(1, LongType())])
def test_types_without_binary_form(t: IcebergType) -> None:
    with pytest.raises(Unsupported):
        v.from_bytes(t, b"\x00")
    with pytest.raises(Unsupported):
        v.to_bytes(t, 1)


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (IntegerType(), 2**31),
        (LongType(), 2**63),
        (FloatType(), 1e40),
        (FixedType(4), b"\x00"),
        (DecimalType(4, 2), Decimal("123.45")),  # too many digits
        (DecimalType(4, 2), Decimal("1.234")),  # more scale than the type
        (IntegerType(), None),
    ],
)
def test_values_that_do_not_fit(t: IcebergType, value: Any) -> None:
    with pytest.raises(ValidationError):
        v.to_bytes(t, value)


def test_decimal_with_smaller_scale_is_rescaled() -> None:
    assert v.to_bytes(DecimalType(4, 2), Decimal("14.2")) == b"\x05\x8c"


def test_geospatial_bounds() -> None:
    point = struct.pack("<2d", 30.0, 10.0)
    assert v.from_bytes(GeometryType(), point) == point
    assert v.geo_bound_from_bytes(point) == (30.0, 10.0)
    with pytest.raises(InvalidMetadata):
        v.geo_bound_from_bytes(point[:12])


# ---- PyIceberg as a second implementation -------------------------------------------

PEER_CASES: list[tuple[IcebergType, list[Any]]] = [
    (BooleanType(), [True, False]),
    (IntegerType(), [0, -1, 1, 34, 2**31 - 1, -(2**31)]),
    (LongType(), [0, -1, 2**63 - 1, -(2**63), 1 << 40]),
    (FloatType(), [0.0, -0.0, 1.5, -3.25, math.inf, -math.inf]),
    (DoubleType(), [0.0, -0.0, 1e300, -1e-300, math.pi, math.inf]),
    (TimeType(), [0, 1, MICROS_22_31_08, 86_400_000_000 - 1]),
    (TimestampType(), [0, -1, -62_135_596_800_000_000, MICROS_2017_11_16_22_31_08]),
    (TimestamptzType(), [0, -1, -86_400_000_001]),
    (TimestampNanoType(), [0, -1, 1_510_871_468_123_456_789]),
    (TimestamptzNanoType(), [0, -1]),
    (StringType(), ["", "iceberg", "é", "😀", "a\u0000b", "\U0010ffff"]),
    (UUIDType(), [SPEC_UUID, uuid.UUID(int=0)]),
    (FixedType(3), [b"\x00\x00\x00", b"\xff\x00\x01"]),
    (BinaryType(), [b"", b"\x00", bytes(range(256))]),
    (DecimalType(9, 2), [Decimal("0.00"), Decimal("-0.01"), Decimal("14.20"), Decimal("-1.28")]),
    (DecimalType(38, 0), [Decimal(10**38 - 1), Decimal(-(10**38) + 1)]),
    (DecimalType(10, 5), [Decimal("-12345.67891")]),
]


@pytest.mark.parametrize(("t", "samples"), PEER_CASES)
def test_bytes_agree_with_pyiceberg(t: IcebergType, samples: list[Any]) -> None:
    peer = peer_type(t)
    for value in samples:
        ours = v.to_bytes(t, value)
        assert ours == pc.to_bytes(peer, value), value
        back = v.from_bytes(t, ours)
        theirs = pc.from_bytes(peer, ours)
        if isinstance(t, UUIDType):
            theirs = uuid.UUID(bytes=theirs)
        if isinstance(value, float) and value == 0.0:
            assert math.copysign(1, back) == math.copysign(1, theirs)
        assert back == theirs, value


def test_date_bytes_agree_with_pyiceberg() -> None:
    peer = peer_type(DateType())
    for days in (0, -1, 1, DAYS_2017_11_16, -719_162):  # -719162 is 0001-01-01
        ours = v.to_bytes(DateType(), days)  # ints are accepted as days
        assert ours == pc.to_bytes(peer, days)
        assert v.date_to_days(v.from_bytes(DateType(), ours)) == pc.from_bytes(peer, ours)


# ---- JSON single values ---------------------------------------------------------------

JSON_VECTORS: list[tuple[IcebergType, Any, Any]] = [
    (BooleanType(), True, True),
    (IntegerType(), 34, 34),
    (IntegerType(), 0, 0),
    (LongType(), 34, 34),
    (FloatType(), 1.0, 1.0),
    (DoubleType(), -0.0, -0.0),
    (DecimalType(4, 2), Decimal("14.20"), "14.20"),
    (DecimalType(9, 7), Decimal("0.0000001"), "0.0000001"),  # not "1E-7"
    (DecimalType(21, -20), Decimal("2E+20"), "2E+20"),
    (DateType(), dt.date(2017, 11, 16), "2017-11-16"),
    (TimeType(), MICROS_22_31_08 + 123456, "22:31:08.123456"),
    (TimestampType(), MICROS_2017_11_16_22_31_08 + 123456, "2017-11-16T22:31:08.123456"),
    (
        TimestamptzType(),
        MICROS_2017_11_16_22_31_08 + 123456,
        "2017-11-16T22:31:08.123456+00:00",
    ),
    (
        TimestampNanoType(),
        MICROS_2017_11_16_22_31_08 * 1000 + 123456789,
        "2017-11-16T22:31:08.123456789",
    ),
    (
        TimestamptzNanoType(),
        MICROS_2017_11_16_22_31_08 * 1000 + 123456789,
        "2017-11-16T22:31:08.123456789+00:00",
    ),
    (TimestampType(), -1, "1969-12-31T23:59:59.999999"),
    (StringType(), "iceberg", "iceberg"),
    (StringType(), "", ""),
    (UUIDType(), SPEC_UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\xff", "000102ff"),
    (BinaryType(), b"\x00\x01\x02\xff", "000102ff"),
    (BinaryType(), b"", ""),
    (
        StructType((NestedField(1, "a", IntegerType()), NestedField(2, "b", StringType()))),
        {1: 1, 2: "bar"},
        {"1": 1, "2": "bar"},
    ),
    (ListType(3, IntegerType()), [1, 2, 3], [1, 2, 3]),
    (
        MapType(4, StringType(), 5, IntegerType()),
        {"a": 1, "b": 2},
        {"keys": ["a", "b"], "values": [1, 2]},
    ),
]


@pytest.mark.parametrize(("t", "value", "encoded"), JSON_VECTORS)
def test_json_vectors_both_ways(t: IcebergType, value: Any, encoded: Any) -> None:
    assert v.to_json(t, value) == encoded
    assert v.from_json(t, encoded) == value


def test_json_accepts_other_iso_forms() -> None:
    assert v.from_json(TimestamptzType(), "2017-11-16T14:31:08-08:00") == MICROS_2017_11_16_22_31_08
    assert v.from_json(TimestamptzType(), "2017-11-16T22:31:08Z") == MICROS_2017_11_16_22_31_08
    assert v.from_json(TimeType(), "22:31:08") == MICROS_22_31_08
    assert v.from_json(DecimalType(4, 2), "14.2") == Decimal("14.20")
    assert v.from_json(FixedType(2), "00FF") == b"\x00\xff"


@pytest.mark.parametrize(
    ("t", "obj"),
    [
        (TimestampType(), "2017-11-16T22:31:08+00:00"),  # must not carry a zone
        (TimestamptzType(), "2017-11-16T22:31:08"),  # must carry one
        (IntegerType(), True),
        (IntegerType(), 2**31),
        (BooleanType(), 1),
        (DecimalType(4, 2), 14.2),
        (DecimalType(4, 2), "1.234"),
        (DateType(), "2017-13-01"),
        (TimeType(), "25:00:00"),
        (FixedType(2), "00"),
        (UUIDType(), "not-a-uuid"),
        (StringType(), 5),
        (UnknownType(), "x"),
    ],
)
def test_bad_json_values(t: IcebergType, obj: Any) -> None:
    with pytest.raises(InvalidMetadata):
        v.from_json(t, obj)


def test_json_null_and_special_floats() -> None:
    assert v.from_json(UnknownType(), None) is None
    assert v.to_json(IntegerType(), None) is None
    assert v.to_json(DoubleType(), math.nan) == "NaN"
    assert math.isnan(v.from_json(DoubleType(), "NaN"))
    assert v.from_json(FloatType(), "-Infinity") == -math.inf


@pytest.mark.parametrize(
    ("t", "samples"),
    [
        (DateType(), [dt.date(2017, 11, 16), dt.date(1, 1, 1), dt.date(1969, 12, 31)]),
        (TimeType(), [0, 1, MICROS_22_31_08 + 123456]),
        (TimestampType(), [0, -1, MICROS_2017_11_16_22_31_08 + 1]),
        (TimestamptzType(), [0, -1, MICROS_2017_11_16_22_31_08 + 1]),
        (DecimalType(9, 2), [Decimal("14.20"), Decimal("-0.05"), Decimal("0.00")]),
        (UUIDType(), [SPEC_UUID]),
        (BinaryType(), [b"", b"\x00\xff"]),
        (FixedType(2), [b"\x00\xff"]),
        (LongType(), [0, -1]),
        (StringType(), ["", "😀"]),
    ],
)
def test_json_agrees_with_pyiceberg(t: IcebergType, samples: list[Any]) -> None:
    peer = peer_type(t)
    for value in samples:
        theirs_in = v.date_to_days(value) if isinstance(t, DateType) else value
        encoded = v.to_json(t, value)
        assert v.from_json(t, pc.to_json(peer, theirs_in)) == value
        theirs = pc.from_json(peer, encoded)
        if isinstance(t, TimestamptzType | TimestampType):
            theirs = v.datetime_to_micros(theirs)
        elif isinstance(t, TimeType):
            theirs = v.time_to_micros(theirs)
        assert theirs == value


# ---- helpers ------------------------------------------------------------------------


def test_time_helpers() -> None:
    assert v.micros_to_datetime(-1) == dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    aware = v.micros_to_datetime(0, with_zone=True)
    assert aware == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert v.datetime_to_micros(aware) == 0
    assert v.datetime_to_micros(dt.datetime(2017, 11, 16, 22, 31, 8)) == MICROS_2017_11_16_22_31_08
    assert v.micros_to_time(MICROS_22_31_08) == dt.time(22, 31, 8)
    assert v.nanos_to_iso(-1) == "1969-12-31T23:59:59.999999999"
    assert v.iso_to_nanos("1969-12-31T23:59:59.999999999") == -1
    assert v.iso_to_micros("1969-12-31T23:59:59.9999999") == -1  # floors extra digits
    assert v.days_to_date(DAYS_2017_11_16) == dt.date(2017, 11, 16)
    with pytest.raises(Unsupported):
        v.days_to_date(10**7)


def test_human_strings() -> None:
    assert v.to_human_string(TimestampType(), 0) == "1970-01-01T00:00"
    assert v.to_human_string(TimestampType(), MICROS_2017_11_16_22_31_08) == "2017-11-16T22:31:08"
    assert v.to_human_string(TimestamptzType(), -1) == "1969-12-31T23:59:59.999999Z"
    assert v.to_human_string(TimestampNanoType(), 1500) == "1970-01-01T00:00:00.000001500"
    assert v.to_human_string(TimeType(), MICROS_22_31_08 + 1000) == "22:31:08.001"
    assert v.to_human_string(DateType(), dt.date(2024, 8, 9)) == "2024-08-09"
    assert v.to_human_string(BinaryType(), b"\x00\x01") == "AAE="
    assert v.to_human_string(BooleanType(), False) == "false"
    assert v.to_human_string(IntegerType(), 0) == "0"
    assert v.to_human_string(StringType(), "") == ""
    assert v.to_human_string(StringType(), None) == "null"
    assert v.to_human_string(DoubleType(), math.nan) == "NaN"
    assert v.to_human_string(DecimalType(4, 2), Decimal("14.20")) == "14.20"


@pytest.mark.parametrize(
    ("text", "negative", "expected"),
    [
        ("12", True, 12),
        (" -12 ", True, -12),
        ("-12", False, None),
        ("9" * 40, True, int("9" * 40)),
        ("²", True, None),  # str.isdigit says yes, int() refuses it
        ("٣", True, None),  # another script's digit: no id is written so
        ("", True, None),
        ("-", True, None),
        ("1_000", True, None),
        ("+1", True, None),
    ],
)
def test_a_whole_number_is_ascii_digits_only(
    text: str, negative: bool, expected: int | None
) -> None:
    assert v.whole_number(text, negative=negative) == expected
