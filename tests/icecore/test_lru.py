"""The one LRU every Icecore cache uses: bounds by entries and by bytes, races, misses."""

from __future__ import annotations

import threading

from icecore.lru import LRU


def test_least_recently_used_goes_first() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert "b" not in cache
    assert (cache.get("a"), cache.get("c"), len(cache)) == (1, 3, 2)


def test_byte_bound_and_oversized_entries() -> None:
    cache: LRU[str, bytes] = LRU(100, max_bytes=10, size=len)
    cache.put("a", b"xxxx")
    cache.put("b", b"yyyy")
    assert cache.nbytes == 8
    cache.put("c", b"zzzz")  # 12 > 10: "a" goes
    assert "a" not in cache and cache.nbytes == 8
    assert cache.put("big", b"0" * 11) == b"0" * 11  # returned, never kept
    assert "big" not in cache and cache.nbytes == 8
    cache.clear()
    assert (len(cache), cache.nbytes) == (0, 0)


def test_zero_bytes_keeps_nothing() -> None:
    cache: LRU[str, bytes] = LRU(100, max_bytes=0, size=len)
    cache.put("a", b"x")
    assert cache.get("a") is None


def test_get_or_make_makes_once_and_first_put_wins() -> None:
    cache: LRU[str, list[int]] = LRU(10)
    made: list[int] = []

    def make() -> list[int]:
        made.append(1)
        return [len(made)]

    first = cache.get_or_make("k", make)
    assert cache.get_or_make("k", make) is first and made == [1]
    assert cache.put("k", [99]) is first  # an earlier entry wins a race


def test_concurrent_puts_keep_the_bounds() -> None:
    cache: LRU[int, bytes] = LRU(50, max_bytes=400, size=len)

    def work(base: int) -> None:
        for i in range(500):
            cache.put(base * 1000 + i, b"x" * 10)
            cache.get(base * 1000 + i // 2)

    threads = [threading.Thread(target=work, args=(b,)) for b in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) <= 40 and cache.nbytes == 10 * len(cache)
