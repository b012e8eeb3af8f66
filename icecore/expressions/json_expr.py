"""The REST spec's JSON expressions, read into Icecore's expression model and written back.

``rest-catalog-open-api.yaml`` (``Predicate``, ``AndOrPredicate``, ``NotPredicate``,
``UnaryPredicate``, ``ComparisonPredicate``, ``SetPredicate``, ``Literal``, ``Reference``,
``Term``) is how a scan-planning client sends its filter (issue 33, DESIGN.md "Workload").
Both spellings are read: the legacy one PyIceberg 0.12 and Iceberg Java's ``ExpressionParser``
write (``{"type": "eq", "term": "id", "value": 5}``, ``"values": [...]`` for sets, a bare
``true``/``false`` or ``{"type": "true"}``) and the newer one (``child``, ``left``/``right``
with ``{"type": "reference", "name": ...}`` and ``{"type": "literal", "value": ...}``).

Literals are the spec's JSON single values (Appendix D): numbers and booleans as JSON, every
other type as a string (``"2024-08-05"``, ``"2024-08-05T10:00:00"``, ``"1.23"``, a UUID, hex
for binary and fixed). A JSON literal carries no type, so it is read as a plain value and
bound against the column it meets (:func:`decode_literals` turns the hex of a binary or fixed
column into bytes; :func:`icecore.expressions.bind.bind` converts the rest).

Not read (a one-sentence 400 says so): transforms (``TransformTerm``, ``Apply``), bound
references by field id, and a literal compared on the left. The document is bounded: at most
:data:`MAX_NODES` nodes, :data:`MAX_DEPTH` levels and :data:`MAX_SET_VALUES` values in a set,
checked while it is walked (iteratively, so no input makes Python recurse).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from icecore.errors import FilterError, InvalidMetadata, Unsupported
from icecore.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Literal,
    Not,
    Operation,
    Or,
    Reference,
    UnboundPredicate,
    and_,
    not_,
    or_,
)
from icecore.schema import Schema
from icecore.types import BinaryType, FixedType
from icecore.values import to_json

MAX_DEPTH = 100
"""Levels of and/or/not a JSON filter may nest (as :data:`icecore.expressions.bind.MAX_DEPTH`)."""

MAX_NODES = 100_000
"""Expression nodes (predicates and and/or/not) one JSON filter may hold."""

MAX_SET_VALUES = 100_000
"""Values one ``in``/``not-in`` may list."""

MAX_TEXT = 4096
"""Characters a column name or a string literal may have."""

_UNARY = {
    "is-null": Operation.IS_NULL,
    "not-null": Operation.NOT_NULL,
    "is-nan": Operation.IS_NAN,
    "not-nan": Operation.NOT_NAN,
}
_COMPARISON = {
    "lt": Operation.LT,
    "lt-eq": Operation.LT_EQ,
    "gt": Operation.GT,
    "gt-eq": Operation.GT_EQ,
    "eq": Operation.EQ,
    "not-eq": Operation.NOT_EQ,
    "starts-with": Operation.STARTS_WITH,
    "not-starts-with": Operation.NOT_STARTS_WITH,
}
_SET = {"in": Operation.IN, "not-in": Operation.NOT_IN}
_TYPE_OF = {op: name for table in (_UNARY, _COMPARISON, _SET) for name, op in table.items()}


def _bad(message: str) -> FilterError:
    return FilterError(message)


def _shown(obj: Any) -> str:
    """A short, safe rendering of a piece of the request for an error message."""
    try:
        text = json.dumps(obj, default=str)
    except (TypeError, ValueError):
        text = repr(obj)
    return text if len(text) <= 80 else text[:77] + "..."


def expression_from_json(obj: Any) -> Expression:
    """The spec's JSON ``Predicate`` as an unbound Icecore expression.

    Raises:
        FilterError: the JSON is no expression the spec defines (the message names the
            part), uses what Icecore does not read (a transform, a field id), or is larger
            than the bounds of this module.
    """
    if obj is None:
        return AlwaysTrue()
    # Iterative post-order walk: (node, depth, children done?).
    results: list[Expression] = []
    stack: list[tuple[Any, int, bool]] = [(obj, 0, False)]
    nodes = 0
    while stack:
        node, level, done = stack.pop()
        if done:
            kind = node["type"]
            if kind == "not":
                results.append(not_(results.pop()))
            else:
                right, left = results.pop(), results.pop()
                results.append(and_(left, right) if kind == "and" else or_(left, right))
            continue
        nodes += 1
        if nodes > MAX_NODES:
            raise _bad(f"The filter has more than {MAX_NODES:,} expressions, the most accepted.")
        if level > MAX_DEPTH:
            raise _bad(f"The filter nests and/or/not more than {MAX_DEPTH} levels deep.")
        if isinstance(node, bool):
            results.append(AlwaysTrue() if node else AlwaysFalse())
            continue
        if not isinstance(node, Mapping):
            raise _bad(f"A filter expression must be a JSON object or boolean, not {_shown(node)}.")
        kind = node.get("type")
        if kind in ("true", "false"):
            results.append(AlwaysTrue() if kind == "true" else AlwaysFalse())
        elif kind in ("and", "or"):
            if "left" not in node or "right" not in node:
                raise _bad(f"An {kind!r} expression needs 'left' and 'right': {_shown(node)}.")
            stack.extend(
                (
                    (node, level, True),
                    (node["right"], level + 1, False),
                    (node["left"], level + 1, False),
                )
            )
        elif kind == "not":
            if "child" not in node:
                raise _bad(f"A 'not' expression needs a 'child': {_shown(node)}.")
            stack.extend(((node, level, True), (node["child"], level + 1, False)))
        else:
            results.append(_predicate(node, kind))
    return results[0]


def _predicate(node: Mapping[str, Any], kind: Any) -> Expression:
    if kind in _UNARY:
        _allowed(node, {"type", "term", "child"})
        return UnboundPredicate(_UNARY[kind], _operand(node, "child"))
    if kind in _COMPARISON:
        _allowed(node, {"type", "term", "value", "left", "right"})
        term = _operand(node, "left")
        key = "right" if "right" in node else "value"
        if key not in node:
            raise _bad(f"A {kind!r} predicate needs a 'value' (or 'right'): {_shown(node)}.")
        return UnboundPredicate(_COMPARISON[kind], term, (_literal(node[key]),))
    if kind in _SET:
        _allowed(node, {"type", "term", "child", "values"})
        term = _operand(node, "child")
        return UnboundPredicate(_SET[kind], term, _literals(node.get("values")))
    raise _bad(
        f"Unknown expression type {_shown(kind)}; the spec's types are and, or, not, "
        "true, false, " + ", ".join([*_UNARY, *_COMPARISON, *_SET]) + "."
    )


def _allowed(node: Mapping[str, Any], keys: set[str]) -> None:
    """The spec's predicates have ``additionalProperties: false``: an unknown key is a 400."""
    extra = sorted(str(k) for k in node if k not in keys)
    if extra:
        raise _bad(f"A {node.get('type')!r} predicate has no field {_shown(extra[0])}.")


def _operand(node: Mapping[str, Any], new_key: str) -> Reference:
    """The column a predicate tests: ``term`` (legacy) or ``child``/``left`` (newer)."""
    if "term" in node:
        term = node["term"]
    elif new_key in node:
        term = node[new_key]
    else:
        raise _bad(f"A {node.get('type')!r} predicate needs a 'term': {_shown(node)}.")
    name: Any = term
    if isinstance(term, str):
        pass
    elif isinstance(term, Mapping) and term.get("type") == "reference":
        if "id" in term and "name" not in term:
            raise _bad("A reference by field id is not accepted here; name the column.")
        name = term.get("name")
        if not isinstance(name, str):
            raise _bad(f"A reference needs a 'name' string: {_shown(term)}.")
    elif isinstance(term, Mapping) and term.get("type") in ("transform", "apply"):
        raise _bad(f"Filters on transforms are not supported: {_shown(term)}.")
    else:
        raise _bad(f"A term must be a column name or a reference: {_shown(term)}.")
    if not name or len(name) > MAX_TEXT:
        raise _bad(f"A column name must have 1 to {MAX_TEXT} characters.")
    return Reference(name)


def _literal(value: Any) -> Literal:
    """A ``Literal``: a bare JSON value or ``{"type": "literal", "value": ...}``."""
    if isinstance(value, Mapping):
        if value.get("type") == "reference":
            raise _bad("A predicate comparing two columns is not supported.")
        if value.get("type") != "literal" or "value" not in value:
            raise _bad(f"A literal must be a JSON value or a 'literal' object: {_shown(value)}.")
        value = value["value"]
    return _plain(value)


def _plain(value: Any) -> Literal:
    if value is None:
        raise _bad("A literal cannot be null; use is-null or not-null.")
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise _bad(f"A string literal must have at most {MAX_TEXT} characters.")
    if not isinstance(value, bool | int | float | str):
        raise _bad(f"A literal must be a number, string or boolean: {_shown(value)}.")
    return Literal(value, None, _shown(value))


def _literals(values: Any) -> tuple[Literal, ...]:
    """A ``Literals``: a JSON array, or ``{"type": "literals", "values": [...]}``."""
    if isinstance(values, Mapping) and values.get("type") == "literals":
        values = values.get("values")
    if not isinstance(values, list):
        raise _bad("An 'in' or 'not-in' predicate needs a 'values' array.")
    if len(values) > MAX_SET_VALUES:
        raise _bad(f"A set predicate lists more than {MAX_SET_VALUES:,} values, the most accepted.")
    return tuple(_literal(v) for v in values)


def decode_literals(expr: Expression, schema: Schema, case_sensitive: bool) -> Expression:
    """``expr`` with the hex strings compared with binary or fixed columns turned into bytes.

    JSON has no bytes: the spec writes binary and fixed values as hex, which only the column
    they meet can tell apart from a string. Other literals are left to ``bind``. A name that
    does not resolve is left for ``bind`` to refuse.
    """
    if isinstance(expr, And | Or):
        left = decode_literals(expr.left, schema, case_sensitive)
        right = decode_literals(expr.right, schema, case_sensitive)
        return type(expr)(left, right)
    if isinstance(expr, Not):
        return Not(decode_literals(expr.child, schema, case_sensitive))
    if not isinstance(expr, UnboundPredicate) or not expr.literals:
        return expr
    try:
        field = schema.find_field_by_name(expr.term.name, case_sensitive)
    except InvalidMetadata:
        return expr
    if field is None or not isinstance(field.field_type, BinaryType | FixedType):
        return expr
    decoded = []
    for lit in expr.literals:
        if isinstance(lit.value, str):
            try:
                lit = Literal(bytes.fromhex(lit.value), None, lit.text)
            except ValueError:
                raise _bad(
                    f"The value {lit.text} for binary column {expr.term.name!r} is not hex."
                ) from None
        decoded.append(lit)
    return UnboundPredicate(expr.op, expr.term, tuple(decoded))


def expression_to_json(expr: Expression) -> Any:
    """``expr`` (bound or unbound) in the spec's legacy JSON form, as Iceberg Java writes it.

    Raises:
        Unsupported: the expression uses what the spec's JSON cannot say (SQL LIKE with a
            pattern other than a prefix).
    """
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And | Or):
        return {
            "type": "and" if isinstance(expr, And) else "or",
            "left": expression_to_json(expr.left),
            "right": expression_to_json(expr.right),
        }
    if isinstance(expr, Not):
        return {"type": "not", "child": expression_to_json(expr.child)}
    if isinstance(expr, UnboundPredicate | BoundPredicate):
        kind = _TYPE_OF.get(expr.op)
        if kind is None:
            raise Unsupported(f"The REST spec's JSON expressions cannot say {expr}.")
        if isinstance(expr, BoundPredicate):
            name = expr.term.name
            values = [to_json(expr.term.type, v) for v in expr.values]
        else:
            name = expr.term.name
            values = [_json_value(lit.value) for lit in expr.literals]
        out: dict[str, Any] = {"type": kind, "term": name}
        if expr.op.is_set:
            out["values"] = values
        elif not expr.op.is_unary:
            out["value"] = values[0]
        return out
    raise TypeError(f"not an expression: {expr!r}")


def _json_value(value: Any) -> Any:
    """An unbound literal's value as the spec's JSON single value."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    raise Unsupported(f"The value {value!r} has no JSON form in a REST filter.")


__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_SET_VALUES",
    "decode_literals",
    "expression_from_json",
    "expression_to_json",
]
