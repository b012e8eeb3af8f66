"""Writing scan results to files a user asked for (the CLI's ``scan --output``, downloads)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from icecore.errors import IcecoreError
from icecore.read import arrow_schema_for
from icecore.scan.planner import Plan


def write_table(table: pa.Table, output: str | Path) -> int:
    """Write an Arrow table to a Parquet file, atomically; returns the rows written."""
    return _write(table.to_batches(), table.schema, output)


def write_parquet(
    batches: Iterable[pa.RecordBatch],
    plan: Plan,
    columns: Sequence[str] | None,
    output: str | Path,
) -> int:
    """Stream ``batches`` into a Parquet file at ``output``; returns the rows written.

    The file is written next to its final name and renamed at the end, so a failed scan
    leaves no half-written file behind.
    """
    schema = arrow_schema_for(plan.schema, columns, (), plan.partition_type)
    return _write(batches, schema, output)


def _write(batches: Iterable[pa.RecordBatch], schema: pa.Schema, output: str | Path) -> int:
    target = Path(output)
    partial = target.with_name(f".{target.name}.partial")
    rows = 0
    try:
        with pq.ParquetWriter(partial, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
                rows += batch.num_rows
        partial.replace(target)
    except OSError as e:
        partial.unlink(missing_ok=True)
        raise IcecoreError(f"Cannot write {target}: {e.strerror or e}.") from e
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return rows


def parquet_bytes(table: pa.Table) -> bytes:
    """An Arrow table as the bytes of one Parquet file (for a download)."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def csv_bytes(table: pa.Table) -> bytes:
    """An Arrow table as UTF-8 CSV with a header (for a download).

    CSV holds flat values only: struct, list and map columns are written as their JSON-like
    text, binary values as hex.
    """
    columns = []
    for column in table.columns:
        t = column.type
        if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
            column = pa.array([_text(v) for v in column.to_pylist()], pa.string())
        columns.append(column)
    flat = pa.Table.from_arrays(columns, names=table.column_names)
    buffer = io.BytesIO()
    pcsv.write_csv(flat, buffer)
    return buffer.getvalue()


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return json.dumps(_jsonable(value), ensure_ascii=False, default=str)


def _jsonable(value: object) -> object:
    """Nested Arrow values as JSON values (bytes as hex, map entries as [key, value])."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value
