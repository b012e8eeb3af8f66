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
partition summaries judged all at once (:mod:`icecore.expressions.arrow_summaries`).
Data manifests are read in columns (:mod:`icecore.scan.planning_manifest`, cached by
:mod:`icecore.scan.manifest_cache`) and pruned a manifest at a time by partition (once per
distinct partition tuple) and all at once by metrics (:mod:`icecore.expressions.arrow_metrics`,
whose per-row slow path settles what its kernels cannot, so every verdict is Java's). Tasks
and pruned items are made when read, so a plan of a million files holds
arrays, not a million objects (docs/ARCHITECTURE.md "Performance").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from icecore.access import FULL_ACCESS, Access
from icecore.compute import pc
from icecore.errors import Forbidden, InvalidMetadata
from icecore.expressions.arrow_metrics import (
    METRIC_KINDS,
    arrow_metrics_filter,
    referenced_field_ids,
)
from icecore.expressions.arrow_summaries import ArrowSummaryFilter, arrow_summary_filter
from icecore.expressions.evaluator import row_evaluator
from icecore.expressions.manifest_eval import manifest_evaluator
from icecore.expressions.metrics_eval import MetricsEvaluator, metrics_evaluator
from icecore.expressions.model import AlwaysTrue, Expression, flatten
from icecore.expressions.projection import inclusive_projection
from icecore.expressions.residual import residual_evaluator
from icecore.expressions.row_filter import filter_field_ids
from icecore.io import FileIO
from icecore.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icecore.manifest_arrow import RawManifest, read_manifests_avro
from icecore.manifest_list_columns import ManifestListColumns, SpecManifests
from icecore.metadata import Snapshot
from icecore.partitioning import PartitionSpec
from icecore.point_in_time import Point
from icecore.progress import listening, report
from icecore.read import NAME_MAPPING_PROPERTY, arrow_schema_for, read_tasks, unified_partition_type
from icecore.row_access import (
    PARTITION_COLUMN,
    check_columns,
    check_filter_ids,
    masked_ids,
    null_struct_fields,
    readable_schema,
    reads_values,
    require_rows,
)
from icecore.scan.context import (
    FileVerdicts,
    PlanContext,
    ScanKey,
    bind_filter,
    default_context,
)
from icecore.scan.decode_pool import DecodeJob, env_count, read_ahead, start_decoding
from icecore.scan.delete_index import DeleteIndex
from icecore.scan.manifest_cache import ManifestKey
from icecore.scan.planned import (
    TASK_COLUMNS,
    BlockColumns,
    PlannedBlock,
    PlannedFiles,
    TaskList,
    block_columns,
    tasks_table,
)
from icecore.scan.planning_manifest import (
    PlanningManifest,
    batch_distinct_partitions,
    metric_column,
    planning_manifests,
)
from icecore.scan.report import PlanReport, PrunedItem, PruneLevel, ReportBuilder
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.table_data import access_of
from icecore.types import StructType

if TYPE_CHECKING:
    from icecore.scan.count import RowCount
    from icecore.table_data import TableData


DECODE_BATCH = 8
"""Manifests read and converted together by the planning process (one thread's task).

Converting 4 manifests at once instead of 1 saves ~1 ms of Arrow call overheads per
manifest, and reading 8 Avro files as one saves polars' fixed cost per file (measured on
200 manifests of ~500 entries: 0.61 s alone, 0.47 s by 4, 0.45 s by 8, 0.44 s by 32);
larger batches raise the process's peak memory ~2 MiB per manifest per thread (mimalloc
keeps what a batch's temporaries used). Worker processes convert more at a time
(:data:`icecore.scan.decode_worker.CONVERT`)."""
TASKS_AT_A_TIME = 1024
"""Tasks :meth:`TableScan.plan_files` makes at a time (as a plan's task list does)."""
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
    fingerprint: str
    """The spec's fields as text: what verdicts cached under a spec id depend on."""


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
        planned: the planned rows as columns, which :meth:`files` and the tasks read.
        access: what the principal the plan is read for may do with the table
            (:func:`icecore.table_data.access_of`): reading rows needs the reader role and
            leaves out the masked columns (:mod:`icecore.row_access`); the plan itself is
            viewer-level.
        what: the table's name, as a refusal says it.
        filter_ids: the field ids the scan's row filter reads (a filtered read depends on
            values, so even a count under it needs the reader role).
        partition_sources: ``(partition field id, source column id)`` of every spec, so
            that :meth:`files` can null the partition values of a masked column.
    """

    tasks: Sequence[FileScanTask]
    report: PlanReport
    schema: Schema
    io: FileIO
    name_mapping: str | None = None
    partition_type: StructType | None = None
    applied_deletes: tuple[str, ...] = ()
    planned: PlannedFiles | None = None
    access: Access = FULL_ACCESS
    what: str = ""
    filter_ids: frozenset[int] = frozenset()
    partition_sources: tuple[tuple[int, int], ...] = ()

    def with_access(self, access: Access, what: str) -> Plan:
        """This plan as another principal reads it (the app shares a plan between sessions).

        Raises:
            Forbidden: the scan's filter reads a column ``access`` masks
                (:func:`icecore.row_access.check_filter`).
        """
        check_filter_ids(self.schema, access, self.filter_ids, what)
        return replace(self, access=access, what=what)

    def _hidden_partition_fields(self) -> frozenset[int]:
        hidden = masked_ids(self.schema, self.access)
        return frozenset(p for p, source in self.partition_sources if source in hidden)

    def read_schema(
        self, columns: Sequence[str] | None = None, metadata_columns: Sequence[str] = ()
    ) -> Schema:
        """The schema a read of ``columns`` projects from, after the checks of the access.

        A read that returns or depends on row values (:func:`icecore.row_access.reads_values`)
        needs the reader role; a masked column asked for by name is refused; every column
        (None) is every unmasked one; ``_partition`` is refused when a partition field's
        source is masked. A count (no column, no filter) is viewer-level.

        Raises:
            Forbidden: as above, one sentence.
        """
        access, what = self.access, self.what or "this table"
        if reads_values(columns, metadata_columns, self.filter_ids):
            require_rows(access, what)
        if not access.mask:
            return self.schema
        check_filter_ids(self.schema, access, self.filter_ids, what)
        check_columns(self.schema, access, columns, what)
        if PARTITION_COLUMN in metadata_columns and self._hidden_partition_fields():
            raise Forbidden(
                f"You cannot read {PARTITION_COLUMN} of {what}: a partition field's source "
                "column is masked for you, and its partition values are that column's values."
            )
        return readable_schema(self.schema, access)

    def arrow_schema(
        self, columns: Sequence[str] | None = None, metadata_columns: Sequence[str] = ()
    ) -> pa.Schema:
        """The Arrow schema of :meth:`to_batches` for these columns (masks applied)."""
        return arrow_schema_for(
            self.read_schema(columns, metadata_columns),
            columns,
            metadata_columns,
            self.partition_type,
        )

    @property
    def data_files(self) -> list[str]:
        """Paths of the planned data files."""
        if self.planned is not None:
            return self.planned.paths()
        return [t.file_path for t in self.tasks]

    def files(self, limit: int | None = None) -> pa.Table:
        """The planned data files as one Arrow table, one row per task, in task order.

        Columns: ``file_path``, ``file_format``, ``spec_id``, ``partition`` (the
        ``_partition`` struct over all specs), ``record_count``, ``file_size_in_bytes``,
        ``data_sequence_number``, ``delete_files`` (list of ``{file_path, kind}``, kind
        ``position``, ``equality`` or ``deletion_vector``) and ``residual`` (as text). Taken
        from the decoded manifests' columns, with no Python object per file, and made once.
        ``limit``: the first ``limit`` files only (a page's list), read from as few
        manifests as hold them.
        """
        if self.planned is not None:
            found = self.planned.table(limit)
        else:
            tasks = self.tasks if limit is None else self.tasks[:limit]
            found = tasks_table(tasks, self.partition_type)
        hidden = self._hidden_partition_fields() if self.access.mask else frozenset()
        if not hidden:
            return found
        index = found.schema.get_field_index("partition")
        nulled = null_struct_fields(found.column(index), hidden)
        return found.set_column(index, found.schema.field(index), nulled)

    @property
    def delete_files(self) -> list[str]:
        """Paths of the distinct delete files the tasks apply, in first-use order."""
        return list(self.applied_deletes)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        metadata_columns: Sequence[str] = (),
        *,
        ordered: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """Stream the rows of the plan (deletes and residual applied) as record batches.

        Files are read on several threads (:mod:`icecore.read.parallel`); ``ordered=False``
        gives batches as files finish (same rows, another order: counts, aggregates).

        Checked first, before a file is opened (:meth:`read_schema`): rows need the reader
        role and never hold a masked column.

        Raises:
            Forbidden: the principal may not read these rows or columns.
        """
        projection = self.read_schema(columns, metadata_columns)
        return read_tasks(
            self.io,
            self.tasks,
            projection,
            columns=columns,
            metadata_columns=metadata_columns,
            name_mapping=self.name_mapping,
            partition_type=self.partition_type,
            limit=limit,
            ordered=ordered,
        )

    def count(self, *, read_bound: int | None = None) -> RowCount:
        """The plan's live rows, Spark's ``count(*)``, read only where metadata cannot tell.

        See :mod:`icecore.scan.count`: files without deletes under a filter their partition
        decides are counted from the manifest, files with only position deletes or deletion
        vectors from those, the rest read (only the columns deletes and filter need).
        ``read_bound``: raise :class:`~icecore.scan.count.CountTooLarge` before reading
        when more bytes than that must be read.
        """
        from icecore.scan.count import count_rows

        return count_rows(self, read_bound=read_bound)

    def to_arrow(
        self,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        metadata_columns: Sequence[str] = (),
        *,
        ordered: bool = True,
    ) -> pa.Table:
        """The rows of the plan as one Arrow table (deletes and residual applied)."""
        schema = self.arrow_schema(columns, metadata_columns)
        batches = list(self.to_batches(columns, limit, metadata_columns, ordered=ordered))
        return pa.Table.from_batches(batches, schema=schema)


class _Columns:
    """Metrics of the data files of many manifests, as chunked columns (one chunk each)."""

    def __init__(self, tables: Sequence[pa.Table]) -> None:
        self._tables = tables
        self._memo: dict[str, pa.ChunkedArray | None] = {}
        self.num_rows = sum(t.num_rows for t in tables)

    def _chunked(self, name: str) -> pa.ChunkedArray | None:
        if name in self._memo:
            return self._memo[name]
        columns = [
            t.column(name) if t.schema.get_field_index(name) >= 0 else None for t in self._tables
        ]
        kind = next((c.type for c in columns if c is not None), None)
        found = None
        if kind is not None:
            chunks: list[pa.Array] = []
            for c, t in zip(columns, self._tables, strict=True):
                chunks.extend(c.chunks if c is not None else [pa.nulls(t.num_rows, kind)])
            found = pa.chunked_array(chunks, kind)
        self._memo[name] = found
        return found

    def record_counts(self) -> pa.ChunkedArray:
        found = self._chunked("record_count")
        return found if found is not None else pa.chunked_array([], pa.int64())

    def metric(self, kind: str, field_id: int) -> pa.ChunkedArray | None:
        return self._chunked(metric_column(kind, field_id))


def _verdicts(found: pa.ChunkedArray) -> np.ndarray:
    """Might match, as numpy booleans, from a verdict column of the Arrow filters.

    The filters settle every row (their slow path judges what the kernels cannot), so a null
    never comes; were one to, it would keep the file, which never loses a row.
    """
    return np.asarray(pc.fill_null(found, True).to_numpy(zero_copy_only=False), dtype=bool)


def check_specs(table: TableData, manifests: Sequence[ManifestFile]) -> None:
    """Refuse manifests whose partition spec the table lacks, before anything is read.

    Raises:
        InvalidMetadata: naming the first such manifest and its spec.
    """
    metadata = table.metadata
    for m in manifests:
        if metadata.spec_by_id(m.partition_spec_id) is None:
            raise InvalidMetadata(
                f"Manifest {m.manifest_path} uses partition spec {m.partition_spec_id}, "
                f"which {table.metadata_location} lacks."
            )


class TableScan:
    """A filtered read of one snapshot of a table; ``plan()`` does the work.

    Args:
        table: the table.
        filter: a SQL boolean expression (or an already built expression).
        at: which snapshot, and the schema to read it with (default: the current ones); a
            point already resolved in ``table`` is used as it is.
        case_sensitive: whether column names in the filter must match case.
        context: the caches plans share (default: the process's :func:`default_context`).
        column_stats: decode every manifest's metrics maps while planning, as Iceberg
            Java's ``includeColumnStats()``. A plan without a filter (and without deletes)
            otherwise leaves them out, as Java's ``planFiles()`` does (its decode is ~20%
            cheaper), and a task's maps are read when asked, its manifest decoded again: a
            caller that reads every task's maps (a served plan with ``stats-fields``) asks
            for them here instead.
    """

    def __init__(
        self,
        table: TableData,
        filter: str | Expression | None = None,
        *,
        at: Point | None = None,
        case_sensitive: bool = False,
        context: PlanContext | None = None,
        column_stats: bool = False,
    ) -> None:
        self.table = table
        self.column_stats = column_stats
        self.point = table.resolve(at)
        self.snapshot: Snapshot | None = self.point.snapshot
        self.schema = self.point.schema
        self.case_sensitive = case_sensitive
        if isinstance(filter, Expression):
            # Balanced before it is hashed as a key: hashing a chain of 10,000 hand-built
            # ANDs would recurse 10,000 levels.
            filter = flatten(filter)
        self.context = context if context is not None else default_context()
        metadata = table.metadata
        key: ScanKey | None = ScanKey(
            metadata.table_uuid or metadata.location,
            table.metadata_location,
            self.schema.schema_id,
            filter,
            case_sensitive,
        )
        try:
            bound = self.context.bound.get(key)  # type: ignore[arg-type]
        except TypeError:  # an expression holding unhashable values: bind it every time
            bound, key = None, None
        if bound is None:
            bound = bind_filter(self.schema, filter, case_sensitive)
            if key is not None:
                self.context.bound.put(key, bound)
        self._compiled_key = (
            metadata.table_uuid or metadata.location,
            table.metadata_location,
            self.schema.schema_id,
            bound.key,
            case_sensitive,
        )
        self.filter = bound.filter
        self._expr = bound.pruning
        self._rows = bound.rows
        self._expr_key = bound.key
        # Who reads: a filter on a masked column is refused before planning, since the
        # files its bounds prune would reveal the column's values (icecore.row_access).
        self.access = access_of(table)
        self._filter_ids = frozenset(filter_field_ids(bound.rows) | filter_field_ids(bound.pruning))
        check_filter_ids(self.schema, self.access, self._filter_ids, str(table.identifier))

    def plan(self) -> Plan:
        """Plan the scan: tasks with their deletes and residuals, and the pruning report."""
        with self.context.manifests.planning():
            return self._planned()

    def plan_files(self) -> Iterator[FileScanTask]:
        """The plan's tasks, yielded as each manifest is judged: Iceberg Java's ``planFiles()``.

        The tasks of :meth:`plan` in its order (deletes and residuals alike), but the first
        come while later manifests are still being decoded, so a caller that reads every task
        works while the decode workers do; there is no pruning report (:meth:`plan` has one).
        Delete manifests are read first, so every task has its delete files when yielded.
        Closing the iterator early stops the decode workers after their current batches.
        """
        with self.context.manifests.planning():
            report = self._report_builder()
            if self.snapshot is None:
                return
            manifest_list = self.table.manifest_list(self.snapshot)
            for_spec = self._for_spec()
            delete_entries = self._delete_entries(manifest_list, for_spec, report)
            index = (
                DeleteIndex(delete_entries, self.table.metadata.specs_by_id(), self.schema)
                if delete_entries
                else None
            )
            blocks = self._data_blocks(manifest_list, for_spec, self._expr, self._expr_key, report)
            try:
                for block in blocks:
                    if not len(block):
                        continue
                    block.schema = self.schema
                    if index is not None:
                        block.find_deletes(index)
                    for lo in range(0, len(block), TASKS_AT_A_TIME):
                        yield from block.tasks(lo, min(lo + TASKS_AT_A_TIME, len(block)))
            finally:
                blocks.close()

    def _report_builder(self) -> ReportBuilder:
        return ReportBuilder(
            self.snapshot.snapshot_id if self.snapshot else None,
            str(self.filter),
            pruning_filter=str(self._expr),
        )

    def _for_spec(self) -> Callable[[int], _SpecEvaluators]:
        """Each spec's evaluators of this scan's filter, compiled once (by spec id)."""
        evaluators: dict[int, _SpecEvaluators] = {}
        expr = self._expr

        def for_spec(spec_id: int) -> _SpecEvaluators:
            found = evaluators.get(spec_id)
            if found is None:
                found = self._compiled(
                    ("spec", spec_id), partial(self._spec_evaluators, spec_id, expr)
                )
                evaluators[spec_id] = found
            return found

        return for_spec

    def _planned(self) -> Plan:
        report = self._report_builder()
        if self.snapshot is None:
            return self._plan([], report, None)
        manifest_list = self.table.manifest_list(self.snapshot)
        for_spec = self._for_spec()
        blocks = list(
            self._data_blocks(manifest_list, for_spec, self._expr, self._expr_key, report)
        )
        delete_entries = self._delete_entries(manifest_list, for_spec, report)
        index = DeleteIndex(delete_entries, self.table.metadata.specs_by_id(), self.schema)
        counts = report.counts
        counts["data_files_planned"] = sum(len(b.rows) for b in blocks)
        counts["rows_planned"] = sum(b.rows_planned for b in blocks)
        if not delete_entries:
            return self._plan(blocks, report, None)
        # Deletes are looked up once per distinct partition tuple; only files some delete
        # may apply to are built as objects (PlannedBlock.find_deletes).
        for b in blocks:
            b.find_deletes(index)
        return self._plan(blocks, report, counts)

    def _plan(
        self,
        blocks: list[PlannedBlock],
        report: ReportBuilder,
        counts: dict[str, int] | None,
    ) -> Plan:
        """The plan of ``blocks``; ``counts`` given when the snapshot has deletes."""
        metadata = self.table.metadata
        partition_type = self._compiled(
            ("partition-type",),
            lambda: unified_partition_type(metadata.partition_specs, self.schema),
        )
        planned = PlannedFiles(blocks, self.schema, partition_type)
        applied: tuple[str, ...] = ()
        if counts is not None:
            applied = planned.applied_deletes()
            counts["delete_files_applied"] = len(applied)
        return Plan(
            tasks=planned.tasks(),
            report=report.build(),
            schema=self.schema,
            io=self.table.io,
            name_mapping=metadata.properties.get(NAME_MAPPING_PROPERTY),
            partition_type=partition_type,
            applied_deletes=applied,
            planned=planned,
            access=self.access,
            what=str(self.table.identifier),
            filter_ids=self._filter_ids,
            partition_sources=tuple(
                (pf.field_id, pf.source_id)
                for spec in metadata.partition_specs
                for pf in spec.fields
            ),
        )

    def _compiled(self, what: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """An evaluator compiled for this scan's metadata, schema and filter, made once.

        Compiling the filter for a spec (projections, summary and row evaluators, residuals)
        is most of what planning the same filter again costs; they depend on nothing else.
        """
        return self.context.compiled.get_or_make((*self._compiled_key, *what), make)

    def _file_metrics(self, expr: Expression) -> MetricsEvaluator:
        """The row evaluator of data files' column metrics, compiled once."""
        return self._compiled(("metrics",), lambda: metrics_evaluator(self.schema, expr))

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
            residual=residual_evaluator(spec, self.schema, self._rows, self.case_sensitive),
            summary_filter=arrow_summary_filter(spec, self.schema, projected),
            fingerprint=repr(spec.fields),
        )

    # -- loading ---------------------------------------------------------------------

    def load_manifests(
        self, manifests: Sequence[ManifestFile], what: str = "Reading manifests"
    ) -> list[PlanningManifest]:
        """The planning form of ``manifests`` (data or delete), decoded as a plan decodes them.

        The same decode, caches (memory, disk) and worker processes as :meth:`plan`, for
        readers of every live file of a snapshot (:func:`icecore.layout.snapshot_files`);
        progress goes to :mod:`icecore.progress` as ``what``.

        Raises:
            InvalidMetadata: a manifest names a partition spec the table lacks (checked
                before anything is read), or is corrupt.
            NotFound: a manifest does not exist.
        """
        check_specs(self.table, manifests)
        if not manifests:
            return []
        with self.context.manifests.planning():
            return [pm for _, pm in self._load(manifests, what)]

    def _load(
        self, manifests: Sequence[ManifestFile], what: str = "Reading manifests"
    ) -> list[tuple[ManifestKey, PlanningManifest]]:
        """The planning form of each manifest, with its cache key.

        Cached, or decoded (in worker processes when many); ``what`` names the reading to
        the progress listener (:mod:`icecore.progress`).
        """
        return list(self._loading(self._jobs(manifests), what))

    def _jobs(self, manifests: Sequence[ManifestFile], *, metrics: bool = True) -> list[DecodeJob]:
        """Each manifest with its cache key.

        ``metrics=False``: the plan needs no metrics maps, so a manifest not cached yet is
        decoded without them (:func:`~icecore.manifest_arrow.read_manifests_avro`); one
        cached with them is used as it is.
        """
        metadata = self.table.metadata
        cache = self.context.manifests
        types: dict[int, str] = {}
        jobs: list[DecodeJob] = []
        for manifest in manifests:
            spec = metadata.spec_by_id(manifest.partition_spec_id)
            assert spec is not None  # checked by _spec_evaluators
            if spec.spec_id not in types:
                types[spec.spec_id] = self._compiled(
                    ("partition-type", spec.spec_id),
                    partial(_partition_type_text, spec, self.schema),
                )
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
            if not metrics:
                without = replace(key, metrics=False)
                if cache.contains(without) or not cache.contains(key):
                    key = without
            jobs.append(DecodeJob(key, manifest, spec.spec_id))
        return jobs

    def _loading(
        self, jobs: Sequence[DecodeJob], what: str = "Reading manifests"
    ) -> Generator[tuple[ManifestKey, PlanningManifest], None, None]:
        """The planning form of each job's manifest, in order, as each becomes available.

        With many misses the worker processes decode them, and each manifest is yielded
        once its batch is back, so the caller judges it while the workers decode the next
        ones; a manifest no worker decoded is decoded here.
        """
        metadata = self.table.metadata
        specs = metadata.specs_by_id()
        cache = self.context.manifests
        decoding = start_decoding(
            cache, self.table.io, self.schema, specs, metadata.format_version, jobs
        )
        if decoding is None:
            yield from self._decode_here(jobs, what)
            return
        finished = False
        told = listening()
        try:
            for done, job in enumerate(jobs, start=1):
                decoding.wait_for(job.key)
                found = cache.lookup(job.key)
                if found is None:  # a worker failed on it: decoded (or its error raised) here
                    ((_, found),) = self._decode_here([job])
                if told:
                    report(what, done, len(jobs))
                yield job.key, found
            finished = True
        finally:
            decoding.join(cancel=not finished)

    def _decode_here(
        self, jobs: Sequence[DecodeJob], what: str | None = None
    ) -> Iterator[tuple[ManifestKey, PlanningManifest]]:
        """The planning form of each job's manifest, in order: cached, or decoded here.

        Misses are read, their Avro decoded and laid out for planning DECODE_BATCH
        manifests of one spec at a time on threads (polars and Arrow's kernels release the
        GIL), ahead of the caller, which judges each manifest as it comes.
        ``what``: the progress listener is told it and how many are done after each batch.
        """
        metadata = self.table.metadata
        specs = metadata.specs_by_id()
        manifests_cache = self.context.manifests
        io = self.table.io
        schema = self.schema
        found: list[PlanningManifest | None] = [manifests_cache.lookup(job.key) for job in jobs]
        missing = [j for j, pm in enumerate(found) if pm is None]
        ready = len(jobs) - len(missing)
        batches = list(_decode_batches(missing, [(job.spec_id, job.key.metrics) for job in jobs]))

        def convert(batch: list[int]) -> tuple[list[PlanningManifest], Exception | None]:
            raws: list[RawManifest] = []
            failed: Exception | None = None
            metrics = jobs[batch[0]].key.metrics
            for raw in read_manifests_avro(io, [jobs[j].manifest for j in batch], metrics=metrics):
                if isinstance(raw, Exception):
                    failed = raw
                    break
                raws.append(raw)
            spec = specs[jobs[batch[0]].spec_id]
            built = planning_manifests(raws, schema, spec, metadata.format_version) if raws else []
            return built, failed

        ahead = read_ahead(convert, batches, _plan_threads())
        at = 0
        try:
            for batch, (built, failed) in zip(batches, ahead, strict=True):
                kept = manifests_cache.add_many(
                    [(jobs[j].key, pm) for j, pm in zip(batch, built, strict=False)]
                )
                for j, pm in zip(batch, kept, strict=False):
                    found[j] = pm
                del built, kept
                if failed is not None:
                    raise failed
                ready += len(batch)
                if what is not None:
                    report(what, ready, len(jobs))
                while at < len(jobs) and found[at] is not None:
                    yield jobs[at].key, found[at]  # type: ignore[misc]
                    at += 1
        finally:
            # Stop the threads here, on this thread. Left to the garbage collector (an error's
            # traceback holds the generator), the pool could be shut down from one of its own
            # threads, which cannot join itself.
            ahead.close()
        for job, held in zip(jobs[at:], found[at:], strict=True):
            assert held is not None
            yield job.key, held

    # -- data files ------------------------------------------------------------------

    def _data_blocks(
        self,
        manifest_list: ManifestListColumns,
        for_spec: Callable[[int], _SpecEvaluators],
        expr: Expression,
        expr_key: str,
        report: ReportBuilder,
    ) -> Generator[PlannedBlock, None, None]:
        """The planned rows of each kept data manifest, in plan order, as each is judged.

        Manifests are pruned by the manifest list first (all at once); the kept ones are
        then loaded (decode workers go on with the next ones while a block is used) and
        judged in batches, and each block is yielded once its manifest's batch is judged.
        """
        counts = report.counts
        is_data = manifest_list.content == int(ManifestContent.DATA)
        keep = np.zeros(len(manifest_list), dtype=bool)
        table_key = self.table.metadata.table_uuid or self.table.metadata.location
        for spec_id in np.unique(manifest_list.spec_ids[is_data]).tolist():
            group = manifest_list.spec_manifests(ManifestContent.DATA, spec_id)
            evaluator = for_spec(spec_id)
            summary_key = (
                table_key,
                manifest_list.records.path,
                spec_id,
                evaluator.fingerprint,
                expr_key,
            )
            keep[group.rows] = self.context.summary_verdicts.get_or_make(
                summary_key, partial(_manifest_verdicts, group, evaluator)
            )
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
        kept_rows = np.flatnonzero(keep)
        kept = [
            (m, for_spec(int(spec_id)))
            for m, spec_id in zip(
                manifest_list.manifests(kept_rows),
                manifest_list.spec_ids[kept_rows].tolist(),
                strict=True,
            )
        ]
        # Without a filter and without deletes no plan step reads a metrics map: decoded
        # without them (as Iceberg Java's planFiles() does), and read in full only for a
        # task whose data file's maps are asked for (PlannedBlock's ``full``).
        metrics = (
            self.column_stats
            or not isinstance(expr, AlwaysTrue)
            or bool((manifest_list.content == int(ManifestContent.DELETES)).any())
        )
        jobs = self._jobs([m for m, _ in kept], metrics=metrics)
        verdicts_cache = self.context.file_verdicts
        judged: list[FileVerdicts | None] = [
            verdicts_cache.get((job.key, evaluator.fingerprint, expr_key))
            for job, (_, evaluator) in zip(jobs, kept, strict=True)
        ]
        missing = [j for j, v in enumerate(judged) if v is None]
        planned_cache = self.context.planned_columns
        fresh_columns: dict[int, BlockColumns] = {}
        loading = self._loading(jobs)
        loaded: list[tuple[ManifestKey, PlanningManifest]] = []

        def to_judge() -> Iterator[tuple[PlanningManifest, _SpecEvaluators]]:
            # Judged as they are loaded (decode workers go on with the next ones meanwhile).
            for j in missing:
                while len(loaded) <= j:
                    loaded.append(next(loading))
                yield loaded[j][1], kept[j][1]

        file_might_match = self._file_metrics(expr)
        fresh = self._judging(to_judge(), expr)
        try:
            for j, (_, evaluator) in enumerate(kept):
                verdicts = judged[j]
                if verdicts is None:
                    made, columns = next(fresh)
                    cache_key = (loaded[j][0], evaluator.fingerprint, expr_key)
                    verdicts = judged[j] = verdicts_cache.put(cache_key, made)
                    if columns is not None:
                        fresh_columns[j] = planned_cache.put(cache_key, columns)
                while len(loaded) <= j:
                    loaded.append(next(loading))
                key, pm = loaded[j]
                yield self._block(
                    key, pm, evaluator, kept[j][0], verdicts, expr_key, file_might_match,
                    report, fresh_columns.pop(j, None),
                )  # fmt: skip
            loaded.extend(loading)
        finally:
            loading.close()  # on an error: the workers stop after their current batches
            fresh.close()

    def _block(  # noqa: PLR0913 - one kept manifest's parts, as _data_blocks holds them
        self,
        key: ManifestKey,
        pm: PlanningManifest,
        evaluator: _SpecEvaluators,
        manifest: ManifestFile,
        verdicts: FileVerdicts,
        expr_key: str,
        file_might_match: MetricsEvaluator,
        report: ReportBuilder,
        columns: BlockColumns | None,
    ) -> PlannedBlock:
        """The planned rows of one kept manifest (counted and reported as judged)."""
        counts = report.counts
        planned_cache = self.context.planned_columns
        by_partition = int(verdicts.by_partition.sum())
        counts["data_files"] += verdicts.data_files
        counts["rows"] += verdicts.rows
        counts["files_pruned_by_partition"] += by_partition
        counts["files_pruned_by_metrics"] += len(verdicts.pruned) - by_partition
        if len(verdicts.pruned):
            report.prune_many(
                len(verdicts.pruned),
                partial(
                    _pruned_files,
                    pm,
                    verdicts.pruned,
                    verdicts.by_partition,
                    evaluator.partition_expr,
                    file_might_match,
                    (PruneLevel.PARTITION, PruneLevel.METRICS),
                ),
            )
        load = partial(
            planned_cache.get_or_make,
            (key, evaluator.fingerprint, expr_key),
            partial(
                block_columns,
                pm,
                verdicts.kept,
                evaluator.residual,
                isinstance(self._rows, AlwaysTrue),
            ),
        )
        return PlannedBlock(
            pm,
            evaluator.spec,
            verdicts.kept,
            verdicts.rows_planned,
            load,
            columns,
            None if key.metrics else partial(self._with_metrics, manifest),
        )

    def _with_metrics(self, manifest: ManifestFile) -> PlanningManifest:
        """``manifest`` decoded with its metrics maps (cached like any other)."""
        (found,) = self.load_manifests([manifest])
        return found

    def _judging(
        self, pending: Iterable[tuple[PlanningManifest, _SpecEvaluators]], expr: Expression
    ) -> Generator[tuple[FileVerdicts, BlockColumns | None], None, None]:
        """File verdicts of manifests new to this filter, and their kept rows' task columns.

        Yielded in ``pending``'s order, a batch at a time, as each batch is judged.

        The columns come with the verdicts only without a filter (every file kept, so they
        are read in the same pass); a filter's kept rows are read when first iterated.
        Each manifest's columns are read once, metrics judged over many manifests at a time
        (batches of :data:`METRICS_BATCH_ROWS` files keep the kernels' temporaries small),
        and the columns dropped when the batch is judged.
        """
        metric_names = (
            []
            if isinstance(expr, AlwaysTrue)
            else [
                metric_column(kind, fid)
                for fid in sorted(referenced_field_ids(expr))
                for kind in METRIC_KINDS
            ]
        )
        metrics_filter = (
            None
            if isinstance(expr, AlwaysTrue)
            else self._compiled(("arrow-metrics",), lambda: arrow_metrics_filter(expr))
        )
        tuples: dict[tuple[int, tuple[Any, ...]], bool] = {}
        no_residual = isinstance(self._rows, AlwaysTrue)
        keep_all = isinstance(expr, AlwaysTrue)
        batch: list[tuple[PlanningManifest, _SpecEvaluators, pa.Table]] = []
        rows = 0

        def flush() -> list[tuple[FileVerdicts, BlockColumns | None]]:
            out: list[tuple[FileVerdicts, BlockColumns | None]] = []
            if metrics_filter is None:
                might = np.ones(sum(t.num_rows for _, _, t in batch), dtype=bool)
            else:
                might = _verdicts(metrics_filter(_Columns([t for _, _, t in batch])))
            offset = 0
            in_partitions = _partition_verdicts(batch, tuples)
            for (pm, evaluator, table), in_partition in zip(batch, in_partitions, strict=True):
                n = table.num_rows
                verdicts = _judge_manifest(table, in_partition, might[offset : offset + n])
                # Without a filter every file is kept: what tasks and files() read of them is
                # taken from the columns already read (one read of the manifest, not a second
                # one when iterated). A filter keeps some: those are read when iterated.
                columns = (
                    block_columns(pm, verdicts.kept, evaluator.residual, no_residual, table)
                    if keep_all
                    else None
                )
                out.append((verdicts, columns))
                offset += n
            return out

        for pm, evaluator in pending:
            names = ["content", "record_count", *metric_names]
            if keep_all:
                names.extend(TASK_COLUMNS)
            elif not isinstance(evaluator.partition_expr, AlwaysTrue):
                names.append("partition")
            batch.append((pm, evaluator, pm.read(names)))
            rows += pm.num_rows
            if rows >= METRICS_BATCH_ROWS:
                judged = flush()
                batch, rows = [], 0
                yield from judged
        if batch:
            yield from flush()

    # -- delete files ----------------------------------------------------------------

    def _delete_entries(
        self,
        manifest_list: ManifestListColumns,
        for_spec: Callable[[int], _SpecEvaluators],
        report: ReportBuilder,
    ) -> list[ManifestEntry]:
        """The delete files the filter keeps, of every delete manifest (counted, reported)."""
        expr = self._expr
        file_might_match = self._compiled(
            ("delete-metrics",),
            lambda: metrics_evaluator(self.schema, expr, evaluate_delete_files=True),
        )
        manifests = manifest_list.manifests(
            np.flatnonzero(manifest_list.content == int(ManifestContent.DELETES))
        )
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
        loaded = self._load([m for m, _ in surviving], "Reading delete manifests")
        for (_, pm), (_, evaluator) in zip(loaded, surviving, strict=True):
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


def _judge_manifest(table: pa.Table, in_partition: np.ndarray, might: np.ndarray) -> FileVerdicts:
    """One manifest's file verdicts: partition first, then metrics, as ``ManifestGroup``.

    ``in_partition`` and ``might`` are the partition and metrics verdicts of each of its rows.
    """
    is_data = table.column("content").to_numpy() == int(DataFileContent.DATA)
    records = table.column("record_count").to_numpy()
    candidates = is_data & in_partition
    file_ok = might
    by_partition = is_data & ~in_partition
    pruned = np.flatnonzero(by_partition | (candidates & ~file_ok))
    kept = np.flatnonzero(candidates & file_ok)
    return FileVerdicts(
        kept=kept.astype(np.int32),
        pruned=pruned.astype(np.int32),
        by_partition=by_partition[pruned],
        data_files=int(is_data.sum()),
        rows=int(records[is_data].sum()),
        rows_planned=int(records[kept].sum()),
    )


def _partition_verdicts(
    batch: Sequence[tuple[PlanningManifest, _SpecEvaluators, pa.Table]],
    cache: dict[tuple[int, tuple[Any, ...]], bool],
) -> list[np.ndarray]:
    """Per manifest, per row, whether its partition tuple can match.

    Each distinct tuple is evaluated once (``cache``, by spec and bit-exact key); the
    tuples of a batch's manifests of one spec are coded together and the different ones
    converted once (:func:`batch_distinct_partitions`).
    """
    out: list[np.ndarray | None] = [None] * len(batch)
    judged: list[int] = []
    for at, (pm, evaluator, _) in enumerate(batch):
        if isinstance(evaluator.partition_expr, AlwaysTrue):
            out[at] = np.ones(pm.num_rows, dtype=bool)
        elif not pm.num_rows:
            out[at] = np.zeros(0, dtype=bool)
        else:
            judged.append(at)
    groups: dict[tuple[int, pa.DataType], list[tuple[int, pa.Array]]] = {}
    for at in judged:
        partition = batch[at][2].column("partition")
        if isinstance(partition, pa.ChunkedArray):
            partition = partition.combine_chunks()
        key = (batch[at][1].spec.spec_id, partition.type)
        groups.setdefault(key, []).append((at, partition))
    for (spec_id, _), members in groups.items():
        evaluator = batch[members[0][0]][1]
        (partitions, keys), where = batch_distinct_partitions(
            [(batch[at][0], partition) for at, partition in members]
        )
        distinct = np.empty(len(partitions), dtype=bool)
        for i, (values, key) in enumerate(zip(partitions, keys, strict=True)):
            verdict = cache.get((spec_id, key))
            if verdict is None:
                verdict = evaluator.partition_matches(values)
                cache[(spec_id, key)] = verdict
            distinct[i] = verdict
        for (at, _), positions in zip(members, where, strict=True):
            out[at] = distinct[positions][batch[at][0].codes]
    assert all(v is not None for v in out)
    return out  # type: ignore[return-value]


def _manifest_verdicts(group: SpecManifests, evaluator: _SpecEvaluators) -> np.ndarray:
    """Per manifest of one spec, whether its summaries might match (Java's verdict).

    The summaries are judged all at once over columns.
    """
    if isinstance(evaluator.partition_expr, AlwaysTrue):
        return np.ones(group.num_rows, dtype=bool)
    return _verdicts(evaluator.summary_filter(group))


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
    """Pruned items ``lo:hi`` of one manifest, reasons worked out now.

    Files pruned by partition need only their path (read from the column); a full data file
    is built only for those whose metrics reason must be explained.
    """
    chunk, flags = rows[lo:hi], by_partition[lo:hi]
    paths = pm.required("file_path").take(pa.array(chunk, pa.int64())).to_pylist()
    by_metrics = np.flatnonzero(~flags)
    explained = iter(pm.entries(chunk[by_metrics])) if len(by_metrics) else iter(())
    partition_reason = f"partition values exclude {partition_expr}"
    items: list[PrunedItem] = []
    for flag, path in zip(flags.tolist(), paths, strict=True):
        if flag:
            items.append(PrunedItem(levels[0], path, partition_reason))
        else:
            data_file = next(explained).data_file
            reason = might_match.explain(data_file) or "column metrics exclude the filter"
            items.append(PrunedItem(levels[1], path, reason))
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


def _decode_batches(missing: Sequence[int], groups: Sequence[Hashable]) -> Iterator[list[int]]:
    """``missing`` in order, cut into runs of at most DECODE_BATCH manifests of one group.

    A group: their spec, and whether their metrics are decoded.
    """
    batch: list[int] = []
    for j in missing:
        if batch and (len(batch) >= DECODE_BATCH or groups[j] != groups[batch[0]]):
            yield batch
            batch = []
        batch.append(j)
    if batch:
        yield batch


def _partition_type_text(spec: PartitionSpec, schema: Schema) -> str:
    """The partition struct's type as text (part of a manifest's cache key)."""
    return str(spec.partition_type(schema))


def clear_plan_caches() -> None:
    """Forget what the process's :func:`default_context` holds in memory (to free it)."""
    default_context().clear()


__all__ = ["Plan", "TableScan", "TaskList", "clear_plan_caches"]
