"""Push NOT down to the predicates so that no ``Not`` node is left.

Iceberg Java's ``RewriteNot`` (and PyIceberg's ``rewrite_not``): projection and the
manifest and metrics evaluators only handle predicates joined by AND and OR, so a filter
is rewritten first. De Morgan's laws move NOT through AND and OR, and a negated predicate
takes its operator's negation (:meth:`Operation.negate`: ``<`` becomes ``>=``, ``IN``
becomes ``NOT IN``, ``IS NULL`` becomes ``IS NOT NULL``...).

Filters written as SQL text never reach this with a ``Not`` node: the parser resolves NOT by
SQL's three-valued logic (:mod:`icecore.expressions.sql_semantics`), where ``NOT (c = 'x')``
does not hold for a NULL ``c``. This rewrite serves expressions built through the API,
which carry Iceberg's two-valued meaning.

This keeps the meaning because Iceberg evaluates NOT as plain boolean negation of the
evaluated child (Java's ``Evaluator``: ``not(result) = !result``) and each negated operator
is evaluated as the exact complement of the original on every row, nulls included (Java's
``notEq`` is ``!eq``, ``notIn`` is ``!in``, and comparisons order null first).
"""

from __future__ import annotations

import dataclasses

from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    ExpressionVisitor,
    Not,
    Or,
    UnboundPredicate,
    and_,
    or_,
    visit,
)


def rewrite_not(expr: Expression) -> Expression:
    """Return an equivalent expression without ``Not`` nodes (bound or unbound)."""
    return visit(expr, _RewriteNot())


class _RewriteNot(ExpressionVisitor[Expression]):
    def always_true(self) -> Expression:
        return AlwaysTrue()

    def always_false(self) -> Expression:
        return AlwaysFalse()

    def not_(self, child: Expression) -> Expression:
        # Post-order: ``child`` is already free of Not nodes.
        return _negate(child)

    def and_(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def or_(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)

    def unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        return pred

    def bound_predicate(self, pred: BoundPredicate) -> Expression:
        return pred


def _negate(expr: Expression) -> Expression:
    """The negation of a Not-free expression, itself Not-free."""
    if isinstance(expr, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(expr, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(expr, And):
        return or_(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, Or):
        return and_(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, BoundPredicate | UnboundPredicate):
        return dataclasses.replace(expr, op=expr.op.negate())
    if isinstance(expr, Not):  # not reached after the visitor; kept for direct callers
        return rewrite_not(expr.child)
    raise TypeError(f"not an expression: {expr!r}")


__all__ = ["rewrite_not"]
