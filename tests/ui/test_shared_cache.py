"""ui.shared_cache: what several sessions ask for at once is made once and shared."""

from __future__ import annotations

import threading
import time

import pytest

from ui.shared_cache import SharedCache


def test_sessions_asking_at_once_share_one_making() -> None:
    cache: SharedCache[str, object] = SharedCache(4)
    made: list[object] = []
    start = threading.Barrier(4)

    def make() -> object:
        time.sleep(0.2)  # long enough for every other caller to arrive and wait
        made.append(object())
        return made[-1]

    got: list[object] = []

    def ask() -> None:
        start.wait()
        got.append(cache.get_or_make("plan", make))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1
    assert len(got) == 4 and all(g is made[0] for g in got)


def test_a_failed_making_keeps_nothing_and_the_next_caller_makes_it() -> None:
    cache: SharedCache[str, int] = SharedCache(4)

    def fail() -> int:
        raise ValueError("bad filter")

    with pytest.raises(ValueError, match="bad filter"):
        cache.get_or_make("k", fail)
    assert "k" not in cache
    assert cache.get_or_make("k", lambda: 7) == 7
    assert cache.get_or_make("k", fail) == 7


def test_least_recently_used_entries_go_first() -> None:
    cache: SharedCache[int, int] = SharedCache(2)
    for k in range(3):
        cache.get_or_make(k, lambda k=k: k)
    assert 0 not in cache and 1 in cache and 2 in cache
