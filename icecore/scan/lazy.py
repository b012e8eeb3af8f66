"""A read-only sequence whose items are made on demand, segment by segment.

A plan of a million files must not hold a million task or pruned-item objects
(docs/ARCHITECTURE.md "Performance": peak memory), yet callers expect ``len()``, indexing, slicing
and iteration. :class:`LazySequence` gives them that over segments that each know their length
and can produce any slice of their items; nothing is kept after it is returned.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")

Producer = Callable[[int, int], Sequence[T]]
"""Items ``start:stop`` of one segment."""


class LazySequence(Sequence[T]):
    """Items of consecutive segments, produced when asked for.

    Args:
        segments: (length, producer) pairs in order.
        batch: how many items iteration asks a segment for at a time.
    """

    def __init__(self, segments: Sequence[tuple[int, Producer[T]]], batch: int = 1024) -> None:
        self._segments = [(n, p) for n, p in segments if n > 0]
        self._starts: list[int] = []
        total = 0
        for n, _ in self._segments:
            self._starts.append(total)
            total += n
        self._len = total
        self._batch = batch

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._range(start, stop)
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("index out of range")
        return self._range(index, index + 1)[0]

    def _range(self, start: int, stop: int) -> list[T]:
        out: list[T] = []
        if start >= stop:
            return out
        i = bisect.bisect_right(self._starts, start) - 1
        while start < stop and i < len(self._segments):
            n, produce = self._segments[i]
            offset = self._starts[i]
            lo, hi = start - offset, min(stop - offset, n)
            out.extend(produce(lo, hi))
            start = offset + hi
            i += 1
        return out

    def __iter__(self) -> Iterator[T]:
        for n, produce in self._segments:
            for lo in range(0, n, self._batch):
                yield from produce(lo, min(lo + self._batch, n))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._len} items>"
