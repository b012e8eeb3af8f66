"""A plan's columnar form (``Plan.files()``) and its task views, against Java and the old tasks.

On the Spark-written fixture tables (deletes of all three kinds): ``plan.files()`` plans the
data files and deletes Iceberg Java's ``planFiles`` plans; every task view equals, attribute
by attribute, the task built the old way (a full ``DataFile`` per live entry from
``Table.live_entries`` and ``DeleteIndex.for_data_file``, no planner); and ``files()`` says
what the tasks say. On a generated 10,000-file table: holding every task stays small.
"""

from __future__ import annotations

import dataclasses
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore.arrow_types import arrow_value
from icecore.manifest import DataFileContent
from icecore.scan.context import PlanContext
from icecore.scan.delete_index import DeleteIndex, is_deletion_vector
from icecore.scan.manifest_cache import ManifestCache
from icecore.scan.task import FileScanTask
from icecore.table import Table

from .helpers import live_entries, snapshot_schema
from .test_planner import java_plan

CASES = [
    ("trips", None, ""),
    ("trips", "month_end", ""),
    ("trips", "audit", ""),
    ("trips", None, "pickup_ts >= '2024-08-05'"),
    ("trips", None, "payment_type IN ('cash', 'dispute')"),
    ("events_v3", None, ""),
    ("events_v3", None, "kind = 'purchase'"),
    ("accounts", None, ""),
    ("accounts", None, "country = 'Italia'"),
    ("zones", None, ""),
]


def old_tasks(table: Table, ref: str | None) -> dict[str, FileScanTask]:
    """Tasks as the planner made them before: a DataFile per live entry, then its deletes.

    The delete index is given the schema, as the planner gives it (equality deletes are
    then also ruled out by their column bounds, as Java's ``DeleteFileIndex`` does).
    """
    schema = snapshot_schema(table, ref)
    data, deletes = live_entries(table, ref)
    index = DeleteIndex(deletes, table.metadata.specs_by_id(), schema)
    out: dict[str, FileScanTask] = {}
    for entry in data:
        seq = entry.sequence_number or 0
        spec = table.metadata.spec_by_id(entry.data_file.spec_id)
        assert spec is not None
        out[entry.data_file.file_path] = FileScanTask(
            entry.data_file, seq, spec, schema, index.for_data_file(entry.data_file, seq)
        )
    return out


def _kind(content: DataFileContent, fmt: str) -> str:
    if content is DataFileContent.EQUALITY_DELETES:
        return "equality"
    return "deletion_vector" if fmt.upper() == "PUFFIN" else "position"


@pytest.fixture(scope="module")
def kinds_seen() -> set[str]:
    """Delete kinds the cases met (checked last: every kind must be covered)."""
    return set()


@pytest.mark.spark
@pytest.mark.parametrize(("table", "ref", "flt"), CASES)
def test_files_match_java_plan_files(
    spark: Any,
    demo_warehouse: Path,
    table: str,
    ref: str | None,
    flt: str,
    kinds_seen: set[str],
) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.{table}")
    plan = t.scan(filter=flt or None, ref=ref, context=PlanContext(ManifestCache())).plan()
    files = plan.files()
    rows = files.to_pylist()
    ours = {r["file_path"]: {d["file_path"] for d in r["delete_files"]} for r in rows}
    assert ours == java_plan(spark, table, ref, flt)
    assert len(rows) == len(plan.tasks) == plan.report.data_files_planned
    for r in rows:
        kinds_seen.update(d["kind"] for d in r["delete_files"])


@pytest.mark.spark
@pytest.mark.parametrize(("table", "ref", "flt"), CASES)
def test_task_views_equal_old_tasks_and_files(
    demo_warehouse: Path, table: str, ref: str | None, flt: str
) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.{table}")
    plan = t.scan(filter=flt or None, ref=ref, context=PlanContext(ManifestCache())).plan()
    old = old_tasks(t, ref)
    tasks = list(plan.tasks)
    assert tasks, "every case plans some file"
    for task in tasks:
        before = old[task.file_path]
        assert isinstance(task, FileScanTask)
        assert task.data_file == before.data_file  # built from the columns, maps and all
        assert before.data_file == task.data_file  # a view equals a DataFile both ways
        assert dataclasses.replace(task.data_file) == before.data_file
        assert task.data_sequence_number == before.data_sequence_number
        assert task.spec == before.spec
        assert task.schema == plan.schema
        assert task.delete_files == before.delete_files
        assert task.record_count == before.data_file.record_count
        assert task.file_size_in_bytes == before.data_file.file_size_in_bytes
        if not flt:
            assert str(task.residual) == "true"
        assert task == before.__class__(
            before.data_file,
            before.data_sequence_number,
            before.spec,
            plan.schema,
            before.delete_files,
            task.residual,
        )
    # Indexing and slicing give the same tasks as iteration.
    assert [x.file_path for x in plan.tasks[1:3]] == [x.file_path for x in tasks[1:3]]
    assert plan.tasks[-1] == tasks[-1]

    files = plan.files()
    assert files.column("file_path").to_pylist() == [x.file_path for x in tasks]
    assert plan.data_files == [x.file_path for x in tasks]
    ptype = plan.partition_type
    assert ptype is not None
    for row, task in zip(files.to_pylist(), tasks, strict=True):
        df = task.data_file
        assert row["file_format"] == df.file_format
        assert row["spec_id"] == df.spec_id
        assert row["record_count"] == df.record_count
        assert row["file_size_in_bytes"] == df.file_size_in_bytes
        assert row["data_sequence_number"] == task.data_sequence_number
        assert row["residual"] == str(task.residual)
        assert row["delete_files"] == [
            {"file_path": d.file_path, "kind": _kind(d.content, d.file_format)}
            for d in task.delete_files
        ]
        expected = {
            f.name: arrow_value(f.field_type, df.partition.get(f.field_id)) for f in ptype.fields
        }
        struct = files.schema.field("partition").type
        assert row["partition"] == pa.array([expected], struct).to_pylist()[0]
    applied: dict[str, None] = {}
    for task in tasks:
        for d in task.delete_files:
            applied.setdefault(d.file_path, None)
    assert plan.delete_files == list(applied)


@pytest.mark.spark
def test_every_delete_kind_was_covered(kinds_seen: set[str]) -> None:
    """Runs after the cases above (file order): they met position, equality and DV deletes."""
    if not kinds_seen:
        pytest.skip("the Java cases did not run in this session")
    assert kinds_seen == {"position", "equality", "deletion_vector"}


def test_deletion_vector_kind_helper_agrees() -> None:
    """The kind names files() uses, checked on the spec's own definitions."""
    from icecore.manifest import DataFile
    from icecore.scan.planned import delete_kind

    def file(content: DataFileContent, fmt: str) -> DataFile:
        return DataFile(content, "s3://b/d", fmt, 0, {}, 1, 1)

    assert delete_kind(file(DataFileContent.POSITION_DELETES, "PUFFIN")) == "deletion_vector"
    assert is_deletion_vector(file(DataFileContent.POSITION_DELETES, "puffin"))
    assert delete_kind(file(DataFileContent.POSITION_DELETES, "PARQUET")) == "position"
    assert delete_kind(file(DataFileContent.EQUALITY_DELETES, "PARQUET")) == "equality"


FILES = 10_000


@pytest.fixture(scope="module")
def big_table(tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str) -> str:
    """A 10,000-file metadata-only table in 10 manifests (Iceberg's Java API writes it)."""
    from bench.tables import build_table

    warehouse = tmp_path_factory.mktemp("plannedwh")
    built = build_table(warehouse, FILES, 1000, days=40, name="tasks", progress=lambda _: None)
    return built.table


def test_holding_every_task_stays_small(big_table: str) -> None:
    """10,000 held tasks (and the columns they read) take < 1 KB each, not ~4 KB."""
    table = icecore.load_table(big_table)
    context = PlanContext(ManifestCache())
    assert len(table.scan(context=context).plan().tasks) == FILES  # manifests decoded
    plan = table.scan(context=context).plan()
    tracemalloc.start()
    try:
        held = list(plan.tasks)
        for task in held:
            _ = (task.file_path, task.record_count, task.file_size_in_bytes, task.residual)
            _ = task.delete_files
        current, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(held) == FILES
    assert len({t.file_path for t in held}) == FILES
    assert current < FILES * 1024
    assert not hasattr(held[0], "__dict__")
    assert sys.getsizeof(held[0]) <= 160
    # The full data file is still there when asked for, and matches the view.
    assert held[123].data_file.file_path == held[123].file_path
    assert held[123].data_file.record_count == held[123].record_count


def test_files_of_a_generated_table(big_table: str) -> None:
    """files() has one row per task, in task order, with nothing to delete."""
    table = icecore.load_table(big_table)
    plan = table.scan(context=PlanContext(ManifestCache())).plan()
    files = plan.files()
    assert files.num_rows == FILES
    assert files.column("file_path").to_pylist() == [t.file_path for t in plan.tasks]
    assert sum(files.column("record_count").to_pylist()) == plan.report.rows_planned
    assert all(not d for d in files.column("delete_files").to_pylist())
    assert set(files.column("residual").to_pylist()) == {"true"}


@pytest.mark.spark
@pytest.mark.parametrize(
    ("table", "ref", "flt"),
    [("trips", "month_end", "trip_id < 2000000"), ("accounts", None, "")],
)
def test_cli_plan_lists_what_java_plans(
    spark: Any, demo_warehouse: Path, table: str, ref: str | None, flt: str
) -> None:
    """``icecore plan``'s JSON (read from plan.files()) against Java's planFiles."""
    import argparse

    from icecore.cli import cmd_plan

    args = argparse.Namespace(
        table=f"{demo_warehouse}::demo.{table}",
        filter=flt or None,
        snapshot=None,
        ref=ref,
        as_of=None,
    )
    out = cmd_plan(args)
    java = java_plan(spark, table, ref, flt)
    assert {t["data_file"]: set(t["delete_files"]) for t in out["tasks"]} == java
    assert out["data_files"] == [t["data_file"] for t in out["tasks"]]
    if table == "accounts":
        assert any(t["delete_files"] for t in out["tasks"])  # deletes are exercised
    first_use: dict[str, None] = {}
    for t in out["tasks"]:
        for d in t["delete_files"]:
            first_use.setdefault(d, None)
    assert out["delete_files"] == list(first_use)
    old = old_tasks(icecore.load_table(args.table), ref)
    for t in out["tasks"]:
        assert t["record_count"] == old[t["data_file"]].data_file.record_count


def test_files_of_tasks_given_by_hand_equal_the_columns(big_table: str) -> None:
    """A Plan made from a list of tasks (no columns) gives files() from the tasks: the same."""
    from icecore.scan.planner import Plan

    table = icecore.load_table(big_table)
    plan = table.scan(filter="id < 100000", context=PlanContext(ManifestCache())).plan()
    assert 0 < len(plan.tasks) < FILES
    by_hand = Plan(
        tasks=list(plan.tasks[:50]),
        report=plan.report,
        schema=plan.schema,
        io=plan.io,
        partition_type=plan.partition_type,
    )
    assert by_hand.planned is None
    assert by_hand.files().to_pylist() == plan.files(limit=50).to_pylist()
    assert by_hand.data_files == plan.data_files[:50]
