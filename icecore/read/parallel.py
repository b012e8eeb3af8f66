"""Tasks read on several threads at once, their batches given back in task order.

Issue 32: files were read one after another on one thread, while Arrow's Parquet decoding,
its compute kernels and numpy release the GIL, so a second core sat idle. Here each of a
window of tasks is read (decoded, deletes applied, residual kept) on a pool thread into a
queue of its own, bounded in bytes; the caller takes the batches of the first task, then the
next, so the output is the serial reader's, batch for batch. Memory is bounded by the batch
budget (:data:`BUDGET_BYTES`, shared by the window), not by a file or the table, and a
``limit`` reached or a reader closed early stops the threads after the batch each is on:
the files past the window are never opened.

An error in one file is raised where the serial reader would raise it (at that task's turn,
the same one sentence), the other threads are stopped and joined, and no thread is left
running. A thread waiting for room in its queue also gives up when the interpreter begins
to shut down (the main thread has ended), so a reader abandoned unclosed cannot hold the
process open.

``ICECORE_READ_THREADS`` sets the threads (1: the serial reader); the default is the CPU
count, at most 8.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from icecore.scan.task import FileScanTask
from icecore.values import whole_number

THREADS_ENV = "ICECORE_READ_THREADS"
MAX_THREADS = 8
BUDGET_BYTES = 256 * 2**20
"""Decoded bytes waiting in the queues of all tasks being read ahead, at most (about)."""

_WAIT_S = 0.1
"""How often a thread waiting for room checks whether it should stop."""


def read_threads() -> int:
    """Threads to read with (1: serially), from :data:`THREADS_ENV` or the CPU count."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    found = whole_number(raw, negative=False)
    if found is not None:
        return max(found, 1)
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))


class _Done:
    """The end of a task's batches (or its error)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


class _TaskQueue:
    """One task's batches, produced on a pool thread, bounded by bytes.

    The queues of one read share ``changed``, so an unordered reader can wait for a batch
    from any of them.
    """

    def __init__(self, budget: int, stop: threading.Event, changed: threading.Condition) -> None:
        self._items: deque[pa.RecordBatch | _Done] = deque()
        self._bytes = 0
        self._budget = budget
        self._stop = stop
        self._changed = changed

    def _stopping(self) -> bool:
        return self._stop.is_set() or not threading.main_thread().is_alive()

    def put(self, batch: pa.RecordBatch) -> bool:
        """Queue a batch once there is room; False when the read is being stopped."""
        size = batch.nbytes
        with self._changed:
            while self._items and self._bytes + size > self._budget:
                if self._stopping():
                    return False
                self._changed.wait(_WAIT_S)
            self._items.append(batch)
            self._bytes += size
            self._changed.notify_all()
        return not self._stop.is_set()

    def finish(self, error: BaseException | None = None) -> None:
        with self._changed:
            self._items.append(_Done(error))
            self._changed.notify_all()

    def take(self) -> pa.RecordBatch | _Done:
        """The next item, waiting for one."""
        with self._changed:
            while not self._items:
                self._changed.wait(_WAIT_S)
            return self.pop_ready()

    def ready(self) -> bool:
        """Whether an item waits (the caller holds the shared lock)."""
        return bool(self._items)

    def pop_ready(self) -> pa.RecordBatch | _Done:
        """The next item (the caller holds the lock and has seen one)."""
        item = self._items.popleft()
        if isinstance(item, pa.RecordBatch):
            self._bytes -= item.nbytes
        self._changed.notify_all()
        return item


def _take_any(
    pending: deque[_TaskQueue], changed: threading.Condition
) -> tuple[_TaskQueue, pa.RecordBatch | _Done]:
    """The first item ready in any queue (earliest task first), waiting for one."""
    with changed:
        while True:
            for queue in pending:
                if queue.ready():
                    return queue, queue.pop_ready()
            changed.wait(_WAIT_S)


def _produce(
    read_one: Callable[[FileScanTask], Iterator[pa.RecordBatch]],
    task: FileScanTask,
    queue: _TaskQueue,
    stop: threading.Event,
) -> None:
    """Read one task into its queue (run on a pool thread)."""
    try:
        if stop.is_set():
            return
        with contextlib.closing(read_one(task)) as batches:  # type: ignore[type-var]
            for batch in batches:
                if not queue.put(batch):
                    return
    except BaseException as e:  # noqa: BLE001 - handed to the caller, raised at this task's turn
        queue.finish(e)
        return
    queue.finish()


def read_in_parallel(
    read_one: Callable[[FileScanTask], Iterator[pa.RecordBatch]],
    tasks: Iterator[FileScanTask],
    threads: int,
    budget: int | None = None,
    *,
    ordered: bool = True,
) -> Iterator[pa.RecordBatch]:
    """``read_one`` of every task on ``threads`` threads, batches in task order.

    ``threads + 1`` tasks are read at a time (one waiting while each thread reads), each
    with an equal share of ``budget`` (default :data:`BUDGET_BYTES`). Close the generator
    to stop early (``read_tasks`` does when a limit is reached).

    ``ordered=False`` gives each batch as soon as any task has one (a task's own batches
    still in file order), so a slow file does not hold back the others: the same rows, in
    another order, for a caller that does not need the order (a count, an aggregate). A
    finished task's place in the window is taken by the next task at once.
    """
    window = threads + 1
    share = max((BUDGET_BYTES if budget is None else budget) // window, 1)
    stop = threading.Event()
    changed = threading.Condition()
    pending: deque[_TaskQueue] = deque()
    pool = ThreadPoolExecutor(threads, thread_name_prefix="icecore-read")

    def fill() -> None:
        while len(pending) < window:
            task = next(tasks, None)
            if task is None:
                return
            queue = _TaskQueue(share, stop, changed)
            pool.submit(_produce, read_one, task, queue, stop)
            pending.append(queue)

    try:
        fill()
        while pending:
            if ordered:
                queue, item = pending[0], pending[0].take()
            else:
                queue, item = _take_any(pending, changed)
            if isinstance(item, _Done):
                if item.error is not None:
                    raise item.error
                pending.remove(queue)
                fill()
                continue
            yield item
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
