"""Connection and time limits of the HTTP server: what a client that never finishes can hold.

uvicorn bounds the size of request headers (h11's ``max_incomplete_event_size``) and closes an
idle connection between requests (``timeout_keep_alive``), but it waits forever for the first
request on a fresh connection and for the rest of a request whose first bytes arrived (the
keep-alive timer is cancelled by any byte). Measured on Icecore's server before this module:
about 1,100 connections that sent nothing (or half a request line) used up the 1,024 file
descriptors of a default ``ulimit -n`` and no client got an answer again. Its
``limit_concurrency`` does not help: it counts those idle connections and answers every real
request 503 once they are there. So:

- :func:`guarded_protocol`: uvicorn's h11 protocol with a header deadline (a connection that
  has not delivered a complete request head ``header_timeout_s`` after it opened or after its
  last response is closed) and a bound on open connections (beyond ``max_connections``, the
  connection that has waited longest for its client, a request head or the rest of a body, is
  closed, else the new one), kept below the process's file-descriptor limit so ``accept``
  never fails.
- :class:`RequestTimeLimit`: an ASGI middleware that answers 503 with the spec's
  ``ErrorModel`` (``ServiceUnavailableException``) when a request, body upload included, runs
  past ``request_timeout_s``. A handler already running in a worker thread cannot be stopped:
  it finishes in the background, and a commit it completes is found by the client, which
  treats a 503 on commit as "state unknown" (spec ``CommitTableResponse``) and reloads.

TLS, client authentication and rate limits per address belong to a reverse proxy in front.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from icecore.server.errors import error_response

DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_KEEP_ALIVE_S = 5
DEFAULT_REQUEST_TIMEOUT_S = 120.0
MAX_HEADER_BYTES = 16 * 1024
"""Bytes of a request head (request line and headers) h11 buffers before refusing it."""
RESERVED_FDS = 128
"""File descriptors kept free of client connections: catalog files, threads' pipes, logs."""
BACKLOG = 128
"""The listen backlog, which is also how many sockets asyncio accepts in one go."""
MAX_CONNECTIONS_CAP = 4096


def default_max_connections() -> int:
    """Open client connections allowed: this process's descriptor limit minus reserves.

    Why two backlogs off as well: asyncio accepts up to ``BACKLOG`` sockets per wake-up
    before any of them reaches :meth:`_GuardedH11Protocol.connection_made` (where the bound
    is applied), and a second wake-up can come first; with that room ``accept`` does not hit
    ``EMFILE`` (which stops accepting for a second and logs a traceback per attempt).
    """
    budget = connection_budget()
    return MAX_CONNECTIONS_CAP if budget is None else max(16, min(MAX_CONNECTIONS_CAP, budget))


def connection_budget() -> int | None:
    """Connections the descriptor limit leaves room for (None: no limit)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    return int(soft) - RESERVED_FDS - 2 * BACKLOG


class _GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-head deadline and a connection bound."""

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS_CAP

    _head_timer: asyncio.TimerHandle | None = None
    _head_cycle: Any = None
    _opened: float = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._opened = self.loop.time()
        self._arm_head_timer()
        if len(self.connections) > self.max_connections and (
            sum(not c.transport.is_closing() for c in self.connections) > self.max_connections
        ):  # connections being closed still count until their socket is gone: not twice
            self._shed()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_head_timer()

    def waiting_for_head(self) -> bool:
        """No request is being answered: the connection waits for (the rest of) a head."""
        return self.cycle is None or bool(self.cycle.response_complete)

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_cycle = self.cycle
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_deadline)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_deadline(self) -> None:
        """Close the connection if no new request head arrived since the timer was armed."""
        self._head_timer = None
        if self.cycle is self._head_cycle and self.waiting_for_head():
            self.transport.close()

    def waiting_for_client(self) -> bool:
        """The connection waits for its client: for a request head, or for the rest of a body.

        Why bodies too: a client that sends a head and then trickles (or never sends) the
        body holds its connection until the request time limit; under the connection bound
        it is shed like a headless one, before any connection whose request is being answered.
        """
        cycle = self.cycle
        return self.waiting_for_head() or bool(cycle.more_body and not cycle.response_started)

    def _shed(self) -> None:
        """Over the bound: close the connection waiting longest for its client (maybe this one)."""
        waiting = [
            c
            for c in self.connections
            if isinstance(c, _GuardedH11Protocol)
            and c.waiting_for_client()
            and not c.transport.is_closing()
        ]
        victim = min(waiting, key=lambda c: c._opened, default=self)
        victim.transport.close()


def guarded_protocol(header_timeout_s: float, max_connections: int) -> type[H11Protocol]:
    """The protocol class uvicorn takes as ``http=``, with these two limits."""
    if header_timeout_s <= 0 or max_connections < 1:
        raise ValueError("The header timeout and the connection limit must be positive.")
    return type(
        "GuardedH11Protocol",
        (_GuardedH11Protocol,),
        {"header_timeout_s": header_timeout_s, "max_connections": max_connections},
    )


@dataclass(frozen=True)
class HttpLimits:
    """The server's connection and time limits (``serve-rest --header-timeout`` ...).

    Attributes:
        header_timeout_s: seconds a connection may take to deliver a complete request head.
        keep_alive_s: seconds an idle connection stays open between requests.
        request_timeout_s: seconds a request may take, body upload included, before a 503.
        max_connections: open client connections at most; None: :func:`default_max_connections`.
    """

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    keep_alive_s: int = DEFAULT_KEEP_ALIVE_S
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    max_connections: int | None = None

    def uvicorn_options(self) -> dict[str, Any]:
        """Keyword arguments for ``uvicorn.run`` that apply these limits.

        Raises:
            ValueError: a limit is not positive.
        """
        if self.keep_alive_s < 1:
            raise ValueError("The keep-alive timeout must be at least 1 second.")
        connections = self.max_connections or default_max_connections()
        budget = connection_budget()
        if self.max_connections and budget is not None and self.max_connections > budget:
            raise ValueError(
                f"--max-connections {self.max_connections} is more than the file-descriptor "
                f"limit leaves room for ({max(budget, 0)}); raise ulimit -n or name fewer."
            )
        return {
            "http": guarded_protocol(self.header_timeout_s, connections),
            "timeout_keep_alive": self.keep_alive_s,
            "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
            "backlog": BACKLOG,
        }

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` with the request time limit."""
        return RequestTimeLimit(app, self.request_timeout_s)


class RequestTimeLimit:
    """ASGI middleware: a request running past ``timeout_s`` is answered 503 (``ErrorModel``).

    Spec: every route lists ``503 ServiceUnavailableResponse``; a commit answered 503 leaves
    its state unknown to the client, which reloads before retrying.
    """

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ValueError("The request timeout must be positive.")
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request; past the limit, answer 503 and leave the handler to finish."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        abandoned = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if abandoned:  # the handler finished after its 503 was sent: drop its answer
                return
            started = True
            await send(message)

        # Why a task and asyncio.wait, not wait_for: cancelling a request whose handler runs
        # in a worker thread waits for that thread (anyio does not abandon it), so wait_for
        # would answer only when the slow handler is done.
        task = asyncio.ensure_future(self.app(scope, receive, guarded_send))
        done, _ = await asyncio.wait({task}, timeout=self.timeout_s)
        if done:
            task.result()
            return
        abandoned = True
        task.cancel()
        task.add_done_callback(_consume)
        if started:  # the response head is out: nothing to answer with but closing
            raise TimeoutError("The response was cut at the request time limit.")
        response = error_response(
            503,
            "ServiceUnavailableException",
            f"The request took longer than {self.timeout_s:g} s and was stopped; if it was a "
            "commit, load the table to see whether it was applied.",
        )
        await response(scope, receive, send)


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned request's outcome (asyncio logs an unretrieved one)."""
    if not task.cancelled():
        task.exception()


__all__ = [
    "DEFAULT_HEADER_TIMEOUT_S",
    "HttpLimits",
    "DEFAULT_KEEP_ALIVE_S",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "MAX_HEADER_BYTES",
    "RequestTimeLimit",
    "default_max_connections",
    "guarded_protocol",
]
