"""Writing scan results to files a user asked for (the CLI's ``scan --output``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
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
