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
        return f"({self.left} AND {self.right})"


@dataclass(frozen=True, slots=True)
class Or(Expression):
    """Either side holds."""

    left: Expression
    right: Expression

    def __str__(self) -> str:
        return f"({self.left} OR {self.right})"


@dataclass(frozen=True, slots=True)
class Not(Expression):
    """The child does not hold (removed by ``rewrite_not`` before projection)."""

    child: Expression

    def __str__(self) -> str:
        return f"NOT {self.child}"


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
        return _predicate_text(self.op, str(self.term), [str(lit) for lit in self.literals])


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
        return _predicate_text(self.op, str(self.term), [repr(v) for v in self.values])


def _predicate_text(op: Operation, term: str, literals: list[str]) -> str:
    if op.is_unary:
        return f"{term} {op.symbol}"
    if op.is_set:
        return f"{term} {op.symbol} ({', '.join(literals)})"
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        keyword = "LIKE" if op is Operation.STARTS_WITH else "NOT LIKE"
        return f"{term} {keyword} {literals[0]}%"
    return f"{term} {op.symbol} {literals[0]}"


def and_(*exprs: Expression) -> Expression:
    """Conjunction with constant folding (``true AND x`` is ``x``)."""
    result: Expression = AlwaysTrue()
    for expr in exprs:
        if isinstance(expr, AlwaysFalse) or isinstance(result, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(expr, AlwaysTrue):
            continue
        result = expr if isinstance(result, AlwaysTrue) else And(result, expr)
    return result


def or_(*exprs: Expression) -> Expression:
    """Disjunction with constant folding (``false OR x`` is ``x``)."""
    result: Expression = AlwaysFalse()
    for expr in exprs:
        if isinstance(expr, AlwaysTrue) or isinstance(result, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(expr, AlwaysFalse):
            continue
        result = expr if isinstance(result, AlwaysFalse) else Or(result, expr)
    return result


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
    """Walk ``expr`` with ``visitor`` (post-order)."""
    if isinstance(expr, AlwaysTrue):
        return visitor.always_true()
    if isinstance(expr, AlwaysFalse):
        return visitor.always_false()
    if isinstance(expr, Not):
        return visitor.not_(visit(expr.child, visitor))
    if isinstance(expr, And):
        return visitor.and_(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, Or):
        return visitor.or_(visit(expr.left, visitor), visit(expr.right, visitor))
    if isinstance(expr, UnboundPredicate):
        return visitor.unbound_predicate(expr)
    if isinstance(expr, BoundPredicate):
        return visitor.bound_predicate(expr)
    raise TypeError(f"not an expression: {expr!r}")


def reject_node(expr: Expression) -> NoReturn:
    """Raise for a node an evaluator of bound, NOT-free expressions cannot take."""
    if isinstance(expr, Not):
        raise TypeError("evaluate a NOT-free expression: call rewrite_not first")
    if isinstance(expr, UnboundPredicate):
        raise TypeError(f"bind the expression before evaluating it: {expr}")
    raise TypeError(f"not an expression: {expr!r}")
