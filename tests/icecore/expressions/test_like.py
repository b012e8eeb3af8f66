"""LIKE with any pattern (issue 36): Spark's reading of patterns, rows, and what is pruned.

Expected answers are Spark SQL's rules written out by hand (``_`` one character, line
breaks and characters outside the BMP included; ``%`` any run; the escape character before
``_``, ``%`` or itself), never values taken from Icecore. The Spark oracle for the same
forms is tests/icecore/scan/test_null_semantics_oracle.py (``LIKES``).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from icecore.errors import FilterError
from icecore.expressions.bind import bind
from icecore.expressions.evaluator import row_evaluator
from icecore.expressions.like import (
    LikePatternError,
    Shape,
    Wildcard,
    like_tokens,
    spark_shape,
)
from icecore.expressions.model import (
    BoundPredicate,
    Literal,
    Operation,
    Reference,
    UnboundPredicate,
)
from icecore.expressions.parser import parse_scan_filter
from icecore.read import filter_mask
from tests.icecore.expressions.test_metrics_eval import SCHEMA, data_file, might, pred

VALUES = ["abc", "a\nc", "a😀c", "ac", "abbc", "a_c", "A_C", "", None]

CASES = [
    # pattern, escape, which of VALUES match (None never does)
    ("a_c", "\\", [True, True, True, False, False, True, False, False, False]),
    ("a%c", "\\", [True, True, True, True, True, True, False, False, False]),
    ("a\\_c", "\\", [False, False, False, False, False, True, False, False, False]),
    ("a!_c", "!", [False, False, False, False, False, True, False, False, False]),
    ("%", "\\", [True, True, True, True, True, True, True, True, False]),
    ("", "\\", [False, False, False, False, False, False, False, True, False]),
    ("_", "\\", [False] * 9),
    ("___", "\\", [True, True, True, False, False, True, True, False, False]),
    ("%b%", "\\", [True, False, False, False, True, False, False, False, False]),
]


@pytest.mark.parametrize(("pattern", "escape", "expected"), CASES)
def test_rows_and_partition_values_match_as_spark_reads_the_pattern(
    pattern: str, escape: str, expected: list[bool]
) -> None:
    like = pred(3, Operation.LIKE, pattern, escape)
    column = pa.array(VALUES, pa.string())
    assert filter_mask(like, {3: column}, len(column)).to_pylist() == expected
    evaluate = row_evaluator(like)
    assert [evaluate({3: v}) for v in VALUES] == expected
    unlike = pred(3, Operation.NOT_LIKE, pattern, escape)
    negated = [v is not None and not hit for v, hit in zip(VALUES, expected, strict=True)]
    # NOT LIKE is NULL (dropped) on NULL in the rows; two-valued (true) on partition values
    assert filter_mask(unlike, {3: column}, len(column)).to_pylist() == negated
    assert [row_evaluator(unlike)({3: v}) for v in VALUES] == [*negated[:-1], True]


def test_tokens_resolve_escapes() -> None:
    assert like_tokens("a\\%b_") == ["a", "%", "b", Wildcard.ONE]
    assert like_tokens("a!!%", "!") == ["a", "!", Wildcard.ANY]


@pytest.mark.parametrize(("pattern", "words"), [("a\\b", "before 'b'"), ("ab\\", "ends with")])
def test_patterns_spark_refuses(pattern: str, words: str) -> None:
    with pytest.raises(LikePatternError, match=words):
        like_tokens(pattern)


@pytest.mark.parametrize(
    ("pattern", "shape"),
    [
        # Spark 3.5 LikeSimplification, pattern by pattern
        ("abc", Shape("exact", "abc")),
        ("", Shape("exact", "")),
        ("abc%", Shape("prefix", "abc")),
        ("ab%c", Shape("prefix_and", "ab")),
        ("%abc", None),
        ("%abc%", None),
        ("abc%%", None),
        ("%", None),
        ("a_c", None),
        ("a\\_c%", None),  # holds the escape character: left alone
    ],
)
def test_what_spark_pushes_for_a_pattern(pattern: str, shape: Shape | None) -> None:
    assert spark_shape(pattern) == shape


@pytest.mark.parametrize(
    ("text", "pushed"),
    [
        ("s LIKE 'ab_%'", "s IS NOT NULL"),
        ("s NOT LIKE 'ab_%'", "s IS NOT NULL"),
        ("s LIKE 'ab%c'", "(s LIKE 'ab'% AND s IS NOT NULL)"),
        ("NOT (s LIKE 'ab%c')", "s IS NOT NULL"),
        ("s LIKE 'ab_%' OR id = 1", "true"),
    ],
)
def test_planning_prunes_by_what_spark_pushes(text: str, pushed: str) -> None:
    """Pushed filters as Spark 3.5's physical plans show them (``filterExpressions``).

    An OR holding a LIKE that Spark keeps to itself is not pushed at all.
    """
    assert str(parse_scan_filter(text)[1]) == pushed


def test_metrics_prune_a_like_only_where_the_column_is_all_null() -> None:
    like = pred(3, Operation.LIKE, "zz_", "\\")
    outside = data_file(values={3: 10}, nulls={3: 0}, lower={3: "aa"}, upper={3: "ab"})
    assert might(like, outside)  # bounds never prove a pattern false
    assert not might(like, data_file(values={3: 10}, nulls={3: 10}))
    assert might(pred(3, Operation.NOT_LIKE, "zz_", "\\"), data_file(values={3: 10}, nulls={3: 10}))


def test_like_binds_only_to_strings() -> None:
    expr = UnboundPredicate(Operation.LIKE, Reference("n"), (Literal("1_"), Literal("\\")))
    with pytest.raises(FilterError, match="needs a string column"):
        bind(SCHEMA, expr)
    bad = UnboundPredicate(Operation.LIKE, Reference("zone"), (Literal("a\\b"), Literal("\\")))
    with pytest.raises(FilterError, match="which Spark refuses too"):
        bind(SCHEMA, bad)
    good = bind(
        SCHEMA, UnboundPredicate(Operation.LIKE, Reference("zone"), (Literal("a_"), Literal("\\")))
    )
    assert isinstance(good, BoundPredicate) and str(good) == "zone LIKE 'a_'"


def _spark_like(value: str, tokens: list[str | Wildcard]) -> bool:
    """Spark's rule by dynamic programming: token i matches value[j:] (no regex involved)."""
    ends = {0}
    for t in tokens:
        if t is Wildcard.ANY:
            ends = set(range(min(ends), len(value) + 1)) if ends else set()
        else:
            ends = {j + 1 for j in ends if j < len(value) and (t is Wildcard.ONE or value[j] == t)}
    return len(value) in ends


def test_row_like_agrees_with_spark_rule_on_every_small_pattern_and_value() -> None:
    alphabet = ["a", "b", "\n", "😀"]
    patterns = [""]
    for _ in range(4):
        patterns = [p + c for p in patterns for c in ["a", "b", "_", "%"]] + patterns
    values = [""]
    for _ in range(4):
        values = [v + c for v in values for c in alphabet] + values
    for pattern in set(patterns):
        evaluate = row_evaluator(pred(3, Operation.LIKE, pattern, "\\"))
        tokens = like_tokens(pattern)
        for value in set(values):
            assert evaluate({3: value}) == _spark_like(value, tokens), (pattern, value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "pattern", ["%" * 40 + "a", "%a" * 20 + "%b", "_%" * 20 + "c", "%" + "a_" * 30 + "%b%"]
)
def test_a_pathological_like_pattern_takes_linear_time_on_long_values(pattern: str) -> None:
    # Python's backtracking regex took over 100 s on "%%%%%%%%a" against 100 characters.
    evaluate = row_evaluator(pred(3, Operation.LIKE, pattern, "\\"))
    for value in ("a" * 20_000, "ab" * 10_000):
        assert evaluate({3: value}) is _spark_like(value, like_tokens(pattern))
