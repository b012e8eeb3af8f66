"""Values shown as the SQL literal a user would type, and read back as the same value.

A pruning reason once printed ``datetime.date(2024, 9, 20)`` and a bound filter raw
microseconds. :func:`icecore.values.sql_literal` spells every value of every Iceberg type;
each spelling is parsed back by Icecore's filter parser and bound to a column of that type
(the expected values are written by hand here), and Spark evaluates the same literals in a
WHERE against the same values.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from decimal import Decimal
from typing import Any

import pytest

from icecore.expressions.bind import bind
from icecore.expressions.model import BoundPredicate, Operation
from icecore.expressions.parser import parse_filter
from icecore.schema import Schema
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
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icecore.values import sql_literal


def _f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
# (type, value as the binder represents it, the literal written by hand)
CASES: list[tuple[IcebergType, Any, str]] = [
    (BooleanType(), True, "TRUE"),
    (IntegerType(), -42, "-42"),
    (LongType(), 9_007_199_254_740_993, "9007199254740993"),
    (FloatType(), _f32(0.1), "0.1F"),
    (FloatType(), _f32(-0.0), "-0.0F"),
    (FloatType(), float("nan"), "CAST('NaN' AS FLOAT)"),
    (DoubleType(), 0.1, "0.1"),
    (DoubleType(), -0.0, "-0.0D"),
    (DoubleType(), 1e300, "1e+300"),
    (DoubleType(), float("nan"), "CAST('NaN' AS DOUBLE)"),
    (DoubleType(), float("-inf"), "CAST('-Infinity' AS DOUBLE)"),
    (DecimalType(9, 2), Decimal("12.30"), "12.30"),
    (DecimalType(38, 10), Decimal("-0.0000000001"), "-0.0000000001"),
    (StringType(), "it's", "'it\\'s'"),
    (StringType(), "a\\b", "'a\\\\b'"),
    (StringType(), "Città ☃ 東京", "'Città ☃ 東京'"),
    (StringType(), "", "''"),
    (DateType(), dt.date(2024, 9, 20), "DATE '2024-09-20'"),
    (TimeType(), 36_000_500_000, "TIME '10:00:00.5'"),
    (TimestampType(), 1_726_826_400_000_000, "TIMESTAMP '2024-09-20 10:00:00'"),
    (TimestamptzType(), 1_726_826_400_123_456, "TIMESTAMP '2024-09-20 10:00:00.123456+00:00'"),
    (TimestampNanoType(), 1_726_826_400_000_000_001, "TIMESTAMP '2024-09-20 10:00:00.000000001'"),
    (
        TimestamptzNanoType(),
        1_726_826_400_000_001_000,
        "TIMESTAMP '2024-09-20 10:00:00.000001+00:00'",
    ),
    (UUIDType(), U, "'f79c3e09-677c-4bbd-a479-3f349cb785e7'"),
    (BinaryType(), b"\n\x0b", "X'0A0B'"),
    (FixedType(3), b"\x00\xff\x10", "X'00FF10'"),
]
IDS = [f"{t}-{text}" for t, _, text in CASES]


@pytest.mark.parametrize(("t", "value", "text"), CASES, ids=IDS)
def test_every_type_is_spelled_as_sql(t: IcebergType, value: Any, text: str) -> None:
    assert sql_literal(t, value) == text


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(("t", "value", "text"), CASES, ids=IDS)
def test_the_literal_reads_back_as_the_same_value(t: IcebergType, value: Any, text: str) -> None:
    schema = Schema((NestedField(1, "c", t),), schema_id=0)
    literal = sql_literal(t, value)
    bound = bind(schema, parse_filter(f"c = {literal}"))
    if isinstance(value, float) and math.isnan(value):
        assert isinstance(bound, BoundPredicate) and bound.op is Operation.IS_NAN
        return
    assert isinstance(bound, BoundPredicate) and bound.op is Operation.EQ, bound
    assert _same(bound.value, value), (literal, bound.value, value)


def test_a_float_value_that_is_no_float32_keeps_its_exact_double() -> None:
    # Two such values must never share a text: a bound filter's text is a cache key.
    assert sql_literal(FloatType(), 0.1) == "0.1D"
    assert sql_literal(FloatType(), 0.1 + 2**-55) == f"{0.1 + 2**-55!r}D"


def test_null_is_null() -> None:
    assert sql_literal(DateType(), None) == "NULL"


def _spark_cases() -> list[tuple[str, str, Any, str]]:
    """(Spark type, literal, the Python value Spark is given, id) for what Spark can hold.

    Spark 3.5 has no TIME, no nanosecond timestamps and no UUID (Iceberg's UUID reads as a
    string there); a ``timestamp`` is Spark's TIMESTAMP_NTZ, a ``timestamptz`` its TIMESTAMP.
    """
    utc = dt.UTC
    spark_types = {
        "boolean": "BOOLEAN",
        "int": "INT",
        "long": "BIGINT",
        "float": "FLOAT",
        "double": "DOUBLE",
        "string": "STRING",
        "uuid": "STRING",
        "date": "DATE",
        "binary": "BINARY",
    }
    out = []
    for t, value, text in CASES:
        name = str(t)
        python: Any = value
        if isinstance(t, DecimalType):
            spark_type = f"DECIMAL({t.precision},{t.scale})"
        elif isinstance(t, FixedType):
            spark_type = "BINARY"
        elif isinstance(t, TimestampType):
            spark_type = "TIMESTAMP_NTZ"
            python = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
        elif isinstance(t, TimestamptzType):
            spark_type = "TIMESTAMP"
            python = dt.datetime(1970, 1, 1, tzinfo=utc) + dt.timedelta(microseconds=value)
        elif name in spark_types:
            spark_type = spark_types[name]
            python = str(value) if isinstance(t, UUIDType) else value
        else:
            continue  # time, timestamp_ns: not Spark 3.5 types
        out.append((spark_type, text, python, f"{name}-{text}"))
    return out


SPARK_CASES = _spark_cases()


@pytest.mark.spark
def test_spark_reads_each_literal_as_the_value_in_a_where(spark: Any) -> None:
    """Each literal, in Spark SQL's WHERE, keeps exactly the row holding its value."""
    from pyspark.sql.types import Row

    failures = []
    for spark_type, literal, python, case in SPARK_CASES:
        frame = spark.createDataFrame(  # type: ignore[attr-defined]
            [Row(k=1, c=python), Row(k=2, c=None)], f"k INT, c {spark_type}"
        )
        frame.createOrReplaceTempView("literal_check")
        kept = spark.sql(f"SELECT k FROM literal_check WHERE c = {literal}").collect()  # type: ignore[attr-defined]
        if [r.k for r in kept] != [1]:
            failures.append((case, [r.k for r in kept]))
    assert not failures
