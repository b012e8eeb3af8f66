"""Filter text -> unbound expressions: SQL boolean expressions parsed with sqlglot.

docs/ARCHITECTURE.md ("Rules of the house"): filters are written as SQL boolean expressions and
parsed with a well-kept SQL parser. This is the only module that imports sqlglot. It parses with
Spark's dialect (the pipeline's engine) adjusted in two ways so that filters copied from
other tools read as meant: double quotes delimit names (as in standard SQL and in
PyIceberg's filter grammar) rather than strings, and ``''`` escapes a quote inside a
string (Spark's backslash escapes still work).

The result is an unbound expression of the model (spec "Scan Planning": a filter is a
boolean expression of predicates on columns); :func:`icecore.expressions.bind.bind` then
resolves names and converts literals to the columns' types. It means what Spark SQL means:
the conversion keeps, for each condition, where it is TRUE and where it is FALSE
(:mod:`icecore.expressions.sql_semantics`), so NOT and NULL follow SQL's three-valued logic
and the result holds no ``Not`` node. Supported:

* ``=``, ``!=``, ``<>``, ``<``, ``<=``, ``>``, ``>=`` between a column and a literal (either
  side: ``5 < id`` reads as ``id > 5``);
* ``IN (...)``, ``NOT IN (...)`` (a NULL in the list: never FALSE), ``BETWEEN a AND b``;
* ``<=>`` (null-safe equality) between a column and a literal or NULL;
* ``IS [NOT] NULL``, ``IS [NOT] NAN``, ``isnan(col)``, ``b IS [NOT] TRUE|FALSE``;
* ``[NOT] LIKE`` with any pattern (``_``, ``%``), Spark's backslash escapes or an ``ESCAPE``
  character: ``'value'`` is ``=``, ``'prefix%'`` Iceberg's ``startsWith``, others a LIKE
  the rows decide (planning prunes by what Spark pushes for them);
* ``AND``, ``OR``, ``NOT``, parentheses, ``TRUE``/``FALSE``, a bare boolean column;
* literals: integers, exact decimals (``1.50`` stays ``Decimal('1.50')``), floats with an
  exponent, strings, booleans, ``X'..'`` bytes, typed ``DATE``/``TIME``/``TIMESTAMP``/
  ``TIMESTAMP_NTZ``/``TIMESTAMP_LTZ`` literals, ``CAST(literal AS type)`` and Spark's
  suffixed numbers (``1L``, ``1.5D``, ``2BD``).

Anything else raises :class:`~icecore.errors.FilterError` quoting the part of the text it
cannot use and where it is.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from icecore.errors import FilterError, IcecoreError
from icecore.expressions import sql_semantics as sql
from icecore.expressions.like import (
    DEFAULT_ESCAPE,
    LikePatternError,
    exact_shape,
    like_tokens,
    spark_shape,
)
from icecore.expressions.model import (
    AlwaysTrue,
    Expression,
    Literal,
    Operation,
    Reference,
)
from icecore.expressions.sql_semantics import Polar
from icecore.values import iso_to_nanos, iso_to_time_micros


class IcecoreFilterDialect(Spark):
    """Spark SQL with double-quoted names and ``''`` string escapes (see module docstring)."""

    class Tokenizer(Spark.Tokenizer):
        """Spark's tokenizer; only the quoting characters differ."""

        QUOTES = ["'"]
        IDENTIFIERS = ["`", '"']
        STRING_ESCAPES = ["'", "\\"]


_DIALECT = IcecoreFilterDialect

_COMPARISONS: dict[type[exp.Expr], Operation] = {
    exp.EQ: Operation.EQ,
    exp.NEQ: Operation.NOT_EQ,
    exp.LT: Operation.LT,
    exp.LTE: Operation.LT_EQ,
    exp.GT: Operation.GT,
    exp.GTE: Operation.GT_EQ,
}
_FLIPPED = {
    Operation.EQ: Operation.EQ,
    Operation.NOT_EQ: Operation.NOT_EQ,
    Operation.LT: Operation.GT,
    Operation.LT_EQ: Operation.GT_EQ,
    Operation.GT: Operation.LT,
    Operation.GT_EQ: Operation.LT_EQ,
}

# Typed literals: sqlglot's data type -> the hint the binder reads. Spark's TIMESTAMP is
# TIMESTAMP_LTZ (an instant), which sqlglot's Spark dialect spells TIMESTAMPTZ.
_TEMPORAL_HINTS = {
    exp.DataType.Type.DATE: "date",
    exp.DataType.Type.TIME: "time",
    exp.DataType.Type.TIMESTAMP: "timestamp",
    exp.DataType.Type.TIMESTAMPTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPLTZ: "timestamp",
    exp.DataType.Type.TIMESTAMPNTZ: "timestamp_ntz",
}
_INTEGER_TYPES = frozenset(
    {
        exp.DataType.Type.TINYINT,
        exp.DataType.Type.SMALLINT,
        exp.DataType.Type.INT,
        exp.DataType.Type.BIGINT,
    }
)
_FLOAT_TYPES = frozenset({exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE})
_DECIMAL_TYPES = frozenset({exp.DataType.Type.DECIMAL})
_STRING_TYPES = frozenset(
    {exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT, exp.DataType.Type.CHAR}
)

_ISO_DATE = re.compile(r"[+-]?\d{4,}-\d{2}-\d{2}")
_TRUE = Literal(True, None, "true")


MAX_NESTING = 40
"""Levels of parentheses (and NOTs) a filter may nest.

sqlglot's recursive-descent parser spends about 20 Python frames per level of parentheses,
so at Python's default recursion limit it fails at 49 levels (sqlglot 30.30). 40 levels
still parse from 150 frames down a caller's stack (a Streamlit page). A filter deeper than
this bound is refused with one sentence before sqlglot sees it; long chains of AND and OR
are not nesting and are not limited by it.
"""

MAX_CONDITIONS = 100_000
"""Conditions (terms joined by AND or OR) a filter may hold: 10x what a generated filter
needs, while parsing, planning and reading it still take seconds. IN lists count as one
condition whatever their length (they are evaluated as sets)."""

LONG_LIST = 256
"""IN lists of at least this many plain literals are read without sqlglot (see
:func:`_long_lists`), whose tokenizer takes ~10 s for a million values."""


def parse_filter(text: str) -> Expression:
    """Parse a SQL boolean expression into an unbound filter expression.

    The expression holds exactly where the filter is TRUE in Spark SQL (three-valued logic,
    :mod:`icecore.expressions.sql_semantics`): what rows are kept by.

    Args:
        text: the filter, e.g. ``ts >= '2024-08-09' AND city IN ('Milan', 'Paris')``; empty
            or blank text means no filter.

    Returns:
        An unbound expression (``AlwaysTrue`` for an empty filter); chains of AND and OR
        come out balanced (logarithmic depth), however long.

    Raises:
        FilterError: the text is not valid SQL, uses something a filter cannot hold, nests
            deeper than :data:`MAX_NESTING` or holds more than :data:`MAX_CONDITIONS`
            conditions; the message quotes the offending part and says where it is.
    """
    return parse_scan_filter(text)[0]


@functools.lru_cache(maxsize=512)
def parse_scan_filter(text: str) -> tuple[Expression, Expression]:
    """The filter as rows are kept by, and as Spark pushes it to Iceberg for planning.

    Returns ``(rows, pushed)``: ``rows`` is :func:`parse_filter`'s exact meaning; ``pushed``
    is what Spark hands Iceberg for the same SQL (:func:`sql_semantics.pushed`), so that the
    files planned are those Iceberg Java's ``planFiles()`` plans for it. ``rows`` implies
    ``pushed``. Results are cached per text (expressions are immutable): a page that plans
    the same filter again, or against another snapshot, does not parse it again.

    Raises:
        FilterError: as :func:`parse_filter`.
    """
    if not text or not text.strip():
        return AlwaysTrue(), AlwaysTrue()
    scanned, lists = _long_lists(text)
    try:
        statements = _parse(text, scanned)
    except FilterError:
        if not lists:
            raise
        # A long list was read past a syntax error: let sqlglot find it in the text as written.
        statements, lists = _parse(text, text), {}
    nodes = [s for s in statements if s is not None]
    if not nodes:
        return AlwaysTrue(), AlwaysTrue()
    if len(nodes) > 1:
        raise FilterError(
            f"The filter {_quoted(text)} holds more than one statement; write a single boolean "
            "expression without ';'."
        )
    condition = _Converter(text, lists).boolean(nodes[0])
    return condition.true, sql.pushed(condition)


def names_in_query(sql: str) -> frozenset[str] | None:
    """The lower-cased names a user query (DuckDB's SQL) uses, or None if it may use any column.

    :func:`icecore.sql.run_sql` reads only the columns of ``rows`` a query names: reading
    every column of a wide table costs more than the query. None (read every column) when
    the text does not parse here (DuckDB judges it), or a ``*`` other than ``count(*)``,
    ``COLUMNS(...)`` or a whole row by its table's name (``SELECT r FROM rows r``) may reach
    columns the text does not name. Every identifier counts (a table, an alias or a struct
    field named like a column only makes the read wider, never wrong).
    """
    try:
        trees = sqlglot.parse(sql, read="duckdb")
    except (ParseError, TokenError, RecursionError):
        return None
    names: set[str] = set()
    for tree in trees:
        if tree is None:
            continue
        tables = {
            str(node.name).lower()
            for node in tree.find_all(exp.Table, exp.TableAlias, exp.CTE)
            if node.name
        } | {str(node.alias).lower() for node in tree.find_all(exp.Table) if node.alias}
        for node in tree.walk():
            if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
                return None
            if isinstance(node, exp.Columns) or (
                isinstance(node, exp.Anonymous) and str(node.name).lower() == "columns"
            ):
                return None
            if isinstance(node, exp.Column) and not node.table and node.name.lower() in tables:
                return None
            if isinstance(node, exp.Identifier):
                names.add(str(node.this).lower())
    return frozenset(names)


def identifiers_in_query(sql: str) -> frozenset[str] | None:
    """Every lower-cased identifier of a user query (``*`` or not), or None when it does not parse.

    What a masked principal's query is checked against (:mod:`icecore.row_access`): a
    query naming a masked column is refused in one sentence, whether or not it also has a
    ``*``.
    """
    try:
        trees = sqlglot.parse(sql, read="duckdb")
    except (ParseError, TokenError, RecursionError):
        return None
    return frozenset(
        str(node.this).lower()
        for tree in trees
        if tree is not None
        for node in tree.find_all(exp.Identifier)
    )


def _parse(text: str, sql: str) -> list[exp.Expr | None]:
    """Parse ``sql`` (``text`` with long lists replaced) with sqlglot, size checked first."""
    dialect = _DIALECT()
    try:
        tokens = dialect.tokenize(sql)
    except TokenError as e:
        raise FilterError(
            f"The filter {_quoted(text)} has an unterminated string or quoted name ({e}); "
            "close every quote (' for strings, ` or \" for column names)."
        ) from e
    _check_size(text, tokens)
    try:
        return dialect.parser().parse(tokens, sql)
    except ParseError as e:
        raise FilterError(_syntax_message(text, e)) from e
    except RecursionError as e:  # the bound above should make this unreachable
        raise FilterError(_nesting_message(text)) from e


def _check_size(text: str, tokens: list[Token]) -> None:
    """Refuse filters nested deeper than :data:`MAX_NESTING` or longer than MAX_CONDITIONS."""
    level = deepest = nots = conditions = 0
    for token in tokens:
        kind = token.token_type
        if kind is TokenType.L_PAREN:
            level += 1
        elif kind is TokenType.R_PAREN:
            level -= 1
        elif kind in (TokenType.AND, TokenType.OR):
            conditions += 1
        nots = nots + 1 if kind is TokenType.NOT else 0
        deepest = max(deepest, level + nots)
    if deepest > MAX_NESTING:
        raise FilterError(_nesting_message(text))
    if conditions >= MAX_CONDITIONS:
        raise FilterError(
            f"The filter {_quoted(text)} joins more than {MAX_CONDITIONS:,} conditions with "
            "AND or OR, the most a filter may hold; list values of one column with IN (...), "
            "which has no such bound."
        )


def _nesting_message(text: str) -> str:
    return (
        f"The filter {_quoted(text)} nests parentheses or NOT more than {MAX_NESTING} levels "
        "deep, the most a filter may nest; remove redundant parentheses or join the "
        "conditions in one chain of AND or OR."
    )


def _quoted(text: str) -> str:
    """``text`` quoted for a message, shortened in the middle when long (a huge IN list)."""
    if len(text) <= 300:
        return repr(text)
    return f"{text[:200]!r} ... {text[-60:]!r} ({len(text):,} characters)"


# Long IN lists: a narrow fast path in front of sqlglot, never a parser of its own. Only a
# list of plain integers, decimals and simple strings (no escapes, no suffixes, no
# expressions) is taken; anything else in it leaves the whole list to sqlglot. Quoted
# strings, quoted names and comments are skipped while looking for ``IN (``.
_SCAN = re.compile(
    r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|--[^\n]*|/\*.*?\*/"
    r"|\b(IN)\s*\(",
    re.IGNORECASE | re.DOTALL,
)
_ITEM = r"(?:-?\d+(?:\.\d+)?(?![\w.'])|'[^'\\]*'(?!'))"
_LIST = re.compile(rf"\s*{_ITEM}(?:\s*,\s*{_ITEM})*\s*(?=\))")
_ITEMS = re.compile(r"(-?\d+(?:\.\d+)?)|'([^'\\]*)'")
_PLACEHOLDER = "\x00icecore long IN list at "
_NOT_NEWLINE = re.compile(r"[^\n]+")


def _spaces(found: re.Match[str]) -> str:
    return " " * len(found.group())


def _long_lists(text: str) -> tuple[str, dict[str, tuple[Literal, ...]]]:
    """``text`` with each long literal IN list replaced by one placeholder string.

    The placeholder has the list's exact length and line breaks, so every position sqlglot
    reports (and error messages quote) is a position in ``text``. Returns the new text and
    the literals of each list by placeholder value, read as :meth:`_Converter.literal`
    reads them (``7`` an int, ``1.50`` a ``Decimal``, ``-3`` an int, ``'x'`` a string).
    """
    if len(text) < 4 * LONG_LIST:
        return text, {}
    pieces: list[str] = []
    lists: dict[str, tuple[Literal, ...]] = {}
    done = pos = 0
    while (found := _SCAN.search(text, pos)) is not None:
        pos = found.end()
        if found.group(1) is None:
            continue
        items = _LIST.match(text, pos)
        if items is None or items.end() - pos < 4 * LONG_LIST:
            continue
        start, end = pos, items.end()
        literals = tuple(
            [
                Literal(int(number), None, number)
                if number and "." not in number
                else Literal(Decimal(number), None, number)
                if number
                else Literal(string, None, f"'{string}'")
                for number, string in _ITEMS.findall(text, start, end)
            ]
        )
        if len(literals) < LONG_LIST:
            continue
        key = f"{_PLACEHOLDER}{start}"
        filler = _NOT_NEWLINE.sub(_spaces, text[start + len(key) + 2 : end])
        pieces.extend((text[done:start], "'", key, filler, "'"))
        lists[key + filler] = literals
        done = pos = end
    if not lists:
        return text, {}
    pieces.append(text[done:])
    return "".join(pieces), lists


def _syntax_message(text: str, error: ParseError) -> str:
    details = error.errors[0] if error.errors else {}
    description = str(details.get("description") or error).strip()
    if description.startswith("Required keyword"):
        description = "an operand is missing"
    elif description.startswith("Expecting"):
        description = description.replace("Expecting", "expected", 1)
    line, col = details.get("line"), details.get("col")
    highlight = details.get("highlight")
    where = ""
    if col is not None:
        where = f" at column {col}" if line in (None, 1) else f" at line {line}, column {col}"
    near = f" near {highlight!r}" if highlight else ""
    return f"The filter {_quoted(text)} is not valid SQL{where}{near}: {description}."


class _Converter:
    """Turns one sqlglot AST into model nodes; keeps the source text for error messages."""

    def __init__(self, text: str, lists: dict[str, tuple[Literal, ...]] | None = None) -> None:
        self.text = text
        self.lists = lists or {}

    # ------------------------------------------------------------------ errors

    def _span(self, node: exp.Expr) -> tuple[int, int] | None:
        starts: list[int] = []
        ends: list[int] = []
        for n in node.walk():
            meta = n.meta if isinstance(n, exp.Expr) else {}
            if "start" in meta and "end" in meta:
                starts.append(meta["start"])
                ends.append(meta["end"])
        anchor = min(starts) if starts else None
        found = self._find_rendering(node, anchor)
        if found is not None:
            return found
        if anchor is None:
            return None
        start, end = anchor, max(ends) + 1
        # Typed literals: include the keyword before the quoted value (DATE '2024-08-09').
        keyword = re.search(r"([A-Za-z_]+)\s*$", self.text[:start])
        if isinstance(node, exp.Cast) and keyword is not None:
            start = keyword.start(1)
        # Calls and parenthesized parts end with ')' that no token meta covers.
        while self.text.count("(", start, end) > self.text.count(")", start, end):
            close = self.text.find(")", end)
            if close < 0:
                break
            end = close + 1
        return start, end

    def _find_rendering(self, node: exp.Expr, anchor: int | None) -> tuple[int, int] | None:
        """Where sqlglot's rendering of ``node`` occurs in the text, ignoring case and spaces.

        Token metadata covers names and values but not keywords (NULL, TRUE, IS, ...), so
        the rendering locates the whole part when it reads as the user wrote it.
        """
        try:
            rendered = node.sql(dialect=_DIALECT)
        except Exception:  # noqa: BLE001 - rendering is only a help for the message
            return None
        rendered = "".join(rendered.split()).lower()
        if not rendered:
            return None
        positions = [i for i, c in enumerate(self.text) if not c.isspace()]
        squeezed = "".join(self.text[i] for i in positions).lower()
        best: tuple[int, int] | None = None
        # sqlglot writes != as <>; try the user's spelling too.
        for target in dict.fromkeys((rendered, rendered.replace("<>", "!="))):
            at = squeezed.find(target)
            while at >= 0:
                start, end = positions[at], positions[at + len(target) - 1] + 1
                if anchor is None or start <= anchor < end:
                    return start, end
                best = best or (start, end)
                at = squeezed.find(target, at + 1)
        return best if anchor is None else None

    def _token_text(self, node: exp.Expr) -> str | None:
        """A plain literal's source text, straight from its token's position.

        Rendering a node to find it in the text (:meth:`fragment`) costs far more than the
        parse; a literal's token covers it exactly, quotes included.
        """
        meta = node.meta if isinstance(node, exp.Literal) else {}
        if "start" not in meta or "end" not in meta:
            return None
        return self.text[meta["start"] : meta["end"] + 1]

    def fragment(self, node: exp.Expr) -> tuple[str, str]:
        """The source text of ``node`` and where it starts (``' at column N'``)."""
        span = self._span(node)
        if span is None:
            return node.sql(dialect=_DIALECT), ""
        start, end = span
        line = self.text.count("\n", 0, start) + 1
        col = start - (self.text.rfind("\n", 0, start) + 1) + 1
        where = f" at column {col}" if line == 1 else f" at line {line}, column {col}"
        return self.text[start:end], where

    def error(self, node: exp.Expr, problem: str, hint: str) -> FilterError:
        """A FilterError quoting ``node``: "<fragment> (at column N) <problem>; <hint>."."""
        frag, where = self.fragment(node)
        return FilterError(f"In the filter, {frag!r}{where} {problem}; {hint}.")

    # ------------------------------------------------------------------ booleans

    def boolean(self, node: exp.Expr) -> Polar:
        """Convert a node that must be a boolean expression: where it is TRUE, where FALSE.

        SQL's three values are kept apart here (:mod:`icecore.expressions.sql_semantics`):
        NOT swaps the two sides, so no ``Not`` node and no two-valued negation is left.
        """
        node = _unparen(node)
        if isinstance(node, exp.And | exp.Or):
            # sqlglot reads a chain of 10,000 ORs as a left-deep tree: collect its operands
            # with a loop and join them balanced, so no walk recurses 10,000 levels.
            parts = [self.boolean(operand) for operand in _chain(node)]
            if isinstance(node, exp.And):
                return sql.conjunction(*parts)
            return sql.disjunction(*parts)
        if isinstance(node, exp.Not):
            return self.boolean(node.this).negate()
        if isinstance(node, exp.Boolean):
            return sql.constant(bool(node.this))
        if type(node) in _COMPARISONS:
            return self._comparison(node, _COMPARISONS[type(node)])
        if isinstance(node, exp.In):
            return self._in(node)
        if isinstance(node, exp.Is):
            return self._is(node)
        if isinstance(node, exp.IsNan):
            return sql.nan_check(self.reference(node.this))
        if isinstance(node, exp.Like):
            return self._like(node)
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
            return self._like(node.this, node.args.get("expression"))
        if isinstance(node, exp.Between):
            return self._between(node)
        if isinstance(node, exp.NullSafeEQ | exp.NullSafeNEQ):
            return self._null_safe(node)
        if isinstance(node, exp.Column | exp.Dot):
            # A bare boolean column, as Spark accepts in WHERE: b = true.
            ref = self.reference(node)
            return sql.comparison(Operation.EQ, ref, _TRUE)
        raise self._unsupported(node)

    def _unsupported(self, node: exp.Expr) -> FilterError:
        if isinstance(node, exp.Alias):
            return self.error(
                node.args["alias"],
                "is left over after a complete condition",
                "join conditions with AND or OR",
            )
        if isinstance(node, exp.Escape | exp.ILike | exp.RegexpLike | exp.SimilarTo):
            return self.error(
                node,
                "is a case-insensitive or regular-expression match (ILIKE, RLIKE, REGEXP, "
                "SIMILAR TO), which a filter does not evaluate: Spark runs them with Java's "
                "regexes and lower-casing, which Icecore cannot reproduce exactly",
                "use LIKE (case-sensitive, any pattern with _ and %), or filter the result",
            )
        if isinstance(node, exp.Array):
            return self.error(node, "is an array", "list values with IN (...) instead")
        if isinstance(node, exp.Func | exp.Anonymous):
            return self.error(
                node,
                "calls a function, and the only function a filter can use is isnan(column)",
                "compare a column directly with a literal value",
            )
        if isinstance(node, exp.Binary) and not isinstance(node, exp.Connector | exp.Predicate):
            return self.error(
                node,
                "is arithmetic or another operator a filter cannot evaluate",
                "compare a column directly with a literal value",
            )
        if isinstance(node, exp.Query | exp.Subquery):
            return self.error(node, "is a subquery", "list the values instead")
        if isinstance(node, exp.Literal | exp.Null | exp.Cast | exp.Neg | exp.HexString):
            return self.error(
                node,
                "is a value, not a condition",
                "compare a column with it, e.g. col = value",
            )
        return self.error(
            node,
            "is not a condition a filter can use",
            "write comparisons of a column with literal values joined by AND, OR and NOT",
        )

    # ------------------------------------------------------------------ predicates

    def _comparison(self, node: exp.Expr, op: Operation) -> Polar:
        left, right = _unparen(node.args["this"]), _unparen(node.args["expression"])
        left_col, right_col = _is_column(left), _is_column(right)
        for side, other in ((right, left), (left, right)):
            if _is_bare_nan(side) and _is_column(other):
                raise self.error(
                    node,
                    "names NaN without quotes, which SQL reads as a column name",
                    "write NaN as a string, as Spark SQL does: col = 'NaN', or use isnan(col)",
                )
        if left_col and right_col:
            raise self.error(
                node,
                "compares two columns, but a filter can only compare a column with a value",
                "compare each column with a literal value",
            )
        if not left_col and not right_col:
            culprit = left if _is_literal_like(right) else right
            if _is_literal_like(left) and _is_literal_like(right):
                raise self.error(
                    node,
                    "compares two values and names no column",
                    "put a column on one side",
                )
            raise self._unsupported(culprit)
        column, value = (left, right) if left_col else (right, left)
        if not left_col:
            op = _FLIPPED[op]
        if isinstance(value, exp.Null):
            hint = "IS NULL" if op is Operation.EQ else "IS NOT NULL"
            raise self.error(
                node,
                "compares with NULL, which is never true",
                f"write {self.fragment(column)[0]} {hint}",
            )
        if isinstance(value, exp.Boolean) and op in (Operation.EQ, Operation.NOT_EQ):
            # As Spark's optimizer does (and pushes to Iceberg): b = false is NOT b, and
            # b != false is b, so both engines plan the same files for them.
            holds = sql.comparison(Operation.EQ, self.reference(column), _TRUE)
            return holds if (op is Operation.EQ) == bool(value.this) else holds.negate()
        return sql.comparison(op, self.reference(column), self.literal(value))

    def _null_safe(self, node: exp.NullSafeEQ | exp.NullSafeNEQ) -> Polar:
        """``c <=> v`` (Spark's EqualNullSafe): column and literal (or NULL) on either side."""
        left, right = _unparen(node.args["this"]), _unparen(node.args["expression"])
        if _is_column(left) == _is_column(right):
            raise self.error(
                node,
                "compares two columns or two values null-safely, but a filter compares a "
                "column with a value",
                "write col <=> value",
            )
        column, value = (left, right) if _is_column(left) else (right, left)
        literal = None if isinstance(value, exp.Null) else self.literal(value)
        matches = sql.null_safe_equal(self.reference(column), literal)
        return matches.negate() if isinstance(node, exp.NullSafeNEQ) else matches

    def _in(self, node: exp.In) -> Polar:
        if node.args.get("query") is not None:
            raise self._unsupported(node.args["query"])
        if node.args.get("unnest") is not None or node.args.get("field") is not None:
            raise self.error(node, "is not an IN list", "list the values: col IN (1, 2)")
        values: list[exp.Expr] = list(node.expressions)
        if not values:
            raise self.error(node, "has an empty IN list", "list at least one value")
        if len(values) == 1 and isinstance(values[0], exp.Literal) and values[0].is_string:
            long_list = self.lists.get(values[0].this)
            if long_list is not None:  # plain literals only: never a NULL among them
                return sql.membership(self.reference(node.this), long_list, False)
        literals: list[Literal] = []
        has_null = False
        for value in values:
            value = _unparen(value)
            if isinstance(value, exp.Null):
                # SQL: c IN (v, NULL) is TRUE when c = v and NULL otherwise, never FALSE.
                has_null = True
                continue
            if isinstance(value, exp.Query | exp.Subquery | exp.Select):
                raise self._unsupported(value)
            literals.append(self.literal(value))
        return sql.membership(self.reference(node.this), literals, has_null)

    def _is(self, node: exp.Is) -> Polar:
        """``IS [NOT] NULL``, ``IS [NOT] NAN``, and ``b IS [NOT] TRUE|FALSE`` on a column.

        Spark rewrites ``b IS TRUE`` as ``b <=> true`` (never NULL), and pushes it so.
        """
        target = node.args["expression"]
        if isinstance(target, exp.Boolean) and not _is_column(_unparen(node.this)):
            raise self.error(
                node,
                "tests a condition with IS TRUE/FALSE, which a filter only does on a boolean "
                "column",
                "write the condition itself, with IS NULL checks for its columns",
            )
        ref = self.reference(node.this)
        if isinstance(target, exp.Null):
            return sql.null_check(ref)
        if _is_bare_nan(target):
            return sql.nan_check(ref)
        if isinstance(target, exp.Boolean):
            value = bool(target.this)
            return sql.null_safe_equal(ref, Literal(value, None, str(value).lower()))
        raise self.error(
            node,
            "uses IS with something other than NULL, NAN, TRUE or FALSE",
            "use IS [NOT] NULL, IS [NOT] NAN, IS [NOT] TRUE, or = for values",
        )

    def _like(self, node: exp.Like, escape: exp.Expr | None = None) -> Polar:
        r"""``LIKE`` with any pattern, Spark's escapes (``\\`` or the ESCAPE character).

        Rows: a pattern without wildcards is equality, one ending in ``%`` (and no other
        wildcard) a prefix match, any other one the pattern itself
        (:mod:`icecore.expressions.like`). Planning: what Spark pushes for it
        (:func:`~icecore.expressions.like.spark_shape`), so the files planned are Java's.
        """
        pattern = _unparen(node.args["expression"])
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise self.error(node, "uses LIKE without a string pattern", "write col LIKE 'a_c%'")
        escape_char = DEFAULT_ESCAPE
        if escape is not None:
            escape = _unparen(escape)
            if not (isinstance(escape, exp.Literal) and escape.is_string and len(escape.this) == 1):
                raise self.error(
                    escape, "is not a single-character ESCAPE", "write ESCAPE '!' or leave it out"
                )
            escape_char = escape.this
        try:
            tokens = like_tokens(pattern.this, escape_char)
        except LikePatternError as e:
            raise self.error(
                pattern,
                f"is a LIKE pattern that {e}, which Spark refuses too",
                "escape _ and % "
                f"as {escape_char}_ and {escape_char}%, and the escape itself by doubling it",
            ) from None
        ref = self.reference(node.this)
        exact = exact_shape(tokens)
        if exact is not None:
            literal = Literal(exact.literal, None, self.fragment(pattern)[0])
            if exact.kind == "prefix":
                matches = sql.prefix(ref, literal)
            else:
                matches = sql.comparison(Operation.EQ, ref, literal)
        else:
            matches = sql.like(
                ref,
                Literal(pattern.this, None, self.fragment(pattern)[0]),
                Literal(escape_char, None, repr(escape_char)),
            )
        pushed = spark_shape(pattern.this, escape_char)
        if pushed is None:
            matches = sql.unpushed(matches)
        elif pushed.kind == "prefix_and":
            starts = sql.prefix(ref, Literal(pushed.literal, None, repr(pushed.literal)))
            matches = sql.pushed_prefix(matches, starts)
        return matches.negate() if node.args.get("negate") else matches

    def _between(self, node: exp.Between) -> Polar:
        if node.args.get("symmetric"):
            raise self.error(
                node, "uses BETWEEN SYMMETRIC", "order the bounds and use plain BETWEEN"
            )
        ref = self.reference(node.this)
        low, high = self.literal(node.args["low"]), self.literal(node.args["high"])
        return sql.conjunction(
            sql.comparison(Operation.GT_EQ, ref, low), sql.comparison(Operation.LT_EQ, ref, high)
        )

    # ------------------------------------------------------------------ terms

    def reference(self, node: exp.Expr) -> Reference:
        """A column reference; nested fields (``loc.lat``) become one dotted name."""
        node = _unparen(node)
        parts = _column_parts(node)
        if parts is None:
            if isinstance(node, exp.Literal | exp.Null | exp.Boolean | exp.Cast):
                raise self.error(
                    node,
                    "is a value where a column name is expected",
                    "put the column name first, e.g. col IS NULL",
                )
            raise self.error(
                node,
                "is not a column name",
                "name a column directly; expressions over columns cannot be filtered",
            )
        return Reference(".".join(parts))

    def literal(self, node: exp.Expr) -> Literal:
        """A literal value; typed and cast literals carry their type in ``type_hint``."""
        node = _unparen(node)
        text = self._token_text(node) or self.fragment(node)[0]
        if isinstance(node, exp.Neg):
            inner = self.literal(node.this)
            if isinstance(inner.value, bool) or not isinstance(inner.value, int | float | Decimal):
                raise self.error(node, "negates something that is not a number", "remove '-'")
            if not text.startswith("-"):
                text = f"-{inner.text}"
            return Literal(-inner.value, inner.type_hint, text)
        if isinstance(node, exp.Boolean):
            return Literal(bool(node.this), None, text)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return Literal(node.this, None, text)
            return Literal(self._number(node, node.this), None, text)
        if isinstance(node, exp.HexString) and text[:2] in ("X'", "x'"):
            try:
                return Literal(bytes.fromhex(node.this), None, text)
            except ValueError as e:
                raise self.error(node, "is not valid hexadecimal", "write X'0AFF'") from e
        if isinstance(node, exp.Cast):  # exp.TryCast is a Cast
            return self._cast(node, text)
        if isinstance(node, exp.Null):
            raise self.error(node, "is NULL where a value is needed", "use IS NULL")
        if _is_column(node):
            raise self.error(
                node,
                "is a column where a value is needed",
                "compare a column with a literal value (quote strings with ')",
            )
        raise self._unsupported(node)

    def _number(self, node: exp.Expr, digits: str) -> int | Decimal | float:
        try:
            if "e" in digits.lower():
                value = float(digits)
                if math.isinf(value):
                    raise self.error(node, "is too large for a double", "write a smaller number")
                return value
            if "." in digits:
                return Decimal(digits)
            return int(digits)
        except (ValueError, InvalidOperation) as e:
            raise self.error(node, "is not a number", "write a number such as 42 or 4.2") from e

    def _cast(self, node: exp.Cast, text: str) -> Literal:
        to = node.args.get("to")
        inner = _unparen(node.this)
        if not isinstance(to, exp.DataType) or not isinstance(inner, exp.Literal | exp.Neg):
            raise self.error(
                node,
                "converts something that is not a literal value",
                "compare the column itself with a literal",
            )
        kind = to.this
        raw = self.literal(inner)
        if kind in _TEMPORAL_HINTS:
            if not isinstance(raw.value, str):
                raise self.error(node, "needs a quoted value", f"write {kind.value} '...'")
            hint = _TEMPORAL_HINTS[kind]
            return Literal(self._temporal(node, hint, raw.value), hint, text)
        try:
            if kind in _INTEGER_TYPES:
                value: Any = raw.value if isinstance(raw.value, int) else Decimal(str(raw.value))
                if not isinstance(value, int):
                    if value != value.to_integral_value():
                        raise ValueError(value)
                    value = int(value)
                return Literal(value, None, text)
            if kind in _FLOAT_TYPES:
                return Literal(float(raw.value), None, text)
            if kind in _DECIMAL_TYPES:
                return Literal(Decimal(str(raw.value)), None, text)
            if kind in _STRING_TYPES and isinstance(raw.value, str):
                return Literal(raw.value, None, text)
        except (ValueError, InvalidOperation) as e:
            raise self.error(
                node, f"cannot be read as {kind.value}", "write a valid literal"
            ) from e
        raise self.error(
            node,
            f"casts to {to.sql(dialect=_DIALECT)}, which a filter literal cannot have",
            "use a number, a string, or DATE/TIME/TIMESTAMP '...'",
        )

    def _temporal(self, node: exp.Expr, hint: str, raw: str) -> Any:
        text = raw.strip()
        try:
            if hint == "date":
                if not _ISO_DATE.fullmatch(text):
                    raise ValueError(text)
                return dt.date.fromisoformat(text)
            if hint == "time":
                iso_to_time_micros(text)
                return text
            iso_to_nanos(text, with_zone=False if hint == "timestamp_ntz" else None)
            return text
        except (ValueError, IcecoreError) as e:
            examples = {
                "date": "'2024-08-09'",
                "time": "'10:15:30'",
                "timestamp": "'2024-08-09 10:15:30' or '2024-08-09T10:15:30+02:00'",
                "timestamp_ntz": "'2024-08-09 10:15:30' (no zone offset)",
            }
            raise self.error(
                node,
                f"is not a valid {hint.upper()} literal",
                f"write it as {examples[hint]}",
            ) from e


def _chain(node: exp.And | exp.Or) -> list[exp.Expr]:
    """The operands of a chain of one connector, parentheses around links included, in order."""
    kind = type(node)
    operands: list[exp.Expr] = []
    stack: list[exp.Expr] = [node]
    while stack:
        current = _unparen(stack.pop())
        if type(current) is kind:
            stack.extend((current.right, current.left))
        else:
            operands.append(current)
    return operands


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _column_parts(node: exp.Expr) -> list[str] | None:
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            return None
        parts: Iterable[exp.Expr] = node.parts
        names = [p.name for p in parts]
        return names if all(isinstance(p, exp.Identifier) for p in node.parts) else None
    if isinstance(node, exp.Dot):
        left = _column_parts(node.this)
        right = node.expression
        if left is None or not isinstance(right, exp.Identifier):
            return None
        return [*left, right.name]
    return None


def _is_column(node: exp.Expr) -> bool:
    return _column_parts(node) is not None and not _is_bare_nan(node)


def _is_bare_nan(node: exp.Expr) -> bool:
    """An unquoted ``NaN`` (sqlglot reads it as a column named NaN)."""
    return (
        isinstance(node, exp.Column)
        and not node.table
        and isinstance(node.this, exp.Identifier)
        and not node.this.quoted
        and node.this.name.lower() == "nan"
    )


def _is_literal_like(node: exp.Expr) -> bool:
    return isinstance(
        node, exp.Literal | exp.Boolean | exp.Null | exp.Neg | exp.Cast | exp.HexString
    )


__all__ = ["IcecoreFilterDialect", "parse_filter"]


def table_references(sql: str, table: str) -> int | None:
    """How many times a user query (DuckDB's SQL) reads ``table``; None if unsure.

    :func:`icecore.sql.run_sql` streams ``rows`` into DuckDB only when the query scans it
    once: a stream cannot be read twice (a self-join, a subquery), and a ``WITH`` clause may
    be expanded where it is used, so a query with one is counted as unsure.
    """
    try:
        trees = [t for t in sqlglot.parse(sql, read="duckdb") if t is not None]
    except (ParseError, TokenError, RecursionError):
        return None
    if len(trees) != 1 or any(True for _ in trees[0].find_all(exp.With, exp.CTE)):
        return None
    wanted = table.lower()
    return sum(1 for node in trees[0].find_all(exp.Table) if str(node.name).lower() == wanted)


def referenced_tables(sql: str, dialect: str | None = None) -> list[tuple[str, ...]] | None:
    """The tables and views a query reads, each as its name parts (catalog, namespace, name).

    For a view's "reads" (issue 35, :mod:`icecore.view_lineage`): every relation its SQL
    names, sorted, without repeats, without the names its ``WITH`` clauses define and without
    table functions (``range(10)``); the parts a reference leaves out are absent (``t`` is
    ``("t",)``), a nested namespace keeps every part. ``dialect`` is the view
    representation's (``spark``, ``trino``, ...; :func:`sqlglot_dialect`). None when the SQL
    is not one statement that parses (it is never run, only read).
    """
    try:
        trees = [t for t in sqlglot.parse(sql, read=sqlglot_dialect(dialect)) if t is not None]
    except (ParseError, TokenError, RecursionError, ValueError):
        return None
    if len(trees) != 1:
        return None
    tree = trees[0]
    defined = {str(c.alias_or_name).lower() for c in tree.find_all(exp.CTE)}
    found: set[tuple[str, ...]] = set()
    for node in tree.find_all(exp.Table):
        if not isinstance(node.this, exp.Identifier):
            continue  # a table function or VALUES: nothing of the catalog
        parts = tuple(str(p.name) for p in node.parts)
        if len(parts) == 1 and parts[0].lower() in defined:
            continue
        found.add(parts)
    return sorted(found)


_DIALECT_ALIASES = {
    "spark-sql": "spark",
    "postgresql": "postgres",
    "flink": "spark",
    "impala": "hive",
}
"""Dialect names engines write in view representations that sqlglot spells otherwise."""

_SQLGLOT_DIALECTS = frozenset(
    d.value
    for d in sqlglot.dialects.dialect.Dialects
    if d.value  # an allow-list of names
)


def sqlglot_dialect(dialect: str | None) -> str | None:
    """The sqlglot reader for an Iceberg representation's dialect (None: its default)."""
    if not dialect:
        return None
    name = _DIALECT_ALIASES.get(dialect.lower(), dialect.lower())
    return name if name in _SQLGLOT_DIALECTS else None


PUSHABLE_KINDS = ("integer", "floating", "string")
"""Column kinds whose comparisons with a literal mean the same in DuckDB and in a filter."""


def pushable_where(sql: str, table: str, kinds: dict[str, str]) -> str | None:
    """The part of a query's WHERE that may be pushed into the scan of ``table``, as a filter.

    For :func:`icecore.sql.run_sql`: a query ``SELECT ... FROM rows [alias] WHERE ...`` (one
    SELECT, ``rows`` its only source, no join) reads only rows its WHERE keeps, so the scan
    need not read the others: planning prunes files by the pushed filter and the reader drops
    rows. DuckDB still applies the whole WHERE, so a pushed conjunct may only keep a superset
    of what DuckDB keeps. Only conjuncts whose meaning is the same in DuckDB and in Icecore's
    filters (Spark's) are pushed, an allow-list: a top-level column of a kind in ``kinds``
    (lower-cased name -> ``integer``, ``floating`` or ``string``) compared (=, <>, <, <=, >,
    >=, BETWEEN, IN) with literals of its own kind (integers for integer columns, numbers
    for floating ones, strings for strings), and ``IS [NOT] NULL``. Dates, timestamps and
    decimals are left to DuckDB (time zones and literal typing differ). None: nothing pushed.
    """
    try:
        trees = [t for t in sqlglot.parse(sql, read="duckdb") if t is not None]
    except (ParseError, TokenError, RecursionError):
        return None
    if len(trees) != 1 or not isinstance(trees[0], exp.Select):
        return None
    select = trees[0]
    source = select.args.get("from_") or select.args.get("from")
    if source is None or select.args.get("joins") or select.args.get("where") is None:
        return None
    scanned = source.this
    if not isinstance(scanned, exp.Table) or str(scanned.name).lower() != table.lower():
        return None
    names = {table.lower()} | ({str(scanned.alias).lower()} if scanned.alias else set())
    where = select.args["where"].this
    conjuncts = list(where.flatten()) if isinstance(where, exp.And) else [where]
    pushed = [_unqualified(c) for c in conjuncts if _pushable(c, names, kinds)]
    return " AND ".join(f"({p})" for p in pushed) or None


def _unqualified(node: exp.Expr) -> str:
    """A conjunct as filter text, its columns named without the table or alias."""
    bare = node.copy()
    for column in bare.find_all(exp.Column):
        column.set("table", None)
    return str(bare.sql(dialect="spark"))


def _column_kind(node: exp.Expr, names: set[str], kinds: dict[str, str]) -> str | None:
    if not isinstance(node, exp.Column) or node.args.get("db") or node.args.get("catalog"):
        return None
    if node.table and node.table.lower() not in names:
        return None
    return kinds.get(str(node.name).lower())


def _literal_fits(node: exp.Expr, kind: str) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    if not isinstance(node, exp.Literal):
        return False
    if kind == "string":
        return bool(node.is_string)
    if node.is_string:
        return False
    text = str(node.this)
    if kind == "integer":
        return re.fullmatch(r"\d+", text) is not None
    return re.fullmatch(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text) is not None


_PUSHED_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def _pushable(node: exp.Expr, names: set[str], kinds: dict[str, str]) -> bool:
    """Whether one conjunct is on the allow-list of :func:`pushable_where`."""
    if isinstance(node, exp.Paren):
        return _pushable(node.this, names, kinds)
    if isinstance(node, exp.Not) and isinstance(node.this, exp.Is):
        node = node.this
    if isinstance(node, exp.Is):
        return _column_kind(node.this, names, kinds) is not None and isinstance(
            node.expression, exp.Null
        )
    if isinstance(node, _PUSHED_COMPARISONS):
        left, right = node.this, node.expression
        kind = _column_kind(left, names, kinds)
        if kind is None:
            left, right = right, left
            kind = _column_kind(left, names, kinds)
        return kind is not None and _literal_fits(right, kind)
    if isinstance(node, exp.Between):
        kind = _column_kind(node.this, names, kinds)
        return (
            kind is not None
            and _literal_fits(node.args["low"], kind)
            and _literal_fits(node.args["high"], kind)
        )
    if isinstance(node, exp.In):
        kind = _column_kind(node.this, names, kinds)
        values = node.expressions
        return (
            kind is not None
            and not node.args.get("query")
            and bool(values)
            and all(_literal_fits(v, kind) for v in values)
        )
    return False
