"""Evaluate a bound expression on one struct of values, as Iceberg Java's ``Evaluator`` does.

The planner uses it on partition tuples (the inclusive projection of the filter, evaluated
on each data file's partition values: spec "Scan Planning"). Semantics follow Java's
``Evaluator`` with its literal comparators, which order nulls first: ``null < x`` is true,
``null = x`` is false, ``null != x`` is true, ``null IN (...)`` is false; doubles order as
``Double.compare`` does (``-0.0 < 0.0``, NaN above everything and equal to itself).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from icecore.expressions.like import python_matcher
from icecore.expressions.model import (
    BoundPredicate,
    Expression,
    ExpressionVisitor,
    Operation,
    UnboundPredicate,
    visit,
)

Row = Mapping[int, Any]
"""Values keyed by field id (a partition tuple keyed by partition field id)."""

RowPredicate = Callable[[Row], bool]


def _float_key(value: float) -> tuple[int, float]:
    """A sort key giving Java's ``Double.compare`` order."""
    if math.isnan(value):
        return (2, 0.0)
    if value == 0.0:
        return (1, 0.0) if math.copysign(1.0, value) > 0 else (0, 0.0)
    return (0, value) if value < 0 else (1, value)


def java_compare(left: Any, right: Any) -> int:
    """Compare like Java's null-first literal comparators (-1, 0 or 1)."""
    if left is None or right is None:
        return (left is not None) - (right is not None)
    if isinstance(left, float) or isinstance(right, float):
        a, b = _float_key(float(left)), _float_key(float(right))
    else:
        a, b = left, right
    return (a > b) - (a < b)


def _member_key(value: Any) -> Any:
    """A hashable key equal for two values of one type exactly when ``java_compare`` is 0.

    IN is a set lookup (a million values cost one hash per row, not a million comparisons).
    Floats key as ``Double.compare`` orders them (``-0.0`` is not ``0.0``, NaN equals NaN);
    other values (ints, strings, dates, decimals, bytes, UUIDs) hash as they compare. The
    values of a bound predicate and a row's values have the column's one type.
    """
    return _float_key(value) if isinstance(value, float) else value


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _predicate(pred: BoundPredicate) -> RowPredicate:
    field_id = pred.term.field_id
    op = pred.op
    if op is Operation.IS_NULL:
        return lambda row: row.get(field_id) is None
    if op is Operation.NOT_NULL:
        return lambda row: row.get(field_id) is not None
    if op is Operation.IS_NAN:
        return lambda row: _is_nan(row.get(field_id))
    if op is Operation.NOT_NAN:
        return lambda row: not _is_nan(row.get(field_id))
    if op in (Operation.IN, Operation.NOT_IN):
        members = frozenset(_member_key(m) for m in pred.values)
        negate = op is Operation.NOT_IN

        def member(row: Row) -> bool:
            value = row.get(field_id)
            found = value is not None and _member_key(value) in members
            return found != negate

        return member
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        prefix = pred.value
        negate = op is Operation.NOT_STARTS_WITH

        def starts(row: Row) -> bool:
            value = row.get(field_id)
            return (value is not None and str(value).startswith(prefix)) != negate

        return starts
    if op in (Operation.LIKE, Operation.NOT_LIKE):
        matcher = python_matcher(pred.values[0], pred.values[1])
        negate = op is Operation.NOT_LIKE

        def like(row: Row) -> bool:
            value = row.get(field_id)
            return (value is not None and matcher(str(value))) != negate

        return like
    literal = pred.value
    test = _COMPARISONS[op]
    return lambda row: test(java_compare(row.get(field_id), literal))


_COMPARISONS: dict[Operation, Callable[[int], bool]] = {
    Operation.LT: lambda c: c < 0,
    Operation.LT_EQ: lambda c: c <= 0,
    Operation.GT: lambda c: c > 0,
    Operation.GT_EQ: lambda c: c >= 0,
    Operation.EQ: lambda c: c == 0,
    Operation.NOT_EQ: lambda c: c != 0,
}


@dataclass(frozen=True, slots=True)
class _Compiler(ExpressionVisitor[RowPredicate]):
    """Turns a bound expression into nested closures once; evaluation then allocates nothing."""

    def always_true(self) -> RowPredicate:
        return lambda row: True

    def always_false(self) -> RowPredicate:
        return lambda row: False

    def not_(self, child: RowPredicate) -> RowPredicate:
        return lambda row: not child(row)

    def and_(self, left: RowPredicate, right: RowPredicate) -> RowPredicate:
        return lambda row: left(row) and right(row)

    def or_(self, left: RowPredicate, right: RowPredicate) -> RowPredicate:
        return lambda row: left(row) or right(row)

    def unbound_predicate(self, pred: UnboundPredicate) -> RowPredicate:
        raise TypeError(f"bind the expression before evaluating it: {pred}")

    def bound_predicate(self, pred: BoundPredicate) -> RowPredicate:
        return _predicate(pred)


def row_evaluator(expr: Expression) -> RowPredicate:
    """A callable telling whether a row (values by field id) matches the bound ``expr``."""
    return visit(expr, _Compiler())
