"""How a snapshot is laid out: snapshot → manifest list → manifests → data and delete files.

Spec "Overview" and "Manifests": a snapshot names one manifest list, which lists manifests,
which list data files and delete files. :func:`manifest_files` turns one manifest into a
small Arrow table of its live files (ADDED and EXISTING entries) with what a picture of the
table needs (content, size, rows, spec, partition in Iceberg's human form);
:func:`metadata_tree` turns those into the nodes of a tree bounded by a node budget, so a
table with 100,000 files still draws as a few thousand nodes: beyond the budget, the
smallest files of a manifest (and the smallest manifests) are folded into one node each.

Manifests are read with the columnar reader (:mod:`icecore.manifest_arrow`): a Python
object per entry costs ~8x (docs/ARCHITECTURE.md "Performance").
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from icecore.compute import one_array, pc
from icecore.errors import ValidationError
from icecore.manifest import ManifestContent, ManifestFile
from icecore.manifest_arrow import (
    RawManifest,
    live_rows,
    manifest_entries,
    manifest_tables,
    read_manifests_avro,
)
from icecore.metadata import Snapshot, TableMetadata
from icecore.partitioning import PartitionSpec
from icecore.point_in_time import At
from icecore.scan.planner import TableScan, check_specs
from icecore.schema import Schema
from icecore.types import IcebergType

if TYPE_CHECKING:
    from icecore.table_data import TableData

UNPARTITIONED = "(unpartitioned)"
"""The partition label of a file written with an unpartitioned spec."""

FILES_SCHEMA = pa.schema(
    [
        pa.field("manifest_path", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("content", pa.int8(), nullable=False),
        pa.field("file_path", pa.string(), nullable=False),
        pa.field("file_format", pa.string(), nullable=False),
        pa.field("spec_id", pa.int32(), nullable=False),
        pa.field("partition", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("file_size_in_bytes", pa.int64(), nullable=False),
    ]
)
"""One row per live file: ``content`` 0 data, 1 position deletes (a deletion vector when its
``file_format`` is ``PUFFIN``), 2 equality deletes."""

CONTENT_NAMES: Mapping[int, str] = {0: "data", 1: "position deletes", 2: "equality deletes"}
DELETION_VECTOR = "deletion vector"
"""The content name of a position delete file stored as a Puffin deletion vector (v3)."""


def content_name(content: int, file_format: str) -> str:
    """A file's content in words (deletion vectors told apart from position delete files)."""
    if content == 1 and file_format.upper() == "PUFFIN":
        return DELETION_VECTOR
    return CONTENT_NAMES.get(content, f"content {content}")


def content_masks(files: pa.Table) -> dict[str, pa.ChunkedArray]:
    """Which rows of a files table are of each kind :func:`content_name` names, as masks.

    Keys: ``data``, ``position deletes``, ``deletion vector``, ``equality deletes`` (rows
    of another content belong to none). Computed over columns, no Python call per file.
    """
    content = files.column("content")
    kind = content.type
    puffin = pc.equal(pc.utf8_upper(files.column("file_format")), "PUFFIN")
    positions = pc.equal(content, pa.scalar(1, kind))
    return {
        "data": pc.equal(content, pa.scalar(0, kind)),
        CONTENT_NAMES[1]: pc.and_(positions, pc.invert(puffin)),
        DELETION_VECTOR: pc.and_(positions, puffin),
        CONTENT_NAMES[2]: pc.equal(content, pa.scalar(2, kind)),
    }


def source_type(metadata: TableMetadata, source_id: int) -> IcebergType | None:
    """The type of a partition source column, from the newest schema that still has it.

    An old spec's source column may have been dropped from the current schema since.
    """
    for schema in sorted(metadata.schemas, key=lambda s: s.schema_id, reverse=True):
        found = schema.find_type(source_id)
        if found is not None:
            return found
    return None


def partition_label(
    metadata: TableMetadata, spec: PartitionSpec | None, partition: Mapping[int, Any]
) -> str:
    """A partition tuple as Spark prints it in paths: ``day=2024-08-01/bucket=3``.

    ``partition`` is keyed by partition field id in :mod:`icecore.values`' Python forms.
    """
    if spec is None or spec.is_unpartitioned:
        return UNPARTITIONED
    parts = []
    for pf in spec.fields:
        value = partition.get(pf.field_id)
        source = source_type(metadata, pf.source_id)
        if value is None:
            text = "null"
        elif source is not None:
            text = pf.transform.to_human_string(source, value)
        else:
            text = str(value)
        parts.append(f"{pf.name}={text}")
    return "/".join(parts)


def _python_form(values: pa.Array) -> list[Any]:
    """Arrow partition values in the Python forms transforms print (times as int units)."""
    t = values.type
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return values.cast(pa.int64()).to_pylist()
    return values.to_pylist()


def _partition_labels(
    metadata: TableMetadata, spec: PartitionSpec, partition: pa.StructArray
) -> pa.DictionaryArray:
    """Human partition labels for a column of partition structs, dictionary-encoded.

    Each field's distinct values are printed once, and each distinct tuple of them joined
    once, so a million files in 16,000 partitions print 16,000 labels, not a million. The
    dictionary holds each label once.
    """
    n = len(partition)
    if spec.is_unpartitioned or n == 0:
        return _dictionary(np.zeros(n, dtype=np.int32), [UNPARTITIONED] if n else [])
    codes = np.zeros(n, dtype=np.int64)
    texts_of: list[list[str]] = []
    for i, pf in enumerate(spec.fields):
        column = partition.field(i)
        unique = pc.unique(column)
        source = source_type(metadata, pf.source_id)
        texts = [
            "null"
            if v is None
            else (pf.transform.to_human_string(source, v) if source is not None else str(v))
            for v in _python_form(unique)
        ]
        texts_of.append([f"{pf.name}={t}" for t in texts])
        positions = pc.index_in(column, value_set=unique).to_numpy(zero_copy_only=False)
        codes = codes * len(texts) + positions
        # Renumbered densely after each field, so the combined code stays below n * values.
        combos, codes = np.unique(codes, return_inverse=True)
        codes = codes.reshape(-1)
        if i == 0:
            parts = [[int(c)] for c in combos]
        else:
            width = len(texts)
            parts = [[*parts[int(c) // width], int(c) % width] for c in combos]
    labels = ["/".join(texts_of[f][v] for f, v in enumerate(p)) for p in parts]
    distinct: dict[str, int] = {}
    remap = np.asarray([distinct.setdefault(label, len(distinct)) for label in labels], np.int32)
    return _dictionary(remap[codes], list(distinct))


def manifest_files(table: TableData, manifest: ManifestFile) -> pa.Table:
    """The live files of one manifest (ADDED and EXISTING entries), as :data:`FILES_SCHEMA`.

    Raises:
        NotFound: the manifest does not exist.
        InvalidMetadata: it is corrupt, or names a partition spec the table lacks.
    """
    live = manifest_entries(table, manifest, table.metadata.current_schema())
    return _files_table(table.metadata, manifest, live)


def _files_table(metadata: TableMetadata, manifest: ManifestFile, live: pa.Table) -> pa.Table:
    """Decoded live entries of ``manifest`` as :data:`FILES_SCHEMA`."""
    spec = metadata.spec_by_id(manifest.partition_spec_id)
    assert spec is not None  # the decoder checked it
    n = live.num_rows
    labels = _partition_labels(metadata, spec, live.column("partition").combine_chunks())
    return pa.Table.from_arrays(
        [
            _dictionary(np.zeros(n, dtype=np.int32), [manifest.manifest_path]),
            live.column("content").cast(pa.int8()),
            live.column("file_path"),
            live.column("file_format"),
            live.column("spec_id"),
            labels,
            live.column("record_count"),
            live.column("file_size_in_bytes"),
        ],
        schema=FILES_SCHEMA,
    )


def _dictionary(indices: np.ndarray, values: Sequence[str]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(
        pa.array(indices, pa.int32()), pa.array(values, pa.string())
    )


_COLUMNS = ("content", "file_path", "file_format", "spec_id", "partition")
_COUNTS = ("record_count", "file_size_in_bytes")
CHUNK_BYTES = 32 << 20
"""String columns are copied into chunks of about this size (small enough that the copying
holds little twice; an Arrow string array's offsets are 32-bit, so one chunk holds < 2 GiB)."""


def snapshot_files(table: TableData, snapshot: Snapshot | None, *, cached: bool = True) -> pa.Table:
    """Every live file of ``snapshot`` (an empty table for None), as :data:`FILES_SCHEMA`.

    Read as scan planning reads manifests (:meth:`icecore.scan.planner.TableScan.load_manifests`:
    one decode, cached in memory and on disk, in worker processes when many, progress told to
    :mod:`icecore.progress`), then laid out in columns in one pass: no Python object per
    file. ``manifest_path`` and ``partition`` are dictionary-encoded (one dictionary each for
    the whole table), since a million files share a few thousand manifests and usually far
    fewer partitions. Rows come manifest by manifest in manifest list order, each manifest's
    live entries in file order. Every column is a copy: the result holds nothing of the
    decoded manifests, and is never changed, so callers may share it.

    ``cached=False``: the manifests are decoded here, on this thread, and kept nowhere (no
    planning layout built, no cache written, no progress told): for a reader that visits
    each table once, as a catalog health worker does, where building the planning layout
    (metric pivots) and writing it out costs ~a fifth of a table's row. The answer is the
    same table.

    Raises:
        NotFound: a manifest does not exist.
        InvalidMetadata: one is corrupt, or names a partition spec the table lacks.
    """
    if snapshot is None:
        return FILES_SCHEMA.empty_table()
    manifests = table.manifests(snapshot)
    if not manifests:
        return FILES_SCHEMA.empty_table()
    at = At(snapshot_id=snapshot.snapshot_id)
    names = [*_COLUMNS, *_COUNTS]
    reads: Iterator[pa.Table]
    if cached:
        loaded = TableScan(table, at=at).load_manifests(manifests)
        reads = (pm.read(names) for pm in loaded)
    else:  # typed by the snapshot's schema, as the planner's scan of it is
        reads = _decoded_here(table, table.resolve(at).schema, manifests, names)
    columns: dict[str, list[pa.Array]] = {name: [] for name in names}
    strings = {name: _StringChunks() for name in ("file_path", "file_format")}
    sizes: list[int] = []
    for read in reads:
        sizes.append(read.num_rows)
        for name in columns:
            if name in strings:
                strings[name].add(one_array(read.column(name)))
            else:
                columns[name].append(one_array(read.column(name)))
        del read
    paths: dict[str, int] = {}
    codes = np.repeat(
        np.asarray([paths.setdefault(m.manifest_path, len(paths)) for m in manifests], np.int32),
        sizes,
    )
    return pa.Table.from_arrays(
        [
            _dictionary(codes, list(paths)),
            pa.concat_arrays(columns["content"]).cast(pa.int8()),
            strings["file_path"].done(),
            strings["file_format"].done(),
            pa.concat_arrays(columns["spec_id"]).cast(pa.int32()),
            _labels(table.metadata, manifests, columns["partition"]),
            pa.concat_arrays(columns["record_count"]).cast(pa.int64()),
            pa.concat_arrays(columns["file_size_in_bytes"]).cast(pa.int64()),
        ],
        schema=FILES_SCHEMA,
    )


DECODE_CHUNK = 64
"""Manifests decoded together by :func:`snapshot_files` with ``cached=False``: their Avro
blocks are decoded as one (:func:`~icecore.manifest_arrow.read_manifests_avro`) and their
entries converted in batches, while at most this many are held decoded at once."""


def _decoded_here(
    table: TableData, schema: Schema, manifests: Sequence[ManifestFile], names: Sequence[str]
) -> Iterator[pa.Table]:
    """The ``names`` columns of each manifest's live entries, in order, decoded here.

    The manifest entries are :func:`~icecore.manifest_arrow.manifest_tables`' (the same
    decode and inheritance the planning layout is built from), typed by ``schema`` (the
    snapshot's, as the planner's); each manifest's spec is checked before anything is read,
    as :meth:`~icecore.scan.planner.TableScan.load_manifests` checks it.
    """
    metadata = table.metadata
    check_specs(table, manifests)
    for at in range(0, len(manifests), DECODE_CHUNK):
        chunk = manifests[at : at + DECODE_CHUNK]
        out: list[pa.Table | None] = [None] * len(chunk)
        for spec_id, members in _by_spec(chunk).items():
            spec = metadata.spec_by_id(spec_id)
            assert spec is not None  # checked above
            raws: list[RawManifest] = []
            for raw in read_manifests_avro(table.io, [chunk[i] for i in members]):
                if isinstance(raw, Exception):
                    raise raw
                raws.append(raw)
            decoded = manifest_tables(raws, schema, spec, metadata.format_version)
            for i, entries in zip(members, decoded, strict=True):
                out[i] = live_rows(entries).select(list(names))
        for entries in out:
            assert entries is not None
            yield entries


class _StringChunks:
    """String arrays copied together, as they come, into chunks of about :data:`CHUNK_BYTES`.

    Each manifest's column is let go once copied, so reading a million paths holds them
    about once, not twice; and nothing of a decoded manifest is kept.
    """

    def __init__(self) -> None:
        self._chunks: list[pa.Array] = []
        self._pending: list[pa.Array] = []
        self._size = 0

    def add(self, array: pa.Array) -> None:
        self._pending.append(array)
        self._size += array.nbytes
        if self._size >= CHUNK_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._chunks.append(pa.concat_arrays(self._pending))
        self._pending, self._size = [], 0

    def done(self) -> pa.ChunkedArray:
        self._flush()
        return pa.chunked_array(self._chunks, pa.string())


def _by_spec(manifests: Sequence[ManifestFile]) -> dict[int, list[int]]:
    """The positions of ``manifests`` by partition spec id, in order."""
    found: dict[int, list[int]] = {}
    for i, m in enumerate(manifests):
        found.setdefault(m.partition_spec_id, []).append(i)
    return found


def _labels(
    metadata: TableMetadata, manifests: Sequence[ManifestFile], partitions: Sequence[pa.Array]
) -> pa.DictionaryArray:
    """Partition labels of every row, one dictionary for the table.

    The manifests of one spec are labelled together (each distinct value printed once).
    """
    by_spec = _by_spec(manifests)
    pieces: list[pa.Array | None] = [None] * len(manifests)
    for spec_id, members in by_spec.items():
        spec = metadata.spec_by_id(spec_id)
        assert spec is not None  # checked by snapshot_files
        parts = [partitions[i] for i in members]
        labels = _partition_labels(metadata, spec, pa.concat_arrays(parts))
        offset = 0
        for i, part in zip(members, parts, strict=True):
            pieces[i] = labels.slice(offset, len(part))
            offset += len(part)
    if len(by_spec) == 1:
        return labels  # one spec: already in manifest order
    # Concatenating dictionary arrays unifies their dictionaries (each label once).
    return pa.concat_arrays([p for p in pieces if p is not None])


# ---------------------------------------------------------------------------------------
# The tree


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One node of the metadata tree.

    Attributes:
        id: unique within the tree (a path, or a path with a suffix for folded nodes).
        parent: the parent's id ("" for the root).
        label: what to print on the node.
        level: ``snapshot``, ``manifest list``, ``manifest``, ``file`` or ``folded``.
        content: ``data``, ``position deletes``, ``equality deletes``, ``deletion vector``,
            ``delete manifest``/``data manifest`` for manifests, ``mixed`` above them.
        spec: the partition spec id as text ("" when it does not apply).
        partition: the partition label for files ("" otherwise, ``several`` when folded).
        bytes: file bytes under the node (live files only).
        rows: record counts under the node (delete records for delete files).
        files: live files under the node.
        path: the file, manifest or manifest list location ("" for folded nodes).
    """

    id: str
    parent: str
    label: str
    level: str
    content: str
    spec: str
    partition: str
    bytes: int
    rows: int
    files: int
    path: str = ""


@dataclass(frozen=True, slots=True)
class MetadataTree:
    """A bounded metadata tree: nodes in parent-before-child order, and what was folded.

    Attributes:
        nodes: the nodes (at most the budget).
        total_files: live files in the snapshot.
        shown_files: files drawn as their own node.
        total_manifests: manifests in the manifest list.
        shown_manifests: manifests drawn as their own node.
        budget: the node budget the tree was built for.
    """

    nodes: tuple[TreeNode, ...]
    total_files: int
    shown_files: int
    total_manifests: int
    shown_manifests: int
    budget: int
    folded: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "folded",
            self.shown_files < self.total_files or self.shown_manifests < self.total_manifests,
        )


MIN_BUDGET = 8
"""Room for the snapshot, the manifest list, a manifest, its files and the folded nodes."""


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def metadata_tree(
    snapshot: Snapshot,
    manifests: Sequence[ManifestFile],
    files: pa.Table,
    budget: int = 2000,
    size_by: str = "bytes",
) -> MetadataTree:
    """Build the snapshot → manifest list → manifests → files tree within ``budget`` nodes.

    The biggest manifests and, within each shown manifest, the biggest files (by
    ``size_by``: ``bytes`` or ``rows``) get their own node; the rest of a manifest's files
    fold into one "N more files" node, and the remaining manifests into one "N more
    manifests" node, so totals stay exact at every level.

    Args:
        snapshot: the snapshot at the root.
        manifests: its manifest list.
        files: :func:`snapshot_files` of the snapshot.
        budget: the most nodes to return (at least :data:`MIN_BUDGET`).
        size_by: which measure decides what is biggest.
    """
    if size_by not in ("bytes", "rows"):
        raise ValidationError(f"Size the tree by 'bytes' or 'rows', not {size_by!r}.")
    budget = max(budget, MIN_BUDGET)
    groups = _ManifestGroups(files)
    totals = {m.manifest_path: groups.sums(m.manifest_path) for m in manifests}
    ranked = sorted(
        manifests,
        key=lambda m: (-totals[m.manifest_path][0 if size_by == "bytes" else 1], m.manifest_path),
    )
    shown = ranked[: _manifest_room(len(manifests), files.num_rows, budget)]
    hidden = ranked[len(shown) :]
    file_room = budget - 2 - len(shown) - (1 if hidden else 0)
    per_manifest = _file_allowance([groups.count(m.manifest_path) for m in shown], file_room)

    root_id = f"snapshot {snapshot.snapshot_id}"
    list_id = snapshot.manifest_list or f"{root_id}/manifest list"
    all_bytes = sum(t[0] for t in totals.values())
    all_rows = sum(t[1] for t in totals.values())
    all_files = files.num_rows
    nodes = [
        TreeNode(root_id, "", root_id, "snapshot", "mixed", "", "", all_bytes, all_rows, all_files),
        TreeNode(
            list_id,
            root_id,
            "manifest list",
            "manifest list",
            "mixed",
            "",
            "",
            all_bytes,
            all_rows,
            all_files,
            snapshot.manifest_list or "",
        ),
    ]
    key = "file_size_in_bytes" if size_by == "bytes" else "record_count"
    shown_files = 0
    for manifest, allowance in zip(shown, per_manifest, strict=True):
        m_bytes, m_rows = totals[manifest.manifest_path]
        kind = "delete manifest" if manifest.content is ManifestContent.DELETES else "data manifest"
        group = groups.files(manifest.manifest_path)
        nodes.append(
            TreeNode(
                manifest.manifest_path,
                list_id,
                _basename(manifest.manifest_path),
                "manifest",
                kind,
                str(manifest.partition_spec_id),
                "",
                m_bytes,
                m_rows,
                group.num_rows,
                manifest.manifest_path,
            )
        )
        # Biggest first, then by path; Arrow's sort is stable, so full ties keep file order.
        order = pc.sort_indices(group, [(key, "descending"), ("file_path", "ascending")])
        n_keep = min(allowance, group.num_rows)
        if 0 < n_keep < group.num_rows:
            n_keep -= 1  # the folded node takes a slot: give up the smallest shown file for it
        kept = group.take(order.slice(0, n_keep))
        nodes.extend(_file_nodes(kept, manifest.manifest_path))
        shown_files += n_keep
        if n_keep < group.num_rows:
            rest = group.take(order.slice(n_keep))
            nodes.append(_folded_files(rest, manifest))
    if hidden:
        h_bytes = sum(totals[m.manifest_path][0] for m in hidden)
        h_rows = sum(totals[m.manifest_path][1] for m in hidden)
        h_files = sum(groups.count(m.manifest_path) for m in hidden)
        hidden_specs = {str(m.partition_spec_id) for m in hidden}
        nodes.append(
            TreeNode(
                f"{list_id}#more",
                list_id,
                f"{len(hidden):,} more manifests",
                "folded",
                "mixed",
                hidden_specs.pop() if len(hidden_specs) == 1 else "several",
                "several",
                h_bytes,
                h_rows,
                h_files,
            )
        )
    return MetadataTree(
        nodes=tuple(nodes),
        total_files=all_files,
        shown_files=shown_files,
        total_manifests=len(manifests),
        shown_manifests=len(shown),
        budget=budget,
    )


_FILE_COLUMNS = (
    "file_path",
    "content",
    "file_format",
    "spec_id",
    "partition",
    "record_count",
    "file_size_in_bytes",
)


def _file_nodes(kept: pa.Table, manifest_path: str) -> list[TreeNode]:
    """A node for each of the files drawn on their own (a few thousand at most)."""
    return [
        TreeNode(
            path,
            manifest_path,
            _basename(path),
            "file",
            content_name(content, file_format),
            str(spec),
            partition,
            size,
            rows,
            1,
            path,
        )
        for path, content, file_format, spec, partition, rows, size in zip(
            *(kept.column(c).to_pylist() for c in _FILE_COLUMNS), strict=True
        )
    ]


def _folded_files(rest: pa.Table, manifest: ManifestFile) -> TreeNode:
    """The "N more files" node of a manifest: its files not drawn on their own."""
    kinds = (
        pa.table({"c": rest.column("content"), "f": rest.column("file_format")})
        .group_by(["c", "f"])
        .aggregate([])
    )
    contents = {
        content_name(c, f)
        for c, f in zip(kinds.column("c").to_pylist(), kinds.column("f").to_pylist(), strict=True)
    }
    partitions = set(pc.unique(rest.column("partition").combine_chunks()).to_pylist())
    return TreeNode(
        f"{manifest.manifest_path}#more",
        manifest.manifest_path,
        f"{rest.num_rows:,} more files",
        "folded",
        contents.pop() if len(contents) == 1 else "mixed",
        str(manifest.partition_spec_id),
        partitions.pop() if len(partitions) == 1 else "several",
        total(rest.column("file_size_in_bytes")),
        total(rest.column("record_count")),
        rest.num_rows,
    )


def total(values: pa.ChunkedArray | pa.Array) -> int:
    """The exact integer sum of a column (a mask: how many rows it selects); 0 when empty."""
    found = pc.sum(values).as_py()
    return int(found) if found is not None else 0


class _ManifestGroups:
    """The files of each manifest, found by columns (no Python object per file).

    Rows are ordered by manifest once (a stable sort, so each manifest keeps its file
    order) and each manifest's bytes and rows summed in one group-by.
    """

    def __init__(self, files: pa.Table) -> None:
        # One code per distinct path: snapshot_files' dictionary as it is (no string per
        # file), re-encoded only when a dictionary repeats a value.
        encoded = files.column("manifest_path").combine_chunks()
        if not pa.types.is_dictionary(encoded.type) or len(pc.unique(encoded.dictionary)) < len(
            encoded.dictionary
        ):
            encoded = pc.dictionary_encode(encoded.cast(pa.string()))
        codes = encoded.indices
        paths = encoded.dictionary.to_pylist()
        chosen = files.select(list(_FILE_COLUMNS))
        numbers = codes.to_numpy(zero_copy_only=False)
        # Files come manifest by manifest (snapshot_files' order): then slices need no copy.
        grouped = bool(np.all(numbers[1:] >= numbers[:-1]))
        self._files = chosen if grouped else chosen.take(pc.sort_indices(codes))
        sums = (
            pa.table(
                {
                    "m": codes,
                    "b": files.column("file_size_in_bytes").combine_chunks(),
                    "r": files.column("record_count").combine_chunks(),
                }
            )
            .group_by(["m"])
            .aggregate([("b", "sum"), ("r", "sum"), ("m", "count")])
        )
        found: dict[int, tuple[int, int, int]] = {
            m: (b, r, n)
            for m, b, r, n in zip(
                *(sums.column(c).to_pylist() for c in ("m", "b_sum", "r_sum", "m_count")),
                strict=True,
            )
        }
        self._at: dict[str, tuple[int, int, int, int]] = {}
        start = 0
        for code, path in enumerate(paths):
            b, r, n = found.get(code, (0, 0, 0))
            self._at[path] = (start, n, b, r)
            start += n

    def count(self, path: str) -> int:
        """Live files of the manifest."""
        found = self._at.get(path)
        return found[1] if found is not None else 0

    def sums(self, path: str) -> tuple[int, int]:
        """The manifest's live bytes and rows."""
        found = self._at.get(path)
        return (found[2], found[3]) if found is not None else (0, 0)

    def files(self, path: str) -> pa.Table:
        """The manifest's files, in file order."""
        start, n, _, _ = self._at.get(path, (0, 0, 0, 0))
        return self._files.slice(start, n)


def _manifest_room(manifests: int, files: int, budget: int) -> int:
    """How many manifests get their own node.

    All of them when the whole tree fits. Otherwise each shown manifest should keep room
    for ``k`` of its files plus a folded node, with ``k`` the average files per manifest
    but at most the square root of the budget: a 2,000-node tree of 1,000 manifests of 100
    files shows 44 manifests with 43 files each rather than 997 manifests with none.
    The "N more manifests" node takes one slot when some are hidden.
    """
    if 2 + manifests + files <= budget:
        return manifests
    average = -(-files // manifests) if manifests else 0
    k = max(1, min(average, math.isqrt(budget)))
    room = max(1, (budget - 3) // (k + 2))
    return manifests if manifests <= room else room


def _file_allowance(counts: Sequence[int], room: int) -> list[int]:
    """How many file nodes each manifest may show, sharing ``room`` fairly.

    Small manifests take what they need; what they leave is shared among the bigger ones.
    """
    allowance = [0] * len(counts)
    pending = sorted(range(len(counts)), key=lambda i: counts[i])
    left = max(room, 0)
    while pending:
        share = left // len(pending)
        i = pending.pop(0)
        take = min(counts[i], share)
        allowance[i] = take
        left -= take
    return allowance


__all__ = [
    "CONTENT_NAMES",
    "DELETION_VECTOR",
    "FILES_SCHEMA",
    "MIN_BUDGET",
    "UNPARTITIONED",
    "MetadataTree",
    "TreeNode",
    "content_masks",
    "content_name",
    "manifest_files",
    "metadata_tree",
    "partition_label",
    "snapshot_files",
    "source_type",
]
