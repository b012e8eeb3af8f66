"""Spark SQL's three-valued filters, said in Iceberg's two-valued expression language.

docs/ARCHITECTURE.md ("Rules of the house"): filters mean what Spark SQL means. In SQL a comparison
with a NULL operand is NULL, ``NOT NULL`` is NULL, and a row is returned only when the whole
filter is TRUE; so ``NOT (c = 'x')`` never returns a row whose ``c`` is NULL. Iceberg's
expression language is two-valued: ``not_eq`` is ``!eq`` and holds for NULL (Java's
``Evaluator``), and its row evaluator orders NULL first (``null < x`` holds). Pushing NOT
down by negating operators (``rewrite_not``) therefore keeps NULL rows that Spark drops.

This module translates once, at the front end, by polarity. For each SQL condition ``e``
the parser builds a :class:`Polar`: ``T(e)``, the rows where ``e`` is TRUE, and ``F(e)``,
the rows where ``e`` is FALSE, both Not-free Iceberg expressions whose two-valued meaning
is exact on every row, NULLs included. Then ``T(NOT e) = F(e)``, ``F(NOT e) = T(e)``,
``T(a AND b) = T(a) AND T(b)``, ``F(a AND b) = F(a) OR F(b)`` (and dually for OR), and the
filter handed to binding is ``T(filter)``. Every consumer (planner, residuals, row filter,
CLI, API, the pages) receives exactly the row set Spark returns, and every evaluator keeps
its plain Iceberg meaning; none needs to know about SQL's third value. The alternative, a
three-valued NOT in each evaluator, would have to be written (and kept right) five times.

Leaves (``c`` a column, ``v`` a non-NULL literal): an operator that Iceberg evaluates as
true on NULL (``!=``, ``NOT IN``, ``NOT LIKE``, and ``<``/``<=`` under Java's null-first
order) is conjoined with ``c IS NOT NULL``. So ``F(c = v) = c IS NOT NULL AND c != v``,
which is also what Spark pushes (it infers ``isnotnull(c)`` from a null-rejecting
predicate), and a file whose ``c`` is all NULL is pruned for it. ``isnan(NULL)`` is false
in Spark (not NULL), so ``F(isnan(c)) = NOT isnan(c)`` keeps NULL rows. An IN list holding
NULL is never FALSE: ``T = c IN (non-NULL values)``, ``F = false``.

NaN is Spark's: NaN = NaN and NaN is above every other value. Iceberg cannot take NaN as a
literal, so once a literal is bound to a float column, :func:`nan_comparison` and
:func:`nan_membership` say the comparison with NaN in what it can (``is_nan``, ``not_nan``,
``true``, ``false``). Comparisons with ordinary numbers stay as they are: the row filter
orders NaN above every number and takes -0.0 = 0.0, as Spark does, and the planner prunes
as Iceberg Java does (a NaN-only file cannot match ``f > 1.0`` there, nor a file of -0.0
alone ``f = 0.0``; Spark, which reads only what Java plans, returns no row from them
either). Writing ``T(f > 1.0)`` as ``f > 1.0 OR isnan(f)`` would read those files and show
rows that Spark does not return.

Plans: the planner prunes by what Spark pushes for the same SQL (:func:`pushed`), not by
``T``: Spark infers ``isnotnull(c)`` only for top-level conjuncts, so under an OR (``NOT (c
= 'x') OR d = 1``) Iceberg Java keeps files whose ``c`` is all NULL, and so does Icecore. The
files planned are Java's; the rows read from them are ``T``'s, exactly Spark SQL's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    BoundPredicate,
    BoundReference,
    Expression,
    Literal,
    Operation,
    Reference,
    UnboundPredicate,
    and_,
    or_,
)

_NULL_TRUE = frozenset(
    {
        Operation.NOT_EQ,
        Operation.NOT_IN,
        Operation.NOT_STARTS_WITH,
        Operation.NOT_LIKE,
        Operation.LT,
        Operation.LT_EQ,
    }
)
"""Operators Iceberg evaluates as true on NULL (``!eq``, ``!in``, null-first ``<``)."""


@dataclass(frozen=True, slots=True)
class Polar:
    """A SQL condition as two Iceberg expressions: where it is TRUE and where it is FALSE.

    Where neither holds, the condition is NULL. Both sides are Not-free and exact on every
    row (the two never hold together).

    Beside the exact sides, a condition carries what Spark pushes to Iceberg for it, so that
    planning prunes exactly what Iceberg Java prunes (:func:`pushed`): ``loose_true`` and
    ``loose_false`` are the two sides in Iceberg's two-valued meaning (``NOT (c = v)`` is
    ``c != v``, true on NULL, as Spark's converter hands it over), and ``infer_true`` /
    ``infer_false`` the columns Spark's optimizer infers ``isnotnull`` for when the condition
    (or its negation) is a top-level conjunct of the filter.
    """

    true: Expression
    false: Expression
    loose_true: Expression
    loose_false: Expression
    infer_true: frozenset[Reference] = frozenset()
    infer_false: frozenset[Reference] = frozenset()

    def negate(self) -> Polar:
        """``NOT e``: TRUE where ``e`` is FALSE and FALSE where it is TRUE; NULL stays NULL."""
        return Polar(
            self.false,
            self.true,
            self.loose_false,
            self.loose_true,
            self.infer_false,
            self.infer_true,
        )


def _exact(true: Expression, false: Expression, infer: frozenset[Reference] = frozenset()) -> Polar:
    """A condition whose two-valued sides are already exact (no guard to drop)."""
    return Polar(true, false, true, false, infer, infer)


def constant(value: bool) -> Polar:
    """``TRUE`` or ``FALSE``."""
    if value:
        return _exact(AlwaysTrue(), AlwaysFalse())
    return _exact(AlwaysFalse(), AlwaysTrue())


def conjunction(*parts: Polar) -> Polar:
    """``a AND b AND ...``: TRUE when all are TRUE, FALSE when any is FALSE (built balanced).

    Spark splits a top-level AND into conjuncts and infers ``isnotnull`` from each; ``NOT (a
    AND b)`` becomes ``NOT a OR NOT b`` (BooleanSimplification), from which it infers nothing.
    """
    return Polar(
        and_(*(p.true for p in parts)),
        or_(*(p.false for p in parts)),
        and_(*(p.loose_true for p in parts)),
        or_(*(p.loose_false for p in parts)),
        frozenset().union(*(p.infer_true for p in parts)),
        frozenset(),
    )


def disjunction(*parts: Polar) -> Polar:
    """``a OR b OR ...``: TRUE when any is TRUE, FALSE when all are FALSE (built balanced).

    Spark infers nothing from an OR; ``NOT (a OR b)`` becomes ``NOT a AND NOT b``.
    """
    return Polar(
        or_(*(p.true for p in parts)),
        and_(*(p.false for p in parts)),
        or_(*(p.loose_true for p in parts)),
        and_(*(p.loose_false for p in parts)),
        frozenset(),
        frozenset().union(*(p.infer_false for p in parts)),
    )


def pushed(condition: Polar) -> Expression:
    """What Spark pushes to Iceberg for a whole filter: planning prunes by exactly this.

    Spark hands Iceberg the filter in Iceberg's two-valued meaning plus the ``isnotnull``
    predicates its optimizer infers from the top-level conjuncts (InferFiltersFromConstraints
    over null-intolerant expressions: comparisons, LIKE, NOT; not IN, OR, IS NULL, isnan).
    Iceberg Java's ``planFiles()`` prunes by that, and so does Icecore's planner: the files
    planned are Java's, while the rows read are filtered by :attr:`Polar.true`, SQL's exact
    meaning (Spark filters them again after the scan, too). Every row where ``true`` holds
    also satisfies this expression, so no file with a matching row is pruned.
    """
    guards = sorted(condition.infer_true, key=lambda r: r.name)
    return and_(
        condition.loose_true, *(UnboundPredicate(Operation.NOT_NULL, ref) for ref in guards)
    )


def _holds(op: Operation, term: Reference, literals: tuple[Literal, ...] = ()) -> Expression:
    """``term op literals`` where it is TRUE in SQL: never on a NULL ``term``."""
    pred = UnboundPredicate(op, term, literals)
    if op in _NULL_TRUE:
        return and_(UnboundPredicate(Operation.NOT_NULL, term), pred)
    return pred


def _guarded(
    op: Operation, negated: Operation, term: Reference, literals: tuple[Literal, ...]
) -> Polar:
    """A null-intolerant leaf: exact sides guarded against NULL, loose sides as Iceberg's."""
    return Polar(
        _holds(op, term, literals),
        _holds(negated, term, literals),
        UnboundPredicate(op, term, literals),
        UnboundPredicate(negated, term, literals),
        frozenset({term}),
        frozenset({term}),
    )


def comparison(op: Operation, term: Reference, literal: Literal) -> Polar:
    """``c op v`` for ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` with a non-NULL ``v``."""
    return _guarded(op, op.negate(), term, (literal,))


def membership(term: Reference, literals: Sequence[Literal], has_null: bool) -> Polar:
    """``c IN (v1, v2, ...)``; with a NULL in the list it is never FALSE (only NULL).

    As pushed: a list of one distinct value is ``c = v`` to Spark (OptimizeIn), null-
    intolerant, so ``isnotnull(c)`` is inferred from it. A longer list is not null-intolerant
    to Spark (nothing is inferred); Iceberg's Spark filter converter guards its negation with
    ``notNull`` wherever it stands, which binding as pushed adds (it knows the column's type,
    and a list holding NaN on a float column is not converted at all).
    """
    values = tuple(literals)
    if not values:
        return _exact(AlwaysFalse(), AlwaysFalse() if has_null else AlwaysTrue())
    true = _holds(Operation.IN, term, values)
    loose_true = UnboundPredicate(Operation.IN, term, values)
    if has_null:
        return Polar(true, AlwaysFalse(), loose_true, AlwaysFalse())
    one = len({(lit.value, lit.type_hint) for lit in values}) == 1
    infer = frozenset({term}) if one else frozenset()
    return Polar(
        true,
        _holds(Operation.NOT_IN, term, values),
        loose_true,
        UnboundPredicate(Operation.NOT_IN, term, values),
        infer,
        infer,
    )


def null_check(term: Reference) -> Polar:
    """``c IS NULL``: never NULL itself; ``NOT (c IS NULL)`` is Spark's ``isnotnull(c)``."""
    return Polar(
        UnboundPredicate(Operation.IS_NULL, term),
        UnboundPredicate(Operation.NOT_NULL, term),
        UnboundPredicate(Operation.IS_NULL, term),
        UnboundPredicate(Operation.NOT_NULL, term),
        frozenset(),
        frozenset({term}),
    )


def null_safe_equal(term: Reference, literal: Literal | None) -> Polar:
    """``c <=> v``: never NULL; TRUE where ``c = v``, or where both are NULL.

    ``c <=> NULL`` is ``c IS NULL``. With a value, Iceberg's ``eq`` is exact (false on NULL)
    and its FALSE side is ``c IS NULL OR c != v``. Spark pushes ``EqualNullSafe`` as
    Iceberg's ``equal`` (``not_equal`` under NOT) and infers nothing from it (it accepts
    NULL).
    """
    if literal is None:
        return null_check(term)
    equal = UnboundPredicate(Operation.EQ, term, (literal,))
    return Polar(
        equal,
        or_(UnboundPredicate(Operation.IS_NULL, term), _holds(Operation.NOT_EQ, term, (literal,))),
        equal,
        UnboundPredicate(Operation.NOT_EQ, term, (literal,)),
    )


def nan_check(term: Reference) -> Polar:
    """``isnan(c)`` / ``c IS NAN``: Spark's ``isnan(NULL)`` is false, not NULL.

    Spark pushes nothing for ``isnan`` (no data source filter says it), so as pushed it is
    left out, and it is not null-intolerant (nothing inferred).
    """
    return Polar(
        UnboundPredicate(Operation.IS_NAN, term),
        UnboundPredicate(Operation.NOT_NAN, term),
        AlwaysTrue(),
        AlwaysTrue(),
    )


def unpushed(condition: Polar) -> Polar:
    """``condition`` as one Spark keeps to itself: pushed as nothing (true) either way.

    What Spark infers from it (``isnotnull``) still goes to Iceberg. Used for a LIKE whose
    pattern holds its escape character: Spark's LikeSimplification then keeps the LIKE,
    which has no data source filter.
    """
    return Polar(
        condition.true,
        condition.false,
        AlwaysTrue(),
        AlwaysTrue(),
        condition.infer_true,
        condition.infer_false,
    )


def prefix(term: Reference, literal: Literal) -> Polar:
    """``c LIKE 'prefix%'`` (Spark's StartsWith, null-intolerant)."""
    return _guarded(Operation.STARTS_WITH, Operation.NOT_STARTS_WITH, term, (literal,))


def like(term: Reference, pattern: Literal, escape: Literal) -> Polar:
    """``c LIKE pattern [ESCAPE e]`` for any pattern (null-intolerant, as Spark's Like).

    Iceberg has no such predicate, so none is pushed for it: callers say what Spark pushes
    (:func:`unpushed`, :func:`pushed_prefix`); what Spark infers (``isnotnull(c)``) stays.
    """
    return _guarded(Operation.LIKE, Operation.NOT_LIKE, term, (pattern, escape))


def pushed_prefix(condition: Polar, starts: Polar) -> Polar:
    """``condition`` as Spark pushes ``LIKE 'abc%xyz'``: its ``StartsWith`` alone.

    Spark's LikeSimplification makes the pattern ``length(c) >= n AND StartsWith(c, 'abc')
    AND EndsWith(c, 'xyz')``; only ``StartsWith`` converts to Iceberg, and under NOT (an OR
    of negations, one unconvertible) nothing does.
    """
    return Polar(
        condition.true,
        condition.false,
        starts.loose_true,
        AlwaysTrue(),
        condition.infer_true,
        condition.infer_false,
    )


def nan_comparison(op: Operation, term: BoundReference) -> Expression:
    """``term op NaN`` on a float column, as Iceberg can say it.

    Spark orders NaN above every value and equal to itself (``Double.compare``), which is
    also the order of Iceberg Java's row evaluator; this keeps that two-valued meaning (on
    NULL too: ``null < NaN`` holds under the null-first order, as ``not_nan`` does), so the
    polarity translation stays exact.
    """
    if op is Operation.EQ or op is Operation.GT_EQ:
        return BoundPredicate(Operation.IS_NAN, term)
    if op is Operation.NOT_EQ or op is Operation.LT:
        return BoundPredicate(Operation.NOT_NAN, term)
    if op is Operation.LT_EQ:
        return AlwaysTrue()
    if op is Operation.GT:
        return AlwaysFalse()
    raise ValueError(f"not a comparison: {op}")


def nan_membership(op: Operation, term: BoundReference, others: Expression) -> Expression:
    """``term IN (..., NaN)`` (or NOT IN) on a float column, ``others`` bound without NaN."""
    if op is Operation.IN:
        return or_(others, BoundPredicate(Operation.IS_NAN, term))
    return and_(others, BoundPredicate(Operation.NOT_NAN, term))


__all__ = [
    "Polar",
    "comparison",
    "conjunction",
    "constant",
    "disjunction",
    "like",
    "membership",
    "nan_check",
    "nan_comparison",
    "nan_membership",
    "unpushed",
    "null_check",
    "null_safe_equal",
    "prefix",
    "pushed_prefix",
]
