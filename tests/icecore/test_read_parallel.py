"""The parallel reader gives the serial reader's batches, stops cleanly, and leaves no thread.

Issue 32: tasks are read on several threads (icecore.read.parallel). Spark is the oracle of
the serial reader (tests/icecore/test_read.py, whose reads now run in parallel by default);
here the parallel reader must give exactly the serial reader's batches, in order, for every
delete kind (position deletes in demo.trips, deletion vectors in demo.events_v3, equality
deletes in demo.accounts) and filters that leave residuals.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore.errors import InvalidMetadata
from icecore.read import parallel, read_tasks
from icecore.table import Table
from tests.icecore.scan.helpers import manual_tasks

CASES = [
    ("demo.trips", None),
    ("demo.trips", "fare > 20 OR vendor_id = 1"),
    ("demo.trips", "pickup_zone IS NULL OR trip_distance < 2"),
    ("demo.events_v3", None),
    ("demo.events_v3", "amount < 10.5 AND kind LIKE 'pu%'"),
    ("demo.accounts", None),
    ("demo.accounts", "NOT (email LIKE 'user1%')"),
    ("demo.zones", None),
]


def _reading_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("icecore-read")]


def _sort_keys(batches: list[pa.RecordBatch]) -> list[tuple[str, str]]:
    """Every column of plain type, ascending: a total order on the fixtures' rows."""
    schema = batches[0].schema
    plain = [f.name for f in schema if not pa.types.is_nested(f.type)]
    return [(name, "ascending") for name in plain]


def _table(warehouse: Path, name: str) -> Table:
    return icecore.load_table(f"{warehouse}::{name}")


@pytest.mark.spark
@pytest.mark.parametrize(("name", "where"), CASES)
@pytest.mark.parametrize("metadata_columns", [(), ("_file", "_pos")])
def test_parallel_batches_are_the_serial_batches(
    demo_warehouse: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    where: str | None,
    metadata_columns: tuple[str, ...],
) -> None:
    table = _table(demo_warehouse, name)
    plan = table.scan(filter=where).plan()
    assert len(plan.tasks) > 1

    def read(threads: int, **options: Any) -> list[pa.RecordBatch]:
        return list(
            read_tasks(
                table.io,
                plan.tasks,
                plan.schema,
                metadata_columns=metadata_columns,
                partition_type=plan.partition_type,
                threads=threads,
                batch_size=7,
                **options,
            )
        )

    serial = read(1)
    assert sum(b.num_rows for b in serial) > 0
    for threads in (2, 3):
        assert read(threads) == serial
    # A budget smaller than a batch: every queue holds one batch at a time, still in order.
    monkeypatch.setattr(parallel, "BUDGET_BYTES", 1)
    assert read(2) == serial
    # Unordered: the same rows, each task's own rows still in file order.
    unordered = read(2, ordered=False)
    assert pa.Table.from_batches(unordered).sort_by(_sort_keys(serial)).to_pylist() == (
        pa.Table.from_batches(serial).sort_by(_sort_keys(serial)).to_pylist()
    )
    limited = read(2, limit=10)
    assert pa.Table.from_batches(limited).to_pylist() == (
        pa.Table.from_batches(serial).slice(0, 10).to_pylist()
    )
    assert _reading_threads() == []


@pytest.mark.spark
def test_an_error_in_one_file_stops_the_scan_with_its_sentence(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    table = _table(demo_warehouse, "demo.trips")
    tasks = manual_tasks(table)
    assert len(tasks) >= 3
    source = Path(tasks[2].data_file.file_path)
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    tasks[2] = replace(tasks[2], data_file=replace(tasks[2].data_file, file_path=str(copy)))  # type: ignore[type-var]
    read = read_tasks(table.io, tasks, threads=2, batch_size=5)
    seen = 0
    with pytest.raises(InvalidMetadata, match=f"{copy}.*truncated"):
        for batch in read:
            seen += batch.num_rows
    assert seen > 0  # the files before it were given first, in order
    assert _reading_threads() == []


@pytest.mark.spark
def test_closing_early_stops_the_threads(demo_warehouse: Path) -> None:
    table = _table(demo_warehouse, "demo.trips")
    plan = table.scan().plan()
    with contextlib.closing(read_tasks(table.io, plan.tasks, threads=2, batch_size=3)) as read:  # type: ignore[type-var]
        next(read)
        assert _reading_threads()  # the work really runs on reading threads
    assert _reading_threads() == []


def test_read_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.THREADS_ENV, "1")
    assert parallel.read_threads() == 1
    monkeypatch.setenv(parallel.THREADS_ENV, "3")
    assert parallel.read_threads() == 3
    monkeypatch.setenv(parallel.THREADS_ENV, "many")
    assert 1 <= parallel.read_threads() <= parallel.MAX_THREADS


def test_unordered_gives_a_ready_task_before_a_slow_earlier_one() -> None:
    """``ordered=False``: batches of a finished later task are not held behind a slow first."""
    first_may_finish = threading.Event()
    tasks: list[Any] = ["slow", "fast"]

    def read_one(task: Any) -> Any:
        if task == "slow":
            # Waits for the consumer to have seen the fast task's batch (or gives up).
            first_may_finish.wait(10)
        yield pa.record_batch({"task": [task]})

    got = []
    for batch in parallel.read_in_parallel(read_one, iter(tasks), 2, ordered=False):
        got.append(batch.column(0)[0].as_py())
        first_may_finish.set()
    assert got == ["fast", "slow"]
    assert _reading_threads() == []
