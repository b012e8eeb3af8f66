"""Spark as the oracle: rows of both engines compared as multisets of canonical tuples."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from decimal import Decimal
from typing import Any

import pyarrow as pa


def canon(value: Any) -> Any:
    """A hashable, engine-neutral form of a value."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        # naive (PySpark, local time) and aware (Arrow) both give epoch micros this way
        return int(value.timestamp()) * 1_000_000 + value.microsecond
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, dict):
        return tuple(canon(v) for v in value.values())
    if isinstance(value, list | tuple):  # pyspark Row is a tuple
        return tuple(canon(v) for v in value)
    if isinstance(value, Decimal | int | str | bytes | bool | dt.date):
        return value
    raise AssertionError(f"unexpected value {value!r}")


def arrow_rows(table: pa.Table) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(canon(v) for v in row.values()) for row in table.to_pylist())


def spark_rows(spark: Any, sql: str) -> tuple[list[str], Counter[tuple[Any, ...]]]:
    df = spark.sql(sql)
    return df.columns, Counter(tuple(canon(v) for v in row) for row in df.collect())
