"""Icecore results reshaped for display: plain rows and counts, picklable, no Streamlit.

Pages cache these (``st.cache_data`` pickles what it keeps) and draw them. Every number is
copied from an icecore object, never recomputed: counts come from the planner's report,
and long lists are cut to their first :data:`MAX_ITEMS` items (a plan of a million files
keeps its tasks and pruned items lazy; only the slice shown is built).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icecore.describe import FieldRow
from icecore.diff import SnapshotDiff
from icecore.export import flat_columns
from icecore.health import format_bytes
from icecore.layout import content_name
from icecore.manifest import DataFile, ManifestContent, ManifestFile
from icecore.metadata import Snapshot
from icecore.partitioning import PartitionSpec
from icecore.scan.count import RowCount
from icecore.scan.planner import Plan

MAX_ITEMS = 500
"""The most rows a file or pruned-item table shows."""

__all__ = [
    "FULL_PATH",
    "MAX_ITEMS",
    "STATUS_ICONS",
    "DiffView",
    "PlanView",
    "diff_view",
    "field_row",
    "key_value_rows",
    "label",
    "files_in_manifest",
    "fit_height",
    "format_bytes",
    "format_ms",
    "manifest_rows",
    "plan_view",
    "short_path",
    "snapshot_text",
    "text_rows",
    "value_text",
]


ROW_PX = 35
HEADER_PX = 38
MAX_TABLE_PX = 720


MAX_TEXT = 2_000
"""Characters of a filter or residual shown in one cell or block (a 10,000-term filter is
~200 KB: drawn whole per planned file it would swamp the page)."""


NULL_TEXT = "NULL"
"""How a null value reads in a grid of values shown as text (as SQL writes it)."""


def text_rows(table: pa.Table) -> pa.Table:
    """Every value of ``table`` as text, for a grid that shows values and never reformats them.

    Nested and binary values as :func:`icecore.export.flat_columns` writes them (JSON-like,
    hex); other values cast to their text (full precision, ISO times); nulls as ``NULL``.
    """
    flat = flat_columns(table)
    columns = []
    for column in flat.columns:
        text = column if pa.types.is_string(column.type) else pc.cast(column, pa.string())
        if pa.types.is_floating(column.type):
            text = pc.if_else(pc.is_nan(column), "NaN", text)  # as Spark and SQL write it
        columns.append(pc.fill_null(text, NULL_TEXT))
    return pa.Table.from_arrays(columns, names=flat.column_names)


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit:,} more characters)"


SHORT_BELOW = 100_000
"""Counts below this fit a metric tile written out in full (``99,999``)."""

_SCALES = ((10**3, "k"), (10**6, "M"), (10**9, "B"), (10**12, "T"))


def short_count(n: int) -> str:
    """A count that fits a metric tile: ``99,999``, ``488.4 k``, ``100.0 M``, ``1.2 B``.

    Streamlit cuts a tile's value to its column's width ("100,010,1…"), so big numbers are
    written with one decimal and a scale; the exact value goes to the tile's help (hover).
    """
    if abs(n) < SHORT_BELOW:
        return f"{n:,}"
    for scale, suffix in _SCALES:
        value = round(n / scale, 1)
        if abs(value) < 1000 or suffix == "T":  # 999,950 is 1.0 M, not 1000.0 k
            return f"{value:,.1f} {suffix}"
    raise AssertionError("unreachable: the last scale always answers")


def count_tile(n: int, of: int | None = None) -> tuple[str, str | None]:
    """A metric tile's value (short) and its hover text (exact, None when nothing was cut).

    ``of`` makes it a part of a whole: ``488.4 k of 50.0 M``.
    """
    short = short_count(n) if of is None else f"{short_count(n)} of {short_count(of)}"
    exact = f"{n:,}" if of is None else f"{n:,} of {of:,}"
    return short, (None if short == exact else exact)


SHORT_PATH = 64
"""Characters a path shows in a table cell; longer ones are shortened from the left."""
FULL_PATH = "full path"
"""The column that holds the whole path beside a shortened one."""


def short_path(path: str, limit: int = SHORT_PATH) -> str:
    """``path`` shortened from the left so that its file name stays visible.

    A table cell cuts text on the right, which loses the one part that tells files apart
    (``.../data/ts_hour=2024-09-20-10/00001-5-....parquet``). Whole trailing folders are
    kept while they fit ``limit``; the file name is always kept whole, however long. The
    whole path goes beside it (:data:`FULL_PATH`).
    """
    if len(path) <= limit:
        return path
    head, _, kept = path.rstrip("/").rpartition("/")
    folders = head.split("/")
    while folders and len(folders[-1]) + len(kept) + 3 <= limit:
        kept = f"{folders.pop()}/{kept}"
    return f"…/{kept}"


EMPTY = "—"
"""What a cell shows for a value that is absent (never ``None``)."""


def label(key: str) -> str:
    """A machine key as words: ``rewritten_files_count`` -> ``rewritten files``."""
    return key.removesuffix("_count").replace("_", " ").strip()


def value_text(key: str, value: Any) -> str:
    """A value of an evidence, estimate or result table as people read it.

    Absent values are :data:`EMPTY`, never ``None``; counts get separators (``2,831``);
    amounts whose key names bytes are in units (``1.5 MiB``); fractions keep three
    significant digits; a ``(low, high)`` tuple of counts (an estimate's range) reads
    ``low to high``, one number when they are equal; lists are joined; no Python repr
    reaches the page.
    """
    if value is None or value == "":
        return EMPTY
    if isinstance(value, tuple) and len(value) == 2 and all(type(v) is int for v in value):
        low, high = (value_text(key, v) for v in value)
        return low if low == high else f"{low} to {high}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and "bytes" in key.lower():
        return format_bytes(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, list | tuple | set | frozenset):
        items = [value_text(key, v) for v in value]
        return " · ".join(items) if items else "none"
    if isinstance(value, Mapping):
        pairs = [f"{label(str(k))}: {value_text(str(k), v)}" for k, v in value.items()]
        return " · ".join(pairs) if pairs else "none"
    return str(value)


def key_value_rows(
    pairs: Any,
    key_name: str,
    value_name: str = "value",
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, str]]:
    """``(key, value)`` pairs (or a mapping) as table rows of text, keys as words.

    ``labels`` gives people's words for known keys (:data:`icecore.maintenance.ESTIMATE_LABELS`);
    the others are made words by :func:`label`.
    """
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    words = labels or {}
    return [
        {key_name: words.get(str(k)) or label(str(k)), value_name: value_text(str(k), v)}
        for k, v in items
    ]


def fit_height(rows: int) -> int:
    """A dataframe height that shows ``rows`` rows without scrolling, up to a screenful."""
    return min(HEADER_PX + ROW_PX * max(rows, 1) + 2, MAX_TABLE_PX)


def format_ms(ms: int | None) -> str:
    """Milliseconds from the epoch as a UTC time people read."""
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


STATUS_ICONS: Mapping[str, str] = {
    "ok": ":green[:material/check_circle:]",
    "info": ":blue[:material/info:]",
    "warn": ":orange[:material/warning:]",
}
"""Markdown icons for health statuses (Material Symbols ship with Streamlit; no emoji font
needed)."""


def count_of(n: int, noun: str) -> str:
    """``n`` and a noun that takes an s when ``n`` is not one: ``1 row``, ``2,000 rows``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


_UNITS_MS = (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1_000))


def count_sources(count: RowCount) -> str:
    """How a row count was made, in one line: which planned files were read, which not.

    A count from metadata is exact only where it may be (``icecore.scan.count``); saying
    how many files each way lets a data owner see why a count was quick or slow.
    """
    parts = [
        count_of(count.from_metadata_files, "file") + " counted from manifests",
        count_of(count.from_delete_files, "file") + " from their delete files",
        count_of(count.read_files, "file") + " read",
    ]
    return "Counted: " + ", ".join(parts) + "."


def duration_text(ms: int | None, unset: str = EMPTY) -> str:
    """A duration in milliseconds as people read it: ``7 days``, ``90 minutes``, ``1,500 ms``.

    The largest unit that divides it whole is used, so the text is exact; ``unset`` stands
    for None (a retention the table's ``history.expire.*`` property decides, for example).
    """
    if ms is None:
        return unset
    for unit, size in _UNITS_MS:
        if ms and ms % size == 0:
            n = ms // size
            return count_of(n, unit)
    return f"{ms:,} ms"


def field_row(row: FieldRow, label: str | None = None) -> dict[str, Any]:
    """One schema field as a table row; ``label`` defaults to its name indented by depth."""
    return {
        "field": label if label is not None else "\u2003" * row.depth + row.name,
        "id": row.field_id,
        "type": row.type,
        "required": row.required,
        "doc": row.doc,
        "initial default": row.initial_default,
        "write default": row.write_default,
        "identifier": row.identifier,
    }


def snapshot_text(snapshot: Snapshot | None) -> str:
    """A snapshot in one line: id, time and operation."""
    if snapshot is None:
        return "none (the table has no snapshot)"
    operation = f" · {snapshot.operation}" if snapshot.operation is not None else ""
    return f"{snapshot.snapshot_id} · {format_ms(snapshot.timestamp_ms)}{operation}"


def _file_row(f: DataFile) -> dict[str, Any]:
    return {
        "file": short_path(f.file_path),
        "content": content_name(int(f.content), f.file_format),
        "spec": f.spec_id,
        "records": f.record_count,
        "bytes": f.file_size_in_bytes,
        FULL_PATH: f.file_path,
    }


@dataclass(frozen=True, slots=True)
class PlanView:
    """A planned scan as the Scan preview page shows it.

    Attributes:
        snapshot_id: the planned snapshot.
        filter: the filter as bound to the schema.
        counts: the report's counts by name (``data_files``, ``files_pruned_by_metrics``...).
        pruned: the first pruned items (level, path, reason).
        pruned_total: how many items were pruned in all.
        kept: the first planned files (path, partition, records, bytes, deletes, residual).
        kept_total: how many files were planned in all.
        deletes: distinct delete files applied to the shown planned files.
        columns: the top-level columns the scan can return, in schema order.
    """

    snapshot_id: int | None
    filter: str
    counts: dict[str, int]
    pruned: list[dict[str, str]]
    pruned_total: int
    kept: list[dict[str, Any]]
    kept_total: int
    deletes: list[dict[str, Any]]
    columns: list[str] = field(default_factory=list)

    @property
    def data_manifests_kept(self) -> int:
        """Data manifests left after pruning by partition summaries."""
        return self.counts["data_manifests"] - self.counts["data_manifests_pruned"]

    @property
    def reasons(self) -> list[dict[str, Any]]:
        """How often each reason occurs among the pruned items shown, most frequent first."""
        counter = Counter((p["level"], p["reason"]) for p in self.pruned)
        return [
            {"level": level, "reason": reason, "items": n}
            for (level, reason), n in counter.most_common()
        ]


COUNT_NAMES = (
    "data_manifests",
    "data_manifests_pruned",
    "delete_manifests",
    "delete_manifests_pruned",
    "data_files",
    "files_pruned_by_manifest",
    "files_pruned_by_partition",
    "files_pruned_by_metrics",
    "data_files_planned",
    "rows",
    "rows_planned",
    "delete_files",
    "delete_files_applied",
)
"""The :class:`~icecore.scan.report.PlanReport` counts a page shows."""


PartitionLabel = Callable[[PartitionSpec, Mapping[int, Any]], str]


def plan_view(plan: Plan, partition_of: PartitionLabel | None = None) -> PlanView:
    """Copy what the page shows out of a plan (slices only; never the whole task list).

    Args:
        plan: the plan.
        partition_of: ``(spec, partition) -> label`` for the kept-files table, or None.
    """
    report = plan.report
    # The first files as columns (plan.files() reads only the manifests holding them); the
    # task views beside them give each its spec, partition values and delete files without
    # building a DataFile per row.
    files = plan.files(limit=MAX_ITEMS)
    tasks = plan.tasks[:MAX_ITEMS]
    kept = []
    deletes: dict[str, dict[str, Any]] = {}
    for task, path, records, size, residual in zip(
        tasks,
        files.column("file_path").to_pylist(),
        files.column("record_count").to_pylist(),
        files.column("file_size_in_bytes").to_pylist(),
        files.column("residual").to_pylist(),
        strict=True,
    ):
        kept.append(
            {
                "file": short_path(path),
                "partition": partition_of(task.spec, task.partition) if partition_of else "",
                "records": records,
                "bytes": size,
                "delete files": len(task.delete_files),
                "residual filter": clip(residual),
                FULL_PATH: path,
            }
        )
        for d in task.delete_files:
            deletes.setdefault(d.file_path, _file_row(d))
    pruned = [
        {"level": str(p.level), "path": short_path(p.path), "reason": p.reason, FULL_PATH: p.path}
        for p in report.pruned[:MAX_ITEMS]
    ]
    return PlanView(
        snapshot_id=report.snapshot_id,
        filter=report.filter,
        counts={name: int(getattr(report, name)) for name in COUNT_NAMES},
        pruned=pruned,
        pruned_total=len(report.pruned),
        kept=kept,
        kept_total=len(plan.tasks),
        deletes=list(deletes.values()),
        columns=[f.name for f in plan.schema.fields],
    )


@dataclass(frozen=True, slots=True)
class DiffView:
    """A snapshot diff as the Time travel page shows it.

    Attributes:
        from_snapshot_id, to_snapshot_id: the two points.
        counts: files added and removed, and the records of the data files, by name (rows
            as a reader sees them: :func:`ui.data.rows_between`).
        added, removed: the first data and delete files that appeared / disappeared.
        partitions: the first partitions touched; ``partitions_total`` counts all.
        schema_changes: one row per field difference.
        specs: one row per partition spec live on either side.
    """

    from_snapshot_id: int | None
    to_snapshot_id: int
    counts: dict[str, int]
    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    partitions: list[str]
    partitions_total: int
    schema_changes: list[dict[str, Any]]
    specs: list[dict[str, Any]]


REMOVED_BY_LABELS = {
    "data_files": "removed data files",
    "position_deletes": "position deletes",
    "deletion_vectors": "deletion vectors",
    "equality_deletes": "equality deletes",
}
"""How :data:`icecore.row_counts.REMOVED_KINDS` read on a page."""


def removed_by_text(removed: int | None, by: Mapping[str, int | None]) -> str:
    """What removed a snapshot's rows: ``position deletes 2,109`` ("" when none, or unknown)."""
    if not removed:
        return ""
    if any(by.get(kind) is None for kind in REMOVED_BY_LABELS):
        return "not known"
    return " · ".join(
        f"{label} {by[kind]:,}" for kind, label in REMOVED_BY_LABELS.items() if by.get(kind)
    )


def diff_view(d: SnapshotDiff) -> DiffView:
    """Copy what the page shows out of a :class:`~icecore.diff.SnapshotDiff`."""
    counts = {
        "data files added": len(d.data_files_added),
        "data files removed": len(d.data_files_removed),
        "delete files added": len(d.delete_files_added),
        "delete files removed": len(d.delete_files_removed),
        "records added": d.rows_added,
        "records removed": d.rows_removed,
        "delete records added": d.delete_records_added,
        "files added": len(d.data_files_added) + len(d.delete_files_added),
        "files removed": len(d.data_files_removed) + len(d.delete_files_removed),
    }
    added = [_file_row(f) for f in (*d.data_files_added, *d.delete_files_added)[:MAX_ITEMS]]
    removed = [_file_row(f) for f in (*d.data_files_removed, *d.delete_files_removed)[:MAX_ITEMS]]
    specs = [
        {
            "spec": spec_id,
            "fields": d.spec_fields.get(spec_id, ""),
            "before": spec_id in d.specs_before,
            "after": spec_id in d.specs_after,
        }
        for spec_id in sorted({*d.specs_before, *d.specs_after})
    ]
    return DiffView(
        from_snapshot_id=d.from_snapshot_id,
        to_snapshot_id=d.to_snapshot_id,
        counts=counts,
        added=added,
        removed=removed,
        partitions=list(d.partitions_touched[:MAX_ITEMS]),
        partitions_total=len(d.partitions_touched),
        schema_changes=[
            {
                "change": c.kind,
                "field id": c.field_id,
                "field": c.name,
                "before": c.before,
                "after": c.after,
            }
            for c in d.schema_changes
        ],
        specs=specs,
    )


def manifest_rows(manifests: Sequence[ManifestFile]) -> list[dict[str, Any]]:
    """The manifest list as table rows (counts as the manifest list records them)."""
    return [
        {
            "manifest": short_path(m.manifest_path),
            "content": "deletes" if m.content is ManifestContent.DELETES else "data",
            "spec": m.partition_spec_id,
            "added files": m.added_files_count,
            "existing files": m.existing_files_count,
            "deleted files": m.deleted_files_count,
            "added rows": m.added_rows_count,
            "existing rows": m.existing_rows_count,
            "bytes": m.manifest_length,
            "added by snapshot": str(m.added_snapshot_id),
            "sequence number": m.sequence_number,
            FULL_PATH: m.manifest_path,
        }
        for m in manifests
    ]


def files_in_manifest(
    files: pa.Table, manifest_path: str, limit: int = MAX_ITEMS
) -> list[dict[str, Any]]:
    """The first ``limit`` live files of one manifest, as table rows."""
    chosen = files.filter(pc.equal(files.column("manifest_path"), manifest_path)).slice(0, limit)
    return [
        {
            "file": short_path(r["file_path"]),
            "content": content_name(r["content"], r["file_format"]),
            "partition": r["partition"],
            "records": r["record_count"],
            "bytes": r["file_size_in_bytes"],
            FULL_PATH: r["file_path"],
        }
        for r in chosen.to_pylist()
    ]
