"""LazySequence behaves like the list of its items and makes only what is read."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from icecore.scan.lazy import LazySequence


def _segments(sizes: list[int], made: list[tuple[int, int, int]]) -> list[tuple[int, object]]:
    out = []
    base = 0
    for n in sizes:

        def produce(lo: int, hi: int, base: int = base) -> Sequence[int]:
            made.append((base, lo, hi))
            return list(range(base + lo, base + hi))

        out.append((n, produce))
        base += n
    return out


@pytest.mark.parametrize("sizes", [[], [0], [3], [2, 0, 5, 1], [1000, 7, 2500]])
def test_it_is_the_list_of_its_items(sizes: list[int]) -> None:
    made: list[tuple[int, int, int]] = []
    lazy = LazySequence(_segments(sizes, made), batch=100)  # type: ignore[arg-type]
    expected = list(range(sum(sizes)))
    assert len(lazy) == len(expected)
    assert list(lazy) == expected
    for i in (0, 1, len(expected) // 2, len(expected) - 1, -1):
        if expected:
            assert lazy[i] == expected[i]
    for s in (slice(None), slice(1, 5), slice(-3, None), slice(0, 50, 7), slice(900, 1100)):
        assert lazy[s] == expected[s]
    with pytest.raises(IndexError):
        lazy[len(expected)]


def test_reading_a_slice_makes_only_that_slice() -> None:
    made: list[tuple[int, int, int]] = []
    lazy = LazySequence(_segments([1000, 1000], made))  # type: ignore[arg-type]
    assert lazy[995:1003] == list(range(995, 1003))
    assert made == [(0, 995, 1000), (1000, 0, 3)]
