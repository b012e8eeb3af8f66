"""A snapshot's manifest list as columns: planning judges thousands of manifests at once.

Spec "Manifest Lists": a plan reads every entry's content, partition spec id, live counts
and partition field summaries, but needs a :class:`~icecore.manifest.ManifestFile` only for
the manifests it keeps. Building one object per entry cost ~24 µs (47 ms for a 2,000-entry
list, more than decoding it), and judging summaries one manifest at a time in Python another
~10 ms per plan (docs/ARCHITECTURE.md "Performance": per-entry Python objects). Here the records are
read once into arrays, summaries per (spec, position) into Arrow columns for
:mod:`icecore.expressions.arrow_summaries`, and ``ManifestFile`` objects are made (and kept)
on first use. A :class:`ManifestListColumns` is immutable in what it answers and safe to
share between threads: memoized values are pure functions of the file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pyarrow as pa

from icecore.compute import pc
from icecore.errors import InvalidMetadata
from icecore.io import FileIO
from icecore.manifest import (
    ListField,
    ManifestContent,
    ManifestFile,
    ManifestListRecords,
    read_manifest_list_records,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FieldSummaries:
    """One partition position's ``field_summary`` over a set of manifests (one row each).

    Attributes:
        present: whether the manifest has a summary at this position (a manifest without
            summaries, or with fewer than the spec has fields, might match anything).
        contains_null: the summary's ``contains_null`` (null where not present).
        contains_nan: ``contains_nan`` (null where not present or not written).
        lower: ``lower_bound`` as Appendix D bytes (null where absent).
        upper: ``upper_bound`` as Appendix D bytes (null where absent).
    """

    present: pa.BooleanArray
    contains_null: pa.BooleanArray
    contains_nan: pa.BooleanArray
    lower: pa.BinaryArray
    upper: pa.BinaryArray


@dataclass(slots=True)
class SpecManifests:
    """The manifests of one partition spec in a list: their rows and summaries by position."""

    rows: np.ndarray
    records: ManifestListRecords
    _positions: dict[int, FieldSummaries] = field(default_factory=dict)
    _memo: dict[object, object] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        """Manifests of this spec."""
        return len(self.rows)

    def summaries(self, position: int) -> FieldSummaries:
        """The summaries at partition ``position`` (decoded once, then shared)."""
        found = self._positions.get(position)
        if found is None:
            found = self._decode(position)
            self._positions[position] = found
        return found

    def memo(self, key: object, make: Callable[[], T]) -> T:
        """A value derived from these summaries alone (such as decoded bound keys), kept."""
        found = self._memo.get(key)
        if found is None:
            found = make()
            self._memo[key] = found
        return found  # type: ignore[return-value]

    def _decode(self, position: int) -> FieldSummaries:
        n = len(self.rows)
        partitions = self.records.column(ListField.PARTITIONS)
        if partitions is None or n == 0:
            return _absent(n)
        # Index the flattened summaries directly: taking the nested list column is slower.
        lengths = pc.fill_null(pc.list_value_length(partitions), 0).to_numpy(zero_copy_only=False)
        present = lengths[self.rows] > position
        starts = partitions.offsets.to_numpy()[:-1][self.rows] + position
        index = pa.array(np.where(present, starts, 0), pa.int64(), mask=~present)
        items = partitions.values.take(index)

        def child(field_id: ListField, t: pa.DataType) -> pa.Array:
            name = self.records.summary_name(field_id)
            if name is None or items.type.get_field_index(name) < 0:
                return pa.nulls(n, t)
            values = pc.struct_field(items, name)
            return values if values.type == t else values.cast(t)

        return FieldSummaries(
            present=pa.array(present, pa.bool_()),
            contains_null=child(ListField.CONTAINS_NULL, pa.bool_()),
            contains_nan=child(ListField.CONTAINS_NAN, pa.bool_()),
            lower=child(ListField.LOWER_BOUND, pa.binary()),
            upper=child(ListField.UPPER_BOUND, pa.binary()),
        )


def _absent(n: int) -> FieldSummaries:
    return FieldSummaries(
        present=pa.array(np.zeros(n, dtype=bool), pa.bool_()),
        contains_null=pa.nulls(n, pa.bool_()),
        contains_nan=pa.nulls(n, pa.bool_()),
        lower=pa.nulls(n, pa.binary()),
        upper=pa.nulls(n, pa.binary()),
    )


def _required(values: pa.Array | None, path: str, what: str) -> np.ndarray:
    """A required field as int64; a missing value is corrupt metadata, named."""
    if values is None or values.null_count:
        raise InvalidMetadata(f"{path} has an entry without required {what}.")
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)


def _count(values: pa.Array | None, n: int) -> np.ndarray:
    """An optional count as int64, null (v1: "assumed non-zero") counted as 0 here."""
    if values is None:
        return np.zeros(n, dtype=np.int64)
    return np.asarray(pc.fill_null(values, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


class ManifestListColumns:
    """A decoded manifest list: per-entry arrays, per-spec summaries, objects on demand.

    Attributes:
        records: the decoded records.
        content: ``ManifestContent`` per entry (DATA for v1 lists, as the spec says).
        spec_ids: ``partition_spec_id`` per entry.
        live_files: ``added_files_count + existing_files_count`` (nulls count as 0).
        live_rows: ``added_rows_count + existing_rows_count`` (nulls count as 0).
    """

    def __init__(self, records: ManifestListRecords) -> None:
        path, n = records.path, len(records)
        if records.format_version >= 2:
            self.content = _required(records.column(ListField.CONTENT), path, "content")
        else:
            self.content = np.full(n, int(ManifestContent.DATA), dtype=np.int64)
        self.spec_ids = _required(
            records.column(ListField.PARTITION_SPEC_ID), path, "partition_spec_id"
        )
        column = records.column
        self.live_files = _count(column(ListField.ADDED_FILES), n) + _count(
            column(ListField.EXISTING_FILES), n
        )
        self.live_rows = _count(column(ListField.ADDED_ROWS), n) + _count(
            column(ListField.EXISTING_ROWS), n
        )
        self.records = records
        self._manifests: list[ManifestFile | None] = [None] * len(records)
        self._specs: dict[tuple[int, int], SpecManifests] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.records)

    def manifest(self, index: int) -> ManifestFile:
        """Entry ``index`` as a :class:`ManifestFile`, made once."""
        found = self._manifests[index]
        if found is None:
            found = self.records.manifest_file(index)
            self._manifests[index] = found
        return found

    def manifests(self, rows: np.ndarray | None = None) -> list[ManifestFile]:
        """The entries at ``rows`` (default: all), in list order."""
        if rows is None:
            if any(m is None for m in self._manifests):
                self._manifests = list(self.records.manifest_files())
            return list(self._manifests)  # type: ignore[arg-type]
        wanted = rows.tolist()
        missing = [i for i in dict.fromkeys(wanted) if self._manifests[i] is None]
        if len(missing) > 1:  # built in one pass (see manifest_files_at)
            for i, made in zip(missing, self.records.manifest_files_at(missing), strict=True):
                self._manifests[i] = made
        return [self.manifest(i) for i in wanted]

    def spec_manifests(self, content: ManifestContent, spec_id: int) -> SpecManifests:
        """The entries of one content and spec, with their summaries (built once)."""
        key = (int(content), spec_id)
        with self._lock:
            found = self._specs.get(key)
            if found is None:
                rows = np.flatnonzero((self.content == int(content)) & (self.spec_ids == spec_id))
                found = SpecManifests(rows, self.records)
                self._specs[key] = found
            return found


def read_manifest_list_columns(
    file_io: FileIO, path: str, format_version: int | None = None
) -> ManifestListColumns:
    """Read a snapshot's manifest list for planning ("Manifest Lists").

    Raises:
        NotFound: the file does not exist.
        InvalidMetadata: the file is corrupt, truncated or misses a required field.
    """
    return ManifestListColumns(read_manifest_list_records(file_io, path, format_version))


__all__ = [
    "FieldSummaries",
    "ManifestListColumns",
    "SpecManifests",
    "read_manifest_list_columns",
]
