"""rewrite_not: NOT pushed down to predicates, same result on every row.

Iceberg's NOT is plain boolean negation of the evaluated child (Java's ``Evaluator``:
``not(result) = !result``), not SQL's three-valued logic: on a null value ``a < 5`` is true
(null sorts first), ``a = 5`` false, ``a != 5`` true, ``a IN (...)`` false. The tiny
evaluator below follows those rules, and each negated operator is the exact complement.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

import pytest

from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    Expression,
    Literal,
    Not,
    Operation,
    Or,
    Reference,
    UnboundPredicate,
)
from icecore.expressions.rewrite_not import rewrite_not
from icecore.types import DoubleType, LongType, NestedField, StringType

A = BoundReference(NestedField(1, "a", LongType()), "a")
D = BoundReference(NestedField(2, "d", DoubleType()), "d")
S = BoundReference(NestedField(3, "s", StringType()), "s")

_DOMAINS: dict[int, list[Any]] = {
    1: [None, -1, 0, 1, 2, 3],
    2: [None, math.nan, -math.inf, -1.5, -0.0, 0.0, 2.5, math.inf],
    3: [None, "", "a", "ab", "abc", "b", "ü"],
}
_LITERALS: dict[int, list[Any]] = {
    1: [-1, 0, 1, 2, 3],
    2: [-1.5, -0.0, 0.0, 2.5, math.inf],
    3: ["", "a", "ab", "b", "ü"],
}


def _key(value: Any) -> Any:
    """Java's comparator: nulls first; doubles as Double.compare (-0.0 < 0.0 < NaN)."""
    if value is None:
        return (0, 0, 0.0)
    if isinstance(value, float):
        if math.isnan(value):
            return (1, 2, 0.0)
        if value == 0.0:
            return (1, 1, -1e-300 if math.copysign(1.0, value) < 0 else 0.0)
        return (1, 1, value)
    return (1, 1, value)


def _cmp(left: Any, right: Any) -> int:
    a, b = _key(left), _key(right)
    return (a > b) - (a < b)


def evaluate(expr: Expression, row: dict[int, Any]) -> bool:
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, Not):
        return not evaluate(expr.child, row)
    if isinstance(expr, And):
        return evaluate(expr.left, row) and evaluate(expr.right, row)
    if isinstance(expr, Or):
        return evaluate(expr.left, row) or evaluate(expr.right, row)
    assert isinstance(expr, BoundPredicate)
    v = row[expr.term.field_id]
    op = expr.op
    nan = isinstance(v, float) and math.isnan(v)
    in_set = v is not None and any(_cmp(v, x) == 0 for x in expr.values)
    starts = v is not None and expr.op.is_unary is False and str(v).startswith(str(expr.values[0]))
    results = {
        Operation.IS_NULL: lambda: v is None,
        Operation.NOT_NULL: lambda: v is not None,
        Operation.IS_NAN: lambda: nan,
        Operation.NOT_NAN: lambda: not nan,
        Operation.LT: lambda: _cmp(v, expr.value) < 0,
        Operation.LT_EQ: lambda: _cmp(v, expr.value) <= 0,
        Operation.GT: lambda: _cmp(v, expr.value) > 0,
        Operation.GT_EQ: lambda: _cmp(v, expr.value) >= 0,
        Operation.EQ: lambda: _cmp(v, expr.value) == 0,
        Operation.NOT_EQ: lambda: _cmp(v, expr.value) != 0,
        Operation.IN: lambda: in_set,
        Operation.NOT_IN: lambda: not in_set,
        Operation.STARTS_WITH: lambda: starts,
        Operation.NOT_STARTS_WITH: lambda: not starts,
        Operation.LIKE: lambda: _like(v, expr.values),
        Operation.NOT_LIKE: lambda: not _like(v, expr.values),
    }
    return results[op]()


def _like(value: Any, pattern_and_escape: tuple[Any, ...]) -> bool:
    """LIKE for the unescaped patterns these tests use: ``_`` one character, ``%`` any run."""
    pattern = pattern_and_escape[0]
    regex = "".join("." if c == "_" else ".*" if c == "%" else re.escape(c) for c in pattern)
    return value is not None and re.fullmatch(regex, str(value), re.DOTALL) is not None


def _random_predicate(rng: random.Random) -> BoundPredicate:
    ref = rng.choice([A, D, S])
    fid = ref.field_id
    ops = [
        Operation.IS_NULL,
        Operation.NOT_NULL,
        Operation.LT,
        Operation.LT_EQ,
        Operation.GT,
        Operation.GT_EQ,
        Operation.EQ,
        Operation.NOT_EQ,
        Operation.IN,
        Operation.NOT_IN,
    ]
    if fid == 2:
        ops += [Operation.IS_NAN, Operation.NOT_NAN]
    if fid == 3:
        ops += [Operation.STARTS_WITH, Operation.NOT_STARTS_WITH]
    op = rng.choice(ops)
    if op.is_unary:
        return BoundPredicate(op, ref)
    if op.is_set:
        return BoundPredicate(op, ref, tuple(rng.sample(_LITERALS[fid], 2)))
    return BoundPredicate(op, ref, (rng.choice(_LITERALS[fid]),))


def _random_expression(rng: random.Random, depth: int) -> Expression:
    roll = rng.random()
    if depth == 0 or roll < 0.25:
        return (
            _random_predicate(rng)
            if rng.random() < 0.95
            else rng.choice([AlwaysTrue(), AlwaysFalse()])
        )
    kind = rng.choice(["not", "not", "and", "or"])
    if kind == "not":
        return Not(_random_expression(rng, depth - 1))
    left, right = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    return And(left, right) if kind == "and" else Or(left, right)


def _has_not(expr: Expression) -> bool:
    if isinstance(expr, Not):
        return True
    if isinstance(expr, And | Or):
        return _has_not(expr.left) or _has_not(expr.right)
    return False


def _rows(rng: random.Random, count: int) -> list[dict[int, Any]]:
    return [{fid: rng.choice(values) for fid, values in _DOMAINS.items()} for _ in range(count)]


@pytest.mark.parametrize("seed", range(20))
def test_rewrite_not_keeps_truth_table(seed: int) -> None:
    rng = random.Random(seed)
    rows = _rows(rng, 60)
    for _ in range(40):
        expr = _random_expression(rng, depth=5)
        rewritten = rewrite_not(expr)
        assert not _has_not(rewritten), rewritten
        for row in rows:
            assert evaluate(rewritten, row) == evaluate(expr, row), (expr, rewritten, row)


_STRING_ONLY = (
    Operation.STARTS_WITH,
    Operation.NOT_STARTS_WITH,
    Operation.LIKE,
    Operation.NOT_LIKE,
)


def test_every_negated_operator_is_the_complement_on_every_value() -> None:
    for fid, ref in ((1, A), (2, D), (3, S)):
        for op in Operation:
            if op in (Operation.IS_NAN, Operation.NOT_NAN) and fid != 2:
                continue
            if op in _STRING_ONLY and fid != 3:
                continue
            values: tuple[Any, ...] = ()
            if op in (Operation.LIKE, Operation.NOT_LIKE):
                values = ("_%", "\\")
            elif op.is_set:
                values = tuple(_LITERALS[fid][:2])
            elif not op.is_unary:
                values = (_LITERALS[fid][1],)
            pred = BoundPredicate(op, ref, values)
            for value in _DOMAINS[fid]:
                row = {fid: value}
                assert evaluate(rewrite_not(Not(pred)), row) == (not evaluate(pred, row))


def _u(op: Operation, name: str, *values: Any) -> UnboundPredicate:
    return UnboundPredicate(op, Reference(name), tuple(Literal(v) for v in values))


def test_de_morgan_on_unbound_expressions() -> None:
    expr = Not(
        And(
            _u(Operation.LT, "a", 1),
            Or(_u(Operation.IS_NULL, "b"), Not(_u(Operation.IN, "c", 1, 2))),
        )
    )
    assert rewrite_not(expr) == Or(
        _u(Operation.GT_EQ, "a", 1),
        And(_u(Operation.NOT_NULL, "b"), _u(Operation.IN, "c", 1, 2)),
    )


def test_constants_and_double_negation() -> None:
    assert rewrite_not(Not(AlwaysTrue())) == AlwaysFalse()
    assert rewrite_not(Not(Not(AlwaysFalse()))) == AlwaysFalse()
    pred = _u(Operation.STARTS_WITH, "s", "ab")
    assert rewrite_not(Not(Not(pred))) == pred
    assert rewrite_not(Not(pred)) == _u(Operation.NOT_STARTS_WITH, "s", "ab")
    assert rewrite_not(And(Not(AlwaysFalse()), pred)) == pred
    assert rewrite_not(Or(Not(AlwaysFalse()), pred)) == AlwaysTrue()


def test_expressions_without_not_are_unchanged() -> None:
    expr = Or(_u(Operation.EQ, "a", 1), And(_u(Operation.NOT_NAN, "d"), _u(Operation.GT, "a", 2)))
    assert rewrite_not(expr) == expr
