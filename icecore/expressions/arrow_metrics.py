"""Prune many data files at once by their column metrics, over Arrow columns.

The vectorized twin of :func:`icecore.expressions.metrics_eval.metrics_evaluator` (Java's
``InclusiveMetricsEvaluator``; spec "Scan Planning" and "Manifests" for the metrics), for
planning a million files without a Python object per file (docs/ARCHITECTURE.md "Performance").
Every rule is the one the row evaluator documents, applied to columns: counts as int64, Appendix D
bounds reinterpreted in place (little-endian ints, IEEE floats mapped to integers that sort in
``Double.compare`` order, strings and binaries compared byte-wise, which for UTF-8 is code
point order: Java's ``Comparators.charSequences()``).

Exactness comes first: where a column cannot be judged this way — a type without a
vectorized form (decimal, uuid, boolean), a bound of another width (written before a type
promotion), a string that is not UTF-8, supplementary characters in a STARTS_WITH —
the verdict is *unknown* (null) for those rows and the caller asks the row evaluator. The
tree is combined with Kleene logic, so an unknown only survives where it could change the
answer.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar

import pyarrow as pa

from icecore.arrow_types import bool_scalar
from icecore.compute import pc
from icecore.expressions.metrics_eval import IN_PREDICATE_LIMIT, literal_value
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
from icecore.types import (
    BinaryType,
    DateType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)
from icecore.values import EPOCH_DATE

_O = Operation
_I64 = pa.int64()
_TRUE = bool_scalar(True)
_FALSE = bool_scalar(False)
_UNKNOWN = bool_scalar(None)
_NAN_KEY = (1 << 63) - 1
_FLIP = (1 << 63) - 1
_SUPPLEMENTARY = r"[\x{10000}-\x{10FFFF}]"

Verdict: TypeAlias = pa.ChunkedArray | pa.Array | pa.Scalar
"""Per file: True (might match), False (cannot), null (ask the row evaluator)."""


class MetricsColumns(Protocol):
    """The metrics of a set of files, one row per file, as :mod:`planning_manifest` lays out."""

    @property
    def num_rows(self) -> int:
        """Files."""
        ...

    def record_counts(self) -> pa.ChunkedArray:
        """``record_count`` per file (int64)."""
        ...

    def metric(self, kind: str, field_id: int) -> pa.ChunkedArray | None:
        """Map ``kind``'s value for ``field_id`` per file, null where absent (None: all)."""
        ...


# ---------------------------------------------------------------------------------------
# Bounds as sortable keys
# ---------------------------------------------------------------------------------------

_INT4 = (IntegerType, DateType)
_INT8 = (
    LongType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
)


@dataclass(frozen=True, slots=True)
class BoundKeys:
    """Bounds decoded for comparison.

    Attributes:
        keys: comparable values, null where the bound is absent, NaN (lower bounds only)
            or not decodable here.
        unknown: rows whose bound exists but was not decoded here (the row evaluator judges).
    """

    keys: pa.ChunkedArray
    unknown: pa.ChunkedArray


_VECTORIZED = (*_INT4, *_INT8, FloatType, DoubleType, StringType, BinaryType, FixedType)


def vectorizable(t: IcebergType) -> bool:
    """Whether bounds of type ``t`` have a key form here (else the row evaluator judges)."""
    return isinstance(t, _VECTORIZED)


def bound_keys(raw: pa.ChunkedArray | pa.Array, t: IcebergType, *, lower: bool) -> BoundKeys:
    """Appendix D bounds of type ``t`` as sortable keys (``t`` must be vectorizable).

    Lower bounds read NaN as absent (Java's metrics rule); upper bounds keep it on top.
    """
    if isinstance(raw, pa.Array):
        raw = pa.chunked_array([raw])
    elif raw.num_chunks > 1:  # one manifest per chunk: decode them in one pass, not one each
        raw = pa.chunked_array([raw.combine_chunks()])
    return _chunks(raw, _decoder(t, lower=lower))


def _chunks(raw: pa.ChunkedArray, fn: Callable[[pa.Array], tuple[pa.Array, pa.Array]]) -> BoundKeys:
    keys, unknown = [], []
    for chunk in raw.chunks:
        k, u = fn(chunk)
        keys.append(k)
        unknown.append(u)
    if not keys:
        return BoundKeys(pa.chunked_array([], _I64), pa.chunked_array([], pa.bool_()))
    return BoundKeys(pa.chunked_array(keys), pa.chunked_array(unknown))


def _fixed_width(chunk: pa.Array, width: int) -> tuple[pa.Array, pa.Array]:
    """Bounds of exactly ``width`` bytes as fixed-size binary; other widths are unknown."""
    lengths = pc.binary_length(chunk)
    unknown = pc.fill_null(pc.not_equal(lengths, width), False)
    if pc.any(unknown).as_py():
        chunk = pc.if_else(unknown, pa.scalar(None, chunk.type), chunk)
    return chunk.cast(pa.binary(width)), unknown


def _reinterpret(fixed: pa.Array, t: pa.DataType) -> pa.Array:
    return pa.Array.from_buffers(t, len(fixed), fixed.buffers()[:2], offset=fixed.offset)


def _int_keys(width: int) -> Callable[[pa.Array], tuple[pa.Array, pa.Array]]:
    arrow = pa.int32() if width == 4 else _I64

    def decode(chunk: pa.Array) -> tuple[pa.Array, pa.Array]:
        fixed, unknown = _fixed_width(chunk, width)
        return _reinterpret(fixed, arrow).cast(_I64), unknown

    return decode


def _float_keys(
    width: int, *, nan_is_missing: bool
) -> Callable[[pa.Array], tuple[pa.Array, pa.Array]]:
    """IEEE bounds as int64 keys in ``Double.compare`` order (-0.0 < 0.0, NaN on top)."""
    arrow = pa.float32() if width == 4 else pa.float64()

    def decode(chunk: pa.Array) -> tuple[pa.Array, pa.Array]:
        fixed, unknown = _fixed_width(chunk, width)
        values = _reinterpret(fixed, arrow).cast(pa.float64())
        bits = _reinterpret(values, _I64)
        keys = pc.if_else(pc.less(bits, 0), pc.bit_wise_xor(bits, pa.scalar(_FLIP, _I64)), bits)
        nan = pc.fill_null(pc.is_nan(values), False)
        fill = pa.scalar(None, _I64) if nan_is_missing else pa.scalar(_NAN_KEY, _I64)
        return pc.if_else(nan, fill, keys), unknown

    return decode


def _utf8_keys(chunk: pa.Array) -> tuple[pa.Array, pa.Array]:
    """UTF-8 bounds kept as bytes; a chunk with invalid UTF-8 is left to the row evaluator."""
    try:
        chunk.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.nulls(len(chunk), pa.binary()), chunk.is_valid()
    return chunk.cast(pa.binary()), pa.array([False] * len(chunk), pa.bool_())


def _binary_keys(chunk: pa.Array) -> tuple[pa.Array, pa.Array]:
    return chunk.cast(pa.binary()), pa.array([False] * len(chunk), pa.bool_())


def _decoder(t: IcebergType, *, lower: bool) -> Callable[[pa.Array], tuple[pa.Array, pa.Array]]:
    if isinstance(t, _INT4):
        return _int_keys(4)
    if isinstance(t, _INT8):
        return _int_keys(8)
    if isinstance(t, FloatType | DoubleType):
        return _float_keys(4 if isinstance(t, FloatType) else 8, nan_is_missing=lower)
    if isinstance(t, StringType):
        return _utf8_keys
    return _binary_keys


def _float_key(value: float) -> int:
    if math.isnan(value):
        return _NAN_KEY
    (bits,) = struct.unpack("<q", struct.pack("<d", value))
    return int(bits ^ _FLIP if bits < 0 else bits)


def literal_key(t: IcebergType, value: Any) -> pa.Scalar | None:
    """A literal as a scalar comparable with :func:`_decoder`'s keys (None: not here)."""
    value = literal_value(t, value)
    if isinstance(t, DateType):
        return pa.scalar((value - EPOCH_DATE).days, _I64)
    if isinstance(t, (*_INT4, *_INT8)):
        return pa.scalar(int(value), _I64)
    if isinstance(t, FloatType | DoubleType):
        return pa.scalar(_float_key(float(value)), _I64)
    if isinstance(t, StringType):
        try:
            return pa.scalar(value.encode("utf-8"), pa.binary())
        except UnicodeEncodeError:
            return None
    if isinstance(t, BinaryType | FixedType):
        return pa.scalar(bytes(value), pa.binary())
    return None


# ---------------------------------------------------------------------------------------
# Predicates
# ---------------------------------------------------------------------------------------


def _not(v: Verdict) -> Verdict:
    return pc.invert(v)


def _and(a: Verdict, b: Verdict) -> Verdict:
    return pc.and_kleene(a, b)


def _or(a: Verdict, b: Verdict) -> Verdict:
    return pc.or_kleene(a, b)


def _unknown_where(mask: pa.ChunkedArray, v: Verdict) -> Verdict:
    """``v``, made unknown where ``mask`` is true."""
    return pc.if_else(mask, _UNKNOWN, v)


def _known_equal(a: pa.ChunkedArray | None, b: pa.ChunkedArray | None) -> Verdict:
    """Both counts present and equal (``contains_nulls_only`` / ``contains_nans_only``)."""
    if a is None or b is None:
        return _FALSE
    return pc.fill_null(pc.equal(a, b), False)


@dataclass(frozen=True, slots=True)
class _Leaf:
    pred: BoundPredicate

    def __call__(self, cols: MetricsColumns) -> Verdict:  # noqa: C901 - one branch per operator
        pred = self.pred
        fid, op, t = pred.term.field_id, pred.op, pred.term.type
        values = cols.metric("value_counts", fid)
        nulls = cols.metric("null_value_counts", fid)
        nans = cols.metric("nan_value_counts", fid)
        nulls_only = _known_equal(values, nulls)
        nans_only = _known_equal(nans, values)
        if op is _O.IS_NULL:
            return _TRUE if nulls is None else pc.fill_null(pc.not_equal(nulls, 0), True)
        if op is _O.NOT_NULL:
            return _not(nulls_only)
        if op is _O.IS_NAN:
            some_nan = _TRUE if nans is None else pc.fill_null(pc.not_equal(nans, 0), True)
            return _and(_not(nulls_only), some_nan)
        if op is _O.NOT_NAN:
            return _not(nans_only)
        if op in (_O.NOT_EQ, _O.NOT_IN):
            return _TRUE
        if op is _O.NOT_STARTS_WITH or not vectorizable(t):
            return _UNKNOWN
        if op is _O.STARTS_WITH:
            return self._starts_with(cols, nulls_only)
        not_empty = _not(_or(nulls_only, nans_only))
        if op is _O.IN and len(pred.values) > IN_PREDICATE_LIMIT:
            # Java does not look at bounds for long lists; neither converts their values.
            return not_empty
        lits = [literal_key(t, v) for v in pred.values]
        if any(k is None for k in lits):
            return _UNKNOWN
        if op is _O.IN:
            return _and(not_empty, self._in(cols, lits))
        return _and(not_empty, self._comparison(cols, op, lits[0]))

    def _bounds(self, cols: MetricsColumns, kind: str, *, lower: bool) -> BoundKeys | None:
        t = self.pred.term.type
        key = (kind, self.pred.term.field_id, str(t), lower)
        if isinstance(cols, _OneCall) and key in cols.decoded:
            return cols.decoded[key]
        raw = cols.metric(kind, self.pred.term.field_id)
        found = None if raw is None else bound_keys(raw, t, lower=lower)
        if isinstance(cols, _OneCall):
            cols.decoded[key] = found
        return found

    def _comparison(self, cols: MetricsColumns, op: Operation, lit: pa.Scalar) -> Verdict:
        verdict: Verdict = _TRUE
        if op in (_O.LT, _O.LT_EQ, _O.EQ):
            lower = self._bounds(cols, "lower_bounds", lower=True)
            if lower is not None:
                cmp = pc.greater_equal if op is _O.LT else pc.greater
                excluded = pc.fill_null(cmp(lower.keys, lit), False)
                verdict = _and(verdict, _unknown_where(lower.unknown, _not(excluded)))
        if op in (_O.GT, _O.GT_EQ, _O.EQ):
            upper = self._bounds(cols, "upper_bounds", lower=False)
            if upper is not None:
                cmp = pc.less_equal if op is _O.GT else pc.less
                excluded = pc.fill_null(cmp(upper.keys, lit), False)
                verdict = _and(verdict, _unknown_where(upper.unknown, _not(excluded)))
        return verdict

    def _in(self, cols: MetricsColumns, lits: list[pa.Scalar | None]) -> Verdict:
        lower = self._bounds(cols, "lower_bounds", lower=True)
        if lower is None:
            return _TRUE
        upper = self._bounds(cols, "upper_bounds", lower=False)
        inside: Verdict = _FALSE
        for lit in lits:
            hit = pc.less_equal(lower.keys, lit)
            if upper is not None:
                hit = pc.and_(hit, pc.fill_null(pc.less_equal(lit, upper.keys), True))
            inside = pc.or_(inside, pc.fill_null(hit, False))
        verdict = pc.or_(pc.is_null(lower.keys), inside)
        unknown = lower.unknown if upper is None else pc.or_(lower.unknown, upper.unknown)
        return _unknown_where(unknown, verdict)

    def _starts_with(self, cols: MetricsColumns, nulls_only: Verdict) -> Verdict:
        prefix = str(self.pred.value)
        if not isinstance(self.pred.term.type, StringType) or max(prefix, default="") > "\uffff":
            return _UNKNOWN
        wanted = pa.scalar(prefix.encode("utf-8"), pa.binary())
        size = len(wanted.as_py())
        lower = self._bounds(cols, "lower_bounds", lower=True)
        if lower is None:  # no lower bound: the row evaluator answers "might match"
            return _not(nulls_only)
        upper = self._bounds(cols, "upper_bounds", lower=False)

        def judged(bounds: BoundKeys, cmp: Callable[..., Any]) -> tuple[Verdict, Verdict]:
            cut = pc.binary_slice(bounds.keys, 0, size)
            excluded = pc.fill_null(cmp(cut, wanted), False)
            wide = pc.match_substring_regex(bounds.keys.cast(pa.string()), _SUPPLEMENTARY)
            return excluded, pc.or_(bounds.unknown, pc.fill_null(wide, False))

        lower_excluded, unknown = judged(lower, pc.greater)
        keep: Verdict = _not(lower_excluded)
        if upper is not None:
            upper_excluded, upper_unknown = judged(upper, pc.less)
            # Java returns at a missing lower bound before it looks at the upper one.
            upper_counts = pc.and_(upper_excluded, pc.is_valid(lower.keys))
            keep = pc.and_(keep, pc.invert(upper_counts))
            unknown = pc.or_(unknown, pc.and_(upper_unknown, pc.is_valid(lower.keys)))
        return _and(_not(nulls_only), _unknown_where(unknown, keep))


# ---------------------------------------------------------------------------------------
# The evaluator
# ---------------------------------------------------------------------------------------


class _OneCall:
    """The columns of one evaluation, with bounds decoded once per column.

    A filter of 10,000 conditions on one column would otherwise decode that column's
    bounds 10,000 times. Made per call, so nothing is shared between threads.
    """

    __slots__ = ("cols", "decoded")

    def __init__(self, cols: MetricsColumns) -> None:
        self.cols = cols
        self.decoded: dict[tuple[str, int, str, bool], BoundKeys | None] = {}

    @property
    def num_rows(self) -> int:
        return self.cols.num_rows

    def record_counts(self) -> pa.ChunkedArray:
        return self.cols.record_counts()

    def metric(self, kind: str, field_id: int) -> pa.ChunkedArray | None:
        return self.cols.metric(kind, field_id)


_Node = Callable[[MetricsColumns], Verdict]


S = TypeVar("S")


def kleene_tree(
    expr: Expression, leaf: Callable[[BoundPredicate], Callable[[S], Verdict]]
) -> Callable[[S], Verdict]:
    """A bound, NOT-free expression as one function over columns, combined in Kleene logic.

    An unknown leaf (ask the row evaluator) stays unknown only where it could change the answer.
    """
    if isinstance(expr, AlwaysTrue):
        return lambda cols: _TRUE
    if isinstance(expr, AlwaysFalse):
        return lambda cols: _FALSE
    if isinstance(expr, BoundPredicate):
        return leaf(expr)
    if isinstance(expr, And | Or):
        left, right = kleene_tree(expr.left, leaf), kleene_tree(expr.right, leaf)
        combine = _and if isinstance(expr, And) else _or
        return lambda cols: combine(left(cols), right(cols))
    reject_node(expr)


def _compile(expr: Expression) -> _Node:
    return kleene_tree(expr, _Leaf)


@dataclass(frozen=True, slots=True)
class ArrowMetricsFilter:
    """Java ``InclusiveMetricsEvaluator`` over columns; immutable, safe across threads."""

    node: _Node

    def __call__(self, cols: MetricsColumns) -> pa.ChunkedArray:
        """Per file: True (might match), False (skip), null (ask the row evaluator).

        As Java: a file with ``record_count == 0`` cannot match, one with a negative count
        might; otherwise the metrics decide.
        """
        counts = cols.record_counts()
        verdict = self.node(_OneCall(cols))
        verdict = pc.if_else(pc.less(counts, 0), _TRUE, verdict)
        return pc.if_else(pc.equal(counts, 0), _FALSE, verdict)


METRIC_KINDS = (
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)
"""The metrics maps the filter reads."""


def referenced_field_ids(expr: Expression) -> frozenset[int]:
    """Field ids of the columns a bound expression's predicates name."""
    if isinstance(expr, BoundPredicate):
        return frozenset((expr.term.field_id,))
    if isinstance(expr, And | Or):
        return referenced_field_ids(expr.left) | referenced_field_ids(expr.right)
    return frozenset()


def arrow_metrics_filter(expr: Expression) -> ArrowMetricsFilter:
    """A vectorized metrics filter for ``expr`` (bound and NOT-free: ``rewrite_not`` first)."""
    return ArrowMetricsFilter(_compile(expr))


__all__ = [
    "METRIC_KINDS",
    "BoundKeys",
    "bound_keys",
    "kleene_tree",
    "vectorizable",
    "ArrowMetricsFilter",
    "MetricsColumns",
    "arrow_metrics_filter",
    "literal_key",
    "referenced_field_ids",
]
