"""Skip many manifests at once by their partition field summaries, over Arrow columns.

The vectorized twin of :func:`icecore.expressions.manifest_eval.manifest_evaluator` (Java's
``ManifestEvaluator``; spec "Manifest Lists", ``field_summary``), so that a plan over a
snapshot of thousands of manifests judges them with a few Arrow kernels instead of a Python
call per manifest and predicate. The rules are the row evaluator's, column by column:

* a manifest without a summary at the predicate's position might match;
* an absent lower bound means every value is null or NaN: comparisons, IN and STARTS_WITH
  cannot match (for ``>``/``>=`` Java looks at the upper bound instead);
* ``!=`` and NOT IN never prune; IN with more than 200 values never prunes;
* STARTS_WITH compares raw bound bytes cut to the prefix's length.

Exactness first, as in :mod:`icecore.expressions.arrow_metrics`: bounds of a type without an
exact key form here (float and double, whose summary literals Java does not round;
decimal, uuid, boolean), bounds of an unexpected width, strings that are not UTF-8, and NOT
STARTS_WITH give *unknown*, and the caller asks the row evaluator for those manifests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from icecore.arrow_types import bool_scalar
from icecore.compute import pc
from icecore.expressions.arrow_metrics import (
    BoundKeys,
    Verdict,
    bound_keys,
    kleene_tree,
    literal_key,
    vectorizable,
)
from icecore.expressions.metrics_eval import IN_PREDICATE_LIMIT
from icecore.expressions.model import (
    BoundPredicate,
    Expression,
    Operation,
)
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.types import DoubleType, FloatType, IcebergType, StringType

_O = Operation
_TRUE = bool_scalar(True)
_FALSE = bool_scalar(False)
_UNKNOWN = bool_scalar(None)


class Summaries(Protocol):
    """A position's summaries, one row per manifest (see ``manifest_list_columns``)."""

    @property
    def present(self) -> pa.BooleanArray:
        """Whether the manifest has a summary at this position."""
        ...

    @property
    def contains_null(self) -> pa.BooleanArray:
        """``contains_null``."""
        ...

    @property
    def contains_nan(self) -> pa.BooleanArray:
        """``contains_nan`` (null where not written)."""
        ...

    @property
    def lower(self) -> pa.BinaryArray:
        """``lower_bound`` bytes."""
        ...

    @property
    def upper(self) -> pa.BinaryArray:
        """``upper_bound`` bytes."""
        ...


class SummarySource(Protocol):
    """The manifests of one spec: summaries by position and a memo for decoded keys."""

    @property
    def num_rows(self) -> int:
        """Manifests."""
        ...

    def summaries(self, position: int) -> Summaries:
        """Summaries at partition ``position``."""
        ...

    def memo(self, key: object, make: Callable[[], BoundKeys]) -> BoundKeys:
        """``make()``, computed once per key for these manifests."""
        ...


@dataclass(frozen=True, slots=True)
class _Field:
    position: int
    type: IcebergType


def _exact(t: IcebergType) -> bool:
    return vectorizable(t) and not isinstance(t, FloatType | DoubleType)


@dataclass(frozen=True, slots=True)
class _Leaf:
    pred: BoundPredicate
    field: _Field

    def __call__(self, src: SummarySource) -> Verdict:
        s = src.summaries(self.field.position)
        # A manifest without this summary might match anything.
        return pc.if_else(s.present, self._judge(src, s), _TRUE)

    def _judge(self, src: SummarySource, s: Summaries) -> Verdict:  # noqa: C901 - per operator
        op, t = self.pred.op, self.field.type
        no_lower = pc.is_null(s.lower)
        if op in (_O.IS_NULL, _O.NOT_NULL, _O.IS_NAN, _O.NOT_NAN):
            has_null = pc.fill_null(s.contains_null, False)
            no_nan = pc.fill_null(pc.invert(s.contains_nan), False)  # known to hold no NaN
            all_null = pc.and_(has_null, no_lower)
            if isinstance(t, FloatType | DoubleType):
                all_null = pc.and_(all_null, no_nan)
            if op is _O.IS_NULL:
                return has_null
            if op is _O.NOT_NULL:
                return pc.invert(all_null)
            if op is _O.IS_NAN:
                return pc.and_(pc.invert(no_nan), pc.invert(all_null))
            only_nan = pc.fill_null(s.contains_nan, False)
            return pc.invert(pc.and_(pc.and_(only_nan, pc.invert(has_null)), no_lower))
        if op in (_O.NOT_EQ, _O.NOT_IN):
            return _TRUE
        if op is _O.STARTS_WITH and isinstance(t, StringType):
            return self._starts_with(s, no_lower)
        if op in (_O.STARTS_WITH, _O.NOT_STARTS_WITH) or not _exact(t):
            return _UNKNOWN
        if op is _O.IN and len(self.pred.values) > IN_PREDICATE_LIMIT:
            # Java does not look at bounds for long lists; neither converts their values.
            return pc.invert(no_lower)
        lits = [literal_key(t, v) for v in self.pred.values]
        if any(k is None for k in lits):
            return _UNKNOWN
        if op is _O.IN:
            return self._in(src, s, no_lower, lits)
        return self._comparison(src, s, op, lits[0])

    def _keys(self, src: SummarySource, s: Summaries, *, lower: bool) -> BoundKeys:
        raw = s.lower if lower else s.upper
        key = (self.field.position, str(self.field.type), lower)
        return src.memo(key, lambda: bound_keys(raw, self.field.type, lower=False))

    def _comparison(
        self, src: SummarySource, s: Summaries, op: Operation, lit: pa.Scalar
    ) -> Verdict:
        if op in (_O.GT, _O.GT_EQ):
            upper = self._keys(src, s, lower=False)
            cmp = pc.less_equal if op is _O.GT else pc.less
            excluded = pc.fill_null(cmp(upper.keys, lit), False)
            verdict = pc.and_(pc.is_valid(s.upper), pc.invert(excluded))
            return pc.if_else(upper.unknown, _UNKNOWN, verdict)
        lower = self._keys(src, s, lower=True)
        cmp = pc.greater_equal if op is _O.LT else pc.greater
        excluded = pc.fill_null(cmp(lower.keys, lit), False)
        verdict = pc.and_(pc.is_valid(s.lower), pc.invert(excluded))
        unknown = lower.unknown
        if op is _O.EQ:
            upper = self._keys(src, s, lower=False)
            too_low = pc.fill_null(pc.less(upper.keys, lit), False)
            verdict = pc.and_(verdict, pc.invert(too_low))
            unknown = pc.or_(unknown, upper.unknown)
        return pc.if_else(unknown, _UNKNOWN, verdict)

    def _in(
        self, src: SummarySource, s: Summaries, no_lower: Verdict, lits: list[pa.Scalar | None]
    ) -> Verdict:
        lower = self._keys(src, s, lower=True)
        upper = self._keys(src, s, lower=False)
        inside: Verdict = _FALSE
        for lit in lits:
            hit = pc.and_(
                pc.fill_null(pc.less_equal(lower.keys, lit), False),
                pc.fill_null(pc.less_equal(lit, upper.keys), True),
            )
            inside = pc.or_(inside, hit)
        verdict = pc.and_(pc.invert(no_lower), inside)
        return pc.if_else(pc.or_(lower.unknown, upper.unknown), _UNKNOWN, verdict)

    def _starts_with(self, s: Summaries, no_lower: Verdict) -> Verdict:
        prefix = pa.scalar(str(self.pred.value).encode("utf-8"), pa.binary())
        size = len(prefix.as_py())
        lower, upper = s.lower.cast(pa.binary()), s.upper.cast(pa.binary())
        above = pc.fill_null(pc.greater(pc.binary_slice(lower, 0, size), prefix), False)
        below = pc.fill_null(pc.less(pc.binary_slice(upper, 0, size), prefix), False)
        return pc.and_(pc.invert(no_lower), pc.invert(pc.or_(above, below)))


_Node = Callable[[SummarySource], Verdict]


def _compile(expr: Expression, fields: dict[int, _Field]) -> _Node:
    def leaf(pred: BoundPredicate) -> _Node:
        found = fields.get(pred.term.field_id)
        if found is None:
            raise TypeError(f"{pred} is not bound to a partition field of the manifest's spec")
        return _Leaf(pred, found)

    return kleene_tree(expr, leaf)


@dataclass(frozen=True, slots=True)
class ArrowSummaryFilter:
    """Java ``ManifestEvaluator`` over columns; immutable, safe across threads."""

    node: _Node

    def __call__(self, src: SummarySource) -> pa.Array:
        """Per manifest: True (might match), False (skip), null (ask the row evaluator)."""
        verdict = self.node(src)
        if isinstance(verdict, pa.Scalar):
            return pa.repeat(verdict, src.num_rows)
        return verdict


def arrow_summary_filter(
    spec: PartitionSpec, schema: Schema, partition_filter: Expression
) -> ArrowSummaryFilter:
    """A vectorized manifest filter for ``partition_filter`` over ``spec``'s summaries.

    Args:
        spec: the manifests' partition spec (summaries are in its field order).
        schema: the table schema, to type the partition fields.
        partition_filter: a NOT-free filter over the partition fields of ``spec`` (the
            inclusive projection of the row filter).
    """
    fields: dict[int, _Field] = {}
    partition_type = spec.partition_type(schema)
    for position, (pf, nf) in enumerate(zip(spec.fields, partition_type.fields, strict=True)):
        fields[pf.field_id] = _Field(position, nf.field_type)
    return ArrowSummaryFilter(_compile(partition_filter, fields))


__all__ = ["ArrowSummaryFilter", "SummarySource", "Summaries", "arrow_summary_filter"]
