"""Reading scan tasks: a data file's rows projected, deletes applied, the residual kept.

The residual is applied after deletes, with SQL's three-valued logic (a row is kept only when
the filter is TRUE, as Spark keeps it): :mod:`icecore.expressions.row_filter`.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from icecore.arrow_types import arrow_field, arrow_value
from icecore.compute import pc
from icecore.errors import InvalidMetadata
from icecore.expressions.model import (
    AlwaysTrue,
)
from icecore.expressions.row_filter import filter_field_ids, filter_mask
from icecore.io import FileIO
from icecore.manifest import DataFileContent
from icecore.read.deletes import DeleteLoader, keep_mask
from icecore.read.files import SourceFile, column_at
from icecore.read.memory import use_read_pool
from icecore.read.name_mapping import MappedField, parse_name_mapping
from icecore.read.parallel import read_in_parallel, read_threads
from icecore.read.projection import (
    FILE_COLUMN,
    METADATA_COLUMN_IDS,
    POS_COLUMN,
    SPEC_ID_COLUMN,
    all_field_ids,
    arrow_schema_for,
    cast_array,
    constant_array,
    metadata_field,
    missing_array,
    project_array,
    project_schema,
    unified_partition_type,
)
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.types import (
    NestedField,
    StructType,
)

DEFAULT_BATCH_SIZE = 65_536


@dataclass(frozen=True, slots=True)
class _ReadContext:
    io: FileIO
    projection: Schema
    metadata_columns: tuple[str, ...]
    partition_type: StructType
    name_mapping: tuple[MappedField, ...] | None
    batch_size: int
    deletes: DeleteLoader
    output_schema: pa.Schema


def _partition_value(task: FileScanTask, ptype: StructType) -> dict[str, Any]:
    values = task.partition  # a planned task's view: no DataFile built for it
    return {f.name: arrow_value(f.field_type, values.get(f.field_id)) for f in ptype.fields}


def _metadata_arrays(ctx: _ReadContext, task: FileScanTask, positions: pa.Array) -> list[pa.Array]:
    n = len(positions)
    out: list[pa.Array] = []
    for name in ctx.metadata_columns:
        if name == FILE_COLUMN:
            out.append(constant_array(task.file_path, pa.string(), n))
        elif name == POS_COLUMN:
            out.append(positions)
        elif name == SPEC_ID_COLUMN:
            out.append(constant_array(task.spec.spec_id, pa.int32(), n))
        else:
            ptype = ctx.output_schema.field(name).type
            value = _partition_value(task, ctx.partition_type)
            out.append(constant_array(value, ptype, n) if ptype.num_fields else pa.nulls(n, ptype))
    return out


def _column_by_id(
    source: SourceFile,
    batch: pa.RecordBatch,
    fid: int,
    want: pa.DataType | None,
    f: NestedField | None,
    what: str,
) -> pa.Array:
    """A field of a file batch by id: projected to ``f`` when given, else cast to ``want``."""
    path = source.index.get(fid)
    n = batch.num_rows
    if path is None:
        if f is not None:
            return missing_array(f, n)
        return pa.nulls(n, want if want is not None else pa.null())
    arr = column_at(batch, source.schema, path)
    if f is not None:
        return project_array(arr, f.field_type, what)
    return cast_array(arr, want, what) if want is not None else arr


def _read_one(ctx: _ReadContext, task: FileScanTask) -> Generator[pa.RecordBatch, None, None]:
    data_file = task.data_file
    if data_file.content is not DataFileContent.DATA:
        raise InvalidMetadata(f"Task file {data_file.file_path} is a delete file, not data.")
    source = SourceFile(ctx.io, data_file, "Data file", ctx.name_mapping)
    if source.num_rows != data_file.record_count:
        raise InvalidMetadata(
            f"Data file {data_file.file_path} has {source.num_rows} rows but its manifest entry "
            f"says {data_file.record_count}."
        )
    what = f"Data file {data_file.file_path}"
    residual = task.residual
    filter_ids = filter_field_ids(residual)
    position_deletes = [
        d for d in task.delete_files if d.content is DataFileContent.POSITION_DELETES
    ]
    equality = [
        ctx.deletes.equality(d)
        for d in task.delete_files
        if d.content is DataFileContent.EQUALITY_DELETES
    ]
    deleted = ctx.deletes.positions(data_file.file_path, position_deletes)
    need_ids = set(all_field_ids(ctx.projection.as_struct())) | filter_ids
    for eq in equality:
        need_ids.update(eq.field_ids)
    start = 0
    for batch in source.batches(need_ids, ctx.batch_size):
        n = batch.num_rows
        if n == 0:
            continue

        def by_id(
            fid: int,
            want: pa.DataType | None,
            f: NestedField | None,
            batch: pa.RecordBatch = batch,
        ) -> pa.Array:
            return _column_by_id(source, batch, fid, want, f, what)

        keep = keep_mask(deleted, start, n) if len(deleted) else None
        for eq in equality:
            cols = [
                cast_array(by_id(fid, t, task.schema.find_field(fid)), t, what)
                for fid, t in zip(eq.field_ids, eq.types, strict=True)
            ]
            alive = pc.invert(eq.matches(cols))
            keep = alive if keep is None else pc.and_(keep, alive)
        if filter_ids or not isinstance(residual, AlwaysTrue):
            columns = {}
            for fid in filter_ids:
                f = task.schema.find_field(fid)
                columns[fid] = by_id(fid, None, f)
            passed = filter_mask(residual, columns, n)
            keep = passed if keep is None else pc.and_(keep, passed)
        arrays = [by_id(f.field_id, None, f) for f in ctx.projection.fields]
        if ctx.metadata_columns:
            positions = pa.array(np.arange(start, start + n, dtype=np.int64))
            arrays.extend(_metadata_arrays(ctx, task, positions))
        out = _record_batch(arrays, ctx.output_schema, n)
        start += n
        if keep is not None:
            out = out.filter(keep)
        if out.num_rows:
            yield out
    if start != source.num_rows:
        raise InvalidMetadata(
            f"Data file {data_file.file_path} gave {start} of its {source.num_rows} rows."
        )


def _record_batch(arrays: list[pa.Array], schema: pa.Schema, num_rows: int) -> pa.RecordBatch:
    """A batch of ``num_rows`` rows; with no columns asked for (a count), still that many rows."""
    if arrays:
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    return pa.record_batch([pa.nulls(num_rows)], names=["_"]).select([])


def _read_schema(
    projection: Schema | Sequence[int] | None, first: FileScanTask | None
) -> Schema | None:
    """The schema a read projects from: ``projection``, or the first task's (None: nothing)."""
    if isinstance(projection, Schema):
        return projection
    if first is None:
        return None
    if projection is None:
        return first.schema
    return project_schema(first.schema, field_ids=list(projection))


def read_tasks(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    projection: Schema | Sequence[int] | None = None,
    *,
    columns: Sequence[str] | None = None,
    metadata_columns: Sequence[str] = (),
    name_mapping: str | Sequence[Any] | None = None,
    partition_type: StructType | None = None,
    limit: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    case_sensitive: bool = False,
    threads: int | None = None,
    ordered: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Stream the live rows of scan tasks: projected, deletes applied, residual filtered.

    Several tasks are read at once on ``threads`` threads (default
    :func:`icecore.read.parallel.read_threads`; 1 reads one file after another), their
    batches given back in task order, the same batches the serial reader gives
    (:mod:`icecore.read.parallel`). The first read of a process makes the system allocator
    Arrow's default pool unless the user chose one (:mod:`icecore.read.memory`).

    Args:
        io: the table's FileIO (every byte is read through it).
        tasks: the scan's tasks (spec "Scan Planning").
        projection: the schema to read (default: the first task's schema), or field ids of
            the tasks' schema to select.
        columns: column names to select from the projection (dotted for nested fields).
        metadata_columns: any of ``_file``, ``_pos``, ``_spec_id``, ``_partition``, added
            after the data columns in this order ("Reserved Field IDs").
        name_mapping: the table's ``schema.name-mapping.default`` (JSON text or parsed), for
            files written without field ids.
        partition_type: the ``_partition`` struct; default: all partition fields of the
            tasks' specs (:func:`unified_partition_type`); pass the table's specs to match
            Spark's ``_partition``.
        limit: stop after this many rows.
        batch_size: rows decoded per batch.
        case_sensitive: whether ``columns`` must match case.
        threads: threads reading tasks at once (None: ``ICECORE_READ_THREADS`` or the CPUs).
        ordered: give batches in task order (the serial reader's, so a ``limit`` keeps the
            same first rows); False gives them as files finish, the same rows in another
            order, for callers that do not need it (counts, aggregates).

    Yields:
        record batches with the schema :func:`arrow_schema_for` gives.

    Raises:
        NotFound: a data, delete or Puffin file does not exist.
        InvalidMetadata: a file is truncated or corrupt, or disagrees with its manifest entry.
        Unsupported: an ORC file, a file without field ids and no name mapping, a type
            Icecore cannot read.
    """
    if limit is not None and limit <= 0:
        return
    use_read_pool()
    # Tasks are read as they come (a plan's tasks are made on demand); only the first is
    # looked at ahead, and all of them only when the caller gives no partition type.
    task_iter = iter(tasks)
    first = next(task_iter, None)
    if partition_type is None:
        rest = list(task_iter)
        task_iter = iter(rest)
        specs = {t.spec.spec_id: t.spec for t in ([first] if first is not None else []) + rest}
    base = _read_schema(projection, first)
    if base is None:
        return
    projected = project_schema(base, columns, case_sensitive=case_sensitive)
    if partition_type is None:
        partition_type = unified_partition_type(specs.values(), base)
    for name in metadata_columns:
        if name not in METADATA_COLUMN_IDS:
            metadata_field(name, partition_type)  # raises Unsupported
    mapping = parse_name_mapping(name_mapping) if name_mapping is not None else None
    output_schema = pa.schema(
        [arrow_field(f) for f in projected.fields]
        + [metadata_field(name, partition_type) for name in metadata_columns]
    )
    loader_schema = first.schema if first is not None else base
    ctx = _ReadContext(
        io=io,
        projection=projected,
        metadata_columns=tuple(metadata_columns),
        partition_type=partition_type,
        name_mapping=mapping,
        batch_size=batch_size,
        deletes=DeleteLoader(io, loader_schema, mapping, batch_size),
        output_schema=output_schema,
    )
    remaining = limit
    threads = read_threads() if threads is None else max(threads, 1)
    second = next(task_iter, None) if threads > 1 else None
    ordered_tasks: Iterator[FileScanTask] = itertools.chain(
        [t for t in (first, second) if t is not None], task_iter
    )
    found: Iterator[pa.RecordBatch] = (
        read_in_parallel(functools.partial(_read_one, ctx), ordered_tasks, threads, ordered=ordered)
        if second is not None
        else _read_serially(ctx, ordered_tasks)
    )
    # Closed explicitly, so files left mid-way when the limit is reached (or when the caller
    # stops early) release their readers, and reading threads stop, here.
    with contextlib.closing(found) as batches:  # type: ignore[type-var]
        for batch in batches:
            if remaining is not None:
                if batch.num_rows >= remaining:
                    yield batch.slice(0, remaining)
                    return
                remaining -= batch.num_rows
            yield batch


def _read_serially(
    ctx: _ReadContext, tasks: Iterator[FileScanTask]
) -> Generator[pa.RecordBatch, None, None]:
    """The tasks' batches read one file after another on this thread."""
    for task in tasks:
        with contextlib.closing(_read_one(ctx, task)) as batches:
            yield from batches


def read_task(
    io: FileIO,
    task: FileScanTask,
    projection: Schema | Sequence[int] | None = None,
    **options: Any,
) -> Iterator[pa.RecordBatch]:
    """Stream the live rows of one task (see :func:`read_tasks` for the options)."""
    return read_tasks(io, [task], projection, **options)


def read_arrow(
    io: FileIO,
    tasks: Iterable[FileScanTask],
    projection: Schema | Sequence[int] | None = None,
    **options: Any,
) -> pa.Table:
    """All rows of the tasks as one Arrow table (see :func:`read_tasks`)."""
    task_list = list(tasks)
    batches = list(read_tasks(io, task_list, projection, **options))
    if batches:
        return pa.Table.from_batches(batches)
    base = _read_schema(projection, task_list[0] if task_list else None)
    if base is None:
        return pa.table({})
    return arrow_schema_for(
        base,
        options.get("columns"),
        options.get("metadata_columns", ()),
        options.get("partition_type")
        or unified_partition_type({t.spec.spec_id: t.spec for t in task_list}.values(), base),
    ).empty_table()
