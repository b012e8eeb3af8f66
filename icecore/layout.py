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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from icecore.compute import pc
from icecore.errors import ValidationError
from icecore.manifest import ManifestContent, ManifestFile
from icecore.manifest_arrow import live_files, manifest_entries
from icecore.metadata import Snapshot, TableMetadata
from icecore.partitioning import PartitionSpec
from icecore.types import IcebergType

if TYPE_CHECKING:
    from icecore.table_data import TableData

UNPARTITIONED = "(unpartitioned)"
"""The partition label of a file written with an unpartitioned spec."""

FILES_SCHEMA = pa.schema(
    [
        pa.field("manifest_path", pa.string(), nullable=False),
        pa.field("content", pa.int8(), nullable=False),
        pa.field("file_path", pa.string(), nullable=False),
        pa.field("file_format", pa.string(), nullable=False),
        pa.field("spec_id", pa.int32(), nullable=False),
        pa.field("partition", pa.string(), nullable=False),
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
) -> pa.Array:
    """Human partition labels for a column of partition structs, one Python call per value.

    Each field's distinct values are printed once and spread back with ``take``, so a
    manifest of 100,000 files with 50 distinct days prints 50 dates, not 100,000.
    """
    n = len(partition)
    if spec.is_unpartitioned or n == 0:
        return pa.array([UNPARTITIONED] * n, pa.string())
    pieces: list[pa.Array] = []
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
        labels = pa.array([f"{pf.name}={t}" for t in texts], pa.string())
        pieces.append(labels.take(pc.index_in(column, value_set=unique)))
    if len(pieces) == 1:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, "/")


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
            pa.array([manifest.manifest_path] * n, pa.string()),
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


Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each manifest is read."""


def snapshot_files(
    table: TableData,
    snapshot: Snapshot | None,
    progress: Progress | None = None,
    read: Callable[[ManifestFile], pa.Table] | None = None,
) -> pa.Table:
    """Every live file of ``snapshot`` (an empty table for None), manifest by manifest.

    Files are listed by :func:`icecore.manifest_arrow.live_files`, as everywhere else.

    Args:
        table: the table.
        snapshot: the snapshot whose manifest list to walk.
        progress: told after each manifest, for a progress bar.
        read: how to read one manifest (default :func:`manifest_files`); the app passes a
            cached reader, since manifests never change once written.
    """
    if snapshot is None:
        return FILES_SCHEMA.empty_table()
    if read is None:
        schema = table.metadata.current_schema()
        decoded = live_files(table, snapshot, schema, progress=progress)
        parts = [_files_table(table.metadata, m, live) for m, live in decoded]
    else:
        manifests = table.manifests(snapshot)
        parts = []
        for done, manifest in enumerate(manifests, start=1):
            parts.append(read(manifest))
            if progress is not None:
                progress(done, len(manifests))
    return pa.concat_tables(parts) if parts else FILES_SCHEMA.empty_table()


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
    by_manifest = _group_files(files)
    totals = {
        m.manifest_path: _sums(by_manifest.get(m.manifest_path, _EMPTY_GROUP)) for m in manifests
    }
    ranked = sorted(
        manifests,
        key=lambda m: (-totals[m.manifest_path][0 if size_by == "bytes" else 1], m.manifest_path),
    )
    shown = ranked[: _manifest_room(len(manifests), files.num_rows, budget)]
    hidden = ranked[len(shown) :]
    file_room = budget - 2 - len(shown) - (1 if hidden else 0)
    per_manifest = _file_allowance(
        [len(by_manifest.get(m.manifest_path, _EMPTY_GROUP)[0]) for m in shown], file_room
    )

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
    shown_files = 0
    for manifest, allowance in zip(shown, per_manifest, strict=True):
        group = by_manifest.get(manifest.manifest_path, _EMPTY_GROUP)
        m_bytes, m_rows = totals[manifest.manifest_path]
        kind = "delete manifest" if manifest.content is ManifestContent.DELETES else "data manifest"
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
                len(group[0]),
                manifest.manifest_path,
            )
        )
        paths, contents, formats, specs, partitions, rows, sizes = group
        key = sizes if size_by == "bytes" else rows
        order = sorted(range(len(paths)), key=lambda i: (-key[i], paths[i]))
        keep, rest = order[:allowance], order[allowance:]
        if rest and keep:
            # The folded node takes a slot: give up the smallest shown file for it.
            keep, rest = keep[:-1], [keep[-1], *rest]
        for i in keep:
            nodes.append(
                TreeNode(
                    paths[i],
                    manifest.manifest_path,
                    _basename(paths[i]),
                    "file",
                    content_name(contents[i], formats[i]),
                    str(specs[i]),
                    partitions[i],
                    sizes[i],
                    rows[i],
                    1,
                    paths[i],
                )
            )
        shown_files += len(keep)
        if rest:
            rest_contents = {content_name(contents[i], formats[i]) for i in rest}
            rest_partitions = {partitions[i] for i in rest}
            nodes.append(
                TreeNode(
                    f"{manifest.manifest_path}#more",
                    manifest.manifest_path,
                    f"{len(rest):,} more files",
                    "folded",
                    rest_contents.pop() if len(rest_contents) == 1 else "mixed",
                    str(manifest.partition_spec_id),
                    rest_partitions.pop() if len(rest_partitions) == 1 else "several",
                    sum(sizes[i] for i in rest),
                    sum(rows[i] for i in rest),
                    len(rest),
                )
            )
    if hidden:
        h_bytes = sum(totals[m.manifest_path][0] for m in hidden)
        h_rows = sum(totals[m.manifest_path][1] for m in hidden)
        h_files = sum(len(by_manifest.get(m.manifest_path, _EMPTY_GROUP)[0]) for m in hidden)
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


_Group = tuple[list[str], list[int], list[str], list[int], list[str], list[int], list[int]]
_EMPTY_GROUP: _Group = ([], [], [], [], [], [], [])


def _group_files(files: pa.Table) -> dict[str, _Group]:
    """Column lists of the files of each manifest, in file order."""
    groups: dict[str, _Group] = {}
    columns = [
        files.column(name).to_pylist()
        for name in (
            "manifest_path",
            "file_path",
            "content",
            "file_format",
            "spec_id",
            "partition",
            "record_count",
            "file_size_in_bytes",
        )
    ]
    for manifest, *values in zip(*columns, strict=True):
        group = groups.get(manifest)
        if group is None:
            group = groups[manifest] = ([], [], [], [], [], [], [])
        for target, value in zip(group, values, strict=True):
            cast(list[Any], target).append(value)
    return groups


def _sums(group: _Group) -> tuple[int, int]:
    return sum(group[6]), sum(group[5])


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
    "content_name",
    "manifest_files",
    "metadata_tree",
    "partition_label",
    "snapshot_files",
    "source_type",
]
