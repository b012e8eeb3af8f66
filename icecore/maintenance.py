"""Maintenance recommendations: each health finding, the Spark job that fixes it, and its effect.

The effect is estimated from metadata alone (manifest lists, manifests, a listing of the table
location), never by reading data, so the Maintenance page can show it before anything runs.
The rules are the ones Spark's Iceberg procedures apply by default (Iceberg 1.10):

* ``rewrite_data_files`` (bin-pack) rewrites, per partition, the data files outside
  [75%, 180%] of ``write.target-file-size-bytes`` when a partition has at least
  ``min-input-files`` (5) of them or more than a target's worth of bytes;
* ``rewrite_position_delete_files`` does the same for position delete files;
* ``rewrite_manifests`` packs each spec's data manifests into
  ``commit.manifest.target-size-bytes`` sized ones;
* ``expire_snapshots`` removes what :func:`icecore.health.snapshots_to_expire` says (the
  spec's "Snapshot Retention Policy"), and the files only those snapshots reach;
* ``remove_orphan_files`` deletes files under the table location that no metadata reaches
  (every snapshot's manifest list, manifests, data and delete files, statistics files, the
  metadata log, the current metadata and ``version-hint.text``) and that are older than its
  ``older_than`` (three days by default).

The job itself is ``python -m pipeline.maintenance JOB TABLE [options]`` (docs/ARCHITECTURE.md
"Contracts"); :attr:`Recommendation.options` are its options.
"""

from __future__ import annotations

import datetime as dt
import math
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icecore import health
from icecore.compute import pc
from icecore.fan_out import SHUFFLE_PARTITIONS, fan_out, refines
from icecore.fan_out import splits as fan_out_splits
from icecore.health import Finding, Status, format_bytes
from icecore.io import FileInfo, normalize_path
from icecore.layout import DELETION_VECTOR, content_masks, content_name, total
from icecore.lru import LRU
from icecore.manifest import ManifestContent, ManifestFile
from icecore.metadata import Snapshot, TableMetadata
from icecore.progress import listening, report
from icecore.scan.planner import TableScan
from icecore.values import whole_number

if TYPE_CHECKING:
    from icecore.table_data import TableData


class Job(StrEnum):
    """The maintenance jobs, named as Spark's Iceberg procedures are."""

    REWRITE_DATA_FILES = "rewrite_data_files"
    REWRITE_POSITION_DELETE_FILES = "rewrite_position_delete_files"
    REWRITE_MANIFESTS = "rewrite_manifests"
    EXPIRE_SNAPSHOTS = "expire_snapshots"
    REMOVE_ORPHAN_FILES = "remove_orphan_files"


MAX_FILE_RATIO = 1.8
"""``rewrite_data_files``' default max-file-size-bytes, as a share of the target size."""
ORPHAN_MIN_AGE_MS = 3 * 24 * 3600 * 1000
"""``remove_orphan_files`` keeps files younger than this by default (a write in flight)."""
VERSION_HINT = "metadata/version-hint.text"

Number = int | float | str
EstimateValue = int | tuple[int, int]
"""An estimated count or size, or a ``(low, high)`` range of one (serialized as a list)."""


@dataclass(frozen=True, slots=True)
class Recommendation:
    """A job worth running (or not), why, and what it would change.

    Attributes:
        job: the job that applies it.
        status: warn when the job pays off now, ok when there is nothing to do.
        title: a few words.
        reason: one sentence (the health finding's, where one exists).
        evidence: the numbers behind the reason.
        estimate: the estimated effect, keyed like the job's JSON result where one matches.
        options: the job's command-line options beyond JOB and TABLE.
        force_reason: why the job would make the table worse (one sentence), when it
            would: the job then runs only when forced (``--force``, the page's force box).
        spec_changes: a coarser partition spec to make first (``icecore evolve TABLE
            --spec-change LINE ...``), when the table is over-partitioned.
    """

    job: Job
    status: Status
    title: str
    reason: str
    evidence: tuple[tuple[str, Number], ...]
    estimate: Mapping[str, EstimateValue] = field(default_factory=dict)
    options: tuple[str, ...] = ()
    force_reason: str | None = None
    spec_changes: tuple[str, ...] = ()

    def command(self, table: str, *, dry_run: bool = False) -> list[str]:
        """The job's argument list after ``python -m pipeline.maintenance``."""
        return [str(self.job), table, *self.options, *(["--dry-run"] if dry_run else [])]


def _rows(files: pa.Table, *columns: str) -> Iterator[tuple[Any, ...]]:
    """Rows of a files table (:data:`icecore.layout.FILES_SCHEMA`) as tuples of ``columns``."""
    return zip(*(files.column(c).to_pylist() for c in columns), strict=True)


@dataclass(frozen=True, slots=True)
class _Rewritten:
    """A partition a bin-pack rewrite acts on.

    Attributes:
        key: (spec id, partition label).
        files: files in the partition.
        picked: how many of them the rewrite takes.
        picked_bytes: their bytes.
        picked_records: their records (before deletes).
    """

    key: tuple[int, str]
    files: int
    picked: int
    picked_bytes: int
    picked_records: int = 0


def _partition_counts(files: pa.Table) -> dict[tuple[int, str], int]:
    """Files per (spec id, partition), counted by one group-by."""
    grouped = (
        health.grouping_table(files)
        .group_by(["spec_id", "partition"])
        .aggregate([("spec_id", "count")])
    )
    return {
        (spec_id, partition): count
        for spec_id, partition, count in zip(
            *(grouped.column(c).to_pylist() for c in ("spec_id", "partition", "spec_id_count")),
            strict=True,
        )
    }


def _rewritten_groups(files: pa.Table, target: int, spec_id: int | None) -> list[_Rewritten]:
    """The partitions a bin-pack rewrite acts on, in the order they first appear.

    A file is picked when its size is outside [75%, 180%] of the target or when it was
    written under another partition spec than the table's default (Iceberg 1.10 rewrites
    those into the default spec whatever their size). A partition's picked files are
    rewritten when there are ``min-input-files`` of them, more than a target's worth, or
    any under another spec. Counted by one group-by over columns.

    ``spec_id`` None: the spec is no reason to pick a file (``rewrite_position_delete_files``
    writes a delete file back into its own spec, the data file's it points at).
    """
    low, high = int(target * health.SMALL_FILE_RATIO), int(target * MAX_FILE_RATIO)
    sizes = files.column("file_size_in_bytes")
    moved = (
        pc.not_equal(files.column("spec_id"), pa.scalar(spec_id, pa.int32()))
        if spec_id is not None
        else pa.repeat(pa.scalar(False), files.num_rows)
    )
    picked = pc.or_(
        moved,
        pc.or_(
            pc.less(sizes, pa.scalar(low, pa.int64())),
            pc.greater(sizes, pa.scalar(high, pa.int64())),
        ),
    )
    grouped = (
        health.grouping_table(
            files,
            picked=pc.cast(picked, pa.int64()),
            picked_bytes=pc.if_else(picked, sizes, pa.scalar(0, pa.int64())),
            picked_records=pc.if_else(
                picked, files.column("record_count"), pa.scalar(0, pa.int64())
            ),
        )
        .group_by(["spec_id", "partition"])
        .aggregate(
            [
                ("spec_id", "count"),
                ("picked", "sum"),
                ("picked_bytes", "sum"),
                ("picked_records", "sum"),
            ]
        )
    )
    found = []
    columns = (
        "spec_id",
        "partition",
        "spec_id_count",
        "picked_sum",
        "picked_bytes_sum",
        "picked_records_sum",
    )
    for key_spec, partition, count, n_picked, picked_bytes, records in zip(
        *(grouped.column(c).to_pylist() for c in columns), strict=True
    ):
        other_spec = spec_id is not None and key_spec != spec_id
        if n_picked and (other_spec or n_picked >= health.MIN_INPUT_FILES or picked_bytes > target):
            found.append(_Rewritten((key_spec, partition), count, n_picked, picked_bytes, records))
    return found


def files_written(
    metadata: TableMetadata, groups: Sequence[_Rewritten], target: int
) -> tuple[int, int]:
    """Bounds on the data files a bin-pack rewrite of ``groups`` writes: (low, high).

    Spark writes into the table's default spec (:mod:`icecore.fan_out` has Iceberg Java's
    rules and the reasoning). Per group:

    * a partition of the default spec is one file group, written without a shuffle, one
      file per read split: between ``ceil(bytes / split size)`` and
      ``2 * floor(bytes / split size) + 1`` (:func:`icecore.fan_out.splits`), never more
      than its records;
    * the files of other specs are one file group, range-shuffled by the default spec's
      partition. High: each old partition's rows fall into at most :func:`fan_out` partitions
      of the default spec (or as many as its records, when a field of the default spec is
      not bounded by the old partition, e.g. a new identity field), plus one file per
      target's worth of bytes (a file rolls at the write size), plus one per shuffle task
      boundary (at most :data:`icecore.fan_out.SHUFFLE_PARTITIONS` - 1), never more than
      the group's records. Low: one file per old partition of the largest old spec that the
      default spec refines (their rows land in distinct new partitions), else one.

    Records are counted before deletes, so a group whose rows are all deleted may write
    fewer files than the low bound.
    """
    current = metadata.default_spec()
    low = high = 0
    other: list[_Rewritten] = []
    for g in groups:
        if g.key[0] != current.spec_id:
            other.append(g)
            continue
        at_least, at_most = fan_out_splits(g.picked_bytes, target)
        low += at_least
        high += max(at_least, min(at_most, g.picked_records or at_most))
    if other:
        partitions_high = 0
        distinct_low = 1
        by_spec: dict[int, int] = {}
        for g in other:
            spec = metadata.spec_by_id(g.key[0])
            spread = fan_out(spec, current) if spec is not None else None
            records = max(1, g.picked_records)
            partitions_high += min(records, spread) if spread is not None else records
            by_spec[g.key[0]] = by_spec.get(g.key[0], 0) + 1
        for spec_id, count in by_spec.items():
            spec = metadata.spec_by_id(spec_id)
            if spec is not None and refines(spec, current):
                distinct_low = max(distinct_low, count)
        records = sum(max(1, g.picked_records) for g in other)
        rolled = sum(g.picked_bytes for g in other) // target
        boundaries = min(SHUFFLE_PARTITIONS - 1, partitions_high)
        low += distinct_low
        high += max(distinct_low, min(records, partitions_high + rolled + boundaries))
    return low, high


def _content(files: pa.Table, kind: str) -> pa.Table:
    """The files of one kind, with the columns estimates read (paths are not copied)."""
    chosen = files.select(["content", "spec_id", "partition", "record_count", "file_size_in_bytes"])
    return chosen.filter(content_masks(files)[kind])


def _target(metadata: TableMetadata) -> int:
    key, default = health.TARGET_FILE_SIZE
    raw = metadata.properties.get(key)
    found = whole_number(raw, negative=False) if raw is not None else None
    return found if found is not None else int(default)


def rewrite_data_files(
    metadata: TableMetadata, files: pa.Table, finding: Finding, over: Finding | None = None
) -> Recommendation:
    """Compaction of small (or oversized, or old-spec) data files, from the small-files finding.

    ``data_files_after`` is ``[low, high]``: the data files Spark's rewrite writes
    (:func:`files_written`). When even the low end, or the high end, is more than the files
    it removes, the rewrite would leave the table with more files than it has: the
    recommendation is then not one (status info), says so with the numbers, and the job
    runs only when forced (:attr:`Recommendation.force_reason`).

    Delete files are estimated to go with the data: a partition whose every data file is
    rewritten keeps none of its delete files (file-scoped ones leave with their data file,
    the rest are dangling and dropped, since the job runs with ``remove-dangling-deletes``).

    ``over`` is the over-partitioning finding: when it warns, its detail (the coarser spec
    to make first) leads the reason and its spec changes are the recommendation's.
    """
    data = _content(files, "data")
    target, spec_id = _target(metadata), metadata.default_spec_id
    groups = _rewritten_groups(data, target, spec_id)
    low, high = files_written(metadata, groups, target) if groups else (0, 0)
    rewritten = sum(g.picked for g in groups)
    at_size = _at_size(data, target, spec_id)
    estimate: dict[str, EstimateValue] = {
        "rewritten_files_count": rewritten,
        "rewritten_bytes_count": sum(g.picked_bytes for g in groups),
        "added_files_count": low,
        "data_files_after": (low, high),
        "untouched_files_count": data.num_rows - rewritten,
        "at_size_files_count": at_size,
        "too_few_files_count": data.num_rows - rewritten - at_size,
    }
    emptied = {g.key for g in groups if g.picked == g.files}
    deletes = files.select(["spec_id", "partition"]).filter(
        pc.not_equal(files.column("content"), pa.scalar(0, pa.int8()))
    )
    estimate["removed_delete_files_count"] = sum(
        count for key, count in _partition_counts(deletes).items() if key in emptied
    )
    worth = rewritten > 0
    grows = worth and high > rewritten
    force_reason = (
        f"This rewrite would write {_span(low, high)} data files to replace {rewritten:,}: "
        "it writes into the current partition spec, which splits the rows of the rewritten "
        "files over more partitions than they fill now, so the table would have more files "
        "after it than before."
        if grows
        else None
    )
    if not worth:
        title = "No compaction needed"
    elif grows:
        title = "Compaction would add files"
    else:
        title = "Compact data files"
    untouched = data.num_rows - rewritten
    too_fine = over is not None and over.status is Status.WARN
    return Recommendation(
        Job.REWRITE_DATA_FILES,
        Status.INFO if grows else (Status.WARN if worth else Status.OK),
        title,
        (f"{over.detail} " if over is not None and too_fine else "")
        + finding.detail
        + (
            f" Bin-packing would rewrite {rewritten:,} data files "
            f"({format_bytes(sum(g.picked_bytes for g in groups))}) into "
            f"{_span(low, high)} (target file size {format_bytes(target)}), leave "
            f"{untouched:,} as they are and drop "
            f"{estimate['removed_delete_files_count']:,} delete files."
            if worth
            else " No partition has enough small files for rewrite_data_files to act."
        )
        + (f" {force_reason}" if force_reason else ""),
        finding.evidence,
        estimate,
        ("--strategy", "binpack"),
        force_reason,
        over.spec_changes if over is not None and too_fine else (),
    )


def _at_size(data: pa.Table, target: int, spec_id: int) -> int:
    """Data files of the default spec within [75%, 180%] of the target: never picked."""
    sizes = data.column("file_size_in_bytes")
    low, high = int(target * health.SMALL_FILE_RATIO), int(target * MAX_FILE_RATIO)
    inside = pc.and_(
        pc.equal(data.column("spec_id"), pa.scalar(spec_id, pa.int32())),
        pc.and_(
            pc.greater_equal(sizes, pa.scalar(low, pa.int64())),
            pc.less_equal(sizes, pa.scalar(high, pa.int64())),
        ),
    )
    return total(inside)


def _span(low: int, high: int) -> str:
    """``1,234`` or ``1,234 to 5,678``."""
    return f"{low:,}" if low == high else f"{low:,} to {high:,}"


def rewrite_position_delete_files(
    metadata: TableMetadata, files: pa.Table, finding: Finding
) -> Recommendation:
    """Compaction of position delete files (deletion vectors are one per data file already).

    Iceberg Java's ``RewritePositionDeleteFiles`` (bin-pack planner) picks, per (spec,
    partition), the delete files outside [75%, 180%] of the target size and rewrites a
    partition's picked files when there are ``min-input-files`` of them or more than a
    target's worth; it writes them back into their own spec and partition, rolling a file at
    the target size, and drops the deletes that point at no live data file.

    ``delete_files_after`` is ``[low, high]``: the position delete files left. High: the
    untouched ones plus, per rewritten partition, one file per read split
    (:func:`icecore.fan_out.splits`, as for data files), never more than its delete
    records. Low: the untouched ones (a partition's deletes may all be dangling and
    dropped). The job is recommended only when even the high end is fewer files than the
    table has; otherwise the reason says why not and the job runs only when forced.
    """
    position = _content(files, "position deletes")
    target = _target(metadata)
    groups = _rewritten_groups(position, target, None)
    rewritten = sum(g.picked for g in groups)
    rewritten_bytes = sum(g.picked_bytes for g in groups)
    written_high = 0
    for g in groups:
        _, at_most = fan_out_splits(g.picked_bytes, target)
        written_high += max(1, min(at_most, g.picked_records or at_most))
    untouched = position.num_rows - rewritten
    estimate: dict[str, EstimateValue] = {
        "rewritten_delete_files_count": rewritten,
        "rewritten_bytes_count": rewritten_bytes,
        "delete_files_after": (untouched, untouched + written_high),
    }
    worth = rewritten > 0 and written_high < rewritten
    force_reason = None
    if rewritten == 0:
        per_partition = max(_partition_counts(position).values(), default=0)
        why = (
            "there are none to rewrite."
            if not position.num_rows
            else "each partition already has one delete file; rewriting would write as many "
            "as it removes."
            if per_partition <= 1
            else f"no partition has {health.MIN_INPUT_FILES} small ones or more than "
            f"{format_bytes(target)} of them, so rewrite_position_delete_files would not act."
        )
    elif not worth:
        force_reason = (
            f"This rewrite would write up to {written_high:,} position delete files to "
            f"replace {rewritten:,}, so the table may have as many delete files after it."
        )
        why = force_reason
    else:
        why = (
            f"{rewritten:,} of them ({format_bytes(rewritten_bytes)}) would "
            f"be rewritten into at most {written_high:,}, so each read opens fewer delete files."
        )
    return Recommendation(
        Job.REWRITE_POSITION_DELETE_FILES,
        Status.WARN if worth else (Status.INFO if force_reason else Status.OK),
        "Compact position delete files" if worth else "No delete-file compaction needed",
        f"{position.num_rows:,} position delete files are live; {why}",
        finding.evidence,
        estimate,
        (),
        force_reason,
    )


def _manifest_target(metadata: TableMetadata) -> int:
    key, default = health.MANIFEST_TARGET_SIZE
    raw = metadata.properties.get(key)
    found = whole_number(raw, negative=False) if raw is not None else None
    return found if found is not None else int(default)


def rewrite_manifests(
    metadata: TableMetadata, manifest_list: Sequence[ManifestFile], finding: Finding
) -> Recommendation:
    """Repacking of the default spec's data manifests into target-sized ones.

    Spark's action only takes data manifests written under the table's default partition
    spec (older specs' manifests stay as they are), and does nothing when they are one
    manifest that would be rewritten into one.
    """
    target = _manifest_target(metadata)
    data = [
        m
        for m in manifest_list
        if m.content is ManifestContent.DATA and m.partition_spec_id == metadata.default_spec_id
    ]
    after = max(1, math.ceil(sum(m.manifest_length for m in data) / target)) if data else 0
    if len(data) == 1 and after == 1:
        data, after = [], 0
    estimate = {"rewritten_manifests_count": len(data), "added_manifests_count": after}
    worth = finding.status is Status.WARN and after < len(data)
    other = sum(1 for m in manifest_list if m.content is ManifestContent.DATA) - len(data)
    return Recommendation(
        Job.REWRITE_MANIFESTS,
        Status.WARN if worth else Status.OK,
        "Rewrite manifests" if worth else "Manifests are compact",
        finding.detail
        + f" Rewriting would turn {len(data):,} data manifests of the default spec into "
        f"{after:,}" + (f"; {other:,} under older specs stay." if other else "."),
        finding.evidence,
        estimate,
    )


@dataclass(frozen=True, slots=True)
class Reach:
    """Every file some metadata reaches, by kind (paths normalized by :func:`_key`)."""

    manifest_lists: frozenset[str]
    manifests: frozenset[str]
    files: Mapping[str, tuple[str, int]]
    """Data and delete files: path -> (content name, size)."""


def path_key(path: str) -> str:
    """A path as one key whatever its spelling (``file:/x``, ``file:///x`` and ``/x``)."""
    protocol, local = normalize_path(path)
    return local if protocol == "file" else f"{protocol}://{local}"


MANIFEST_PATH = 500
"""Field id of ``manifest_path`` in a manifest list (spec "Manifest Lists")."""


_REACHED: LRU[tuple[str, tuple[int, ...]], Reach] = LRU(max_items=4)
"""Recent reaches by (metadata file, snapshot ids): expiry's kept snapshots and the orphan
check's every snapshot are the same set when nothing is expirable, and a long history makes
each reach read every manifest list once."""


def reach(table: TableData, snapshots: Iterable[Snapshot]) -> Reach:
    """Manifest lists, manifests and live files of ``snapshots`` (each manifest read once)."""
    chosen = list(snapshots)
    key = (table.metadata_location, tuple(sorted(s.snapshot_id for s in chosen)))
    return _REACHED.get_or_make(key, lambda: _reach(table, chosen))


def _reach(table: TableData, snapshots: Iterable[Snapshot]) -> Reach:
    lists: set[str] = set()
    manifests: dict[str, ManifestFile] = {}
    seen: set[str] = set()  # raw paths already keyed
    chosen = list(snapshots)
    told = listening()
    for done, snapshot in enumerate(chosen, start=1):
        if snapshot.manifest_list is not None:
            lists.add(path_key(snapshot.manifest_list))
        # A long history lists the same manifests again and again (every append keeps the
        # earlier ones): read each list's paths as a column, make an object per new one only.
        listed = table.manifest_list(snapshot)
        paths = listed.records.column(MANIFEST_PATH)
        for i, path in enumerate(paths.to_pylist() if paths is not None else ()):
            if path in seen:
                continue
            seen.add(path)
            manifests.setdefault(path_key(path), listed.manifest(i))
        if told:
            report("Reading manifest lists", done, len(chosen))
    files: dict[str, tuple[str, int]] = {}
    # Read as scan planning reads manifests (decoded once, cached in memory and on disk,
    # in worker processes when many), so the manifests a page already read cost nothing.
    loaded = TableScan(table).load_manifests(list(manifests.values()))
    names = ["file_path", "content", "file_format", "file_size_in_bytes"]
    for pm in loaded:
        for path, content, file_format, size in _rows(pm.read(names), *names):
            files[path_key(path)] = (content_name(content, file_format), size)
    return Reach(frozenset(lists), frozenset(manifests), files)


def expire_snapshots(
    table: TableData,
    now_ms: int,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> Recommendation:
    """Snapshots past retention and the files only they reach (what ``expire_snapshots`` deletes).

    Keys of :attr:`Recommendation.estimate` are the procedure's result columns.
    """
    metadata = table.metadata
    expired_ids = set(
        health.snapshots_to_expire(
            metadata, now_ms, older_than_ms=older_than_ms, retain_last=retain_last
        )
    )
    kept = [s for s in metadata.snapshots if s.snapshot_id not in expired_ids]
    gone = [s for s in metadata.snapshots if s.snapshot_id in expired_ids]
    before = reach(table, gone)
    # Nothing expires, nothing is removed: the kept snapshots' files (every manifest of the
    # table) need not be read at all.
    after = reach(table, kept) if gone else before
    if gone:
        # Every snapshot is gone or kept: their union is the orphan check's reach, for free.
        _REACHED.put(
            (table.metadata_location, tuple(sorted(s.snapshot_id for s in metadata.snapshots))),
            Reach(
                before.manifest_lists | after.manifest_lists,
                before.manifests | after.manifests,
                {**before.files, **after.files},
            ),
        )
    removed = {p: v for p, v in before.files.items() if p not in after.files}
    kinds = [kind for kind, _ in removed.values()]
    estimate = {
        "expired_snapshots_count": len(gone),
        "deleted_data_files_count": kinds.count("data"),
        "deleted_position_delete_files_count": kinds.count("position deletes")
        + kinds.count(DELETION_VECTOR),
        "deleted_equality_delete_files_count": kinds.count("equality deletes"),
        "deleted_manifest_files_count": len(before.manifests - after.manifests),
        "deleted_manifest_lists_count": len(before.manifest_lists - after.manifest_lists),
        "deleted_bytes": sum(size for _, size in removed.values()),
    }
    finding = health.expiry(metadata, now_ms) if older_than_ms is None else None
    options: list[str] = []
    if older_than_ms is not None:
        options += ["--older-than", _iso(older_than_ms)]
    if retain_last is not None:
        options += ["--retain-last", str(retain_last)]
    return Recommendation(
        Job.EXPIRE_SNAPSHOTS,
        Status.WARN if gone else Status.OK,
        "Expire snapshots" if gone else "Nothing to expire",
        (finding.detail if finding is not None else f"{len(gone):,} snapshots are expirable.")
        + (
            f" It would delete {len(removed):,} data and delete files "
            f"({format_bytes(estimate['deleted_bytes'])}) that no kept snapshot reaches; "
            "branch heads, their retained ancestors and tagged snapshots stay."
            if gone
            else ""
        ),
        finding.evidence if finding is not None else (("expirable", len(gone)),),
        estimate,
        tuple(options),
    )


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


def metadata_files(table: TableData) -> set[str]:
    """Metadata files the table's metadata reaches beyond snapshots (spec "Table Metadata")."""
    metadata = table.metadata
    found = {table.metadata_location, *(e.metadata_file for e in metadata.metadata_log)}
    found.update(s.statistics_path for s in metadata.statistics)
    found.update(s.statistics_path for s in metadata.partition_statistics)
    found.add(f"{metadata.location.rstrip('/')}/{VERSION_HINT}")
    return {path_key(p) for p in found}


@dataclass(frozen=True, slots=True)
class Orphans:
    """Files under the table location that no metadata reaches.

    Attributes:
        removable: older than the cutoff: what ``remove_orphan_files`` would delete.
        young: younger than the cutoff (perhaps a write in flight): kept.
        listed: files listed under the location, hidden ones left out.
        hidden: files left out as hidden (:func:`is_hidden`), as Spark's listing does.
    """

    removable: tuple[FileInfo, ...]
    young: tuple[FileInfo, ...]
    listed: int
    hidden: int = 0


HIDDEN_PREFIXES = ("_", ".")
"""Hadoop's ``HiddenPathFilter``: names starting so are not listed (``.crc`` checksums,
``_SUCCESS``, ``_temporary``)."""


def orphan_locations(metadata: TableMetadata) -> list[str]:
    """The folders ``remove_orphan_files`` lists: the table location, every file below it.

    ``DeleteOrphanFilesSparkAction`` of Iceberg 1.10.2 (the one the pipeline runs) lists the
    whole location, so a stray file beside ``data/`` and ``metadata/`` is an orphan too
    (later Iceberg lists only the data and metadata folders).
    """
    return [metadata.location.rstrip("/")]


def hidden_partition_prefixes(metadata: TableMetadata) -> tuple[str, ...]:
    """``NAME=`` for partition fields (of every spec) whose names look hidden.

    Their folders are listed all the same (``PartitionAwareHiddenPathFilter``).
    """
    return tuple(
        sorted(
            {
                f"{pf.name}="
                for spec in metadata.partition_specs
                for pf in spec.fields
                if pf.name.startswith(HIDDEN_PREFIXES)
            }
        )
    )


def is_hidden(relative: str, partition_prefixes: tuple[str, ...] = ()) -> bool:
    """Whether Spark's orphan listing skips a file, from its path below a listed folder.

    The filter is applied to every name on the way down (folders and files): a name starting
    with ``_`` or ``.`` is skipped unless it is a partition folder of a field so named.
    """
    return any(
        part.startswith(HIDDEN_PREFIXES) and not part.startswith(partition_prefixes)
        for part in relative.split("/")
        if part
    )


def orphan_files(table: TableData, older_than_ms: int) -> Orphans:
    """List the table location against everything its metadata reaches.

    What Spark's ``remove_orphan_files`` lists (:func:`orphan_locations`, hidden names left
    out by :func:`is_hidden`) and compares: a file is an orphan when no snapshot's manifest
    list, manifest, data or delete file, no statistics file and no metadata log entry names
    it (paths compared without their ``file:`` scheme, as Spark compares URI paths), and it
    is removable when last modified before ``older_than_ms``.
    """
    metadata = table.metadata
    everything = reach(table, metadata.snapshots)
    reachable = (
        set(everything.files)
        | everything.manifests
        | everything.manifest_lists
        | metadata_files(table)
    )
    prefixes = hidden_partition_prefixes(metadata)
    seen: dict[str, FileInfo] = {}
    hidden = 0
    for folder in orphan_locations(metadata):
        for f in table.io.walk(folder):
            if path_key(f.path) in seen:
                continue
            if is_hidden(f.path[len(folder) :], prefixes):
                hidden += 1
                continue
            seen[path_key(f.path)] = f
    listing = list(seen.values())
    candidates = [f for f in listing if path_key(f.path) not in reachable]
    removable = tuple(
        f for f in candidates if f.modified_ms is not None and f.modified_ms < older_than_ms
    )
    young = tuple(f for f in candidates if f not in removable)
    return Orphans(removable, young, len(listing), hidden)


def remove_orphan_files(
    table: TableData, now_ms: int, older_than_ms: int | None = None
) -> Recommendation:
    """Orphan candidates found by listing, split by ``remove_orphan_files``' age cutoff."""
    cutoff = older_than_ms if older_than_ms is not None else now_ms - ORPHAN_MIN_AGE_MS
    found = orphan_files(table, cutoff)
    estimate = {
        "orphan_files_count": len(found.removable),
        "orphan_bytes": sum(f.size for f in found.removable),
        "young_candidates_count": len(found.young),
        "listed_files_count": found.listed,
        "hidden_files_count": found.hidden,
    }
    return Recommendation(
        Job.REMOVE_ORPHAN_FILES,
        Status.WARN if found.removable else (Status.INFO if found.young else Status.OK),
        "Remove orphan files" if found.removable else "No orphan files to remove",
        f"{found.listed:,} files are under the table location (and "
        f"{found.hidden:,} hidden ones, such as .crc checksums, which remove_orphan_files "
        f"skips too); {len(found.removable):,} "
        f"({format_bytes(estimate['orphan_bytes'])}) are reached by no metadata and older than "
        f"{_iso(cutoff)}, {len(found.young):,} more are unreached but younger (kept: they may "
        "belong to a write in flight).",
        tuple((f"orphan: {f.path}", format_bytes(f.size)) for f in found.removable[:20])
        + tuple((f"young: {f.path}", format_bytes(f.size)) for f in found.young[:20]),
        estimate,
        ("--older-than", _iso(cutoff)) if older_than_ms is not None else (),
    )


ESTIMATE_LABELS: Mapping[str, str] = {
    "rewritten_files_count": "files rewritten",
    "rewritten_bytes_count": "size rewritten",
    "added_files_count": "files written, at least",
    "data_files_after": "data files written",
    "untouched_files_count": "data files left as they are",
    "at_size_files_count": "of which already at the target size",
    "too_few_files_count": "of which small but too few in their partition to rewrite",
    "removed_delete_files_count": "delete files dropped",
    "rewritten_delete_files_count": "position delete files rewritten",
    "delete_files_after": "position delete files after",
    "rewritten_manifests_count": "manifests rewritten",
    "added_manifests_count": "manifests written",
    "expired_snapshots_count": "snapshots expired",
    "deleted_data_files_count": "data files deleted",
    "deleted_position_delete_files_count": "position delete files deleted",
    "deleted_equality_delete_files_count": "equality delete files deleted",
    "deleted_manifest_files_count": "manifests deleted",
    "deleted_manifest_lists_count": "manifest lists deleted",
    "deleted_bytes": "size deleted",
    "orphan_files_count": "orphan files to delete",
    "orphan_bytes": "size of the orphan files",
    "young_candidates_count": "unreached but younger than the cutoff (kept)",
    "listed_files_count": "files listed",
    "hidden_files_count": "hidden files skipped (names starting with _ or .)",
}
"""People's words for :attr:`Recommendation.estimate` keys (the keys stay the JSON's)."""


def evolve_command(table: str, spec_changes: Sequence[str]) -> str:
    """The ``icecore evolve`` dry run of a spec change, as a shell command line."""
    return shlex.join(
        [
            "icecore",
            "evolve",
            table,
            *(word for line in spec_changes for word in ("--spec-change", line)),
            "--dry-run",
        ]
    )


def recommendations(
    table: TableData,
    manifest_list: Sequence[ManifestFile],
    files: pa.Table,
    now_ms: int | None = None,
    *,
    orphans: bool = True,
) -> list[Recommendation]:
    """Every recommendation for the table's current snapshot, in job order.

    Args:
        table: the table (its current snapshot's ``manifest_list`` and ``files``).
        manifest_list: the current snapshot's manifests.
        files: its live files (:func:`icecore.layout.snapshot_files`).
        now_ms: when expiry and orphan age are judged (default: now).
        orphans: list the table location for orphan files (one listing of the location).
    """
    when = now_ms if now_ms is not None else int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    metadata = table.metadata
    t = health.totals(metadata.current_snapshot(), manifest_list, files)
    too_fine = health.over_partitioning(metadata, files)
    found = [
        rewrite_data_files(
            metadata,
            files,
            health.small_files(metadata, files, too_fine=too_fine.status is Status.WARN),
            too_fine,
        ),
        rewrite_position_delete_files(metadata, files, health.deletes(t)),
        rewrite_manifests(metadata, manifest_list, health.manifests(metadata, manifest_list)),
        expire_snapshots(table, when),
    ]
    if orphans:
        found.append(remove_orphan_files(table, when))
    return found


def recommendation(
    table: TableData,
    job: Job,
    manifest_list: Sequence[ManifestFile],
    files: pa.Table,
    now_ms: int,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> Recommendation:
    """One job's recommendation, with the options the user chose (the dry-run estimate)."""
    if job is Job.EXPIRE_SNAPSHOTS:
        return expire_snapshots(table, now_ms, older_than_ms=older_than_ms, retain_last=retain_last)
    if job is Job.REMOVE_ORPHAN_FILES:
        return remove_orphan_files(table, now_ms, older_than_ms)
    for found in recommendations(table, manifest_list, files, now_ms, orphans=False):
        if found.job is job:
            return found
    raise AssertionError(job)  # pragma: no cover - every other job is in the list


__all__ = [
    "Job",
    "Orphans",
    "Reach",
    "Recommendation",
    "ESTIMATE_LABELS",
    "EstimateValue",
    "evolve_command",
    "expire_snapshots",
    "files_written",
    "hidden_partition_prefixes",
    "is_hidden",
    "metadata_files",
    "orphan_locations",
    "orphan_files",
    "path_key",
    "reach",
    "recommendation",
    "recommendations",
    "remove_orphan_files",
    "rewrite_data_files",
    "rewrite_manifests",
    "rewrite_position_delete_files",
]
