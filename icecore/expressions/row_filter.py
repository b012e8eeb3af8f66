"""The row filter: where a bound filter is TRUE over Arrow columns, as Spark SQL keeps rows.

Readers keep a row only when its task's residual is TRUE: a comparison with NULL is NULL,
NOT NULL is NULL, NULL and FALSE drop the row; NaN equals NaN and is above every number, and
-0.0 equals 0.0 (DESIGN "Rules of the house"). The filter has already been said in Iceberg's
two-valued language by :mod:`icecore.expressions.sql_semantics`, so Kleene AND/OR over the
columns' comparisons gives Spark's row set.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import pyarrow as pa

from icecore.arrow_types import arrow_value
from icecore.compute import pc
from icecore.expressions.like import like_regex, like_tokens
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Not,
    Operation,
    Or,
    UnboundPredicate,
    children,
    conjuncts,
    disjuncts,
)
from icecore.lru import LRU

_BoolArrays = Callable[[int], pa.Array]


def _is_floating(arr: pa.Array) -> bool:
    return pa.types.is_floating(arr.type)


def _plus_zero(arr: pa.Array) -> pa.Array:
    return pc.add(arr, pa.scalar(0.0, arr.type))


def _predicate_mask(pred: BoundPredicate, column: pa.Array) -> pa.Array:
    op = pred.op
    t = column.type
    if op is Operation.IS_NULL:
        return pc.is_null(column)
    if op is Operation.NOT_NULL:
        return pc.is_valid(column)
    if op in (Operation.IS_NAN, Operation.NOT_NAN):
        # Spark's isnan(NULL) is false, so NOT isnan(NULL) is true.
        if _is_floating(column):
            nan = pc.fill_null(pc.is_nan(column), False)
        else:
            nan = pa.repeat(pa.scalar(False), len(column))
        return nan if op is Operation.IS_NAN else pc.invert(nan)
    if op in (Operation.IN, Operation.NOT_IN):
        values = _value_set(pred, t)
        if _is_floating(column):
            # Spark: -0.0 = 0.0, but Arrow's hash sets keep the two apart; x + 0.0 is +0.0.
            column, values = _plus_zero(column), _plus_zero(values)
        found = _member(column, values)  # NULL for a NULL value, as in SQL
        return found if op is Operation.IN else pc.invert(found)
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        text = column if pa.types.is_string(t) else column.cast(pa.string())
        starts = pc.starts_with(text, pattern=str(pred.value))
        return starts if op is Operation.STARTS_WITH else pc.invert(starts)
    if op in (Operation.LIKE, Operation.NOT_LIKE):
        text = column if pa.types.is_string(t) else column.cast(pa.string())
        regex = like_regex(like_tokens(pred.values[0], pred.values[1]), re2=True)
        found = pc.match_substring_regex(text, pattern=regex)  # NULL for a NULL value
        return found if op is Operation.LIKE else pc.invert(found)
    literal = pa.scalar(arrow_value(pred.term.type, pred.value), type=t)
    compare = {
        Operation.LT: pc.less,
        Operation.LT_EQ: pc.less_equal,
        Operation.GT: pc.greater,
        Operation.GT_EQ: pc.greater_equal,
        Operation.EQ: pc.equal,
        Operation.NOT_EQ: pc.not_equal,
    }[op]
    result = compare(column, literal)
    if _is_floating(column) and op in (Operation.GT, Operation.GT_EQ):
        # Spark orders NaN above every number: NaN > x holds.
        result = pc.or_kleene(result, pc.is_nan(column))
    return result


_IN_VALUES: LRU[int, tuple[BoundPredicate, pa.Array]] = LRU(64)
"""IN lists as Arrow arrays, by the identity of their predicate (which the entry holds, so a
key is never reused by another object): a task's residual keeps the bound predicates of the
scan's filter, so a list of a million values is converted once per scan, not per batch."""


def _value_set(pred: BoundPredicate, t: pa.DataType) -> pa.Array:
    held = _IN_VALUES.get(id(pred))
    if held is not None and held[0] is pred and held[1].type == t:
        return held[1]
    values = pa.array([arrow_value(pred.term.type, v) for v in pred.values], type=t)
    _IN_VALUES.put(id(pred), (pred, values))
    return values


def _member(column: pa.Array, values: pa.Array) -> pa.Array:
    """``column IN (values)`` in SQL's logic: NULL for a NULL value, else whether it is listed.

    ``is_in`` builds a hash table of its value set on every call: for a million listed values
    and a batch of a few thousand rows, the batch's distinct values are looked up in the list
    instead, and only the listed ones among them make the table.
    """
    if len(values) > max(10_000, 4 * len(column)):
        present = pc.unique(column)
        values = values.filter(pc.is_in(values, value_set=present, skip_nulls=True))
    found = pc.is_in(column, value_set=values, skip_nulls=True)
    return pc.if_else(pc.is_valid(column), found, pa.scalar(None, pa.bool_()))


def _any_of(operands: list[Expression], column: _BoolArrays, n: int) -> pa.Array:
    """OR of ``operands``; equalities and IN lists on one column become one set lookup.

    ``c = 1 OR c = 2 OR ... OR c = 10000`` is ``c IN (1, ..., 10000)`` in three-valued logic
    (NULL when ``c`` is NULL, else whether some value equals it), and one ``is_in`` costs a
    hash per row where 10,000 comparisons cost 10,000 kernels. Float columns keep their
    comparisons: ``=`` there follows IEEE (``-0.0 = 0.0``), which a hash lookup may not.
    """
    masks: list[pa.Array] = []
    groups: dict[int, list[BoundPredicate]] = {}
    for operand in operands:
        if (
            isinstance(operand, BoundPredicate)
            and operand.op in (Operation.EQ, Operation.IN)
            and not _is_floating(column(operand.term.field_id))
        ):
            groups.setdefault(operand.term.field_id, []).append(operand)
        else:
            masks.append(_evaluate(operand, column, n))
    for field_id, preds in groups.items():
        col = column(field_id)
        if len(preds) == 1:
            masks.append(_predicate_mask(preds[0], col))
            continue
        equal = [arrow_value(p.term.type, p.value) for p in preds if p.op is Operation.EQ]
        arrays = [_value_set(p, col.type) for p in preds if p.op is Operation.IN]
        values = pa.concat_arrays([pa.array(equal, type=col.type), *arrays])
        masks.append(_member(col, values))
    return functools.reduce(pc.or_kleene, masks)


def _evaluate(expr: Expression, column: _BoolArrays, n: int) -> pa.Array:
    if isinstance(expr, AlwaysTrue):
        return pa.repeat(pa.scalar(True), n)
    if isinstance(expr, AlwaysFalse):
        return pa.repeat(pa.scalar(False), n)
    if isinstance(expr, And):
        masks = [_evaluate(operand, column, n) for operand in conjuncts(expr)]
        return functools.reduce(pc.and_kleene, masks)
    if isinstance(expr, Or):
        return _any_of(disjuncts(expr), column, n)
    if isinstance(expr, Not):
        return pc.invert(_evaluate(expr.child, column, n))
    if isinstance(expr, BoundPredicate):
        return _predicate_mask(expr, column(expr.term.field_id))
    if isinstance(expr, UnboundPredicate):
        raise TypeError(f"bind the filter before reading: {expr}")
    raise TypeError(f"not an expression: {expr!r}")


def filter_mask(expr: Expression, columns: Mapping[int, pa.Array], num_rows: int) -> pa.Array:
    """Where a bound filter is TRUE (NULL and FALSE drop the row, as in Spark SQL).

    Args:
        expr: a bound expression (the residual of a task).
        columns: the referenced columns by field id, typed as the bound schema says.
        num_rows: the number of rows.

    Returns:
        a boolean array with no nulls.
    """
    return pc.fill_null(_evaluate(expr, lambda fid: columns[fid], num_rows), False)


def filter_field_ids(expr: Expression) -> set[int]:
    """The field ids a bound expression reads."""
    found: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, BoundPredicate):
            found.add(node.term.field_id)
        stack.extend(children(node))
    return found
