"""A manifest decoded once into the columns scan planning reads, keyed for reuse.

Spec "Manifests": a manifest never changes once written, so its decoded form can be reused
by every later plan (docs/ARCHITECTURE.md "Performance": decoding is most of a cold plan). A
:class:`PlanningManifest` holds the *live* entries (ADDED and EXISTING, "Scan Planning") of
one manifest as Arrow columns, laid out for vectorized pruning:

- the entry and ``data_file`` columns of :func:`icecore.manifest_arrow.output_schema`
  except the six metrics maps;
- each metrics map pivoted into one column per field id, ``<map>:<field id>`` (int64 counts,
  binary Appendix D bounds), plus ``has:<map>`` telling a missing map from an empty one, so a
  filter on one column touches that column's metrics only;
- ``_pcode``: the index of each row's partition tuple in :attr:`PlanningManifest.partitions`
  (distinct tuples, compared by their exact bits: ``-0.0`` and ``0.0`` stay apart), so a
  partition predicate is evaluated once per distinct tuple, not once per file.

:mod:`icecore.scan.manifest_cache` keeps these in memory and on local disk.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from icecore.compute import one_array, pc
from icecore.errors import InvalidMetadata
from icecore.manifest import ManifestEntry, ManifestEntryStatus
from icecore.manifest_arrow import (
    MAP_COLUMNS,
    RawManifest,
    entries_from_arrow,
    manifest_batches,
    partition_columns,
)
from icecore.partitioning import PartitionSpec
from icecore.scan.delete_index import partition_value_key
from icecore.schema import Schema

CODE_COLUMN = "_pcode"
FIRSTS_KEY = b"icecore.partition_firsts"
"""Schema metadata: the first row of each distinct partition tuple (JSON list)."""

_I32, _I64 = pa.int32(), pa.int64()


def metric_column(kind: str, field_id: int) -> str:
    """The column holding map ``kind``'s value for ``field_id`` (e.g. ``lower_bounds:3``)."""
    return f"{kind}:{field_id}"


def presence_column(kind: str) -> str:
    """The column telling whether the map ``kind`` was written for the file."""
    return f"has:{kind}"


class ColumnSource(Protocol):
    """Where a planning manifest's columns come from: memory, or a cache file read in part."""

    @property
    def schema(self) -> pa.Schema:
        """The columns (with the layout's schema metadata)."""
        ...

    @property
    def num_rows(self) -> int:
        """Live entries."""
        ...

    def has(self, name: str) -> bool:
        """Whether the source has a column of that name."""
        ...

    @property
    def nbytes(self) -> int:
        """Bytes held in memory by the source itself."""
        ...

    def read(self, names: Sequence[str]) -> pa.Table:
        """The named columns (all rows)."""
        ...

    def take(self, rows: pa.Array) -> pa.Table:
        """Every column of the given rows."""
        ...


@dataclass(frozen=True, slots=True)
class TableSource:
    """Columns held in memory (a manifest just decoded, or a cache without a directory)."""

    table: pa.Table
    size: int | None = None
    """Bytes of the table when known (a slice of a batch: its share of the batch's bytes)."""
    batch: pa.Table | None = None
    """The table of every manifest built together with this one (:func:`build_planning_manifests`),
    of which :attr:`table` is rows ``offset:offset + num_rows`` (less the metric columns this
    manifest lacks): the disk cache writes a batch as one file."""
    offset: int = 0
    """Where :attr:`table`'s rows start in :attr:`batch`."""

    @property
    def schema(self) -> pa.Schema:
        """The table's schema."""
        return self.table.schema

    @property
    def num_rows(self) -> int:
        """Rows of the table."""
        return int(self.table.num_rows)

    @property
    def nbytes(self) -> int:
        """Bytes of the table (asked for several times per manifest; a slice's costs ~1 ms)."""
        return int(self.table.nbytes) if self.size is None else self.size

    def has(self, name: str) -> bool:
        """Whether the table has a column of that name."""
        return self.table.schema.get_field_index(name) >= 0

    def read(self, names: Sequence[str]) -> pa.Table:
        """The named columns, without copying."""
        return self.table.select(list(names))

    def take(self, rows: pa.Array) -> pa.Table:
        """Every column of the given rows."""
        return self.table.take(rows)


@dataclass(frozen=True, slots=True)
class PlanningManifest:
    """The live entries of one manifest, in planning layout (see the module docstring).

    Nothing read from :attr:`source` is kept between plans: a plan reads the columns its
    filter needs, judges them and lets them go, and what it concluded is cached instead
    (:mod:`icecore.scan.planner`), so the memory a plan leaves behind does not grow with the
    columns it read (docs/ARCHITECTURE.md "Performance": memory at 1,000,000 files).

    Attributes:
        path: the manifest's path (for reports).
        spec_id: the partition spec the manifest was written with.
        source: where the columns come from.
        codes: per row, the index of its partition tuple (see :meth:`distinct_partitions`).
    """

    path: str
    spec_id: int
    source: ColumnSource
    codes: np.ndarray

    def with_source(self, source: ColumnSource) -> PlanningManifest:
        """The same manifest read from another source (its cache file, once written)."""
        return PlanningManifest(self.path, self.spec_id, source, self.codes)

    @property
    def num_rows(self) -> int:
        """Live entries in the manifest."""
        return self.source.num_rows

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (the source's and the partition codes)."""
        return self.source.nbytes + int(self.codes.nbytes)

    def read(self, names: Sequence[str]) -> pa.Table:
        """Those of the named columns the manifest has, each as one chunk (in one read)."""
        has = self.source.has
        return self.source.read([n for n in dict.fromkeys(names) if has(n)])

    def required(self, name: str) -> pa.Array:
        """A column every planning manifest has (``record_count``, ``file_path``, ...)."""
        if not self.source.has(name):
            raise InvalidMetadata(f"The decoded manifest {self.path} lacks column {name}.")
        return one_array(self.source.read([name]).column(0))

    def distinct_partitions(
        self, partition: pa.Array
    ) -> tuple[list[dict[int, Any]], list[tuple[Any, ...]]]:
        """The distinct partition tuples that :attr:`codes` index, with a key each.

        Tuples are keyed by partition field id; each key is hashable and bit-exact (for
        caching verdicts). ``partition`` is the manifest's ``partition`` column.
        """
        return batch_distinct_partitions([(self, partition)])[0]

    def partition_firsts(self) -> list[int]:
        """Per distinct partition tuple, the first row holding it (:attr:`codes` index them)."""
        return list(json.loads((self.source.schema.metadata or {}).get(FIRSTS_KEY, b"[]")))

    def entries(self, rows: Sequence[int] | np.ndarray) -> list[ManifestEntry]:
        """The :class:`ManifestEntry` objects of the given rows, maps rebuilt from pivots."""
        indices = pa.array(np.asarray(rows, dtype=np.int64), _I64)
        taken = self.source.take(indices)
        maps: dict[str, list[dict[int, Any] | None]] = {}
        for kind in MAP_COLUMNS:
            present = taken.column(presence_column(kind)).to_pylist()
            prefix = f"{kind}:"
            pivots = [
                (int(name[len(prefix) :]), taken.column(name).to_pylist())
                for name in taken.column_names
                if name.startswith(prefix)
            ]
            maps[kind] = [
                {fid: values[i] for fid, values in pivots if values[i] is not None}
                if present[i]
                else None
                for i in range(len(present))
            ]
        return entries_from_arrow(taken, self.spec_id, maps)


def build_planning_manifest(decoded: pa.Table, path: str, spec_id: int) -> PlanningManifest:
    """The planning layout of a manifest decoded by :func:`read_manifest_arrow`."""
    (built,) = build_planning_manifests(decoded, (0, decoded.num_rows), (path,), spec_id)
    return built


def build_planning_manifests(
    decoded: pa.Table, offsets: Sequence[int], paths: Sequence[str], spec_id: int
) -> list[PlanningManifest]:
    """The planning layout of several manifests decoded together, one after another.

    Manifest ``i`` is rows ``offsets[i]:offsets[i + 1]`` of ``decoded`` (a
    :class:`~icecore.manifest_arrow.DecodedBatch`). The layout is built once for all of them
    and sliced (zero-copy); each slice is exactly what the manifest alone would give: its
    live rows, only the metric columns some of its rows have, its own partition codes.
    """
    bounds = np.asarray(offsets, dtype=np.int64)
    status = one_array(decoded.column("status")).to_numpy(zero_copy_only=False)
    deleted = status == int(ManifestEntryStatus.DELETED)
    if deleted.any():
        live = decoded.filter(pa.array(~deleted))
        kept = np.concatenate(([0], np.cumsum(~deleted)))
        bounds = kept[bounds]
    else:
        live = decoded
    sizes = np.diff(bounds)
    names: list[str] = []
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    sparse: list[tuple[str, np.ndarray]] = []  # metric columns some manifests lack
    for f in live.schema:
        if f.name in MAP_COLUMNS:
            continue
        names.append(f.name)
        arrays.append(one_array(live.column(f.name)))
        fields.append(f)
    for kind in MAP_COLUMNS:
        values = one_array(live.column(kind))
        fields.append(pa.field(presence_column(kind), pa.bool_()))
        arrays.append(pc.is_valid(values))
        for fid, column in _pivot(values):
            name = metric_column(kind, fid)
            fields.append(pa.field(name, column.type))
            arrays.append(column)
            if column.null_count:
                valid = column.is_valid().to_numpy(zero_copy_only=False)
                counts = np.add.reduceat(valid, np.minimum(bounds[:-1], max(len(valid) - 1, 0)))
                has = np.where(sizes > 0, counts, 0) > 0
                if not has.all():
                    sparse.append((name, has))
    partition = one_array(live.column("partition"))
    keys = _partition_keys(partition)
    codes = np.zeros(len(keys), dtype=np.int32)
    firsts: list[list[int]] = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        part_codes, part_firsts = _codes(keys[lo:hi])
        codes[lo:hi] = part_codes
        firsts.append(part_firsts)
    fields.append(pa.field(CODE_COLUMN, _I32))
    arrays.append(pa.array(codes, _I32))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    total = int(table.nbytes)
    out: list[PlanningManifest] = []
    for i, path in enumerate(paths):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        part = table.slice(lo, hi - lo)
        if hi == lo:  # no live entries: no metric columns at all, as a lone manifest has
            part = part.select([n for n in part.column_names if not _is_metric(n)])
        else:
            lacking = [name for name, has in sparse if not has[i]]
            if lacking:
                part = part.drop_columns(lacking)
        part = part.replace_schema_metadata({FIRSTS_KEY: json.dumps(firsts[i]).encode()})
        size = (total * (hi - lo)) // max(len(codes), 1)
        source = TableSource(part, size, table, lo)
        out.append(PlanningManifest(path, spec_id, source, codes[lo:hi]))
    return out


def planning_manifests(
    raws: Sequence[RawManifest], schema: Schema, spec: PartitionSpec, format_version: int
) -> list[PlanningManifest]:
    """The planning layout of many read manifests of one spec, converted in batches.

    Each is exactly :func:`build_planning_manifest` of :func:`manifest_table`; errors are
    theirs too (see :func:`~icecore.manifest_arrow.manifest_batches`).
    """
    out: list[PlanningManifest | None] = [None] * len(raws)
    for batch in manifest_batches(raws, schema, spec, format_version):
        paths = [m.manifest_path for m in batch.manifests]
        built = build_planning_manifests(batch.table, batch.offsets, paths, spec.spec_id)
        for i, pm in zip(batch.indices, built, strict=True):
            out[i] = pm
    return [pm for pm in out if pm is not None]


def planning_manifest_from_source(
    source: ColumnSource, path: str, spec_id: int
) -> PlanningManifest:
    """Wrap planning-layout columns (built here, or a file of the disk cache)."""
    metadata = source.schema.metadata or {}
    if CODE_COLUMN not in source.schema.names or FIRSTS_KEY not in metadata:
        raise InvalidMetadata(f"The decoded manifest {path} is not in planning layout.")
    codes = one_array(source.read([CODE_COLUMN]).column(CODE_COLUMN)).to_numpy()
    return PlanningManifest(path, spec_id, source, codes)


def _is_metric(name: str) -> bool:
    """Whether a column is a pivoted metrics map value (``<map>:<field id>``)."""
    kind, colon, _ = name.partition(":")
    return bool(colon) and kind in MAP_COLUMNS


_PLAIN = frozenset({int, str, type(None), dt.date, dt.datetime, dt.time, Decimal, bytes})
"""Types whose values are their own exact key (:func:`partition_value_key` returns them)."""

_Distinct = tuple[list[dict[int, Any]], list[tuple[Any, ...]]]


def _python_tuples(ids: list[int], columns: list[list[Any]]) -> _Distinct:
    """Partition tuples from their columns' Python values: dicts by field id, and exact keys.

    A key is ``(field id, type name, exact value key)`` per field: equal only for identical
    tuples (floats by bits, NaN equal to itself).
    """
    partitions = [dict(zip(ids, values, strict=True)) for values in zip(*columns, strict=True)]
    keyed = [
        [(fid, type(v).__name__, v if type(v) in _PLAIN else partition_value_key(v)) for v in c]
        for fid, c in zip(ids, columns, strict=True)
    ]
    return partitions, list(zip(*keyed, strict=True))


def batch_distinct_partitions(
    items: Sequence[tuple[PlanningManifest, pa.Array]],
) -> tuple[_Distinct, list[np.ndarray]]:
    """The distinct partition tuples of manifests of one type, and where each one's are.

    A restarted plan of a million files judged 36,000 per-manifest tuples (18 in each of
    2,000 manifests) that were ~5,000 different ones; making a dict and a key of each cost
    ~0.25 s. Here the tuples of all the manifests are coded together in Arrow (bit-exact, as
    :func:`_partition_keys` codes a manifest's), and only the different ones become Python
    values. Manifest ``i``'s :attr:`PlanningManifest.partitions` tuple ``j`` is tuple
    ``where[i][j]`` of the answer.
    """
    rows: list[int] = []
    counts: list[int] = []
    parts: list[pa.Array] = []
    offset = 0
    for pm, partition in items:
        if isinstance(partition, pa.ChunkedArray):
            partition = partition.combine_chunks()
        firsts = pm.partition_firsts()
        rows.extend(f + offset for f in firsts)
        counts.append(len(firsts))
        parts.append(partition)
        offset += len(partition)
    if not rows:
        return ([], []), [np.zeros(0, dtype=np.int64) for _ in items]
    taken = pa.concat_arrays(parts).take(pa.array(rows, _I64))
    inverse, firsts = _codes(_partition_keys(taken))
    ids, columns = partition_columns(taken.take(pa.array(firsts, _I64)))
    distinct = _python_tuples(ids, columns) if ids else ([{} for _ in firsts], [() for _ in firsts])
    bounds = np.cumsum([0, *counts])
    where = [inverse[bounds[i] : bounds[i + 1]] for i in range(len(items))]
    return distinct, where


def _pivot(values: pa.MapArray) -> list[tuple[int, pa.Array]]:
    """One column per map key: the value of that key in each row's map (null when absent).

    Writers put the same keys in the same order in every map of a manifest; that layout is
    read by strided slicing, any other by scattering (the last duplicate key wins, as
    ``dict`` does).
    """
    n = len(values)
    if n == 0:
        return []
    offsets = values.offsets.to_numpy()
    start, stop = int(offsets[0]), int(offsets[-1])
    keys = values.keys.slice(start, stop - start).to_numpy(zero_copy_only=False)
    items = values.items.slice(start, stop - start)
    if len(keys) == 0:
        return []
    lengths = np.diff(offsets)
    if values.null_count:  # a null map may still span entries; they are not its values
        lengths = np.where(values.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    width = int(lengths[0])
    if (
        width > 0
        and not values.null_count
        and bool((lengths == width).all())
        and len(np.unique(keys[:width])) == width
        and bool((keys.reshape(n, width) == keys[:width]).all())
    ):
        if items.null_count == 0 and pa.types.is_integer(items.type):
            # Counts: a strided numpy copy per key (an Arrow take cost ~0.3 ms a manifest).
            grid = items.to_numpy().reshape(n, width)
            return [
                (int(fid), pa.array(np.ascontiguousarray(grid[:, j]), items.type))
                for j, fid in enumerate(keys[:width])
            ]
        by_key = np.arange(n * width, dtype=np.int64).reshape(n, width).T.ravel()
        grouped = items.take(pa.array(by_key))
        return [(int(fid), grouped.slice(j * n, n)) for j, fid in enumerate(keys[:width])]
    parents = np.repeat(np.arange(n), np.diff(offsets))
    valid = np.repeat(np.asarray(lengths > 0), np.diff(offsets))
    keys = np.where(valid, keys, np.iinfo(np.int64).min)
    out: list[tuple[int, pa.Array]] = []
    for fid in np.unique(keys[valid]):
        where = np.flatnonzero(keys == fid)
        positions = np.full(n, -1, dtype=np.int64)
        positions[parents[where]] = where
        out.append((int(fid), items.take(pa.array(positions, mask=positions < 0))))
    return out


def _partition_keys(partition: pa.StructArray) -> np.ndarray:
    """Per row, a number equal for equal partition tuples (bit-exact) and only for them."""
    n = len(partition)
    combined = np.zeros(n, dtype=np.int64)
    if n == 0:
        return combined
    for i in range(partition.type.num_fields):
        child = pc.struct_field(partition, [i])
        if pa.types.is_floating(child.type):
            child = _float_bits(child)
        encoded = pc.dictionary_encode(child, null_encoding="encode")
        size = max(len(encoded.dictionary), 1)
        combined = combined * size + encoded.indices.to_numpy(zero_copy_only=False)
        combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)  # < n
    return combined


def _codes(combined: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Codes numbered in order of first appearance, and the first row of each."""
    if len(combined) == 0:
        return np.zeros(0, dtype=np.int32), []
    _, firsts, codes = np.unique(combined, return_index=True, return_inverse=True)
    order = np.argsort(firsts, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes].astype(np.int32), [int(i) for i in firsts[order]]


def _float_bits(values: pa.Array) -> pa.Array:
    """Floats as their bit patterns, so that -0.0 and 0.0 (and NaN payloads) stay apart."""
    as_double = values.cast(pa.float64())
    bits = np.asarray(as_double.fill_null(0.0).to_numpy(), dtype=np.float64).view(np.int64)
    return pa.array(bits, _I64, mask=as_double.is_null().to_numpy(zero_copy_only=False))


__all__ = [
    "CODE_COLUMN",
    "FIRSTS_KEY",
    "PlanningManifest",
    "build_planning_manifest",
    "build_planning_manifests",
    "metric_column",
    "ColumnSource",
    "TableSource",
    "planning_manifest_from_source",
    "planning_manifests",
    "presence_column",
]
