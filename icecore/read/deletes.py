"""Delete files applied to a data file's rows (spec "Delete Formats").

Position delete files (rows whose ``file_path`` is the data file), deletion vectors (from the
latest spec, :mod:`icecore.scan.puffin`) and equality delete files (delete columns matched
by id, NULL equal to NULL, read from the data file even after the column was dropped from the
table). The files of a run of tasks are read once and kept for the next task.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from icecore.arrow_types import arrow_type
from icecore.compute import pc
from icecore.errors import InvalidMetadata
from icecore.io import FileIO
from icecore.lru import LRU
from icecore.manifest import DataFile
from icecore.read.files import SourceFile, column_at, file_field
from icecore.read.name_mapping import MappedField
from icecore.read.projection import cast_array
from icecore.scan.delete_index import DELETE_FILE_PATH_ID, DELETE_POS_ID, is_deletion_vector
from icecore.scan.puffin import deletion_vector_positions
from icecore.schema import Schema

_DELETE_CACHE_SIZE = 32

_NO_POSITIONS = np.empty(0, np.int64)


def keep_mask(deleted: np.ndarray, start: int, n: int) -> pa.Array | None:
    """Which of the rows ``[start, start + n)`` survive ``deleted`` (None: all of them).

    ``deleted`` is sorted and distinct (:meth:`DeleteLoader.positions`); positions outside
    the range (before it, past it, past the file's end) delete nothing here.
    """
    lo, hi = np.searchsorted(deleted, [start, start + n])
    if hi <= lo:
        return None
    keep = np.ones(n, dtype=bool)
    keep[deleted[lo:hi] - start] = False
    return pa.array(keep)


def _key_type(field_id: int, schema: Schema, fallback: pa.DataType) -> pa.DataType:
    t = schema.find_type(field_id)
    return arrow_type(t) if t is not None else fallback


def _sentinel(t: pa.DataType) -> pa.Scalar:
    """Some valid value of type ``t`` (stands in for NULL keys in a hash join)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\x00" * t.byte_width, t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(0), t)
    if pa.types.is_date(t):
        return pa.scalar(dt.date(1970, 1, 1), t)
    return pa.scalar(0, t)


def _null_safe_keys(columns: Sequence[pa.Array]) -> dict[str, pa.Array]:
    keys: dict[str, pa.Array] = {}
    for i, col in enumerate(columns):
        keys[f"v{i}"] = pc.fill_null(col, _sentinel(col.type)) if col.null_count else col
        keys[f"n{i}"] = pc.is_null(col)
    return keys


@dataclass(frozen=True, slots=True)
class _PositionFile:
    """The rows of one position delete file, ready to give a data file's positions.

    ``paths`` is None when the file's footer shows every row names ``only_path``
    (:meth:`SourceFile.constant_string`): its paths were neither decoded nor compared.
    """

    only_path: str | None
    paths: pa.ChunkedArray | None
    positions: pa.ChunkedArray

    def of(self, data_path: str) -> pa.Array:
        """The positions this file deletes in ``data_path`` (int64, in file order)."""
        if self.paths is None:
            if self.only_path != data_path:
                return pa.array([], pa.int64())
            return self.positions.combine_chunks()
        mask = pc.equal(self.paths, pa.scalar(data_path, pa.string()))
        return self.positions.filter(mask).combine_chunks()


@dataclass(frozen=True, slots=True)
class EqualityDeletes:
    """The distinct delete keys of one equality delete file, ready to match rows."""

    field_ids: tuple[int, ...]
    types: tuple[pa.DataType, ...]
    keys: pa.Table
    sorted_ints: np.ndarray | None = None
    """One integer key column's non-NULL keys, sorted (else None): see :meth:`_matches_ints`."""
    null_key: bool = False
    """Whether ``sorted_ints``' column has a NULL key (which deletes rows whose value is NULL)."""

    def matches(self, columns: Sequence[pa.Array]) -> pa.Array:
        """Which rows equal some delete key (NULL equals NULL, spec "Equality Delete Files")."""
        n = len(columns[0]) if columns else 0
        if self.keys.num_rows == 0 or n == 0:
            return pa.repeat(pa.scalar(False), n)
        if self.sorted_ints is not None and len(columns) == 1:
            return self._matches_ints(columns[0])
        if len(columns) == 1:
            return pc.is_in(columns[0], value_set=self.keys.column(0), skip_nulls=False)
        left = pa.table(_null_safe_keys(columns) | {"__row": pa.array(np.arange(n))})
        names = [c for c in left.column_names if c != "__row"]
        hit = left.join(self.keys, keys=names, join_type="left semi", use_threads=False)
        found = np.zeros(n, dtype=bool)
        found[hit.column("__row").to_numpy()] = True
        return pa.array(found)

    def _matches_ints(self, column: pa.Array) -> pa.Array:
        """:meth:`matches` for one integer key, looking up only keys within the batch's range.

        ``pc.is_in`` builds a hash set of its whole ``value_set`` on every call, i.e. per
        record batch: with a delete file's keys that is most of an equality-delete scan
        (10M rows in 64Ki-row batches against 5,000 keys: 1.0 s, against 100,000: 5-7 s).
        Data files are mostly clustered on the key (rows written in order): a batch sorted
        on the key (no NULL) is matched by binary search alone (:func:`_sorted_hits`);
        otherwise only the keys between the batch's min and max (two binary searches in the
        sorted keys) are hashed, which are few when the file is clustered and all of them
        when it is not.
        """
        assert self.sorted_ints is not None
        found: pa.Array
        if column.null_count == 0 and len(column) > 1:
            values = column.to_numpy()
            if bool(np.all(values[:-1] <= values[1:])):
                return pa.array(_sorted_hits(values, self.sorted_ints))
        bounds = pc.min_max(column)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or high is None:  # every value NULL (or no rows)
            found = pa.repeat(pa.scalar(False), len(column))
        else:
            keys = self.sorted_ints
            lo = int(np.searchsorted(keys, low, side="left"))
            hi = int(np.searchsorted(keys, high, side="right"))
            if hi <= lo:
                found = pa.repeat(pa.scalar(False), len(column))
            else:
                value_set = pa.array(keys[lo:hi], type=column.type)
                found = pc.is_in(column, value_set=value_set, skip_nulls=True)
        if self.null_key and column.null_count:
            found = pc.or_(found, pc.is_null(column))
        return found


def _sorted_hits(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of ``values`` (sorted, no NULL) equal one of ``keys`` (sorted, distinct).

    A file written in key order gives batches sorted on the key: each key found by binary
    search marks the run of rows equal to it, with no hash set built at all (``pc.is_in`` on
    a 25,000-row batch against its 250 keys took ~0.5 ms, this ~0.02 ms).
    """
    low = np.searchsorted(keys, values[0], "left")
    keys = keys[low : np.searchsorted(keys, values[-1], "right")]
    starts = np.searchsorted(values, keys, "left")
    ends = np.searchsorted(values, keys, "right")
    present = ends > starts
    starts, ends = starts[present], ends[present]
    # Runs of equal values: the runs are disjoint and in order, so +1 at each start and -1
    # at each end, summed along the rows, is 1 exactly inside a run.
    edges = np.zeros(len(values) + 1, dtype=np.int8)
    edges[starts] += 1
    edges[ends] -= 1
    return np.cumsum(edges[:-1]) > 0


class DeleteLoader:
    """Reads delete files for a run of tasks, caching the most recently used ones."""

    def __init__(
        self,
        io: FileIO,
        schema: Schema,
        name_mapping: Sequence[MappedField] | None,
        batch_size: int,
    ) -> None:
        self._io = io
        self._schema = schema
        self._mapping = name_mapping
        self._batch_size = batch_size
        self._cache: LRU[tuple[str, int | None], Any] = LRU(_DELETE_CACHE_SIZE)

    def _cached(self, key: tuple[str, int | None], load: Callable[[], Any]) -> Any:
        return self._cache.get_or_make(key, load)

    def positions(self, data_path: str, deletes: Sequence[DataFile]) -> np.ndarray:
        """Sorted, distinct deleted positions (int64) of a data file from its deletes/DVs.

        A numpy array, never Python integers: a data file's mask is built from it with
        :func:`keep_mask` in one vectorized step (10M positions as Python ints cost ~1 s).
        Positions outside the file are kept here; :func:`keep_mask` ignores them.
        """
        parts: list[np.ndarray] = []
        for d in deletes:
            if is_deletion_vector(d):
                parts.append(
                    self._cached((d.file_path, d.content_offset), partial(self._deletion_vector, d))
                )
            else:
                found = self._cached((d.file_path, None), partial(self._position_file, d))
                parts.append(found.of(data_path).to_numpy(zero_copy_only=False))
        if not parts:
            return _NO_POSITIONS
        merged = parts[0] if len(parts) == 1 else np.concatenate(parts)
        merged = merged.astype(np.int64, copy=False)
        if len(merged) < 2 or bool(np.all(merged[1:] > merged[:-1])):
            return merged  # already sorted and distinct (as writers sort them): no sort
        return np.unique(merged)

    def _deletion_vector(self, d: DataFile) -> np.ndarray:
        """A DV's positions as int64, read only (cached and handed out as they are).

        Viewed from the bitmap's ``array('Q')`` buffer, not converted value by value (Arrow
        takes an ``array.array`` as a Python sequence: ~0.6 ms per 10,000 positions). The
        Puffin reader refused positions with the sign bit set, so int64 holds them all.
        """
        found = np.frombuffer(deletion_vector_positions(self._io, d), dtype=np.uint64)
        found = found.astype(np.int64)
        found.flags.writeable = False
        return found

    def _position_file(self, d: DataFile) -> _PositionFile:
        source = SourceFile(self._io, d, "Position delete file", self._mapping)
        for fid in (DELETE_FILE_PATH_ID, DELETE_POS_ID):
            if fid not in source.index:
                source.close()
                raise InvalidMetadata(
                    f"Position delete file {d.file_path} has no column with field id {fid}."
                )
        only_path = source.constant_string(DELETE_FILE_PATH_ID)
        wanted = {DELETE_POS_ID} if only_path is not None else {DELETE_FILE_PATH_ID, DELETE_POS_ID}
        paths: list[pa.Array] = []
        positions: list[pa.Array] = []
        for batch in source.batches(wanted, self._batch_size):
            if only_path is None:
                paths.append(
                    cast_array(
                        column_at(batch, source.schema, source.index[DELETE_FILE_PATH_ID]),
                        pa.string(),
                        d.file_path,
                    )
                )
            positions.append(
                cast_array(
                    column_at(batch, source.schema, source.index[DELETE_POS_ID]),
                    pa.int64(),
                    d.file_path,
                )
            )
        return _PositionFile(
            only_path,
            pa.chunked_array(paths, pa.string()) if only_path is None else None,
            pa.chunked_array(positions, pa.int64()),
        )

    def equality(self, d: DataFile) -> EqualityDeletes:
        """The keys of an equality delete file, typed as the scan's schema types them."""
        return self._cached((d.file_path, -1), lambda: self._equality_file(d))

    def _equality_file(self, d: DataFile) -> EqualityDeletes:
        ids = tuple(d.equality_ids or ())
        if not ids:
            raise InvalidMetadata(f"Equality delete file {d.file_path} has no equality_ids.")
        source = SourceFile(self._io, d, "Equality delete file", self._mapping)
        missing = [fid for fid in ids if fid not in source.index]
        if missing:
            raise InvalidMetadata(
                f"Equality delete file {d.file_path} has no column for equality field id(s) "
                f"{missing}."
            )
        types = tuple(
            _key_type(fid, self._schema, file_field(source.schema, source.index[fid]).type)
            for fid in ids
        )
        columns: list[list[pa.Array]] = [[] for _ in ids]
        for batch in source.batches(set(ids), self._batch_size):
            for i, fid in enumerate(ids):
                arr = column_at(batch, source.schema, source.index[fid])
                columns[i].append(cast_array(arr, types[i], d.file_path))
        arrays = [
            pa.concat_arrays(parts) if parts else pa.array([], t)
            for parts, t in zip(columns, types, strict=True)
        ]
        if len(ids) == 1:
            keys = pa.table({"v0": pc.unique(arrays[0])})
            if pa.types.is_integer(types[0]):
                column = keys.column(0)
                ints = np.sort(column.drop_null().to_numpy())
                return EqualityDeletes(ids, types, keys, ints, column.null_count > 0)
        else:
            keys = (
                pa.table(_null_safe_keys(arrays))
                .group_by([f"{p}{i}" for i in range(len(ids)) for p in ("v", "n")])
                .aggregate([])
            )
        return EqualityDeletes(ids, types, keys)
