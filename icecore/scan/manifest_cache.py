"""A bounded, thread-safe cache of decoded manifests, for planning the same table again.

Manifests are immutable once written (spec "Manifests"), so their decoded entries can be
reused. The key is never the path alone (PyIceberg's process-wide cache keyed by path leaked
and could serve another table's manifest): it is the table's uuid, the manifest's path and
length, and the partition spec, schema and format version it was decoded with. The cache
holds at most ``max_entries`` manifest entries in total and evicts least recently used
manifests first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icecore.manifest import ManifestEntry

DEFAULT_MAX_ENTRIES = 400_000


@dataclass(frozen=True, slots=True)
class ManifestKey:
    """What makes two decoded manifests interchangeable."""

    table_uuid: str
    path: str
    length: int
    spec_id: int
    schema_id: int
    format_version: int


class ManifestCache:
    """LRU of decoded manifest entries, bounded by the total number of entries held."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[ManifestKey, tuple[ManifestEntry, ...]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_load(
        self, key: ManifestKey, load: Callable[[], Sequence[ManifestEntry]]
    ) -> tuple[ManifestEntry, ...]:
        """The cached entries for ``key``, loading (outside the lock) when absent."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        entries = tuple(load())
        if len(entries) > self.max_entries:
            return entries
        with self._lock:
            if key not in self._items:
                self._items[key] = entries
                self._size += len(entries)
                while self._size > self.max_entries and self._items:
                    _, evicted = self._items.popitem(last=False)
                    self._size -= len(evicted)
        return entries

    def clear(self) -> None:
        """Forget everything (tests and memory pressure)."""
        with self._lock:
            self._items.clear()
            self._size = 0

    def __len__(self) -> int:
        return len(self._items)


MANIFESTS = ManifestCache()
"""The process's cache; safe to share because keys carry the table uuid and decode inputs."""
