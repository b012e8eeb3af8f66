"""Project row filters onto partition values: inclusive and strict projections.

Spec "Scan Planning": a data filter is turned into a filter on a spec's partition tuple.
An *inclusive* projection holds for the partition of every row the filter matches (so a
partition failing it holds no match); a *strict* projection holds only for partitions whose
rows all match. Each transform projects predicates as Iceberg Java 1.10's transforms do
(``Identity``, ``Bucket``, ``Truncate``, ``Dates``/``Timestamps`` through ``ProjectionUtil``
with ``fixInclusiveTimeProjection``/``fixStrictTimeProjection``, ``VoidTransform``,
``UnknownTransform``), and ``Projections.InclusiveProjection``/``StrictProjection`` combine
several partition fields of one column with AND (inclusive) or OR (strict).

Projected predicates are bound to the partition struct: their term is a
:class:`BoundReference` over ``NestedField(partition field id, partition field name, result
type)``. Binding simplifications of Java's ``UnboundPredicate.bind`` are applied too: an IN
whose transformed values collapse to one value becomes ``=``, NOT IN becomes ``!=``.

Inputs must be bound and NOT-free (call ``rewrite_not`` first, as the planner does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    BoundPredicate,
    BoundReference,
    Expression,
    ExpressionVisitor,
    Operation,
    UnboundPredicate,
    and_,
    or_,
    visit,
)
from icecore.lru import LRU
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.schema import Schema
from icecore.transforms import (
    BucketTransform,
    DayTransform,
    IdentityTransform,
    TimeTransform,
    Transform,
    TruncateTransform,
)
from icecore.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
)
from icecore.values import date_to_days, days_to_date, decimal_to_unscaled, unscaled_to_decimal

Projection = Callable[[Expression], Expression]
"""A projection: a bound, NOT-free row filter in, a filter on partition values out."""

_O = Operation


# ---------------------------------------------------------------------------------------
# Building partition predicates (Java: Expressions.predicate + UnboundPredicate.bind)
# ---------------------------------------------------------------------------------------


def partition_reference(field: PartitionField, source_type: IcebergType) -> BoundReference:
    """The bound term of a partition field: its id, name and the transform's result type."""
    result = field.transform.result_type(source_type)
    return BoundReference(
        NestedField(field.field_id, field.name, result, required=False), field.name
    )


def _predicate(op: Operation, ref: BoundReference, values: Iterable[Any] = ()) -> Expression:
    """A partition predicate, simplified as Java's ``UnboundPredicate.bind`` simplifies it.

    Literals for a ``date`` partition field (the ``day`` transform) are converted from day
    counts; IN/NOT IN keep distinct values, and with one value become ``=``/``!=``.
    """
    if isinstance(ref.type, DateType):
        values = [days_to_date(v) if isinstance(v, int) else v for v in values]
    vals = tuple(dict.fromkeys(values)) if op.is_set else tuple(values)
    if op.is_set:
        if not vals:
            return AlwaysFalse() if op is _O.IN else AlwaysTrue()
        if len(vals) == 1:
            return BoundPredicate(_O.EQ if op is _O.IN else _O.NOT_EQ, ref, vals)
    return BoundPredicate(op, ref, vals)


# ---------------------------------------------------------------------------------------
# ProjectionUtil: ordered (truncating) projections of comparisons
# ---------------------------------------------------------------------------------------


def _wrap(bits: int) -> Callable[[int], int]:
    """Two's-complement wrap-around of Java ``int`` (32) or ``long`` (64) arithmetic."""
    half = 1 << (bits - 1)
    return lambda v: ((v + half) % (1 << bits)) - half


_WRAP_INT = _wrap(32)
_WRAP_LONG = _wrap(64)


def _step_int(wrap: Callable[[int], int]) -> Callable[[Any, int], Any]:
    return lambda v, d: wrap(v + d)


def _step_decimal(value: Decimal, delta: int) -> Decimal:
    """``value`` plus ``delta`` units in its last digit, exactly (Java ``unscaledValue ± 1``)."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    scale = -exponent
    return unscaled_to_decimal(decimal_to_unscaled(value, scale) + delta, scale)


def _step_date(value: Any, delta: int) -> int:
    """A date (or day count) moved by ``delta`` days, as a day count (Java int arithmetic)."""
    return _WRAP_INT(date_to_days(value) + delta)


Step = Callable[[Any, int], Any]


def truncate_number(
    op: Operation, value: Any, step: Step, apply: Callable[[Any], Any]
) -> tuple[Operation, Any] | None:
    """Java ``ProjectionUtil.truncateInteger/Long/Decimal``: inclusive, closing open bounds.

    ``x < v`` becomes ``t(x) <= t(v - 1)`` and ``x > v`` becomes ``t(x) >= t(v + 1)``.
    """
    if op is _O.LT:
        return _O.LT_EQ, apply(step(value, -1))
    if op is _O.LT_EQ:
        return _O.LT_EQ, apply(value)
    if op is _O.GT:
        return _O.GT_EQ, apply(step(value, 1))
    if op is _O.GT_EQ:
        return _O.GT_EQ, apply(value)
    if op is _O.EQ:
        return _O.EQ, apply(value)
    return None


def truncate_number_strict(
    op: Operation, value: Any, step: Step, apply: Callable[[Any], Any]
) -> tuple[Operation, Any] | None:
    """Java ``ProjectionUtil.truncate*Strict``: ``x <= v`` becomes ``t(x) < t(v + 1)``."""
    if op is _O.LT:
        return _O.LT, apply(value)
    if op is _O.LT_EQ:
        return _O.LT, apply(step(value, 1))
    if op is _O.GT:
        return _O.GT, apply(value)
    if op is _O.GT_EQ:
        return _O.GT, apply(step(value, -1))
    if op is _O.NOT_EQ:
        return _O.NOT_EQ, apply(value)
    return None  # EQ: adjacent values share a partition, nothing guarantees equality


def truncate_array(
    op: Operation, value: Any, apply: Callable[[Any], Any]
) -> tuple[Operation, Any] | None:
    """Java ``ProjectionUtil.truncateArray`` (strings, binary): inclusive."""
    if op in (_O.LT, _O.LT_EQ):
        return _O.LT_EQ, apply(value)
    if op in (_O.GT, _O.GT_EQ):
        return _O.GT_EQ, apply(value)
    if op in (_O.EQ, _O.STARTS_WITH):
        return op, apply(value)
    return None


def truncate_array_strict(
    op: Operation, value: Any, apply: Callable[[Any], Any]
) -> tuple[Operation, Any] | None:
    """Java ``ProjectionUtil.truncateArrayStrict``."""
    if op in (_O.LT, _O.LT_EQ):
        return _O.LT, apply(value)
    if op in (_O.GT, _O.GT_EQ):
        return _O.GT, apply(value)
    if op is _O.NOT_EQ:
        return _O.NOT_EQ, apply(value)
    return None


def fix_inclusive_time(op: Operation, values: tuple[int, ...]) -> tuple[Operation, tuple[int, ...]]:
    """Java ``ProjectionUtil.fixInclusiveTimeProjection``.

    Writers before Iceberg 0.10.0 put pre-1970 values one unit too high (day(1969-12-31
    10:00) was 0, not -1), so negative projected bounds are widened by one unit to still
    read their files: ``< -1`` becomes ``< 0``, ``= -1`` becomes ``IN (-1, 0)``.
    """
    if op in (_O.LT, _O.LT_EQ, _O.EQ) and values[0] < 0:
        if op is _O.EQ:
            return _O.IN, (values[0], values[0] + 1)
        return op, (values[0] + 1,)
    if op is _O.IN and any(v < 0 for v in values):
        return op, tuple(dict.fromkeys(x for v in values for x in ((v, v + 1) if v < 0 else (v,))))
    return op, values


def fix_strict_time(op: Operation, values: tuple[int, ...]) -> tuple[Operation, tuple[int, ...]]:
    """Java ``ProjectionUtil.fixStrictTimeProjection`` (see :func:`fix_inclusive_time`).

    ``> v`` and ``>= v`` with ``v <= 0`` use ``v + 1``; ``!= v`` with ``v < 0`` becomes
    ``NOT IN (v, v + 1)``; NOT IN adds ``v + 1`` for every negative ``v``.
    """
    if op in (_O.GT, _O.GT_EQ) and values[0] <= 0:
        return op, (values[0] + 1,)
    if op is _O.NOT_EQ and values[0] < 0:
        return _O.NOT_IN, (values[0], values[0] + 1)
    if op is _O.NOT_IN and any(v < 0 for v in values):
        return op, tuple(dict.fromkeys(x for v in values for x in ((v, v + 1) if v < 0 else (v,))))
    return op, values


def utf16_length(text: str) -> int:
    """Java's ``String.length()``: UTF-16 code units (two for code points above U+FFFF)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


# ---------------------------------------------------------------------------------------
# Per-transform projection of one predicate
# ---------------------------------------------------------------------------------------

Projected = tuple[Operation, tuple[Any, ...]] | None
"""A projected operator and its partition literals, or None when nothing can be said."""


def _same(pred: BoundPredicate) -> Projected:
    return pred.op, pred.values


def _set(pred: BoundPredicate, apply: Callable[[Any], Any], transform: Transform) -> Projected:
    """An IN or NOT IN list through ``transform``: its distinct results, computed once.

    A filter's IN list is projected for each spec and again for residuals, strict and
    inclusive; a list of a million ids through ``bucket`` would hash a million values each
    time. The results are kept per predicate object (held by the entry, so an id is never
    reused) and transform.
    """
    key = (id(pred), str(transform), str(pred.term.type))
    held = _PROJECTED_SETS.get(key)
    if held is None or held[0] is not pred:
        held = _PROJECTED_SETS.put(key, (pred, tuple(dict.fromkeys(map(apply, pred.values)))))
    return pred.op, held[1]


_PROJECTED_SETS: LRU[tuple[int, str, str], tuple[BoundPredicate, tuple[Any, ...]]] = LRU(64)


def _one(result: tuple[Operation, Any] | None) -> Projected:
    return None if result is None else (result[0], (result[1],))


def _project_bucket(
    pred: BoundPredicate, transform: BucketTransform, source: IcebergType, strict: bool
) -> Projected:
    """Java ``Bucket.project``/``projectStrict``: only (NOT) EQ and (NOT) IN carry over."""
    if pred.op.is_unary:
        return _same(pred)
    apply = transform.bind(source)
    if pred.op is (_O.NOT_EQ if strict else _O.EQ):
        return pred.op, (apply(pred.value),)
    if pred.op is (_O.NOT_IN if strict else _O.IN):
        return _set(pred, apply, transform)
    return None


def _project_string(pred: BoundPredicate, width: int, strict: bool) -> Projected:
    """Java ``Truncate.TruncateString``: prefixes compare their UTF-16 length with the width."""

    def apply(value: str) -> str:
        return value[:width]  # code points, as Java's UnicodeUtil.truncateString

    op = pred.op
    if op in (_O.STARTS_WITH, _O.NOT_STARTS_WITH):
        prefix = pred.value
        length = utf16_length(prefix)
        if length < width:
            return op, (prefix,)
        if length == width:
            return (_O.EQ if op is _O.STARTS_WITH else _O.NOT_EQ), (prefix,)
        if op is _O.STARTS_WITH:
            return None if strict else (op, (apply(prefix),))
        return (op, (apply(prefix),)) if strict else None
    if strict:
        return _one(truncate_array_strict(op, pred.value, apply))
    return _one(truncate_array(op, pred.value, apply))


def _project_truncate(
    pred: BoundPredicate, transform: TruncateTransform, source: IcebergType, strict: bool
) -> Projected:
    apply = transform.bind(source)
    if pred.op.is_unary:
        return _same(pred)
    if pred.op in (_O.LIKE, _O.NOT_LIKE):
        return None  # a pattern says nothing certain about a truncated value
    if pred.op.is_set:
        return _set(pred, apply, transform) if pred.op is (_O.NOT_IN if strict else _O.IN) else None
    if isinstance(source, StringType):
        return _project_string(pred, transform.width, strict)
    if isinstance(source, BinaryType):
        project_array = truncate_array_strict if strict else truncate_array
        return _one(project_array(pred.op, pred.value, apply))
    step: Step
    if isinstance(source, IntegerType):
        step = _step_int(_WRAP_INT)
    elif isinstance(source, LongType):
        step = _step_int(_WRAP_LONG)
    elif isinstance(source, DecimalType):
        step = _step_decimal
    else:
        return None
    project_number = truncate_number_strict if strict else truncate_number
    return _one(project_number(pred.op, pred.value, step, apply))


def _time_units(transform: TimeTransform, source: IcebergType) -> Callable[[Any], int]:
    """The transform as an ``int`` count of units (days for ``day``, not ``date``)."""
    if isinstance(transform, DayTransform):
        return lambda v: transform.days(source, v)  # type: ignore[return-value]
    bound = transform.bind(source)
    return lambda v: int(bound(v))


def _project_time(
    pred: BoundPredicate, transform: TimeTransform, source: IcebergType, strict: bool
) -> Projected:
    """Java ``Dates``/``Timestamps`` projections, with the pre-1970 fix where Java applies it.

    Java fixes every timestamp projection, and date projections except ``day`` of a date.
    """
    if pred.op.is_unary:
        return _same(pred)
    apply = _time_units(transform, source)
    fix = not (isinstance(source, DateType) and isinstance(transform, DayTransform))
    projected: Projected
    if pred.op.is_set:
        if pred.op is not (_O.NOT_IN if strict else _O.IN):
            return None
        projected = _set(pred, apply, transform)
    else:
        step: Step = _step_date if isinstance(source, DateType) else _step_int(_WRAP_LONG)
        project_number = truncate_number_strict if strict else truncate_number
        projected = _one(project_number(pred.op, pred.value, step, apply))
    if projected is None or not fix:
        return projected
    if strict:
        if projected[0] in (_O.EQ, _O.IN):
            return None
        return fix_strict_time(*projected)
    if projected[0] in (_O.NOT_EQ, _O.NOT_IN):
        return None
    return fix_inclusive_time(*projected)


def project_predicate(
    field: PartitionField, pred: BoundPredicate, strict: bool
) -> Expression | None:
    """Project one bound predicate on a partition field's source column (Java ``Transform``).

    Args:
        field: a partition field whose source is the predicate's column.
        pred: the predicate, bound to the table schema.
        strict: project strictly (``projectStrict``) instead of inclusively (``project``).

    Returns:
        A predicate on the partition field (or a constant after binding simplification), or
        None when the transform cannot project the predicate (Java returns null), which
        counts as ``true`` in an inclusive and ``false`` in a strict projection.
    """
    transform: Transform = field.transform
    source = pred.term.type
    projected: Projected
    if isinstance(transform, IdentityTransform):
        projected = _same(pred)
    elif isinstance(transform, BucketTransform):
        if not transform.can_transform(source):
            return None
        projected = _project_bucket(pred, transform, source, strict)
    elif isinstance(transform, TruncateTransform):
        if not transform.can_transform(source):
            return None
        projected = _project_truncate(pred, transform, source, strict)
    elif isinstance(transform, TimeTransform):
        if not transform.can_transform(source):
            return None
        projected = _project_time(pred, transform, source, strict)
    else:  # void, unknown: Java's project and projectStrict return null
        return None
    if projected is None:
        return None
    return _predicate(projected[0], partition_reference(field, source), projected[1])


# ---------------------------------------------------------------------------------------
# Projections.InclusiveProjection / StrictProjection
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Projector(ExpressionVisitor[Expression]):
    """Java ``Projections.BaseProjectionEvaluator``; stateless, so one serves every call."""

    by_source: dict[int, tuple[PartitionField, ...]]
    strict: bool

    def always_true(self) -> Expression:
        return AlwaysTrue()

    def always_false(self) -> Expression:
        return AlwaysFalse()

    def not_(self, child: Expression) -> Expression:
        raise TypeError("project a NOT-free expression: call rewrite_not before projecting")

    def and_(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def or_(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        raise TypeError(f"bind the expression before projecting it: {pred}")

    def bound_predicate(self, pred: BoundPredicate) -> Expression:
        parts = self.by_source.get(pred.term.field_id, ())
        result: Expression = AlwaysFalse() if self.strict else AlwaysTrue()
        for part in parts:
            projected = project_predicate(part, pred, self.strict)
            if projected is not None:
                result = or_(result, projected) if self.strict else and_(result, projected)
        return result


def fields_by_source(spec: PartitionSpec) -> dict[int, tuple[PartitionField, ...]]:
    """The spec's partition fields keyed by source column id, in spec order."""
    found: dict[int, list[PartitionField]] = {}
    for field in spec.fields:
        found.setdefault(field.source_id, []).append(field)
    return {k: tuple(v) for k, v in found.items()}


def _projection(spec: PartitionSpec, strict: bool) -> Projection:
    projector = _Projector(fields_by_source(spec), strict)

    def project(expr: Expression) -> Expression:
        return visit(expr, projector)

    return project


def inclusive_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Projection:
    """A projection whose result holds for the partition of every row ``expr`` matches.

    Java ``Projections.inclusive(spec, caseSensitive)``: predicates on unpartitioned columns
    and predicates a transform cannot project become ``true``; several partition fields of
    one column are ANDed (``day(ts)`` and ``bucket(ts)``). Fields of older specs whose source
    column was dropped never match a predicate's column, so they project to ``true``.

    Args:
        schema: the table schema the filter was bound to (kept for API symmetry with Java;
            the bound predicates carry their own types).
        spec: the partition spec to project onto (each manifest's own spec).
        case_sensitive: how the filter was bound (binding is done before projection here).

    Returns:
        A function from a bound, NOT-free row filter to a filter on partition values.
    """
    del schema, case_sensitive
    return _projection(spec, strict=False)


def strict_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Projection:
    """A projection whose result holds only for partitions where every row matches ``expr``.

    Java ``Projections.strict(spec, caseSensitive)``: predicates nothing can project become
    ``false``; several partition fields of one column are ORed.

    Args:
        schema: the table schema the filter was bound to.
        spec: the partition spec to project onto.
        case_sensitive: how the filter was bound.

    Returns:
        A function from a bound, NOT-free row filter to a filter on partition values.
    """
    del schema, case_sensitive
    return _projection(spec, strict=True)


__all__ = [
    "Projection",
    "fields_by_source",
    "fix_inclusive_time",
    "fix_strict_time",
    "inclusive_projection",
    "partition_reference",
    "project_predicate",
    "strict_projection",
    "truncate_array",
    "truncate_array_strict",
    "truncate_number",
    "truncate_number_strict",
    "utf16_length",
]
