"""Vectorized transform helpers over pyarrow.compute: the transforms' only pyarrow importer.

Imported lazily by the transform modules so that parsing metadata never loads pyarrow.
Integer division here floors (toward negative infinity), as the spec's temporal and
truncate transforms require for values before 1970 and negative numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from icecore.compute import pc
from icecore.errors import ValidationError
from icecore.types import (
    DateType,
    IcebergType,
    TimestampNanoType,
    TimestamptzNanoType,
)

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def nulls_like(values: pa.Array) -> pa.Array:
    """An all-null array with the type and length of ``values``."""
    return pa.nulls(len(values), values.type)


def floor_div(values: pa.Array, divisor: int) -> pa.Array:
    """``values // divisor`` for an int64 array, flooring like Python (divisor > 0)."""
    values = values.cast(pa.int64())
    adjust = pc.if_else(
        pc.less(values, 0), pa.scalar(divisor - 1, pa.int64()), pa.scalar(0, pa.int64())
    )
    return pc.divide(pc.subtract(values, adjust), pa.scalar(divisor, pa.int64()))


def epoch_units(values: pa.Array, source: IcebergType | None) -> tuple[pa.Array, int]:
    """A date/timestamp array as (int64 counts from the epoch, counts per second).

    Dates come back as days with ``0`` per second, a marker that they are days already.

    Raises:
        ValidationError: the Arrow type is not temporal and ``source`` does not say what
            its integers count.
    """
    t = values.type
    if pa.types.is_date32(t):
        return values.cast(pa.int32()).cast(pa.int64()), 0
    if pa.types.is_date64(t):
        return floor_div(values.cast(pa.int64()), 86_400_000), 0
    if pa.types.is_timestamp(t):
        return values.cast(pa.int64()), _PER_SECOND[t.unit]
    if pa.types.is_integer(t) and source is not None:
        if isinstance(source, DateType):
            return values.cast(pa.int64()), 0
        nanos = isinstance(source, TimestampNanoType | TimestamptzNanoType)
        return values.cast(pa.int64()), 1_000_000_000 if nanos else 1_000_000
    raise ValidationError(f"Arrow type {t} is not a date or timestamp (source {source}).")


def to_days(values: pa.Array, source: IcebergType | None) -> pa.Array:
    """Days from 1970-01-01 (int64, floored) of a date or timestamp array."""
    counts, per_second = epoch_units(values, source)
    return counts if per_second == 0 else floor_div(counts, per_second * 86_400)


def to_hours(values: pa.Array, source: IcebergType | None) -> pa.Array:
    """Hours from 1970-01-01 00:00 (int32, floored) of a timestamp array."""
    counts, per_second = epoch_units(values, source)
    if per_second == 0:
        raise ValidationError("The hour transform needs timestamps, got dates.")
    return floor_div(counts, per_second * 3_600).cast(pa.int32())


def days_to_date32(days: pa.Array) -> pa.Array:
    """An int64 day-count array as Arrow ``date32``."""
    return days.cast(pa.int32()).cast(pa.date32())


def years_from_1970(days: pa.Array) -> pa.Array:
    """Years from 1970 (int32) of a day-count array."""
    return pc.subtract(pc.year(days_to_date32(days)), 1970).cast(pa.int32())


def months_from_1970(days: pa.Array) -> pa.Array:
    """Months from 1970-01 (int32) of a day-count array."""
    dates = days_to_date32(days)
    years = pc.subtract(pc.year(dates), 1970)
    return pc.add(pc.multiply(years, 12), pc.subtract(pc.month(dates), 1)).cast(pa.int32())


def truncate_array(values: pa.Array, width: int, fallback: Callable[[Any], Any]) -> pa.Array:
    """Truncate integers (floored to a multiple), strings (code points) and binary (bytes).

    Decimals and other types go through ``fallback`` one value at a time.
    """
    t = values.type
    if pa.types.is_integer(t):
        return pc.multiply(floor_div(values, width), pa.scalar(width, pa.int64())).cast(t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pc.utf8_slice_codeunits(values, 0, width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pc.binary_slice(values, 0, width)
    return pa.array([None if v is None else fallback(v) for v in values.to_pylist()], type=t)


def _to_micros(counts: pa.Array, per_second: int) -> pa.Array:
    if per_second > 1_000_000:
        return floor_div(counts, per_second // 1_000_000)
    if per_second < 1_000_000:
        return pc.multiply(counts, pa.scalar(1_000_000 // per_second, pa.int64()))
    return counts


def physical_pylist(values: pa.Array, source: IcebergType | None) -> list[Any]:
    """Python values in the Iceberg physical form used for hashing.

    Timestamps become int micros (nanos floored to micros, as Appendix B hashes them),
    times int micros, dates int days, extension types (uuid) their storage bytes.
    """
    t = values.type
    if isinstance(t, pa.ExtensionType):
        values = values.storage
        t = values.type
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        raw = values.cast(pa.int32() if pa.types.is_time32(t) else pa.int64())
        return _to_micros(raw.cast(pa.int64()), _PER_SECOND[t.unit]).to_pylist()
    if pa.types.is_date(t):
        return to_days(values, None).to_pylist()
    if pa.types.is_integer(t) and isinstance(source, TimestampNanoType | TimestamptzNanoType):
        return floor_div(values, 1_000).to_pylist()
    return values.to_pylist()


def int32_array(values: list[int | None]) -> pa.Array:
    """A Python list of ints and None as an Arrow ``int32`` array."""
    return pa.array(values, type=pa.int32())
