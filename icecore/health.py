"""A table's totals and health findings, each with the evidence behind it.

Totals come from the live files of a snapshot (:func:`icecore.layout.snapshot_files`), not
from the snapshot summary: the summary's ``total-*`` values are what the writer claimed and
are kept apart (:attr:`Totals.summary`). Rows here are record counts, before deletes; live
rows after deletes need a read (:func:`count_live_rows`).

Each check compares what the metadata shows with the threshold Iceberg's own maintenance
uses by default (read from the table properties when set), so a finding says what Spark's
``rewrite_data_files``, ``rewrite_manifests`` or ``expire_snapshots`` would act on:

* over-partitioning: the current spec's median partition (and file) under 75% of the
  target file size, so no compaction can make big files (the fix is a coarser spec);
* small files: data files under 75% of ``write.target-file-size-bytes``, Iceberg's
  ``min-file-size-bytes`` default for ``rewrite_data_files``;
* deletes: delete records against rows, warned at 30%, ``rewrite_data_files``'
  ``delete-ratio-threshold`` default;
* manifests: as many data manifests as ``commit.manifest.min-count-to-merge`` (100), or
  manifests averaging under a tenth of ``commit.manifest.target-size-bytes``;
* partition skew: the biggest partition against the median one;
* snapshots to expire: what ``expire_snapshots`` with the table's retention properties
  would remove now (Iceberg Java's ``RemoveSnapshots``: each branch keeps its
  ``min-snapshots-to-keep`` newest ancestors and those younger than
  ``max-snapshot-age-ms``; tags keep their snapshot; unreferenced snapshots are kept while
  young; expired refs stop protecting anything).
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from icecore.coarsening import parse_labels, propose
from icecore.compute import pc
from icecore.layout import DELETION_VECTOR, content_masks, total
from icecore.manifest import ManifestContent, ManifestFile
from icecore.metadata import MAIN_BRANCH, Snapshot, TableMetadata
from icecore.point_in_time import Point
from icecore.scan.planner import TableScan

if TYPE_CHECKING:
    from icecore.partitioning import PartitionSpec
    from icecore.table_data import TableData

MiB = 1024 * 1024

TARGET_FILE_SIZE = ("write.target-file-size-bytes", 512 * MiB)
MANIFEST_TARGET_SIZE = ("commit.manifest.target-size-bytes", 8 * MiB)
MANIFEST_MIN_COUNT_TO_MERGE = ("commit.manifest.min-count-to-merge", 100)
MAX_SNAPSHOT_AGE_MS = ("history.expire.max-snapshot-age-ms", 5 * 24 * 3600 * 1000)
MIN_SNAPSHOTS_TO_KEEP = ("history.expire.min-snapshots-to-keep", 1)
MAX_REF_AGE_MS = ("history.expire.max-ref-age-ms", None)
"""Table properties the checks read, with Iceberg's defaults (TableProperties.java)."""

SMALL_FILE_RATIO = 0.75
"""``rewrite_data_files``' default min-file-size-bytes, as a share of the target size."""
MIN_INPUT_FILES = 5
"""``rewrite_data_files``' default min-input-files: fewer small files are not worth a job."""
DELETE_RATIO_THRESHOLD = 0.3
"""``rewrite_data_files``' default delete-ratio-threshold."""
SMALL_MANIFEST_RATIO = 0.1
"""Manifests averaging under this share of the target size are worth rewriting."""
MIN_MANIFESTS_FOR_SIZE_CHECK = 10
"""Fewer manifests than this are cheap to read however small they are."""
SKEW_RATIO = 4.0
"""A partition this many times bigger than the median one is skewed."""
MIN_PARTITIONS_FOR_SKEW = 4
"""Skew needs a few partitions to mean anything."""


class Status(StrEnum):
    """How a check came out."""

    OK = "ok"
    INFO = "info"
    WARN = "warn"


@dataclass(frozen=True, slots=True)
class Finding:
    """One health check's result.

    Attributes:
        check: a stable key (``small_files``, ``deletes``, ``manifests``,
            ``partition_skew``, ``snapshots_to_expire``) that recommendations build on.
        status: ok, info or warn.
        title: a few words.
        detail: one sentence saying what was found and why it matters.
        evidence: the numbers behind it, as (label, value) pairs in display order.
        spec_changes: the partition spec changes that fix it (``icecore evolve TABLE
            --spec-change LINE ... --dry-run``), for ``over_partitioning``.
    """

    check: str
    status: Status
    title: str
    detail: str
    evidence: tuple[tuple[str, str | int | float], ...]
    spec_changes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Totals:
    """What a snapshot holds, counted from its live files.

    Attributes:
        snapshot_id: the snapshot (None for a table without one).
        data_files, data_bytes, rows: live data files, their bytes and record counts
            (rows before deletes).
        position_delete_files, deletion_vectors, equality_delete_files: live delete files
            by kind.
        delete_bytes, delete_records: their bytes and record counts (positions, keys,
            deletion vector cardinalities).
        data_manifests, delete_manifests, manifest_bytes: the manifest list.
        summary: the snapshot summary's ``total-*`` values, as the writer recorded them.
    """

    snapshot_id: int | None
    data_files: int
    data_bytes: int
    rows: int
    position_delete_files: int
    deletion_vectors: int
    equality_delete_files: int
    delete_bytes: int
    delete_records: int
    data_manifests: int
    delete_manifests: int
    manifest_bytes: int
    summary: Mapping[str, str]

    @property
    def delete_files(self) -> int:
        """Every live delete file, of any kind."""
        return self.position_delete_files + self.deletion_vectors + self.equality_delete_files


_I8 = pa.int8()


def totals(snapshot: Snapshot | None, manifests: Sequence[ManifestFile], files: pa.Table) -> Totals:
    """Count a snapshot's live files (``files`` as :func:`icecore.layout.snapshot_files`).

    Counted over columns with masks (no copy of the files, no Python object per file).
    """
    masks = content_masks(files)
    is_data = masks["data"]
    is_delete = pc.invert(is_data)
    sizes = files.column("file_size_in_bytes")
    records = files.column("record_count")
    summary = snapshot.summary.properties if snapshot and snapshot.summary else {}
    return Totals(
        snapshot_id=snapshot.snapshot_id if snapshot else None,
        data_files=total(is_data),
        data_bytes=_masked_sum(sizes, is_data),
        rows=_masked_sum(records, is_data),
        position_delete_files=total(masks["position deletes"]),
        deletion_vectors=total(masks[DELETION_VECTOR]),
        equality_delete_files=total(masks["equality deletes"]),
        delete_bytes=_masked_sum(sizes, is_delete),
        delete_records=_masked_sum(records, is_delete),
        data_manifests=sum(1 for m in manifests if m.content is ManifestContent.DATA),
        delete_manifests=sum(1 for m in manifests if m.content is ManifestContent.DELETES),
        manifest_bytes=sum(m.manifest_length for m in manifests),
        summary={k: v for k, v in summary.items() if k.startswith("total-")},
    )


def _masked_sum(values: pa.ChunkedArray, mask: pa.ChunkedArray | pa.Array) -> int:
    """The exact integer sum of ``values`` where ``mask`` holds (0 when none)."""
    return total(pc.if_else(mask, values, pa.scalar(0, values.type)))


def _median(values: np.ndarray) -> int | float:
    """``statistics.median`` of integers, over a numpy array (same value and type)."""
    n = len(values)
    ordered = np.sort(values)
    middle = n // 2
    if n % 2:
        return int(ordered[middle])
    return (int(ordered[middle - 1]) + int(ordered[middle])) / 2


def count_live_rows(
    table: TableData,
    *,
    at: Point | None = None,
    read_bound: int | None = None,
) -> int:
    """Rows a reader sees at a point, deletes applied (Spark's ``count(*)``).

    The plan's count (:mod:`icecore.scan.count`): files without deletes from their manifest
    entries, files with position deletes or deletion vectors from those delete files, and
    only files under equality deletes read (their key columns only). ``read_bound``: raise
    :class:`~icecore.scan.count.CountTooLarge` before reading more bytes than that.
    """
    return TableScan(table, at=at).plan().count(read_bound=read_bound).rows


def _property(metadata: TableMetadata, key_default: tuple[str, int | None]) -> int | None:
    key, default = key_default
    raw = metadata.properties.get(key)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return default


table_property = _property
"""A table property as an int, with Iceberg's default when unset or not a number
(``key_default`` as :data:`TARGET_FILE_SIZE`): the one reader of the thresholds above."""

WRITER_KEYS = ("engine-name", "engine-version", "app-id", "spark.app.id", "wap.id")
"""Summary keys that say who wrote a snapshot (Iceberg Java's SnapshotSummary and Spark's)."""


def writer_of(snapshot: Snapshot | None) -> dict[str, str]:
    """Who wrote ``snapshot``: its engine name and version, application id and WAP id.

    Read from the summary (Iceberg writes ``engine-name``/``engine-version``, Spark adds
    ``spark.app.id``, a staged write ``wap.id``); keys a writer left out are absent.
    """
    if snapshot is None or snapshot.summary is None:
        return {}
    props = snapshot.summary.properties
    return {k: props[k] for k in WRITER_KEYS if props.get(k)}


def format_bytes(n: float) -> str:
    """A byte count for people: ``512 B``, ``1.5 MiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - the loop always returns


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


def small_files(metadata: TableMetadata, files: pa.Table, *, too_fine: bool = False) -> Finding:
    """Data files under 75% of the target file size (what compaction would rewrite).

    ``too_fine``: :func:`over_partitioning` warned for the same files. Compaction then cannot
    make big files (each partition holds less than a small file's worth), so the finding
    points at the spec instead of promising faster reads from a rewrite.
    """
    target = _property(metadata, TARGET_FILE_SIZE) or TARGET_FILE_SIZE[1]
    assert target is not None
    threshold = int(target * SMALL_FILE_RATIO)
    is_data = pc.equal(files.column("content"), pa.scalar(0, _I8))
    sizes = pc.filter(files.column("file_size_in_bytes"), is_data)
    count = len(sizes)
    small = total(pc.less(sizes, pa.scalar(threshold, pa.int64()))) if count else 0
    median = _median(sizes.to_numpy()) if count else 0
    evidence: tuple[tuple[str, str | int | float], ...] = (
        ("data files", count),
        (f"smaller than {format_bytes(threshold)}", small),
        ("share of data files", round(small / count, 3) if count else 0.0),
        ("median data file", format_bytes(median)),
        ("target file size", format_bytes(target)),
    )
    if small >= MIN_INPUT_FILES:
        return Finding(
            "small_files",
            Status.WARN,
            "Small files",
            f"{small:,} of {count:,} data files are under {format_bytes(threshold)} (75% of the "
            f"{format_bytes(target)} target); each costs an open and a footer read per scan, "
            + (
                "but the partitions are too fine for compaction to make big files: coarsen the "
                "spec first (see Partitions too fine), then compact."
                if too_fine
                else "so compacting them (rewrite_data_files) speeds up reads."
            ),
            evidence,
        )
    return Finding(
        "small_files",
        Status.OK,
        "File sizes",
        f"{small:,} data files are under {format_bytes(threshold)}; fewer than {MIN_INPUT_FILES}, "
        "not worth a compaction.",
        evidence,
    )


def over_partitioning(
    metadata: TableMetadata,
    files: pa.Table,
    spec: PartitionSpec | None = None,
    *,
    propose_spec: bool = True,
) -> Finding:
    """Partitions too small for the target file size: the spec, not the files, is the problem.

    Looks at the live data files of the default spec (what every write makes now). When the
    median partition holds less than 75% of ``write.target-file-size-bytes`` (the size
    ``rewrite_data_files`` calls small) and so does the median file, compaction can only
    turn each partition's small files into one small file, and a rewrite of files from older
    specs spreads their rows over these partitions. The fix is a coarser spec first
    (:func:`icecore.coarsening.propose`, spec "Partition Evolution"), then compaction.

    ``spec``: the spec to judge, the one in force at the snapshot ``files`` come from
    (:func:`icecore.metadata_log.state_at`); default the table's default spec. A past spec
    gets no coarsening proposal (the table is evolved from today's spec). The finding names
    the spec it judged. ``propose_spec=False`` leaves the proposal out (its search is most of
    the cost: a catalog of 1,000 tables wants the verdict, the Overview the proposal).
    """
    target = _property(metadata, TARGET_FILE_SIZE) or TARGET_FILE_SIZE[1]
    assert target is not None
    threshold = int(target * SMALL_FILE_RATIO)
    current = metadata.default_spec()
    spec = spec if spec is not None else current
    which = f"partition spec {spec.spec_id}" + (
        " (the current one)" if spec.spec_id == current.spec_id else ""
    )
    mask = pc.and_(
        pc.equal(files.column("content"), pa.scalar(0, _I8)),
        pc.equal(files.column("spec_id"), pa.scalar(spec.spec_id, pa.int32())),
    )
    data = grouping_table(
        files.select(["spec_id", "partition", "record_count", "file_size_in_bytes"]).filter(mask),
        "record_count",
        "file_size_in_bytes",
    )
    grouped = data.group_by(["partition"]).aggregate(
        [("file_size_in_bytes", "sum"), ("record_count", "sum"), ("partition", "count")]
    )
    n_files, n_partitions = data.num_rows, grouped.num_rows
    if spec.is_unpartitioned or n_partitions == 0:
        return Finding(
            "over_partitioning",
            Status.OK,
            "Partition size",
            f"{which.capitalize()} is unpartitioned or has no live data files: no partition "
            "is too small.",
            (("partition spec judged", spec.spec_id), ("partitions of the spec", n_partitions)),
        )
    partition_bytes = grouped.column("file_size_in_bytes_sum").to_numpy()
    median_file = _median(data.column("file_size_in_bytes").to_numpy())
    median_partition = _median(partition_bytes)
    labels = pc.cast(grouped.column("partition"), pa.string()).to_pylist()
    values = parse_labels(spec, labels)
    per_field = tuple(
        (f"values of {pf.name} ({pf.transform})", len({v[i] for v in values if v is not None}))
        for i, pf in enumerate(spec.fields)
    )
    small = int((partition_bytes < threshold).sum())
    evidence: list[tuple[str, str | int | float]] = [
        ("partition spec judged", spec.spec_id),
        ("data files of the spec", n_files),
        ("partitions of the spec", n_partitions),
        (f"partitions under {format_bytes(threshold)}", small),
        ("median data file", format_bytes(median_file)),
        ("rows per data file (median)", _median(data.column("record_count").to_numpy())),
        ("median partition size", format_bytes(median_partition)),
        ("rows per partition (median)", _median(grouped.column("record_count_sum").to_numpy())),
        *per_field,
        ("target file size", format_bytes(target)),
    ]
    too_fine = (
        n_partitions >= MIN_INPUT_FILES and median_partition < threshold and median_file < threshold
    )
    proposal = (
        propose(metadata, dict(zip(labels, partition_bytes.tolist(), strict=True)), threshold)
        if too_fine and propose_spec and spec.spec_id == current.spec_id
        else None
    )
    if not too_fine:
        return Finding(
            "over_partitioning",
            Status.OK,
            "Partition size",
            f"The median partition of {which} holds {format_bytes(median_partition)}; "
            f"{small:,} of {n_partitions:,} partitions are under {format_bytes(threshold)}.",
            tuple(evidence),
        )
    fix = (
        f" Coarsen the spec first ({'; '.join(proposal.steps)}: {proposal.partitions_before:,} "
        f"partitions become {proposal.partitions_after:,}, the median one "
        f"{format_bytes(proposal.median_bytes_after)}), preview it with a dry run, and only "
        "then compact."
        if proposal is not None
        else " Coarsen the spec (a coarser time unit, fewer bucket or identity fields) first, "
        "and only then compact."
    )
    if proposal is not None:
        evidence += [
            ("proposed spec change", "; ".join(proposal.steps)),
            ("partitions with it", proposal.partitions_after),
            ("median partition with it", format_bytes(proposal.median_bytes_after)),
        ]
    return Finding(
        "over_partitioning",
        Status.WARN,
        "Partitions too fine",
        f"Partitions are too fine for the {format_bytes(target)} target file size: the "
        f"median partition of {which} holds {format_bytes(median_partition)} "
        f"({small:,} of {n_partitions:,} are under {format_bytes(threshold)}) in files of "
        f"{format_bytes(median_file)} at the median, so compaction cannot make big files and "
        "a rewrite of older files spreads them over these partitions." + fix,
        tuple(evidence),
        proposal.changes if proposal is not None else (),
    )


def deletes(t: Totals) -> Finding:
    """Delete files and records against the data they hide (merge-on-read debt)."""
    ratio = t.delete_records / t.rows if t.rows else 0.0
    evidence: tuple[tuple[str, str | int | float], ...] = (
        ("delete files", t.delete_files),
        ("position delete files", t.position_delete_files),
        ("deletion vectors", t.deletion_vectors),
        ("equality delete files", t.equality_delete_files),
        ("delete records", t.delete_records),
        ("rows in data files", t.rows),
        ("delete records per row", round(ratio, 3)),
        (
            "delete files per data file",
            round(t.delete_files / t.data_files, 3) if t.data_files else 0.0,
        ),
    )
    if t.delete_files == 0:
        return Finding(
            "deletes",
            Status.OK,
            "No delete files",
            "No delete files are live: every read sees data files alone.",
            evidence,
        )
    if ratio >= DELETE_RATIO_THRESHOLD:
        return Finding(
            "deletes",
            Status.WARN,
            "Many deletes",
            f"{t.delete_records:,} delete records against {t.rows:,} rows ({ratio:.0%}, at or "
            f"above the {DELETE_RATIO_THRESHOLD:.0%} rewrite threshold): every read applies "
            "them, so rewriting the affected data files pays off.",
            evidence,
        )
    return Finding(
        "deletes",
        Status.INFO,
        "Delete files",
        f"{t.delete_files:,} delete files ({t.delete_records:,} delete records, {ratio:.1%} of "
        "rows) are applied at every read; below the rewrite threshold.",
        evidence,
    )


def manifests(metadata: TableMetadata, manifest_list: Sequence[ManifestFile]) -> Finding:
    """Manifest count and size: many or tiny manifests slow down every planning."""
    target = _property(metadata, MANIFEST_TARGET_SIZE) or MANIFEST_TARGET_SIZE[1]
    min_count = _property(metadata, MANIFEST_MIN_COUNT_TO_MERGE) or MANIFEST_MIN_COUNT_TO_MERGE[1]
    assert target is not None and min_count is not None
    count = len(manifest_list)
    data_count = sum(1 for m in manifest_list if m.content is ManifestContent.DATA)
    total = sum(m.manifest_length for m in manifest_list)
    average = total / count if count else 0.0
    evidence: tuple[tuple[str, str | int | float], ...] = (
        ("manifests", count),
        ("data manifests", data_count),
        ("total manifest size", format_bytes(total)),
        ("average manifest size", format_bytes(average)),
        ("target manifest size", format_bytes(target)),
        ("min count to merge", min_count),
    )
    if data_count >= min_count:
        return Finding(
            "manifests",
            Status.WARN,
            "Many manifests",
            f"{data_count:,} data manifests (merging starts at {min_count:,}); planning reads "
            "each one, so rewrite_manifests would make every scan cheaper.",
            evidence,
        )
    if count >= MIN_MANIFESTS_FOR_SIZE_CHECK and average < target * SMALL_MANIFEST_RATIO:
        return Finding(
            "manifests",
            Status.WARN,
            "Small manifests",
            f"{count:,} manifests average {format_bytes(average)}, under a tenth of the "
            f"{format_bytes(target)} target; rewrite_manifests would pack them.",
            evidence,
        )
    return Finding(
        "manifests",
        Status.OK,
        "Manifests",
        f"{count:,} manifests of {format_bytes(average)} on average: cheap to plan.",
        evidence,
    )


def partition_skew(files: pa.Table) -> Finding:
    """The biggest partition against the median one, by bytes of live data files."""
    is_data = pc.equal(files.column("content"), pa.scalar(0, _I8))
    data = grouping_table(
        files.select(["spec_id", "partition", "file_size_in_bytes"]).filter(is_data),
        "file_size_in_bytes",
    )
    grouped = data.group_by(["spec_id", "partition"]).aggregate([("file_size_in_bytes", "sum")])
    n = grouped.num_rows
    if n == 0:
        return Finding(
            "partition_skew", Status.OK, "Partitions", "No data files.", (("partitions", 0),)
        )
    sizes = grouped.column("file_size_in_bytes_sum").to_numpy()
    # The biggest by bytes; ties go to the greatest partition label, then the first group.
    tied = np.flatnonzero(sizes == sizes.max()).tolist()
    labels = pc.cast(grouped.column("partition").take(pa.array(tied)), pa.string()).to_pylist()
    pick = max(range(len(tied)), key=lambda i: labels[i])
    biggest, partition = tied[pick], labels[pick]
    size = int(sizes[biggest])
    spec = grouped.column("spec_id")[biggest].as_py()
    median = _median(sizes)
    ratio = size / median if median else 0.0
    evidence: tuple[tuple[str, str | int | float], ...] = (
        ("partitions", n),
        ("largest partition", f"spec {spec}: {partition}"),
        ("largest partition size", format_bytes(size)),
        ("median partition size", format_bytes(median)),
        ("largest / median", round(ratio, 2)),
    )
    if n >= MIN_PARTITIONS_FOR_SKEW and ratio >= SKEW_RATIO:
        return Finding(
            "partition_skew",
            Status.WARN,
            "Partition skew",
            f"The largest partition ({partition}) holds {ratio:.1f}x the median "
            "partition's bytes; scans of it do most of the work while others idle.",
            evidence,
        )
    return Finding(
        "partition_skew",
        Status.OK,
        "Partition balance",
        f"{n:,} partitions; the largest holds {ratio:.1f}x the median.",
        evidence,
    )


def grouping_table(files: pa.Table, *columns: str, **extra: pa.ChunkedArray | pa.Array) -> pa.Table:
    """Columns to group files by (spec id, partition): those two, ``columns``, ``extra``.

    One chunk each: Arrow's group-by needs one dictionary per dictionary-encoded column
    (:func:`icecore.layout.snapshot_files`' ``partition``): one chunk unifies them.
    """
    chosen = {name: files.column(name) for name in ("spec_id", "partition", *columns)}
    return pa.table(
        {
            k: v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v
            for k, v in {**chosen, **extra}.items()
        }
    )


def snapshots_to_expire(
    metadata: TableMetadata,
    now_ms: int,
    *,
    older_than_ms: int | None = None,
    retain_last: int | None = None,
) -> tuple[int, ...]:
    """Snapshot ids ``expire_snapshots`` would remove at ``now_ms``.

    The spec's "Snapshot Retention Policy" as Iceberg Java's ``RemoveSnapshots`` applies it:
    refs past their max ref age are dropped (never ``main``); each remaining branch retains
    the newest ancestors up to its min-snapshots-to-keep and every ancestor younger than its
    max snapshot age; a tag retains its snapshot; a snapshot no ref reaches is retained while
    younger than the default age. The procedure's ``older_than`` and ``retain_last`` replace
    the table-level defaults (``history.expire.max-snapshot-age-ms`` and
    ``history.expire.min-snapshots-to-keep``); a ref's own retention still wins over them.

    Args:
        metadata: the table.
        now_ms: the time expiry is judged at.
        older_than_ms: ``older_than`` as epoch ms (default: now minus the table's max age).
        retain_last: ``retain_last`` (default: the table's min-snapshots-to-keep).
    """
    default_age = _property(metadata, MAX_SNAPSHOT_AGE_MS)
    default_keep = (
        retain_last if retain_last is not None else _property(metadata, MIN_SNAPSHOTS_TO_KEEP)
    )
    default_ref_age = _property(metadata, MAX_REF_AGE_MS)
    assert default_age is not None and default_keep is not None
    default_cutoff = older_than_ms if older_than_ms is not None else now_ms - default_age
    retained: set[int] = set()
    referenced: set[int] = set()
    for name, ref in metadata.refs.items():
        head = metadata.snapshot_by_id(ref.snapshot_id)
        if head is None:
            continue
        ref_age = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else default_ref_age
        if name != MAIN_BRANCH and ref_age is not None and now_ms - head.timestamp_ms > ref_age:
            continue
        ancestors = metadata.ancestors_of(ref.snapshot_id) if ref.is_branch else (head,)
        referenced.update(s.snapshot_id for s in ancestors)
        if not ref.is_branch:
            retained.add(head.snapshot_id)
            continue
        cutoff = (
            now_ms - ref.max_snapshot_age_ms
            if ref.max_snapshot_age_ms is not None
            else default_cutoff
        )
        keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else default_keep
        for position, snapshot in enumerate(ancestors):
            if position < keep or snapshot.timestamp_ms >= cutoff:
                retained.add(snapshot.snapshot_id)
            else:
                break
    for snapshot in metadata.snapshots:
        if snapshot.snapshot_id not in referenced and snapshot.timestamp_ms >= default_cutoff:
            retained.add(snapshot.snapshot_id)
    return tuple(s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in retained)


def expiry_holds_until(metadata: TableMetadata, now_ms: int) -> int | None:
    """The last time :func:`snapshots_to_expire` (table defaults) answers as at ``now_ms``.

    Its answer depends on the time only through comparisons of the time with a snapshot's
    timestamp plus an age (the table's max snapshot age, a ref's max snapshot age or max ref
    age), so it is the same at every time up to the first such sum at or after ``now_ms``.
    A health row judged at ``now_ms`` stays true until then (``catalog_health``'s kept rows);
    None: the answer never changes (no snapshot, or no age to pass). Conservative: at the
    time returned plus one the answer may still be the same.
    """
    given = (
        _property(metadata, MAX_SNAPSHOT_AGE_MS),
        _property(metadata, MAX_REF_AGE_MS),
        *(ref.max_ref_age_ms for ref in metadata.refs.values()),
        *(ref.max_snapshot_age_ms for ref in metadata.refs.values()),
    )
    ages = {age for age in given if age is not None}
    if not ages or not metadata.snapshots:
        return None
    times = sorted(s.timestamp_ms for s in metadata.snapshots)
    found: int | None = None
    for age in ages:  # the first timestamp + age at or after now_ms (Python ints: no overflow)
        at = bisect.bisect_left(times, now_ms - age)
        if at < len(times) and (found is None or times[at] + age < found):
            found = times[at] + age
    return found


def expiry(metadata: TableMetadata, now_ms: int) -> Finding:
    """Snapshots that expire_snapshots would remove now, with the retention it applies."""
    expirable = snapshots_to_expire(metadata, now_ms)
    age = _property(metadata, MAX_SNAPSHOT_AGE_MS)
    keep = _property(metadata, MIN_SNAPSHOTS_TO_KEEP)
    times = [
        s.timestamp_ms
        for i in expirable
        if (s := metadata.snapshot_by_id(i)) is not None  # always found: ids come from it
    ]
    evidence: tuple[tuple[str, str | int | float], ...] = (
        ("snapshots", len(metadata.snapshots)),
        ("expirable now", len(expirable)),
        ("oldest expirable", _iso(min(times)) if times else "none"),
        ("max snapshot age", f"{(age or 0) / 3_600_000:g} h"),
        ("min snapshots to keep", keep if keep is not None else 1),
        ("as of", _iso(now_ms)),
    )
    if expirable:
        return Finding(
            "snapshots_to_expire",
            Status.WARN,
            "Snapshots to expire",
            f"{len(expirable):,} of {len(metadata.snapshots):,} snapshots are past the table's "
            "retention; expire_snapshots would remove them and the files only they reference.",
            evidence,
        )
    return Finding(
        "snapshots_to_expire",
        Status.OK,
        "Snapshot retention",
        f"All {len(metadata.snapshots):,} snapshots are within the table's retention.",
        evidence,
    )


def findings(
    metadata: TableMetadata,
    manifest_list: Sequence[ManifestFile],
    files: pa.Table,
    t: Totals,
    now_ms: int | None = None,
    spec: PartitionSpec | None = None,
    *,
    propose_spec: bool = True,
) -> list[Finding]:
    """Every health check for one snapshot, in a fixed order.

    Args:
        metadata: the table metadata (properties, snapshots, refs).
        manifest_list: the snapshot's manifests.
        files: the snapshot's live files (:func:`icecore.layout.snapshot_files`).
        t: :func:`totals` of the same snapshot.
        now_ms: the time expiry is judged at (default: now).
        spec: the partition spec in force at the snapshot (default: the table's default).
        propose_spec: propose a coarser spec when partitions are too fine
            (:func:`over_partitioning`).
    """
    when = now_ms if now_ms is not None else int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    too_fine = over_partitioning(metadata, files, spec, propose_spec=propose_spec)
    return [
        small_files(metadata, files, too_fine=too_fine.status is Status.WARN),
        too_fine,
        deletes(t),
        manifests(metadata, manifest_list),
        partition_skew(files),
        expiry(metadata, when),
    ]


__all__ = [
    "DELETE_RATIO_THRESHOLD",
    "Finding",
    "Status",
    "Totals",
    "count_live_rows",
    "deletes",
    "expiry",
    "expiry_holds_until",
    "findings",
    "format_bytes",
    "manifests",
    "over_partitioning",
    "partition_skew",
    "small_files",
    "snapshots_to_expire",
    "table_property",
    "totals",
    "writer_of",
]
