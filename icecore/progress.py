"""Progress of long reads, told to whoever asked for it (the app's progress bar).

A cold plan of a million files reads thousands of manifests; a page that waits for it must
say what is being read and how far it is ("Reading manifests: 812 of 2,000") rather than
show a silent spinner. The planner and the metadata readers sit several calls below the
page, so the listener is not passed down every signature: :func:`reporting` installs it for
the calling context (a :class:`contextvars.ContextVar`, so two sessions planning at once in
one server each see only their own) and :func:`report` tells it, on the thread that
installed it. Work done on other threads is counted there and reported from the calling
thread (the planner relays its decode workers' progress), because a listener such as
a Streamlit element may only be touched from its own script thread.

Reporting is best effort and never changes an answer: a listener that raises is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Listener = Callable[[str, int, int], None]
"""Called as ``listener(what, done, total)``: e.g. ``("Reading manifests", 812, 2000)``."""

_LISTENER: ContextVar[Listener | None] = ContextVar("icecore_progress", default=None)


@contextmanager
def reporting(listener: Listener) -> Iterator[None]:
    """Tell ``listener`` the progress of every long read made inside the block."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def listening() -> bool:
    """Whether a listener is installed (so callers may skip counting when nobody asks)."""
    return _LISTENER.get() is not None


def report(what: str, done: int, total: int) -> None:
    """Tell the installed listener, if any, that ``done`` of ``total`` are finished."""
    listener = _LISTENER.get()
    if listener is None:
        return
    try:
        listener(what, done, total)
    except Exception:  # noqa: BLE001 - progress must never break the read it describes
        _LISTENER.set(None)


__all__ = ["Listener", "listening", "report", "reporting"]
