"""SQL over a table's metadata tables and scan rows, with DuckDB, safe for user-typed SQL.

``run_sql(table, "SELECT spec_id, count(*) FROM files GROUP BY 1")`` answers from Arrow
tables Icecore builds: every metadata table (``files``, ``manifests``, ``snapshots``, ... as
:mod:`icecore.inspect` names them) and ``rows``, the scan of the chosen snapshot (deletes
applied, the optional filter pushed into planning). Only the tables a query names are built,
and of ``rows`` only the columns it names (:func:`icecore.expressions.parser.names_in_query`).

``rows`` holds every live row of the scan: no input row cap. A query that reads ``rows``
once streams it: the query process pulls record batches as DuckDB scans them, so an exact
``count(*)`` or GROUP BY over a table of any size holds only DuckDB's working state, and the
conjuncts of its WHERE that mean the same as a filter are pushed into the scan
(:func:`pushed_filter`: planning prunes files by them, the reader drops rows). What bounds a
query is time (``ICECORE_SQL_TIMEOUT_S``), memory (the child's ``RLIMIT_DATA``) and, for a
query that reads ``rows`` more than once (held whole by the query process), before anything
is read, the estimated size of the columns read (:attr:`SqlLimits.max_input_bytes`), each
refused in one sentence. The result is cut at :attr:`SqlLimits.max_rows`, and a cut result
says so (:func:`result_cut`).

User SQL is locked down. Each query runs in a child process of its own
(:mod:`icecore.sql_worker`), because no limit inside DuckDB bounds what a query can
allocate (``repeat('x', 1500000000)`` lives outside its buffer manager): the kernel's
``RLIMIT_DATA`` on that process does. There, a fresh in-memory DuckDB with external access
off (no files, no network), spilling off (DuckDB would otherwise allow reading its temp
folder back), no extension installs or loads, configuration locked, threads limited, only
one SELECT accepted, a timer interrupting the query after ``ICECORE_SQL_TIMEOUT_S`` seconds
(30 by default), and the result fetched in batches up to a row and a byte limit. The child
starts in a private, empty, mode-0700 folder removed afterwards, and is killed if it
outlives the time limit by more than a grace period.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa
import pyarrow.ipc

from icecore.arrow_types import arrow_type
from icecore.compute import pc
from icecore.errors import IcecoreError, ValidationError
from icecore.health import format_bytes
from icecore.inspect import METADATA_TABLES, MetadataTable, Scope, inspect_table
from icecore.point_in_time import Point, Resolved
from icecore.row_access import check_names_in_query, readable_schema
from icecore.scan.planner import Plan, TableScan
from icecore.schema import Schema
from icecore.table_data import access_of
from icecore.types import DoubleType, FloatType, IntegerType, LongType, StringType

if TYPE_CHECKING:
    from icecore.table_data import TableData

ROWS_TABLE = "rows"
"""The name of the scan's rows in user SQL."""

TIMEOUT_ENV = "ICECORE_SQL_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 30.0
KILL_GRACE_S = 5.0
"""How long past the time limit the child may take to stop itself before it is killed."""

_WORKER = Path(__file__).with_name("sql_worker.py")
_HEADER_SIZE = 9  # one kind byte, an 8-byte big-endian length (see icecore.sql_worker)


def timeout_from_env() -> float:
    """``ICECORE_SQL_TIMEOUT_S`` as seconds (30 when unset).

    Raises:
        ValidationError: the variable is not a positive number.
    """
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ValidationError(
            f"{TIMEOUT_ENV}={text!r} is not a positive number of seconds; set it to e.g. 30."
        )
    return value


@dataclass(frozen=True, slots=True)
class SqlLimits:
    """Resource limits for one user query.

    Attributes:
        memory_limit: DuckDB's buffer manager limit.
        threads: DuckDB's threads.
        max_rows: rows returned at most (the rest are not fetched).
        max_bytes: Arrow bytes of the result at most; a larger result is refused.
        process_memory_mb: the query process's data segment limit (``RLIMIT_DATA``), the
            bound that holds whatever DuckDB allocates.
        timeout_s: seconds before the query is stopped; None reads ``ICECORE_SQL_TIMEOUT_S``.
        max_entries: manifest entries a file-level metadata table (``files``,
            ``all_entries``, ...) may be built from, and rows ``all_manifests`` may have;
            those are made before the query runs, in the caller's process and outside
            ``timeout_s``, so they are bounded here.
        max_snapshots: snapshots whose manifest lists a whole-history table
            (``all_manifests``, ``all_entries``, ``all_files``, ...) may read (each list is
            read before anything is counted).
        max_input_bytes: the estimated Arrow size of the ``rows`` columns a query that
            reads ``rows`` more than once (not streamed) reads (planned records times the
            columns' widths) at most; past it the query is refused before anything is
            read. Half the process limit by default: the child holds those rows while
            DuckDB works on them.
    """

    memory_limit: str = "1GB"
    threads: int = 2
    max_rows: int = 100_000
    max_bytes: int = 256 * 2**20
    process_memory_mb: int = 2048
    timeout_s: float | None = None
    max_entries: int = 250_000
    max_snapshots: int = 2_000
    max_input_bytes: int = 1024 * 2**20


CUT_KEY = b"icecore.result_cut"
"""Schema metadata key the worker sets on a result it cut at ``max_rows``."""


def result_cut(result: pa.Table) -> bool:
    """Whether the query gave more rows than ``result`` holds (cut at ``SqlLimits.max_rows``)."""
    return (result.schema.metadata or {}).get(CUT_KEY) == b"1"


def _send(stream: IO[bytes], kind: bytes, payload: bytes) -> None:
    stream.write(kind + len(payload).to_bytes(8, "big"))
    stream.write(payload)
    stream.flush()


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pyarrow.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


CHILD_ENV_NAMES = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH"})
"""Variables the query process inherits, besides ``LC_*`` (an allow-list)."""


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the query process starts with: locale, time zone, search paths only.

    Why: the parent (the app, the CLI, ``serve-rest``) holds catalog passwords, storage keys,
    ``ICECORE_SERVE_CREDENTIAL`` and ``AWS_*``/``PG*`` variables in its environment, and the
    child runs SQL a visitor wrote. DuckDB, pyarrow and ``python -I`` need none of them, so
    nothing outside this allow-list crosses, whatever a future DuckDB function might read.
    """
    return {
        name: value
        for name, value in environ.items()
        if name in CHILD_ENV_NAMES or name.startswith("LC_")
    }


class _Child:
    """The worker process of one query, read with a deadline."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.folder = tempfile.mkdtemp(prefix="icecore-sql-")  # mode 0700
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.folder,
            env=child_environment(os.environ),
        )
        # Waiting for the parent (building a table) does not count against the query.
        self.budget = timeout + KILL_GRACE_S

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def send(self, kind: bytes, payload: bytes) -> None:
        assert self.process.stdin is not None
        try:
            _send(self.process.stdin, kind, payload)
        except BrokenPipeError as e:
            raise self.died() from e

    def died(self) -> IcecoreError:
        code = self.process.poll()
        return IcecoreError(
            f"The SQL query process stopped unexpectedly (exit status {code}); simplify the "
            "query or try again."
        )

    def receive(self) -> tuple[bytes, bytes]:
        stdout = self.process.stdout
        assert stdout is not None
        started = time.monotonic()
        ready, _, _ = select.select([stdout], [], [], max(self.budget, 0.0))
        self.budget -= time.monotonic() - started
        if not ready:
            self.process.kill()
            raise _timeout_error(self.timeout)
        header = stdout.read(_HEADER_SIZE)
        if len(header) < _HEADER_SIZE:
            raise self.died()
        length = int.from_bytes(header[1:], "big")
        payload = stdout.read(length)
        if len(payload) < length:
            raise self.died()
        return header[:1], payload


def _timeout_error(timeout: float) -> IcecoreError:
    return IcecoreError(
        f"The query ran longer than {timeout:g} s and was stopped; narrow it (a filter, a "
        f"LIMIT) or raise {TIMEOUT_ENV}."
    )


Source: TypeAlias = "pa.Table | Callable[[], pa.Table | pa.RecordBatchReader]"
"""A table of a query: Arrow, or made only when the SQL names it (a reader is streamed)."""


def _send_table(child: _Child, made: pa.Table | pa.RecordBatchReader) -> None:
    """Hand a table to the child; a reader batch by batch, so this process never holds it.

    Reading a streamed table (``rows``: data files read as the query asks) counts against
    the query's time limit: past it the read stops and the query is refused as too long.
    """
    if isinstance(made, pa.Table):
        child.send(b"T", _ipc(made))
        return
    deadline = time.monotonic() + child.timeout
    for batch in made:
        if time.monotonic() > deadline:
            raise _timeout_error(child.timeout)
        if batch.num_rows:
            child.send(b"B", _ipc(pa.Table.from_batches([batch])))
    child.send(b"T", _ipc(made.schema.empty_table()))


def query_arrow(
    sql: str,
    tables: Mapping[str, Source],
    limits: SqlLimits | None = None,
    *,
    stream: Collection[str] = (),
) -> pa.Table:
    """Run one SELECT over named Arrow tables; callables are built only when the SQL uses them.

    The result carries :data:`CUT_KEY` when the query gave more than ``limits.max_rows``
    rows (:func:`result_cut`). The tables named in ``stream`` are pulled by the query
    process batch by batch as DuckDB scans them (:mod:`icecore.sql_worker`), so neither
    process holds them whole: only for a table the query reads once (a stream cannot be
    scanned twice; :func:`icecore.expressions.parser.table_references`).

    Raises:
        ValidationError: not a single SELECT, a syntax error, or an unknown table.
        IcecoreError: DuckDB refused or failed to run it (time, memory, result size,
            permissions, types).
    """
    limits = limits or SqlLimits()
    timeout = limits.timeout_s if limits.timeout_s is not None else timeout_from_env()
    request = {
        "sql": sql,
        "tables": sorted(tables),
        "memory_limit": limits.memory_limit,
        "threads": limits.threads,
        "max_rows": limits.max_rows,
        "max_bytes": limits.max_bytes,
        "process_memory_bytes": limits.process_memory_mb * 2**20,
        "timeout_s": timeout,
    }
    streamed = sorted(set(stream) & set(tables))
    request["stream"] = streamed
    child = _Child(timeout)
    streams: dict[str, _Stream] = {}
    try:
        child.send(b"S", json.dumps(request).encode())
        while True:
            kind, payload = child.receive()
            if kind == b"R":
                return pyarrow.ipc.open_stream(pa.py_buffer(payload)).read_all()
            if kind == b"E":
                raise _error(json.loads(payload), timeout, limits)
            if kind not in (b"N", b"P"):
                raise child.died()
            name = json.loads(payload)["name"]
            if kind == b"P":
                if name not in streams:
                    raise child.died()
                streams[name].send_next(child)
                continue
            source = tables[name]
            made = source() if callable(source) else source
            if name in streamed:
                streams[name] = _Stream(made, child.timeout)
                child.send(b"H", _ipc(streams[name].schema.empty_table()))
            else:
                _send_table(child, made)
    finally:
        for opened in streams.values():
            opened.close()
        child.close()


class _Stream:
    """A table the query process pulls batch by batch (``P`` frames, :mod:`icecore.sql_worker`).

    Reading it counts against the query's time limit, as :func:`_send_table` does.
    """

    def __init__(self, made: pa.Table | pa.RecordBatchReader, timeout: float) -> None:
        self.reader = made.to_reader() if isinstance(made, pa.Table) else made
        self.schema = self.reader.schema
        self._batches = iter(self.reader)
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def send_next(self, child: _Child) -> None:
        """The next non-empty batch, or the end (``T``)."""
        for batch in self._batches:
            if time.monotonic() > self.deadline:
                raise _timeout_error(self.timeout)
            if batch.num_rows:
                child.send(b"B", _ipc(pa.Table.from_batches([batch])))
                return
        child.send(b"T", b"")

    def close(self) -> None:
        """Stop reading (the scan's files are released now, not when collected)."""
        self.reader.close()


def _error(answer: dict[str, str], timeout: float, limits: SqlLimits) -> IcecoreError:
    kind, message = answer["kind"], answer["message"]
    if kind == "validation":
        return ValidationError(message)
    if kind == "timeout":
        return _timeout_error(timeout)
    if kind == "memory":
        return IcecoreError(
            f"The query needed more memory than the {limits.process_memory_mb} MiB allowed "
            "and was stopped; narrow it (a filter, a LIMIT, fewer or smaller values)."
        )
    return IcecoreError(message)


def run_sql(
    table: TableData,
    sql: str,
    *,
    filter: str | None = None,
    at: Point | None = None,
    row_limit: int | None = None,
    limits: SqlLimits | None = None,
    plan: Callable[[], Plan] | None = None,
) -> pa.Table:
    """Run user SQL over ``table``'s metadata tables and its (filtered) rows at a snapshot.

    ``rows`` is every live row of the scan (``row_limit``: the first rows only, for callers
    that ask for a sample; None, the default, is every row), read column by column as the
    query names them and streamed to the query process. ``plan``, when given, returns the
    plan of that very scan (``filter`` at ``at``, by default the current snapshot): a caller
    that keeps plans (the app) passes its kept one, so ``rows`` reads no manifest again. It
    is called only when the SQL names ``rows``. Every table of the query reads one point,
    resolved once.

    Raises:
        ValidationError: as :func:`query_arrow`, and when the ``rows`` columns the query
            reads are estimated past ``limits.max_input_bytes``.
    """

    @functools.cache
    def point() -> Resolved:  # once, when a table is read: all of them read this point
        return table.resolve(at)

    bounds = limits or SqlLimits()
    bound = bounds.max_entries
    instead = (
        f"query {ROWS_TABLE} (with a filter), snapshots or manifests instead, or run it on Spark."
    )

    def inspect_of(record: MetadataTable) -> Callable[[], pa.Table]:
        # The size guard reads what the registry says of the kind: a new kind is bounded too.
        kind = record.name

        def build() -> pa.Table:
            snapshots = len(table.metadata.snapshots)
            if record.scope is Scope.ALL_SNAPSHOTS and snapshots > bounds.max_snapshots:
                raise ValidationError(
                    f"The {kind} table would read the manifest lists of {snapshots:,} "
                    f"snapshots, more than the {bounds.max_snapshots:,} a query here may "
                    f"read; {instead}"
                )
            count = record.entry_count(table, point().snapshot)
            if count > bound:
                what = "manifest entries" if record.per_entry else "manifest list entries"
                raise ValidationError(
                    f"The {kind} table would be built from {count:,} {what}, more than the "
                    f"{bound:,} a query here may read; {instead}"
                )
            return inspect_table(table, kind, at=point())

        return build

    from icecore.expressions.parser import table_references

    streamed = table_references(sql, ROWS_TABLE) == 1

    def rows() -> pa.RecordBatchReader:
        # Rows as this principal may read them (icecore.row_access): a plan the caller
        # kept is read with this table's access, a masked column named anywhere in the
        # query is refused in one sentence, ``*`` is every other column, and a count with
        # no column and no filter stays viewer-level (positions, not values).
        access, what = access_of(table), str(table.identifier)
        found = plan() if plan is not None else TableScan(table, filter, at=point()).plan()
        planned = found.with_access(access, what)
        if access.mask:
            check_names_in_query(planned.schema, access, _identifiers(sql), what)
        visible = readable_schema(planned.schema, access)
        pushed = pushed_filter(sql, visible)
        if pushed is not None:
            # The query's WHERE, where it means the same as a filter, planned with the
            # scan's own: fewer files read, fewer rows sent; DuckDB still applies it all.
            # A pushed filter that Icecore refuses (past a filter's size bound, say) is
            # only a lost shortcut: the query runs on the scan as it was.
            both = pushed if filter is None else f"({filter}) AND ({pushed})"
            with contextlib.suppress(IcecoreError):
                planned = TableScan(table, both, at=point()).plan().with_access(access, what)
        columns = rows_columns(visible, sql)
        extra = [] if columns is None or columns else ["_pos"]  # DuckDB wants a column
        schema = planned.arrow_schema(columns, extra)
        if not streamed:  # held whole by the query process: bounded before reading
            _check_rows_size(planned, visible, columns, bounds.max_input_bytes, row_limit)
        return pa.RecordBatchReader.from_batches(
            schema, planned.to_batches(columns, row_limit, extra)
        )

    sources: dict[str, Source] = {k: inspect_of(r) for k, r in METADATA_TABLES.items()}
    sources[ROWS_TABLE] = rows
    return query_arrow(sql, sources, limits, stream=[ROWS_TABLE] if streamed else [])


_PUSHED_KINDS: dict[type, str] = {
    IntegerType: "integer",
    LongType: "integer",
    FloatType: "floating",
    DoubleType: "floating",
    StringType: "string",
}
"""Column types whose comparisons with literals DuckDB and Icecore's filters read alike."""


def pushed_filter(sql: str, schema: Schema) -> str | None:
    """The conjuncts of ``sql``'s WHERE that the scan of ``rows`` may apply itself (a filter).

    See :func:`icecore.expressions.parser.pushable_where` for which ones and why; the
    columns are the top-level ones of ``schema`` (what the principal may read).
    """
    from icecore.expressions.parser import pushable_where

    kinds = {
        f.name.lower(): kind
        for f in schema.fields
        if (kind := _PUSHED_KINDS.get(type(f.field_type))) is not None
    }
    if not kinds:
        return None
    return pushable_where(sql, ROWS_TABLE, kinds)


def rows_columns(schema: Schema, sql: str) -> list[str] | None:
    """The top-level columns of ``rows`` that ``sql`` names (None: it may use every one).

    A name the query uses anywhere (a column, an alias, a struct field) that is also a
    column's name reads that column: wider than needed at worst, never narrower.
    """
    # Imported here: sqlglot costs ~0.1 s to import, and most CLI commands never parse SQL.
    from icecore.expressions.parser import names_in_query

    names = names_in_query(sql)
    if names is None:
        return None
    return [f.name for f in schema.fields if f.name.lower() in names]


VARIABLE_WIDTH_BYTES = 32
"""Estimated Arrow bytes of one value of a string, binary or nested column (offsets and data)."""


def _value_bytes(field_type: Any) -> int:
    arrow = arrow_type(field_type)
    try:
        return max(arrow.bit_width // 8, 1)
    except ValueError:
        return VARIABLE_WIDTH_BYTES


def _identifiers(sql: str) -> frozenset[str]:
    from icecore.expressions.parser import identifiers_in_query

    return identifiers_in_query(sql) or frozenset()


def _check_rows_size(
    plan: Plan, schema: Schema, columns: list[str] | None, bound: int, row_limit: int | None
) -> None:
    """Refuse, before reading, ``rows`` columns whose estimated Arrow size passes ``bound``.

    The estimate is the planned files' record counts (before deletes: an upper bound of
    the rows) times the columns' value widths (fixed widths as Arrow stores them,
    :data:`VARIABLE_WIDTH_BYTES` for the others).
    """
    records = int(pc.sum(plan.files().column("record_count")).as_py() or 0)
    if row_limit is not None:
        records = min(records, row_limit)
    fields = [f for f in schema.fields if columns is None or f.name in columns]
    width = sum(_value_bytes(f.field_type) for f in fields) or 8  # _pos
    estimate = records * width
    if estimate > bound:
        raise ValidationError(
            f"The {ROWS_TABLE} columns this query reads are about {format_bytes(estimate)} "
            f"({records:,} rows of {len(fields):,} columns, estimated from the planned files' "
            f"record counts), more than the {format_bytes(bound)} a query here may hold; name "
            "fewer columns, add a filter, or run it on Spark."
        )
