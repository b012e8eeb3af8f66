"""Skip manifests whose partition field summaries rule out a partition filter.

Spec "Manifest Lists": each manifest carries one ``field_summary`` per partition field
(``contains_null``, ``contains_nan``, ``lower_bound``, ``upper_bound`` as Appendix D bytes of
the partition field's type). The verdict is Iceberg Java 1.10's ``ManifestEvaluator``'s:

* a manifest without a summary at the predicate's position might match;
* an absent lower bound means every value is null or NaN: comparisons, IN and STARTS_WITH
  cannot match (for ``>``/``>=`` Java looks at the upper bound instead); ``IS NOT NULL``
  cannot match when the summary has nulls and no bound (for floats also no NaN);
* ``!=`` and NOT IN never prune; IN with more than 200 values never prunes;
* STARTS_WITH and NOT STARTS_WITH compare raw bound bytes cut to the prefix's length.

Thousands of manifests are judged with a few Arrow kernels. Where the kernels cannot be
exact (float and double bounds, whose summary literals Java does not round; decimal, uuid
and boolean; bounds of an unexpected width; strings that are not UTF-8; NOT STARTS_WITH;
literals without a key form), the leaves are unknown, and the manifests still unknown
after the Kleene combination are judged one by one from their raw summaries by each leaf's
same rules in Python (the *slow path*, which also gives ``explain``'s reason).
The filter is the inclusive projection of the row filter onto the manifest's spec (see
:mod:`icecore.expressions.projection`): predicates bound to partition field ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from icecore.arrow_types import bool_scalar
from icecore.compute import pc
from icecore.expressions.arrow_metrics import (
    IN_PREDICATE_LIMIT,
    BoundKeys,
    Verdict,
    bound_keys,
    kleene_tree,
    literal_key,
    order_key,
    reason_tree,
    settle,
    vectorizable,
)
from icecore.expressions.model import (
    BoundPredicate,
    Expression,
    Operation,
)
from icecore.manifest import PartitionFieldSummary
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.types import DoubleType, FloatType, IcebergType, StringType
from icecore.values import from_bytes, sql_literal

_O = Operation
_TRUE = bool_scalar(True)
_FALSE = bool_scalar(False)
_UNKNOWN = bool_scalar(None)
_COMPARISONS = (_O.LT, _O.LT_EQ, _O.GT, _O.GT_EQ, _O.EQ)


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
    """A partition field as a predicate sees it: its summary position, type and label."""

    position: int
    type: IcebergType
    label: str

    def text(self, raw: bytes | None) -> str:
        if raw is None:
            return "none"
        try:
            return sql_literal(self.type, from_bytes(self.type, raw))
        except Exception:  # noqa: BLE001 - a reason must never fail the plan
            return raw.hex()


def _exact(t: IcebergType) -> bool:
    return vectorizable(t) and not isinstance(t, FloatType | DoubleType)


@dataclass(frozen=True, slots=True)
class _Leaf:
    pred: BoundPredicate
    field: _Field
    keys: tuple[Any, ...] = dataclasses.field(init=False, repr=False)
    """The literals as the slow path compares them (Java's orders)."""

    def __post_init__(self) -> None:
        op, values, key = self.pred.op, self.pred.values, order_key(self.field.type)
        used = op in _COMPARISONS or (op is _O.IN and len(values) <= IN_PREDICATE_LIMIT)
        object.__setattr__(self, "keys", tuple(key(v) for v in values) if used else ())

    def explain(self, at: tuple[SummarySource, int]) -> str | None:
        """Why manifest ``at[1]`` of ``at[0]`` cannot match (None: it might)."""
        s = at[0].summaries(self.field.position)
        if not s.present[at[1]].as_py() or self.might_match(found := _summary(s, at[1])):
            return None
        return self.reason(found)

    def __call__(self, src: SummarySource) -> Verdict:
        s = src.summaries(self.field.position)
        # A manifest without this summary might match anything.
        return pc.if_else(s.present, self._judge(src, s), _TRUE)

    def might_match(self, s: PartitionFieldSummary) -> bool:  # noqa: C901 - per operator
        """The slow path: Java's ``ManifestEvalVisitor`` on one summary's raw values."""
        op, t, pred = self.pred.op, self.field.type, self.pred
        lower, upper = s.lower_bound, s.upper_bound
        is_float = isinstance(t, FloatType | DoubleType)
        all_null = bool(s.contains_null) and lower is None
        if all_null and is_float:
            all_null = s.contains_nan is not None and not s.contains_nan
        if op is _O.IS_NULL:
            return bool(s.contains_null)
        if op is _O.NOT_NULL:
            return not all_null
        if op is _O.IS_NAN:
            return not (s.contains_nan is False or all_null)
        if op is _O.NOT_NAN:
            return not (s.contains_nan is True and not s.contains_null and lower is None)
        if op in (_O.NOT_EQ, _O.NOT_IN, _O.LIKE, _O.NOT_LIKE):
            return True  # bounds never prove a LIKE false
        if op in (_O.STARTS_WITH, _O.NOT_STARTS_WITH):
            prefix, n = str(pred.value).encode("utf-8"), len(str(pred.value).encode("utf-8"))
            if op is _O.NOT_STARTS_WITH:
                return bool(s.contains_null) or not (
                    lower is not None and upper is not None and lower[:n] == upper[:n] == prefix
                )
            return (
                lower is not None and lower[:n] <= prefix and (upper is None or upper[:n] >= prefix)
            )
        if lower is None if op is not _O.GT and op is not _O.GT_EQ else upper is None:
            return False  # all values are null
        if op is _O.IN and len(pred.values) > IN_PREDICATE_LIMIT:
            return True
        key, lits = order_key(t), self.keys
        lo = None if lower is None else key(from_bytes(t, lower))
        hi = None if upper is None else key(from_bytes(t, upper))
        if op is _O.IN:
            assert lo is not None
            return any(lo <= k and (hi is None or k <= hi) for k in lits)
        k = lits[0]
        if op in (_O.LT, _O.LT_EQ, _O.EQ) and (lo > k or (op is _O.LT and lo == k)):
            return False
        return not (
            op in (_O.GT, _O.GT_EQ, _O.EQ)
            and hi is not None
            and (hi < k or (op is _O.GT and hi == k))
        )

    def reason(self, s: PartitionFieldSummary) -> str:
        """Why a summary this leaf rejects cannot match."""
        pred, field = self.pred, self.field
        if s.lower_bound is None and pred.op is not _O.NOT_STARTS_WITH:
            what = "has only null values" if s.contains_null else "has no non-null values"
            if pred.op is _O.IS_NAN and s.contains_nan is False:
                what = "has no NaN values"
            elif pred.op is _O.NOT_NAN:
                what = "has only NaN values"
            return f"partition {field.label} {what}, excluding {pred}"
        if pred.op in (_O.IS_NULL, _O.IS_NAN):
            what = "null" if pred.op is _O.IS_NULL else "NaN"
            return f"partition {field.label} has no {what} values, excluding {pred}"
        bounds = f"[{field.text(s.lower_bound)}, {field.text(s.upper_bound)}]"
        return f"partition {field.label} bounds {bounds} exclude {pred}"

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
        if op in (_O.NOT_EQ, _O.NOT_IN, _O.LIKE, _O.NOT_LIKE):
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


def _summary(s: Summaries, i: int) -> PartitionFieldSummary:
    """Row ``i`` of a position's summaries, as the slow path reads it."""
    return PartitionFieldSummary(
        contains_null=bool(s.contains_null[i].as_py()),
        contains_nan=s.contains_nan[i].as_py(),
        lower_bound=s.lower[i].as_py(),
        upper_bound=s.upper[i].as_py(),
    )


_Node = Callable[[SummarySource], Verdict]


@dataclass(frozen=True, slots=True)
class ArrowSummaryFilter:
    """Java ``ManifestEvaluator`` over columns; immutable, safe across threads."""

    node: _Node
    reason: Callable[[tuple[SummarySource, int]], str | None]
    fast_only: bool

    def __call__(self, src: SummarySource) -> pa.Array:
        """Per manifest: True (might match) or False (skip); null only when ``fast_only``."""
        verdict = self.node(src)
        if isinstance(verdict, pa.Scalar):
            verdict = pa.repeat(verdict, src.num_rows)
        if self.fast_only or not verdict.null_count:
            return verdict
        return settle(verdict, lambda i: self.reason((src, i)) is None)

    def explain(self, src: SummarySource, row: int) -> str | None:
        """Why manifest ``row`` cannot match, or None when it might."""
        return self.reason((src, row))


def arrow_summary_filter(
    spec: PartitionSpec, schema: Schema, partition_filter: Expression, *, fast_only: bool = False
) -> ArrowSummaryFilter:
    """A vectorized manifest filter for ``partition_filter`` over ``spec``'s summaries.

    Args:
        spec: the manifests' partition spec (summaries are in its field order).
        schema: the table schema, to type and name the partition fields.
        partition_filter: a NOT-free filter over the partition fields of ``spec`` (the
            inclusive projection of the row filter).
        fast_only: leave the rows the kernels cannot judge exactly null instead of taking
            the slow path (to test the two paths against each other).
    """
    fields: dict[int, _Field] = {}
    partition_type = spec.partition_type(schema)
    for position, (pf, nf) in enumerate(zip(spec.fields, partition_type.fields, strict=True)):
        source = schema.find_column_name(pf.source_id) or f"<dropped {pf.source_id}>"
        label = f"{pf.transform}({source})" if not pf.transform.is_identity else source
        fields[pf.field_id] = _Field(position, nf.field_type, label)

    def leaf(pred: BoundPredicate) -> _Leaf:
        found = fields.get(pred.term.field_id)
        if found is None:
            raise TypeError(f"{pred} is not bound to a partition field of the manifest's spec")
        return _Leaf(pred, found)

    false = "the partition filter is always false"
    reasons = reason_tree(partition_filter, lambda p: leaf(p).explain, false)
    return ArrowSummaryFilter(kleene_tree(partition_filter, leaf), reasons, fast_only)


__all__ = ["ArrowSummaryFilter", "SummarySource", "Summaries", "arrow_summary_filter"]
