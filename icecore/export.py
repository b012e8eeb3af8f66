"""Writing scan results to files a user asked for (the CLI's ``scan --output``, downloads).

An output path is checked before a single row is read (:func:`check_output`): it never
lies inside a table's location (its data, delete and metadata files, ``version-hint.text``)
nor names a catalog's own database, compared as real paths so a symlink or ``..`` cannot
reach in; and it never replaces an existing file unless asked to (``--force``). The file
is then written under a fresh temporary name in the target folder and renamed into place,
so a failed or interrupted write leaves no partial file and never touches the old one.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.csv as pcsv

from icecore.errors import IcecoreError, ValidationError
from icecore.scan.planner import Plan

if TYPE_CHECKING:
    from icecore.table_data import TableData

MAX_PROTECTED_TABLES = 10_000
"""How many of a catalog's tables ``protected_paths`` lists (bounded in time)."""


def local_path(location: str) -> str | None:
    """The local file system path of a location (plain or ``file:``), or None for a URL."""
    if location.startswith("file://"):
        return location[len("file://") :] or None
    if location.startswith("file:"):
        return location[len("file:") :] or None
    if "://" in location:
        return None
    return location


def protected_paths(table: TableData) -> tuple[list[str], list[str]]:
    """The folders and files an output must never touch, for a table being read.

    The table's location, the folder of its metadata file (and the table folder above a
    ``metadata`` folder, which a copied table is opened from), its ``write.data.path`` and
    ``write.metadata.path``; when it came from a catalog, every table location that catalog
    lists (from their metadata locations, without reading them) and, for a SQL catalog, its
    database file.

    Returns:
        (protected folders, protected files).
    """
    meta = table.metadata
    metadata_dir = os.path.dirname(table.metadata_location)
    dirs = [meta.location, metadata_dir]
    if os.path.basename(metadata_dir) == "metadata":
        dirs.append(os.path.dirname(metadata_dir))  # the table folder it was opened from
    dirs.extend(
        meta.properties[key]
        for key in ("write.data.path", "write.metadata.path", "write.folder-storage.path")
        if meta.properties.get(key)
    )
    files: list[str] = []
    # A guarded catalog (icecore.catalog.guarded) has no database path and lists only what its
    # principal may see; the paths to protect are every table's, seen or not (none is shown).
    catalog = getattr(table.catalog, "inner", table.catalog)
    if catalog is not None:
        database = getattr(catalog, "path", None)
        if isinstance(database, Path):
            files.extend(str(database) + suffix for suffix in ("", "-wal", "-shm", "-journal"))
        try:
            for ident in catalog.list_tables()[:MAX_PROTECTED_TABLES]:
                metadata_dir = os.path.dirname(catalog.metadata_location(ident))
                dirs.append(os.path.dirname(metadata_dir))
        except IcecoreError:
            pass  # the scanned table's own paths above are still protected
    return dirs, files


def check_output(
    output: str | Path,
    protected_dirs: Iterable[str],
    protected_files: Iterable[str] = (),
    *,
    force: bool = False,
) -> Path:
    """Refuse an output path that would overwrite a table's files or an existing file.

    Args:
        output: the path the user gave.
        protected_dirs: table locations (and metadata folders): nothing below them is
            written, whatever ``force`` says.
        protected_files: single files never replaced (a catalog database).
        force: replace an existing file that is not protected.

    Returns:
        the output path.

    Raises:
        ValidationError: one sentence saying what the path hits and what to do.
    """
    target = Path(output)
    real = Path(os.path.realpath(target))
    for location in protected_dirs:
        root = local_path(location)
        if root is None:
            continue
        if real.is_relative_to(os.path.realpath(root)):
            raise ValidationError(
                f"Cannot write {output}: it is inside the table location {location}, whose "
                "files the table needs; choose a path outside it."
            )
    for location in protected_files:
        path = local_path(location)
        if path is not None and real == Path(os.path.realpath(path)):
            raise ValidationError(
                f"Cannot write {output}: it is the catalog database {location}; choose "
                "another path."
            )
    if target.is_dir():
        raise ValidationError(f"Cannot write {output}: it is a folder; name a file in it.")
    if (target.exists() or target.is_symlink()) and not force:
        raise ValidationError(
            f"Cannot write {output}: the file already exists; choose another name, or pass "
            "--force to replace it."
        )
    return target


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
    leaves no half-written file behind. Its schema is the plan's for these columns as its
    principal reads them (:meth:`icecore.scan.planner.Plan.arrow_schema`: the reader role,
    masked columns left out), checked before the file is created.
    """
    schema = plan.arrow_schema(columns)
    return _write(batches, schema, output)


def _write(batches: Iterable[pa.RecordBatch], schema: pa.Schema, output: str | Path) -> int:
    target = Path(output)
    try:
        # A fresh name (never an existing file or a planted symlink) in the target folder,
        # so the final rename is atomic and replaces a symlink itself, not what it points at.
        handle, name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".partial", dir=target.parent
        )
    except OSError as e:
        raise IcecoreError(f"Cannot write {target}: {e.strerror or e}.") from e
    partial = Path(name)
    rows = 0
    import pyarrow.parquet as pq  # loaded by the first export, not by the CLI's start

    try:
        with os.fdopen(handle, "wb") as sink, pq.ParquetWriter(sink, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
                rows += batch.num_rows
        partial.chmod(0o644)  # mkstemp's 0600 would hide the result from its group
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
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def csv_bytes(table: pa.Table) -> bytes:
    """An Arrow table as UTF-8 CSV with a header (for a download).

    CSV holds flat values only: struct, list and map columns are written as their JSON-like
    text, binary values as hex.
    """
    buffer = io.BytesIO()
    pcsv.write_csv(flat_columns(table), buffer)
    return buffer.getvalue()


def flat_columns(table: pa.Table) -> pa.Table:
    """``table`` with its struct, list, map and binary columns as text (JSON-like, hex).

    What CSV holds, and what a grid shows as one text cell per value, never a Python repr.
    """
    columns = []
    for column in table.columns:
        t = column.type
        if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
            column = pa.array([_text(v) for v in column.to_pylist()], pa.string())
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


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
