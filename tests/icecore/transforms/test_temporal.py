from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg import transforms as ptr

from icecore.errors import ValidationError
from icecore.transforms.temporal import (
    DayTransform,
    HourTransform,
    MonthTransform,
    YearTransform,
    civil_from_days,
)
from icecore.types import (
    DateType,
    IcebergType,
    IntegerType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)
from icecore.values import date_to_days

from ..peer import peer_type

HOUR = 3_600_000_000
DAY = 24 * HOUR
# 2024-08-09 10:15:30: 54 years from 1970 with 13 leap days (1972..2020), then
# 31+29+31+30+31+30+31 = 213 days of 2024 (a leap year) before August, and 8 more.
DAYS_2024_08_09 = 54 * 365 + 13 + 213 + 8
TS_2024 = DAYS_2024_08_09 * DAY + 10 * HOUR + 15 * 60_000_000 + 30_000_000


def test_hand_computed_values() -> None:
    assert YearTransform().apply(TimestampType(), TS_2024) == 54
    assert MonthTransform().apply(TimestampType(), TS_2024) == 54 * 12 + 7
    assert DayTransform().apply(TimestampType(), TS_2024) == dt.date(2024, 8, 9)
    assert HourTransform().apply(TimestampType(), TS_2024) == DAYS_2024_08_09 * 24 + 10


@pytest.mark.parametrize("t", [TimestampType(), TimestamptzType()])
def test_before_1970_floors(t: IcebergType) -> None:
    # one microsecond before the epoch is in hour -1, day -1, month -1, year -1
    assert HourTransform().apply(t, -1) == -1
    assert DayTransform().apply(t, -1) == dt.date(1969, 12, 31)
    assert DayTransform().days(t, -1) == -1
    assert MonthTransform().apply(t, -1) == -1
    assert YearTransform().apply(t, -1) == -1
    assert HourTransform().apply(t, -HOUR) == -1
    assert HourTransform().apply(t, -HOUR - 1) == -2
    assert DayTransform().days(t, -DAY) == -1
    assert DayTransform().days(t, -DAY - 1) == -2


def test_nanos_and_dates() -> None:
    assert DayTransform().days(TimestampNanoType(), -1) == -1
    assert HourTransform().apply(TimestamptzNanoType(), TS_2024 * 1000 + 999) == (
        DAYS_2024_08_09 * 24 + 10
    )
    assert YearTransform().apply(DateType(), dt.date(1969, 12, 31)) == -1
    assert MonthTransform().apply(DateType(), dt.date(1969, 1, 1)) == -12
    assert DayTransform().apply(DateType(), dt.date(2024, 8, 9)) == dt.date(2024, 8, 9)
    assert YearTransform().apply(DateType(), -1) == -1  # int days accepted


def test_source_and_result_types() -> None:
    assert not HourTransform().can_transform(DateType())
    assert not DayTransform().can_transform(TimeType())
    with pytest.raises(ValidationError):
        HourTransform().apply(DateType(), dt.date(2024, 1, 1))
    assert DayTransform().result_type(TimestampType()) == DateType()
    assert YearTransform().result_type(DateType()) == IntegerType()
    assert HourTransform().result_type(TimestampType()) == IntegerType()


def test_human_strings() -> None:
    t = TimestampType()
    assert YearTransform().to_human_string(t, 54) == "2024"
    assert MonthTransform().to_human_string(t, 54 * 12 + 7) == "2024-08"
    assert DayTransform().to_human_string(t, dt.date(2024, 8, 9)) == "2024-08-09"
    assert DayTransform().to_human_string(t, DAYS_2024_08_09) == "2024-08-09"
    assert HourTransform().to_human_string(t, DAYS_2024_08_09 * 24 + 10) == "2024-08-09-10"
    assert HourTransform().to_human_string(t, -1) == "1969-12-31-23"
    assert MonthTransform().to_human_string(t, -1) == "1969-12"
    assert YearTransform().to_human_string(t, -1) == "1969"
    assert YearTransform().to_human_string(t, 0) == "1970"
    for tr in (YearTransform(), MonthTransform(), DayTransform(), HourTransform()):
        assert tr.to_human_string(t, None) == "null"


def test_order_properties() -> None:
    assert DayTransform().preserves_order and DayTransform().is_order_preserving
    assert HourTransform().satisfies_order_of(DayTransform())
    assert not YearTransform().satisfies_order_of(MonthTransform())
    assert DayTransform().dedup_name == HourTransform().dedup_name == "time"


def test_civil_from_days_against_python() -> None:
    epoch = dt.date(1970, 1, 1).toordinal()
    for days in [*range(-719_162, 2_932_897, 997), 2_932_896]:
        d = dt.date.fromordinal(epoch + days)
        assert civil_from_days(days) == (d.year, d.month, d.day)


TIMESTAMPS = [
    0,
    -1,
    1,
    TS_2024,
    -DAY,
    -DAY - 1,
    -HOUR,
    -62_135_596_800_000_000,
    253_402_300_799_999_999,
]


@pytest.mark.parametrize("t", [TimestampType(), TimestamptzType()])
def test_agrees_with_pyiceberg(t: IcebergType) -> None:
    peer = peer_type(t)
    pairs: list[tuple[Any, Any]] = [
        (YearTransform(), ptr.YearTransform()),
        (MonthTransform(), ptr.MonthTransform()),
        (DayTransform(), ptr.DayTransform()),
        (HourTransform(), ptr.HourTransform()),
    ]
    for ours, theirs in pairs:
        fn = theirs.transform(peer)
        for value in [*TIMESTAMPS, None]:
            result = ours.apply(t, value)
            if isinstance(result, dt.date):
                result = date_to_days(result)
            assert result == fn(value), (ours, value)
            expected_text = theirs.to_human_string(peer, fn(value))
            assert ours.to_human_string(t, ours.apply(t, value)) == expected_text


def test_nanos_agree_with_pyiceberg() -> None:
    peer = peer_type(TimestampNanoType())
    for ours, theirs in [
        (DayTransform(), ptr.DayTransform()),
        (HourTransform(), ptr.HourTransform()),
    ]:
        fn = theirs.transform(peer)
        for micros in TIMESTAMPS[:7]:
            nanos = micros * 1000 + 7
            result = ours.apply(TimestampNanoType(), nanos)
            if isinstance(result, dt.date):
                result = date_to_days(result)
            assert result == fn(nanos)


def test_dates_agree_with_pyiceberg() -> None:
    peer = peer_type(DateType())
    for ours, theirs in [
        (YearTransform(), ptr.YearTransform()),
        (MonthTransform(), ptr.MonthTransform()),
        (DayTransform(), ptr.DayTransform()),
    ]:
        fn = theirs.transform(peer)
        for days in (0, -1, 1, DAYS_2024_08_09, -719_162, 2_932_896):
            result = ours.apply(DateType(), days)
            if isinstance(result, dt.date):
                result = date_to_days(result)
            assert result == fn(days)


@pytest.mark.parametrize(
    ("t", "values", "arrow_type"),
    [
        (TimestampType(), TIMESTAMPS, pa.timestamp("us")),
        (TimestamptzType(), TIMESTAMPS, pa.timestamp("us", tz="UTC")),
        (TimestamptzType(), TIMESTAMPS, pa.timestamp("us", tz="America/New_York")),
        (TimestampNanoType(), [0, -1, 1, TS_2024 * 1000 - 1, -DAY * 1000 - 1], pa.timestamp("ns")),
        (DateType(), [0, -1, 1, DAYS_2024_08_09, -719_162], pa.date32()),
    ],
)
def test_apply_arrow_matches_apply(t: IcebergType, values: list[int], arrow_type: Any) -> None:
    storage = pa.int32() if pa.types.is_date32(arrow_type) else pa.int64()
    array = pa.array([*values, None], storage).cast(arrow_type)
    transforms: list[Any] = [YearTransform(), MonthTransform(), DayTransform()]
    if not isinstance(t, DateType):
        transforms.append(HourTransform())
    for tr in transforms:
        result = tr.apply_arrow(array)
        expected_type = pa.date32() if isinstance(tr, DayTransform) else pa.int32()
        assert result.type == expected_type
        assert result.to_pylist() == [tr.apply(t, v) for v in [*values, None]], tr


def test_apply_arrow_of_plain_integers_needs_the_source_type() -> None:
    ints = pa.array([-1, 0], pa.int64())
    assert HourTransform().apply_arrow(ints, TimestampType()).to_pylist() == [-1, 0]
    with pytest.raises(ValidationError):
        HourTransform().apply_arrow(ints)
