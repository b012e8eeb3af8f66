"""Bind unbound filters to a schema: names -> fields, literals -> the columns' types.

Spec "Scan Planning": a filter is bound to the table schema before it is projected and
evaluated. Binding follows Iceberg Java's ``UnboundPredicate.bind`` and the conversions of
``Literals`` (``Literal.to(Type)``):

* a literal outside the column type's range becomes Java's ``AboveMax``/``BelowMin`` and
  the predicate folds: ``int_col < 3e10`` is always true, ``int_col = 3e10`` always false,
  ``int_col != 3e10`` always true; IN/NOT IN drop such values (and fold when none is left);
* ``IS NULL`` on a required column whose enclosing structs are all required is always
  false, ``IS NOT NULL`` always true; on a v3 ``unknown`` column the reverse;
* ``IS [NOT] NULL`` is the one predicate a struct, list or map column takes (``p.q IS
  NULL``): Spark pushes ``is_null(p.q)`` and Java binds it to the column's field; the
  column is NULL where it (or an enclosing struct) is NULL, whatever its fields or elements
  hold (an empty list is not NULL). Fields inside lists and maps are refused;
* ``isnan`` only on float and double columns; LIKE 'prefix%' only on string columns;
* a comparison with NaN on a float column (``f = 'NaN'``, which Spark SQL answers; Java's
  ``Literals.from`` rejects NaN) becomes what Iceberg can say under Spark's order, where
  NaN = NaN and NaN is above every value: ``is_nan``, ``not_nan``, true or false
  (:func:`~icecore.expressions.sql_semantics.nan_comparison`); NaN on other columns is
  refused;
* IN with one distinct value becomes ``=`` (NOT IN becomes ``!=``), values deduplicated.

Where Java converts a literal inexactly, Icecore keeps the predicate's meaning instead: a
value between two representable ones (``2.5`` for an int column, ``1.005`` for a
``decimal(9,2)``, a nanosecond string for a microsecond timestamp) turns ``<``/``<=`` into
``<=`` the value below and ``>``/``>=`` into ``>=`` the value above, ``=`` into false and
``!=`` into true, and IN drops it. Java keeps a decimal literal's own scale (or rounds a
double HALF_UP) and rejects doubles for int columns.

Icecore also accepts, where Java would refuse, literals a SQL user expects to work: date
strings and ``DATE`` literals for timestamp columns (midnight), zone-less strings for
``timestamptz`` columns (read as UTC), numbers written as strings for numeric columns and
decimals for float columns.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import math
import re
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from icecore.errors import (
    FilterError,
    IcecoreError,
    InvalidMetadata,
    Unsupported,
    ValidationError,
)
from icecore.expressions.like import LikePatternError, like_tokens
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    BoundPredicate,
    BoundReference,
    Expression,
    ExpressionVisitor,
    Literal,
    Operation,
    UnboundPredicate,
    and_,
    depth,
    flatten,
    not_,
    or_,
    visit,
)
from icecore.expressions.sql_semantics import nan_comparison, nan_membership
from icecore.schema import Schema
from icecore.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedType,
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
from icecore.values import (
    EPOCH_DATE,
    MICROS_PER_DAY,
    NANOS_PER_DAY,
    NANOS_PER_MICRO,
    datetime_to_micros,
    days_to_date,
    iso_to_nanos,
    iso_to_time_micros,
    unscaled_to_decimal,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
FLOAT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
"""Java's ``Float.MAX_VALUE`` as a Python float."""

_DATE_HEAD = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[ T].*)?")
_TIMESTAMP_TYPES = (TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)
_ZONED = (TimestamptzType, TimestamptzNanoType)
_NANO = (TimestampNanoType, TimestamptzNanoType)


class _Bound(Exception):  # noqa: N818 - a signal, not an error
    """Java's ``AboveMax``/``BelowMin``: the literal lies beyond every value of the type."""

    def __init__(self, above: bool) -> None:
        super().__init__("above max" if above else "below min")
        self.above = above


@dataclass(frozen=True, slots=True)
class _Between:
    """A literal that falls strictly between two adjacent values of the column type."""

    below: Any
    above: Any


def bind(
    schema: Schema, expr: Expression, case_sensitive: bool = False, *, as_pushed: bool = False
) -> Expression:
    """Bind ``expr`` to ``schema`` as Iceberg Java's ``Binder.bind`` does.

    Args:
        schema: the schema whose fields the filter names (the snapshot's schema).
        expr: an unbound expression (from :func:`~icecore.expressions.parser.parse_filter`).
        case_sensitive: match column names exactly; by default case is ignored.
        as_pushed: bind the filter Spark pushes for planning
            (:func:`~icecore.expressions.sql_semantics.pushed`): a NaN that Iceberg's Spark
            converter cannot turn into a predicate (an ordering comparison or an IN list with
            NaN on a float column; only ``= NaN``/``!= NaN`` become is_nan/not_nan) leaves
            the predicate out (true), as Spark then pushes nothing for it.

    Returns:
        A bound expression, constant-folded where binding decides a predicate.

    Raises:
        FilterError: a column is unknown or cannot be filtered, a literal does not fit
            the column's type (the message names the column and the literal), or the
            expression nests deeper than :data:`MAX_DEPTH`.
    """
    expr = flatten(expr)
    if depth(expr) > MAX_DEPTH:
        raise FilterError(
            f"The filter nests AND, OR and NOT more than {MAX_DEPTH} levels deep (after long "
            "chains of AND or OR are balanced), the most a filter may nest; join the "
            "conditions in fewer levels."
        )
    return visit(expr, _Binder(schema, case_sensitive, as_pushed))


MAX_DEPTH = 100
"""Levels of AND, OR and NOT a bound filter may nest once chains are balanced.

Binding balances every chain (:func:`~icecore.expressions.model.flatten`), so 100,000
conditions joined by OR nest 17 levels; only conditions nested inside each other count.
Evaluators compile the tree with a few Python frames per level, and this bound keeps them
far from Python's recursion limit. A parsed filter cannot come near it
(:data:`~icecore.expressions.parser.MAX_NESTING`); an expression built by hand can.
"""


class _Binder(ExpressionVisitor[Expression]):
    def __init__(self, schema: Schema, case_sensitive: bool, as_pushed: bool = False) -> None:
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.as_pushed = as_pushed

    def always_true(self) -> Expression:
        return AlwaysTrue()

    def always_false(self) -> Expression:
        return AlwaysFalse()

    def not_(self, child: Expression) -> Expression:
        return not_(child)

    def and_(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def or_(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def bound_predicate(self, pred: BoundPredicate) -> Expression:
        raise FilterError(
            f"The predicate {pred} is already bound; bind the unbound filter instead."
        )

    def unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        null_check = pred.op in (Operation.IS_NULL, Operation.NOT_NULL)
        ref = self._resolve(pred.term.name, nested_ok=null_check)
        if pred.op.is_unary:
            return self._unary(pred.op, ref)
        if pred.op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
            return self._starts_with(pred, ref)
        if pred.op in (Operation.LIKE, Operation.NOT_LIKE):
            return self._like(pred, ref)
        if pred.op.is_set:
            return self._set(pred, ref)
        return self._comparison(pred.op, ref, pred.literals[0])

    # ---------------------------------------------------------------- names

    def _resolve(self, name: str, *, nested_ok: bool = False) -> BoundReference:
        """Java's ``NamedReference.bind``, refusing what Iceberg filters cannot reach.

        ``nested_ok``: a struct, list or map column is taken (for ``IS [NOT] NULL``, the only
        predicate Java evaluates on one).
        """
        try:
            field = self.schema.find_field_by_name(name, self.case_sensitive)
        except InvalidMetadata as e:
            raise FilterError(
                f"Column {name!r} matches more than one column when case is ignored; "
                "write it with its exact case."
            ) from e
        if field is None:
            raise FilterError(self._unknown_column(name))
        kind = _nested_kind(field.field_type)
        if kind is not None and not nested_ok:
            if kind == "struct" and isinstance(field.field_type, StructType):
                first = field.field_type.fields[0].name if field.field_type.fields else None
                hint = (
                    f"test it with IS NULL / IS NOT NULL, or compare one of its fields, such as "
                    f"{name}.{_quoted_name(first)}"
                    if first is not None
                    else "test it with IS NULL / IS NOT NULL"
                )
            else:
                hint = "test it with IS NULL / IS NOT NULL, or filter on a primitive column"
            raise FilterError(
                f"Column {name!r} is a {kind}, which an Iceberg filter cannot compare; {hint}."
            )
        if self.schema.accessor(field.field_id) is None:
            raise FilterError(
                f"Column {name!r} is inside a list or map, which Iceberg filters cannot reach; "
                "filter on a top-level column or a field of nested structs."
            )
        full = self.schema.find_column_name(field.field_id) or name
        return BoundReference(field, full)

    def _unknown_column(self, name: str) -> str:
        names = [
            n
            for n, fid in self.schema.name_to_id().items()
            if self.schema.accessor(fid) is not None
            and not isinstance(self.schema.find_type(fid), NestedType)
        ]
        by_lower = {n.lower(): n for n in names}
        close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
        if close:
            options = " or ".join(repr(by_lower[c]) for c in close)
            return f"Column {name!r} is not in the table's schema; did you mean {options}?"
        shown = ", ".join(sorted(names)[:12]) + (", ..." if len(names) > 12 else "")
        return f"Column {name!r} is not in the table's schema; its columns are: {shown}."

    def _required_path(self, field_id: int) -> bool:
        """The field and every struct enclosing it are required (Java's binding check)."""
        current: int | None = field_id
        while current is not None:
            f = self.schema.find_field(current)
            if f is None or not f.required:
                return False
            current = self.schema.parent_id(current)
        return True

    # ---------------------------------------------------------------- predicates

    def _unary(self, op: Operation, ref: BoundReference) -> Expression:
        if op in (Operation.IS_NULL, Operation.NOT_NULL):
            if self._required_path(ref.field_id):
                return AlwaysFalse() if op is Operation.IS_NULL else AlwaysTrue()
            if isinstance(ref.type, UnknownType):
                return AlwaysTrue() if op is Operation.IS_NULL else AlwaysFalse()
            return BoundPredicate(op, ref)
        if not isinstance(ref.type, FloatType | DoubleType):
            raise FilterError(
                f"isnan needs a float or double column, but {ref.name!r} is {ref.type}; "
                "only floating-point columns can hold NaN."
            )
        return BoundPredicate(op, ref)

    def _starts_with(self, pred: UnboundPredicate, ref: BoundReference) -> Expression:
        lit = pred.literals[0]
        if not isinstance(ref.type, StringType):
            raise FilterError(
                f"LIKE {_text(lit)} needs a string column, but {ref.name!r} is {ref.type}; "
                "prefix matching works only on string columns."
            )
        if not isinstance(lit.value, str) or lit.type_hint is not None:
            raise FilterError(f"LIKE on {ref.name!r} needs a string pattern, got {_text(lit)}.")
        return BoundPredicate(pred.op, ref, (lit.value,))

    def _like(self, pred: UnboundPredicate, ref: BoundReference) -> Expression:
        """LIKE with any pattern: the pattern and escape kept as written (checked when parsed)."""
        pattern, escape = pred.literals
        if not isinstance(ref.type, StringType):
            raise FilterError(
                f"LIKE {_text(pattern)} needs a string column, but {ref.name!r} is {ref.type}; "
                "pattern matching works only on string columns."
            )
        if not isinstance(pattern.value, str) or not isinstance(escape.value, str):
            raise FilterError(f"LIKE on {ref.name!r} needs a string pattern, got {_text(pattern)}.")
        try:  # checked by the parser already; an expression built by hand is checked here
            like_tokens(pattern.value, escape.value)
        except LikePatternError as e:
            raise FilterError(
                f"The LIKE pattern {_text(pattern)} on {ref.name!r} {e}, which Spark refuses "
                "too; escape wildcards as \\_ and \\%."
            ) from None
        return BoundPredicate(pred.op, ref, (pattern.value, escape.value))

    def _comparison(self, op: Operation, ref: BoundReference, lit: Literal) -> Expression:
        if _is_float_nan(lit, ref.type):
            if self.as_pushed and op not in (Operation.EQ, Operation.NOT_EQ):
                return AlwaysTrue()
            return nan_comparison(op, ref)
        try:
            value = _convert(lit, ref)
        except _Bound as b:
            # Java's UnboundPredicate.bindLiteralOperation on AboveMax / BelowMin.
            if b.above:
                below = op in (Operation.LT, Operation.LT_EQ, Operation.NOT_EQ)
            else:
                below = op in (Operation.GT, Operation.GT_EQ, Operation.NOT_EQ)
            return AlwaysTrue() if below else AlwaysFalse()
        if isinstance(value, _Between):
            if op is Operation.EQ:
                return AlwaysFalse()
            if op is Operation.NOT_EQ:
                return AlwaysTrue()
            if op in (Operation.LT, Operation.LT_EQ):
                return BoundPredicate(Operation.LT_EQ, ref, (value.below,))
            return BoundPredicate(Operation.GT_EQ, ref, (value.above,))
        return BoundPredicate(op, ref, (value,))

    def _pushed_set(self, pred: UnboundPredicate, ref: BoundReference) -> Expression:
        """IN / NOT IN as Iceberg's Spark converter hands it over.

        A list holding NaN on a float column is not converted (Iceberg takes no NaN literal):
        nothing is pushed. ``NOT IN`` of several values is pushed as ``c IS NOT NULL AND c NOT
        IN (...)`` (the converter adds the guard for SQL's NULL); one value is Spark's ``=``.
        """
        if any(_is_float_nan(lit, ref.type) for lit in pred.literals):
            return AlwaysTrue()
        bound = self._exact_set(pred, ref)
        several = len({(lit.value, lit.type_hint) for lit in pred.literals}) > 1
        if pred.op is Operation.NOT_IN and several:
            return and_(BoundPredicate(Operation.NOT_NULL, ref), bound)
        return bound

    def _set(self, pred: UnboundPredicate, ref: BoundReference) -> Expression:
        if self.as_pushed:
            return self._pushed_set(pred, ref)
        return self._exact_set(pred, ref)

    def _exact_set(self, pred: UnboundPredicate, ref: BoundReference) -> Expression:
        if any(_is_float_nan(lit, ref.type) for lit in pred.literals):
            others = self._set(dataclasses.replace(pred, literals=_no_nan(pred, ref)), ref)
            return nan_membership(pred.op, ref, others)
        values = _plain_set(pred.literals, ref.type)
        if values is None:
            kept: dict[Any, Any] = {}
            for lit in pred.literals:
                try:
                    value = _convert(lit, ref)
                except _Bound:
                    continue  # Java drops AboveMax/BelowMin from IN lists
                if isinstance(value, _Between):
                    continue  # no value of the column equals it
                kept.setdefault(_identity(value), value)
            values = tuple(kept.values())
        negated = pred.op is Operation.NOT_IN
        if not values:
            return AlwaysTrue() if negated else AlwaysFalse()
        if len(values) == 1:
            return BoundPredicate(Operation.NOT_EQ if negated else Operation.EQ, ref, values)
        return BoundPredicate(pred.op, ref, values)


def _plain_set(literals: tuple[Literal, ...], t: IcebergType) -> tuple[Any, ...] | None:
    """The distinct values of an IN list converted in one pass, when that is the same.

    A list of plain integers for an int or long column, or of plain strings for a string
    column (what a generated list of a million ids holds), converts as :func:`_convert`
    converts each literal: integers outside the type's range are dropped (Java's
    AboveMax/BelowMin), strings are kept as written. Any other list returns None and is
    converted literal by literal.
    """
    if isinstance(t, IntegerType | LongType):
        if not all(type(lit.value) is int and lit.type_hint is None for lit in literals):
            return None
        lo, hi = (INT_MIN, INT_MAX) if isinstance(t, IntegerType) else (LONG_MIN, LONG_MAX)
        return tuple(dict.fromkeys(v for v in (lit.value for lit in literals) if lo <= v <= hi))
    if isinstance(t, StringType):
        if not all(type(lit.value) is str and lit.type_hint is None for lit in literals):
            return None
        return tuple(dict.fromkeys(lit.value for lit in literals))
    return None


def _quoted_name(part: str) -> str:
    """A field name as a filter writes it: bare when it is a plain identifier, else in backticks."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
        return part
    return "`" + part.replace("`", "``") + "`"


def _nested_kind(t: IcebergType) -> str | None:
    if isinstance(t, StructType):
        return "struct"
    if isinstance(t, ListType):
        return "list"
    if isinstance(t, MapType):
        return "map"
    return None


def _identity(value: Any) -> Any:
    """Set identity as Java's ``HashSet`` sees it: ``-0.0`` and ``0.0`` stay distinct."""
    if isinstance(value, float):
        return (value, math.copysign(1.0, value))
    return value


def _text(lit: Literal) -> str:
    return str(lit)


# ------------------------------------------------------------------------ literal conversion


def _is_nan(lit: Literal, t: IcebergType) -> bool:
    v = lit.value
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, Decimal):
        return v.is_nan()
    if isinstance(v, str) and lit.type_hint is None and _is_numeric(t):
        return v.strip().lower() in ("nan", "+nan", "-nan")
    return False


def _is_float_nan(lit: Literal, t: IcebergType) -> bool:
    return isinstance(t, FloatType | DoubleType) and _is_nan(lit, t)


def _no_nan(pred: UnboundPredicate, ref: BoundReference) -> tuple[Literal, ...]:
    return tuple(lit for lit in pred.literals if not _is_float_nan(lit, ref.type))


def _is_numeric(t: IcebergType) -> bool:
    return isinstance(t, IntegerType | LongType | FloatType | DoubleType | DecimalType)


def _convert(lit: Literal, ref: BoundReference) -> Any:
    """Convert ``lit`` to ``ref``'s type (Java's ``Literal.to(Type)``).

    Returns:
        The value in the model's representation, or a :class:`_Between` when the literal
        falls between two values of the type.

    Raises:
        _Bound: the literal is above or below every value of the type.
        FilterError: the literal cannot be read as a value of the type.
    """
    t = ref.type
    if lit.value is None:
        raise FilterError(
            f"Column {ref.name!r} is compared with NULL, which never matches; "
            f"use {ref.name} IS NULL or IS NOT NULL."
        )
    if _is_nan(lit, t):
        raise FilterError(
            f"Column {ref.name!r} is compared with NaN ({_text(lit)}), but it is {t}, which "
            "cannot hold NaN; compare it with a number, or NaN with a float or double column."
        )
    converter = _CONVERTERS.get(type(t))
    try:
        if converter is None:
            raise _Mismatch("Iceberg filters cannot compare values of this type")
        return converter(lit, t)
    except (_Mismatch, ValidationError, Unsupported, ValueError, ArithmeticError) as e:
        reason = str(e) if isinstance(e, _Mismatch) else ""
        detail = f": {reason}" if reason else ""
        raise FilterError(
            f"The value {_text(lit)} cannot be compared with column {ref.name!r} of type "
            f"{t}{detail}."
        ) from None


class _Mismatch(Exception):  # noqa: N818 - internal signal turned into FilterError
    """The literal does not convert to the type; the message says why and what to write."""


def _untyped_str(lit: Literal) -> str | None:
    return lit.value if isinstance(lit.value, str) and lit.type_hint is None else None


def _number(lit: Literal) -> int | Decimal | float:
    """The literal as a number; strings holding numbers are read as numbers."""
    v = lit.value
    if isinstance(v, bool) or lit.type_hint is not None:
        raise _Mismatch("it is not a number")
    if isinstance(v, int | Decimal | float):
        return v
    if isinstance(v, str):
        text = v.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return Decimal(text)
        except InvalidOperation:
            pass
        try:
            return float(text)  # 'Infinity', '-inf'
        except ValueError:
            raise _Mismatch("the string is not a number") from None
    raise _Mismatch("it is not a number")


def _as_decimal(v: int | Decimal | float) -> Decimal:
    # A double as the user wrote it (Java's BigDecimal.valueOf uses Double.toString).
    return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)


def _floor_at_scale(d: Decimal, scale: int) -> tuple[int, bool]:
    """``floor(d * 10**scale)`` and whether it is exact, in integer arithmetic."""
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    n = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        q, exact = n * 10**shift, True
    elif -shift > len(digits):
        q, exact = 0, n == 0
    else:
        q, r = divmod(n, 10**-shift)
        exact = r == 0
    if sign:
        return (-q if exact else -q - 1), exact
    return q, exact


def _integral(v: int | Decimal | float, lo: int, hi: int) -> int | _Between:
    """An integer column's value (Java: LongLiteral.to(INTEGER) range checks)."""
    if isinstance(v, int):
        if v > hi or v < lo:
            raise _Bound(v > hi)
        return v
    if isinstance(v, float) and math.isinf(v):
        raise _Bound(v > 0)
    d = _as_decimal(v)
    if d > hi or d < lo:
        raise _Bound(d > hi)
    floor, exact = _floor_at_scale(d, 0)
    return floor if exact else _Between(floor, floor + 1)


def _to_int(lit: Literal, t: IcebergType) -> Any:
    lo, hi = (INT_MIN, INT_MAX) if isinstance(t, IntegerType) else (LONG_MIN, LONG_MAX)
    return _integral(_number(lit), lo, hi)


def _to_floating(lit: Literal, t: IcebergType) -> Any:
    v = _number(lit)
    try:
        f = float(v)
    except OverflowError:
        raise _Bound(v > 0) from None
    if isinstance(t, DoubleType) or math.isinf(f):
        if math.isinf(f) and not isinstance(v, float):
            raise _Bound(f > 0)  # a finite literal too large for a double
        return f
    # Java's DoubleLiteral.to(FLOAT): beyond Float.MAX_VALUE is AboveMax/BelowMin, else the
    # value is rounded to a 32-bit float (what a float column can hold).
    if f > FLOAT_MAX or f < -FLOAT_MAX:
        raise _Bound(f > 0)
    rounded: float = struct.unpack("<f", struct.pack("<f", f))[0]
    return rounded


def _to_decimal(lit: Literal, t: IcebergType) -> Any:
    assert isinstance(t, DecimalType)
    v = _number(lit)
    if isinstance(v, float) and math.isinf(v):
        raise _Bound(v > 0)
    d = _as_decimal(v)
    if not d.is_finite():
        raise _Mismatch("it is not a finite number")
    if d.adjusted() >= t.precision - t.scale:  # |d| >= 10**(P-S): beyond every value
        raise _Bound(d > 0)
    largest = 10**t.precision - 1  # the largest unscaled value decimal(P,S) holds
    floor, exact = _floor_at_scale(d, t.scale)
    if exact:
        if abs(floor) > largest:
            raise _Bound(floor > 0)
        return unscaled_to_decimal(floor, t.scale)
    if floor >= largest:
        raise _Bound(True)
    if floor + 1 <= -largest:
        raise _Bound(False)
    return _Between(unscaled_to_decimal(floor, t.scale), unscaled_to_decimal(floor + 1, t.scale))


def _to_boolean(lit: Literal, t: IcebergType) -> Any:
    if isinstance(lit.value, bool):
        return lit.value
    text = _untyped_str(lit)
    if text is not None and text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise _Mismatch("write true or false")


def _to_string(lit: Literal, t: IcebergType) -> Any:
    text = _untyped_str(lit)
    if text is None:
        raise _Mismatch("quote it as a string, e.g. '42'")
    return text


def _to_uuid(lit: Literal, t: IcebergType) -> Any:
    text = _untyped_str(lit)
    if text is not None:
        try:
            return uuid.UUID(text.strip())
        except ValueError:
            pass
    raise _Mismatch("write a UUID string such as 'f79c3e09-677c-4bbd-a479-3f349cb785e7'")


def _to_binary(lit: Literal, t: IcebergType) -> Any:
    if not isinstance(lit.value, bytes):
        raise _Mismatch("write bytes as a hex literal such as X'0AFF'")
    if isinstance(t, FixedType) and len(lit.value) != t.length:
        raise _Mismatch(f"it has {len(lit.value)} bytes, not {t.length}")
    return lit.value


def _to_date(lit: Literal, t: IcebergType) -> Any:
    v = lit.value
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        # Java's IntegerLiteral/LongLiteral.to(DATE): the number is days from 1970-01-01.
        if v > INT_MAX or v < INT_MIN:
            raise _Bound(v > INT_MAX)
        try:
            return days_to_date(v)
        except IcecoreError:
            raise _Bound(v > 0) from None
    if isinstance(v, str) and lit.type_hint in ("timestamp", "timestamp_ntz"):
        # Spark compares the date as a timestamp (its midnight): a timestamp after midnight
        # falls between that day and the next (Java's TimestampLiteral.to(DATE) floors it,
        # which would make d = TIMESTAMP '2024-01-05 12:00:00' hold for 2024-01-05).
        days, rest = divmod(iso_to_nanos(v), NANOS_PER_DAY)
        if rest:
            return _Between(days_to_date(days), days_to_date(days + 1))
        return days_to_date(days)
    text = _untyped_str(lit)
    # Spark casts a string to a date by its leading yyyy-mm-dd, ignoring a time after ' '
    # or 'T' (d = '2024-01-01 10:00:00' holds for 2024-01-01).
    head = _DATE_HEAD.fullmatch(text.strip()) if text is not None else None
    if head is not None:
        try:
            return dt.date.fromisoformat(head.group(1))
        except ValueError:
            pass
    raise _Mismatch("write a date as '2024-08-09' or DATE '2024-08-09'")


def _to_time(lit: Literal, t: IcebergType) -> Any:
    v = lit.value
    if isinstance(v, int) and not isinstance(v, bool) and lit.type_hint is None:
        if v > LONG_MAX or v < LONG_MIN:
            raise _Bound(v > LONG_MAX)
        return v  # Java's LongLiteral.to(TIME): microseconds from midnight
    if isinstance(v, str) and lit.type_hint in (None, "time"):
        try:
            return iso_to_time_micros(v)
        except IcecoreError:
            pass
    raise _Mismatch("write a time as '10:15:30' or TIME '10:15:30.123456'")


def _to_timestamp(lit: Literal, t: IcebergType) -> Any:
    nano = isinstance(t, _NANO)
    zoned = isinstance(t, _ZONED)
    v = lit.value
    if isinstance(v, int) and not isinstance(v, bool) and lit.type_hint is None:
        # Java's LongLiteral.to(TIMESTAMP[_NANO]): microseconds from the epoch, even for a
        # nanosecond column.
        if v > LONG_MAX or v < LONG_MIN:
            raise _Bound(v > LONG_MAX)
        return v * NANOS_PER_MICRO if nano else v
    if isinstance(v, dt.datetime):  # a literal built in Python rather than parsed
        if v.tzinfo is not None and not zoned:
            raise _Mismatch("the column has no time zone, so use a naive datetime")
        micros = datetime_to_micros(v)
        return micros * NANOS_PER_MICRO if nano else micros
    if isinstance(v, dt.date):
        days = (v - EPOCH_DATE).days
        return days * NANOS_PER_DAY if nano else days * MICROS_PER_DAY
    if isinstance(v, str) and lit.type_hint in (None, "timestamp", "timestamp_ntz"):
        nanos = _timestamp_nanos(v, zoned)
        if nano:
            return nanos
        micros, rest = divmod(nanos, NANOS_PER_MICRO)
        return micros if rest == 0 else _Between(micros, micros + 1)
    zone = "'2024-08-09T10:15:30+02:00'" if zoned else "'2024-08-09 10:15:30'"
    raise _Mismatch(f"write a timestamp as {zone} or a date as '2024-08-09'")


def _timestamp_nanos(text: str, zoned: bool) -> int:
    try:
        if zoned:
            return iso_to_nanos(text)  # no offset: read as UTC
        return iso_to_nanos(text, with_zone=False)
    except IcecoreError:
        pass
    if not zoned:
        try:
            iso_to_nanos(text)
        except IcecoreError:
            pass
        else:
            raise _Mismatch("the column has no time zone, so drop the offset and write local time")
    raise _Mismatch("write it as '2024-08-09 10:15:30', '2024-08-09T10:15:30Z' or '2024-08-09'")


_CONVERTERS = {
    BooleanType: _to_boolean,
    IntegerType: _to_int,
    LongType: _to_int,
    FloatType: _to_floating,
    DoubleType: _to_floating,
    DecimalType: _to_decimal,
    StringType: _to_string,
    UUIDType: _to_uuid,
    BinaryType: _to_binary,
    FixedType: _to_binary,
    DateType: _to_date,
    TimeType: _to_time,
    TimestampType: _to_timestamp,
    TimestamptzType: _to_timestamp,
    TimestampNanoType: _to_timestamp,
    TimestamptzNanoType: _to_timestamp,
}


__all__ = ["bind"]
