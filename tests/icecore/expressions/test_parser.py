"""SQL filter text -> unbound expressions, and errors that point at the bad part."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal
from typing import Any

import pytest

from icecore.errors import FilterError
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Literal,
    Not,
    Operation,
    Or,
    Reference,
    UnboundPredicate,
)
from icecore.expressions.parser import parse_filter


def p(op: Operation, name: str, *values: Any, hint: str | None = None) -> UnboundPredicate:
    return UnboundPredicate(op, Reference(name), tuple(Literal(v, hint) for v in values))


def g(op: Operation, name: str, *values: Any) -> Expression:
    """``name IS NOT NULL AND name op values``: where a null-accepting operator is TRUE.

    Iceberg evaluates !=, NOT IN, NOT LIKE (and < / <= under its null-first order) as true
    on NULL; in SQL they are NULL there, so the parser adds the guard.
    """
    return And(p(Operation.NOT_NULL, name), p(op, name, *values))


def same(actual: Expression, expected: Expression) -> None:
    """Equal ignoring each literal's source text."""
    assert _strip(actual) == _strip(expected)


def _strip(e: Expression) -> Expression:
    if isinstance(e, UnboundPredicate):
        lits = tuple(Literal(lit.value, lit.type_hint) for lit in e.literals)
        return UnboundPredicate(e.op, e.term, lits)
    if isinstance(e, And):
        return And(_strip(e.left), _strip(e.right))
    if isinstance(e, Or):
        return Or(_strip(e.left), _strip(e.right))
    if isinstance(e, Not):
        return Not(_strip(e.child))
    return e


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_filter_is_always_true(text: str) -> None:
    assert parse_filter(text) == AlwaysTrue()


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("a = 1", Operation.EQ),
        ("a != 1", Operation.NOT_EQ),
        ("a <> 1", Operation.NOT_EQ),
        ("a < 1", Operation.LT),
        ("a <= 1", Operation.LT_EQ),
        ("a > 1", Operation.GT),
        ("a >= 1", Operation.GT_EQ),
    ],
)
def test_comparisons(text: str, op: Operation) -> None:
    guarded = op in (Operation.NOT_EQ, Operation.LT, Operation.LT_EQ)
    same(parse_filter(text), g(op, "a", 1) if guarded else p(op, "a", 1))


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("5 < id", Operation.GT),
        ("5 <= id", Operation.GT_EQ),
        ("5 > id", Operation.LT),
        ("5 >= id", Operation.LT_EQ),
        ("5 = id", Operation.EQ),
        ("5 != id", Operation.NOT_EQ),
    ],
)
def test_literal_on_the_left_flips(text: str, op: Operation) -> None:
    guarded = op in (Operation.NOT_EQ, Operation.LT, Operation.LT_EQ)
    same(parse_filter(text), g(op, "id", 5) if guarded else p(op, "id", 5))


def test_in_not_in_and_null_checks() -> None:
    same(parse_filter("city IN ('Milan', 'Paris')"), p(Operation.IN, "city", "Milan", "Paris"))
    same(parse_filter("id NOT IN (1, 2)"), g(Operation.NOT_IN, "id", 1, 2))
    same(parse_filter("NOT id IN (1, 2)"), g(Operation.NOT_IN, "id", 1, 2))
    # A NULL in the list: TRUE only on a listed value, never FALSE (SQL's IN).
    same(parse_filter("id IN (1, NULL)"), p(Operation.IN, "id", 1))
    assert parse_filter("id NOT IN (1, NULL)") == AlwaysFalse()
    assert parse_filter("NOT (id NOT IN (NULL))") == AlwaysFalse()
    same(parse_filter("amount IS NULL"), p(Operation.IS_NULL, "amount"))
    same(parse_filter("amount IS NOT NULL"), p(Operation.NOT_NULL, "amount"))
    same(parse_filter("NOT amount IS NULL"), p(Operation.NOT_NULL, "amount"))


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("isnan(x)", Operation.IS_NAN),
        ("ISNAN(x)", Operation.IS_NAN),
        ("NOT isnan(x)", Operation.NOT_NAN),
        ("x IS NaN", Operation.IS_NAN),
        ("x IS NOT NAN", Operation.NOT_NAN),
        ("NOT (x IS NAN)", Operation.NOT_NAN),
    ],
)
def test_nan_checks(text: str, op: Operation) -> None:
    same(parse_filter(text), p(op, "x"))


def test_like_prefix() -> None:
    same(parse_filter("name LIKE 'ab%'"), p(Operation.STARTS_WITH, "name", "ab"))
    same(parse_filter("name NOT LIKE 'ab%'"), g(Operation.NOT_STARTS_WITH, "name", "ab"))
    same(parse_filter("NOT name LIKE 'ab%'"), g(Operation.NOT_STARTS_WITH, "name", "ab"))
    same(parse_filter("name LIKE 'città ✓%'"), p(Operation.STARTS_WITH, "name", "città ✓"))
    same(parse_filter("name LIKE '%'"), p(Operation.STARTS_WITH, "name", ""))


@pytest.mark.parametrize(
    ("written", "pattern", "escape"),
    [
        ("'%ab'", "%ab", "\\"),
        ("'a%b'", "a%b", "\\"),
        ("'a_%'", "a_%", "\\"),
        ("'_'", "_", "\\"),
        ("'a\\\\_%b'", "a\\_%b", "\\"),
        ("'a!_b_' ESCAPE '!'", "a!_b_", "!"),
    ],
)
def test_like_any_other_pattern_is_a_like_predicate(
    written: str, pattern: str, escape: str
) -> None:
    """Issue 36: patterns with ``_`` or inner ``%`` are answered (the rows decide them)."""
    same(parse_filter(f"name LIKE {written}"), p(Operation.LIKE, "name", pattern, escape))
    same(parse_filter(f"name NOT LIKE {written}"), g(Operation.NOT_LIKE, "name", pattern, escape))


def test_like_with_trailing_wildcards_is_a_prefix() -> None:
    same(parse_filter("name LIKE 'a%%'"), p(Operation.STARTS_WITH, "name", "a"))


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("'a\\\\b%'", "before 'b'"),
        ("'ab\\\\\\\\\\\\'", "ends with its escape"),
        ("'a!' ESCAPE '!'", "ends with its escape"),
    ],
)
def test_like_patterns_spark_refuses_are_refused(pattern: str, words: str) -> None:
    with pytest.raises(FilterError, match=words) as info:
        parse_filter(f"name LIKE {pattern}")
    assert "which Spark refuses too" in str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Spark: the escape character (\ or ESCAPE's) makes the next %, _ or itself literal
        ("name LIKE 'a\\_%'", p(Operation.STARTS_WITH, "name", "a_")),
        ("name LIKE 'a\\%%'", p(Operation.STARTS_WITH, "name", "a%")),
        ("name LIKE '50!%!_x%' ESCAPE '!'", p(Operation.STARTS_WITH, "name", "50%_x")),
        ("name LIKE 'a!!%' ESCAPE '!'", p(Operation.STARTS_WITH, "name", "a!")),
        # no wildcard: equality, as Spark's optimizer rewrites it
        ("name LIKE 'ab'", p(Operation.EQ, "name", "ab")),
        ("name LIKE 'a\\_b'", p(Operation.EQ, "name", "a_b")),
        ("NOT (name LIKE 'ab')", g(Operation.NOT_EQ, "name", "ab")),
        ("name NOT LIKE 'a!%%' ESCAPE '!'", g(Operation.NOT_STARTS_WITH, "name", "a%")),
    ],
)
def test_like_escapes_and_plain_values(text: str, expected: Expression) -> None:
    same(parse_filter(text), expected)


def test_like_bad_escape_and_ilike_are_refused() -> None:
    with pytest.raises(FilterError, match="single-character ESCAPE"):
        parse_filter("name LIKE 'a%' ESCAPE '!!'")
    with pytest.raises(FilterError, match=r"\"name ILIKE 'a%'\" at column 1 .*case-sensitive"):
        parse_filter("name ILIKE 'a%'")


def test_null_safe_equality() -> None:
    """``<=>`` is never NULL: FALSE where exactly one side is NULL (issue 36 audit)."""
    same(parse_filter("x <=> 1"), p(Operation.EQ, "x", 1))
    same(parse_filter("1 <=> x"), p(Operation.EQ, "x", 1))
    same(parse_filter("x <=> NULL"), p(Operation.IS_NULL, "x"))
    same(
        parse_filter("NOT (x <=> 1)"),
        Or(p(Operation.IS_NULL, "x"), g(Operation.NOT_EQ, "x", 1)),
    )


def test_is_true_and_is_false_are_null_safe_equality() -> None:
    """Spark reads ``b IS TRUE`` as ``b <=> true``: never NULL."""
    same(parse_filter("b IS TRUE"), p(Operation.EQ, "b", True))
    same(parse_filter("b IS FALSE"), p(Operation.EQ, "b", False))
    same(
        parse_filter("b IS NOT TRUE"),
        Or(p(Operation.IS_NULL, "b"), g(Operation.NOT_EQ, "b", True)),
    )


def test_and_or_not_parentheses() -> None:
    result = parse_filter("(a = 1 OR b = 2) AND NOT (c < 3)")
    same(
        result,
        And(
            Or(p(Operation.EQ, "a", 1), p(Operation.EQ, "b", 2)),
            p(Operation.GT_EQ, "c", 3),
        ),
    )
    assert parse_filter("TRUE") == AlwaysTrue()
    assert parse_filter("a = 1 AND FALSE") == AlwaysFalse()
    same(parse_filter("NOT NOT a = 1"), p(Operation.EQ, "a", 1))


def test_between() -> None:
    same(
        parse_filter("x BETWEEN 1 AND 10"),
        And(p(Operation.GT_EQ, "x", 1), g(Operation.LT_EQ, "x", 10)),
    )
    same(
        parse_filter("x NOT BETWEEN 1 AND 10"),
        Or(g(Operation.LT, "x", 1), p(Operation.GT, "x", 10)),
    )
    same(
        parse_filter("day BETWEEN DATE '2024-01-01' AND DATE '2024-01-31'"),
        And(
            p(Operation.GT_EQ, "day", dt.date(2024, 1, 1), hint="date"),
            And(
                p(Operation.NOT_NULL, "day"),
                p(Operation.LT_EQ, "day", dt.date(2024, 1, 31), hint="date"),
            ),
        ),
    )


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("loc.lat > 1", "loc.lat"),
        ("a.b.c = 1", "a.b.c"),
        ("a.b.c.d = 1", "a.b.c.d"),
        ("a.b.c.d.e.f = 1", "a.b.c.d.e.f"),
        ("`my col` = 1", "my col"),
        ('"my col" = 1', "my col"),
        ('"città" = 1', "città"),
        ("`日本`.`名前` = 1", "日本.名前"),
        ('"a""b" = 1', 'a"b'),
        ("`a``b` = 1", "a`b"),
        ("LOC.Lat = 1", "LOC.Lat"),
    ],
)
def test_names(text: str, name: str) -> None:
    result = parse_filter(text)
    assert isinstance(result, UnboundPredicate)
    assert result.term == Reference(name)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("x = 42", 42),
        ("x = -42", -42),
        ("x = - 42", -42),
        ("x = +42", 42),
        ("x = 9223372036854775808", 9223372036854775808),
        ("x = 1.50", Decimal("1.50")),
        ("x = -0.001", Decimal("-0.001")),
        (
            "x = 123456789012345678901234567890.123456789",
            Decimal("123456789012345678901234567890.123456789"),
        ),
        ("x = 1e3", 1000.0),
        ("x = -2.5E-3", -0.0025),
        ("x = 'text'", "text"),
        ("x = 'it''s'", "it's"),
        ("x = 'città ✓ 日本'", "città ✓ 日本"),
        ("x = ''", ""),
        ("x = TRUE", True),
        ("x > false", False),
        ("x = X'00ff'", b"\x00\xff"),
        ("x = 5L", 5),
        ("x = 2.5D", 2.5),
        ("x = CAST('1.25' AS DECIMAL(5, 2))", Decimal("1.25")),
        ("x = CAST(7 AS BIGINT)", 7),
    ],
)
def test_literals(text: str, value: Any) -> None:
    result = parse_filter(text)
    assert isinstance(result, UnboundPredicate)
    lit = result.literals[0]
    assert lit.value == value
    assert type(lit.value) is type(value)
    assert lit.type_hint is None


def test_decimal_literal_keeps_its_digits() -> None:
    result = parse_filter("x = 1.50")
    assert isinstance(result, UnboundPredicate)
    assert str(result.literals[0].value) == "1.50"
    assert result.literals[0].text == "1.50"


def test_nan_literal_from_cast() -> None:
    result = parse_filter("x = CAST('NaN' AS DOUBLE)")
    assert isinstance(result, UnboundPredicate)
    assert math.isnan(result.literals[0].value)
    result = parse_filter("x = 'NaN'")  # a string; binding to a float column refuses it
    assert isinstance(result, UnboundPredicate)
    assert result.literals[0].value == "NaN"


@pytest.mark.parametrize(
    ("text", "value", "hint"),
    [
        ("d = DATE '2024-08-09'", dt.date(2024, 8, 9), "date"),
        ("d = date'2024-08-09'", dt.date(2024, 8, 9), "date"),
        ("t = TIME '10:15:30.5'", "10:15:30.5", "time"),
        ("ts = TIMESTAMP '2024-08-09 10:00:00'", "2024-08-09 10:00:00", "timestamp"),
        ("ts = TIMESTAMP '2024-08-09T10:00:00+02:00'", "2024-08-09T10:00:00+02:00", "timestamp"),
        ("ts = TIMESTAMP_LTZ '2024-08-09 10:00:00'", "2024-08-09 10:00:00", "timestamp"),
        ("ts = TIMESTAMP_NTZ '2024-08-09 10:00:00'", "2024-08-09 10:00:00", "timestamp_ntz"),
        ("ts = CAST('2024-08-09' AS DATE)", dt.date(2024, 8, 9), "date"),
    ],
)
def test_typed_literals(text: str, value: Any, hint: str) -> None:
    result = parse_filter(text)
    assert isinstance(result, UnboundPredicate)
    assert (result.literals[0].value, result.literals[0].type_hint) == (value, hint)


def test_literal_text_is_what_the_user_wrote() -> None:
    result = parse_filter("d = DATE '2024-08-09' AND x = -1.5e3")
    assert isinstance(result, And)
    assert isinstance(result.left, UnboundPredicate)
    assert isinstance(result.right, UnboundPredicate)
    assert result.left.literals[0].text == "DATE '2024-08-09'"
    assert result.right.literals[0].text == "-1.5e3"


def test_bare_boolean_column() -> None:
    same(parse_filter("active"), p(Operation.EQ, "active", True))
    same(parse_filter("NOT active"), g(Operation.NOT_EQ, "active", True))


def test_backslash_escapes_like_spark() -> None:
    result = parse_filter(r"x = 'a\'b'")
    assert isinstance(result, UnboundPredicate)
    assert result.literals[0].value == "a'b"


# ---------------------------------------------------------------------------- errors


def _error(text: str) -> str:
    with pytest.raises(FilterError) as info:
        parse_filter(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment", "words"),
    [
        ("x = NULL", "'x = NULL' at column 1", "write x IS NULL"),
        ("a = 1 AND x != NULL", "'x != NULL' at column 11", "IS NOT NULL"),
        ("a = 1 AND x + 1 > 2", "'x + 1' at column 11", "arithmetic"),
        ("a = 1 AND\n  x * 2 > 2", "'x * 2' at line 2, column 3", "arithmetic"),
        ("upper(name) = 'A'", "'upper(name)' at column 1", "isnan(column)"),
        ("f(x) = 1", "'f(x)' at column 1", "function"),
        ("a = 1 OR coalesce(b, 1) > 0", "'coalesce(b, 1)' at column 10", "function"),
        ("a = b", "'a = b' at column 1", "two columns"),
        ("loc.lat < loc.lon", "'loc.lat < loc.lon' at column 1", "two columns"),
        ("x IN (SELECT id FROM t)", "'(SELECT id FROM t)' at column 6", "subquery"),
        ("x = (SELECT 1)", "'(SELECT 1)' at column 5", "subquery"),
        ("1 = 1", "'1 = 1' at column 1", "names no column"),
        ("x = NaN", "'x = NaN' at column 1", "col = 'NaN'"),
        ("x = 1 y", "'y' at column 7", "AND or OR"),
        ("x IS 5", "'x IS 5' at column 1", "IS [NOT] NULL"),
        ("(x = 1) IS TRUE", "'(x = 1) IS TRUE' at column 1", "boolean column"),
        ("x = DATE '2024-13-01'", "\"DATE '2024-13-01'\" at column 5", "DATE literal"),
        ("x = TIMESTAMP_NTZ '2024-01-01 10:00+02:00'", "TIMESTAMP_NTZ", "no zone offset"),
        ("x = TIME '25:00'", "\"TIME '25:00'\"", "TIME literal"),
        ("x = 1e999", "'1e999' at column 5", "too large"),
        ("x <=> y", "'x <=> y' at column 1", "null-safely"),
        ("x = [1, 2]", "is an array", "IN"),
        ("x RLIKE 'a.*'", "\"x RLIKE 'a.*'\" at column 1", "regular-expression match"),
        ("x BETWEEN y AND 3", "'y' at column 11", "column where a value is needed"),
    ],
)
def test_errors_quote_the_offending_part(text: str, fragment: str, words: str) -> None:
    message = _error(text)
    assert fragment in message, message
    assert words in message, message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("x = ", "at column 3"),
        ("x = (1", "at column 6"),
        ("a = 1 AND AND b = 2", "at column"),
        ("x === 1", "at column"),
    ],
)
def test_syntax_errors_report_sqlglot_position(text: str, where: str) -> None:
    message = _error(text)
    assert message.startswith(f"The filter {text!r} is not valid SQL")
    assert where in message


def test_unterminated_string() -> None:
    message = _error("x = 'abc")
    assert "unterminated" in message and "x = 'abc" in message


def test_multiple_statements() -> None:
    assert "more than one statement" in _error("x = 1; y = 2")


def test_messages_are_one_sentence() -> None:
    for text in ["x = NULL", "x + 1 > 2", "x = ", "a = b"]:
        message = _error(text)
        assert message.endswith("."), message
        assert "Traceback" not in message
        assert not re.search(r"<class '", message), message
