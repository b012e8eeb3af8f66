"""Position delete files naming one data file: its path read from the footer, not the rows.

Issue 32 (Deliver 1): Spark and Iceberg Java write a position delete file per data file, so
its ``file_path`` column holds one value; when every row group's statistics say so
(:meth:`SourceFile.constant_string`), the reader neither decodes nor compares the paths. A file
naming several data files, or without statistics, is still matched row by row. The rows
expected here come from the positions the test writes, not from the reader.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icecore.io import FileIO
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import UNPARTITIONED_SPEC
from icecore.read.files import SourceFile
from icecore.read.tasks import read_arrow
from icecore.scan.delete_index import DELETE_FILE_PATH_ID, DELETE_POS_ID
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.types import LongType, NestedField
from tests.icecore.test_read import write_parquet

SCHEMA = Schema((NestedField(1, "id", LongType()),))
ROWS = 3_000


def _data(path: Path, first: int) -> DataFile:
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    ids = pa.array(range(first, first + ROWS), pa.int64())
    return write_parquet(path, pa.table([ids], schema=schema), row_group_size=1_000)


def _deletes(path: Path, rows: list[tuple[str, int]], **options: object) -> DataFile:
    schema = pa.schema(
        [
            pa.field(
                "file_path",
                pa.string(),
                nullable=False,
                metadata={b"PARQUET:field_id": str(DELETE_FILE_PATH_ID).encode()},
            ),
            pa.field(
                "pos",
                pa.int64(),
                nullable=False,
                metadata={b"PARQUET:field_id": str(DELETE_POS_ID).encode()},
            ),
        ]
    )
    table = pa.table(
        [pa.array([p for p, _ in rows], pa.string()), pa.array([i for _, i in rows], pa.int64())],
        schema=schema,
    )
    options.setdefault("row_group_size", 100)
    return write_parquet(path, table, DataFileContent.POSITION_DELETES, **options)


def _constant(f: DataFile) -> str | None:
    source = SourceFile(FileIO(), f, "Position delete file", None)
    try:
        return source.constant_string(DELETE_FILE_PATH_ID)
    finally:
        source.close()


def _ids(files: list[tuple[DataFile, int]], deletes: list[DataFile], threads: int) -> list[int]:
    tasks = [
        FileScanTask(f, 0, UNPARTITIONED_SPEC, SCHEMA, delete_files=tuple(deletes))
        for f, _ in files
    ]
    out = read_arrow(FileIO(), tasks, threads=threads)
    return list(out.column("id").to_pylist())


@pytest.mark.parametrize("threads", [1, 2])
def test_one_path_several_paths_and_no_statistics_delete_the_rows_they_name(
    tmp_path: Path, threads: int
) -> None:
    a, b = _data(tmp_path / "a.parquet", 0), _data(tmp_path / "b.parquet", 10_000)
    only_a = [(a.file_path, p) for p in range(0, ROWS, 7)]  # several row groups of one path
    both = [(a.file_path, 5), (a.file_path, 6), (b.file_path, 0), (b.file_path, 2_999)]
    only_b_bare = [(b.file_path, p) for p in (10, 11, 1_500)]
    deletes = [
        _deletes(tmp_path / "only-a.parquet", only_a),
        _deletes(tmp_path / "both.parquet", both),
        _deletes(tmp_path / "only-b-bare.parquet", only_b_bare, write_statistics=False),
    ]
    assert _constant(deletes[0]) == a.file_path
    assert _constant(deletes[1]) is None  # two paths: matched row by row
    assert _constant(deletes[2]) is None  # no statistics: matched row by row
    gone = {
        (path, pos) for rows in (only_a, both, only_b_bare) for path, pos in rows
    }  # what the test wrote
    expected = [
        first + pos
        for f, first in ((a, 0), (b, 10_000))
        for pos in range(ROWS)
        if (f.file_path, pos) not in gone
    ]
    found = _ids([(a, 0), (b, 10_000)], deletes, threads)
    assert found == expected


def test_a_one_path_file_deletes_nothing_in_another_data_file(tmp_path: Path) -> None:
    a, b = _data(tmp_path / "a.parquet", 0), _data(tmp_path / "b.parquet", 10_000)
    only_a = _deletes(tmp_path / "only-a.parquet", [(a.file_path, 0), (a.file_path, 1)])
    assert _constant(only_a) == a.file_path
    assert _ids([(b, 10_000)], [only_a], 1) == list(range(10_000, 10_000 + ROWS))


def test_unsorted_repeated_positions_delete_each_row_once(tmp_path: Path) -> None:
    """Positions out of order or repeated (a writer need not sort) are sorted and made distinct."""
    a = _data(tmp_path / "a.parquet", 0)
    rows = [(a.file_path, p) for p in (9, 3, 3, 2_000, 9, 0)]
    found = _ids([(a, 0)], [_deletes(tmp_path / "d.parquet", rows)], 1)
    assert found == [i for i in range(ROWS) if i not in {0, 3, 9, 2_000}]
