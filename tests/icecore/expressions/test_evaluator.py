"""The partition-row evaluator follows Java's Evaluator (null-first comparators, Double order)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

from icecore.expressions.evaluator import java_compare, row_evaluator
from icecore.expressions.model import (
    And,
    BoundPredicate,
    BoundReference,
    Not,
    Operation,
    Or,
)
from icecore.types import DateType, DoubleType, NestedField, StringType

DAY = BoundReference(NestedField(1000, "ts_day", DateType(), required=False), "ts_day")
CITY = BoundReference(NestedField(1001, "city", StringType(), required=False), "city")
FARE = BoundReference(NestedField(1002, "fare", DoubleType(), required=False), "fare")
AUG9 = dt.date(2024, 8, 9)


def matches(pred: Any, row: dict[int, Any]) -> bool:
    return row_evaluator(pred)(row)


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    # Java: Comparators.nullsFirst(): null sorts below every literal.
    [
        (Operation.LT, AUG9, True),
        (Operation.LT_EQ, AUG9, True),
        (Operation.GT, AUG9, False),
        (Operation.GT_EQ, AUG9, False),
        (Operation.EQ, AUG9, False),
        (Operation.NOT_EQ, AUG9, True),
    ],
)
def test_null_partition_values_sort_first(op: Operation, value: Any, expected: bool) -> None:
    assert matches(BoundPredicate(op, DAY, (value,)), {1000: None}) is expected


def test_set_and_prefix_predicates_on_null() -> None:
    assert not matches(BoundPredicate(Operation.IN, CITY, ("Milan", "Paris")), {1001: None})
    assert matches(BoundPredicate(Operation.NOT_IN, CITY, ("Milan",)), {1001: None})
    assert not matches(BoundPredicate(Operation.STARTS_WITH, CITY, ("Mi",)), {1001: None})
    assert matches(BoundPredicate(Operation.NOT_STARTS_WITH, CITY, ("Mi",)), {1001: None})
    assert matches(BoundPredicate(Operation.IS_NULL, CITY), {})
    assert matches(BoundPredicate(Operation.STARTS_WITH, CITY, ("Mü",)), {1001: "München"})


def test_double_order_is_javas() -> None:
    # Double.compare: -0.0 < 0.0, NaN equals NaN and is above +infinity.
    assert java_compare(-0.0, 0.0) == -1
    assert java_compare(math.nan, math.nan) == 0
    assert java_compare(math.nan, math.inf) == 1
    assert java_compare(-math.inf, -1e308) == -1
    assert matches(BoundPredicate(Operation.EQ, FARE, (0.0,)), {1002: -0.0}) is False
    assert matches(BoundPredicate(Operation.GT, FARE, (1e300,)), {1002: math.nan}) is True
    assert matches(BoundPredicate(Operation.IS_NAN, FARE), {1002: math.nan})
    assert matches(BoundPredicate(Operation.NOT_NAN, FARE), {1002: None})


def test_boolean_structure() -> None:
    in_aug9 = BoundPredicate(Operation.EQ, DAY, (AUG9,))
    milan = BoundPredicate(Operation.EQ, CITY, ("Milan",))
    row = {1000: AUG9, 1001: "Paris"}
    assert matches(Or(in_aug9, milan), row)
    assert not matches(And(in_aug9, milan), row)
    assert matches(Not(milan), row)
