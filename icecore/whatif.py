"""What a new layout would save: the files and bytes each filter would read after a rewrite.

Issue 33 deliver 4, DESIGN.md "Workload" (``icecore whatif``). For a proposed partition spec
or sort order, each filter's scan is estimated on the table as Spark's
``rewrite_data_files`` would leave it, next to what the same filter plans today.

How the estimate is made (and why it can be wrong):

1. **Rows.** The current snapshot's live rows (deletes applied), only the columns the layout
   and the filters read, each tagged with the data file it came from. Every row when the
   table has at most :data:`SAMPLE_ROWS`; otherwise whole data files drawn at random (fixed
   seed) until that many rows, each row then standing for ``rows / sampled`` rows. Whole
   files keep each file's clustering; a sample misses values no drawn file holds, so a
   filter on a rare value can be estimated to read nothing.
2. **The rewrite, as Iceberg's Spark rewriters write it** (``SparkBinPackDataRewriter``,
   ``SparkSortDataRewriter``): files are grouped by their current partition (one file group
   each); a group of ``B`` bytes is written by ``ceil(B / target)`` tasks, each writing one
   file per new partition it holds, rolled at ``write.target-file-size-bytes``. Binpack
   tasks take contiguous runs of the rows in file order; a sort rewrite range-partitions the
   group by (new partition, sort order), so each task holds one contiguous range. The new
   partition values come from the proposed spec's transforms (:mod:`icecore.transforms`).
   A row's size is the table's current data bytes per row: a sort can compress better, so
   byte counts (and so file counts) can be high by the compression it gains.
3. **Pruning, by the planner's own evaluators.** Each simulated file gets its partition
   tuple, record count, size, value/null/NaN counts and lower/upper bounds (strings and
   binary truncated to 16 characters, as Iceberg's default metrics mode writes them); each
   filter is judged with the inclusive projection onto the proposed spec, the partition
   evaluator and the metrics evaluator that planning uses (spec "Scan Planning").

:data:`STATED_ERROR` is the error this module claims; ``tests/icecore/test_whatif_spark.py``
measures it against Spark's real rewrites of copies of a table.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from icecore.compute import pc
from icecore.errors import FilterError, Unsupported, ValidationError
from icecore.expressions.evaluator import row_evaluator
from icecore.expressions.metrics_eval import metrics_evaluator
from icecore.expressions.projection import inclusive_projection
from icecore.expressions.row_filter import filter_field_ids
from icecore.manifest import DataFile, DataFileContent
from icecore.manifest_arrow import partition_columns
from icecore.partitioning import PartitionSpec
from icecore.read import read_tasks
from icecore.scan.context import bind_filter
from icecore.schema import Schema
from icecore.sorting import NullOrder, SortDirection, SortOrder
from icecore.types import (
    BinaryType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    StringType,
    UUIDType,
)
from icecore.values import to_bytes, whole_number

if TYPE_CHECKING:
    from icecore.catalog.report_store import KeptReport
    from icecore.expressions.model import Expression
    from icecore.metadata import TableMetadata
    from icecore.scan.planner import Plan
    from icecore.table import Table

SAMPLE_ROWS = 2_000_000
"""Rows read at most to estimate (whole files drawn at random past that)."""
MAX_FILTERS = 200
"""Filters estimated in one call at most (each is planned on the table today)."""
TRUNCATE_LENGTH = 16
"""Iceberg's default metrics mode, ``truncate(16)``, for string and binary bounds."""
DEFAULT_TARGET = 512 * 1024 * 1024
"""``write.target-file-size-bytes``' default (TableProperties.java)."""
STATED_ERROR = {"files_relative": 0.5, "files_absolute": 2, "bytes_relative": 0.5}
"""The error claimed for an estimate of files and bytes read after the rewrite: within
``max(files_absolute, files_relative * actual)`` files and ``bytes_relative * actual +
one target file`` bytes of what the rewritten table really plans, when every row is read
(no sampling). Measured in tests/icecore/test_whatif_spark.py."""


@dataclass(frozen=True, slots=True)
class Layout:
    """A proposed layout: the partition spec and sort order a rewrite writes into."""

    schema: Schema
    spec: PartitionSpec
    order: SortOrder
    target_bytes: int


@dataclass(frozen=True, slots=True)
class FilterEstimate:
    """One filter: what it reads today (planned) and after the rewrite (estimated)."""

    filter: str
    files_now: int
    bytes_now: int
    files_after: int
    bytes_after: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (DESIGN.md "Workload")."""
        saved = 1 - self.bytes_after / self.bytes_now if self.bytes_now else 0.0
        return {
            "filter": self.filter,
            "now": {"files": self.files_now, "bytes": self.bytes_now},
            "estimated": {"files": self.files_after, "bytes": self.bytes_after},
            "bytes_saved_share": round(saved, 4),
        }


@dataclass(frozen=True, slots=True)
class WhatIf:
    """Estimates for several filters under one proposed layout."""

    spec: str
    sort_order: str
    rows: int
    sampled_rows: int
    sampled_files: int
    data_files: int
    files_after: int
    bytes_after: int
    estimates: tuple[FilterEstimate, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (DESIGN.md "Workload")."""
        return {
            "layout": {"spec": self.spec, "sort_order": self.sort_order},
            "table": {"rows": self.rows, "data_files": self.data_files},
            "after_rewrite": {"data_files": self.files_after, "data_bytes": self.bytes_after},
            "sample": {
                "rows": self.sampled_rows,
                "files": self.sampled_files,
                "every_row": self.sampled_rows == self.rows,
            },
            "method": "rows read (or whole files sampled), rewritten as Spark's "
            "rewrite_data_files writes them, files judged by the planner's evaluators",
            "stated_error": dict(STATED_ERROR),
            "filters": [e.to_dict() for e in self.estimates],
        }


def proposed_layout(
    table: Table, spec_changes: Sequence[str] = (), sort_changes: Sequence[str] = ()
) -> Layout:
    """The layout ``table`` would have after these changes (the ``evolve`` texts); writes nothing.

    Without changes, the table's current default spec and sort order.
    """
    from icecore.evolution.change_text import stage_layout_changes

    transaction = table.transaction()
    stage_layout_changes(transaction, spec_changes, sort_changes)
    return layout_of(transaction.preview().metadata)


def layout_of(metadata: TableMetadata) -> Layout:
    """The layout a rewrite of a table with this metadata writes into (its defaults)."""
    raw = metadata.properties.get("write.target-file-size-bytes")
    target = whole_number(raw, negative=False) if raw is not None else None
    return Layout(
        metadata.current_schema(),
        metadata.default_spec(),
        metadata.default_sort_order(),
        target or DEFAULT_TARGET,
    )


def recorded_filters(
    reports: Sequence[KeptReport], schema: Schema, *, limit: int = MAX_FILTERS
) -> tuple[list[Expression], int]:
    """The distinct filters of plans serve-rest served (newest first); engine scans not used.

    Only a served plan's report (:data:`~icecore.catalog.report_store.SERVED_PLAN_KEY`)
    carries the filter's values: Iceberg Java masks every literal of its own ScanReports
    (``(3-digit-int)``, ``(timestamp)``, ``(hash-...)``), which keeps the filter's shape
    and the columns it reads (the Workload page groups by them) but not what it selects,
    so those scans are counted, not estimated. Full-table scans read everything under any
    layout and are left out.
    """
    from icecore.catalog.report_store import SERVED_PLAN_KEY
    from icecore.expressions.json_expr import decode_literals, expression_from_json

    found: dict[str, Expression] = {}
    masked = 0
    for kept in sorted(reports, key=lambda k: -k.time_ms):
        report = kept.report
        if report.get("report-type") != "scan-report":
            continue
        node = report.get("filter", True)
        if node is True or node == {"type": "true"} or node == "true":
            continue
        if (report.get("metadata") or {}).get(SERVED_PLAN_KEY) != "true":
            masked += 1
            continue
        key = json.dumps(node, sort_keys=True)
        if key in found or len(found) >= limit:
            continue
        try:
            found[key] = decode_literals(expression_from_json(node), schema, False)
        except (FilterError, Unsupported):
            continue  # a column since dropped or renamed: nothing to estimate
    return list(found.values()), masked


def what_if(
    table: Table,
    layout: Layout,
    filters: Sequence[str | Expression],
    *,
    sample_rows: int = SAMPLE_ROWS,
    case_sensitive: bool = False,
) -> WhatIf:
    """Estimate each filter's files and bytes after a rewrite into ``layout`` (module doc)."""
    if len(filters) > MAX_FILTERS:
        raise ValidationError(f"At most {MAX_FILTERS} filters are estimated at once.")
    schema = layout.schema
    bound = [bind_filter(schema, f, case_sensitive) for f in filters]
    plan = table.scan().plan()
    tasks = list(plan.tasks)
    rows = sum(t.record_count for t in tasks)
    data_bytes = sum(t.file_size_in_bytes for t in tasks)
    needed = sorted(
        {f.source_id for f in layout.spec.fields}
        | {f.source_id for f in layout.order.fields}
        | {i for b in bound for i in filter_field_ids(b.pruning)}
    )
    chosen = _sample(tasks, sample_rows)
    sample, groups, group_specs = _read(plan, chosen, schema, needed)
    weight = rows / sample.num_rows if sample.num_rows else 1.0
    bytes_per_row = data_bytes / rows if rows else 0.0
    ratio = _compression(plan, chosen)
    files = list(_rewrite(sample, groups, group_specs, layout, weight, bytes_per_row, ratio))
    judged = []
    for given, b in zip(filters, bound, strict=True):
        text = given if isinstance(given, str) else str(b.filter)
        planned = table.scan(given, case_sensitive=case_sensitive).plan()
        now = list(planned.tasks)
        in_partition = row_evaluator(
            inclusive_projection(schema, layout.spec, case_sensitive)(b.pruning)
        )
        by_metrics = metrics_evaluator(schema, b.pruning)
        kept = [f for f in files if in_partition(f.partition) and by_metrics(f)]
        judged.append(
            FilterEstimate(
                text,
                len(now),
                sum(t.file_size_in_bytes for t in now),
                len(kept),
                sum(f.file_size_in_bytes for f in kept),
            )
        )
    return WhatIf(
        spec=str(layout.spec),
        sort_order=str(layout.order),
        rows=rows,
        sampled_rows=sample.num_rows if chosen is not tasks else rows,
        sampled_files=len(chosen),
        data_files=len(tasks),
        files_after=len(files),
        bytes_after=sum(f.file_size_in_bytes for f in files),
        estimates=tuple(judged),
    )


def _sample(tasks: list[Any], limit: int) -> list[Any]:
    """Every task when their rows fit ``limit``; else whole files drawn at random (seeded)."""
    if sum(t.record_count for t in tasks) <= limit:
        return tasks
    order = list(range(len(tasks)))
    random.Random(0x1CEC0DE).shuffle(order)
    chosen: list[int] = []
    total = 0
    for i in order:
        if total >= limit:
            break
        chosen.append(i)
        total += tasks[i].record_count
    return [tasks[i] for i in sorted(chosen)]  # file order: binpack tasks read in it


def _read(
    plan: Plan, tasks: list[Any], schema: Schema, field_ids: list[int]
) -> tuple[pa.Table, np.ndarray, list[int]]:
    """The tasks' live rows (by field id), each row's file group, and each group's spec.

    A file group is the file's current (spec, partition): rewrite_data_files plans one per
    partition.
    """
    names = [schema.find_column_name(i) for i in field_ids]
    if any(n is None for n in names):
        raise ValidationError("The proposed layout names a column the table does not have.")
    group_of: dict[str, int] = {}
    keys: dict[tuple[int, tuple[Any, ...]], int] = {}
    for t in tasks:
        data_file = t.data_file
        key = (
            data_file.spec_id,
            tuple(sorted((k, repr(v)) for k, v in data_file.partition.items())),
        )
        group_of[data_file.file_path] = keys.setdefault(key, len(keys))
    spec_ids = [spec_id for spec_id, _ in keys]
    columns = [n for n in names if n is not None]
    batches = read_tasks(
        plan.io,
        tasks,
        plan.read_schema(columns, ["_file"]),
        columns=columns,
        metadata_columns=["_file"],
        name_mapping=plan.name_mapping,
        partition_type=plan.partition_type,
    )
    table = pa.Table.from_batches(list(batches), schema=plan.arrow_schema(columns, ["_file"]))
    paths = table.column("_file").to_pylist()
    groups = np.fromiter((group_of[p] for p in paths), dtype=np.int64, count=len(paths))
    arrays = {
        str(i): table.column(n).combine_chunks() for i, n in zip(field_ids, columns, strict=True)
    }
    sample = pa.table(arrays) if arrays else pa.table({"_": pa.nulls(len(paths))})
    return sample, groups, spec_ids


def _partition_values(sample: pa.Table, spec: PartitionSpec, schema: Schema) -> pa.StructArray:
    """The proposed spec's partition tuple of every row (field ids in the field metadata)."""
    arrays, fields = [], []
    for f in spec.fields:
        source = _field_type(schema, f.source_id)
        values = f.transform.apply_arrow(sample.column(str(f.source_id)).combine_chunks(), source)
        meta = {b"field_id": str(f.field_id).encode()}
        if isinstance(f.transform.result_type(source), UUIDType):
            meta[b"iceberg_type"] = b"uuid"
        arrays.append(values)
        fields.append(pa.field(f"p{f.field_id}", values.type, metadata=meta))
    if not arrays:  # unpartitioned
        return pa.array([{}] * sample.num_rows, pa.struct([]))
    return pa.StructArray.from_arrays(arrays, fields=fields)


def _sort_keys(
    sample: pa.Table, partition: pa.StructArray, order: SortOrder, schema: Schema, sort: bool
) -> list[tuple[pa.Array, str, str]]:
    """Keys that order a group's rows: new partition, then the sort order when ``sort``."""
    keys: list[tuple[pa.Array, str, str]] = [
        (partition.field(i), "ascending", "at_start") for i in range(partition.type.num_fields)
    ]
    if sort:
        for f in order.fields:
            source = _field_type(schema, f.source_id)
            values = f.transform.apply_arrow(
                sample.column(str(f.source_id)).combine_chunks(), source
            )
            direction = "ascending" if f.direction is SortDirection.ASC else "descending"
            nulls = "at_start" if f.null_order is NullOrder.NULLS_FIRST else "at_end"
            keys.append((values, direction, nulls))
    return keys


def _compression(plan: Plan, tasks: list[Any], files: int = 16) -> float:
    """On-disk bytes per byte the Parquet writer buffers, from a few files' footers.

    Iceberg's writer rolls a file when its buffered (encoded, not yet compressed) size
    reaches the target, so files land on disk at about ``target * ratio``. 1.0 when no
    footer can be read natively (object stores through fsspec, Avro files).
    """
    import pyarrow.parquet as pq

    compressed = uncompressed = 0
    for t in tasks[:files]:
        data_file = t.data_file
        if data_file.file_format.upper() != "PARQUET":
            continue
        opened = plan.io.open_native(data_file.file_path)
        if opened is None:
            continue
        source, _ = opened
        try:
            meta = pq.ParquetFile(source).metadata
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                uncompressed += group.total_byte_size
                compressed += sum(
                    group.column(c).total_compressed_size for c in range(group.num_columns)
                )
        except (pa.ArrowException, OSError, ValueError):
            continue
        finally:
            source.close()
    if not compressed or not uncompressed:
        return 1.0
    return min(1.0, compressed / uncompressed)


def _rewrite(
    sample: pa.Table,
    groups: np.ndarray,
    group_specs: list[int],
    layout: Layout,
    weight: float,
    bytes_per_row: float,
    ratio: float,
) -> Iterator[DataFile]:
    """The data files a rewrite into ``layout`` writes (module doc, step 2).

    A group whose files are in another spec, or any group of a sort rewrite, is
    range-distributed (rows sorted by new partition and sort order, cut into the tasks'
    contiguous ranges); a binpack of a group already in the spec keeps file order, each
    task sorting its own rows by partition only.
    """
    if not sample.num_rows:
        return
    partition = _partition_values(sample, layout.spec, layout.schema)
    ids, columns = partition_columns(partition) if partition.type.num_fields else ([], [])
    sort = bool(layout.order.fields)
    keys = _sort_keys(sample, partition, layout.order, layout.schema, sort)
    tuples = list(zip(*columns, strict=True)) if ids else [()] * sample.num_rows
    target = max(1, layout.target_bytes)
    on_disk = max(bytes_per_row * weight, 1e-9)  # bytes one sample row stands for
    per_file = max(1, math.floor(target * ratio / on_disk))  # sample rows per rolled file
    for group in np.unique(groups).tolist():
        members = np.flatnonzero(groups == group)  # file order
        tasks = max(1, math.ceil(len(members) * on_disk / target))
        ranged = sort or group_specs[group] != layout.spec.spec_id
        if ranged:
            members = members[_order(keys, members)]
        for chunk in np.array_split(members, tasks):
            if not len(chunk):
                continue
            if not ranged:  # a task's rows, locally sorted by partition (stable: file order)
                chunk = chunk[_order(keys[: len(ids)], chunk)]
            yield from _files(sample, chunk, tuples, ids, layout, per_file, weight, bytes_per_row)


def _order(keys: list[tuple[pa.Array, str, str]], rows: np.ndarray) -> np.ndarray:
    """A stable order of ``rows`` by ``keys`` (positions into ``rows``)."""
    if not keys:
        return np.arange(len(rows))
    taken = pa.array(rows, pa.int64())
    names = [f"k{i}" for i in range(len(keys))] + ["at"]
    table = pa.table(
        [*(k.take(taken) for k, _, _ in keys), pa.array(np.arange(len(rows)))], names=names
    )
    sorting = [(f"k{i}", d, n) for i, (_, d, n) in enumerate(keys)] + [
        ("at", "ascending", "at_end")
    ]
    return np.asarray(pc.sort_indices(table, sort_keys=sorting))


def _files(
    sample: pa.Table,
    chunk: np.ndarray,
    tuples: list[tuple[Any, ...]],
    ids: list[int],
    layout: Layout,
    per_file: int,
    weight: float,
    bytes_per_row: float,
) -> Iterator[DataFile]:
    """One task's files: one run per new partition, rolled every ``per_file`` rows."""
    start = 0
    n = len(chunk)
    while start < n:
        here = tuples[chunk[start]]
        end = start + 1
        while end < n and end - start < per_file and tuples[chunk[end]] == here:
            end += 1
        yield _data_file(
            sample,
            chunk[start:end],
            dict(zip(ids, here, strict=True)),
            layout,
            weight,
            bytes_per_row,
        )
        start = end


def _data_file(
    sample: pa.Table,
    rows: np.ndarray,
    partition: dict[int, Any],
    layout: Layout,
    weight: float,
    bytes_per_row: float,
) -> DataFile:
    """A simulated file of these sample rows, with the metrics Iceberg's writer keeps."""
    records = max(1, round(len(rows) * weight))
    taken = pa.array(rows, pa.int64())
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    nulls: dict[int, int] = {}
    nans: dict[int, int] = {}
    counts: dict[int, int] = {}
    for name in sample.column_names:
        if not name.isdigit():
            continue
        fid = int(name)
        field_type = _field_type(layout.schema, fid)
        values = sample.column(name).take(taken)
        counts[fid] = records
        nulls[fid] = round(values.null_count * weight)
        if isinstance(field_type, (FloatType, DoubleType)):
            is_nan = pc.is_nan(values)
            nans[fid] = round(int(pc.sum(is_nan).as_py() or 0) * weight)
            values = pc.filter(values, pc.invert(pc.fill_null(is_nan, False)))
        bounds = _bounds(values, field_type)
        if bounds is not None:
            lower[fid], upper[fid] = bounds
    return DataFile(
        content=DataFileContent.DATA,
        file_path="",
        file_format="PARQUET",
        spec_id=layout.spec.spec_id,
        partition=partition,
        record_count=records,
        file_size_in_bytes=max(1, round(records * bytes_per_row)),
        value_counts=counts,
        null_value_counts=nulls,
        nan_value_counts=nans or None,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def _bounds(values: pa.Array, field_type: IcebergType) -> tuple[bytes, bytes] | None:
    """Lower and upper bound bytes of non-null values (None: no bounds, never pruned by them)."""
    if isinstance(field_type, UUIDType) or not len(values) or values.null_count == len(values):
        return None
    if (
        pa.types.is_struct(values.type)
        or pa.types.is_list(values.type)
        or pa.types.is_map(values.type)
    ):
        return None
    found = pc.min_max(values)
    low, high = _python(found["min"], field_type), _python(found["max"], field_type)
    if isinstance(field_type, StringType):
        low, high = low[:TRUNCATE_LENGTH], _truncate_up(high)
    elif isinstance(field_type, (BinaryType, FixedType)):
        low = low[:TRUNCATE_LENGTH]
        if len(high) > TRUNCATE_LENGTH:
            high = None  # Iceberg increments a binary prefix; no bound is never wrong
    if high is None:
        return None
    return to_bytes(field_type, low), to_bytes(field_type, high)


def _truncate_up(text: str) -> str | None:
    """Iceberg's ``truncateStringMax``: the prefix with its last character incremented."""
    if len(text) <= TRUNCATE_LENGTH:
        return text
    prefix = list(text[:TRUNCATE_LENGTH])
    while prefix:
        code = ord(prefix[-1]) + 1
        if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
            prefix[-1] = chr(code)
            return "".join(prefix)
        prefix.pop()
    return None


def _python(scalar: pa.Scalar, field_type: IcebergType) -> Any:
    """An Arrow scalar in :mod:`icecore.values`' Python form for ``to_bytes``."""
    del field_type  # the Arrow type says it: times and timestamps are integers there
    t = scalar.type
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return scalar.cast(pa.int64()).as_py()
    return scalar.as_py()


def _field_type(schema: Schema, field_id: int) -> IcebergType:
    found = schema.find_type(field_id)
    if found is None:
        raise ValidationError(f"The proposed layout names column id {field_id}, not in the schema.")
    return found
