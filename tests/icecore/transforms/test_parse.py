from __future__ import annotations

import pytest

from icecore.errors import InvalidMetadata, Unsupported
from icecore.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
    parse_transform_lenient,
    transform_to_string,
)
from icecore.types import IntegerType, StringType


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("identity", IdentityTransform()),
        ("bucket[16]", BucketTransform(16)),
        ("truncate[20]", TruncateTransform(20)),
        ("year", YearTransform()),
        ("month", MonthTransform()),
        ("day", DayTransform()),
        ("hour", HourTransform()),
        ("void", VoidTransform()),
    ],
)
def test_round_trip(text: str, expected: object) -> None:
    parsed = parse_transform(text)
    assert parsed == expected
    assert transform_to_string(parsed) == text
    assert hash(parsed) == hash(expected)


def test_names_are_case_insensitive() -> None:
    assert parse_transform("Bucket[4]") == BucketTransform(4)
    assert str(parse_transform("DAY")) == "day"


@pytest.mark.parametrize("text", ["zorder", "bucket[]", "bucket[-1]", "truncate", "days", ""])
def test_unknown_strings_are_unsupported(text: str) -> None:
    with pytest.raises(Unsupported):
        parse_transform(text)


def test_zero_parameters_are_invalid() -> None:
    with pytest.raises(InvalidMetadata):
        parse_transform("bucket[0]")


def test_lenient_parse_keeps_unknown_transforms() -> None:
    unknown = parse_transform_lenient("zorder")
    assert unknown == UnknownTransform("zorder")
    assert str(unknown) == "zorder"
    assert not unknown.can_transform(IntegerType())
    assert unknown.result_type(IntegerType()) == StringType()
    with pytest.raises(Unsupported):
        unknown.apply(IntegerType(), 1)
    with pytest.raises(InvalidMetadata):
        parse_transform_lenient(5)


def test_dedup_names() -> None:
    assert BucketTransform(16).dedup_name == "bucket[16]"
    assert YearTransform().dedup_name == HourTransform().dedup_name
    assert IdentityTransform().dedup_name == "identity"
