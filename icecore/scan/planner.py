"""Scan planning: which data files a filtered read of a snapshot must open, with which deletes.

Spec "Scan Planning", in the order Iceberg Java's ``ManifestGroup`` applies it:

1. Data manifests are skipped when their partition field summaries can't match the filter's
   inclusive projection onto the manifest's own partition spec.
2. Live data files (ADDED and EXISTING entries) are skipped when their partition values
   can't match that projection, then when their column metrics can't match the filter.
3. Delete manifests and delete files are filtered the same way by partition; each planned
   data file gets the delete files that apply to it under the sequence-number and partition
   rules (:mod:`icecore.scan.delete_index`).
4. Each task carries the residual filter: what partition values alone don't decide.

Every skipped manifest and file is recorded with its reason (:mod:`icecore.scan.report`).

The manifest list is read in columns (:mod:`icecore.manifest_list_columns`) and its
partition summaries judged all at once (:mod:`icecore.expressions.arrow_summaries`; the
manifests it cannot judge exactly go to :mod:`icecore.expressions.manifest_eval`).
Data manifests are read in columns (:mod:`icecore.scan.planning_manifest`, cached by
:mod:`icecore.scan.manifest_cache`) and pruned a manifest at a time by partition (once per
distinct partition tuple) and all at once by metrics (:mod:`icecore.expressions.arrow_metrics`;
files it cannot judge go to the row evaluator, so the verdicts are exactly the row
evaluator's). Tasks and pruned items are made when read, so a plan of a million files holds
arrays, not a million objects (PERFORMANCE.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icecore.errors import InvalidMetadata
from icecore.expressions.arrow_metrics import (
    METRIC_KINDS,
    arrow_metrics_filter,
    referenced_field_ids,
)
from icecore.expressions.arrow_summaries import ArrowSummaryFilter, arrow_summary_filter
from icecore.expressions.bind import bind
from icecore.expressions.evaluator import row_evaluator
from icecore.expressions.manifest_eval import manifest_evaluator
from icecore.expressions.metrics_eval import MetricsEvaluator, metrics_evaluator
from icecore.expressions.model import AlwaysTrue, Expression
from icecore.expressions.parser import parse_filter
from icecore.expressions.projection import inclusive_projection
from icecore.expressions.residual import residual_evaluator
from icecore.expressions.rewrite_not import rewrite_not
from icecore.io import FileIO
from icecore.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from icecore.manifest_arrow import read_manifest_arrow
from icecore.manifest_list_columns import ManifestListColumns, SpecManifests
from icecore.metadata import Snapshot
from icecore.partitioning import PartitionSpec
from icecore.read import NAME_MAPPING_PROPERTY, arrow_schema_for, read_tasks, unified_partition_type
from icecore.scan.decode_pool import DecodeJob, decode_in_workers, env_count
from icecore.scan.delete_index import DeleteIndex
from icecore.scan.lazy import LazySequence, Producer
from icecore.scan.manifest_cache import MANIFESTS, ManifestKey
from icecore.scan.planning_manifest import (
    PlanningManifest,
    build_planning_manifest,
    metric_column,
)
from icecore.scan.report import PlanReport, PrunedItem, PruneLevel, ReportBuilder
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.types import StructType

if TYPE_CHECKING:
    from icecore.table import Table


LIVE = (ManifestEntryStatus.ADDED, ManifestEntryStatus.EXISTING)
METRICS_BATCH_ROWS = 65_536
"""Files judged by metrics in one pass (bounds the temporaries of the Arrow kernels)."""


def _plan_threads() -> int:
    """Threads decoding manifests (``ICECORE_PLAN_THREADS``; default: the CPU count, max 4)."""
    default = max(1, min(4, os.cpu_count() or 1))
    return env_count("ICECORE_PLAN_THREADS", default) or default


@dataclass(frozen=True, slots=True)
class _SpecEvaluators:
    """Everything that depends on one partition spec, built once per scan."""

    spec: PartitionSpec
    manifest_might_match: Callable[[ManifestFile], bool]
    manifest_reason: Callable[[ManifestFile], str]
    partition_matches: Callable[[dict[int, Any]], bool]
    partition_expr: Expression
    residual: Callable[[dict[int, Any]], Expression]
    summary_filter: ArrowSummaryFilter


class TaskList(LazySequence[FileScanTask]):
    """The tasks of a plan, made when read (a million-file plan holds row numbers only)."""

    def __init__(
        self,
        segments: Sequence[tuple[int, Producer[FileScanTask]]],
        paths: Callable[[], list[str]],
    ) -> None:
        super().__init__(segments)
        self._paths = paths

    def file_paths(self) -> list[str]:
        """Every task's data file path, without making the tasks."""
        return self._paths()


@dataclass(frozen=True, slots=True)
class Plan:
    """The result of planning: tasks, the pruning report, and what reading them needs.

    Attributes:
        tasks: one per planned data file, with its deletes and residual filter (a sequence
            made on demand: ``len``, indexing, slicing and iteration all work).
        report: counts and reasons per pruning level.
        schema: the schema rows are read with (the snapshot's own).
        io: the table's FileIO.
        name_mapping: the table's ``schema.name-mapping.default``, for files without ids.
        partition_type: the ``_partition`` struct over all the table's specs (as Spark's).
        applied_deletes: paths of the distinct delete files the tasks apply, in first-use
            order.
    """

    tasks: Sequence[FileScanTask]
    report: PlanReport
    schema: Schema
    io: FileIO
    name_mapping: str | None = None
    partition_type: StructType | None = None
    applied_deletes: tuple[str, ...] = ()

    @property
    def data_files(self) -> list[str]:
        """Paths of the planned data files."""
        if isinstance(self.tasks, TaskList):
            return self.tasks.file_paths()
        return [t.data_file.file_path for t in self.tasks]

    @property
    def delete_files(self) -> list[str]:
        """Paths of the distinct delete files the tasks apply, in first-use order."""
        return list(self.applied_deletes)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        metadata_columns: Sequence[str] = (),
    ) -> Iterator[pa.RecordBatch]:
        """Stream the rows of the plan (deletes and residual applied) as record batches."""
        return read_tasks(
            self.io,
            self.tasks,
            self.schema,
            columns=columns,
            metadata_columns=metadata_columns,
            name_mapping=self.name_mapping,
            partition_type=self.partition_type,
            limit=limit,
        )

    def to_arrow(
        self,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        metadata_columns: Sequence[str] = (),
    ) -> pa.Table:
        """The rows of the plan as one Arrow table (deletes and residual applied)."""
        schema = arrow_schema_for(self.schema, columns, metadata_columns, self.partition_type)
        batches = list(self.to_batches(columns, limit, metadata_columns))
        return pa.Table.from_batches(batches, schema=schema)


@dataclass(slots=True)
class _Block:
    """The planned rows of one data manifest."""

    manifest: PlanningManifest
    evaluators: _SpecEvaluators
    rows: np.ndarray
    residuals: dict[int, Expression]


class _Columns:
    """Metrics of the data files of many manifests, as chunked columns (one chunk each)."""

    def __init__(self, manifests: Sequence[PlanningManifest]) -> None:
        self._manifests = manifests
        self._memo: dict[str, pa.ChunkedArray | None] = {}
        self.num_rows = sum(m.num_rows for m in manifests)

    def _chunked(self, name: str) -> pa.ChunkedArray | None:
        if name in self._memo:
            return self._memo[name]
        arrays = [m.column(name) for m in self._manifests]
        kind = next((a.type for a in arrays if a is not None), None)
        found = None
        if kind is not None:
            found = pa.chunked_array(
                [
                    a if a is not None else pa.nulls(m.num_rows, kind)
                    for a, m in zip(arrays, self._manifests, strict=True)
                ],
                kind,
            )
        self._memo[name] = found
        return found

    def record_counts(self) -> pa.ChunkedArray:
        found = self._chunked("record_count")
        return found if found is not None else pa.chunked_array([], pa.int64())

    def metric(self, kind: str, field_id: int) -> pa.ChunkedArray | None:
        return self._chunked(metric_column(kind, field_id))


def _verdicts(found: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(might match, decided) as numpy booleans from a Kleene verdict column."""
    decided = pc.is_valid(found).to_numpy(zero_copy_only=False)
    might = pc.fill_null(found, True).to_numpy(zero_copy_only=False)
    return np.asarray(might, dtype=bool), np.asarray(decided, dtype=bool)


class TableScan:
    """A filtered read of one snapshot of a table; ``plan()`` does the work.

    Args:
        table: the table.
        filter: a SQL boolean expression (or an already built expression).
        snapshot_id, ref, as_of: which snapshot (default: the current one).
        case_sensitive: whether column names in the filter must match case.
    """

    def __init__(
        self,
        table: Table,
        filter: str | Expression | None = None,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: Any = None,
        case_sensitive: bool = False,
    ) -> None:
        self.table = table
        self.snapshot: Snapshot | None = table.snapshot(
            snapshot_id=snapshot_id, ref=ref, as_of=as_of
        )
        self.schema = table.read_schema(
            self.snapshot, ref=ref, time_travel=snapshot_id is not None or as_of is not None
        )
        if filter is None:
            unbound: Expression = AlwaysTrue()
        elif isinstance(filter, str):
            unbound = parse_filter(filter)
        else:
            unbound = filter
        self.filter = bind(self.schema, unbound, case_sensitive=case_sensitive)
        self.case_sensitive = case_sensitive

    def plan(self) -> Plan:
        """Plan the scan: tasks with their deletes and residuals, and the pruning report."""
        report = ReportBuilder(
            self.snapshot.snapshot_id if self.snapshot else None, str(self.filter)
        )
        if self.snapshot is None:
            return self._plan(TaskList([], list), report, ())
        expr = rewrite_not(self.filter)
        manifest_list = self.table.manifest_list(self.snapshot)
        evaluators: dict[int, _SpecEvaluators] = {}

        def for_spec(spec_id: int) -> _SpecEvaluators:
            found = evaluators.get(spec_id)
            if found is None:
                found = self._spec_evaluators(spec_id, expr)
                evaluators[spec_id] = found
            return found

        blocks = self._data_blocks(manifest_list, for_spec, expr, report)
        delete_might_match = metrics_evaluator(self.schema, expr, evaluate_delete_files=True)
        delete_manifests = manifest_list.manifests(
            np.flatnonzero(manifest_list.content == int(ManifestContent.DELETES))
        )
        delete_entries = self._delete_entries(
            delete_manifests, for_spec, delete_might_match, report
        )
        index = DeleteIndex(delete_entries, self.table.metadata.specs_by_id(), self.schema)
        counts = report.counts
        counts["data_files_planned"] = sum(len(b.rows) for b in blocks)
        counts["rows_planned"] = sum(
            int(b.manifest.required("record_count").to_numpy()[b.rows].sum()) for b in blocks
        )
        segments: list[tuple[int, Producer[FileScanTask]]] = [
            (len(b.rows), partial(self._tasks, b, index)) for b in blocks
        ]

        def paths() -> list[str]:
            out: list[str] = []
            for b in blocks:
                column = b.manifest.required("file_path")
                out.extend(column.take(pa.array(b.rows, pa.int64())).to_pylist())
            return out

        if not delete_entries:
            return self._plan(TaskList(segments, paths), report, ())
        tasks = [task for n, produce in segments for task in produce(0, n)]
        applied: dict[str, None] = {}
        for task in tasks:
            for delete in task.delete_files:
                applied.setdefault(delete.file_path, None)
        counts["delete_files_applied"] = len(applied)
        every = TaskList([(len(tasks), lambda lo, hi: tasks[lo:hi])], paths)
        return self._plan(every, report, tuple(applied))

    def _plan(self, tasks: TaskList, report: ReportBuilder, applied: tuple[str, ...]) -> Plan:
        metadata = self.table.metadata
        return Plan(
            tasks=tasks,
            report=report.build(),
            schema=self.schema,
            io=self.table.io,
            name_mapping=metadata.properties.get(NAME_MAPPING_PROPERTY),
            partition_type=unified_partition_type(metadata.partition_specs, self.schema),
            applied_deletes=applied,
        )

    def _spec_evaluators(self, spec_id: int, expr: Expression) -> _SpecEvaluators:
        spec = self.table.metadata.spec_by_id(spec_id)
        if spec is None:
            raise InvalidMetadata(
                f"A manifest of snapshot {self.snapshot and self.snapshot.snapshot_id} uses "
                f"partition spec {spec_id}, which the table metadata does not define."
            )
        projected = inclusive_projection(self.schema, spec, self.case_sensitive)(expr)
        might_match = manifest_evaluator(spec, self.schema, projected)
        return _SpecEvaluators(
            spec=spec,
            manifest_might_match=might_match,
            manifest_reason=lambda m: might_match.explain(m) or f"summaries exclude {projected}",
            partition_matches=row_evaluator(projected),
            partition_expr=projected,
            residual=residual_evaluator(spec, self.schema, expr, self.case_sensitive),
            summary_filter=arrow_summary_filter(spec, self.schema, projected),
        )

    # -- loading ---------------------------------------------------------------------

    def _load(self, manifests: Sequence[ManifestFile]) -> list[PlanningManifest]:
        """The planning form of each manifest: cached, or decoded (in workers when many)."""
        metadata = self.table.metadata
        types: dict[int, str] = {}
        jobs: list[DecodeJob] = []
        for manifest in manifests:
            spec = metadata.spec_by_id(manifest.partition_spec_id)
            assert spec is not None  # checked by _spec_evaluators
            if spec.spec_id not in types:
                types[spec.spec_id] = str(spec.partition_type(self.schema))
            key = ManifestKey(
                table_uuid=metadata.table_uuid or metadata.location,
                path=manifest.manifest_path,
                length=manifest.manifest_length,
                spec_id=spec.spec_id,
                format_version=metadata.format_version,
                partition_type=types[spec.spec_id],
                added_snapshot_id=manifest.added_snapshot_id,
                sequence_number=manifest.sequence_number,
                first_row_id=manifest.first_row_id,
            )
            jobs.append(DecodeJob(key, manifest, spec.spec_id))
        specs = metadata.specs_by_id()
        decode_in_workers(
            MANIFESTS, self.table.io, self.schema, specs, metadata.format_version, jobs
        )

        def one(job: DecodeJob) -> PlanningManifest:
            def decode() -> PlanningManifest:
                decoded = read_manifest_arrow(
                    self.table.io,
                    job.manifest,
                    self.schema,
                    specs[job.spec_id],
                    metadata.format_version,
                )
                return build_planning_manifest(decoded, job.manifest.manifest_path, job.spec_id)

            return MANIFESTS.get_or_load(job.key, decode)

        threads = _plan_threads()
        misses = sum(1 for job in jobs if not MANIFESTS.contains(job.key))
        if threads > 1 and misses > 1:  # cached manifests load faster than a pool starts
            with ThreadPoolExecutor(min(threads, len(jobs))) as pool:
                return list(pool.map(one, jobs))
        return [one(job) for job in jobs]

    # -- data files ------------------------------------------------------------------

    def _data_blocks(
        self,
        manifest_list: ManifestListColumns,
        for_spec: Callable[[int], _SpecEvaluators],
        expr: Expression,
        report: ReportBuilder,
    ) -> list[_Block]:
        counts = report.counts
        is_data = manifest_list.content == int(ManifestContent.DATA)
        keep = np.zeros(len(manifest_list), dtype=bool)
        for spec_id in np.unique(manifest_list.spec_ids[is_data]).tolist():
            group = manifest_list.spec_manifests(ManifestContent.DATA, spec_id)
            keep[group.rows] = _manifest_verdicts(manifest_list, group, for_spec(spec_id))
        pruned = np.flatnonzero(is_data & ~keep)
        live = int(manifest_list.live_files[pruned].sum())
        counts["data_manifests"] += int(is_data.sum())
        counts["data_manifests_pruned"] += len(pruned)
        counts["data_files"] += live
        counts["files_pruned_by_manifest"] += live
        counts["rows"] += int(manifest_list.live_rows[pruned].sum())
        if len(pruned):
            report.prune_many(
                len(pruned), partial(_pruned_manifests, manifest_list, pruned, for_spec)
            )
        kept = [
            (manifest_list.manifest(i), for_spec(int(manifest_list.spec_ids[i])))
            for i in np.flatnonzero(keep).tolist()
        ]
        loaded = self._load([m for m, _ in kept])
        if not loaded:
            return []
        might, decided = self._metrics(loaded, expr)
        file_might_match = metrics_evaluator(self.schema, expr)
        verdicts: dict[tuple[int, tuple[Any, ...]], bool] = {}
        blocks: list[_Block] = []
        offset = 0
        for pm, (_, evaluator) in zip(loaded, kept, strict=True):
            pm.prefetch(("content", "record_count"))
            n = pm.num_rows
            is_data = pm.required("content").to_numpy() == int(DataFileContent.DATA)
            records = pm.required("record_count").to_numpy()
            counts["data_files"] += int(is_data.sum())
            counts["rows"] += int(records[is_data].sum())
            in_partition = self._partition_verdicts(pm, evaluator, verdicts)
            candidates = is_data & in_partition
            file_ok = might[offset : offset + n].copy()
            undecided = np.flatnonzero(candidates & ~decided[offset : offset + n])
            if len(undecided):
                for row, entry in zip(undecided, pm.entries(undecided), strict=True):
                    file_ok[row] = file_might_match(entry.data_file)
            offset += n
            by_partition = is_data & ~in_partition
            by_metrics = candidates & ~file_ok
            counts["files_pruned_by_partition"] += int(by_partition.sum())
            counts["files_pruned_by_metrics"] += int(by_metrics.sum())
            pruned_rows = np.flatnonzero(by_partition | by_metrics)
            if len(pruned_rows):
                report.prune_many(
                    len(pruned_rows),
                    partial(
                        _pruned_files,
                        pm,
                        pruned_rows,
                        by_partition[pruned_rows],
                        evaluator.partition_expr,
                        file_might_match,
                        (PruneLevel.PARTITION, PruneLevel.METRICS),
                    ),
                )
            blocks.append(_Block(pm, evaluator, np.flatnonzero(candidates & file_ok), {}))
        return blocks

    def _metrics(
        self, loaded: Sequence[PlanningManifest], expr: Expression
    ) -> tuple[np.ndarray, np.ndarray]:
        """Metrics verdicts for every row of ``loaded``: (might match, decided here)."""
        total = sum(pm.num_rows for pm in loaded)
        if isinstance(expr, AlwaysTrue):
            return np.ones(total, dtype=bool), np.ones(total, dtype=bool)
        names = ["record_count"] + [
            metric_column(kind, fid)
            for fid in sorted(referenced_field_ids(expr))
            for kind in METRIC_KINDS
        ]
        metrics_filter = arrow_metrics_filter(expr)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        batch: list[PlanningManifest] = []
        rows = 0
        for pm in loaded:  # in batches: the kernels' temporaries stay small at 1M files
            pm.prefetch(names)
            batch.append(pm)
            rows += pm.num_rows
            if rows >= METRICS_BATCH_ROWS:
                parts.append(_verdicts(metrics_filter(_Columns(batch))))
                batch, rows = [], 0
        if batch or not parts:
            parts.append(_verdicts(metrics_filter(_Columns(batch))))
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([m for m, _ in parts]), np.concatenate([d for _, d in parts])

    @staticmethod
    def _partition_verdicts(
        pm: PlanningManifest,
        evaluator: _SpecEvaluators,
        cache: dict[tuple[int, tuple[Any, ...]], bool],
    ) -> np.ndarray:
        """Per row, whether its partition tuple can match (evaluated once per tuple)."""
        projected = evaluator.partition_expr
        if isinstance(projected, AlwaysTrue):
            return np.ones(pm.num_rows, dtype=bool)
        spec_id = evaluator.spec.spec_id
        distinct = np.empty(len(pm.partitions), dtype=bool)
        for i, (values, key) in enumerate(zip(pm.partitions, pm.partition_keys, strict=True)):
            found = cache.get((spec_id, key))
            if found is None:
                found = evaluator.partition_matches(values)
                cache[(spec_id, key)] = found
            distinct[i] = found
        return distinct[pm.codes] if pm.num_rows else np.zeros(0, dtype=bool)

    def _tasks(self, block: _Block, index: DeleteIndex, lo: int, hi: int) -> list[FileScanTask]:
        rows = block.rows[lo:hi]
        spec = block.evaluators.spec
        out: list[FileScanTask] = []
        for row, entry in zip(rows, block.manifest.entries(rows), strict=True):
            data_file = entry.data_file
            sequence_number = entry.sequence_number or 0
            code = int(block.manifest.codes[row])
            residual = block.residuals.get(code)
            if residual is None:
                residual = block.evaluators.residual(data_file.partition)
                block.residuals[code] = residual
            out.append(
                FileScanTask(
                    data_file=data_file,
                    data_sequence_number=sequence_number,
                    spec=spec,
                    schema=self.schema,
                    delete_files=index.for_data_file(data_file, sequence_number),
                    residual=residual,
                )
            )
        return out

    # -- delete files ----------------------------------------------------------------

    def _delete_entries(
        self,
        manifests: list[ManifestFile],
        for_spec: Callable[[int], _SpecEvaluators],
        file_might_match: MetricsEvaluator,
        report: ReportBuilder,
    ) -> list[ManifestEntry]:
        kept: list[ManifestEntry] = []
        counts = report.counts
        surviving: list[tuple[ManifestFile, _SpecEvaluators]] = []
        for manifest in manifests:
            if manifest.content is not ManifestContent.DELETES:
                continue
            counts["delete_manifests"] += 1
            evaluator = for_spec(manifest.partition_spec_id)
            if not evaluator.manifest_might_match(manifest):
                counts["delete_manifests_pruned"] += 1
                report.prune(
                    PruneLevel.DELETE_MANIFEST,
                    manifest.manifest_path,
                    evaluator.manifest_reason(manifest),
                )
                continue
            surviving.append((manifest, evaluator))
        loaded = self._load([m for m, _ in surviving])
        for pm, (_, evaluator) in zip(loaded, surviving, strict=True):
            for entry in pm.entries(range(pm.num_rows)):
                counts["delete_files"] += 1
                level = _prune_file(
                    evaluator,
                    entry.data_file,
                    file_might_match,
                    PruneLevel.DELETE_PARTITION,
                    report,
                )
                if level is None:
                    kept.append(entry)
        return kept


def _manifest_verdicts(
    manifest_list: ManifestListColumns, group: SpecManifests, evaluator: _SpecEvaluators
) -> np.ndarray:
    """Per manifest of one spec, whether its summaries might match (Java's verdict).

    The summaries are judged all at once over columns; the few the columns cannot judge
    exactly go to the row evaluator.
    """
    if isinstance(evaluator.partition_expr, AlwaysTrue):
        return np.ones(group.num_rows, dtype=bool)
    might, decided = _verdicts(evaluator.summary_filter(group))
    for j in np.flatnonzero(~decided).tolist():
        manifest = manifest_list.manifest(int(group.rows[j]))
        might[j] = evaluator.manifest_might_match(manifest)
    return might


def _pruned_manifests(
    manifest_list: ManifestListColumns,
    rows: np.ndarray,
    for_spec: Callable[[int], _SpecEvaluators],
    lo: int,
    hi: int,
) -> list[PrunedItem]:
    """Pruned manifests ``lo:hi``, reasons worked out now."""
    items: list[PrunedItem] = []
    for i in rows[lo:hi].tolist():
        manifest = manifest_list.manifest(i)
        reason = for_spec(manifest.partition_spec_id).manifest_reason(manifest)
        items.append(PrunedItem(PruneLevel.MANIFEST, manifest.manifest_path, reason))
    return items


def _pruned_files(
    pm: PlanningManifest,
    rows: np.ndarray,
    by_partition: np.ndarray,
    partition_expr: Expression,
    might_match: MetricsEvaluator,
    levels: tuple[PruneLevel, PruneLevel],
    lo: int,
    hi: int,
) -> list[PrunedItem]:
    """Pruned items ``lo:hi`` of one manifest, reasons worked out now."""
    items: list[PrunedItem] = []
    for flag, entry in zip(by_partition[lo:hi], pm.entries(rows[lo:hi]), strict=True):
        data_file = entry.data_file
        if flag:
            reason = f"partition values exclude {partition_expr}"
            items.append(PrunedItem(levels[0], data_file.file_path, reason))
        else:
            reason = might_match.explain(data_file) or "column metrics exclude the filter"
            items.append(PrunedItem(levels[1], data_file.file_path, reason))
    return items


_METRICS_LEVEL = {
    PruneLevel.PARTITION: PruneLevel.METRICS,
    PruneLevel.DELETE_PARTITION: PruneLevel.DELETE_METRICS,
}


def _prune_file(
    evaluator: _SpecEvaluators,
    file: DataFile,
    might_match: MetricsEvaluator,
    partition_level: PruneLevel,
    report: ReportBuilder,
) -> PruneLevel | None:
    """Prune one delete file by partition values, then by column metrics.

    Returns the level that pruned it (recorded in ``report`` with the reason), or None when
    the file stays in the plan.
    """
    if not evaluator.partition_matches(file.partition):
        reason = f"partition values exclude {evaluator.partition_expr}"
        report.prune(partition_level, file.file_path, reason)
        return partition_level
    if not might_match(file):
        level = _METRICS_LEVEL[partition_level]
        reason = might_match.explain(file) or "column metrics exclude the filter"
        report.prune(level, file.file_path, reason)
        return level
    return None


__all__ = ["Plan", "TableScan", "TaskList"]
