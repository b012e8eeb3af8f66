"""Filters of thousands of conditions, deep nesting and IN lists of 100,000 values.

Icecore issue 15, item 7: a filter of 329 ORs, 2,000 ANDs or deep nesting ended in a
RecursionError somewhere between the parser and the reader. Every stage is driven here with
such filters, and each answer is checked against what the filter means, computed in plain
Python (set membership over the listed values).

Sizes: 2,000 terms already nest past Python's recursion limit unless every stage balances
or loops (the RecursionError came at 329), and each stage's depth is asserted; the
10,000-term chains and the million-value IN list run end to end, parser to rows, in
tests/icecore/scan/test_large_filters.py. Here they would only repeat that at 60 s a test.
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa
import pytest

from icecore.errors import FilterError
from icecore.expressions.bind import MAX_DEPTH, bind
from icecore.expressions.evaluator import row_evaluator
from icecore.expressions.manifest_eval import manifest_evaluator
from icecore.expressions.metrics_eval import metrics_evaluator
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Literal,
    Not,
    Operation,
    Or,
    Reference,
    UnboundPredicate,
    depth,
)
from icecore.expressions.parser import (
    LONG_LIST,
    MAX_CONDITIONS,
    MAX_NESTING,
    _Converter,
    _parse,
    parse_filter,
)
from icecore.expressions.projection import inclusive_projection, strict_projection
from icecore.expressions.residual import residual_evaluator
from icecore.expressions.rewrite_not import rewrite_not
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.read import filter_mask
from icecore.transforms import BucketTransform, IdentityTransform, TruncateTransform
from icecore.types import LongType
from tests.icecore.expressions.test_manifest_eval import SCHEMA as MSCHEMA
from tests.icecore.expressions.test_manifest_eval import SPEC as MSPEC
from tests.icecore.expressions.test_manifest_eval import manifest, summary
from tests.icecore.expressions.test_metrics_eval import SCHEMA, data_file

BUCKET = BucketTransform(16).bind(LongType())
SPEC = PartitionSpec(
    0,
    (
        PartitionField(1, 1000, "id", IdentityTransform()),
        PartitionField(1, 1001, "id_bucket", BucketTransform(16)),
        PartitionField(1, 1002, "id_trunc", TruncateTransform(10)),
    ),
)


def partition(i: int) -> dict[int, Any]:
    return {1000: i, 1001: BUCKET(i), 1002: i - i % 10}


def or_of_equalities(values: list[int]) -> str:
    return " OR ".join(f"id = {v}" for v in values)


@pytest.mark.parametrize("count", [329, 2000])
def test_or_chain_passes_every_stage(count: int) -> None:
    listed = [2 * i for i in range(count)]  # even ids only
    bound = bind(SCHEMA, parse_filter(or_of_equalities(listed)))
    assert depth(bound) <= 20
    assert str(bound).startswith("(id = 0 OR id = 2 OR ")
    assert repr(bound).startswith("Or(")
    expr = rewrite_not(bound)

    inclusive = row_evaluator(inclusive_projection(SCHEMA, SPEC)(expr))
    strict = row_evaluator(strict_projection(SCHEMA, SPEC)(expr))
    residuals = residual_evaluator(SPEC, SCHEMA, expr)
    for i in (0, 4, 2 * count - 2):
        assert inclusive(partition(i)) and strict(partition(i))
        assert residuals(partition(i)) == AlwaysTrue()
    for i in (1, 5, 2 * count + 2):
        assert not inclusive(partition(i)) and not strict(partition(i))
        assert residuals(partition(i)) == AlwaysFalse()

    might = metrics_evaluator(SCHEMA, expr)
    listed_file = data_file(values={1: 10}, nulls={1: 0}, lower={1: 4}, upper={1: 4})
    other_file = data_file(values={1: 10}, nulls={1: 0}, lower={1: 5}, upper={1: 5})
    assert might(listed_file)
    assert not might(other_file)
    assert might.explain(other_file) is not None

    unbound = parse_filter(or_of_equalities(listed))
    projected = inclusive_projection(MSCHEMA, MSPEC)(rewrite_not(bind(MSCHEMA, unbound)))
    buckets = {BUCKET(v) for v in listed}
    for b in range(16):
        verdict = manifest_evaluator(MSPEC, MSCHEMA, projected)(manifest(None, summary(1001, b, b)))
        assert verdict is (b in buckets)

    column = pa.array([0, 1, None, 2 * count - 2, 2 * count, 7], pa.int64())
    mask = filter_mask(bound, {1: column}, len(column))
    assert mask.to_pylist() == [True, False, False, True, False, False]


@pytest.mark.parametrize("count", [2000])
def test_and_chain_and_its_negation_pass_every_stage(count: int) -> None:
    excluded = list(range(0, 2 * count, 2))
    text = " AND ".join(f"id != {v}" for v in excluded)
    for negated in (False, True):
        bound = bind(SCHEMA, parse_filter(f"NOT ({text})" if negated else text))
        expr = rewrite_not(bound)  # NOT (a AND b ...) is (NOT a OR NOT b ...)
        assert depth(expr) <= 20
        column = pa.array([0, 1, None, 2 * count, 2 * count - 2], pa.int64())
        mask = filter_mask(expr, {1: column}, len(column)).to_pylist()
        kept = [v is not None and (v in set(excluded)) == negated for v in column.to_pylist()]
        assert mask == kept
        assert residual_evaluator(SPEC, SCHEMA, expr)(partition(1)) == (
            AlwaysFalse() if negated else AlwaysTrue()
        )


def test_expression_built_by_hand_as_a_left_fold_is_balanced_by_bind() -> None:
    preds = [UnboundPredicate(Operation.EQ, Reference("id"), (Literal(i),)) for i in range(10000)]
    deep = functools.reduce(Or, preds)  # left-deep: 9,999 levels
    assert str(deep).startswith("(id = 0 OR id = 1 OR id = 2")
    bound = bind(SCHEMA, Not(deep))
    assert depth(bound) <= 20
    assert row_evaluator(rewrite_not(bound))({1: 10001})
    assert not row_evaluator(rewrite_not(bound))({1: 9999})


def nested(levels: int) -> Expression:
    """Genuine nesting: OR inside AND inside OR ..., ``levels`` connectives deep.

    ``id = 0 OR (id != 1 AND (id = 2 OR (...)))``: NOT NOT wraps the AND levels' leaves
    (from the third level on, so that they add no depth).
    """
    expr: Expression = UnboundPredicate(Operation.EQ, Reference("id"), (Literal(-1),))
    for level in range(levels):
        if level % 2 == 0:
            expr = Or(UnboundPredicate(Operation.EQ, Reference("id"), (Literal(level),)), expr)
        else:
            leaf = UnboundPredicate(Operation.NOT_EQ, Reference("id"), (Literal(level),))
            expr = And(Not(Not(leaf)) if level > 2 else leaf, expr)
    return expr


def test_nesting_up_to_the_bound_passes_every_stage() -> None:
    bound = bind(SCHEMA, nested(MAX_DEPTH))
    assert depth(bound) == MAX_DEPTH
    expr = rewrite_not(bound)
    assert str(expr) and repr(expr) and expr == rewrite_not(bind(SCHEMA, nested(MAX_DEPTH)))
    residual_evaluator(SPEC, SCHEMA, expr)(partition(3))
    metrics_evaluator(SCHEMA, expr)(data_file(values={1: 10}, nulls={1: 0}, lower={1: 4}))
    inclusive_projection(SCHEMA, SPEC)(expr)
    column = pa.array(list(range(-2, MAX_DEPTH + 2)), pa.int64())
    mask = filter_mask(expr, {1: column}, len(column)).to_pylist()
    evaluate = row_evaluator(expr)
    assert mask == [evaluate({1: v}) for v in column.to_pylist()]
    assert any(mask) and not all(mask)


def test_nesting_beyond_the_bound_is_one_sentence() -> None:
    with pytest.raises(FilterError, match=f"more than {MAX_DEPTH} levels deep") as caught:
        bind(SCHEMA, nested(MAX_DEPTH + 1))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "(" * (MAX_NESTING + 1) + "id = 1" + ")" * (MAX_NESTING + 1),
        "(" * 500 + "id = 1" + ")" * 500,
        "NOT " * 500 + "id = 1",
        "id = 1 OR (" * 500 + "id = 2" + ")" * 500,
    ],
)
def test_parser_refuses_deep_nesting_with_one_sentence(text: str) -> None:
    with pytest.raises(FilterError, match=f"more than {MAX_NESTING} levels") as caught:
        parse_filter(text)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 600


def test_parser_takes_nesting_at_the_bound() -> None:
    parens = "(" * MAX_NESTING + "id = 1" + ")" * MAX_NESTING
    assert str(parse_filter(parens)) == "id = 1"
    nots = parse_filter("NOT " * MAX_NESTING + "id = 1")
    assert nots == UnboundPredicate(Operation.EQ, Reference("id"), (Literal(1, None, "1"),))
    text = "id = -1"
    for level in range(MAX_NESTING // 2):  # two parentheses per level
        text = f"id = {level} OR (id > {level} AND ({text}))"
    evaluate = row_evaluator(rewrite_not(bind(SCHEMA, parse_filter(text))))

    def meaning(v: int, level: int) -> bool:  # the same text, read by hand
        if level < 0:
            return v == -1
        return v == level or (v > level and meaning(v, level - 1))

    results = [evaluate({1: v}) for v in range(-2, MAX_NESTING)]
    assert results == [meaning(v, MAX_NESTING // 2 - 1) for v in range(-2, MAX_NESTING)]
    assert any(results)


def test_parser_refuses_more_conditions_than_the_bound() -> None:
    with pytest.raises(FilterError, match=f"more than {MAX_CONDITIONS:,} conditions"):
        parse_filter(or_of_equalities(list(range(MAX_CONDITIONS + 1))))


def slow_parse(text: str) -> Expression:
    """The parse without the long-list fast path: sqlglot reads every literal."""
    (node,) = _parse(text, text)
    assert node is not None
    return _Converter(text).boolean(node).true


def test_long_list_fast_path_reads_as_sqlglot_does() -> None:
    values = [
        str(i) if i % 4 == 0 else f"-{i}" if i % 4 == 1 else f"{i}.50" if i % 4 == 2 else f"'s {i}'"
        for i in range(LONG_LIST + 50)
    ]
    listed = ", ".join(values)
    on_lines = ",\n".join(values)
    numbers = ", ".join(str(i) for i in range(LONG_LIST * 2))
    text = (
        f"zone = 'x IN ({numbers})' AND id IN ({listed})\n"
        f"OR zone NOT IN (\n{on_lines}) AND id IN (1, 2) -- IN ({listed})"
    )
    fast = parse_filter(text)
    assert fast == slow_parse(text)
    assert len(fast.left.right.literals) == len(values)  # type: ignore[attr-defined]
    assert fast.left.left.literals[0].value == f"x IN ({numbers})"  # type: ignore[attr-defined]
    # Escapes and suffixes are left to sqlglot, whole list and all.
    for odd in ("'it''s'", "'a\\'b'", "7L", "1e3", "x'00'"):
        text = f"zone IN ({listed}, {odd})"
        assert parse_filter(text) == slow_parse(text)


def test_long_list_errors_are_those_of_the_text_as_written() -> None:
    listed = ", ".join(str(i) for i in range(LONG_LIST * 2))
    for text in (f"id IN ({listed}) AND", f"id IN ({listed}) AND zone = 'open"):
        with pytest.raises(FilterError) as fast:
            parse_filter(text)
        with pytest.raises(FilterError) as slow:
            slow_parse(text)
        assert str(fast.value) == str(slow.value)
        assert len(str(fast.value)) < 600
    with pytest.raises(FilterError, match="'nope' is not in the table's schema"):
        bind(SCHEMA, parse_filter(f"nope IN ({listed})"))


@pytest.mark.parametrize("negate", [False, True])
def test_long_in_list_is_a_set(negate: bool) -> None:
    """100,000 values (the million runs end to end in the scan test): membership is a set's."""
    top = 300_000
    listed = list(range(0, top, 3))
    op = "NOT IN" if negate else "IN"
    bound = bind(
        SCHEMA, parse_filter(f"id {op} ({', '.join(map(str, listed))}, 2147483648000000000000)")
    )
    assert isinstance(bound, BoundPredicate)
    assert bound.op is (Operation.NOT_IN if negate else Operation.IN)
    assert bound.values == tuple(listed)  # out of the long range: dropped, as Java drops it
    assert str(bound).endswith(f"... {len(listed) - 20:,} more)")
    expr = rewrite_not(bound)
    evaluate = row_evaluator(expr)
    residual = residual_evaluator(SPEC, SCHEMA, expr)
    members = set(listed)
    for v in (0, 3, top - 3, 1, top, -3):
        assert evaluate({1: v}) is ((v in members) != negate)
        assert residual(partition(v)) == (
            AlwaysTrue() if (v in members) != negate else AlwaysFalse()
        )
    column = pa.array([0, 1, None, top - 3, top], pa.int64())
    expected = [None if v is None else (v in members) != negate for v in column.to_pylist()]
    assert filter_mask(expr, {1: column}, 5).to_pylist() == [e is True for e in expected]
    might = metrics_evaluator(SCHEMA, expr)
    assert might(data_file(values={1: 10}, nulls={1: 0}, lower={1: 1}, upper={1: 2}))  # > 200
    # All null: IN cannot match; NOT IN, as in Java, is never judged by metrics.
    assert might(data_file(values={1: 10}, nulls={1: 10})) is negate
