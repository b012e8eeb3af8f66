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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icecore.errors import InvalidMetadata
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
    read_manifest,
)
from icecore.metadata import Snapshot
from icecore.partitioning import PartitionSpec
from icecore.read import NAME_MAPPING_PROPERTY, arrow_schema_for, read_tasks, unified_partition_type
from icecore.scan.delete_index import DeleteIndex
from icecore.scan.manifest_cache import MANIFESTS, ManifestKey
from icecore.scan.report import PlanReport, PruneLevel, ReportBuilder
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.types import StructType

if TYPE_CHECKING:
    from icecore.table import Table

LIVE = (ManifestEntryStatus.ADDED, ManifestEntryStatus.EXISTING)


@dataclass(frozen=True, slots=True)
class _SpecEvaluators:
    """Everything that depends on one partition spec, built once per scan."""

    spec: PartitionSpec
    manifest_might_match: Callable[[ManifestFile], bool]
    manifest_reason: Callable[[ManifestFile], str]
    partition_matches: Callable[[dict[int, Any]], bool]
    partition_expr: Expression
    residual: Callable[[dict[int, Any]], Expression]


@dataclass(frozen=True, slots=True)
class Plan:
    """The result of planning: tasks, the pruning report, and what reading them needs.

    Attributes:
        tasks: one per planned data file, with its deletes and residual filter.
        report: counts and reasons per pruning level.
        schema: the schema rows are read with (the snapshot's own).
        io: the table's FileIO.
        name_mapping: the table's ``schema.name-mapping.default``, for files without ids.
        partition_type: the ``_partition`` struct over all the table's specs (as Spark's).
    """

    tasks: tuple[FileScanTask, ...]
    report: PlanReport
    schema: Schema
    io: FileIO
    name_mapping: str | None = None
    partition_type: StructType | None = None

    @property
    def data_files(self) -> list[str]:
        """Paths of the planned data files."""
        return [t.data_file.file_path for t in self.tasks]

    @property
    def delete_files(self) -> list[str]:
        """Paths of the distinct delete files the tasks apply, in first-use order."""
        seen: dict[str, None] = {}
        for task in self.tasks:
            for delete in task.delete_files:
                seen.setdefault(delete.file_path, None)
        return list(seen)

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
            return self._plan((), report)
        expr = rewrite_not(self.filter)
        manifests = self.table.manifests(self.snapshot)
        evaluators: dict[int, _SpecEvaluators] = {}

        def for_spec(spec_id: int) -> _SpecEvaluators:
            found = evaluators.get(spec_id)
            if found is None:
                found = self._spec_evaluators(spec_id, expr)
                evaluators[spec_id] = found
            return found

        file_might_match = metrics_evaluator(self.schema, expr)
        data_entries = self._data_entries(manifests, for_spec, file_might_match, report)
        delete_might_match = metrics_evaluator(self.schema, expr, evaluate_delete_files=True)
        delete_entries = self._delete_entries(manifests, for_spec, delete_might_match, report)
        index = DeleteIndex(delete_entries, self.table.metadata.specs_by_id(), self.schema)
        tasks: list[FileScanTask] = []
        applied: set[str] = set()
        for entry in data_entries:
            data_file = entry.data_file
            sequence_number = entry.sequence_number or 0
            deletes = index.for_data_file(data_file, sequence_number)
            applied.update(d.file_path for d in deletes)
            evaluator = for_spec(data_file.spec_id)
            tasks.append(
                FileScanTask(
                    data_file=data_file,
                    data_sequence_number=sequence_number,
                    spec=evaluator.spec,
                    schema=self.schema,
                    delete_files=deletes,
                    residual=evaluator.residual(data_file.partition),
                )
            )
            report.counts["rows_planned"] += data_file.record_count
        report.counts["data_files_planned"] = len(tasks)
        report.counts["delete_files_applied"] = len(applied)
        return self._plan(tuple(tasks), report)

    def _plan(self, tasks: tuple[FileScanTask, ...], report: ReportBuilder) -> Plan:
        metadata = self.table.metadata
        return Plan(
            tasks=tasks,
            report=report.build(),
            schema=self.schema,
            io=self.table.io,
            name_mapping=metadata.properties.get(NAME_MAPPING_PROPERTY),
            partition_type=unified_partition_type(metadata.partition_specs, self.schema),
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
        )

    def _entries(self, manifest: ManifestFile, spec: PartitionSpec) -> tuple[ManifestEntry, ...]:
        metadata = self.table.metadata
        key = ManifestKey(
            table_uuid=metadata.table_uuid or metadata.location,
            path=manifest.manifest_path,
            length=manifest.manifest_length,
            spec_id=spec.spec_id,
            schema_id=self.schema.schema_id,
            format_version=metadata.format_version,
        )

        def load() -> list[ManifestEntry]:
            entries = read_manifest(
                self.table.io, manifest, self.schema, spec, metadata.format_version
            )
            return [e for e in entries if e.status in LIVE]

        return MANIFESTS.get_or_load(key, load)

    def _data_entries(
        self,
        manifests: list[ManifestFile],
        for_spec: Callable[[int], _SpecEvaluators],
        file_might_match: MetricsEvaluator,
        report: ReportBuilder,
    ) -> list[ManifestEntry]:
        kept: list[ManifestEntry] = []
        counts = report.counts
        for manifest in manifests:
            if manifest.content is not ManifestContent.DATA:
                continue
            counts["data_manifests"] += 1
            evaluator = for_spec(manifest.partition_spec_id)
            if not evaluator.manifest_might_match(manifest):
                live = (manifest.added_files_count or 0) + (manifest.existing_files_count or 0)
                rows = (manifest.added_rows_count or 0) + (manifest.existing_rows_count or 0)
                counts["data_manifests_pruned"] += 1
                counts["data_files"] += live
                counts["files_pruned_by_manifest"] += live
                counts["rows"] += rows
                report.prune(
                    PruneLevel.MANIFEST, manifest.manifest_path, evaluator.manifest_reason(manifest)
                )
                continue
            for entry in self._entries(manifest, evaluator.spec):
                data_file = entry.data_file
                if data_file.content is not DataFileContent.DATA:
                    continue
                counts["data_files"] += 1
                counts["rows"] += data_file.record_count
                level = _prune_file(
                    evaluator, data_file, file_might_match, PruneLevel.PARTITION, report
                )
                if level is PruneLevel.PARTITION:
                    counts["files_pruned_by_partition"] += 1
                elif level is PruneLevel.METRICS:
                    counts["files_pruned_by_metrics"] += 1
                else:
                    kept.append(entry)
        return kept

    def _delete_entries(
        self,
        manifests: list[ManifestFile],
        for_spec: Callable[[int], _SpecEvaluators],
        file_might_match: MetricsEvaluator,
        report: ReportBuilder,
    ) -> list[ManifestEntry]:
        kept: list[ManifestEntry] = []
        counts = report.counts
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
            for entry in self._entries(manifest, evaluator.spec):
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
    """Prune one data or delete file by partition values, then by column metrics.

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


__all__ = ["Plan", "TableScan"]
