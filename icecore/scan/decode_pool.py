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
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from icecore.io import FileIO
from icecore.manifest import ManifestFile
from icecore.partitioning import PartitionSpec, partition_spec_to_json
from icecore.scan.manifest_cache import Handover, ManifestCache, ManifestKey
from icecore.schema import Schema, schema_to_json

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
    return int(raw) if raw.isdigit() else default


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


class _Worker:
    """One ``python -m icecore.scan.decode_worker`` child process."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env["ICECORE_PLAN_PROCESSES"] = "0"
        # -P: the current directory is not put first on the path, so the worker imports the
        # icecore this process runs (PYTHONPATH), not one that happens to be in the directory.
        self.process = subprocess.Popen(  # noqa: S603 - our own module, same interpreter
            [sys.executable, "-P", "-m", "icecore.scan.decode_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

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


_workers: list[_Worker] = []
_pool_lock = threading.Lock()


@atexit.register
def _close_workers() -> None:
    for worker in _workers:
        worker.close()
    _workers.clear()


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
) -> Iterator[R]:
    """``fn`` of each item, in order, computed on ``threads`` threads ahead of the reader.

    For work that releases the GIL (reading files, polars decoding Avro), overlapped with
    what the reading thread does with each result. At most ``depth`` results (at least two
    per thread) wait unread, so memory stays bounded however far behind the reader falls.
    """
    if threads < 2 or len(items) < 2:
        return (fn(item) for item in items)
    return _read_ahead(fn, items, threads, max(depth, 2 * threads))


def _read_ahead(fn: Callable[[T], R], items: Sequence[T], threads: int, depth: int) -> Iterator[R]:
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


def decode_in_workers(
    cache: ManifestCache,
    io: FileIO,
    schema: Schema,
    specs: Mapping[int, PartitionSpec],
    format_version: int,
    jobs: Sequence[DecodeJob],
) -> int:
    """Decode the jobs the cache lacks in worker processes; how many were decoded there.

    Does nothing (returns 0) when the cache has no directory, the pool is off, or there
    are fewer than :data:`MIN_MANIFESTS` misses.
    """
    workers = pool_size()
    if cache.directory is None or workers < 1:
        return 0
    missing = [job for job in jobs if not cache.contains(job.key)]
    if len(missing) < MIN_MANIFESTS:
        return 0
    properties = dict(io.properties)
    schema_json = schema_to_json(schema)
    specs_json = [partition_spec_to_json(spec) for spec in specs.values()]
    work: queue.SimpleQueue[list[DecodeJob]] = queue.SimpleQueue()
    for i in range(0, len(missing), BATCH):
        work.put(missing[i : i + BATCH])
    done: list[int] = []  # list.append is atomic; ``total += n`` across threads is not

    def feed(worker: _Worker) -> None:
        while True:
            try:
                batch = work.get_nowait()
            except queue.Empty:
                return
            message = (
                str(cache.directory),
                properties,
                schema_json,
                specs_json,
                format_version,
                batch,
            )
            try:
                written = worker.run(message)
            except Exception:  # noqa: BLE001 - a broken worker: the planner decodes the rest
                worker.close()  # the planner decodes what is left
                return
            for index, handover in written:
                cache.adopt(batch[index].key, handover)
            done.append(len(written))

    with _pool_lock:
        feeders = [threading.Thread(target=feed, args=(w,)) for w in _pool(workers)]
        for thread in feeders:
            thread.start()
        for thread in feeders:
            thread.join()
    return sum(done)


__all__ = [
    "DecodeJob",
    "decode_in_workers",
    "env_count",
    "pool_size",
    "read_ahead",
    "receive",
    "send",
    "worker_pids",
]
