"""Data and delete files opened through FileIO for batch reads, their columns found by field id.

Every byte is read through :class:`icecore.io.FileIO`, in merged byte ranges a row group at a
time, so memory is bounded by a row group, not by the file.
"""

from __future__ import annotations

import io as _stdio
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icecore.avro import read_avro_arrow
from icecore.errors import InvalidMetadata, Unsupported
from icecore.io import FileIO, check_range, normalize_path
from icecore.manifest import DataFile
from icecore.read.name_mapping import NAME_MAPPING_PROPERTY, MappedField, apply_name_mapping

_FIELD_ID_KEYS = (b"PARQUET:field_id", b"field_id")

if TYPE_CHECKING:
    import pyarrow.parquet as pq


_HOLE_BYTES = 8 << 10
"""Ranges closer than this are read as one (Arrow's own pre-buffer default)."""
_RANGE_BYTES = 32 << 20
"""A merged range grows no longer than this (Arrow's own pre-buffer default)."""


class _RangeFile(_stdio.RawIOBase):
    """A read-only, seekable file whose reads are FileIO range reads.

    :meth:`prefetch` reads the column chunks of a row group in a few merged range reads on
    the calling thread (what Arrow's ``pre_buffer`` would do on its I/O threads, which must
    not touch Python objects: see :class:`SourceFile`); reads inside them are served from
    memory until the next prefetch or :meth:`forget`.
    """

    def __init__(self, io: FileIO, path: str, size: int) -> None:
        super().__init__()
        self._io, self._path, self._size, self._pos = io, path, size, 0
        self._held: list[tuple[int, bytes]] = []

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Read the ``[start, end)`` ranges now, neighbours merged, and hold their bytes."""
        merged: list[list[int]] = []
        for start, end in sorted(ranges):
            start, end = max(0, start), min(self._size, end)
            if end <= start:
                continue
            if (
                merged
                and start - merged[-1][1] <= _HOLE_BYTES
                and end - merged[-1][0] <= _RANGE_BYTES
            ):
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self._held = [(a, self._io.read(self._path, a, b)) for a, b in merged]

    def forget(self) -> None:
        """Drop the bytes :meth:`prefetch` holds."""
        self._held = []

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        end = min(self._size, self._pos + len(view))
        if end <= self._pos:
            return 0
        data = next(
            (
                memoryview(held)[self._pos - at : end - at]
                for at, held in self._held
                if at <= self._pos and end <= at + len(held)
            ),
            None,
        )
        if data is None:
            data = memoryview(self._io.read(self._path, self._pos, end))
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)


def _checked_size(io: FileIO, f: DataFile, what: str, size: int | None = None) -> int:
    """The file's size (``size`` when known), refused when under its manifest entry's."""
    size = io.info(f.file_path).size if size is None else size
    if size < f.file_size_in_bytes:
        raise InvalidMetadata(
            f"{what} {f.file_path} is truncated: it has {size} bytes but its manifest entry "
            f"says {f.file_size_in_bytes}."
        )
    return size


def _arrow_error(what: str, path: str, e: Exception) -> InvalidMetadata:
    return InvalidMetadata(f"{what} {path} cannot be read as {_format_word(path)}: {e}")


def _format_word(path: str) -> str:
    return "Avro" if path.lower().endswith(".avro") else "Parquet"


class SourceFile:
    """A data or delete file opened for batch reads, with its columns indexed by field id.

    A local Parquet file (and an S3 object when FileIO's S3 settings map onto Arrow's S3
    filesystem) is opened as an Arrow file (:meth:`FileIO.open_native`): Arrow
    reads it with the GIL released, so reading threads read and decode files side by side
    (issue 32: the Python file object held the GIL per read). Still ``pre_buffer=False``:
    measured in fresh processes on the 2-core machine (10M rows, 3 columns), pre-buffering
    on Arrow's I/O threads was slower (median ~1.3 s against ~1.0 s; range reads ~2.0 s),
    its threads competing with the reading threads for the same cores. An S3 object read
    natively is pre-buffered (its round trips are what that saves).

    Any other Parquet file is read through FileIO range reads (:class:`_RangeFile`),
    also with ``pre_buffer=False``, so every read of the file happens on the
    thread that iterates its batches. With pre-buffering, Arrow reads column chunks on its
    own I/O threads, and a read of a Python file object (our FileIO range reads) yields a
    buffer owning a Python ``bytes``: the I/O thread that drops the last reference to it
    (the end of its task, after the reader has the bytes) must take the GIL. When that
    happens after the reader is done and the interpreter has begun to finalize (a
    ``to_arrow(limit=...)`` right before exit: the limit is reached and the program ends
    while the I/O task is still tearing down), Python ends the thread with
    ``pthread_exit``, its unwinding meets a ``noexcept`` C++ frame, and the process aborts
    with "terminate called without an active exception" (exit 134). Each column chunk is
    still one range read; nothing of Arrow's runs Python code on a thread of its own.
    """

    def __init__(
        self,
        io: FileIO,
        f: DataFile,
        what: str,
        name_mapping: Sequence[MappedField] | None,
    ) -> None:
        self.path = f.file_path
        self.what = what
        fmt = f.file_format.upper()
        self._parquet: pq.ParquetFile | None = None
        self._file: _RangeFile | None = None
        self._avro: pa.Table | None = None
        self._native: pa.NativeFile | None = None
        if fmt == "PARQUET":
            import pyarrow.parquet as pq  # only readers need it, not every planning process

            native = io.open_native(f.file_path)
            # An object store's round trips are what pre-buffering (merged, concurrent range
            # requests on Arrow's I/O threads) saves; an Arrow file only (nothing of Python).
            remote = native is not None and normalize_path(f.file_path)[0] != "file"
            source: pa.NativeFile
            if native is not None:
                self._native, size = native
                try:
                    _checked_size(io, f, what, size)
                except InvalidMetadata:
                    self.close()
                    raise
                source = self._native
            else:
                size = _checked_size(io, f, what)
                self._file = _RangeFile(io, f.file_path, size)
                source = pa.PythonFile(self._file)
            try:
                self._parquet = pq.ParquetFile(source, pre_buffer=remote)
                schema = self._parquet.schema_arrow
            except (pa.ArrowException, OSError, ValueError) as e:
                self.close()
                raise _arrow_error(what, f.file_path, e) from e
        elif fmt == "AVRO":
            self._avro = read_avro_arrow(io.read(f.file_path), f.file_path)
            schema = self._avro.schema
        else:
            raise Unsupported(
                f"{what} {f.file_path} is in {f.file_format} format; Icecore reads Parquet and "
                "Avro files."
            )
        if not _has_ids(schema):
            if name_mapping is None:
                raise Unsupported(
                    f"{what} {f.file_path} has no field ids and the table has no "
                    f"{NAME_MAPPING_PROPERTY} property to match its columns by name."
                )
            schema = apply_name_mapping(schema, name_mapping)
        self.schema = schema
        self.index = _index_ids(schema)
        self._num_rows = (
            int(self._parquet.metadata.num_rows)
            if self._parquet is not None
            else int(self._avro.num_rows if self._avro is not None else 0)
        )

    @property
    def num_rows(self) -> int:
        """Rows in the file, from its footer."""
        return self._num_rows

    def constant_string(self, field_id: int) -> str | None:
        """The one string a top-level column holds in every row, from the Parquet footer.

        Known when every row group's statistics give no nulls and a minimum equal to the
        maximum (a writer truncating long values writes a longer maximum, so equal bounds
        are exact). None: unknown, several values, nulls, no statistics, not Parquet or not
        a top-level string column. A position delete file written for one data file (what
        Spark and Iceberg Java write) names it in every row; knowing that from the footer
        spares decoding and comparing its paths (issue 32, Deliver 1).
        """
        path = self.index.get(field_id)
        if self._parquet is None or path is None or len(path) != 1:
            return None
        if not pa.types.is_string(self.schema.field(path[0]).type):
            return None
        (leaf,) = self._leaf_columns([path[0]])
        metadata = self._parquet.metadata
        found: str | None = None
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(leaf).statistics
            if stats is None or not stats.has_min_max or not stats.has_null_count:
                return None
            low, high = stats.min, stats.max
            if stats.null_count or not isinstance(low, str) or low != high:
                return None
            if found is not None and low != found:
                return None
            found = low
        return found

    def batches(self, field_ids: set[int], batch_size: int) -> Iterator[pa.RecordBatch]:
        """Batches of the top-level columns holding any of ``field_ids`` (all rows, in order).

        Columns keep the file's own names; use :attr:`index` to find a field by id.
        """
        tops = sorted({self.index[fid][0] for fid in field_ids if fid in self.index})
        names = [self.schema.field(i).name for i in tops]
        if not names:
            yield from self._empty_batches(batch_size)
            return
        if self._avro is not None:
            table = self._avro.select(tops)
            yield from table.to_batches(max_chunksize=batch_size)
            return
        parquet = self._parquet
        assert parquet is not None
        leaves = self._leaf_columns(tops)
        metadata = parquet.metadata
        try:
            # A row group at a time: what is held is one row group's chunks.
            for group in range(metadata.num_row_groups):
                ranges = [_chunk_range(metadata.row_group(group), i) for i in leaves]
                if self._file is not None:
                    self._file.prefetch(ranges)
                else:  # Arrow reads the chunks: bounded as FileIO's own reads are
                    for start, end in ranges:
                        check_range(self.path, start, end)
                batches = parquet.iter_batches(
                    batch_size=batch_size, row_groups=[group], columns=names, use_threads=False
                )
                try:
                    for batch in batches:
                        yield batch.rename_columns([str(i) for i in tops])
                finally:
                    batches.close()  # a reader left mid-file (a limit reached) goes now
        except (pa.ArrowException, OSError, ValueError) as e:
            raise _arrow_error(self.what, self.path, e) from e
        finally:
            self.close()

    def close(self) -> None:
        """Let go of the file (its descriptor, the bytes held); :meth:`batches` ends so.

        An Arrow file is not closed here but let go of: its descriptor closes when the last
        of Arrow's readers holding it is gone (none reads it once the reader has stopped).
        """
        if self._file is not None:
            self._file.forget()
        self._native = None
        self._parquet = None

    def _leaf_columns(self, tops: Sequence[int]) -> list[int]:
        """Parquet leaf column indexes under the given top-level fields (depth-first order)."""
        starts = [0]
        for f in self.schema:
            starts.append(starts[-1] + _leaf_count(f.type))
        return [leaf for top in tops for leaf in range(starts[top], starts[top + 1])]

    def _empty_batches(self, batch_size: int) -> Iterator[pa.RecordBatch]:
        remaining = self.num_rows
        while remaining > 0:
            n = min(batch_size, remaining)
            yield pa.record_batch([pa.nulls(n)], names=["__rows"])
            remaining -= n


def _leaf_count(t: pa.DataType) -> int:
    """Parquet leaf columns an Arrow type is stored in."""
    if t.num_fields == 0:
        return 1
    return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))


def _chunk_range(group: Any, column: int) -> tuple[int, int]:
    """Bytes ``[start, end)`` of one column chunk of a row group, from the footer."""
    chunk = group.column(column)
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and 0 < chunk.dictionary_page_offset < start:
        start = chunk.dictionary_page_offset
    return start, start + chunk.total_compressed_size


def arrow_field_id(f: pa.Field) -> int | None:
    """The field id an Arrow field carries (``PARQUET:field_id``), or None."""
    if f.metadata:
        for key in _FIELD_ID_KEYS:
            raw = f.metadata.get(key)
            if raw is not None:
                return int(raw)
    return None


def _has_ids(schema: pa.Schema) -> bool:
    return any(arrow_field_id(f) is not None for f in schema)


def _index_ids(schema: pa.Schema) -> dict[int, tuple[int, ...]]:
    """Field id -> positions from the top-level column through nested structs."""
    index: dict[int, tuple[int, ...]] = {}

    def walk(fields: Sequence[pa.Field], prefix: tuple[int, ...]) -> None:
        for i, f in enumerate(fields):
            fid = arrow_field_id(f)
            path = prefix + (i,)
            if fid is not None:
                index.setdefault(fid, path)
            if pa.types.is_struct(f.type):
                walk([f.type.field(j) for j in range(f.type.num_fields)], path)

    walk(list(schema), ())
    return index


def file_field(schema: pa.Schema, path: tuple[int, ...]) -> pa.Field:
    """The file's field at a path of positions (as :attr:`SourceFile.index` gives)."""
    f = schema.field(path[0])
    for i in path[1:]:
        f = f.type.field(i)
    return f


def column_at(batch: pa.RecordBatch, schema: pa.Schema, path: tuple[int, ...]) -> pa.Array:
    """The array at a field path; nested struct fields inherit their parents' nulls."""
    arr: pa.Array = batch.column(str(path[0]))
    for i in path[1:]:
        arr = arr.flatten()[i]
    return arr
