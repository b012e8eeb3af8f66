"""Binding filters to a schema: names, types and Java's literal conversions."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest

from icecore.errors import FilterError
from icecore.expressions.bind import bind
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Literal,
    Not,
    Operation,
    Reference,
    UnboundPredicate,
)
from icecore.expressions.parser import parse_filter
from icecore.schema import Schema, schema_to_json
from icecore.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)
from icecore.values import iso_to_micros, iso_to_nanos

SCHEMA = Schema(
    (
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "i", IntegerType()),
        NestedField(3, "f", FloatType()),
        NestedField(4, "d", DoubleType()),
        NestedField(5, "amount", DecimalType(9, 2)),
        NestedField(6, "name", StringType()),
        NestedField(7, "day", DateType()),
        NestedField(8, "at", TimeType()),
        NestedField(9, "ts", TimestampType()),
        NestedField(10, "tstz", TimestamptzType()),
        NestedField(11, "ts_ns", TimestampNanoType()),
        NestedField(12, "tstz_ns", TimestamptzNanoType()),
        NestedField(13, "u", UUIDType()),
        NestedField(14, "b", BinaryType()),
        NestedField(15, "fx", FixedType(3)),
        NestedField(16, "flag", BooleanType()),
        NestedField(
            17,
            "loc",
            StructType(
                (
                    NestedField(18, "lat", DoubleType(), required=True),
                    NestedField(19, "lon", DoubleType()),
                )
            ),
        ),
        NestedField(
            20,
            "req",
            StructType((NestedField(21, "inner", IntegerType(), required=True),)),
            required=True,
        ),
        NestedField(22, "tags", ListType(23, StringType())),
        NestedField(
            24,
            "points",
            ListType(25, StructType((NestedField(26, "x", IntegerType(), required=True),))),
        ),
        NestedField(27, "props", MapType(28, StringType(), 29, StringType())),
        NestedField(30, "Città", StringType()),
        NestedField(31, "my col", IntegerType()),
        NestedField(32, "nothing", UnknownType()),
    ),
    schema_id=0,
)


def bound(text: str, schema: Schema = SCHEMA, case_sensitive: bool = False) -> Expression:
    """The bound filter, without the IS NOT NULL guard SQL's meaning puts on one predicate.

    ``c != v`` means ``c IS NOT NULL AND c != v`` (see test_sql_semantics.py); these tests
    are about how the predicate itself binds, so a guard on the same column is dropped.
    """
    return bind(schema, _unguarded(parse_filter(text)), case_sensitive)


def _unguarded(expr: Expression) -> Expression:
    if (
        isinstance(expr, And)
        and isinstance(expr.left, UnboundPredicate)
        and expr.left.op is Operation.NOT_NULL
        and isinstance(expr.right, UnboundPredicate)
        and expr.right.term == expr.left.term
    ):
        return expr.right
    return expr


def pred(text: str) -> BoundPredicate:
    result = bound(text)
    assert isinstance(result, BoundPredicate), result
    return result


# ---------------------------------------------------------------------------- names


def test_binds_names_case_insensitively_by_default() -> None:
    p = pred("ID = 5")
    assert (p.term.field_id, p.term.name, p.op, p.values) == (1, "id", Operation.EQ, (5,))


def test_case_sensitive_binding_refuses_wrong_case() -> None:
    with pytest.raises(FilterError, match="'ID' is not in the table's schema; did you mean 'id'"):
        bound("ID = 5", case_sensitive=True)


def test_nested_struct_field_and_quoted_unicode_names() -> None:
    assert pred("loc.lat > 1.5").term.field_id == 18
    assert pred("LOC.LAT > 1.5").term.name == "loc.lat"
    assert pred("`città` = 'Milano'").term.field_id == 30
    assert pred('"my col" = 1').term.field_id == 31


def test_unknown_column_suggests_close_names() -> None:
    with pytest.raises(FilterError, match=r"Column 'nmae' .*did you mean 'name'"):
        bound("nmae = 'x'")


def test_unknown_column_without_close_name_lists_columns() -> None:
    with pytest.raises(FilterError, match=r"'zzzzzz' is not in the table's schema; its columns"):
        bound("zzzzzz = 1")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("loc = 1", "struct"),
        ("loc IN (1, 2)", "struct"),
        ("tags = 'a'", "list"),
        ("props IN ('a', 'b')", "map"),
    ],
)
def test_nested_columns_cannot_be_filtered(text: str, kind: str) -> None:
    with pytest.raises(FilterError, match=f"is a {kind}"):
        bound(text)


def test_a_refused_struct_comparison_names_a_field_as_a_filter_writes_it() -> None:
    with pytest.raises(FilterError) as refused:
        bound("loc = 1")
    assert "IS NULL / IS NOT NULL" in str(refused.value)
    assert "such as loc.lat." in str(refused.value)


@pytest.mark.parametrize(
    ("text", "op", "name"),
    [
        ("loc IS NULL", Operation.IS_NULL, "loc"),
        ("loc IS NOT NULL", Operation.NOT_NULL, "loc"),
        ("NOT (LOC IS NULL)", Operation.NOT_NULL, "loc"),
        ("tags IS NULL", Operation.IS_NULL, "tags"),
        ("props IS NOT NULL", Operation.NOT_NULL, "props"),
    ],
)
def test_null_checks_on_a_struct_list_or_map_bind_to_it(
    text: str, op: Operation, name: str
) -> None:
    p = pred(text)
    assert (p.op, p.term.name) == (op, name)


def test_null_checks_on_a_required_struct_fold_like_java() -> None:
    assert bound("req IS NULL") == AlwaysFalse()
    assert bound("req IS NOT NULL") == AlwaysTrue()


@pytest.mark.parametrize("text", ["tags.element = 'a'", "points.x = 1", "props.key = 'a'"])
def test_fields_inside_lists_and_maps_cannot_be_filtered(text: str) -> None:
    with pytest.raises(FilterError, match="inside a list or map"):
        bound(text)


# ---------------------------------------------------------------------------- null checks


def test_null_checks_on_required_columns_fold_like_java() -> None:
    assert bound("id IS NULL") == AlwaysFalse()
    assert bound("id IS NOT NULL") == AlwaysTrue()
    assert bound("req.inner IS NULL") == AlwaysFalse()
    # A required field inside an optional struct can still be null (Java checks ancestors).
    assert pred("loc.lat IS NULL").op is Operation.IS_NULL
    assert pred("name IS NOT NULL").op is Operation.NOT_NULL
    assert bound("NOT (id IS NULL)") == AlwaysTrue()


def test_null_checks_on_unknown_column() -> None:
    assert bound("nothing IS NULL") == AlwaysTrue()
    assert bound("nothing IS NOT NULL") == AlwaysFalse()


def test_isnan_only_on_floating_columns() -> None:
    assert pred("isnan(f)").op is Operation.IS_NAN
    assert pred("d IS NOT NAN").op is Operation.NOT_NAN
    with pytest.raises(FilterError, match="isnan needs a float or double column.*'id' is long"):
        bound("isnan(id)")


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("d = CAST('NaN' AS DOUBLE)", Operation.IS_NAN),
        ("d = 'NaN'", Operation.IS_NAN),
        ("f < 'nan'", Operation.NOT_NAN),  # every value but NaN is below NaN
        ("d >= 'NaN'", Operation.IS_NAN),
    ],
)
def test_comparison_with_nan_says_it_with_nan_checks(text: str, op: Operation) -> None:
    # Spark SQL answers these (NaN = NaN, NaN above all); Iceberg has no NaN literal.
    assert pred(text).op is op


def test_comparison_with_nan_on_a_column_without_nan_is_refused() -> None:
    with pytest.raises(FilterError, match=r"'i' is compared with NaN.* cannot hold NaN"):
        bound("i = 'NaN'")


# ---------------------------------------------------------------------------- integers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Java's LongLiteral.to(INTEGER) -> AboveMax / BelowMin and the bind fold.
        ("i < 3e10", AlwaysTrue()),
        ("i <= 3000000000", AlwaysTrue()),
        ("i > 3e10", AlwaysFalse()),
        ("i >= 3e10", AlwaysFalse()),
        ("i = 3e10", AlwaysFalse()),
        ("i != 3e10", AlwaysTrue()),
        ("i > -3000000000", AlwaysTrue()),
        ("i < -3000000000", AlwaysFalse()),
        ("i = -3000000000", AlwaysFalse()),
        ("i != -3000000000", AlwaysTrue()),
        ("id < 9223372036854775808", AlwaysTrue()),
        ("i IN (3000000000, 4000000000)", AlwaysFalse()),
        ("i NOT IN (3000000000)", AlwaysTrue()),
    ],
)
def test_out_of_range_literals_fold(text: str, expected: Expression) -> None:
    assert bound(text) == expected


def test_in_range_values_and_edges() -> None:
    assert pred("i = 2147483647").values == (2147483647,)
    assert pred("i = -2147483648").values == (-2147483648,)
    assert bound("i > 2147483648") == AlwaysFalse()
    assert pred("id = 3e10").values == (30000000000,)
    assert isinstance(pred("id = 3e10").value, int)
    assert pred("id = '42'").values == (42,)  # a number written as a string


@pytest.mark.parametrize(
    ("text", "op", "value"),
    [
        ("i < 2.5", Operation.LT_EQ, 2),
        ("i <= 2.5", Operation.LT_EQ, 2),
        ("i > 2.5", Operation.GT_EQ, 3),
        ("i >= 2.5", Operation.GT_EQ, 3),
        ("i < -2.5", Operation.LT_EQ, -3),
        ("i > -2.5", Operation.GT_EQ, -2),
        ("i = 2.0", Operation.EQ, 2),
    ],
)
def test_fractional_literal_for_integer_column_keeps_meaning(
    text: str, op: Operation, value: int
) -> None:
    p = pred(text)
    assert (p.op, p.values) == (op, (value,))


def test_fractional_equality_on_integer_column_folds() -> None:
    assert bound("i = 2.5") == AlwaysFalse()
    assert bound("i != 2.5") == AlwaysTrue()
    assert pred("i IN (1, 2.5, 3)").values == (1, 3)


@pytest.mark.parametrize("text", ["i = 'abc'", "i = true", "i = DATE '2024-01-01'", "i = X'00'"])
def test_non_numbers_are_refused_for_integer_columns(text: str) -> None:
    with pytest.raises(FilterError, match=r"cannot be compared with column 'i' of type int"):
        bound(text)


# ---------------------------------------------------------------------------- decimals


def test_decimal_literals_are_rescaled_exactly() -> None:
    p = pred("amount = 1.5")
    assert p.values == (Decimal("1.50"),)
    assert p.value.as_tuple().exponent == -2
    assert pred("amount = 3").value.as_tuple().exponent == -2
    assert pred("amount = '12.30'").values == (Decimal("12.30"),)
    assert pred("amount < 1.5e2").values == (Decimal("150.00"),)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("amount = 1.005", AlwaysFalse()),
        ("amount != 1.005", AlwaysTrue()),
        ("amount < 10000000", AlwaysTrue()),  # decimal(9,2) holds at most 9999999.99
        ("amount > 10000000", AlwaysFalse()),
        ("amount <= 9999999.995", AlwaysTrue()),
        ("amount > -9999999.995", AlwaysTrue()),
        ("amount = 123456789012345678901234567890", AlwaysFalse()),
    ],
)
def test_decimal_out_of_range_or_scale_folds(text: str, expected: Expression) -> None:
    assert bound(text) == expected


def test_decimal_with_too_many_fraction_digits_keeps_meaning() -> None:
    lt, gt = pred("amount < 1.005"), pred("amount > 1.005")
    assert (lt.op, lt.values) == (Operation.LT_EQ, (Decimal("1.00"),))
    assert (gt.op, gt.values) == (Operation.GT_EQ, (Decimal("1.01"),))
    neg = pred("amount > -1.005")
    assert (neg.op, neg.values) == (Operation.GT_EQ, (Decimal("-1.00"),))
    assert pred("amount = 9999999.99").values == (Decimal("9999999.99"),)


# ---------------------------------------------------------------------------- floats


def test_float_column_literals_are_rounded_to_32_bits() -> None:
    import struct

    expected = struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert pred("f = 0.1").values == (expected,)
    assert pred("d = 0.1").values == (0.1,)
    assert pred("d = 1").values == (1.0,)
    assert isinstance(pred("d = 1").value, float)


def test_double_beyond_float_range_folds_like_java() -> None:
    assert bound("f < 1e39") == AlwaysTrue()
    assert bound("f = 1e39") == AlwaysFalse()
    assert bound("f > -1e39") == AlwaysTrue()
    assert pred("f < CAST('Infinity' AS DOUBLE)").values == (math.inf,)


def test_negative_zero_is_kept_distinct_in_sets() -> None:
    p = pred("d IN (0.0e0, -0.0e0)")
    assert p.op is Operation.IN and len(p.values) == 2


# ---------------------------------------------------------------------------- dates and times


def test_date_literals() -> None:
    assert pred("day = '2024-08-09'").values == (dt.date(2024, 8, 9),)
    assert pred("day = DATE '2024-08-09'").values == (dt.date(2024, 8, 9),)
    # Java's IntegerLiteral.to(DATE): a number is days from the epoch.
    assert pred("day = 19944").values == (dt.date(2024, 8, 9),)
    # Spark compares a date with a timestamp as the date's midnight: past midnight, the
    # timestamp lies between two days (Java's TimestampLiteral.to(DATE) would floor it).
    assert pred("day >= TIMESTAMP_NTZ '2024-08-09 23:59:59'").values == (dt.date(2024, 8, 10),)
    assert pred("day < TIMESTAMP '1969-12-31 23:00:00'").values == (dt.date(1969, 12, 31),)
    assert pred("day < TIMESTAMP '1969-12-31 23:00:00'").op is Operation.LT_EQ
    assert pred("day >= TIMESTAMP '2024-08-09 00:00:00'").values == (dt.date(2024, 8, 9),)
    assert bound("day = TIMESTAMP '2024-08-09 10:00:00'") == AlwaysFalse()
    # Spark casts a string to a date by its leading yyyy-mm-dd, time ignored.
    assert pred("day = '2024-08-09 10:00:00'").values == (dt.date(2024, 8, 9),)
    assert pred("day < '2024-08-09T23:00:00'").values == (dt.date(2024, 8, 9),)


@pytest.mark.parametrize("text", ["day = 'today'", "day = 1.5", "day = '2024-13-01'"])
def test_bad_date_literals(text: str) -> None:
    with pytest.raises(FilterError, match=r"cannot be compared with column 'day' of type date"):
        bound(text)


def test_time_literals() -> None:
    assert pred("at = '10:15:30'").values == (36_930_000_000,)
    assert pred("at < TIME '00:00:01.5'").values == (1_500_000,)
    with pytest.raises(FilterError, match=r"'25:00' cannot be compared with column 'at'"):
        bound("at = '25:00'")


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("ts >= '2024-08-09'", "2024-08-09T00:00:00"),
        ("ts >= '2024-08-09 10:00:00'", "2024-08-09T10:00:00"),
        ("ts >= '2024-08-09T10:00:00.123456'", "2024-08-09T10:00:00.123456"),
        ("ts >= DATE '2024-08-09'", "2024-08-09T00:00:00"),
        ("ts >= TIMESTAMP_NTZ '2024-08-09 10:00'", "2024-08-09T10:00:00"),
        ("tstz >= '2024-08-09T10:00:00+02:00'", "2024-08-09T08:00:00"),
        ("tstz >= '2024-08-09T10:00:00Z'", "2024-08-09T10:00:00"),
        ("tstz >= '2024-08-09 10:00:00'", "2024-08-09T10:00:00"),
        ("tstz >= TIMESTAMP '2024-08-09 10:00:00-01:30'", "2024-08-09T11:30:00"),
        ("tstz >= DATE '2024-08-09'", "2024-08-09T00:00:00"),
    ],
)
def test_timestamp_literals_in_micros(text: str, iso: str) -> None:
    assert pred(text).values == (iso_to_micros(iso),)


def test_timestamp_literals_in_nanos() -> None:
    nanos = iso_to_nanos("2024-08-09T10:00:00.123456789")
    assert pred("ts_ns = '2024-08-09 10:00:00.123456789'").values == (nanos,)
    assert pred("tstz_ns = '2024-08-09T12:00:00.123456789+02:00'").values == (nanos,)
    # Java's LongLiteral.to(TIMESTAMP_NANO) assumes the number is in microseconds.
    assert pred("ts_ns = 5").values == (5000,)
    assert pred("ts = 5").values == (5,)


def test_nanosecond_literal_on_microsecond_column_keeps_meaning() -> None:
    base = iso_to_micros("2024-08-09T10:00:00.123456")
    assert bound("ts = '2024-08-09 10:00:00.1234567'") == AlwaysFalse()
    gt = pred("ts > '2024-08-09 10:00:00.1234567'")
    assert (gt.op, gt.values) == (Operation.GT_EQ, (base + 1,))


def test_zone_offset_refused_for_timestamp_without_zone() -> None:
    with pytest.raises(FilterError, match="no time zone, so drop the offset"):
        bound("ts = '2024-08-09T10:00:00+02:00'")
    with pytest.raises(FilterError, match="no time zone"):
        bound("ts = TIMESTAMP '2024-08-09T10:00:00+02:00'")


@pytest.mark.parametrize("text", ["ts = 'yesterday'", "ts = TIME '10:00'", "ts = true"])
def test_bad_timestamp_literals(text: str) -> None:
    with pytest.raises(FilterError, match=r"cannot be compared with column 'ts' of type timestamp"):
        bound(text)


# ---------------------------------------------------------------------------- other types


def test_string_uuid_binary_boolean_literals() -> None:
    assert pred("name = 'città ✓'").values == ("città ✓",)
    u = "f79c3e09-677c-4bbd-a479-3f349cb785e7"
    assert pred(f"u = '{u}'").values == (uuid.UUID(u),)
    assert pred("b = X'00FF'").values == (b"\x00\xff",)
    assert pred("fx = X'010203'").values == (b"\x01\x02\x03",)
    assert pred("flag = true").values == (True,)
    assert pred("flag").values == (True,)
    assert pred("flag = 'FALSE'").values == (False,)


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("name = 5", "name"),
        ("name = DATE '2024-01-01'", "name"),
        ("u = 'not-a-uuid'", "u"),
        ("b = 'abc'", "b"),
        ("fx = X'01'", "fx"),
        ("flag = 1", "flag"),
        ("nothing = 1", "nothing"),
    ],
)
def test_type_mismatches_name_literal_and_column(text: str, column: str) -> None:
    with pytest.raises(
        FilterError, match=rf"The value .* cannot be compared with column '{column}'"
    ):
        bound(text)


def test_starts_with_only_on_strings() -> None:
    p = pred("name LIKE 'ab%'")
    assert (p.op, p.values) == (Operation.STARTS_WITH, ("ab",))
    assert pred("name NOT LIKE 'ab%'").op is Operation.NOT_STARTS_WITH
    with pytest.raises(FilterError, match="LIKE 'ab%' needs a string column, but 'id' is long"):
        bound("id LIKE 'ab%'")


# ---------------------------------------------------------------------------- sets


def test_in_deduplicates_after_conversion_and_keeps_order() -> None:
    p = pred("id IN (3, 1, 3, 1.0, '2')")
    assert (p.op, p.values) == (Operation.IN, (3, 1, 2))
    assert pred("amount IN (1.5, 1.50, 2)").values == (Decimal("1.50"), Decimal("2.00"))


def test_in_with_one_value_becomes_equality() -> None:
    p = pred("id IN (5, 5)")
    assert (p.op, p.values) == (Operation.EQ, (5,))
    q = pred("id NOT IN (5)")
    assert (q.op, q.values) == (Operation.NOT_EQ, (5,))
    r = pred("i IN (5, 3000000000)")
    assert (r.op, r.values) == (Operation.EQ, (5,))


def test_null_inside_in_is_refused() -> None:
    expr = UnboundPredicate(Operation.IN, Reference("id"), (Literal(1), Literal(None)))
    with pytest.raises(FilterError, match="compared with NULL"):
        bind(SCHEMA, expr)


def test_boolean_structure_is_kept_and_folded() -> None:
    result = bound("id = 1 AND NOT (name = 'a' OR i < 5)")
    assert isinstance(result, And)
    assert not isinstance(result.right, Not)  # NOT is resolved by polarity when parsing
    assert bound("id = 1 AND NOT (name = 'a' OR i < 3e10)") == AlwaysFalse()
    assert bound("id = 1 AND i > 3e10") == AlwaysFalse()
    assert pred("id = 1 OR i > 3e10").op is Operation.EQ


def test_already_bound_predicate_is_refused() -> None:
    with pytest.raises(FilterError, match="already bound"):
        bind(SCHEMA, bound("id = 1"))


# ---------------------------------------------------------------------------- PyIceberg peer


_PEER_FILTERS = [
    "id = 5",
    "id != 5",
    "i < 7",
    "i >= -7",
    "d > 1.5",
    "f <= 2.5",
    "name = 'città'",
    "name LIKE 'ab%'",
    "name NOT LIKE 'ab%'",
    "id IN (1, 2, 3)",
    "id NOT IN (1, 2)",
    "name IS NULL",
    "name IS NOT NULL",
    "id IS NULL",
    "d IS NAN",
    "f IS NOT NAN",
    "loc.lat > 10.5",
    "flag = true",
    "day = '2024-08-09'",
    "ts = '2024-08-09T10:00:00'",
    "tstz = '2024-08-09T10:00:00+02:00'",
    "amount = 12.34",
    "u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'",
    "i < 3000000000",
    "i = 3000000000",
]


def _peer_value(value: Any) -> Any:
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days  # PyIceberg keeps dates as days
    if isinstance(value, uuid.UUID):
        return value.bytes  # and UUIDs as 16 bytes
    return value


def _peer_shape(expr: Any) -> Any:
    """(class name, field id, values) of a PyIceberg bound expression."""
    from pyiceberg.expressions import AlwaysFalse as PeerFalse
    from pyiceberg.expressions import AlwaysTrue as PeerTrue
    from pyiceberg.expressions import BoundSetPredicate, BoundUnaryPredicate

    if isinstance(expr, PeerTrue | PeerFalse):
        return type(expr).__name__
    field_id = expr.term.ref().field.field_id
    if isinstance(expr, BoundUnaryPredicate):
        return (type(expr).__name__, field_id, ())
    if isinstance(expr, BoundSetPredicate):
        return (type(expr).__name__, field_id, tuple(sorted(lit.value for lit in expr.literals)))
    return (type(expr).__name__, field_id, (expr.literal.value,))


_NAMES = {
    Operation.IS_NULL: "BoundIsNull",
    Operation.NOT_NULL: "BoundNotNull",
    Operation.IS_NAN: "BoundIsNaN",
    Operation.NOT_NAN: "BoundNotNaN",
    Operation.LT: "BoundLessThan",
    Operation.LT_EQ: "BoundLessThanOrEqual",
    Operation.GT: "BoundGreaterThan",
    Operation.GT_EQ: "BoundGreaterThanOrEqual",
    Operation.EQ: "BoundEqualTo",
    Operation.NOT_EQ: "BoundNotEqualTo",
    Operation.IN: "BoundIn",
    Operation.NOT_IN: "BoundNotIn",
    Operation.STARTS_WITH: "BoundStartsWith",
    Operation.NOT_STARTS_WITH: "BoundNotStartsWith",
}


def _our_shape(expr: Expression) -> Any:
    if isinstance(expr, AlwaysTrue | AlwaysFalse):
        return type(expr).__name__
    assert isinstance(expr, BoundPredicate)
    values = tuple(_peer_value(v) for v in expr.values)
    if expr.op.is_set:
        values = tuple(sorted(values))
    return (_NAMES[expr.op], expr.term.field_id, values)


@pytest.fixture(scope="module")
def peer_schema() -> Any:
    from pyiceberg.schema import Schema as PeerSchema

    peer_fields = [f for f in schema_to_json(SCHEMA)["fields"] if f["type"] not in ("unknown",)]
    obj = {"type": "struct", "schema-id": 0, "fields": peer_fields}
    return PeerSchema.model_validate_json(json.dumps(obj))


@pytest.mark.parametrize("text", _PEER_FILTERS)
def test_binding_matches_pyiceberg(text: str, peer_schema: Any) -> None:
    from pyiceberg.expressions.parser import parse
    from pyiceberg.expressions.visitors import bind as peer_bind

    ours = _our_shape(bound(text))
    peer = _peer_shape(peer_bind(peer_schema, parse(text), case_sensitive=False))
    assert ours == peer
