"""Skip manifests whose partition field summaries rule out a partition filter.

Spec "Manifest Lists": each manifest carries one ``field_summary`` per partition field
(``contains_null``, ``contains_nan``, ``lower_bound``, ``upper_bound`` as Appendix D bytes of
the partition field's type). :func:`manifest_evaluator` decides "might some row match?"
exactly as Iceberg Java 1.10's ``ManifestEvaluator``:

* a manifest without summaries might match;
* an absent lower bound means every value is null (or NaN): comparisons, IN and
  STARTS_WITH cannot match; ``IS NOT NULL`` cannot match when the summary has nulls and no
  bound, and for float fields also ``contains_nan`` is known false;
* ``!=`` and NOT IN never prune; IN with more than 200 values never prunes;
* STARTS_WITH and NOT STARTS_WITH compare the raw UTF-8 bound bytes with the prefix.

The filter is the inclusive projection of the row filter onto the manifest's spec (see
:mod:`icecore.expressions.projection`): predicates bound to partition field ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from icecore.expressions.metrics_eval import IN_PREDICATE_LIMIT, order_key
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
from icecore.manifest import ManifestFile, PartitionFieldSummary
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.types import DoubleType, FloatType, IcebergType
from icecore.values import from_bytes, to_human_string

_O = Operation

Summaries = Sequence[PartitionFieldSummary]
SummaryCheck = Callable[[Summaries], bool]
SummaryReason = Callable[[Summaries], "str | None"]


class ManifestEvaluator(Protocol):
    """A compiled partition filter: call it for the verdict, ``explain`` for the reason."""

    def __call__(self, manifest: ManifestFile) -> bool:
        """Whether some row of the manifest might match (False: skip the manifest)."""
        ...

    def explain(self, manifest: ManifestFile) -> str | None:
        """Why the manifest cannot match, or None when it might."""
        ...


# ---------------------------------------------------------------------------------------
# Per-predicate rules (pure functions of one summary)
# ---------------------------------------------------------------------------------------


def all_values_null(summary: PartitionFieldSummary, is_float: bool) -> bool:
    """Java ``allValuesAreNull``: nulls and no bound (and, for floats, known to lack NaN)."""
    all_null = summary.contains_null and summary.lower_bound is None
    if all_null and is_float:
        return summary.contains_nan is not None and not summary.contains_nan
    return all_null


def utf8_prefix_compare(bound: bytes, prefix: bytes) -> int:
    """Unsigned comparison of ``bound`` cut to the prefix's length with ``prefix``."""
    head = bound[: len(prefix)]
    return (head > prefix) - (head < prefix)


@dataclass(frozen=True, slots=True)
class _Field:
    """A partition field as a predicate sees it: its summary position and type."""

    position: int
    name: str
    type: IcebergType
    label: str

    def decode(self, raw: bytes) -> Any:
        return from_bytes(self.type, raw)

    def text(self, raw: bytes | None) -> str:
        if raw is None:
            return "none"
        try:
            return to_human_string(self.type, self.decode(raw))
        except Exception:  # noqa: BLE001 - a reason must never fail the plan
            return raw.hex()


def _predicate_check(pred: BoundPredicate, field: _Field) -> SummaryCheck:
    """Java ``ManifestEvaluator.ManifestEvalVisitor`` for one predicate."""
    pos, op = field.position, pred.op
    key = order_key(field.type)
    is_float = isinstance(field.type, FloatType | DoubleType)

    def summary(stats: Summaries) -> PartitionFieldSummary | None:
        return stats[pos] if pos < len(stats) else None

    if op is _O.IS_NULL:

        def is_null(stats: Summaries) -> bool:
            s = summary(stats)
            return s is None or bool(s.contains_null)

        return is_null
    if op is _O.NOT_NULL:

        def not_null(stats: Summaries) -> bool:
            s = summary(stats)
            return s is None or not all_values_null(s, is_float)

        return not_null
    if op is _O.IS_NAN:

        def is_nan(stats: Summaries) -> bool:
            s = summary(stats)
            if s is None:
                return True
            if s.contains_nan is not None and not s.contains_nan:
                return False
            return not all_values_null(s, is_float)

        return is_nan
    if op is _O.NOT_NAN:

        def not_nan(stats: Summaries) -> bool:
            s = summary(stats)
            return s is None or not (
                s.contains_nan is True and not s.contains_null and s.lower_bound is None
            )

        return not_nan
    if op in (_O.NOT_EQ, _O.NOT_IN):
        return _always
    if op in (_O.LT, _O.LT_EQ, _O.GT, _O.GT_EQ, _O.EQ):
        lit_key = key(pred.value)
        check_lower = op in (_O.LT, _O.LT_EQ, _O.EQ)
        check_upper = op in (_O.GT, _O.GT_EQ, _O.EQ)

        def compare(stats: Summaries) -> bool:
            s = summary(stats)
            if s is None:
                return True
            if s.lower_bound is None if check_lower else s.upper_bound is None:
                return False  # all values are null
            if check_lower:
                lower = key(field.decode(s.lower_bound))  # type: ignore[arg-type]
                if lower > lit_key or (op is _O.LT and lower == lit_key):
                    return False
            if check_upper and s.upper_bound is not None:
                upper = key(field.decode(s.upper_bound))
                if upper < lit_key or (op is _O.GT and upper == lit_key):
                    return False
            return True

        return compare
    if op is _O.IN:
        too_many = len(pred.values) > IN_PREDICATE_LIMIT
        lit_keys = () if too_many else tuple(key(v) for v in pred.values)

        def in_(stats: Summaries) -> bool:
            s = summary(stats)
            if s is None:
                return True
            if s.lower_bound is None:
                return False
            if too_many:
                return True
            lower = key(field.decode(s.lower_bound))
            remaining = [k for k in lit_keys if lower <= k]
            if not remaining:
                return False
            if s.upper_bound is None:
                return True
            upper = key(field.decode(s.upper_bound))
            return any(k <= upper for k in remaining)

        return in_
    prefix = str(pred.value).encode("utf-8")
    if op is _O.STARTS_WITH:

        def starts_with(stats: Summaries) -> bool:
            s = summary(stats)
            if s is None:
                return True
            if s.lower_bound is None:
                return False
            if utf8_prefix_compare(s.lower_bound, prefix) > 0:
                return False
            return s.upper_bound is None or utf8_prefix_compare(s.upper_bound, prefix) >= 0

        return starts_with
    if op is _O.NOT_STARTS_WITH:

        def not_starts_with(stats: Summaries) -> bool:
            s = summary(stats)
            if s is None or s.contains_null:
                return True
            lower, upper = s.lower_bound, s.upper_bound
            if lower is None or upper is None or len(lower) < len(prefix):
                return True
            if lower[: len(prefix)] != prefix or len(upper) < len(prefix):
                return True
            return upper[: len(prefix)] != prefix

        return not_starts_with
    raise TypeError(f"unsupported predicate: {pred}")  # pragma: no cover


def _always(stats: Summaries) -> bool:
    return True


def _never(stats: Summaries) -> bool:
    return False


def _predicate_reason(pred: BoundPredicate, field: _Field) -> SummaryReason:
    """The reason text for a predicate whose check rejected the summaries."""

    def reason(stats: Summaries) -> str | None:
        s = stats[field.position]
        if s.lower_bound is None and pred.op is not _O.NOT_STARTS_WITH:
            what = "has only null values" if s.contains_null else "has no non-null values"
            if pred.op is _O.IS_NAN and s.contains_nan is False:
                what = "has no NaN values"
            elif pred.op is _O.NOT_NAN:
                what = "has only NaN values"
            return f"partition {field.label} {what}, excluding {pred}"
        if pred.op is _O.IS_NULL:
            return f"partition {field.label} has no null values, excluding {pred}"
        if pred.op is _O.IS_NAN:
            return f"partition {field.label} has no NaN values, excluding {pred}"
        bounds = f"[{field.text(s.lower_bound)}, {field.text(s.upper_bound)}]"
        return f"partition {field.label} bounds {bounds} exclude {pred}"

    return reason


# ---------------------------------------------------------------------------------------
# Compiling the partition filter
# ---------------------------------------------------------------------------------------


def _true_reason(stats: Summaries) -> str | None:
    return None


def _false_reason(stats: Summaries) -> str | None:
    return "the partition filter is always false"


def _compile(expr: Expression, fields: dict[int, _Field]) -> tuple[SummaryCheck, SummaryReason]:
    if isinstance(expr, AlwaysTrue):
        return _always, _true_reason
    if isinstance(expr, AlwaysFalse):
        return _never, _false_reason
    if isinstance(expr, BoundPredicate):
        field = fields.get(expr.term.field_id)
        if field is None:
            raise TypeError(f"{expr} is not bound to a partition field of the manifest's spec")
        check = _predicate_check(expr, field)
        explain = _predicate_reason(expr, field)
        return check, lambda stats: None if check(stats) else explain(stats)
    if isinstance(expr, And | Or):
        lc, lr = _compile(expr.left, fields)
        rc, rr = _compile(expr.right, fields)
        if isinstance(expr, And):
            return (
                lambda s: lc(s) and rc(s),
                lambda s: lr(s) if not lc(s) else rr(s),
            )
        return (
            lambda s: lc(s) or rc(s),
            lambda s: None if lc(s) or rc(s) else f"({lr(s)}) and ({rr(s)})",
        )
    reject_node(expr)


@dataclass(frozen=True, slots=True)
class _ManifestEvaluator:
    """Java ``ManifestEvaluator``, compiled once; immutable and thread-safe."""

    check: SummaryCheck
    reason: SummaryReason

    def __call__(self, manifest: ManifestFile) -> bool:
        stats = manifest.partitions
        return stats is None or self.check(stats)

    def explain(self, manifest: ManifestFile) -> str | None:
        stats = manifest.partitions
        if stats is None or self.check(stats):
            return None
        return self.reason(stats)


def manifest_evaluator(
    spec: PartitionSpec, schema: Schema, partition_filter: Expression
) -> ManifestEvaluator:
    """A check of whether a manifest might hold rows matching ``partition_filter``.

    Java ``ManifestEvaluator.forPartitionFilter``. The result is callable (``False``: skip
    the manifest) and has ``explain(manifest)``, e.g. ``"partition day(pickup_ts) bounds
    [2024-08-01, 2024-08-07] exclude pickup_ts_day >= datetime.date(2024, 9, 1)"``.

    Args:
        spec: the manifest's partition spec (summaries are in its field order).
        schema: the table schema, to type and name the partition fields.
        partition_filter: a NOT-free filter over the partition fields of ``spec``, such as
            the inclusive projection of the row filter.

    Returns:
        The evaluator; it keeps no state between calls.
    """
    fields: dict[int, _Field] = {}
    partition_type = spec.partition_type(schema)
    for position, (pf, nf) in enumerate(zip(spec.fields, partition_type.fields, strict=True)):
        source = schema.find_column_name(pf.source_id) or f"<dropped {pf.source_id}>"
        label = f"{pf.transform}({source})" if not pf.transform.is_identity else source
        fields[pf.field_id] = _Field(position, pf.name, nf.field_type, label)
    check, reason = _compile(partition_filter, fields)
    return _ManifestEvaluator(check, reason)


__all__ = ["ManifestEvaluator", "all_values_null", "manifest_evaluator", "utf8_prefix_compare"]
