"""Connections and requests that never finish cannot lock clients out of ``serve-rest``.

Judged by effect on a real server process: under 1,100 half-open connections, at the usual
1,024 file-descriptor limit, a legitimate client still gets ``/v1/config``; a connection that
sends nothing is closed by the server; a request that runs past ``--request-timeout`` (a
stalled commit in a worker thread, a body that never arrives) is answered 503 with the spec's
``ErrorModel`` and the server keeps answering others.
"""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from icecore.cli import main
from tests.icecore.server.conftest import RestServer, start_server, stop_server

SERVER_NOFILE = 1024
"""The server's descriptor limit: the common default ``ulimit -n``."""
HALF_OPEN = 1100
HEADER_TIMEOUT_S = 2.0


@contextlib.contextmanager
def _nofile(soft: int) -> Iterator[None]:
    """This process's RLIMIT_NOFILE soft limit set to ``soft`` (children started inherit it)."""
    before, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (before, hard))


def _wait_for(condition: object, bound_s: float, what: str) -> float:
    """Poll ``condition()`` until true; the seconds it took (fails past ``bound_s``)."""
    started = time.monotonic()
    while time.monotonic() - started < bound_s:
        if condition():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {bound_s} s")


def _config_answers(server: RestServer | Limited) -> bool:
    try:
        return requests.get(f"{server.url}/v1/config", timeout=2).status_code == 200
    except requests.RequestException:
        return False


@dataclass
class Limited:
    """A server started at 1,024 descriptors, and what it wrote to stderr so far."""

    server: RestServer
    stderr: list[bytes]

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return int(self.server.url.rsplit(":", 1)[1])


@contextlib.contextmanager
def _start_limited(
    warehouse: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[Limited]:
    """``serve-rest`` at 1,024 descriptors with ``args``; its stderr drained in a thread.

    Why drained: a server logging a traceback per failed ``accept`` would otherwise block on
    a full pipe (and the tests judge that log too).
    """
    with _nofile(SERVER_NOFILE):
        server = start_server(warehouse, *args, env=env)
    stderr: list[bytes] = []
    assert server.process.stderr is not None
    drain = threading.Thread(
        target=lambda: stderr.extend(iter(server.process.stderr.readline, b"")),  # type: ignore[union-attr]
        daemon=True,
    )
    drain.start()
    try:
        yield Limited(server, stderr)
    finally:
        server.process.kill()  # a stalled worker thread would delay a graceful stop
        server.process.wait()
        drain.join(timeout=10)
        stop_server(server)


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Limited]:
    """A server with a short header timeout and request time limit, commits stalled once."""
    with _start_limited(
        tmp_path / "wh",
        "--header-timeout",
        str(HEADER_TIMEOUT_S),
        "--request-timeout",
        "2",
        env={"ICECORE_FAILPOINTS": "rest-before-commit=stall/1"},
    ) as server:
        yield server


def _flood(server: Limited, payloads: tuple[bytes, ...], bound_s: float) -> None:
    """Hold ``HALF_OPEN`` connections sending ``payloads`` in turn; a client still gets in."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = HALF_OPEN + 200
    sockets: list[socket.socket] = []
    with _nofile(
        max(soft, wanted) if hard == resource.RLIM_INFINITY else min(hard, max(soft, wanted))
    ):
        try:
            for _ in range(HALF_OPEN):
                s = socket.socket()
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    s.connect(("127.0.0.1", server.port))
                sockets.append(s)
            sent = _send_when_connected(sockets, payloads)
            assert sent >= HALF_OPEN // 2, sent
            took = _wait_for(
                lambda: _config_answers(server), bound_s, "a legitimate /v1/config answer"
            )
            assert server.server.process.poll() is None
            # Still answering while the connections are held, never out of descriptors.
            assert _config_answers(server), took
            assert not any(b"Too many open files" in line for line in server.stderr)
        finally:
            for s in sockets:
                s.close()


def _send_when_connected(sockets: list[socket.socket], payloads: tuple[bytes, ...]) -> int:
    """Send each socket its payload once its connection is made; how many were made."""
    todo = {s: payloads[i % len(payloads)] for i, s in enumerate(sockets)}
    made = 0
    with selectors.DefaultSelector() as selector:
        for s in todo:
            selector.register(s, selectors.EVENT_WRITE)
        deadline = time.monotonic() + 20
        while todo and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                s = key.fileobj
                assert isinstance(s, socket.socket)
                selector.unregister(s)
                payload = todo.pop(s)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    made += 1
                    if payload:
                        with contextlib.suppress(OSError):
                            s.send(payload)
    return made


FEW_FDS = pytest.mark.skipif(
    resource.getrlimit(resource.RLIMIT_NOFILE)[1] not in (resource.RLIM_INFINITY,)
    and resource.getrlimit(resource.RLIMIT_NOFILE)[1] < HALF_OPEN + 200,
    reason="the test process cannot open enough sockets",
)


@pytest.mark.slow
@FEW_FDS
def test_half_open_connections_do_not_lock_out_a_client(limited: Limited) -> None:
    # Nothing at all, or half a request line and headers, never finished.
    _flood(limited, (b"", b"GET /v1/config HTTP/1.1\r\nHost: x\r\n"), HEADER_TIMEOUT_S + 20)


@pytest.mark.slow
@FEW_FDS
def test_requests_whose_body_never_comes_do_not_lock_out_a_client(tmp_path: Path) -> None:
    """Complete heads, bodies that never arrive: only the connection bound can help in time."""
    body_never_comes = (
        b"POST /v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n{"
    )
    with _start_limited(
        tmp_path / "wh", "--header-timeout", "60", "--request-timeout", "120"
    ) as server:
        _flood(server, (body_never_comes,), 15)


@pytest.mark.slow
def test_a_connection_that_sends_nothing_is_closed(limited: Limited) -> None:
    for partial in (b"", b"GET /v1/config HTTP/1.1\r\nHost: x\r\n"):
        with socket.create_connection(("127.0.0.1", limited.port), timeout=30) as s:
            if partial:
                s.sendall(partial)
            started = time.monotonic()
            assert s.recv(1024) == b""  # closed by the server, not by our timeout
            assert time.monotonic() - started < HEADER_TIMEOUT_S + 10


@pytest.mark.slow
def test_a_keep_alive_connection_cannot_stall_a_second_request(limited: Limited) -> None:
    with socket.create_connection(("127.0.0.1", limited.port), timeout=30) as s:
        s.sendall(b"GET /v1/config HTTP/1.1\r\nHost: x\r\n\r\n")
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        s.sendall(b"GET /v1/config HTTP/1.1\r\n")  # the next request, never finished
        started = time.monotonic()
        while s.recv(65536):
            pass
        assert time.monotonic() - started < HEADER_TIMEOUT_S + 10


@pytest.mark.slow
def test_a_request_past_the_time_limit_is_503_and_the_server_answers_others(
    limited: Limited,
) -> None:
    base = f"{limited.url}/v1/namespaces"
    assert requests.post(base, json={"namespace": ["lim"]}, timeout=10).status_code == 200
    created = requests.post(
        f"{base}/lim/tables",
        json={
            "name": "t",
            "schema": {
                "type": "struct",
                "schema-id": 0,
                "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
            },
        },
        timeout=10,
    )
    assert created.status_code == 200, created.text
    started = time.monotonic()
    stalled = requests.post(  # the commit's worker thread stalls (failpoint)
        f"{base}/lim/tables/t", json={"requirements": [], "updates": []}, timeout=60
    )
    assert time.monotonic() - started < 30
    assert stalled.status_code == 503
    error = stalled.json()["error"]
    assert error["code"] == 503 and error["type"] == "ServiceUnavailableException"
    assert _config_answers(limited)
    # A body announced and never sent is also cut at the limit.
    with socket.create_connection(("127.0.0.1", limited.port), timeout=30) as s:
        s.sendall(
            b"POST /v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
            if b"ServiceUnavailableException" in answer:
                break
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]


@pytest.mark.parametrize(
    "option", ["--header-timeout", "--keep-alive", "--request-timeout", "--max-connections"]
)
def test_a_limit_that_is_not_positive_is_one_sentence(
    tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve-rest", f"sqlite:///{tmp_path / 'c.db'}", "--port", "9", option, "0"])
    assert code != 0
    assert capsys.readouterr().err == f"error: {option} must be positive.\n"
    assert not (tmp_path / "c.db").exists()  # refused before anything was opened


def test_more_connections_than_descriptors_allow_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _nofile(SERVER_NOFILE):
        code = main(
            ["serve-rest", f"sqlite:///{tmp_path / 'c.db'}", "--port", "9"]
            + ["--max-connections", str(SERVER_NOFILE)]
        )
    assert code != 0
    err = capsys.readouterr().err
    assert err.startswith(f"error: --max-connections {SERVER_NOFILE} is more than")
    assert err.count("\n") == 1
