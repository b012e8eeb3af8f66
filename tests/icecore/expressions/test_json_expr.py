"""The REST spec's JSON expressions: what PyIceberg 0.12 sends binds as the same SQL does."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
from pyiceberg import expressions as pe
from pyiceberg.catalog.rest.scan_planning import PlanTableScanRequest
from pyiceberg.expressions.literals import DateLiteral, TimestampLiteral

from icecore.errors import FilterError
from icecore.expressions.bind import bind
from icecore.expressions.json_expr import (
    MAX_DEPTH,
    MAX_SET_VALUES,
    decode_literals,
    expression_from_json,
    expression_to_json,
)
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Literal,
    Not,
    Operation,
    Or,
    Reference,
    UnboundPredicate,
)
from icecore.expressions.parser import parse_filter
from tests.icecore.expressions.test_bind import SCHEMA


def pyiceberg_json(expr: Any) -> Any:
    """The ``filter`` PyIceberg 0.12 puts in a PlanTableScanRequest for ``expr``."""
    request = PlanTableScanRequest(filter=expr)
    return json.loads(request.model_dump_json(by_alias=True, exclude_none=True))["filter"]


def bound_json(obj: Any) -> Any:
    expr = decode_literals(expression_from_json(obj), SCHEMA, True)
    return bind(SCHEMA, expr, case_sensitive=True)


def p(op: Operation, name: str, *values: Any) -> UnboundPredicate:
    """A predicate built by hand with Python values (no text, no JSON)."""
    return UnboundPredicate(op, Reference(name), tuple(Literal(v) for v in values))


OP = Operation
# (PyIceberg expression, the same filter built by hand with typed Python values)
CASES = [
    (pe.EqualTo("id", 5), p(OP.EQ, "id", 5)),
    (
        pe.And(pe.GreaterThan("i", 3), pe.LessThanOrEqual("d", 2.5)),
        And(p(OP.GT, "i", 3), p(OP.LT_EQ, "d", 2.5)),
    ),
    (
        pe.Or(pe.IsNull("name"), pe.Not(pe.EqualTo("name", "x"))),
        Or(p(OP.IS_NULL, "name"), Not(p(OP.EQ, "name", "x"))),
    ),
    (pe.In("id", {1, 2, 3}), p(OP.IN, "id", 1, 2, 3)),
    (pe.NotIn("name", {"a", "b"}), p(OP.NOT_IN, "name", "a", "b")),
    (pe.StartsWith("name", "ab"), p(OP.STARTS_WITH, "name", "ab")),
    (pe.NotStartsWith("name", "ab"), p(OP.NOT_STARTS_WITH, "name", "ab")),
    (pe.IsNaN("d"), p(OP.IS_NAN, "d")),
    (pe.NotNaN("f"), p(OP.NOT_NAN, "f")),
    (pe.NotNull("loc.lat"), p(OP.NOT_NULL, "loc.lat")),
    (pe.EqualTo("day", DateLiteral(19000)), p(OP.EQ, "day", dt.date(2022, 1, 8))),
    (pe.GreaterThanOrEqual("day", "2024-08-05"), p(OP.GT_EQ, "day", dt.date(2024, 8, 5))),
    (
        pe.LessThan("ts", TimestampLiteral(1_700_000_000_000_001)),
        p(OP.LT, "ts", dt.datetime(2023, 11, 14, 22, 13, 20, 1)),
    ),
    (pe.EqualTo("amount", Decimal("1.23")), p(OP.EQ, "amount", Decimal("1.23"))),
    (
        pe.EqualTo("u", uuid.UUID(int=5)),
        p(OP.EQ, "u", "00000000-0000-0000-0000-000000000005"),
    ),
    (pe.EqualTo("b", b"\x0a\xff"), p(OP.EQ, "b", b"\x0a\xff")),
    (pe.EqualTo("fx", b"abc"), p(OP.EQ, "fx", b"abc")),
    (pe.EqualTo("flag", True), p(OP.EQ, "flag", True)),
    (pe.AlwaysTrue(), AlwaysTrue()),
    (pe.AlwaysFalse(), AlwaysFalse()),
]
IDS = [str(expected) for _, expected in CASES]


def _sets_sorted(expr: Any) -> Any:
    """``expr`` with each IN/NOT IN value set in one order.

    A set's order carries no meaning: PyIceberg writes a Python set's values in hash order,
    which changes between processes.
    """
    if isinstance(expr, (And, Or)):
        return type(expr)(_sets_sorted(expr.left), _sets_sorted(expr.right))
    if isinstance(expr, Not):
        return Not(_sets_sorted(expr.child))
    if isinstance(expr, BoundPredicate) and len(expr.values) > 1:
        return dataclasses.replace(expr, values=tuple(sorted(expr.values, key=repr)))
    return expr


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=IDS)
def test_pyiceberg_json_binds_as_the_filter_built_by_hand(expr: Any, expected: Any) -> None:
    got = bound_json(pyiceberg_json(expr))
    assert _sets_sorted(got) == _sets_sorted(bind(SCHEMA, expected, case_sensitive=True))


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=IDS)
def test_written_back_reads_the_same(expr: Any, expected: Any) -> None:
    bound = bind(SCHEMA, expected, case_sensitive=True)
    assert bound_json(expression_to_json(bound)) == bound
    unbound = expression_from_json(pyiceberg_json(expr))
    assert expression_from_json(expression_to_json(unbound)) == unbound


def test_the_newer_spelling_reads_as_the_legacy_one() -> None:
    newer = {
        "type": "and",
        "left": {
            "type": "eq",
            "left": {"type": "reference", "name": "id"},
            "right": {"type": "literal", "value": 5},
        },
        "right": {
            "type": "in",
            "child": {"type": "reference", "name": "name"},
            "values": {"type": "literals", "values": ["a"], "data-type": "string"},
        },
    }
    assert bound_json(newer) == bind(SCHEMA, parse_filter("id = 5 AND name IN ('a')"), True)
    assert bound_json({"type": "true"}) == bound_json(True)


@pytest.mark.parametrize(
    ("obj", "says"),
    [
        ([1], "JSON object or boolean"),
        ({"type": "eqq", "term": "id", "value": 1}, "Unknown expression type"),
        ({"type": "eq", "term": "id"}, "needs a 'value'"),
        ({"type": "and", "left": True}, "needs 'left' and 'right'"),
        ({"type": "not"}, "needs a 'child'"),
        ({"type": "in", "term": "id"}, "'values' array"),
        ({"type": "eq", "term": "id", "value": None}, "cannot be null"),
        ({"type": "eq", "term": "id", "value": [1]}, "number, string or boolean"),
        ({"type": "eq", "term": "id", "value": 1, "extra": 2}, "no field"),
        ({"type": "eq", "term": {"type": "reference", "id": 1}, "value": 1}, "field id"),
        (
            {
                "type": "eq",
                "term": {"type": "transform", "transform": "day", "term": "ts"},
                "value": 1,
            },
            "transforms",
        ),
        ({"type": "eq", "term": "", "value": 1}, "column name"),
    ],
)
def test_malformed_json_is_one_sentence(obj: Any, says: str) -> None:
    with pytest.raises(FilterError, match=says) as caught:
        expression_from_json(obj)
    assert str(caught.value).count(". ") == 0


def test_bounds() -> None:
    deep: Any = {"type": "eq", "term": "id", "value": 1}
    for _ in range(MAX_DEPTH + 1):
        deep = {"type": "not", "child": deep}
    with pytest.raises(FilterError, match="levels deep"):
        expression_from_json(deep)
    many = {"type": "in", "term": "id", "values": list(range(MAX_SET_VALUES + 1))}
    with pytest.raises(FilterError, match="more than"):
        expression_from_json(many)
    # 100,000 conditions joined by OR, left-deep as a client might send them, nest too deep
    chain: Any = {"type": "eq", "term": "id", "value": 0}
    for i in range(1, 200):
        chain = {"type": "or", "left": chain, "right": {"type": "eq", "term": "id", "value": i}}
    with pytest.raises(FilterError, match="levels deep"):
        expression_from_json(chain)


def test_unknown_column_and_bad_values_fail_at_binding() -> None:
    with pytest.raises(FilterError, match="nope"):
        bound_json({"type": "eq", "term": "nope", "value": 1})
    with pytest.raises(FilterError, match="not hex"):
        bound_json({"type": "eq", "term": "b", "value": "zz"})
    with pytest.raises(FilterError, match="day"):
        bound_json({"type": "eq", "term": "day", "value": "not a date"})


def test_case_insensitive_names_decode_hex_too() -> None:
    expr = decode_literals(
        expression_from_json({"type": "eq", "term": "B", "value": "0aff"}), SCHEMA, False
    )
    assert bind(SCHEMA, expr) == bind(SCHEMA, parse_filter("b = X'0AFF'"))
