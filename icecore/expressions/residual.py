"""Residual filters: what remains of a row filter once a file's partition values are known.

Spec "Scan Planning": a scan task carries the residual of the filter for its file's
partition, so readers only evaluate what the partition does not already decide. Matches
Iceberg Java 1.10's ``ResidualEvaluator``: for each predicate on a partitioned column, and
each partition field of that column in spec order, the predicate becomes ``true`` when its
strict projection holds for the partition, ``false`` when its inclusive projection does not,
and stays as it is otherwise. An unpartitioned spec (no fields) leaves the filter unchanged.

Projections are computed once per predicate and partition field when the evaluator is
built; each call only evaluates them on the partition tuple (with Java's ``Evaluator``
semantics, :mod:`icecore.expressions.evaluator`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, overload

from icecore.expressions.evaluator import row_evaluator
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Not,
    Or,
    UnboundPredicate,
    and_,
    not_,
    or_,
)
from icecore.expressions.projection import fields_by_source, project_predicate
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.schema import Schema

Partition = Mapping[int, Any]
"""Partition values keyed by partition field id (``DataFile.partition``)."""

Residuals = Callable[[Partition], Expression]
"""A function from a file's partition values to the residual filter for that file."""

_Test = Callable[[Partition], bool] | None


def _yes(row: Partition) -> bool:
    return True


def _no(row: Partition) -> bool:
    return False


def projection_test(projected: Expression | None) -> _Test:
    """A projected predicate as a test on partition values (None: there is no projection)."""
    if projected is None:
        return None
    if isinstance(projected, AlwaysTrue):
        return _yes
    if isinstance(projected, AlwaysFalse):
        return _no
    return row_evaluator(projected)


def _predicate_residual(
    pred: BoundPredicate, parts: tuple[PartitionField, ...]
) -> Callable[[Partition], Expression]:
    """Java ``ResidualVisitor.predicate(BoundPredicate)`` with projections precomputed."""
    if not parts:
        return lambda row: pred
    tests = tuple(
        (
            projection_test(project_predicate(part, pred, strict=True)),
            projection_test(project_predicate(part, pred, strict=False)),
        )
        for part in parts
    )

    def residual(row: Partition) -> Expression:
        for strict, inclusive in tests:
            if strict is not None and strict(row):
                return AlwaysTrue()
            if inclusive is not None and not inclusive(row):
                return AlwaysFalse()
        return pred

    return residual


def _compile(
    expr: Expression, by_source: dict[int, tuple[PartitionField, ...]]
) -> Callable[[Partition], Expression]:
    if isinstance(expr, AlwaysTrue | AlwaysFalse):
        return lambda row: expr
    if isinstance(expr, BoundPredicate):
        return _predicate_residual(expr, by_source.get(expr.term.field_id, ()))
    if isinstance(expr, Not):
        child = _compile(expr.child, by_source)
        return lambda row: not_(child(row))
    if isinstance(expr, And | Or):
        left, right = _compile(expr.left, by_source), _compile(expr.right, by_source)
        if isinstance(expr, And):
            return lambda row: and_(left(row), right(row))
        return lambda row: or_(left(row), right(row))
    if isinstance(expr, UnboundPredicate):
        raise TypeError(f"bind the expression before computing residuals: {expr}")
    raise TypeError(f"not an expression: {expr!r}")


@overload
def residual_evaluator(
    spec: PartitionSpec, expr: Expression, case_sensitive: bool = True
) -> Residuals: ...


@overload
def residual_evaluator(
    spec: PartitionSpec, schema: Schema, expr: Expression, case_sensitive: bool = True
) -> Residuals: ...


def residual_evaluator(spec: PartitionSpec, *args: Any, **kwargs: Any) -> Residuals:
    """The residual of a bound row filter for each partition of ``spec``.

    Java ``ResidualEvaluator.of(spec, expr, caseSensitive)``. Called as
    ``residual_evaluator(spec, expr, case_sensitive)`` or, with the table schema,
    ``residual_evaluator(spec, schema, expr, case_sensitive)`` (the schema is not needed:
    bound predicates carry their types).

    Args:
        spec: the partition spec of the files (each file's own spec).
        *args: ``expr`` or ``schema, expr``, optionally followed by ``case_sensitive``.
        **kwargs: ``expr``, ``schema`` and ``case_sensitive`` by name.

    Returns:
        A function from partition values (keyed by partition field id) to the residual:
        ``true``, ``false`` or the filter with decided predicates folded away. It keeps no
        state between calls.
    """
    rest = list(args)
    if rest and isinstance(rest[0], Schema):
        rest.pop(0)
    kwargs.pop("schema", None)
    expr = kwargs.pop("expr") if "expr" in kwargs else rest.pop(0)
    if not isinstance(expr, Expression):
        raise TypeError(f"not an expression: {expr!r}")
    if not spec.fields:
        return lambda partition: expr
    return _compile(expr, fields_by_source(spec))


__all__ = ["Partition", "Residuals", "projection_test", "residual_evaluator"]
