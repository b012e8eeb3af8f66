"""Icecore's REST server started for real: ``python -m icecore serve-rest`` on 127.0.0.1.

Each server runs in its own process over a fresh SQLite catalog (JdbcCatalog's schema, as
Spark and PyIceberg share it), on a free port; tests talk to it over HTTP only.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from icecore.catalog.sql import create_sqlite_catalog
from tests.conftest import REPO

START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RestServer:
    """A running ``serve-rest`` process.

    Attributes:
        url: its base URL (``http://127.0.0.1:PORT``).
        warehouse: the folder holding ``catalog.db`` and the tables.
        process: the server process.
    """

    url: str
    warehouse: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def catalog_db(self) -> Path:
        """The backing SQLite catalog."""
        return self.warehouse / "catalog.db"

    def alive(self) -> bool:
        """Whether the process still runs and answers ``GET /v1/config``."""
        return self.process.poll() is None


def start_server(
    warehouse: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    catalog_name: str | None = None,
    catalog: str | None = None,
) -> RestServer:
    """Start ``python -m icecore serve-rest sqlite:///<warehouse>/catalog.db`` and wait for it.

    ``catalog_name`` serves that ``catalog_name`` of the file (``?catalog=NAME``); ``catalog``
    serves that catalog instead (a warehouse folder, ``postgresql://...``).
    """
    warehouse.mkdir(parents=True, exist_ok=True)
    if catalog is None:
        db = create_sqlite_catalog(warehouse / "catalog.db")
        catalog = f"sqlite:///{db}" + (f"?catalog={catalog_name}" if catalog_name else "")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "icecore",
            "serve-rest",
            catalog,
            "--port",
            str(port),
            *extra,
        ],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve-rest exited: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            requests.get(f"{url}/v1/config", timeout=1)
            return RestServer(url, warehouse, process)
        except requests.ConnectionError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("serve-rest did not start in time")


def stop_server(server: RestServer) -> None:
    """Stop the process this fixture started (by its own pid)."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGINT)
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
    if server.process.stderr is not None:
        server.process.stderr.close()


@pytest.fixture(scope="module")
def rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """An open server (no credential, read-write) over a fresh SQLite catalog."""
    server = start_server(tmp_path_factory.mktemp("rest") / "warehouse")
    yield server
    stop_server(server)


_WRITER = """
import sys, time
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.types import IntegerType
url, name, column, start_at = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
table = RestCatalog("w", uri=url).load_table(name)
print("loaded", flush=True)
time.sleep(max(0.0, start_at - time.time()))
try:
    with table.update_schema() as update:
        update.add_column(column, IntegerType())
    print("committed", flush=True)
except CommitFailedException:
    print("refused", flush=True)
"""


def add_columns_at_once(url: str, table: str, columns: list[str], lead_s: float) -> dict[str, str]:
    """Each column added by its own process (PyIceberg's RestCatalog), all at one moment.

    Plain ``python -c`` processes, not multiprocessing: a spawned child imports the test
    module and everything pytest loaded, which on a loaded 2-core machine took minutes.
    Every writer loads the table first; the commits start ``lead_s`` seconds after launch.
    Returns column -> ``committed``, ``refused`` or the error a writer ended with.
    """
    start_at = time.time() + lead_s
    procs = {
        column: subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, table, column, str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for column in columns
    }
    results: dict[str, str] = {}
    for column, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        lines = out.split()
        results[column] = lines[-1] if proc.returncode == 0 and lines else f"error: {err[-500:]}"
    return results
