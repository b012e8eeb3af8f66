"""The allow-list that a query must pass before it runs on Spark over ``rows``.

"Run on Spark" hands user-typed SQL to a Spark session that can read every table its catalogs
reach, run shell commands (script transforms), call any JVM method (``reflect``) and read
files by path. A deny-list over that surface misses what it did not think of, so this module
accepts only what it can name: a query passes when every node of its syntax tree (sqlglot's
Spark dialect) is of a kind listed here, every function it calls is a listed built-in, every
table it reads is ``rows`` or a common table expression (CTE) in scope where it is read, and
every column it names is a column of the table or a name the query itself defines. Anything
else, including syntax sqlglot does not know (``exp.Command``, unknown nodes), is refused.

Spark then runs the SQL that sqlglot writes back from the checked tree, without comments, not
the text as typed: what runs is what was checked, whatever the two parsers make of comments,
escapes or hints. Spark substitutes ``${...}`` (configuration, ``env:`` and ``system:``
variables) anywhere in the text before it parses, inside string literals too, so that
sequence is refused as well.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from icecore import types as t
from icecore.access import Access
from icecore.errors import NotFound
from icecore.row_access import check_names_in_query, readable_schema, require_rows
from icecore.schema import Schema
from icecore.table import Table
from icecore.table_data import access_of
from pipeline.spark import PipelineError

# sqlglot logs a warning when it falls back to an opaque Command; the refusal says it better.
logging.getLogger("sqlglot").addHandler(logging.NullHandler())

ROWS_VIEW = "rows"
MAX_SQL_CHARS = 20_000
"""Longer text is refused before it is parsed: checking is bounded in time and memory."""
MAX_NODES = 5_000

STRUCTURE: frozenset[type[exp.Expr]] = frozenset(
    {
        # The query and its clauses: they only shape which rows of ``rows`` come back.
        exp.Select,
        exp.Union,
        exp.Intersect,
        exp.Except,
        exp.Subquery,
        exp.From,
        exp.Join,
        exp.Where,
        exp.Group,
        exp.Having,
        exp.Order,
        exp.Ordered,
        exp.Limit,
        exp.Offset,
        exp.Distinct,
        exp.Filter,  # an aggregate's FILTER (WHERE ...)
        exp.Rollup,
        exp.Cube,
        exp.GroupingSets,
        exp.With,
        exp.CTE,
        exp.TableAlias,
        exp.Alias,
        # Names: tables and columns are checked further (scope, schema) below.
        exp.Table,
        exp.Column,
        exp.Identifier,
        exp.Star,
        exp.Dot,  # struct field access; a qualified function name is refused below
        exp.Bracket,  # array or map element
        # Values: literals are data, never code (``${`` is refused in the final text).
        exp.Literal,
        exp.Null,
        exp.Boolean,
        exp.Interval,
        exp.Var,  # a bare keyword such as a unit (DAY, MONTH)
        exp.DataType,  # only in a cast, and only plain types (PLAIN_TYPES)
        exp.DataTypeParam,  # DECIMAL(10, 2)
        exp.Tuple,
        exp.Paren,
        exp.PropertyEQ,  # ``struct(a AS x)``
        exp.JSONPath,  # the path of get_json_object, parsed (its parts: JSONPathPart)
        exp.Lambda,  # the argument of a listed higher-order function (transform, filter)
        # Operators: arithmetic, comparison, boolean, string concatenation, bits.
        exp.Add,
        exp.Sub,
        exp.Mul,
        exp.Div,
        exp.IntDiv,
        exp.Mod,
        exp.Neg,
        exp.DPipe,
        exp.BitwiseAnd,
        exp.BitwiseOr,
        exp.BitwiseXor,
        exp.BitwiseNot,
        exp.BitwiseLeftShift,
        exp.BitwiseRightShift,
        exp.EQ,
        exp.NEQ,
        exp.NullSafeEQ,
        exp.GT,
        exp.GTE,
        exp.LT,
        exp.LTE,
        exp.Is,
        exp.In,
        exp.Between,
        exp.Like,
        exp.ILike,
        exp.RegexpLike,
        exp.And,
        exp.Or,
        exp.Not,
        exp.Any,
        exp.All,
        exp.Case,
        exp.If,
        # Windows: partitioning and ordering over rows already read.
        exp.Window,
        exp.WindowSpec,
        # LATERAL VIEW: only with a generator of GENERATORS (checked below).
        exp.Lateral,
    }
)
"""Node kinds allowed as such; every other kind that is not a listed function is refused."""

_STRINGS = {
    "ascii", "base64", "btrim", "char", "char_length", "character_length", "chr", "concat",
    "concat_ws", "contains", "crc32", "decode", "elt", "encode", "endswith", "find_in_set",
    "format_number", "format_string", "hash", "hex", "initcap", "instr", "lcase", "left",
    "length", "levenshtein", "locate", "lower", "lpad", "ltrim", "md5", "octet_length",
    "overlay", "position", "printf", "regexp_count", "regexp_extract", "regexp_extract_all",
    "regexp_instr", "regexp_like", "regexp_replace", "regexp_substr", "repeat", "replace",
    "reverse", "right", "rlike", "rpad", "rtrim", "sha", "sha1", "sha2", "soundex", "space",
    "split", "split_part", "startswith", "substr", "substring", "substring_index", "to_char",
    "to_number", "translate", "trim", "ucase", "unbase64", "unhex", "upper", "xxhash64",
    "get_json_object", "to_json", "json_array_length",
}  # fmt: skip
"""Text in, text or number out; regular expressions are Java's, over the value only."""

_MATH = {
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bin", "bround",
    "cbrt", "ceil", "ceiling", "cos", "cosh", "cot", "degrees", "div", "e", "exp", "expm1",
    "factorial", "floor", "greatest", "hypot", "isnan", "least", "ln", "log", "log10",
    "log1p", "log2", "mod", "nanvl", "negative", "pi", "pmod", "positive", "pow", "power",
    "radians", "rint", "round", "sign", "signum", "sin", "sinh", "sqrt", "tan", "tanh",
    "try_add", "try_divide", "try_multiply", "try_subtract", "width_bucket",
}  # fmt: skip
"""Numbers in, numbers out."""

_DATES = {
    "add_months", "current_date", "current_timestamp", "date_add", "date_diff",
    "date_format", "date_from_unix_date", "date_part", "date_sub", "date_trunc", "dateadd",
    "datediff", "datepart", "day", "dayofmonth", "dayofweek", "dayofyear", "extract",
    "from_unixtime", "from_utc_timestamp", "hour", "last_day", "make_date",
    "make_timestamp", "minute", "month", "months_between", "next_day", "now", "quarter",
    "second", "timestamp_micros", "timestamp_millis", "timestamp_seconds", "to_date",
    "to_timestamp", "to_timestamp_ntz", "to_unix_timestamp", "to_utc_timestamp", "trunc",
    "unix_date", "unix_micros", "unix_millis", "unix_seconds", "unix_timestamp", "weekday",
    "weekofyear", "year",
}  # fmt: skip
"""Dates and timestamps in, dates, timestamps or numbers out. ``current_date`` and
``current_timestamp`` tell the clock, which every visitor knows anyway."""

_CONDITIONALS = {
    "case", "cast", "coalesce", "if", "ifnull", "isnotnull", "isnull", "nullif", "nvl",
    "nvl2", "try_cast", "exists", "grouping", "grouping_id",
}  # fmt: skip
"""Choices between values already computed; casts only to PLAIN_TYPES."""

_AGGREGATES = {
    "any", "any_value", "approx_count_distinct", "approx_percentile", "array_agg", "avg",
    "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "collect_list", "collect_set",
    "corr", "count", "count_if", "covar_pop", "covar_samp", "every", "first", "first_value",
    "kurtosis", "last", "last_value", "max", "max_by", "mean", "median", "min", "min_by",
    "mode", "percentile", "percentile_approx", "skewness", "some", "std", "stddev",
    "stddev_pop", "stddev_samp", "sum", "var_pop", "var_samp", "variance",
}  # fmt: skip
"""Aggregates over the groups of rows the query forms."""

_WINDOWS = {
    "cume_dist", "dense_rank", "lag", "lead", "nth_value", "ntile", "percent_rank", "rank",
    "row_number",
}  # fmt: skip
"""Ranking and offset functions over a window of rows already read."""

_COLLECTIONS = {
    "array", "array_append", "array_compact", "array_contains", "array_distinct",
    "array_except", "array_insert", "array_intersect", "array_join", "array_max",
    "array_min", "array_position", "array_prepend", "array_remove", "array_repeat",
    "array_size", "array_sort", "array_union", "arrays_overlap", "arrays_zip", "cardinality",
    "element_at", "flatten", "get", "map", "map_concat", "map_contains_key", "map_entries",
    "map_from_arrays", "map_from_entries", "map_keys", "map_values", "named_struct",
    "sequence", "size", "slice", "sort_array", "struct", "try_element_at",
    # Higher-order functions: their lambda sees only its arguments and the row.
    "aggregate", "filter", "forall", "map_filter", "map_zip_with", "reduce",
    "transform", "transform_keys", "transform_values", "zip_with",
}  # fmt: skip
"""Arrays, maps and structs built from values of the row."""

GENERATORS = frozenset(
    {
        "explode",
        "explode_outer",
        "posexplode",
        "posexplode_outer",
        "inline",
        "inline_outer",
        "stack",
    }
)
"""Table generators over values of the row (in the SELECT list or a LATERAL VIEW)."""

FUNCTIONS = frozenset(
    _STRINGS | _MATH | _DATES | _CONDITIONALS | _AGGREGATES | _WINDOWS | _COLLECTIONS | GENERATORS
)
"""Every Spark function a query may call, by the name Spark resolves. Not here, on purpose:
``reflect``/``java_method``/``try_reflect`` (any JVM method), ``input_file_*`` (file
paths), ``current_user``/``session_user``/``user``/``current_catalog`` and friends (the
server's identity and setup), ``rand``/``uuid`` (not pure), user-defined functions, and
table-valued functions (``range``, ``read_files``...): a query reads ``rows`` and nothing
else, so it needs no generated table, and ``range`` would make an unbounded one."""

PLAIN_TYPES = frozenset(
    {
        exp.DataType.Type.BOOLEAN,
        exp.DataType.Type.TINYINT,
        exp.DataType.Type.SMALLINT,
        exp.DataType.Type.INT,
        exp.DataType.Type.BIGINT,
        exp.DataType.Type.FLOAT,
        exp.DataType.Type.DOUBLE,
        exp.DataType.Type.DECIMAL,
        exp.DataType.Type.TEXT,
        exp.DataType.Type.VARCHAR,
        exp.DataType.Type.CHAR,
        exp.DataType.Type.DATE,
        exp.DataType.Type.TIMESTAMP,
        exp.DataType.Type.TIMESTAMPNTZ,
        exp.DataType.Type.TIMESTAMPLTZ,
        exp.DataType.Type.BINARY,
    }
)
"""Types a value may be cast to (nested types are not needed for the questions asked here)."""

_TABLE_ARGS = frozenset({"this", "alias"})
"""What a table reference may carry: a name and an alias (no sample, version, hint, pivot)."""

_TOKEN = re.compile(r"<Token token_type: [^,]*, text: ([^,]*),[^>]*>")
_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(|$)")
_UNRESOLVED = re.compile(r"Column '([^']*)' could not be resolved|Unknown column: (\S+)")
_REFUSED_TAIL = "is not allowed in a query run on Spark from here"

_NAMED_NODES: dict[type[exp.Expr], str] = {
    exp.QueryTransform: "A script transform (TRANSFORM ... USING)",
    exp.Hint: "A query hint (/*+ ... */)",
    exp.Pivot: "PIVOT",
    exp.TableSample: "TABLESAMPLE",
    exp.Version: "Time travel inside the query (the snapshot is chosen outside it)",
    exp.Values: "An inline table (VALUES)",
    exp.Placeholder: "A parameter placeholder",
    exp.Parameter: "A parameter",
}


def check_query(sql: str, columns: Mapping[str, exp.DataType]) -> str:
    """Accept one read-only SELECT over ``rows``; the SQL to run, as checked.

    Args:
        sql: the text a user typed.
        columns: the table's columns as Spark sees them (:func:`spark_columns`).

    Returns:
        The query written back from its checked syntax tree (Spark dialect, no comments).

    Raises:
        PipelineError: one sentence naming the first construct that is not allowed.
    """
    if len(sql) > MAX_SQL_CHARS:
        raise PipelineError(
            f"The query is {len(sql):,} characters long; at most {MAX_SQL_CHARS:,} run on Spark."
        )
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except (SqlglotError, RecursionError) as e:
        raise PipelineError(f"The SQL does not parse as Spark SQL: {_parse_problem(e)}.") from e
    if len(statements) != 1:
        raise PipelineError("Write exactly one SELECT query.")
    query = statements[0]
    if not _is_query(query):
        word = str(query.this).upper() if isinstance(query, exp.Command) else query.key.upper()
        raise PipelineError(f"Only SELECT queries run on Spark from here, not {word}.")
    nodes = list(query.walk())
    if len(nodes) > MAX_NODES:
        raise PipelineError(f"The query has more than {MAX_NODES:,} parts; make it simpler.")
    for node in nodes:
        _check_node(node)
    _check_tables(query, frozenset())
    _check_columns(query, columns)
    text = query.sql(dialect="spark", comments=False)
    if "${" in text:
        raise PipelineError(
            f"The sequence ${{ (Spark's variable substitution) {_REFUSED_TAIL}; "
            "write it another way, for example concat('$', '{')."
        )
    return text


def checked_query(
    sql: str, table: Table, snapshot_id: int | None, access: Access | None = None
) -> str:
    """The query as it will run, checked against the columns Spark reads at the snapshot.

    Spark reads a table at a snapshot with that snapshot's schema, so names resolve there.
    ``access`` (default: what the table's catalog says, :func:`icecore.table_data.access_of`)
    is the principal's: a query over rows needs the reader role, and a masked column is
    neither in ``rows`` (:func:`rows_projection`) nor nameable (DESIGN.md "Identity, roles
    and audit").

    Raises:
        PipelineError: the query is not allowed (one sentence naming the construct).
        Forbidden: the principal may not read rows, or the query names a masked column.
        NotFound: the snapshot is not in the table.
    """
    schema = snapshot_schema_of(table, snapshot_id)
    access = access if access is not None else access_of(table)
    what = str(table.identifier)
    require_rows(access, what)
    if access.mask:
        try:
            trees = sqlglot.parse(sql, read="spark") if len(sql) <= MAX_SQL_CHARS else []
        except (SqlglotError, RecursionError):
            trees = []  # check_query says why in one sentence
        names = {
            str(node.this).lower()
            for tree in trees
            if tree is not None
            for node in tree.find_all(exp.Identifier)
        }
        check_names_in_query(schema, access, names, what)
    return check_query(sql, spark_columns(readable_schema(schema, access)))


def snapshot_schema_of(table: Table, snapshot_id: int | None) -> Schema:
    """The schema Spark reads the table with at ``snapshot_id`` (None: the current one).

    Raises:
        NotFound: the snapshot is not in the table.
    """
    metadata = table.metadata
    schema = metadata.current_schema()
    if snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise NotFound(f"Snapshot {snapshot_id} is not in {table.identifier}; pick another.")
        if snapshot.schema_id is not None:
            schema = metadata.schema_by_id(snapshot.schema_id) or schema
    return schema


def rows_projection(schema: Schema, access: Access) -> list[str] | None:
    """Spark SQL expressions selecting what ``access`` may read of ``schema``; None: all.

    The view ``rows`` a masked principal's query runs over selects these, never ``*``: every
    unmasked column by name, and a struct with masked fields rebuilt from its other fields
    (null where the struct is null), so the masked values are never in the view.
    """
    if not access.mask:
        return None
    return [
        f"{_projected(f, _quoted(f.name))} AS {_quoted(f.name)}"
        for f in readable_schema(schema, access).fields
    ]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    """A Spark SQL string literal (backslash escapes, as Spark's parser reads them)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _projected(field: t.NestedField, path: str) -> str:
    kind = field.field_type
    if not isinstance(kind, t.StructType):
        return path
    parts = ", ".join(
        f"{_literal(f.name)}, {_projected(f, path + '.' + _quoted(f.name))}" for f in kind.fields
    )
    return f"IF({path} IS NULL, NULL, named_struct({parts}))"


def spark_columns(schema: Schema) -> dict[str, exp.DataType]:
    """The schema's columns as the Spark types the column check resolves names against."""
    return {field.name: _spark_type(field.field_type) for field in schema.fields}


def _spark_type(kind: t.IcebergType) -> exp.DataType:
    """The Spark type Iceberg's Spark reader gives a column (struct fields matter most)."""
    dt = exp.DataType.Type
    if isinstance(kind, t.StructType):
        fields = [
            exp.ColumnDef(this=exp.to_identifier(f.name), kind=_spark_type(f.field_type))
            for f in kind.fields
        ]
        return exp.DataType(this=dt.STRUCT, expressions=fields, nested=True)
    if isinstance(kind, t.ListType):
        return exp.DataType(
            this=dt.ARRAY, expressions=[_spark_type(kind.element_type)], nested=True
        )
    if isinstance(kind, t.MapType):
        pair = [_spark_type(kind.key_type), _spark_type(kind.value_type)]
        return exp.DataType(this=dt.MAP, expressions=pair, nested=True)
    if isinstance(kind, t.DecimalType):
        return exp.DataType.build(f"DECIMAL({kind.precision}, {kind.scale})")
    simple = {
        t.BooleanType: dt.BOOLEAN,
        t.IntegerType: dt.INT,
        t.LongType: dt.BIGINT,
        t.FloatType: dt.FLOAT,
        t.DoubleType: dt.DOUBLE,
        t.DateType: dt.DATE,
        t.TimestampType: dt.TIMESTAMPNTZ,
        t.TimestamptzType: dt.TIMESTAMP,
        t.BinaryType: dt.BINARY,
        t.FixedType: dt.BINARY,
    }
    return exp.DataType(this=simple.get(type(kind), dt.TEXT))


def _parse_problem(error: Exception) -> str:
    """The parser's first complaint, with its token dumps shortened to the token's text."""
    lines = str(error).strip().splitlines()
    first = lines[0].rstrip(".") if lines else "a syntax error"
    return _TOKEN.sub(r"\1", first)[:200]


def _is_query(node: exp.Expr) -> bool:
    """A SELECT or a set operation of SELECTs (VALUES alone is a query to sqlglot, not here)."""
    return isinstance(node, exp.Query) and not isinstance(node, exp.Values)


def _refuse(what: str) -> PipelineError:
    return PipelineError(
        f"{what} {_REFUSED_TAIL}; write one SELECT over `{ROWS_VIEW}` with built-in functions."
    )


def _called_name(node: exp.Func) -> str | None:
    """The name of the function Spark will call for ``node`` (as the written-back SQL says)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    found = _CALLED.match(node.sql(dialect="spark", comments=False))
    return found.group(1).lower() if found else None


def _check_node(node: exp.Expr) -> None:
    kind = type(node)
    if kind in _NAMED_NODES:
        raise _refuse(_NAMED_NODES[kind])
    if isinstance(node, exp.Table):
        _check_table_reference(node)
    elif isinstance(node, exp.Dot) and not isinstance(node.expression, exp.Identifier):
        raise _refuse(f"The qualified name {node.sql(dialect='spark')[:80]}")
    elif isinstance(node, exp.DataType):
        if node.this not in PLAIN_TYPES:
            raise _refuse(f"A cast to {node.sql(dialect='spark')[:80]}")
    elif isinstance(node, exp.Lateral):
        generator = node.this
        name = _called_name(generator) if isinstance(generator, exp.Func) else None
        if not node.args.get("view") or name not in GENERATORS:
            raise _refuse(
                "A LATERAL clause other than LATERAL VIEW with " + ", ".join(sorted(GENERATORS))
            )
    elif isinstance(node, exp.With) and node.args.get("recursive"):
        raise _refuse("WITH RECURSIVE")
    if kind in STRUCTURE or isinstance(node, exp.JSONPathPart):
        return
    if isinstance(node, exp.Func):
        name = _called_name(node)
        if name is None or name not in FUNCTIONS:
            raise _refuse(f"The function {name or node.key.upper()}")
        return
    raise _refuse(f"The construct {node.key.replace('_', ' ').upper()}")


def _check_table_reference(table: exp.Table) -> None:
    if not isinstance(table.this, exp.Identifier):
        name = _called_name(table.this) if isinstance(table.this, exp.Func) else None
        raise _refuse(f"The table-valued function {name or table.this.key.upper()}")
    if table.args.get("db") or table.args.get("catalog"):
        raise PipelineError(
            f"The query may read only `{ROWS_VIEW}` (the table at the chosen snapshot), "
            f"not {table.sql(dialect='spark')[:120]}."
        )
    extra = sorted(k for k, v in table.args.items() if v and k not in _TABLE_ARGS)
    if extra:
        raise _refuse(f"{extra[0].upper()} on a table reference")


def _check_tables(node: exp.Expr, visible: frozenset[str]) -> None:
    """Every table read is ``rows`` or a CTE in scope at that point (Spark's CTE scoping).

    A CTE is visible in the CTEs written after it in the same WITH and in the query that
    WITH belongs to (with its subqueries); not in itself, not before it, not outside.
    """
    if isinstance(node, exp.Table):
        name = node.name.lower()
        if name != ROWS_VIEW and name not in visible:
            raise PipelineError(
                f"The query may read only `{ROWS_VIEW}` (the table at the chosen snapshot) and "
                f"the common table expressions in scope where it reads them, not {node.name[:80]}."
            )
    with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
    inner = visible
    if isinstance(with_, exp.With):
        for cte in with_.expressions:
            _check_tables(cte.this, inner)
            inner = inner | {cte.alias_or_name.lower()}
    for child in _children(node):
        if child is not with_:
            _check_tables(child, inner)


def _children(node: exp.Expr) -> Iterator[exp.Expr]:
    for value in node.args.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expr):
                yield item


def _check_columns(query: exp.Expr, columns: Mapping[str, exp.DataType]) -> None:
    """Every column named resolves to a column of the table or a name the query defines.

    Spark would otherwise resolve a name it cannot find in ``rows`` against the table's
    metadata columns (``_file``, ``_pos``, ``_partition``...), which tell where the data lives.
    """
    try:
        qualify(
            query.copy(),
            schema={ROWS_VIEW: dict(columns)},
            dialect="spark",
            validate_qualify_columns=True,
            quote_identifiers=False,
        )
    except OptimizeError as e:
        found = _UNRESOLVED.search(str(e))
        name = next((g for g in found.groups() if g), None) if found else None
        what = f"`{name}`" if name else "a name"
        raise PipelineError(
            f"The query names {what}, which is neither a column of the table nor a name the "
            f"query defines where it is used; metadata columns such as _file are not available."
        ) from e
    except (SqlglotError, RecursionError, ValueError, KeyError) as e:
        raise PipelineError(
            f"The query's column names could not be checked ({str(e)[:120]}); simplify it."
        ) from e
