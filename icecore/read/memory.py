"""The Arrow memory pool rows are read into: the system allocator unless the user chose one.

Issue 32 (Targets: peak memory under twice the result's Arrow size; a full scan as fast as
Polars). pyarrow's wheels default to mimalloc. Measured on the 2-core machine (10M rows in
399 Parquet files, 3 columns, a 264 MiB result; bench/read_bench.results.md), the first full
scan of a process took 1.03 s with mimalloc, 1.08 s of it system time (few page faults: the
kernel backing mimalloc's fresh arenas with huge pages, compacting memory to find them),
against 0.47 s with the system allocator (0.23 s system time) and 0.53 s with jemalloc; the
process's peak RSS 687 MiB against 512 MiB (mimalloc keeps what each reading thread's
temporaries used). Warm scans (the memory already mapped) take the same time with each.

So the first read of a process makes the system allocator Arrow's default pool
(:func:`pyarrow.set_memory_pool`): process-wide, as Arrow has no per-call pool for its
Parquet reader. A user who chose a pool with Arrow's own ``ARROW_DEFAULT_MEMORY_POOL``
(``mimalloc``, ``jemalloc`` or ``system``) keeps it: the choice is theirs, and is made before
pyarrow loads. Buffers allocated before the switch are freed to the pool that made them.
"""

from __future__ import annotations

import os
import threading

import pyarrow as pa

POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"
"""Arrow's own setting; when set (to anything), Icecore leaves Arrow's pool alone."""

_lock = threading.Lock()
_chosen = False


def use_read_pool() -> None:
    """Make the system allocator Arrow's default pool, once, unless the user chose a pool."""
    global _chosen
    with _lock:  # once a read: the lock costs nothing beside it
        if _chosen:
            return
        _chosen = True
        if os.environ.get(POOL_ENV, "").strip():
            return
        if pa.default_memory_pool().backend_name != "system":
            pa.set_memory_pool(pa.system_memory_pool())
