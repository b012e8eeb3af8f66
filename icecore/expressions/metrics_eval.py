"""Prune data files by their column metrics, as Iceberg Java 1.10's metrics evaluators do.

Spec "Scan Planning" and "Manifests" (``value_counts``, ``null_value_counts``,
``nan_value_counts``, ``lower_bounds``, ``upper_bounds``; bounds are Appendix D bytes).
:func:`metrics_evaluator` answers "might some row of this file match?" exactly as Java's
``InclusiveMetricsEvaluator``.

Java's rules kept here, each a small pure function so that an Arrow-column version can be
written against the same definitions later (docs/ARCHITECTURE.md "Performance"):

* a file with ``record_count == 0`` cannot match, one with a negative count might;
* missing metrics never prune; a column whose value and null counts are equal holds only
  nulls (so ``0 == 0`` counts too), one whose NaN count equals its value count only NaNs;
* a NaN lower bound is unreliable and never prunes; upper bounds are compared as they are
  (NaN sorts above everything, as in ``Double.compare``);
* IN with more than :data:`IN_PREDICATE_LIMIT` values, ``!=`` and NOT IN never prune;
* STARTS_WITH compares bounds cut to the prefix's length in UTF-16 code units, with
  Java's ``Comparators.charSequences()`` order (truncated upper bounds work unchanged);
* UUIDs order as ``java.util.UUID.compareTo`` does (signed halves), as Java 1.10 does.

Expressions must be bound to the table schema and NOT-free (``rewrite_not`` first).
"""

from __future__ import annotations

import math
import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Operation,
    Or,
    reject_node,
)
from icecore.manifest import DataFile, DataFileContent
from icecore.schema import Schema
from icecore.types import DoubleType, FloatType, IcebergType, UUIDType
from icecore.values import from_bytes, to_human_string

IN_PREDICATE_LIMIT = 200
"""Java's limit: IN predicates with more values are not evaluated against bounds."""

_O = Operation
_SIGN = 1 << 63
_MASK64 = (1 << 64) - 1
_F32 = struct.Struct("<f")

FileCheck = Callable[[DataFile], bool]
FileReason = Callable[[DataFile], "str | None"]


class MetricsEvaluator(Protocol):
    """A compiled metrics filter: call it for the verdict, ``explain`` for the reason."""

    def __call__(self, data_file: DataFile) -> bool:
        """Whether some row of the file might match (False: the file can be skipped)."""
        ...

    def explain(self, data_file: DataFile) -> str | None:
        """Why the file cannot match, or None when it might."""
        ...


# ---------------------------------------------------------------------------------------
# Java orderings (Literal comparators)
# ---------------------------------------------------------------------------------------


def is_nan(value: Any) -> bool:
    """Java ``NaNUtil.isNaN``: a float that is NaN."""
    return isinstance(value, float) and math.isnan(value)


def float_order_key(value: float) -> tuple[int, float]:
    """A sort key giving ``Double.compare`` order: ``-0.0 < 0.0``, NaN above +infinity."""
    if math.isnan(value):
        return (3, 0.0)
    if value == 0.0:
        return (2, 0.0) if math.copysign(1.0, value) > 0 else (1, 0.0)
    return (0 if value < 0 else 2, value)


def uuid_order_key(value: Any) -> tuple[int, int]:
    """A sort key giving ``java.util.UUID.compareTo`` order (signed 64-bit halves)."""
    n = value.int if isinstance(value, uuid.UUID) else int.from_bytes(bytes(value), "big")
    return ((n >> 64) ^ _SIGN, (n & _MASK64) ^ _SIGN)


def _same(value: Any) -> Any:
    return value


def order_key(t: IcebergType) -> Callable[[Any], Any]:
    """The key that makes Python's ``<`` follow the Java literal comparator of type ``t``.

    Strings need none: Java's ``Comparators.charSequences()`` is code point order, which is
    Python's; decimals, dates, ints, bytes (unsigned) and booleans compare alike too.
    """
    if isinstance(t, FloatType | DoubleType):
        return float_order_key
    if isinstance(t, UUIDType):
        return uuid_order_key
    return _same


def literal_value(t: IcebergType, value: Any) -> Any:
    """A literal as Java holds it for a column of type ``t`` (float columns use float32)."""
    if isinstance(t, FloatType) and isinstance(value, float) and not math.isnan(value):
        try:
            return _F32.unpack(_F32.pack(value))[0]
        except (OverflowError, struct.error):
            return value
    return value


# ---------------------------------------------------------------------------------------
# Java's string prefix comparisons (UTF-16 code units)
# ---------------------------------------------------------------------------------------


def _bmp(text: str) -> bool:
    return text.isascii() or max(text) <= "\uffff"


def _utf16_units(text: str) -> list[int]:
    """UTF-16 code units, high surrogates lifted above every other unit (Java's comparator)."""
    data = text.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(data) // 2}H", data)
    return [u + 0x10000 if 0xD800 <= u <= 0xDBFF else u for u in units]


def utf16_len(text: str) -> int:
    """``String.length()``: UTF-16 code units."""
    return len(text) if _bmp(text) else len(text) + sum(1 for c in text if c > "\uffff")


def prefix_compare(value: str, prefix: str) -> int:
    """Java: ``compare(value.subSequence(0, min(len(prefix), len(value))), prefix)``.

    Lengths and the cut are in UTF-16 code units and the order is
    ``Comparators.charSequences()``; for text without supplementary characters this is
    plain slicing and comparison.
    """
    if _bmp(value) and _bmp(prefix):
        head = value[: len(prefix)]
        return (head > prefix) - (head < prefix)
    units, wanted = _utf16_units(value), _utf16_units(prefix)
    cut = units[: len(wanted)]
    return (cut > wanted) - (cut < wanted)


# ---------------------------------------------------------------------------------------
# Count rules (Java's private helpers)
# ---------------------------------------------------------------------------------------


def _get(metrics: Mapping[int, Any] | None, field_id: int) -> Any:
    return None if metrics is None else metrics.get(field_id)


def contains_nulls_only(f: DataFile, field_id: int) -> bool:
    """Value and null counts are both known and equal (``0 == 0`` included, as in Java)."""
    values = _get(f.value_counts, field_id)
    nulls = _get(f.null_value_counts, field_id)
    return values is not None and nulls is not None and values - nulls == 0


def contains_nans_only(f: DataFile, field_id: int) -> bool:
    """The NaN count is known and equals the value count."""
    nans = _get(f.nan_value_counts, field_id)
    return nans is not None and nans == _get(f.value_counts, field_id)


def may_contain_null(f: DataFile, field_id: int) -> bool:
    """No null count, or a non-zero one."""
    nulls = _get(f.null_value_counts, field_id)
    return nulls is None or nulls != 0


# ---------------------------------------------------------------------------------------
# InclusiveMetricsEvaluator: one check per predicate
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Column:
    """What a predicate needs to know about its column, resolved once."""

    field_id: int
    name: str
    type: IcebergType
    key: Callable[[Any], Any]

    def lower(self, f: DataFile) -> Any:
        raw = _get(f.lower_bounds, self.field_id)
        return None if raw is None else from_bytes(self.type, raw)

    def upper(self, f: DataFile) -> Any:
        raw = _get(f.upper_bounds, self.field_id)
        return None if raw is None else from_bytes(self.type, raw)

    def text(self, value: Any) -> str:
        try:
            return to_human_string(self.type, value)
        except Exception:  # noqa: BLE001 - a reason must never fail the plan
            return repr(value)


def _inclusive_check(pred: BoundPredicate) -> tuple[FileCheck, FileReason]:
    """Java ``InclusiveMetricsEvaluator.MetricsEvalVisitor`` for one predicate.

    Returns the fast check and a reason function for files the check rejects.
    """
    col = _Column(pred.term.field_id, pred.term.name, pred.term.type, order_key(pred.term.type))
    fid, op = col.field_id, pred.op
    too_many = op is _O.IN and len(pred.values) > IN_PREDICATE_LIMIT
    # A long IN list is judged by counts only (below): its values are not converted.
    lits = () if too_many else tuple(literal_value(col.type, v) for v in pred.values)

    def empty(f: DataFile) -> str | None:
        if contains_nulls_only(f, fid):
            return f"{col.name} is all null ({_get(f.value_counts, fid)} values)"
        if op not in (_O.STARTS_WITH,) and contains_nans_only(f, fid):
            return f"{col.name} is all NaN ({_get(f.value_counts, fid)} values)"
        return None

    if op is _O.IS_NULL:

        def check(f: DataFile) -> bool:
            return may_contain_null(f, fid)

        def reason(f: DataFile) -> str | None:
            return None if check(f) else f"{col.name} has no nulls"

        return check, reason

    if op is _O.NOT_NULL:

        def check(f: DataFile) -> bool:
            return not contains_nulls_only(f, fid)

        def reason(f: DataFile) -> str | None:
            return None if check(f) else empty(f)

        return check, reason

    if op is _O.IS_NAN:

        def check(f: DataFile) -> bool:
            if contains_nulls_only(f, fid):
                return False
            return _get(f.nan_value_counts, fid) != 0

        def reason(f: DataFile) -> str | None:
            if check(f):
                return None
            return empty(f) or f"{col.name} has no NaN values"

        return check, reason

    if op is _O.NOT_NAN:

        def check(f: DataFile) -> bool:
            return not contains_nans_only(f, fid)

        def reason(f: DataFile) -> str | None:
            return None if check(f) else f"{col.name} is all NaN"

        return check, reason

    if op in (_O.NOT_EQ, _O.NOT_IN):
        # Bounds are not necessarily values of the column: nothing can be concluded.
        return _always, _never

    if op in (_O.LT, _O.LT_EQ, _O.GT, _O.GT_EQ, _O.EQ):
        return _comparison(col, op, lits[0], empty)
    if op is _O.IN:
        return _in(col, lits, empty, len(pred.values))
    if op is _O.STARTS_WITH:
        return _starts_with(col, lits[0], empty)
    if op is _O.NOT_STARTS_WITH:
        return _not_starts_with(col, lits[0])
    raise TypeError(f"unsupported predicate: {pred}")  # pragma: no cover


def _always(f: DataFile) -> bool:
    return True


def _never(f: DataFile) -> str | None:
    return None


def lower_excludes(op: Operation, lower_key: Any, lit_key: Any) -> bool:
    """Whether a lower bound rules out ``x op lit`` (LT, LT_EQ, EQ)."""
    if op is _O.LT:
        return lower_key >= lit_key
    return lower_key > lit_key  # type: ignore[no-any-return]


def upper_excludes(op: Operation, upper_key: Any, lit_key: Any) -> bool:
    """Whether an upper bound rules out ``x op lit`` (GT, GT_EQ, EQ)."""
    if op is _O.GT:
        return upper_key <= lit_key
    return upper_key < lit_key  # type: ignore[no-any-return]


def _comparison(
    col: _Column, op: Operation, lit: Any, empty: Callable[[DataFile], str | None]
) -> tuple[FileCheck, FileReason]:
    fid, key = col.field_id, col.key
    lit_key = key(lit)
    uses_lower = op in (_O.LT, _O.LT_EQ, _O.EQ)
    uses_upper = op in (_O.GT, _O.GT_EQ, _O.EQ)
    lit_text = col.text(lit)

    def check(f: DataFile) -> bool:
        if contains_nulls_only(f, fid) or contains_nans_only(f, fid):
            return False
        if uses_lower:
            lower = col.lower(f)
            if lower is None or is_nan(lower):
                if op is not _O.EQ:
                    return True
            elif lower_excludes(op, key(lower), lit_key):
                return False
        if uses_upper:
            upper = col.upper(f)
            if upper is not None and upper_excludes(op, key(upper), lit_key):
                return False
        return True

    def reason(f: DataFile) -> str | None:
        if check(f):
            return None
        found = empty(f)
        if found is not None:
            return found
        lower = col.lower(f) if uses_lower else None
        if lower is not None and not is_nan(lower) and lower_excludes(op, key(lower), lit_key):
            sign = ">=" if op is _O.LT else ">"
            return f"{col.name} lower bound {col.text(lower)} {sign} {lit_text}"
        upper = col.upper(f)
        sign = "<=" if op is _O.GT else "<"
        return f"{col.name} upper bound {col.text(upper)} {sign} {lit_text}"

    return check, reason


def in_remaining(lower_key: Any, upper_key: Any | None, lit_keys: tuple[Any, ...]) -> int:
    """How many IN values lie within [lower, upper] (no upper: only the lower bound cuts)."""
    inside = [k for k in lit_keys if lower_key <= k]
    if upper_key is not None:
        inside = [k for k in inside if k <= upper_key]
    return len(inside)


def _in(
    col: _Column, lits: tuple[Any, ...], empty: Callable[[DataFile], str | None], count: int
) -> tuple[FileCheck, FileReason]:
    fid, key = col.field_id, col.key
    lit_keys = tuple(key(v) for v in lits)
    too_many = count > IN_PREDICATE_LIMIT

    def check(f: DataFile) -> bool:
        if contains_nulls_only(f, fid) or contains_nans_only(f, fid):
            return False
        if too_many:
            return True
        lower = col.lower(f)
        if lower is None or is_nan(lower):
            return True
        lower_key = key(lower)
        if not any(lower_key <= k for k in lit_keys):
            return False
        upper = col.upper(f)
        if upper is None:
            return True
        return in_remaining(lower_key, key(upper), lit_keys) > 0

    def reason(f: DataFile) -> str | None:
        if check(f):
            return None
        found = empty(f)
        if found is not None:
            return found
        lower, upper = col.lower(f), col.upper(f)
        return (
            f"{col.name} bounds [{col.text(lower)}, {col.text(upper)}] exclude "
            f"all {count} IN values"
        )

    return check, reason


def _starts_with(
    col: _Column, prefix: str, empty: Callable[[DataFile], str | None]
) -> tuple[FileCheck, FileReason]:
    fid = col.field_id

    def check(f: DataFile) -> bool:
        if contains_nulls_only(f, fid):
            return False
        lower = col.lower(f)
        if lower is None:
            return True
        if prefix_compare(lower, prefix) > 0:
            return False
        upper = col.upper(f)
        return upper is None or prefix_compare(upper, prefix) >= 0

    def reason(f: DataFile) -> str | None:
        if check(f):
            return None
        found = empty(f)
        if found is not None:
            return found
        lower, upper = col.lower(f), col.upper(f)
        return f"{col.name} bounds [{lower!r}, {upper!r}] exclude prefix {prefix!r}"

    return check, reason


def _not_starts_with(col: _Column, prefix: str) -> tuple[FileCheck, FileReason]:
    fid = col.field_id
    length = utf16_len(prefix)

    def check(f: DataFile) -> bool:
        if may_contain_null(f, fid):
            return True
        lower, upper = col.lower(f), col.upper(f)
        if lower is None or upper is None or utf16_len(lower) < length:
            return True
        if prefix_compare(lower, prefix) != 0:
            return True
        if utf16_len(upper) < length:
            return True
        return prefix_compare(upper, prefix) != 0

    def reason(f: DataFile) -> str | None:
        if check(f):
            return None
        return f"{col.name} bounds [{col.lower(f)!r}, {col.upper(f)!r}] all start with {prefix!r}"

    return check, reason


# ---------------------------------------------------------------------------------------
# Compiling an expression tree
# ---------------------------------------------------------------------------------------


def _true_reason(f: DataFile) -> str | None:
    return None


def _false_check(f: DataFile) -> bool:
    return False


def _false_reason(f: DataFile) -> str | None:
    return "the filter is always false"


def _compile(
    expr: Expression, leaf: Callable[[BoundPredicate], tuple[FileCheck, FileReason]]
) -> tuple[FileCheck, FileReason]:
    """Nested closures for the fast check and the reason, built once per evaluator."""
    if isinstance(expr, AlwaysTrue):
        return _always, _true_reason
    if isinstance(expr, AlwaysFalse):
        return _false_check, _false_reason
    if isinstance(expr, BoundPredicate):
        return leaf(expr)
    if isinstance(expr, And | Or):
        lc, lr = _compile(expr.left, leaf)
        rc, rr = _compile(expr.right, leaf)
        if isinstance(expr, And):

            def and_check(f: DataFile) -> bool:
                return lc(f) and rc(f)

            def and_reason(f: DataFile) -> str | None:
                return lr(f) if not lc(f) else rr(f)

            return and_check, and_reason

        def or_check(f: DataFile) -> bool:
            return lc(f) or rc(f)

        def or_reason(f: DataFile) -> str | None:
            if or_check(f):
                return None
            return f"({lr(f)}) and ({rr(f)})"

        return or_check, or_reason
    reject_node(expr)


@dataclass(frozen=True, slots=True)
class _InclusiveMetricsEvaluator:
    """Java ``InclusiveMetricsEvaluator``, compiled once; immutable and thread-safe."""

    check: FileCheck
    reason: FileReason
    include_column_stats: bool
    evaluate_delete_files: bool

    def __call__(self, data_file: DataFile) -> bool:
        if data_file.content is not DataFileContent.DATA and not self.evaluate_delete_files:
            return True
        if data_file.record_count == 0:
            return False
        if data_file.record_count < 0 or not self.include_column_stats:
            return True
        return self.check(data_file)

    def explain(self, data_file: DataFile) -> str | None:
        if self(data_file):
            return None
        if data_file.record_count == 0:
            return "the file has no rows"
        return self.reason(data_file)


def metrics_evaluator(
    schema: Schema,
    expr: Expression,
    include_column_stats: bool = True,
    *,
    evaluate_delete_files: bool = False,
) -> MetricsEvaluator:
    """A check of whether a file's rows might match ``expr``, judged by its metrics.

    Java ``InclusiveMetricsEvaluator``. The result is callable (``False``: skip the file)
    and has ``explain(file)`` giving the reason, e.g. ``"id upper bound 4999 < 5000"``.

    Args:
        schema: the table schema ``expr`` is bound to.
        expr: a bound, NOT-free row filter.
        include_column_stats: False to judge by the record count only (manifests read
            without their metrics columns).
        evaluate_delete_files: delete files are never pruned unless this is True. Java's
            ``DeleteFileIndex`` does prune delete files with this evaluator (``filterRows``
            of the data filter); pass True when filtering delete entries to match it.

    Returns:
        The evaluator; it keeps no state between calls.
    """
    del schema  # bound predicates carry field ids and types
    check, reason = _compile(expr, _inclusive_check)
    return _InclusiveMetricsEvaluator(check, reason, include_column_stats, evaluate_delete_files)


__all__ = [
    "IN_PREDICATE_LIMIT",
    "MetricsEvaluator",
    "contains_nans_only",
    "contains_nulls_only",
    "float_order_key",
    "in_remaining",
    "is_nan",
    "literal_value",
    "lower_excludes",
    "may_contain_null",
    "metrics_evaluator",
    "order_key",
    "prefix_compare",
    "upper_excludes",
    "utf16_len",
    "uuid_order_key",
]
