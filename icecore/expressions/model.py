"""Boolean expressions over table columns: the one model every evaluator works on.

Spec "Scan Planning": a filter is a boolean expression of predicates on columns; it is
bound to a schema (names -> field ids, literals -> the column's type), projected onto
partition specs, and evaluated against manifest summaries, file metrics and rows.

Unbound expressions come from the parser and name columns; bound ones carry the field and
typed literal values in the representation :mod:`icecore.values` uses for bounds (ints for
long/time/timestamps in micros or nanos, ``datetime.date`` for dates, ``Decimal``, ``str``,
``bytes``, ``uuid.UUID``, ``float``, ``bool``). Every node is immutable; evaluators build
fresh state per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, NoReturn, TypeVar

from icecore.types import IcebergType, NestedField
from icecore.values import sql_literal


class Operation(Enum):
    """Predicate operators; each knows its negation (used by ``rewrite_not``)."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    LT = "lt"
    LT_EQ = "lt_eq"
    GT = "gt"
    GT_EQ = "gt_eq"
    EQ = "eq"
    NOT_EQ = "not_eq"
    IN = "in"
    NOT_IN = "not_in"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"
    LIKE = "like"
    """SQL LIKE with any pattern (values: the pattern and its escape character). Not an
    Iceberg predicate: no metric or partition proves it false, so only rows decide it."""
    NOT_LIKE = "not_like"

    def negate(self) -> Operation:
        """The operator that holds exactly when this one does not (for non-null values)."""
        return _NEGATIONS[self]

    @property
    def is_unary(self) -> bool:
        """Takes no literal (null and NaN checks)."""
        return self in _UNARY

    @property
    def is_set(self) -> bool:
        """Takes a set of literals (IN, NOT IN)."""
        return self in (Operation.IN, Operation.NOT_IN)

    @property
    def symbol(self) -> str:
        """How the operator reads in SQL (for reports and errors)."""
        return _SYMBOLS[self]


_NEGATIONS = {
    Operation.IS_NULL: Operation.NOT_NULL,
    Operation.NOT_NULL: Operation.IS_NULL,
    Operation.IS_NAN: Operation.NOT_NAN,
    Operation.NOT_NAN: Operation.IS_NAN,
    Operation.LT: Operation.GT_EQ,
    Operation.LT_EQ: Operation.GT,
    Operation.GT: Operation.LT_EQ,
    Operation.GT_EQ: Operation.LT,
    Operation.EQ: Operation.NOT_EQ,
    Operation.NOT_EQ: Operation.EQ,
    Operation.IN: Operation.NOT_IN,
    Operation.NOT_IN: Operation.IN,
    Operation.STARTS_WITH: Operation.NOT_STARTS_WITH,
    Operation.NOT_STARTS_WITH: Operation.STARTS_WITH,
    Operation.LIKE: Operation.NOT_LIKE,
    Operation.NOT_LIKE: Operation.LIKE,
}
_UNARY = frozenset({Operation.IS_NULL, Operation.NOT_NULL, Operation.IS_NAN, Operation.NOT_NAN})
_SYMBOLS = {
    Operation.IS_NULL: "IS NULL",
    Operation.NOT_NULL: "IS NOT NULL",
    Operation.IS_NAN: "IS NAN",
    Operation.NOT_NAN: "IS NOT NAN",
    Operation.LT: "<",
    Operation.LT_EQ: "<=",
    Operation.GT: ">",
    Operation.GT_EQ: ">=",
    Operation.EQ: "=",
    Operation.NOT_EQ: "!=",
    Operation.IN: "IN",
    Operation.NOT_IN: "NOT IN",
    Operation.STARTS_WITH: "LIKE prefix%",
    Operation.NOT_STARTS_WITH: "NOT LIKE prefix%",
    Operation.LIKE: "LIKE",
    Operation.NOT_LIKE: "NOT LIKE",
}


class Expression:
    """Base of every expression node."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class AlwaysTrue(Expression):
    """Matches everything (the empty filter)."""

    def __str__(self) -> str:
        return "true"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(Expression):
    """Matches nothing."""

    def __str__(self) -> str:
        return "false"


@dataclass(frozen=True, slots=True)
class And(Expression):
    """Both sides hold."""

    left: Expression
    right: Expression

    def __str__(self) -> str:
        return expression_text(self)


@dataclass(frozen=True, slots=True)
class Or(Expression):
    """Either side holds."""

    left: Expression
    right: Expression

    def __str__(self) -> str:
        return expression_text(self)


@dataclass(frozen=True, slots=True)
class Not(Expression):
    """The child does not hold (removed by ``rewrite_not`` before projection)."""

    child: Expression

    def __str__(self) -> str:
        return expression_text(self)


@dataclass(frozen=True, slots=True)
class Reference:
    """A column named in a filter, before binding (``loc.lat`` for nested fields)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Literal:
    """A value written in a filter, before binding; ``type_hint`` for typed literals.

    Attributes:
        value: the parsed Python value (int, Decimal, float, str, bool, date, datetime).
        type_hint: the SQL type named by a typed literal (``DATE '…'``), else None.
        text: the literal as the user wrote it, for error messages.
    """

    value: Any
    type_hint: str | None = None
    text: str = ""

    def __str__(self) -> str:
        return self.text or repr(self.value)


@dataclass(frozen=True, slots=True)
class UnboundPredicate(Expression):
    """``column op literal(s)`` as parsed: names and untyped literals."""

    op: Operation
    term: Reference
    literals: tuple[Literal, ...] = ()

    def __str__(self) -> str:
        shown = self.literals[:SHOWN_IN_VALUES]
        return _predicate_text(
            self.op, str(self.term), [str(lit) for lit in shown], len(self.literals)
        )


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A column resolved against a schema: its field, type and full name.

    Attributes:
        field: the schema's field (id, type, required).
        name: the column's full dotted name in the schema that bound it.
    """

    field: NestedField
    name: str

    @property
    def field_id(self) -> int:
        """The field id (how files and metrics name the column)."""
        return self.field.field_id

    @property
    def type(self) -> IcebergType:
        """The column's type."""
        return self.field.field_type

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class BoundPredicate(Expression):
    """``column op value(s)`` bound to a schema: literal values converted to the column type.

    ``values`` is empty for unary operators and holds one value for comparisons; for IN and
    NOT IN it holds the distinct values (as a tuple, in a stable order).
    """

    op: Operation
    term: BoundReference
    values: tuple[Any, ...] = ()

    @property
    def value(self) -> Any:
        """The single literal of a comparison or STARTS_WITH."""
        return self.values[0]

    def __str__(self) -> str:
        shown = self.values[:SHOWN_IN_VALUES]
        literals = [_literal_text(self.term.type, v) for v in shown]
        return _predicate_text(self.op, str(self.term), literals, len(self.values))


def _literal_text(t: IcebergType, value: Any) -> str:
    """A bound value as the SQL literal a user would type (``DATE '2024-09-20'``).

    The text is also a cache key (a bound filter's text), so a value no literal can spell
    (a timestamp outside years 1-9999) falls back to its repr rather than failing.
    """
    try:
        return sql_literal(t, value)
    except Exception:  # noqa: BLE001 - showing a value must never fail a plan
        return repr(value)


SHOWN_IN_VALUES = 20
"""Values of an IN list that the text of a predicate shows; the rest are counted.

A generated filter may list a million values: its text in a pruning report, an error or a
page must stay readable and small, so it names the first values and how many there are.
"""


def _predicate_text(op: Operation, term: str, literals: list[str], count: int) -> str:
    if op.is_unary:
        return f"{term} {op.symbol}"
    if op.is_set:
        more = count - len(literals)
        rest = f", ... {more:,} more" if more > 0 else ""
        return f"{term} {op.symbol} ({', '.join(literals)}{rest})"
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        keyword = "LIKE" if op is Operation.STARTS_WITH else "NOT LIKE"
        return f"{term} {keyword} {literals[0]}%"
    if op in (Operation.LIKE, Operation.NOT_LIKE):
        # The escape is shown as a repr; Spark's default (a backslash) is left out.
        escape = f" ESCAPE {literals[1]}" if literals[1] != repr("\\") else ""
        return f"{term} {op.symbol} {literals[0]}{escape}"
    return f"{term} {op.symbol} {literals[0]}"


def and_(*exprs: Expression) -> Expression:
    """Conjunction with constant folding (``true AND x`` is ``x``), balanced.

    Many operands (a generated filter of 10,000 conditions) become a tree of logarithmic
    depth, in their order, so that no walk over it nests deeper than a few dozen calls.
    """
    kept: list[Expression] = []
    for expr in exprs:
        if isinstance(expr, AlwaysFalse):
            return AlwaysFalse()
        if not isinstance(expr, AlwaysTrue):
            kept.append(expr)
    return _balanced(And, kept) if kept else AlwaysTrue()


def or_(*exprs: Expression) -> Expression:
    """Disjunction with constant folding (``false OR x`` is ``x``), balanced like ``and_``."""
    kept: list[Expression] = []
    for expr in exprs:
        if isinstance(expr, AlwaysTrue):
            return AlwaysTrue()
        if not isinstance(expr, AlwaysFalse):
            kept.append(expr)
    return _balanced(Or, kept) if kept else AlwaysFalse()


def _balanced(node: type[And] | type[Or], operands: list[Expression]) -> Expression:
    """Join ``operands`` (at least one) with ``node``, in order, in a tree of small depth.

    A binary counter over subtree depths: each operand is pushed and merged with the
    subtrees before it while they are no deeper, so equal operands pair up level by level
    (two operands give ``node(a, b)``, three ``node(node(a, b), c)``, as a left fold does)
    and a deep operand does not make its shallow neighbours deeper.
    """
    if len(operands) <= 2:  # what the counter below gives, without measuring depths
        return operands[0] if len(operands) == 1 else node(operands[0], operands[1])
    stack: list[tuple[Expression, int]] = []
    for expr in operands:
        current, level = expr, depth(expr)
        while stack and stack[-1][1] <= level:
            left, left_level = stack.pop()
            current, level = node(left, current), max(left_level, level) + 1
        stack.append((current, level))
    current, level = stack.pop()
    while stack:
        left, left_level = stack.pop()
        current, level = node(left, current), max(left_level, level) + 1
    return current


def not_(expr: Expression) -> Expression:
    """Negation with constant folding and double-negation removal."""
    if isinstance(expr, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(expr, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(expr, Not):
        return expr.child
    return Not(expr)


T = TypeVar("T")


class ExpressionVisitor(Generic[T]):
    """Post-order visitor: children first, then the node (STYLE: one generic visitor)."""

    def always_true(self) -> T:
        """Result for ``true``."""
        raise NotImplementedError

    def always_false(self) -> T:
        """Result for ``false``."""
        raise NotImplementedError

    def not_(self, child: T) -> T:
        """Result for ``NOT child``."""
        raise NotImplementedError

    def and_(self, left: T, right: T) -> T:
        """Result for ``left AND right``."""
        raise NotImplementedError

    def or_(self, left: T, right: T) -> T:
        """Result for ``left OR right``."""
        raise NotImplementedError

    def unbound_predicate(self, pred: UnboundPredicate) -> T:
        """Result for an unbound predicate."""
        raise NotImplementedError

    def bound_predicate(self, pred: BoundPredicate) -> T:
        """Result for a bound predicate."""
        raise NotImplementedError


def visit(expr: Expression, visitor: ExpressionVisitor[T]) -> T:
    """Walk ``expr`` with ``visitor`` (post-order, left before right).

    The walk keeps its own stack rather than recursing, so a tree of any depth (an
    expression built by hand as a chain of 10,000 ANDs) is visited without RecursionError.
    """
    results: list[T] = []
    stack: list[tuple[Expression, bool]] = [(expr, False)]
    while stack:
        node, children_done = stack.pop()
        if isinstance(node, And | Or):
            if children_done:
                right = results.pop()
                left = results.pop()
                combine = visitor.and_ if isinstance(node, And) else visitor.or_
                results.append(combine(left, right))
            else:
                stack.extend(((node, True), (node.right, False), (node.left, False)))
        elif isinstance(node, Not):
            if children_done:
                results.append(visitor.not_(results.pop()))
            else:
                stack.extend(((node, True), (node.child, False)))
        elif isinstance(node, AlwaysTrue):
            results.append(visitor.always_true())
        elif isinstance(node, AlwaysFalse):
            results.append(visitor.always_false())
        elif isinstance(node, UnboundPredicate):
            results.append(visitor.unbound_predicate(node))
        elif isinstance(node, BoundPredicate):
            results.append(visitor.bound_predicate(node))
        else:
            raise TypeError(f"not an expression: {node!r}")
    return results[0]


def children(expr: Expression) -> tuple[Expression, ...]:
    """The operands of an AND, OR or NOT node; none for a leaf."""
    if isinstance(expr, And | Or):
        return (expr.left, expr.right)
    if isinstance(expr, Not):
        return (expr.child,)
    return ()


def depth(expr: Expression) -> int:
    """Levels of AND, OR and NOT above the deepest leaf (0 for a predicate), iteratively."""
    deepest = 0
    stack = [(expr, 0)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(node))
    return deepest


def flatten(expr: Expression) -> Expression:
    """``expr`` with every chain of ANDs or ORs rebuilt balanced (see :func:`and_`).

    For expressions built elsewhere than the parser (by hand, as a left fold of 10,000
    conditions): the result means the same and nests logarithmically. Iterative, and linear
    in the size of ``expr``: each chain is collected once from the original tree.
    """
    results: list[Expression] = []
    stack: list[tuple[Expression, list[Expression] | None]] = [(expr, None)]
    while stack:
        node, operands = stack.pop()
        if operands is None:
            if isinstance(node, And | Or | Not):
                found = [node.child] if isinstance(node, Not) else _chain(type(node), node)
                stack.append((node, found))
                stack.extend((operand, None) for operand in reversed(found))
            else:
                results.append(node)
            continue
        done = results[-len(operands) :]
        del results[-len(operands) :]
        if isinstance(node, Not):
            results.append(Not(done[0]))
        else:
            results.append(_balanced(And if isinstance(node, And) else Or, done))
    return results[0]


def _chain(node: type[And] | type[Or], expr: Expression) -> list[Expression]:
    """The operands of a chain of ``node`` rooted at ``expr``, in order (iterative)."""
    found: list[Expression] = []
    stack = [expr]
    while stack:
        current = stack.pop()
        if type(current) is node:
            stack.extend(children(current)[::-1])
        else:
            found.append(current)
    return found


def conjuncts(expr: Expression) -> list[Expression]:
    """The operands of the chain of ANDs at ``expr`` (``[expr]`` when it is no AND)."""
    return _chain(And, expr)


def disjuncts(expr: Expression) -> list[Expression]:
    """The operands of the chain of ORs at ``expr`` (``[expr]`` when it is no OR)."""
    return _chain(Or, expr)


def expression_text(expr: Expression) -> str:
    """SQL-like text of ``expr``: chains read ``(a AND b AND c)``; built without recursion."""
    parts: list[str] = []
    stack: list[Expression | str] = [expr]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, And | Or):
            word = " AND " if isinstance(item, And) else " OR "
            operands = _chain(type(item), item)
            pending: list[Expression | str] = ["("]
            for i, operand in enumerate(operands):
                pending.extend((word, operand) if i else (operand,))
            pending.append(")")
            stack.extend(reversed(pending))
        elif isinstance(item, Not):
            stack.extend((item.child, "NOT "))
        else:
            parts.append(str(item))
    return "".join(parts)


def reject_node(expr: Expression) -> NoReturn:
    """Raise for a node an evaluator of bound, NOT-free expressions cannot take."""
    if isinstance(expr, Not):
        raise TypeError("evaluate a NOT-free expression: call rewrite_not first")
    if isinstance(expr, UnboundPredicate):
        raise TypeError(f"bind the expression before evaluating it: {expr}")
    raise TypeError(f"not an expression: {expr!r}")
