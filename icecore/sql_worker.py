"""The child process that runs one user SQL query with DuckDB, under hard limits.

Started by :mod:`icecore.sql` as ``python -I <this file>`` (a script: it imports nothing from
Icecore, so it starts in a fifth of a second), in a fresh private working folder. Why a
process of its own: DuckDB's ``memory_limit`` bounds only its buffer manager, and a string
function such as ``repeat('x', 1500000000)`` allocates outside it (measured: 4.3 GB peak RSS
with ``memory_limit=1GB``); the only bound that holds is the kernel's, ``RLIMIT_DATA`` on a
process that holds nothing else. DuckDB turns the failed allocation into an
``OutOfMemoryException``, Python into ``MemoryError``; either is reported as one sentence.

Locked down as well: external access off (no files, no network); spilling off
(``temp_directory=''``: DuckDB otherwise adds its temp folder, ``.tmp`` under the working
folder, to ``allowed_directories``, where ``glob``/``read_text`` could read it back); no
extension installs or loads; configuration locked; only one SELECT; a timer that interrupts
the connection after the time limit; results fetched in batches and stopped at the row and
byte limits.

Protocol on stdin/stdout (stdout is kept for it; fd 1 is pointed at stderr): frames of one
kind byte and an 8-byte big-endian length. Parent: ``S`` (the request, JSON), ``B`` (a batch
of the table the child asked for, Arrow IPC stream; any number, so the parent streams a
large table without holding it), ``T`` (the table, or its last part, Arrow IPC stream; empty
when the name is unknown), ``H`` (a streamed table's schema, an empty Arrow IPC stream).
A table the request lists under ``stream`` is pulled, not pushed: after ``N`` the parent
answers ``H``, and then one ``B`` (a batch) or ``T`` (the end) for each ``P`` the child sends,
so DuckDB reads it as it scans and the child never holds the whole table (issue 32).
Child: ``N`` (JSON ``{"name": ...}``: a table the query names), ``P`` (the next batch of the
streamed table, JSON ``{"name": ...}``),
``R`` (the result, Arrow IPC stream; its schema metadata has ``icecore.result_cut`` ``1``
when the query gave more than ``max_rows`` rows), ``E`` (JSON ``{"kind": ..., "message":
...}``).
"""

from __future__ import annotations

import json
import os
import re
import resource
import struct
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

import duckdb
import pyarrow as pa
import pyarrow.ipc

_HEADER = struct.Struct(">cQ")
_MISSING_TABLE = re.compile(r"Table with name (\S+) does not exist", re.IGNORECASE)
MAX_TABLE_LOOKUPS = 20
BATCH_ROWS = 2048
CUT_KEY = b"icecore.result_cut"


class Refusal(Exception):
    """A query refused or stopped; ``kind`` tells the parent which error to raise."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def read_frame(stream: IO[bytes]) -> tuple[bytes, bytes]:
    """One frame: its kind and payload (``b""``, ``b""`` at end of stream)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return b"", b""
    kind, length = _HEADER.unpack(header)
    payload = stream.read(length)
    if len(payload) < length:
        return b"", b""
    return kind, payload


def write_frame(stream: IO[bytes], kind: bytes, payload: bytes) -> None:
    """Send one frame and flush it."""
    stream.write(_HEADER.pack(kind, len(payload)))
    stream.write(payload)
    stream.flush()


def first_line(error: BaseException) -> str:
    """The first line of an error message (DuckDB adds context lines)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def connect(request: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB with every door shut."""
    connection = duckdb.connect(
        ":memory:",
        config={
            "enable_external_access": False,
            "autoload_known_extensions": False,
            "autoinstall_known_extensions": False,
            "allow_unsigned_extensions": False,
            "allow_community_extensions": False,
            "temp_directory": "",
            "memory_limit": request["memory_limit"],
            "threads": request["threads"],
        },
    )
    connection.execute("SET lock_configuration = true")
    return connection


def check_select_only(connection: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Exactly one SELECT statement."""
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as e:
        raise Refusal("validation", f"The SQL does not parse: {first_line(e)}") from e
    if len(statements) != 1:
        raise Refusal("validation", "Write exactly one SELECT statement.")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise Refusal(
            "validation", f"Only SELECT queries are allowed here, not {statements[0].type.name}."
        )


class Query:
    """One user query: runs it, asking the parent for each table it names."""

    def __init__(self, request: dict[str, Any], source: IO[bytes], sink: IO[bytes]) -> None:
        self.request = request
        self.source = source
        self.sink = sink
        self.connection = connect(request)
        self.remaining = float(request["timeout_s"])
        self.timed_out = threading.Event()

    def _interrupt(self) -> None:
        self.timed_out.set()
        self.connection.interrupt()

    def _ask_for(self, error: duckdb.CatalogException, registered: set[str]) -> None:
        match = _MISSING_TABLE.search(str(error))
        name = match.group(1).strip('"').lower() if match else None
        known = self.request["tables"]
        if name is None or name in registered or name not in known:
            raise Refusal(
                "validation", f"{first_line(error)} Tables you can query: {', '.join(known)}."
            ) from error
        write_frame(self.sink, b"N", json.dumps({"name": name}).encode())
        if name in self.request.get("stream", ()):
            kind, payload = read_frame(self.source)
            if kind != b"H" or not payload:
                raise Refusal("failed", f"The table {name} could not be built.")
            schema = pyarrow.ipc.open_stream(pa.py_buffer(payload)).schema
            self.connection.register(
                name, pa.RecordBatchReader.from_batches(schema, self._pull(name))
            )
            registered.add(name)
            return
        parts: list[pa.Table] = []
        kind, payload = read_frame(self.source)
        while kind == b"B":
            parts.append(pyarrow.ipc.open_stream(pa.py_buffer(payload)).read_all())
            kind, payload = read_frame(self.source)
        if kind != b"T" or not payload:
            raise Refusal("failed", f"The table {name} could not be built.")
        last = pyarrow.ipc.open_stream(pa.py_buffer(payload)).read_all()
        table = pa.concat_tables([*parts, last]) if parts else last
        self.connection.register(name, table)
        registered.add(name)

    def _pull(self, name: str) -> Iterator[pa.RecordBatch]:
        """The batches of a streamed table, each asked of the parent when DuckDB wants it."""
        ask = json.dumps({"name": name}).encode()
        while True:
            write_frame(self.sink, b"P", ask)
            kind, payload = read_frame(self.source)
            if kind == b"T":
                return
            if kind != b"B":
                raise Refusal("failed", f"The table {name} stopped before its end.")
            yield from pyarrow.ipc.open_stream(pa.py_buffer(payload))

    def _fetch(self) -> pa.Table:
        result = self.connection.sql(self.request["sql"])
        if result is None:
            raise Refusal("validation", "The query returned no result set.")
        reader = result.to_arrow_reader(BATCH_ROWS)
        max_rows, max_bytes = self.request["max_rows"], self.request["max_bytes"]
        batches: list[pa.RecordBatch] = []
        rows = size = 0
        cut = False
        for batch in reader:
            if rows >= max_rows:
                cut = batch.num_rows > 0
                if cut:
                    break
                continue
            size += batch.nbytes
            if size > max_bytes:
                raise Refusal(
                    "too_big",
                    f"The result is larger than {max_bytes / 2**20:g} MiB; select fewer or "
                    "smaller columns, or add a LIMIT.",
                )
            batches.append(batch.slice(0, max_rows - rows))
            rows += batches[-1].num_rows
            cut = batches[-1].num_rows < batch.num_rows
            if cut:
                break
        schema = reader.schema
        if cut:
            schema = schema.with_metadata({**(schema.metadata or {}), CUT_KEY: b"1"})
        return pa.Table.from_batches(batches, schema=schema)

    def run(self) -> pa.Table:
        """The result, at most ``max_rows`` rows and ``max_bytes`` bytes."""
        check_select_only(self.connection, self.request["sql"])
        registered: set[str] = set()
        for _ in range(MAX_TABLE_LOOKUPS):
            started = time.monotonic()
            timer = threading.Timer(max(self.remaining, 0.0), self._interrupt)
            timer.daemon = True
            timer.start()
            try:
                return self._fetch()
            except duckdb.CatalogException as e:
                timer.cancel()
                self.remaining -= time.monotonic() - started
                self._ask_for(e, registered)
            except duckdb.InterruptException as e:
                raise Refusal("timeout", "stopped") from e
            except duckdb.ParserException as e:
                raise Refusal("validation", f"The SQL does not parse: {first_line(e)}") from e
            except duckdb.OutOfMemoryException as e:
                raise Refusal("memory", first_line(e)) from e
            except duckdb.Error as e:
                if self.timed_out.is_set():
                    raise Refusal("timeout", "stopped") from e
                raise Refusal("failed", f"The query failed: {first_line(e)}") from e
            finally:
                timer.cancel()
        raise Refusal("validation", "The query names too many tables.")


def result_bytes(table: pa.Table) -> bytes:
    """An Arrow table as an IPC stream."""
    sink = pa.BufferOutputStream()
    with pyarrow.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def main() -> int:
    """Read one request, answer it, exit."""
    sink = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print can never corrupt the protocol
    source = sys.stdin.buffer
    kind, payload = read_frame(source)
    if kind != b"S":
        return 2
    request = json.loads(payload)
    limit = int(request["process_memory_bytes"])
    if limit > 0:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    try:
        answer = result_bytes(Query(request, source, sink).run())
    except Refusal as e:
        write_frame(sink, b"E", json.dumps({"kind": e.kind, "message": e.message}).encode())
        return 0
    except MemoryError:
        write_frame(sink, b"E", json.dumps({"kind": "memory", "message": "MemoryError"}).encode())
        return 0
    write_frame(sink, b"R", answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
