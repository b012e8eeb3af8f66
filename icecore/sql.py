"""SQL over a table's metadata tables and scan rows, with DuckDB, safe for user-typed SQL.

``run_sql(table, "SELECT spec_id, count(*) FROM files GROUP BY 1")`` answers from Arrow
tables Icecore builds: every metadata table (``files``, ``manifests``, ``snapshots``, ... as
:mod:`icecore.inspect` names them) and ``rows``, the scan of the chosen snapshot (deletes
applied, the optional filter pushed into planning). Only the tables a query names are built.

User SQL is locked down: a fresh in-memory DuckDB per query with external access off (no
files, no network), no extension installs or loads from disk, configuration locked, memory
and threads limited, and only SELECT statements accepted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from icecore.errors import IcecoreError, ValidationError
from icecore.inspect import KINDS

if TYPE_CHECKING:
    from icecore.table import Table

ROWS_TABLE = "rows"
"""The name of the scan's rows in user SQL."""

MAX_TABLE_LOOKUPS = 20
_MISSING_TABLE = re.compile(r"Table with name (\S+) does not exist", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SqlLimits:
    """Resource limits for one user query."""

    memory_limit: str = "1GB"
    threads: int = 2
    max_rows: int = 100_000


def _connect(limits: SqlLimits) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(
        ":memory:",
        config={
            "enable_external_access": False,
            "autoload_known_extensions": False,
            "autoinstall_known_extensions": False,
            "allow_unsigned_extensions": False,
            "allow_community_extensions": False,
            "memory_limit": limits.memory_limit,
            "threads": limits.threads,
        },
    )
    connection.execute("SET lock_configuration = true")
    return connection


def _check_select_only(connection: duckdb.DuckDBPyConnection, sql: str) -> None:
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as e:
        raise ValidationError(f"The SQL does not parse: {_first_line(e)}") from e
    if len(statements) != 1:
        raise ValidationError("Write exactly one SELECT statement.")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise ValidationError(
            f"Only SELECT queries are allowed here, not {statements[0].type.name}."
        )


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def query_arrow(
    sql: str,
    tables: Mapping[str, pa.Table | Callable[[], pa.Table]],
    limits: SqlLimits | None = None,
) -> pa.Table:
    """Run one SELECT over named Arrow tables; callables are built only when the SQL uses them.

    Raises:
        ValidationError: not a single SELECT, a syntax error, or an unknown table.
        IcecoreError: DuckDB refused or failed to run it (limits, permissions, types).
    """
    limits = limits or SqlLimits()
    connection = _connect(limits)
    try:
        _check_select_only(connection, sql)
        registered: set[str] = set()
        for _ in range(MAX_TABLE_LOOKUPS):
            try:
                result = connection.sql(sql)
                if result is None:
                    raise ValidationError("The query returned no result set.")
                return result.to_arrow_table().slice(0, limits.max_rows)
            except duckdb.CatalogException as e:
                match = _MISSING_TABLE.search(str(e))
                name = match.group(1).strip('"').lower() if match else None
                if name is None or name in registered or name not in tables:
                    known = ", ".join(sorted(tables))
                    raise ValidationError(f"{_first_line(e)} Tables you can query: {known}.") from e
                source = tables[name]
                connection.register(name, source() if callable(source) else source)
                registered.add(name)
            except duckdb.ParserException as e:
                raise ValidationError(f"The SQL does not parse: {_first_line(e)}") from e
            except duckdb.Error as e:
                raise IcecoreError(f"The query failed: {_first_line(e)}") from e
        raise ValidationError("The query names too many tables.")
    finally:
        connection.close()


def run_sql(
    table: Table,
    sql: str,
    *,
    filter: str | None = None,
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: Any = None,
    row_limit: int | None = 100_000,
    limits: SqlLimits | None = None,
) -> pa.Table:
    """Run user SQL over ``table``'s metadata tables and its (filtered) rows at a snapshot."""
    selectors: dict[str, Any] = {"snapshot_id": snapshot_id, "ref": ref, "as_of": as_of}

    def inspect_of(kind: str) -> Callable[[], pa.Table]:
        return lambda: table.inspect(kind, **selectors)

    def rows() -> pa.Table:
        return table.scan(filter=filter, **selectors).plan().to_arrow(limit=row_limit)

    sources: dict[str, pa.Table | Callable[[], pa.Table]] = {k: inspect_of(k) for k in KINDS}
    sources[ROWS_TABLE] = rows
    return query_arrow(sql, sources, limits)
