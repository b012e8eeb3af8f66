"""The ``year``, ``month``, ``day`` and ``hour`` transforms (spec "Partition Transforms").

Each counts whole units from 1970-01-01 00:00, flooring, so instants before 1970 fall in
the unit that contains them (the day of -1 microsecond is -1, 1969-12-31). ``year``,
``month`` and ``hour`` produce ``int``; ``day`` produces ``date`` (the latest spec; readers
must also accept ``int`` day values, which :meth:`DayTransform.to_human_string` does).

Calendar arithmetic uses the proleptic Gregorian civil-from-days algorithm so that values
outside Python's years 1-9999 still transform.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from icecore.errors import ValidationError
from icecore.transforms.base import Transform
from icecore.types import (
    DateType,
    IcebergType,
    IntegerType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)
from icecore.values import MICROS_PER_DAY, MICROS_PER_HOUR, date_to_days, days_to_date

if TYPE_CHECKING:
    import pyarrow as pa

_MICROS = (TimestampType, TimestamptzType)
_NANOS = (TimestampNanoType, TimestamptzNanoType)
_TIMESTAMPS = _MICROS + _NANOS
_GRANULARITY = {"hour": 0, "day": 1, "month": 2, "year": 3}


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian date ``days`` after 1970-01-01."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def _day_text(days: int) -> str:
    y, m, d = civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}"


def _days_function(source: IcebergType) -> Callable[[Any], int]:
    if isinstance(source, DateType):
        return date_to_days
    if isinstance(source, _MICROS):
        return lambda v: int(v) // MICROS_PER_DAY
    if isinstance(source, _NANOS):
        return lambda v: int(v) // (MICROS_PER_DAY * 1_000)
    raise ValidationError(f"Type {source} is not a date or timestamp.")


class TimeTransform(Transform):
    """Shared behaviour of the four time-part transforms."""

    __slots__ = ()
    name: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.name

    def can_transform(self, source: IcebergType) -> bool:
        """Dates and all four timestamp types."""
        return isinstance(source, (DateType, *_TIMESTAMPS))

    def result_type(self, source: IcebergType) -> IcebergType:
        """``int`` (``day`` overrides this with ``date``)."""
        return IntegerType()

    @property
    def preserves_order(self) -> bool:
        """Time parts keep order."""
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        """Ordered by a finer time part implies ordered by a coarser one (hour -> day)."""
        if isinstance(other, TimeTransform):
            return _GRANULARITY[self.name] <= _GRANULARITY[other.name]
        return False

    @property
    def dedup_name(self) -> str:
        """``time``: two time parts of one column are redundant."""
        return "time"


@dataclass(frozen=True, slots=True)
class YearTransform(TimeTransform):
    """``year``: years from 1970."""

    name: ClassVar[str] = "year"

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        days = _days_function(source)
        return lambda v: civil_from_days(days(v))[0] - 1970

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Years from 1970 as ``int32``."""
        from icecore.transforms import _arrow

        return _arrow.years_from_1970(_arrow.to_days(values, source))

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """``2024``."""
        return "null" if value is None else f"{1970 + value:04d}"


@dataclass(frozen=True, slots=True)
class MonthTransform(TimeTransform):
    """``month``: months from 1970-01."""

    name: ClassVar[str] = "month"

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        days = _days_function(source)

        def month(v: Any) -> int:
            y, m, _ = civil_from_days(days(v))
            return (y - 1970) * 12 + m - 1

        return month

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Months from 1970-01 as ``int32``."""
        from icecore.transforms import _arrow

        return _arrow.months_from_1970(_arrow.to_days(values, source))

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """``2024-08``."""
        if value is None:
            return "null"
        years, month = divmod(value, 12)
        return f"{1970 + years:04d}-{month + 1:02d}"


@dataclass(frozen=True, slots=True)
class DayTransform(TimeTransform):
    """``day``: the calendar date; its value is a ``datetime.date`` (result type ``date``)."""

    name: ClassVar[str] = "day"

    def result_type(self, source: IcebergType) -> IcebergType:
        """``date`` (the latest spec; older writers stored ``int`` days)."""
        return DateType()

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        days = _days_function(source)
        return lambda v: days_to_date(days(v))

    def days(self, source: IcebergType, value: Any) -> int | None:
        """The day as an ``int`` count from 1970-01-01 (the physical partition value)."""
        if value is None:
            return None
        if not self.can_transform(source):
            raise ValidationError(f"Transform {self} cannot be applied to type {source}.")
        return _days_function(source)(value)

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Days as Arrow ``date32``."""
        from icecore.transforms import _arrow

        return _arrow.days_to_date32(_arrow.to_days(values, source))

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """``2024-08-09``, from a ``date`` or an ``int`` day count."""
        if value is None:
            return "null"
        if isinstance(value, dt.date):
            return value.isoformat()
        return _day_text(int(value))


@dataclass(frozen=True, slots=True)
class HourTransform(TimeTransform):
    """``hour``: hours from 1970-01-01 00:00, timestamps only."""

    name: ClassVar[str] = "hour"

    def can_transform(self, source: IcebergType) -> bool:
        """The four timestamp types."""
        return isinstance(source, _TIMESTAMPS)

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        if isinstance(source, _NANOS):
            return lambda v: int(v) // (MICROS_PER_HOUR * 1_000)
        return lambda v: int(v) // MICROS_PER_HOUR

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Hours from the epoch as ``int32``."""
        from icecore.transforms import _arrow

        return _arrow.to_hours(values, source)

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """``2024-08-09-10``."""
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{_day_text(days)}-{hour:02d}"
