"""A small thread-safe least-recently-used map, bounded by entries and optionally by bytes.

Iceberg's files never change (spec "File System Operations": "Once written, data and
metadata files are immutable until they are deleted"), so what is derived from them can be
kept and served again for as long as memory allows. Every such cache in Icecore (manifest
lists, planning verdicts, compiled evaluators, delete files read for a run of tasks) is one
of these, so eviction, sizing and locking are written once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """Least recently used entries go first once ``max_items`` or ``max_bytes`` is exceeded.

    Args:
        max_items: entries kept at most.
        max_bytes: bytes kept at most, as measured by ``size`` (no byte bound without it).
        size: the bytes an entry holds; an entry larger than ``max_bytes`` is not kept.
    """

    def __init__(
        self,
        max_items: int,
        *,
        max_bytes: int | None = None,
        size: Callable[[V], int] | None = None,
    ) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._size = size
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The entry for ``key`` (now the most recently used), or None."""
        with self._lock:
            held = self._items.get(key)
            if held is None:
                return None
            self._items.move_to_end(key)
            return held[0]

    def put(self, key: K, value: V) -> V:
        """Keep ``value`` for ``key``; returns the entry kept (an earlier one wins a race)."""
        size = self._size(value) if self._size is not None else 0
        if self.max_bytes is not None and size > self.max_bytes:
            return value
        with self._lock:
            held = self._items.get(key)
            if held is not None:
                self._items.move_to_end(key)
                return held[0]
            self._items[key] = (value, size)
            self._bytes += size
            while self._items and (
                len(self._items) > self.max_items
                or (self.max_bytes is not None and self._bytes > self.max_bytes)
            ):
                _, (_, evicted) = self._items.popitem(last=False)
                self._bytes -= evicted
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The entry for ``key``, made by ``make`` (outside the lock) when missing."""
        found = self.get(key)
        if found is not None:
            return found
        return self.put(key, make())

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        """Bytes held, as measured by ``size``."""
        return self._bytes

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._items.clear()
            self._bytes = 0


__all__ = ["LRU"]
