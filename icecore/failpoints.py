"""Named fault-injection points on the commit path, off unless ``ICECORE_FAILPOINTS`` is set.

A commit has steps whose failure must leave the table readable and lose nothing: writing
the new metadata file, swapping the pointer, writing the version hint. Tests prove that by
making a real step fail in a real process, the way a crash or an IO error would: the
environment variable ``ICECORE_FAILPOINTS`` holds ``name=action`` pairs separated by commas,
and the step named ``name`` then ends the process at once (``crash``, as a power cut would:
no cleanup, no ``finally``), raises ``OSError(EIO)`` (``ioerror``), raises
:class:`~icecore.errors.CatalogUnavailable` (``unavailable``: a backing catalog that cannot be
reached, which a REST server answers with 503), or waits :data:`STALL_S` seconds (``stall``:
the test then kills the process from outside, with SIGKILL, in that state).
``name=action/N`` fires only the first ``N`` times the point is reached in this process (a
fault that a retry gets past). Nothing else changes behaviour; with the variable unset every
point is a no-op.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections import Counter

from icecore.errors import CatalogUnavailable

ENV = "ICECORE_FAILPOINTS"
"""The environment variable naming the armed points, e.g. ``fs-after-link=crash``."""

CRASH_EXIT_CODE = 86
"""The exit status of a process ended by a ``crash`` point (tests tell it from failures)."""

STALL_S = 300.0
"""How long a ``stall`` point waits (longer than any test takes to kill the process)."""

_hits: Counter[str] = Counter()
_hits_lock = threading.Lock()


def failpoint(name: str) -> None:
    """Fail here if the point ``name`` is armed in ``ICECORE_FAILPOINTS``.

    Raises:
        OSError: the point is armed with ``ioerror``.
        CatalogUnavailable: the point is armed with ``unavailable``.
    """
    armed = os.environ.get(ENV)
    if not armed:
        return
    for item in armed.split(","):
        point, _, action = item.strip().partition("=")
        if point != name:
            continue
        action, _, limit = action.partition("/")
        if limit.isdigit():
            with _hits_lock:
                _hits[name] += 1
                if _hits[name] > int(limit):
                    continue
        if action == "crash":
            os._exit(CRASH_EXIT_CODE)
        if action == "ioerror":
            raise OSError(errno.EIO, f"injected IO error at {name}")
        if action == "stall":
            time.sleep(STALL_S)
        if action == "unavailable":
            raise CatalogUnavailable(f"The backing catalog is unavailable (injected at {name}).")


__all__ = ["CRASH_EXIT_CODE", "ENV", "STALL_S", "failpoint"]
