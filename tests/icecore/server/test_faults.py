"""Faults on the commit path through Icecore's REST server, with real processes and sockets.

A server ended at a step of a commit (a ``crash`` failpoint ends the process at once, as a
SIGKILL would: no cleanup, no reply), a reply lost to a connection reset, a 503 answered
before or after the change was applied. The backing SQLite catalog is the judge: after a
restart the table is at its old version or at the new one, its pointer naming a metadata file
that parses and holds exactly that version, never a half-applied change; a client that lost
the answer learns the outcome by loading the table again, and never commits twice.
"""

from __future__ import annotations

import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog as PeerCatalog
from pyiceberg.exceptions import CommitStateUnknownException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from icecore.catalog import load_catalog
from icecore.catalog.sql import SqlCatalog
from icecore.errors import CommitStateUnknown
from icecore.failpoints import CRASH_EXIT_CODE, ENV
from icecore.table import Table
from tests.icecore.server.conftest import RestServer, start_server, stop_server

# Fault tests (kills, 503s, resets): the full gate runs them, `make test-quick` does not.
pytestmark = pytest.mark.slow

TABLE = "f.t"


def _serve(warehouse: Path, failpoints: str | None = None) -> RestServer:
    return start_server(warehouse, env={ENV: failpoints} if failpoints else {ENV: ""})


def _create(server: RestServer) -> str:
    """The table ``f.t`` (one column), created through the server; its metadata location."""
    peer = PeerCatalog("setup", uri=server.url)
    peer.create_namespace("f")
    table = peer.create_table(TABLE, Schema(NestedField(1, "id", LongType(), required=False)))
    return str(table.metadata_location)


def _backing(server: RestServer) -> Table:
    return SqlCatalog(server.catalog_db).load_table(TABLE)


def _columns(table: Table) -> list[str]:
    return [f.name for f in table.metadata.current_schema().fields]


def _assert_whole(table: Table, before: str, applied: bool) -> None:
    """The backing table is fully at ``before`` or fully one commit after it."""
    if applied:
        assert table.metadata_location != before
        assert [e.metadata_file for e in table.metadata.metadata_log][-1] == before
        assert _columns(table) == ["id", "note"]
        assert table.metadata.last_column_id == 2
    else:
        assert table.metadata_location == before
        assert _columns(table) == ["id"]
        assert table.metadata.last_column_id == 1


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "wh"


@pytest.mark.parametrize(
    ("point", "applied"),
    [
        ("rest-before-commit", False),  # the request was read, nothing done
        ("sql-after-write", False),  # the new metadata file written, the pointer not swapped
        ("sql-before-commit", False),  # the pointer swapped inside an uncommitted transaction
        ("sql-after-commit", True),  # the swap committed, the reply never sent
        ("rest-after-commit", True),
    ],
)
def test_server_killed_mid_commit_leaves_the_table_whole(
    warehouse: Path, point: str, applied: bool
) -> None:
    server = _serve(warehouse, f"{point}=crash")
    try:
        before = _create(server)
        table = load_catalog(server.url).load_table(TABLE)
        with pytest.raises(CommitStateUnknown) as caught:
            table.update_schema().add_column("note", "string").commit()
        assert server.process.wait(timeout=30) == CRASH_EXIT_CODE
    finally:
        stop_server(server)
    message = str(caught.value)
    assert "look" in message and "Traceback" not in message
    assert "\n" not in message

    # After a restart: the pointer and its file agree, the change is all there or not at all.
    _assert_whole(_backing(server), before, applied)
    again = _serve(warehouse)
    try:
        served = load_catalog(again.url).load_table(TABLE)
        assert served.metadata_location == _backing(again).metadata_location
        assert _columns(served) == _columns(_backing(again))
        # The table takes commits again; the lost one is made once, by whoever retries it.
        if not applied:
            served.update_schema().add_column("note", "string").commit()
        assert _columns(_backing(again)) == ["id", "note"]
        assert PeerCatalog("peer", uri=again.url).load_table(TABLE).schema().field_ids == {1, 2}
    finally:
        stop_server(again)


def _swap_in_flight(db: Path) -> bool:
    """Whether a writer holds the catalog's write lock (the swap's transaction is open)."""
    with closing(sqlite3.connect(db, timeout=0, isolation_level=None)) as probe:
        try:
            probe.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            assert "locked" in str(e)
            return True
        probe.execute("ROLLBACK")
        return False


def test_server_sigkilled_inside_the_swap_transaction_rolls_back(warehouse: Path) -> None:
    """SIGKILL while the pointer's UPDATE is done but not committed: the table stays as it was."""
    server = _serve(warehouse, "sql-before-commit=stall")
    outcome: list[BaseException | str] = []
    try:
        before = _create(server)
        table = load_catalog(server.url).load_table(TABLE)

        def commit() -> None:
            try:
                table.update_schema().add_column("note", "string").commit()
                outcome.append("committed")
            except BaseException as e:  # checked in the test's thread
                outcome.append(e)

        committer = threading.Thread(target=commit)
        committer.start()
        deadline = time.monotonic() + 60
        while not _swap_in_flight(server.catalog_db):
            assert time.monotonic() < deadline, "the commit never reached the swap"
            time.sleep(0.05)
        server.process.send_signal(signal.SIGKILL)
        assert server.process.wait(timeout=30) == -signal.SIGKILL
        committer.join(timeout=120)
    finally:
        stop_server(server)
    assert len(outcome) == 1 and isinstance(outcome[0], CommitStateUnknown), outcome
    # The rolled-back swap is invisible; its metadata file was written, and is not current.
    _assert_whole(_backing(server), before, applied=False)
    assert len(list(warehouse.rglob("*.metadata.json"))) == 2
    again = _serve(warehouse)
    try:
        load_catalog(again.url).load_table(TABLE).update_schema().add_column(
            "note", "string"
        ).commit()
        _assert_whole(_backing(again), before, applied=True)
    finally:
        stop_server(again)


@pytest.mark.parametrize(
    ("point", "applied"), [("sql-after-write", False), ("sql-after-commit", True)]
)
def test_pyiceberg_client_of_a_killed_server_gets_a_clean_error(
    warehouse: Path, point: str, applied: bool
) -> None:
    server = _serve(warehouse, f"{point}=crash")
    try:
        before = _create(server)
        table = PeerCatalog("peer", uri=server.url).load_table(TABLE)
        with (
            pytest.raises((CommitStateUnknownException, requests.ConnectionError)),
            table.update_schema() as update,
        ):
            update.add_column("note", StringType())
        assert server.process.wait(timeout=30) == CRASH_EXIT_CODE
    finally:
        stop_server(server)
    _assert_whole(_backing(server), before, applied)


def test_503_before_the_commit_is_retried_once_after_looking(warehouse: Path) -> None:
    """Found unchanged after the 503, the commit is sent once more and lands once."""
    server = _serve(warehouse, "rest-before-commit=unavailable/1")
    try:
        before = _create(server)
        table = load_catalog(server.url).load_table(TABLE)
        committed = table.update_schema().add_column("note", "string").commit()
        assert _columns(committed) == ["id", "note"]
        backing = _backing(server)
        _assert_whole(backing, before, applied=True)
        assert committed.metadata_location == backing.metadata_location
        assert server.alive()
    finally:
        stop_server(server)


def test_503_every_time_ends_in_commit_state_unknown_after_one_retry(warehouse: Path) -> None:
    server = _serve(warehouse, "rest-before-commit=unavailable")
    try:
        before = _create(server)
        table = load_catalog(server.url).load_table(TABLE)
        with pytest.raises(CommitStateUnknown, match="one retry") as caught:
            table.update_schema().add_column("note", "string").commit()
        assert "ServiceUnavailableException" in str(caught.value)
        _assert_whole(_backing(server), before, applied=False)
        assert server.alive()
    finally:
        stop_server(server)


def test_503_after_the_commit_is_found_applied(warehouse: Path) -> None:
    """Applied, then answered 503: loading again finds the change; nothing is sent twice."""
    server = _serve(warehouse, "rest-after-commit=unavailable")
    try:
        before = _create(server)
        table = load_catalog(server.url).load_table(TABLE)
        committed = table.update_schema().add_column("note", "string").commit()
        backing = _backing(server)
        _assert_whole(backing, before, applied=True)
        assert committed.metadata_location == backing.metadata_location
        assert len(backing.metadata.metadata_log) == 1  # one commit, not two
    finally:
        stop_server(server)


class ResettingProxy:
    """A TCP proxy to the server that can lose the reply to a ``POST``.

    Armed, it relays the next ``POST`` to the server and then resets the client's connection
    instead of relaying the answer: the request was applied, its reply is lost.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.armed = threading.Event()
        self.resets = 0
        self.before_reset: Callable[[], None] | None = None
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            state = {"reset": False}
            threading.Thread(target=self._up, args=(client, upstream, state), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client, state), daemon=True).start()

    def _up(self, client: socket.socket, upstream: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := client.recv(65536):
                if data.startswith(b"POST ") and self.armed.is_set():
                    self.armed.clear()
                    state["reset"] = True
                upstream.sendall(data)
            upstream.shutdown(socket.SHUT_WR)  # the client is done: so is its flow upstream
        except OSError:
            pass

    def _down(self, upstream: socket.socket, client: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := upstream.recv(65536):
                if state["reset"]:
                    if self.before_reset is not None:
                        self.before_reset()
                    # SO_LINGER 0: close() sends RST, as a middlebox dropping the flow would.
                    client.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                    )
                    # The other thread is blocked reading this socket, and Linux defers a
                    # close (and so the RST) until that read returns: wake it first, or the
                    # client hears nothing until its read timeout (60 s).
                    client.shutdown(socket.SHUT_RD)
                    client.close()
                    upstream.close()
                    self.resets += 1
                    return
                client.sendall(data)
            # The server closed the connection (an idle keep-alive): close the client's too,
            # or its pool reuses a connection that leads nowhere and waits for its timeout.
            client.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self._stop = True
        self.listener.close()


@pytest.fixture
def proxied(warehouse: Path) -> Iterator[tuple[RestServer, ResettingProxy]]:
    server = _serve(warehouse)
    proxy = ResettingProxy(int(server.url.rsplit(":", 1)[1]))
    yield server, proxy
    proxy.close()
    stop_server(server)


def test_connection_reset_after_the_commit_was_sent_is_resolved_by_looking(
    proxied: tuple[RestServer, ResettingProxy],
) -> None:
    server, proxy = proxied
    before = _create(server)
    table = load_catalog(proxy.url).load_table(TABLE)
    proxy.armed.set()
    committed = table.update_schema().add_column("note", "string").commit()
    assert proxy.resets == 1  # the reply really was lost
    backing = _backing(server)
    _assert_whole(backing, before, applied=True)
    assert committed.metadata_location == backing.metadata_location
    assert len(backing.metadata.metadata_log) == 1


def test_connection_reset_then_a_moved_table_stays_unknown(
    proxied: tuple[RestServer, ResettingProxy],
) -> None:
    """If another commit lands on top before the client looks, it cannot tell: it says so."""
    server, proxy = proxied
    before = _create(server)
    table = load_catalog(proxy.url).load_table(TABLE)

    def other_writer() -> None:  # commits after the lost reply, before the client can look
        peer = PeerCatalog("other", uri=server.url).load_table(TABLE)
        peer.transaction().set_properties(owner="other").commit_transaction()

    proxy.before_reset = other_writer
    proxy.armed.set()
    with pytest.raises(CommitStateUnknown, match="history"):
        table.update_schema().add_column("note", "string").commit()
    backing = _backing(server)
    assert _columns(backing) == ["id", "note"]
    assert backing.metadata.properties.get("owner") == "other"
    assert [e.metadata_file for e in backing.metadata.metadata_log][0] == before
