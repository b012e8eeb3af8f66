"""SQL over a table's metadata tables and scan rows, with DuckDB, safe for user-typed SQL.

``run_sql(table, "SELECT spec_id, count(*) FROM files GROUP BY 1")`` answers from Arrow
tables Icecore builds: every metadata table (``files``, ``manifests``, ``snapshots``, ... as
:mod:`icecore.inspect` names them) and ``rows``, the scan of the chosen snapshot (deletes
applied, the optional filter pushed into planning). Only the tables a query names are built.

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

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.ipc

from icecore.errors import IcecoreError, ValidationError
from icecore.inspect import EVERY_SNAPSHOT_KINDS, KINDS, entry_count, inspect_table
from icecore.scan.planner import Plan, TableScan

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
    """

    memory_limit: str = "1GB"
    threads: int = 2
    max_rows: int = 100_000
    max_bytes: int = 256 * 2**20
    process_memory_mb: int = 2048
    timeout_s: float | None = None
    max_entries: int = 250_000
    max_snapshots: int = 2_000


def _send(stream: IO[bytes], kind: bytes, payload: bytes) -> None:
    stream.write(kind + len(payload).to_bytes(8, "big"))
    stream.write(payload)
    stream.flush()


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pyarrow.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


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


def query_arrow(
    sql: str,
    tables: Mapping[str, pa.TableData | Callable[[], pa.Table]],
    limits: SqlLimits | None = None,
) -> pa.Table:
    """Run one SELECT over named Arrow tables; callables are built only when the SQL uses them.

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
    child = _Child(timeout)
    try:
        child.send(b"S", json.dumps(request).encode())
        while True:
            kind, payload = child.receive()
            if kind == b"R":
                return pyarrow.ipc.open_stream(pa.py_buffer(payload)).read_all()
            if kind == b"E":
                raise _error(json.loads(payload), timeout, limits)
            if kind != b"N":
                raise child.died()
            name = json.loads(payload)["name"]
            source = tables[name]
            child.send(b"T", _ipc(source() if callable(source) else source))
    finally:
        child.close()


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
    snapshot_id: int | None = None,
    ref: str | None = None,
    as_of: Any = None,
    row_limit: int | None = 100_000,
    limits: SqlLimits | None = None,
    plan: Callable[[], Plan] | None = None,
) -> pa.Table:
    """Run user SQL over ``table``'s metadata tables and its (filtered) rows at a snapshot.

    ``plan``, when given, returns the plan of that very scan (``filter`` at the selectors):
    a caller that keeps plans (the app) passes its kept one, so ``rows`` reads no manifest
    again. It is called only when the SQL names ``rows``.
    """
    selectors: dict[str, Any] = {"snapshot_id": snapshot_id, "ref": ref, "as_of": as_of}

    bounds = limits or SqlLimits()
    bound = bounds.max_entries
    instead = (
        f"query {ROWS_TABLE} (with a filter), snapshots or manifests instead, or run it on Spark."
    )

    def inspect_of(kind: str) -> Callable[[], pa.Table]:
        def build() -> pa.Table:
            snapshots = len(table.metadata.snapshots)
            if kind in EVERY_SNAPSHOT_KINDS and snapshots > bounds.max_snapshots:
                raise ValidationError(
                    f"The {kind} table would read the manifest lists of {snapshots:,} "
                    f"snapshots, more than the {bounds.max_snapshots:,} a query here may "
                    f"read; {instead}"
                )
            count = entry_count(table, kind, **selectors)
            if count > bound:
                what = "manifest list entries" if kind == "all_manifests" else "manifest entries"
                raise ValidationError(
                    f"The {kind} table would be built from {count:,} {what}, more than the "
                    f"{bound:,} a query here may read; {instead}"
                )
            return inspect_table(table, kind, **selectors)

        return build

    def rows() -> pa.Table:
        planned = plan() if plan is not None else TableScan(table, filter, **selectors).plan()
        return planned.to_arrow(limit=row_limit)

    sources: dict[str, pa.TableData | Callable[[], pa.Table]] = {k: inspect_of(k) for k in KINDS}
    sources[ROWS_TABLE] = rows
    return query_arrow(sql, sources, limits)
