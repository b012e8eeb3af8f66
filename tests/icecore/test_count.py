"""A plan's count is Spark's ``count(*)``, read from metadata where metadata decides it.

Issue 32, Deliver 2. Spark is the oracle of every count, over the shared warehouse's delete
kinds: position deletes (demo.trips), deletion vectors (demo.events_v3, v3), equality deletes
(demo.accounts, which must be read), none (demo.zones, a v1 table), at refs and with filters
partition values decide and filters only values decide. That no data file is opened where
metadata decides is checked by recording FileIO's reads (the real reads, wrapped).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icecore
from icecore.io import FileIO
from icecore.manifest import DataFileContent
from icecore.read import read_tasks
from icecore.read.deletes import DeleteLoader
from icecore.row_counts import forget_counts, live_rows
from icecore.scan.count import CountTooLarge
from icecore.scan.delete_index import DELETE_FILE_PATH_ID, DELETE_POS_ID
from icecore.table import Table

CASES = [
    ("demo.trips", "icecore.demo.trips", None, None),
    ("demo.trips", "icecore.demo.trips", "month_end", None),
    ("demo.trips", "icecore.demo.trips", None, "vendor_id = 2"),
    ("demo.trips", "icecore.demo.trips", None, "fare > 20 OR pickup_zone IS NULL"),
    ("demo.events_v3", "icecore.demo.events_v3", None, None),
    ("demo.events_v3", "icecore.demo.events_v3", None, "amount < 10.5"),
    ("demo.accounts", "icecore.demo.accounts", None, None),
    ("demo.accounts", "icecore.demo.accounts", None, "country = 'Italia'"),
    ("demo.zones", "icecore.demo.zones", None, None),
]


def _load(warehouse: Path, name: str) -> Table:
    return icecore.load_table(f"{warehouse}::{name}")


@pytest.mark.spark
@pytest.mark.parametrize(("name", "spark_name", "ref", "where"), CASES)
def test_count_equals_spark(
    spark: Any,
    demo_warehouse: Path,
    name: str,
    spark_name: str,
    ref: str | None,
    where: str | None,
) -> None:
    table = _load(demo_warehouse, name)
    counted = table.scan(filter=where, ref=ref).plan().count()
    source = spark_name if ref is None else f"{spark_name} VERSION AS OF '{ref}'"
    clause = f" WHERE {where}" if where else ""
    expected = spark.sql(f"SELECT count(*) FROM {source}{clause}").collect()[0][0]
    assert counted.rows == expected
    files = counted.from_metadata_files + counted.from_delete_files + counted.read_files
    assert files == len(table.scan(filter=where, ref=ref).plan().tasks)


@dataclasses.dataclass(slots=True)
class RecordingIO(FileIO):
    """The table's real FileIO, remembering every path it reads (no mock: real files)."""

    opened: set[str] = dataclasses.field(default_factory=set)

    def read(self, path: str, *args: Any, **kwargs: Any) -> bytes:
        self.opened.add(path)
        return FileIO.read(self, path, *args, **kwargs)

    def open_native(self, path: str) -> tuple[Any, int] | None:
        # Data files are opened as Arrow files where they can be: that is a read too.
        self.opened.add(path)
        return FileIO.open_native(self, path)


@pytest.mark.spark
def test_what_metadata_decides_is_not_read(demo_warehouse: Path) -> None:
    """Position deletes and DVs: only delete files read; equality deletes: data files read."""
    for name in ("demo.trips", "demo.events_v3"):
        table = _load(demo_warehouse, name)
        plan = table.scan().plan()
        assert plan.delete_files  # the comparison below is about a table with deletes
        io = RecordingIO(properties=table.io.properties)
        counted = dataclasses.replace(plan, io=io).count()
        assert counted.read_files == 0 and counted.from_delete_files > 0
        assert io.opened and not io.opened & set(plan.data_files), name
    table = _load(demo_warehouse, "demo.accounts")
    plan = table.scan().plan()
    io = RecordingIO(properties=table.io.properties)
    counted = dataclasses.replace(plan, io=io).count()
    assert counted.read_files > 0  # equality deletes match values: only reading can tell
    assert io.opened & set(plan.data_files)


def _position_deletes(path: Path, rows: list[tuple[str, int]]) -> None:
    def field(name: str, kind: pa.DataType, fid: int) -> pa.Field:
        return pa.field(name, kind, nullable=False, metadata={b"PARQUET:field_id": str(fid)})

    schema = pa.schema(
        [
            field("file_path", pa.string(), DELETE_FILE_PATH_ID),
            field("pos", pa.int64(), DELETE_POS_ID),
        ]
    )
    pq.write_table(pa.table([[r[0] for r in rows], [r[1] for r in rows]], schema=schema), str(path))


@pytest.mark.spark
def test_repeated_and_out_of_range_positions_count_as_the_reader_applies_them(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    """A position deleted twice (two files) counts once; one past the file's end, not at all."""
    table = _load(demo_warehouse, "demo.trips")
    plan = table.scan().plan()
    i, task = next(
        (i, t)
        for i, t in enumerate(plan.tasks)
        if any(d.content is DataFileContent.POSITION_DELETES for d in t.delete_files)
    )
    existing = next(d for d in task.delete_files if d.content is DataFileContent.POSITION_DELETES)
    records = task.data_file.record_count
    extra = tmp_path / "more-deletes.parquet"
    _position_deletes(
        extra,
        [(task.file_path, 0), (task.file_path, 0), (task.file_path, records + 5)]
        + [("elsewhere.parquet", 1)],
    )
    added = dataclasses.replace(
        existing,
        file_path=str(extra),
        file_size_in_bytes=extra.stat().st_size,
        record_count=4,
    )
    changed = dataclasses.replace(task, delete_files=(*task.delete_files, added, added))  # type: ignore[type-var]
    tasks = list(plan.tasks)
    tasks[i] = changed
    mine = dataclasses.replace(plan, tasks=tasks, planned=None)
    read = sum(b.num_rows for b in read_tasks(table.io, [changed], columns=[], threads=1))
    before = sum(b.num_rows for b in read_tasks(table.io, [task], columns=[], threads=1))
    assert read in (before, before - 1)  # position 0 deleted once, if it was not already
    counted = mine.count()
    assert counted.read_files == 0
    assert counted.rows == plan.count().rows - before + read


@pytest.mark.spark
def test_partition_decided_files_of_an_evolved_spec_are_not_opened(
    spark: Any, demo_warehouse: Path
) -> None:
    """A partition-decided filter is counted from the manifest on the spec that decides it.

    ``vendor_id`` is a partition field of trips' newest spec only: its files are counted from
    the manifest, the older specs' files (the filter needs their values) are read.
    """
    table = _load(demo_warehouse, "demo.trips")
    where = "vendor_id = 2"
    plan = table.scan(filter=where).plan()
    io = RecordingIO(properties=table.io.properties)
    counted = dataclasses.replace(plan, io=io).count()
    expected = spark.sql(f"SELECT count(*) FROM icecore.demo.trips WHERE {where}").collect()[0][0]
    assert counted.rows == expected
    assert len({t.data_file.spec_id for t in plan.tasks}) > 1  # the evolved specs are both planned
    decided = {t.file_path for t in plan.tasks if str(t.residual) == "true" and not t.delete_files}
    assert counted.from_metadata_files == len(decided) > 0
    assert counted.read_files > 0
    assert not io.opened & decided
    assert io.opened & (set(plan.data_files) - decided)


@pytest.mark.spark
def test_a_position_file_and_a_deletion_vector_deleting_the_same_position_count_once(
    spark: Any, demo_warehouse: Path, tmp_path: Path
) -> None:
    """v3: a position delete file repeating a position the DV deletes removes no more row."""
    table = _load(demo_warehouse, "demo.events_v3")
    plan = table.scan().plan()
    i, task = next(
        (i, t)
        for i, t in enumerate(plan.tasks)
        if any(d.file_format.upper() == "PUFFIN" for d in t.delete_files)
    )
    dv = next(d for d in task.delete_files if d.file_format.upper() == "PUFFIN")
    by_dv = set(DeleteLoader(table.io, plan.schema, None, 1024).positions(task.file_path, [dv]))
    already = int(min(by_dv))
    fresh = next(p for p in range(task.record_count) if p not in by_dv)
    extra = tmp_path / "also-deleted.parquet"
    _position_deletes(extra, [(task.file_path, already), (task.file_path, fresh)])
    added = dataclasses.replace(
        dv,
        file_path=str(extra),
        file_format="PARQUET",
        file_size_in_bytes=extra.stat().st_size,
        record_count=2,
        content_offset=None,
        content_size_in_bytes=None,
    )
    tasks = list(plan.tasks)
    tasks[i] = dataclasses.replace(task, delete_files=(*task.delete_files, added))  # type: ignore[type-var]
    io = RecordingIO(properties=table.io.properties)
    counted = dataclasses.replace(plan, tasks=tasks, planned=None, io=io).count()
    spark_count = spark.sql("SELECT count(*) FROM icecore.demo.events_v3").collect()[0][0]
    assert counted.rows == spark_count - 1  # only ``fresh`` is a newly deleted row
    read = sum(b.num_rows for b in read_tasks(table.io, tasks, columns=[], threads=1))
    assert counted.rows == read  # as the reader applies the same deletes
    assert counted.read_files == 0 and str(extra) in io.opened
    assert not io.opened & set(plan.data_files)


@pytest.mark.spark
def test_the_read_bound_is_the_bytes_read_not_the_tables_size(
    spark: Any, demo_warehouse: Path
) -> None:
    """A count's read bound is on the bytes it reads.

    DVs only: any bound counts (no data file is read); under equality deletes a bound below
    the data files that must be read refuses before reading, one at their size counts.
    """
    plan = _load(demo_warehouse, "demo.events_v3").scan().plan()
    assert plan.delete_files
    expected = spark.sql("SELECT count(*) FROM icecore.demo.events_v3").collect()[0][0]
    assert plan.count(read_bound=0).rows == expected
    accounts = _load(demo_warehouse, "demo.accounts").scan().plan()
    under_equality = sum(
        t.file_size_in_bytes
        for t in accounts.tasks
        if any(d.content is DataFileContent.EQUALITY_DELETES for d in t.delete_files)
    )
    assert 0 < under_equality < sum(t.file_size_in_bytes for t in accounts.tasks)
    with pytest.raises(CountTooLarge):
        accounts.count(read_bound=under_equality - 1)
    spark_accounts = spark.sql("SELECT count(*) FROM icecore.demo.accounts").collect()[0][0]
    assert accounts.count(read_bound=under_equality).rows == spark_accounts
    forget_counts()  # History's rows_live under the same bound: counted, not "too large"
    table = _load(demo_warehouse, "demo.events_v3")
    current = table.metadata.snapshot_by_id(plan.report.snapshot_id)
    assert current is not None
    assert live_rows(table, current, bound=1) == (expected, "")
