"""Results shared by every session of the app, each made once even when asked for at once.

Plans, their page views and snapshot diffs are immutable and keyed by immutable metadata
(a metadata location never changes), so one copy serves every session, like
``st.cache_resource``. They are not kept by ``st.cache_resource`` because making one reports
progress to the asking session's progress bar, and Streamlit records whatever a cached
function draws and replays it on every later hit. A second session asking for what is being
made waits for it rather than making it again (two users opening the same million-file
table share one plan).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from icecore.lru import LRU

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SharedCache(Generic[K, V]):
    """A bounded LRU whose missing entries are made once, by the first caller.

    Args:
        max_items: entries kept at most (least recently used go first).
    """

    def __init__(self, max_items: int) -> None:
        self._kept: LRU[K, V] = LRU(max_items)
        self._making: dict[K, threading.Lock] = {}
        self._lock = threading.Lock()

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The entry for ``key``; made by ``make`` (outside every other key's lock) if missing.

        If ``make`` raises, nothing is kept and the error goes to this caller; a caller that
        was waiting then makes the entry itself.
        """
        found = self._kept.get(key)
        if found is not None:
            return found
        with self._lock:
            lock = self._making.setdefault(key, threading.Lock())
        try:
            with lock:
                found = self._kept.get(key)
                if found is None:
                    found = self._kept.put(key, make())
                return found
        finally:
            with self._lock:
                if self._making.get(key) is lock:
                    del self._making[key]

    def __contains__(self, key: object) -> bool:
        return key in self._kept

    def clear(self) -> None:
        """Forget every entry."""
        self._kept.clear()


__all__ = ["SharedCache"]
