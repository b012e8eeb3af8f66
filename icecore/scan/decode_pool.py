"""Decode many manifests in worker processes, handing results over through the disk cache.

A cold plan of a million files is mostly manifest decoding (docs/ARCHITECTURE.md "Performance"), and
most of that holds Python's GIL, so threads barely help on two cores. Worker processes do: each
decodes a batch of manifests into the planning layout and writes it to the disk cache of
:mod:`icecore.scan.manifest_cache`, where the planner then memory-maps it. Nothing but the
cache file crosses the process boundary, and a worker that fails leaves the manifest to the
planner, which decodes it itself and reports any error as usual: the pool can only save
time, never change an answer.

``ICECORE_PLAN_PROCESSES`` sets the number of workers (``0`` turns the pool off); the
default is the CPU count (at most 4) on machines with more than one CPU. The workers are
``python -m icecore.scan.decode_worker`` processes started with the first big plan and reused
(not ``multiprocessing``: its ``spawn`` re-runs the caller's main module, and ``fork``
after polars' and Arrow's threads have started can deadlock). Each reads length-prefixed
pickled batches on stdin and answers with a description of each file it wrote, which the
planner adopts without opening the file.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pickle
import queue
import struct
import subprocess
import sys
import tempfile
import threading
import warnings
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from icecore.io import FileIO
from icecore.manifest import ManifestFile
from icecore.partitioning import PartitionSpec, partition_spec_to_json
from icecore.scan.manifest_cache import Handover, ManifestCache, ManifestKey
from icecore.schema import Schema, schema_to_json
from icecore.values import whole_number

T = TypeVar("T")
R = TypeVar("R")

MIN_MANIFESTS = 400
"""Fewer cache misses than this are decoded in the planning process.

Starting two workers costs 1-3 s on a busy 2-core machine (each imports Arrow, polars and
icecore); measured at 1,000,000 files, 201 manifests decoded in 3.7 s in-process against
6.5 s with a fresh pool, while 2,000 manifests took 10 s with it against ~15 s without.
"""

BATCH = 32
"""Manifests per worker task: decoded as one batch (amortizes every per-call overhead)."""


@dataclass(frozen=True, slots=True)
class DecodeJob:
    """One manifest to decode into the cache."""

    key: ManifestKey
    manifest: ManifestFile
    spec_id: int


def env_count(name: str, default: int) -> int:
    """A count from the environment variable ``name`` (``default`` unless it is digits)."""
    raw = os.environ.get(name, "").strip()
    found = whole_number(raw, negative=False)
    return found if found is not None else default


def pool_size() -> int:
    """Workers to use (0: decode in the planning process)."""
    cpus = os.cpu_count() or 1
    return env_count("ICECORE_PLAN_PROCESSES", 0 if cpus < 2 else min(cpus, 4))


_LENGTH = struct.Struct("<Q")


def send(stream: IO[bytes], value: Any) -> None:
    """Write one length-prefixed pickle (the pool's wire format)."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """Read one length-prefixed pickle; EOFError when the other side has gone."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("the decode worker closed its pipe")
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the decode worker closed its pipe")
    return pickle.loads(data)  # noqa: S301 - our own child process, over its own pipe


def serve(handle: Callable[..., Any], after_each: Callable[[], None] = lambda: None) -> None:
    """A worker process's loop: each message on stdin answered by ``handle(*message)``.

    Messages are :func:`send`'s length-prefixed pickles, read until stdin closes (the pool
    closed it, or the parent died); ``after_each`` runs once each answer is sent.
    """
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            message = receive(stdin)
        except EOFError:
            return
        send(stdout, handle(*message))
        after_each()


def worker_path() -> list[str]:
    """The import path of a worker: this process's icecore first, then this process's path.

    The folder holding the ``icecore`` package this planner runs comes first, so a worker
    imports the same icecore wherever it came from: an installed wheel, a checkout on
    ``PYTHONPATH``, or a checkout that is only the current folder (the empty entry of
    ``python -c`` or a notebook, which ``-P`` would otherwise drop: every worker then died
    with "No module named 'icecore'" and planning fell back to one thread, issue 32). The
    empty entry means the current folder, so it is kept as that folder's absolute path.
    """
    # This file is <home>/icecore/scan/decode_pool.py: <home> holds the planner's icecore.
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found: list[str] = []
    for entry in [home, *sys.path]:
        folder = os.path.abspath(entry or os.getcwd())
        if folder not in found:
            found.append(folder)
    return found


_MESSAGE_CHARS = 300
"""A failed worker's message is cut to this many characters (it is shown as one warning)."""

_warned = False


def _warn_worker_failed(worker: _Worker, error: BaseException) -> None:
    """Say once per process that decode workers failed, with the worker's own last words.

    Planning goes on in the planning process (the answer is the same, only slower): a
    warning, not an error, but never silence, since a 2.5x slower plan with no reason given
    is what made the empty-path bug hard to see.
    """
    global _warned
    if _warned:
        return
    _warned = True
    said = worker.last_words() or f"{type(error).__name__}: {error}"
    warnings.warn(
        f"Icecore's manifest decode worker (python -m icecore.scan.decode_worker, "
        f"{sys.executable}) failed: {said}. Planning continues in this process, slower; set "
        "ICECORE_PLAN_PROCESSES=0 to stop starting workers.",
        RuntimeWarning,
        stacklevel=2,
    )


class _Worker:
    """One ``python -m icecore.scan.decode_worker`` child process (or ``module``'s).

    ``module``: another worker started and spoken to the same way (:mod:`icecore.catalog_health`).
    """

    def __init__(self, module: str = "icecore.scan.decode_worker") -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(worker_path())
        env["ICECORE_PLAN_PROCESSES"] = "0"
        # Its stderr goes to a file (a pipe nobody reads could fill and stall it), read only
        # when the worker fails, for the warning.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        # -P: the current directory is not put first on the path, so the worker imports the
        # icecore this process runs (PYTHONPATH, :func:`worker_path`), not one that happens to
        # be in the directory.
        self.process = subprocess.Popen(  # noqa: S603 - our own module, same interpreter
            [sys.executable, "-P", "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )

    def last_words(self) -> str:
        """The last non-empty line the worker wrote to stderr, cut short ("" if none)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 8192))
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
            if lines:
                return lines[-1].strip()[:_MESSAGE_CHARS]
        return ""

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, batch: tuple[Any, ...]) -> list[tuple[int, Handover]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        send(self.process.stdin, batch)
        answer: list[tuple[int, Handover]] = receive(self.process.stdout)
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()  # reaped, not left a zombie
        with contextlib.suppress(OSError):
            self._stderr.close()


_workers: list[_Worker] = []
_pool_lock = threading.Lock()
_uses = itertools.count()
_last_use = -1
"""The number of the pool's latest use; an idle timer retires the workers only if no use
came after the one that started it."""

IDLE_ENV = "ICECORE_PLAN_WORKERS_IDLE_S"
IDLE_S = 120
"""Seconds an unused pool lives: each worker holds ~100 MiB (Arrow, polars, icecore), which a
long-running server (the app) should give back when no big plan has needed them for a while;
starting them again costs 1-3 s, paid only by the next cold plan of many manifests."""


@atexit.register
def _close_workers() -> None:
    for worker in _workers:
        worker.close()
    _workers.clear()


def _retire_when_idle(use: int) -> None:
    """Close the workers if the pool has not been used since use number ``use``."""
    if not _pool_lock.acquire(blocking=False):
        return  # in use now: that use schedules its own timer
    try:
        if use == _last_use:
            _close_workers()
    finally:
        _pool_lock.release()


def _schedule_retirement() -> None:
    """After a use (the pool lock held), retire the workers once they sat idle long enough."""
    timer = threading.Timer(env_count(IDLE_ENV, IDLE_S), _retire_when_idle, (_last_use,))
    timer.daemon = True
    timer.start()


def worker_pids() -> list[int]:
    """Process ids of the running decode workers (benchmarks read their peak memory)."""
    return [w.process.pid for w in _workers if w.alive]


def _pool(size: int) -> list[_Worker]:
    """The live workers, started or restarted up to ``size`` (call with the lock held)."""
    _workers[:] = [w for w in _workers if w.alive]
    while len(_workers) < size:
        _workers.append(_Worker())
    return list(_workers[:size])


def read_ahead(
    fn: Callable[[T], R], items: Sequence[T], threads: int, depth: int = 0
) -> Generator[R, None, None]:
    """``fn`` of each item, in order, computed on ``threads`` threads ahead of the reader.

    For work that releases the GIL (reading files, polars decoding Avro), overlapped with
    what the reading thread does with each result. At most ``depth`` results (at least two
    per thread) wait unread, so memory stays bounded however far behind the reader falls.
    """
    if threads < 2 or len(items) < 2:
        return (fn(item) for item in items)
    return _read_ahead(fn, items, threads, max(depth, 2 * threads))


def _read_ahead(
    fn: Callable[[T], R], items: Sequence[T], threads: int, depth: int
) -> Generator[R, None, None]:
    with ThreadPoolExecutor(min(threads, len(items))) as pool:
        pending: deque[Future[R]] = deque()
        rest = iter(items)
        for item in itertools.islice(rest, depth):
            pending.append(pool.submit(fn, item))
        try:
            while pending:
                result = pending.popleft().result()
                following = next(rest, _END)
                if following is not _END:
                    pending.append(pool.submit(fn, following))  # type: ignore[arg-type]
                yield result
        finally:
            for future in pending:
                future.cancel()


_END = object()


class Decoding:
    """Manifests being decoded in the worker processes, for a planner to use as they come.

    The planner judges each manifest once its batch is back (:meth:`wait_for`), while the
    workers decode the following ones: its own work overlaps theirs instead of following it.
    """

    def __init__(
        self, cache: ManifestCache, batches: list[list[DecodeJob]], message: tuple[Any, ...]
    ):
        self._cache = cache
        self._work: queue.SimpleQueue[tuple[int, list[DecodeJob]]] = queue.SimpleQueue()
        self._batch_of: dict[ManifestKey, int] = {}
        for i, batch in enumerate(batches):
            self._work.put((i, batch))
            for job in batch:
                self._batch_of[job.key] = i
        self._message = message
        self._finished: set[int] = set()
        self._done = threading.Condition()
        self._running = 0
        self._stopped = False
        self.decoded = 0
        self._threads: list[threading.Thread] = []

    def start(self, workers: list[_Worker]) -> None:
        """Feed the batches to ``workers``, one thread each."""
        self._running = len(workers)
        self._threads = [threading.Thread(target=self._feed, args=(w,)) for w in workers]
        for thread in self._threads:
            thread.start()

    def _feed(self, worker: _Worker) -> None:
        try:
            while not self._stopped:
                try:
                    index, batch = self._work.get_nowait()
                except queue.Empty:
                    return
                try:
                    written = worker.run((*self._message, batch))
                except Exception as e:  # noqa: BLE001 - a broken worker: the planner decodes the rest
                    with contextlib.suppress(OSError, ValueError):
                        if worker.process.stdin is not None:
                            worker.process.stdin.close()  # so it ends and its words are whole
                    _warn_worker_failed(worker, e)
                    worker.close()
                    with self._done:
                        self._finished.add(index)  # its manifests: decoded by the planner
                        self._done.notify_all()
                    return
                for at, handover in written:
                    self._cache.adopt(batch[at].key, handover)
                with self._done:
                    self._finished.add(index)
                    self.decoded += len(written)
                    self._done.notify_all()
        finally:
            with self._done:
                self._running -= 1
                self._done.notify_all()

    def wait_for(self, key: ManifestKey) -> None:
        """Until the batch holding ``key`` is back (at once if it is in none, or no worker runs).

        A batch whose worker failed counts as back: its manifests are not in the cache, and
        the planner decodes them itself.
        """
        index = self._batch_of.get(key)
        if index is None:
            return
        with self._done:
            while index not in self._finished and self._running > 0:
                self._done.wait()

    def join(self, *, cancel: bool = False) -> None:
        """Wait for the feeding threads (``cancel``: after the batches now being decoded)."""
        if cancel:
            self._stopped = True
        for thread in self._threads:
            thread.join()


def start_decoding(
    cache: ManifestCache,
    io: FileIO,
    schema: Schema,
    specs: Mapping[int, PartitionSpec],
    format_version: int,
    jobs: Sequence[DecodeJob],
) -> Decoding | None:
    """Start decoding the jobs the cache lacks in worker processes; None when it would not.

    Nothing is started when the cache has no directory, the pool is off, or there are fewer
    than :data:`MIN_MANIFESTS` misses. The caller must :meth:`Decoding.join` what it gets
    (the pool is held until then).
    """
    workers = pool_size()
    if cache.directory is None or workers < 1:
        return None
    missing = [job for job in jobs if not cache.contains(job.key)]
    if len(missing) < MIN_MANIFESTS:
        return None
    message = (
        str(cache.directory),
        dict(io.properties),
        schema_to_json(schema),
        [partition_spec_to_json(spec) for spec in specs.values()],
        format_version,
    )
    batches = [missing[i : i + BATCH] for i in range(0, len(missing), BATCH)]
    decoding = _HeldDecoding(cache, batches, message)
    global _last_use
    _pool_lock.acquire()
    try:
        _last_use = next(_uses)
        decoding.start(_pool(workers))
    except BaseException:
        _pool_lock.release()
        raise
    return decoding


class _HeldDecoding(Decoding):
    """A :class:`Decoding` that releases the pool when joined."""

    _held = True

    def join(self, *, cancel: bool = False) -> None:
        try:
            super().join(cancel=cancel)
        finally:
            if self._held:
                self._held = False
                _schedule_retirement()
                _pool_lock.release()


__all__ = [
    "DecodeJob",
    "Decoding",
    "env_count",
    "pool_size",
    "read_ahead",
    "receive",
    "send",
    "serve",
    "start_decoding",
    "worker_path",
    "worker_pids",
]
