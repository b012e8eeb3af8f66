"""The manifest cache: keyed by more than the path, bounded, least recently used out first."""

from __future__ import annotations

from typing import Any

from icecore.scan.manifest_cache import ManifestCache, ManifestKey


def key(path: str, uuid: str = "t1", schema_id: int = 0) -> ManifestKey:
    return ManifestKey(uuid, path, 100, 0, schema_id, 2)


def entries(n: int) -> list[Any]:
    return [object() for _ in range(n)]


def test_same_path_in_another_table_or_schema_is_not_shared() -> None:
    cache = ManifestCache(max_entries=100)
    first = cache.get_or_load(key("m.avro"), lambda: entries(3))
    assert cache.get_or_load(key("m.avro"), lambda: entries(5)) is first
    assert cache.get_or_load(key("m.avro", uuid="t2"), lambda: entries(5)) is not first
    assert cache.get_or_load(key("m.avro", schema_id=1), lambda: entries(5)) is not first
    assert (cache.hits, cache.misses) == (1, 3)


def test_bounded_by_entries_least_recently_used_out_first() -> None:
    cache = ManifestCache(max_entries=10)
    cache.get_or_load(key("a"), lambda: entries(4))
    cache.get_or_load(key("b"), lambda: entries(4))
    cache.get_or_load(key("a"), lambda: entries(4))  # a is now the most recent
    cache.get_or_load(key("c"), lambda: entries(4))  # 12 > 10: b goes
    loads: list[str] = []
    cache.get_or_load(key("a"), lambda: loads.append("a") or entries(4))
    cache.get_or_load(key("b"), lambda: loads.append("b") or entries(4))
    assert loads == ["b"]
    huge = cache.get_or_load(key("huge"), lambda: entries(11))
    assert len(huge) == 11 and key("huge") not in cache._items
