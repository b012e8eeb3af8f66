"""A bounded, thread-safe cache of decoded manifests: in this process and on local disk.

Manifests are immutable once written (spec "Manifests"), so their decoded planning form
(:mod:`icecore.scan.planning_manifest`) can serve every later plan, in this process and in
the next one. The key is never the path alone (PyIceberg's process-wide cache keyed by path
leaked and could serve another table's manifest): it is the table's uuid, the manifest's path
and length, the values it inherits from its manifest list entry, the partition spec and the
partition type it was decoded with, the format version, and the layout version of the cache.

Decoded manifests are written as uncompressed Arrow IPC files and read back a few columns
at a time, so a plan holds only the columns its filter reads
(docs/ARCHITECTURE.md "Performance": peak memory at 1,000,000 files). The directory is
``ICECORE_CACHE_DIR`` (``off`` keeps everything in memory instead), else
``$XDG_CACHE_HOME/icecore/manifests`` or ``~/.cache/icecore/manifests``; it is bounded by
``ICECORE_CACHE_MAX_BYTES`` (default 4 GiB; least recently used files go first). A damaged or
unreadable cache file is deleted and the manifest decoded again: the cache can cost time, never
correctness.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import fields as fields_of
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from icecore.compute import pc
from icecore.errors import InvalidMetadata
from icecore.scan.planning_manifest import (
    CODE_COLUMN,
    FIRSTS_KEY,
    PlanningManifest,
    TableSource,
    planning_manifest_from_source,
)

CACHE_LAYOUT = "planning-5"
"""Bumped whenever the planning layout changes, so old cache files are never read."""

DEFAULT_MAX_DISK_BYTES = 4 << 30
DEFAULT_MAX_MEMORY_BYTES = 512 << 20
DEFAULT_MAX_HANDLES = 16_384
WRITE_BEHIND_BYTES = 128 << 20
"""Decoded columns waiting for the writer thread at most (past that, decoders write).

A plan of up to ~200,000 files decodes in the planning process (fewer manifests than
:data:`icecore.scan.decode_pool.MIN_MANIFESTS`): its ~70 MiB of columns per 100,000 files
wait for the writer instead of costing the cold plan a quarter of its time (issue 19).
Bigger plans are decoded by worker processes, which write their own files."""
ROWS_KEY = b"icecore.rows"
"""Schema metadata of a cache file: its row count (read without reading its batches)."""
INDEX_KEY = b"icecore.manifests"
"""Schema metadata of a batch file (manifests decoded together, written once): per cache
key digest, ``[first row, rows, partition firsts, metric columns lacking]``."""
QUIET_S = 0.1
"""How long no plan must have run before the writer thread writes."""


@dataclass(frozen=True, slots=True)
class ManifestKey:
    """What makes two decoded manifests interchangeable."""

    table_uuid: str
    path: str
    length: int
    spec_id: int
    format_version: int
    partition_type: str
    added_snapshot_id: int
    sequence_number: int
    first_row_id: int | None = None
    metrics: bool = True
    """Whether the metrics maps were decoded: a plan without a row filter reads none
    (:func:`~icecore.manifest_arrow.read_manifests_avro`), and a manifest decoded without
    them is a different thing to cache than one decoded with them."""

    def digest(self) -> str:
        """A file name for the key (sha256 of every field and the layout version).

        Computed once per key (a plan of 2,000 manifests asks for each name several times).
        """
        found = _DIGESTS.get(self)
        if found is None:
            fields = [getattr(self, f.name) for f in fields_of(self)]
            text = json.dumps([CACHE_LAYOUT, fields])
            found = hashlib.sha256(text.encode()).hexdigest()
            if len(_DIGESTS) >= _MAX_DIGESTS:
                _DIGESTS.clear()
            _DIGESTS[self] = found
        return found


_DIGESTS: dict[ManifestKey, str] = {}
_MAX_DIGESTS = 65_536


def default_directory() -> Path | None:
    """Where the disk cache lives (None: disabled by ``ICECORE_CACHE_DIR=off``)."""
    configured = os.environ.get("ICECORE_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("", "off", "none", "0"):
            return None
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "icecore" / "manifests"


def _max_disk_bytes() -> int:
    raw = os.environ.get("ICECORE_CACHE_MAX_BYTES")
    try:
        return int(raw) if raw else DEFAULT_MAX_DISK_BYTES
    except ValueError:
        return DEFAULT_MAX_DISK_BYTES


class ManifestCache:
    """Planning manifests by :class:`ManifestKey`: an LRU in memory, backed by a disk cache.

    With a directory, the in-process part holds file-backed manifests and the columns plans
    read from them (bounded by count); without one it holds the decoded tables themselves,
    bounded by ``max_memory_bytes``.
    """

    def __init__(
        self,
        directory: Path | None = None,
        *,
        max_disk_bytes: int = DEFAULT_MAX_DISK_BYTES,
        max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
        max_handles: int = DEFAULT_MAX_HANDLES,
    ) -> None:
        self.directory = directory
        self.max_disk_bytes = max_disk_bytes
        self.max_memory_bytes = max_memory_bytes
        self.max_handles = max_handles
        self._items: OrderedDict[ManifestKey, tuple[PlanningManifest, int]] = OrderedDict()
        self._paths: dict[ManifestKey, Path] = {}  # a key's file name is asked for often
        self._memory = 0
        self._written_since_sweep = 0
        self._lock = threading.Lock()
        self._queue: queue.Queue[list[tuple[ManifestKey, PlanningManifest]] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._closed = False
        self._unwritten = 0
        self._active = 0
        self._flushing = 0
        self._idle = threading.Event()
        self._idle.set()
        self._idle_since = 0.0
        self._batch_files = BatchFiles()
        self.hits = 0
        self.disk_hits = 0
        self.misses = 0

    @classmethod
    def from_environment(cls) -> ManifestCache:
        """The cache ``ICECORE_CACHE_DIR`` and ``ICECORE_CACHE_MAX_BYTES`` describe."""
        return cls(default_directory(), max_disk_bytes=_max_disk_bytes())

    def get_or_load(
        self, key: ManifestKey, load: Callable[[], PlanningManifest]
    ) -> PlanningManifest:
        """The manifest for ``key``: from memory, from disk, or decoded by ``load``."""
        found = self.lookup(key)
        return found if found is not None else self.add(key, load())

    def lookup(self, key: ManifestKey) -> PlanningManifest | None:
        """The manifest for ``key`` from memory or disk; None (a miss, counted) without it."""
        with self._lock:
            held = self._items.get(key)
            if held is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return held[0]
        found = self._read_disk(key)
        if found is not None:
            with self._lock:
                self.disk_hits += 1
            return self._remember(key, found, on_disk=True)
        with self._lock:
            self.misses += 1
        return None

    def add(self, key: ManifestKey, built: PlanningManifest) -> PlanningManifest:
        """Keep a manifest just decoded for ``key`` (its file written now or behind)."""
        return self.add_many([(key, built)])[0]

    def add_many(
        self, items: Sequence[tuple[ManifestKey, PlanningManifest]]
    ) -> list[PlanningManifest]:
        """Keep manifests just decoded; those built together get one cache file, their batch.

        The files are left to the writer thread when little waits for it already (a cold
        plan should not wait for its cache files), else written here.
        """
        kept = [self._remember(key, built, on_disk=False) for key, built in items]
        if self.directory is None or not items or self._write_behind(items):
            return kept
        # Written here: the plan holds the files, not the columns.
        for at, source in self._write_items(items):
            key, built = items[at]
            kept[at] = self._swap_to_file(key, built, source)
        return kept

    @contextlib.contextmanager
    def planning(self) -> Iterator[None]:
        """Mark a plan in progress: cache files left to the writer wait for it to end."""
        with self._lock:
            self._active += 1
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    self._idle_since = time.monotonic()
                    self._idle.set()
                    self._batch_files.clear()

    def contains(self, key: ManifestKey) -> bool:
        """Whether ``key`` is held in memory or on disk (without loading it)."""
        with self._lock:
            if key in self._items:
                return True
        path = self._file(key)
        return path is not None and path.exists()

    def store(self, key: ManifestKey, item: PlanningManifest) -> bool:
        """Write ``item`` to the disk cache now (a worker process's job); whether it was."""
        return self._write_file(key, item) is not None

    def store_for_handover(self, key: ManifestKey, item: PlanningManifest) -> Handover | None:
        """Write ``item``'s cache file now; what the planning process needs to use it.

        A decode worker sends this back, so the planner serves the manifest from its file
        without opening it first (:meth:`adopt`).
        """
        written = self._write_file(key, item)
        return None if written is None else written.handover()

    def store_batch_for_handover(
        self, items: Sequence[tuple[ManifestKey, PlanningManifest]]
    ) -> list[Handover | None]:
        """:meth:`store_for_handover` of each item; those built together share one file.

        Writing an Arrow file has a fixed cost (its schema of ~70 fields, twice, and the
        file's creation) that was a quarter of a decode worker's time per manifest of a
        few hundred entries. Manifests built together (:attr:`TableSource.batch`) are
        written as one file, their batch, which each key's file name then links to (a hard
        link: sweeping and deleting stay per key); the file's :data:`INDEX_KEY` says which
        rows and columns are each key's. Where links cannot be made, each manifest gets a
        file of its own.
        """
        out: list[Handover | None] = [None] * len(items)
        groups: dict[int, list[int]] = {}
        for i, (_, item) in enumerate(items):
            source = item.source
            batch = source.batch if isinstance(source, TableSource) else None
            if batch is None:
                out[i] = self.store_for_handover(*items[i])
            else:
                groups.setdefault(id(batch), []).append(i)
        for members in groups.values():
            chosen = [items[i] for i in members]
            written = self._write_batch(chosen) if len(members) > 1 else None
            if written is None:
                written = [self.store_for_handover(*item) for item in chosen]
            for i, handover in zip(members, written, strict=True):
                out[i] = handover
        return out

    def adopt(self, key: ManifestKey, handover: Handover) -> None:
        """Serve ``key`` from the cache file another process wrote and described."""
        path = self._file(key)
        if path is None:
            return
        try:
            source = FileSource.handed_over(path, handover)
            if self._active and handover.file_columns:  # see BatchFiles.columns
                st = os.stat(path)
                source.share_reads(self._batch_files, (st.st_dev, st.st_ino, st.st_size))
            found = planning_manifest_from_source(source, key.path, key.spec_id)
        except (pa.ArrowException, ValueError, KeyError, InvalidMetadata):
            return  # read from the file, or decoded again, when the plan asks for it
        self._remember(key, found, on_disk=True)

    def flush(self) -> None:
        """Wait until every manifest decoded so far is in its cache file."""
        if self._writer is not None:
            with self._lock:
                self._flushing += 1
            try:
                self._queue.join()
            finally:
                with self._lock:
                    self._flushing -= 1

    def close(self) -> None:
        """Write what waits for the writer thread, then stop and join it (run at exit).

        The writer spends its time in Arrow's C++ code (writing IPC files) with the GIL
        released; a daemon thread still doing that when the interpreter finalizes is ended
        by ``pthread_exit`` on its way back into Python, which can abort the process from
        inside C++ frames. So at exit it is flushed and joined while the interpreter is
        whole (``atexit`` runs before finalization; ``threading`` only joins non-daemon
        threads). Afterwards the cache still works: decoders write their files themselves.
        """
        self.flush()
        with self._lock:
            self._closed = True
            writer = self._writer
        if writer is not None:
            self._queue.put(None)
            writer.join()
            with self._lock:
                self._writer = None

    def clear(self, *, disk: bool = False) -> None:
        """Forget what is held in memory (and, with ``disk``, delete the cache files)."""
        self.flush()
        with self._lock:
            self._items.clear()
            self._memory = 0
        if disk and self.directory is not None and self.directory.exists():
            for path in self.directory.glob("*/*.arrow"):
                with contextlib.suppress(OSError):
                    path.unlink()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes_in_memory(self) -> int:
        """Bytes of decoded columns held in memory (manifests not, or not yet, in files)."""
        return self._memory

    # ---------------------------------------------------------------------------------

    def _remember(
        self, key: ManifestKey, item: PlanningManifest, *, on_disk: bool
    ) -> PlanningManifest:
        size = 0 if on_disk else item.nbytes  # columns are read per plan
        if size > self.max_memory_bytes:
            return item
        with self._lock:
            held = self._items.get(key)
            if held is not None:
                return held[0]
            self._items[key] = (item, size)
            self._memory += size
            while self._items and (
                self._memory > self.max_memory_bytes or len(self._items) > self.max_handles
            ):
                _, (_, evicted_size) = self._items.popitem(last=False)
                self._memory -= evicted_size
        return item

    def _file(self, key: ManifestKey) -> Path | None:
        if self.directory is None:
            return None
        found = self._paths.get(key)
        if found is None:
            digest = key.digest()
            found = Path(os.path.join(self.directory, digest[:2], f"{digest}.arrow"))
            if len(self._paths) >= self.max_handles:
                self._paths.clear()
            self._paths[key] = found
        return found

    def _read_disk(self, key: ManifestKey) -> PlanningManifest | None:
        path = self._file(key)
        if path is None:
            return None
        try:
            opened = self._batch_files if self._active else None  # see BatchFiles
            source = FileSource(path, opened=opened)
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException, ValueError, KeyError):
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        try:
            found = planning_manifest_from_source(source, key.path, key.spec_id)
        except (OSError, pa.ArrowException, ValueError, KeyError):
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        shared = source.shared_reads
        if shared is None or shared[0].first_touch(shared[1]):
            with contextlib.suppress(OSError):
                os.utime(path)
        return found

    def _write_behind(self, items: Sequence[tuple[ManifestKey, PlanningManifest]]) -> bool:
        """Leave ``items``' cache files to the writer thread, if little is waiting already.

        Writing a cache file costs about a third of decoding the manifest, and a plan
        should not wait for it. The writer runs when no plan does (threads sharing the GIL
        slow each other down), and the process waits for it at exit. Columns waiting are
        held in memory, so at most :data:`WRITE_BEHIND_BYTES` of them wait; past that the
        decoder writes the files itself. Returns whether the writer took them.
        """
        size = sum(item.nbytes for _, item in items)
        with self._lock:
            if self._closed or self._unwritten + size > WRITE_BEHIND_BYTES:
                return False
            self._unwritten += size
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._drain, name="icecore-cache-writer", daemon=True
                )
                self._writer.start()
                atexit.register(self.close)
        self._queue.put(list(items))
        return True

    def _drain(self) -> None:
        while True:
            items = self._queue.get()
            if items is None:  # close(): everything before it is written
                self._queue.task_done()
                return
            self._wait_until_quiet()
            try:
                for at, source in self._write_items(items):
                    self._swap_to_file(*items[at], source)
            except Exception:  # noqa: BLE001, S110 - a cache can cost time, never an answer
                pass
            finally:
                with self._lock:
                    self._unwritten -= sum(item.nbytes for _, item in items)
                self._queue.task_done()

    def _write_items(
        self, items: Sequence[tuple[ManifestKey, PlanningManifest]]
    ) -> Iterator[tuple[int, FileSource]]:
        """Write the cache files of ``items`` (positions and sources of those written).

        Manifests built together are written as their batch's one file (see
        :meth:`store_batch_for_handover`), the others one file each.
        """
        for at, handover in enumerate(self.store_batch_for_handover(items)):
            path = self._file(items[at][0])
            if handover is not None and path is not None:
                yield at, FileSource.handed_over(path, handover)

    def _wait_until_quiet(self) -> None:
        """Until no plan has run for :data:`QUIET_S` (or a flush is waiting on the writer).

        A user planning again right away (the next page, the next filter) finds the process
        free; the files follow a moment later.
        """
        while not self._flushing:
            if not self._idle.wait(QUIET_S):
                continue
            remaining = QUIET_S - (time.monotonic() - self._idle_since)
            if remaining <= 0:
                return
            time.sleep(min(remaining, 0.02))

    def _swap_to_file(
        self, key: ManifestKey, item: PlanningManifest, source: FileSource
    ) -> PlanningManifest:
        """``item`` read from its file, served from there from now on (if memory holds it)."""
        on_disk = item.with_source(source)
        with self._lock:
            held = self._items.get(key)
            if held is not None and held[0] is item:
                self._items[key] = (on_disk, 0)
                self._memory -= held[1]
        return on_disk

    def _write_file(self, key: ManifestKey, item: PlanningManifest) -> FileSource | None:
        """Write the cache file atomically (a temporary file renamed over it)."""
        path = self._file(key)
        if path is None:
            return None
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            table = item.source.read(item.source.schema.names)
            metadata = {**(table.schema.metadata or {}), ROWS_KEY: str(table.num_rows).encode()}
            table = table.replace_schema_metadata(metadata)
            try:
                size = _write_ipc(tmp, table)
            except FileNotFoundError:  # the first file of its folder
                path.parent.mkdir(parents=True, exist_ok=True)
                size = _write_ipc(tmp, table)
            os.replace(tmp, path)
        except (OSError, pa.ArrowException):
            with contextlib.suppress(OSError):
                tmp.unlink()
            return None
        self._note_written(size)
        codes = table.column(CODE_COLUMN) if CODE_COLUMN in table.column_names else None
        return FileSource(path, (table.schema, table.num_rows, codes))

    def _write_batch(
        self, items: Sequence[tuple[ManifestKey, PlanningManifest]]
    ) -> list[Handover | None] | None:
        """Write manifests built together as one file linked from each key's name.

        None (nothing left behind) when it cannot be written or linked.
        """
        if self.directory is None:
            return None
        first = items[0][1].source
        assert isinstance(first, TableSource) and first.batch is not None
        whole = first.batch
        names = whole.column_names
        index: dict[str, list[Any]] = {}
        described: list[tuple[Path, TableSource, list[str]]] = []
        for key, item in items:
            source = item.source
            assert isinstance(source, TableSource)
            path = self._file(key)
            assert path is not None
            present = set(source.table.column_names)
            lacking = [n for n in names if n not in present]
            firsts = json.loads((source.table.schema.metadata or {}).get(FIRSTS_KEY, b"[]"))
            index[path.stem] = [source.offset, source.num_rows, firsts, lacking]
            described.append((path, source, lacking))
        metadata = {ROWS_KEY: str(whole.num_rows).encode(), INDEX_KEY: json.dumps(index).encode()}
        table = whole.replace_schema_metadata(metadata)
        tmp = Path(self.directory, f".batch.{os.getpid()}.{threading.get_ident()}.tmp")
        linked: list[Path] = []
        try:
            try:
                size = _write_ipc(tmp, table)
            except FileNotFoundError:  # the cache's first file
                tmp.parent.mkdir(parents=True, exist_ok=True)
                size = _write_ipc(tmp, table)
            for path, _, _ in described:
                _link(tmp, path)
                linked.append(path)
        except (OSError, pa.ArrowException):
            for path in linked:
                with contextlib.suppress(OSError):
                    path.unlink()
            return None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        self._note_written(size)
        file_columns = _shared_schema(table.schema)[2]
        subsets: dict[tuple[str, ...], bytes] = {(): file_columns}
        out: list[Handover | None] = []
        for (_, item), (_, source, lacking) in zip(items, described, strict=True):
            columns = subsets.get(tuple(lacking))
            if columns is None:
                columns = _shared_schema(source.table.schema)[2]
                subsets[tuple(lacking)] = columns
            meta = {**(source.table.schema.metadata or {}), ROWS_KEY: str(source.num_rows).encode()}
            codes = np.ascontiguousarray(item.codes, dtype=np.int32).tobytes()
            out.append(Handover(columns, meta, source.num_rows, codes, file_columns, source.offset))
        return out

    def _note_written(self, size: int) -> None:
        with self._lock:
            self._written_since_sweep += size
            if self._written_since_sweep < self.max_disk_bytes // 8:
                return
            self._written_since_sweep = 0
        self.sweep()

    def sweep(self) -> None:
        """Delete the least recently used cache files until the directory fits its bound."""
        if self.directory is None or not self.directory.exists():
            return
        files: list[tuple[float, int, Path]] = []
        for path in self.directory.glob("*/*.arrow"):
            with contextlib.suppress(OSError):
                st = path.stat()  # a batch file's bytes are shared by its links
                files.append((st.st_mtime, st.st_size // max(st.st_nlink, 1), path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_disk_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size


def _link(target: Path, path: Path) -> None:
    """Make ``path`` another name of the file ``target`` (replacing what ``path`` was)."""
    try:
        os.link(target, path)
    except FileNotFoundError:  # the first file of its folder
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(target, path)
    except FileExistsError:  # another process wrote it: replaced atomically
        spare = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            spare.unlink()
        os.link(target, spare)
        os.replace(spare, path)


def _write_ipc(path: Path, table: pa.Table) -> int:
    """Write ``table`` as an Arrow IPC file; its size in bytes."""
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return int(sink.tell())


_IPC_MAGIC = b"ARROW1"


def _record_batches(data: pa.Buffer, schema: pa.Schema) -> list[pa.RecordBatch] | None:
    """The record batches of a cache file, read with the schema already known.

    Opening an IPC file parses its footer and schema (~70 fields with metadata) every time;
    a plan reads each cache file once or twice, and the schema is shared, so the messages
    after the schema are read directly. None when the file is not laid out as written.
    """
    if data.size < 8 or data[:6].to_pybytes() != _IPC_MAGIC:
        return None
    stream = pa.BufferReader(data)
    stream.seek(8)
    batches: list[pa.RecordBatch] = []
    try:
        message = pa.ipc.read_message(stream)
        if message.type != "schema":
            return None
        while True:
            try:
                message = pa.ipc.read_message(stream)
            except EOFError:  # end of the stream: the footer follows
                return batches
            if message.type != "record batch":
                return None
            batches.append(pa.ipc.read_record_batch(message, schema))
    except (pa.ArrowException, OSError, ValueError):
        return None


def _column(batches: list[pa.RecordBatch], index: int, field: pa.Field) -> pa.ChunkedArray:
    return pa.chunked_array([b.column(index) for b in batches], field.type)


def _one_array(column: pa.ChunkedArray) -> pa.Array:
    """A column as one array, copied out of the mapping.

    A manifest with no live entries is a file without record batches: an empty array.
    """
    if column.num_chunks == 0:
        return pa.array([], column.type)
    return pa.concat_arrays(column.chunks)


_SHARED_SCHEMAS: dict[bytes, tuple[pa.Schema, dict[str, int], bytes]] = {}
_SHARED_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Handover:
    """A cache file described by the process that wrote it (see :meth:`ManifestCache.adopt`).

    Attributes:
        columns: the manifest's columns (schema without metadata), serialized (shared by
            many files).
        metadata: its layout metadata (schema metadata).
        rows: its rows.
        codes: its partition codes (int32, native byte order).
        file_columns: the file's columns when it is a batch file holding several manifests
            (empty: the file is the manifest's alone).
        offset: the manifest's first row in a batch file.
    """

    columns: bytes
    metadata: dict[bytes, bytes]
    rows: int
    codes: bytes
    file_columns: bytes = b""
    offset: int = 0


def _shared_schema(
    schema: pa.Schema, key: bytes | None = None
) -> tuple[pa.Schema, dict[str, int], bytes]:
    """One schema object (and name index) for every cache file with these columns.

    A planning layout has ~70 columns with field metadata: one schema per file cost ~25 KiB,
    50 MiB for the 2,000 files of a 1,000,000-file plan. The files of one table and spec
    share their columns; only the layout metadata (each file's partition firsts) differs.
    """
    bare = schema.remove_metadata()
    if key is None:
        key = bare.serialize().to_pybytes()
    with _SHARED_LOCK:
        found = _SHARED_SCHEMAS.get(key)
        if found is None:
            found = (bare, {name: i for i, name in enumerate(bare.names)}, key)
            _SHARED_SCHEMAS[key] = found
        return found


@dataclass(frozen=True, slots=True)
class _BatchFile:
    """What a batch file's manifests share: its index, columns and partition codes.

    ``identity`` is the file's (device, inode, size) when it was opened through
    :class:`BatchFiles` (its columns can then be read once for all its manifests).
    """

    entries: bytes
    index: dict[str, list[Any]]
    shared: tuple[pa.Schema, dict[str, int], bytes]
    codes: pa.Array | None
    identity: tuple[int, int, int] | None = None


_MAX_TOUCHED = 4096
"""Batch files :meth:`BatchFiles.first_touch` remembers touching (then it starts over)."""


class BatchFiles:
    """Batch files opened during a plan, by inode (their names are links to them).

    A batch file holds up to :data:`icecore.scan.decode_pool.BATCH` manifests; reading
    its footer, schema and codes once per manifest cost a restarted plan of a million
    files ~1 s. Kept only while plans run (:meth:`ManifestCache.planning`), so a file
    replaced later (same inode, new content) is never taken for the old one.
    """

    def __init__(self, size: int = 64, columns: int = 4) -> None:
        self._files: OrderedDict[tuple[int, int, int], _BatchFile] = OrderedDict()
        self._size = size
        self._columns: OrderedDict[tuple[tuple[int, int, int], tuple[str, ...]], list[pa.Array]] = (
            OrderedDict()
        )
        self._columns_size = columns
        self._touched: set[tuple[int, int, int]] = set()
        self._lock = threading.Lock()

    def first_touch(self, identity: tuple[int, int, int]) -> bool:
        """Whether a batch file is read for the first time since no plan ran.

        Its names are links to one inode: touching one (the cache's least-recently-used
        clock) touches them all, so a plan touches each batch file once, not once per
        manifest (2,000 ``utime`` calls in a restarted plan of a million files).
        """
        with self._lock:
            if identity in self._touched:
                return False
            if len(self._touched) >= _MAX_TOUCHED:
                self._touched.clear()
            self._touched.add(identity)
            return True

    def columns(
        self,
        key: tuple[tuple[int, int, int], tuple[str, ...]],
        read: Callable[[], list[pa.Array]],
    ) -> list[pa.Array]:
        """A batch file's named columns, all its rows, read once for its manifests.

        A plan reads the same few columns of each manifest of a batch one after another;
        parsing the file's messages once per manifest cost a restarted plan of a million
        files ~0.3 ms per manifest. The last few reads are kept (a handful of columns of
        one batch file each) and dropped with the files when no plan runs.
        """
        with self._lock:
            found = self._columns.get(key)
            if found is not None:
                self._columns.move_to_end(key)
                return found
        found = read()
        with self._lock:
            self._columns[key] = found
            while len(self._columns) > self._columns_size:
                self._columns.popitem(last=False)
        return found

    def get(self, key: tuple[int, int, int]) -> _BatchFile | None:
        """The batch file opened with this (device, inode, size), if remembered."""
        with self._lock:
            return self._files.get(key)

    def put(self, key: tuple[int, int, int], batch: _BatchFile) -> None:
        """Remember a batch file just opened (the least recently opened go first)."""
        with self._lock:
            self._files[key] = batch
            while len(self._files) > self._size:
                self._files.popitem(last=False)

    def clear(self) -> None:
        """Forget every file (no plan runs)."""
        with self._lock:
            self._files.clear()
            self._columns.clear()
            self._touched.clear()


def _open_file(
    path: Path, opened: BatchFiles | None
) -> _BatchFile | tuple[pa.Schema, int, pa.Array | None]:
    """Open a cache file once: a batch file's shared parts, or a file's schema, rows, codes."""
    key: tuple[int, int, int] | None = None
    if opened is not None:
        st = os.stat(path)
        if st.st_nlink > 1:  # a batch file's names are links; a file of its own has one
            key = (st.st_dev, st.st_ino, st.st_size)
            found = opened.get(key)
            if found is not None:
                return found
    with pa.memory_map(str(path), "r") as source:
        reader = pa.ipc.open_file(source)
        schema = reader.schema
        meta = schema.metadata or {}
        codes: pa.Array | None = None
        if CODE_COLUMN in schema.names:
            codes = _one_array(reader.read_all().column(CODE_COLUMN))
        entries = meta.get(INDEX_KEY)
        if entries is None:
            raw_rows = meta.get(ROWS_KEY)
            if raw_rows is not None:
                rows = int(raw_rows)
            else:
                rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
            return schema, rows, codes
        index, shared = _batch_index(entries, schema)
    batch = _BatchFile(entries, index, shared, codes, key)
    if key is not None and opened is not None:
        opened.put(key, batch)
    return batch


class FileSource:
    """A cache file (Arrow IPC), from which a few columns at a time are copied out.

    The file is memory-mapped only while columns are copied out of it, then unmapped: a plan
    reads a few columns of each file, and keeping the mapping would keep every page the
    kernel faulted in around them resident too (measured at 1,000,000 files and a filter on
    one column: 690 MiB of mapped pages, against the ~60 MiB of columns the plan needs).

    A batch file (:data:`INDEX_KEY`) holds several manifests; a source is one of them: its
    rows ``offset:offset + num_rows`` and its columns only.
    """

    def __init__(
        self,
        path: Path,
        written: tuple[pa.Schema, int, pa.ChunkedArray | None] | None = None,
        opened: BatchFiles | None = None,
    ) -> None:
        """Open a cache file (``written``: its schema, rows and codes, known when written).

        The partition codes every plan reads first are read in the same opening. A batch
        file is opened once for all its manifests when ``opened`` remembers it (a plan reads
        the manifests of a batch one after another).
        """
        self.path = path
        self._offset = 0
        self._shared_reads: tuple[BatchFiles, tuple[int, int, int]] | None = None
        entries: bytes | None = None
        if written is None:
            found = _open_file(path, opened)
            if isinstance(found, _BatchFile):
                entries = found.entries
                if opened is not None and found.identity is not None:
                    self._shared_reads = (opened, found.identity)
                offset, rows, firsts, lacking = found.index[path.stem]
                self._offset = int(offset)
                file_shared = found.shared
                shared = _subset_schema(file_shared, tuple(lacking))
                schema = shared[0].with_metadata(
                    {FIRSTS_KEY: json.dumps(firsts).encode(), ROWS_KEY: str(rows).encode()}
                )
                codes = None
                if found.codes is not None and CODE_COLUMN in schema.names:
                    codes = found.codes.slice(self._offset, rows)
                if len(codes if codes is not None else ()) != rows:
                    raise ValueError(f"{path} does not hold the rows its index names")
            else:
                schema, rows, codes = found
                file_schema = schema
        else:
            schema, rows, written_codes = written
            file_schema = schema
            codes = None if written_codes is None else _one_array(written_codes)
        if entries is not None:  # a batch file: its schemas are shared by its manifests
            self._columns, self._index, self._columns_key = shared
            self._file_columns, self._file_index, self._file_key = file_shared
        else:
            self._columns, self._index, self._columns_key = _shared_schema(schema)
            self._file_columns, self._file_index, self._file_key = _shared_schema(file_schema)
        self._metadata = schema.metadata
        self._rows = rows
        self._codes = codes
        self._schema: pa.Schema | None = None

    @classmethod
    def handed_over(cls, path: Path, handover: Handover) -> FileSource:
        """The cache file another process wrote, as it described it (not opened here)."""
        source = cls.__new__(cls)
        source.path = path
        source._columns, source._index, source._columns_key = _described(handover.columns)
        file_key = handover.file_columns or handover.columns
        source._file_columns, source._file_index, source._file_key = _described(file_key)
        source._offset = handover.offset
        source._shared_reads = None
        source._metadata = handover.metadata
        source._rows = handover.rows
        source._codes = pa.array(np.frombuffer(handover.codes, dtype=np.int32), pa.int32())
        source._schema = None
        return source

    def share_reads(self, opened: BatchFiles, identity: tuple[int, int, int]) -> None:
        """Read columns through ``opened``, once for every manifest of this batch file.

        ``identity`` is the file's (device, inode, size). A plan adopting a worker's batch
        file (:meth:`ManifestCache.adopt`) used to map and parse it once per manifest in it:
        ~0.7 ms each, 1.3 s of the planning process's time at a million files.
        """
        self._shared_reads = (opened, identity)

    @property
    def shared_reads(self) -> tuple[BatchFiles, tuple[int, int, int]] | None:
        """The plan's open batch files and this file's identity, when reads are shared."""
        return self._shared_reads

    def handover(self) -> Handover:
        """What another process needs to use this file without opening it first."""
        codes = self._codes if self._codes is not None else pa.array([], pa.int32())
        batch = self._file_key != self._columns_key or self._offset != 0
        return Handover(
            self._columns_key,
            dict(self._metadata or {}),
            self._rows,
            codes.to_numpy(zero_copy_only=False).astype(np.int32).tobytes(),
            self._file_key if batch else b"",
            self._offset,
        )

    @property
    def schema(self) -> pa.Schema:
        """The file's columns and layout metadata (made once: asked for ~3 times per plan)."""
        if self._schema is None:
            self._schema = self._columns.with_metadata(self._metadata or {})
        return self._schema

    @property
    def num_rows(self) -> int:
        """Live entries."""
        return self._rows

    @property
    def nbytes(self) -> int:
        """Nothing is held but the schema."""
        return 0

    def has(self, name: str) -> bool:
        """Whether the file has a column of that name."""
        return name in self._index

    def read(self, names: Sequence[str]) -> pa.Table:
        """Copies of the named columns (the file is not kept mapped)."""
        if self._codes is not None and list(names) == [CODE_COLUMN]:
            fields = [self._columns.field(self._index[CODE_COLUMN])]
            return pa.Table.from_arrays([self._codes], schema=pa.schema(fields, self._metadata))
        fields = [self._columns.field(self._index[n]) for n in names]
        lo, rows = self._offset, self._rows
        if self._shared_reads is not None:  # a batch file: its columns read once per plan
            opened, identity = self._shared_reads
            whole = opened.columns((identity, tuple(names)), partial(self._whole, names, fields))
            columns = [c.slice(lo, rows) for c in whole]  # views of a copy, not of the file
        else:
            with pa.memory_map(str(self.path), "r") as source:
                batches = _record_batches(source.read_buffer(), self._file_columns)
                if batches is None:  # not as written: let the IPC reader say what is wrong
                    table = pa.ipc.open_file(source).read_all()
                    columns = [_one_array(table.column(n).slice(lo, rows)) for n in names]
                else:
                    columns = [
                        _one_array(_column(batches, self._file_index[n], f).slice(lo, rows))
                        for n, f in zip(names, fields, strict=True)
                    ]
        if any(len(c) != rows for c in columns):
            raise ValueError(f"{self.path} does not hold the rows its index names")
        return pa.Table.from_arrays(columns, schema=pa.schema(fields, self._metadata))

    def _whole(self, names: Sequence[str], fields: Sequence[pa.Field]) -> list[pa.Array]:
        """Copies of the named columns of the whole file (every manifest of a batch file)."""
        with pa.memory_map(str(self.path), "r") as source:
            batches = _record_batches(source.read_buffer(), self._file_columns)
            if batches is None:  # not as written: let the IPC reader say what is wrong
                table = pa.ipc.open_file(source).read_all()
                return [_one_array(table.column(n)) for n in names]
            return [
                _one_array(_column(batches, self._file_index[n], f))
                for n, f in zip(names, fields, strict=True)
            ]

    def take(self, rows: pa.Array) -> pa.Table:
        """Copies of the given rows, every column (nothing else is copied out of the file)."""
        if self._offset:
            rows = pc.add(rows.cast(pa.int64()), pa.scalar(self._offset, pa.int64()))
        names = self._columns.names
        with pa.memory_map(str(self.path), "r") as source:
            batches = _record_batches(source.read_buffer(), self._file_columns)
            if batches is None:
                table = pa.ipc.open_file(source).read_all()
            else:
                table = pa.Table.from_batches(batches, self._file_columns)
            taken = table.select(names).take(rows)
        return taken.replace_schema_metadata(self._metadata)


_Shared = tuple[pa.Schema, dict[str, int], bytes]
_INDEXES: dict[bytes, tuple[dict[str, list[Any]], _Shared]] = {}
_SUBSETS: dict[tuple[bytes, tuple[str, ...]], _Shared] = {}
_MAX_INDEXES = 4096


def _batch_index(entries: bytes, schema: pa.Schema) -> tuple[dict[str, list[Any]], _Shared]:
    """A batch file's index and shared schema, parsed once for all its manifests."""
    with _SHARED_LOCK:
        found = _INDEXES.get(entries)
    if found is None:
        found = (json.loads(entries), _shared_schema(schema))
        with _SHARED_LOCK:
            if len(_INDEXES) >= _MAX_INDEXES:
                _INDEXES.clear()
            _INDEXES[entries] = found
    return found


def _subset_schema(file_shared: _Shared, lacking: tuple[str, ...]) -> _Shared:
    """The shared schema of a batch file's columns less ``lacking``."""
    if not lacking:
        return file_shared
    with _SHARED_LOCK:
        found = _SUBSETS.get((file_shared[2], lacking))
    if found is None:
        gone = set(lacking)
        found = _shared_schema(pa.schema([f for f in file_shared[0] if f.name not in gone]))
        with _SHARED_LOCK:
            if len(_SUBSETS) >= _MAX_INDEXES:
                _SUBSETS.clear()
            _SUBSETS[(file_shared[2], lacking)] = found
    return found


def _described(key: bytes) -> tuple[pa.Schema, dict[str, int], bytes]:
    """The shared schema serialized as ``key`` (by another process)."""
    with _SHARED_LOCK:
        shared = _SHARED_SCHEMAS.get(key)
    if shared is None:
        bare = pa.ipc.read_schema(pa.py_buffer(key))
        shared = _shared_schema(bare, key)
    return shared
