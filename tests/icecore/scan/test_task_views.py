"""Planned tasks and their data file views, against the data files the manifests hold.

A plan's tasks are made from its columns and a task's ``data_file`` is a view onto the task
and its block (issue 19). Whatever is read through them must be what the manifest says:
the oracle is ``Table.live_entries`` (every live entry decoded to a full ``DataFile``, no
planner). On a generated metadata-only table (Iceberg's Java API writes it, see bench/).
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.manifest import DataFile, DataFileContent
from icecore.manifest_arrow import MAP_COLUMNS
from icecore.scan import decode_pool
from icecore.scan.context import PlanContext
from icecore.scan.manifest_cache import ManifestCache
from icecore.scan.planner import Plan
from icecore.scan.task import FileScanTask
from icecore.table import Table

from .helpers import live_entries, snapshot_schema

FILES = 2_000


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str) -> Table:
    """A 2,000-file metadata-only table in 4 manifests, partitioned by day and id bucket."""
    from bench.tables import build_table

    warehouse = tmp_path_factory.mktemp("taskviewswh")
    built = build_table(warehouse, FILES, 500, days=20, name="views", progress=lambda _: None)
    return icecore.load_table(built.table)


@pytest.fixture(scope="module")
def full(table: Table) -> dict[str, DataFile]:
    """Every live data file, decoded whole from the manifests (the oracle), by path."""
    data, deletes = live_entries(table)
    assert not deletes
    return {e.data_file.file_path: e.data_file for e in data}


def _plan(table: Table, flt: str | None = None) -> Plan:
    return table.scan(filter=flt, context=PlanContext(ManifestCache())).plan()


def test_every_field_of_a_view_is_the_manifests(table: Table, full: dict[str, DataFile]) -> None:
    """Each field read from a view (cheap ones first, metrics last) equals the full file's."""
    tasks = list(_plan(table).tasks)
    assert len(tasks) == FILES
    names = [f.name for f in dataclasses.fields(DataFile)]
    for task in tasks:
        view = task.data_file
        expected = full[task.file_path]
        assert isinstance(view, DataFile)
        for name in names:
            assert getattr(view, name) == getattr(expected, name), name
        assert view.content is DataFileContent.DATA
        assert task.partition == expected.partition
        assert view == expected and expected == view


def test_a_views_partition_is_its_own(table: Table, full: dict[str, DataFile]) -> None:
    """Partition dicts are shared per partition tuple inside a plan, never handed out."""
    tasks = list(_plan(table).tasks)
    first = tasks[0]
    second = next(t for t in tasks[1:] if t.partition == first.partition)  # same tuple
    first.data_file.partition.clear()
    first.partition.clear()
    assert first.data_file.partition == full[first.file_path].partition
    assert second.data_file.partition == full[second.file_path].partition


def test_replace_and_pickle_give_a_complete_data_file(
    table: Table, full: dict[str, DataFile]
) -> None:
    """A view replaced, copied or pickled is a plain DataFile, apart from the plan."""
    task = _plan(table).tasks[7]
    expected = full[task.file_path]
    for made in (
        dataclasses.replace(task.data_file),
        copy.copy(task.data_file),
        pickle.loads(pickle.dumps(task.data_file)),
    ):
        assert type(made) is DataFile
        assert made == expected
    moved = dataclasses.replace(task.data_file, file_path="s3://b/elsewhere.parquet")
    assert type(moved) is DataFile
    assert moved.file_path == "s3://b/elsewhere.parquet"
    assert moved.lower_bounds == expected.lower_bounds


def test_a_replaced_task_holds_its_data_file(table: Table, full: dict[str, DataFile]) -> None:
    """``dataclasses.replace(task, ...)`` gives a task holding a complete DataFile."""
    plan = _plan(table)
    task: Any = plan.tasks[11]  # a dataclass at run time (FileScanTask declares its fields)
    again = dataclasses.replace(task, data_sequence_number=task.data_sequence_number + 1)
    assert type(again.data_file) is DataFile
    assert again.data_file == full[task.file_path]
    assert again.data_sequence_number == task.data_sequence_number + 1
    assert (again.spec, again.schema, again.residual) == (task.spec, task.schema, task.residual)
    assert again.partition == task.partition
    assert again != task
    assert dataclasses.replace(task) == task


def test_a_task_reduces_to_its_six_fields(table: Table, full: dict[str, DataFile]) -> None:
    """Pickling a task gives a plain task of the six fields, its data file complete.

    (Pickling a whole task also needs the spec and schema to pickle: checked on the parts.)
    """
    task = _plan(table).tasks[5]
    rebuild, args = task.__reduce__()
    assert rebuild is FileScanTask
    assert type(args[0]) is DataFile and args[0] == full[task.file_path]
    assert rebuild(*args) == task
    assert args[1:] == (
        task.data_sequence_number,
        task.spec,
        task.schema,
        task.delete_files,
        task.residual,
    )


def test_a_task_made_by_hand(table: Table, full: dict[str, DataFile]) -> None:
    """FileScanTask made from a DataFile: every attribute from it, equal to the planned one."""
    planned = _plan(table).tasks[3]
    data_file = full[planned.file_path]
    spec = table.metadata.spec_by_id(data_file.spec_id)
    assert spec is not None
    task = FileScanTask(data_file, planned.data_sequence_number, spec, snapshot_schema(table))
    assert task.data_file is data_file
    assert (task.file_path, task.record_count, task.file_size_in_bytes) == (
        data_file.file_path,
        data_file.record_count,
        data_file.file_size_in_bytes,
    )
    assert task.spec is spec
    assert task.partition == data_file.partition
    assert task == planned and planned == task
    assert [f.name for f in dataclasses.fields(task)] == [  # type: ignore[arg-type]
        "data_file",
        "data_sequence_number",
        "spec",
        "schema",
        "delete_files",
        "residual",
    ]


def test_residuals_of_tasks_are_the_files_residuals(table: Table) -> None:
    """Per task residual (one shared or one per partition tuple) is what files() says."""
    for flt, kinds in (
        (None, 1),
        # Whole days: every planned row's residual is true, and the first day of the first
        # manifest is pruned (its partition tuple, code 0, has no residual).
        ("pickup_ts >= '2021-01-02T00:00:00+00:00'", 1),
        ("pickup_ts >= '2021-01-03T12:00:00+00:00'", 2),  # one day keeps a residual
        ("id >= 5000 AND pickup_ts < '2021-01-09T06:00:00+00:00'", 2),
    ):
        plan = _plan(table, flt)
        tasks = list(plan.tasks)
        assert tasks
        texts = plan.files().column("residual").to_pylist()
        assert [str(t.residual) for t in tasks] == texts
        assert len(set(texts)) >= kinds, flt
        if kinds == 1:
            assert set(texts) == {"true"}, flt


def test_a_task_is_eight_slots(table: Table) -> None:
    """Held by the million: no dict, eight pointers (a DataFile view is made on access)."""
    task = _plan(table).tasks[0]
    assert not hasattr(task, "__dict__")
    assert sys.getsizeof(task) <= 16 + 16 + 8 * 8


def test_a_plan_without_a_filter_decodes_metrics_only_for_files_asked(
    table: Table, full: dict[str, DataFile]
) -> None:
    """No filter and no deletes: manifests are decoded without their metrics maps.

    As Iceberg Java's ``planFiles()`` does; a task's maps are read when asked (its manifest
    decoded again, with them), and a later plan whose filter the metrics decide still
    prunes exactly as a plan in a fresh context does.
    """
    context = PlanContext(ManifestCache())
    tasks = list(table.scan(context=context).plan().tasks)
    assert len(tasks) == FILES
    held = {key: pm for key, (pm, _) in context.manifests._items.items()}
    assert held and not any(key.metrics for key in held)
    for pm in held.values():
        names = pm.source.schema.names
        assert not any(n.partition(":")[0] in MAP_COLUMNS for n in names), names
    task = tasks[-1]
    assert task.data_file.lower_bounds == full[task.file_path].lower_bounds
    assert task.data_file == full[task.file_path]
    asked = [key for key in context.manifests._items if key.metrics]
    assert [key.path for key in asked] == [
        next(
            k.path
            for k, pm in held.items()
            if task.file_path in pm.required("file_path").to_pylist()
        )
    ]
    flt = "id <= 2000"
    after = table.scan(filter=flt, context=context).plan()
    fresh = _plan(table, flt)
    assert after.report.files_pruned_by_metrics > 0
    assert list(after.report.pruned) == list(fresh.report.pruned)  # with their reasons
    assert dataclasses.replace(after.report, pruned=()) == dataclasses.replace(
        fresh.report, pruned=()
    )
    assert after.tasks.file_paths() == fresh.tasks.file_paths()
    assert all(key.metrics for key in context.manifests._items if key not in held)


def test_decode_workers_leave_metrics_out_of_a_plan_without_a_filter(
    table: Table, full: dict[str, DataFile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker process decodes the manifests of a plan without a filter without metrics.

    Every manifest is the worker's (adopted from its cache file, none decoded here); the
    files it wrote hold no metric column, and every view's fields are still the manifests'.
    """
    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 1)
    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", "1")
    decode_pool._close_workers()
    try:
        context = PlanContext(ManifestCache(tmp_path / "cache"))
        tasks = list(table.scan(context=context).plan().tasks)
        assert context.manifests.misses == context.manifests.disk_hits == 0  # all adopted
        assert decode_pool.worker_pids()
        held = {key: pm for key, (pm, _) in context.manifests._items.items()}
        assert len(held) == 4 and not any(key.metrics for key in held)
        for pm in held.values():
            names = pm.source.schema.names
            assert not any(n.partition(":")[0] in MAP_COLUMNS for n in names), names
        names = [f.name for f in dataclasses.fields(DataFile)]
        for task in tasks:
            expected = full[task.file_path]
            assert [getattr(task.data_file, n) for n in names] == [
                getattr(expected, n) for n in names
            ]
    finally:
        decode_pool._close_workers()


def test_a_plan_asked_for_column_stats_decodes_them_at_once(
    table: Table, full: dict[str, DataFile]
) -> None:
    """``column_stats=True`` (a served plan with ``stats-fields``): maps decoded while planning.

    Every task's maps are then read from the manifests the plan decoded: nothing is decoded
    a second time.
    """
    context = PlanContext(ManifestCache())
    tasks = list(table.scan(context=context, column_stats=True).plan().tasks)
    keys = list(context.manifests._items)
    assert len(keys) == 4 and all(key.metrics for key in keys)
    for task in tasks:
        assert task.data_file == full[task.file_path]
    assert list(context.manifests._items) == keys


def test_plan_files_yields_tasks_as_manifests_are_judged(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``plan_files()`` (Java's ``planFiles()``): a manifest's tasks before the next is judged.

    Judged one manifest at a time, the first task comes when one manifest has been judged;
    all of them are ``plan().tasks``, in order; closing the iterator early ends the plan.
    """
    from icecore.scan import planner

    monkeypatch.setattr(planner, "METRICS_BATCH_ROWS", 1)
    context = PlanContext(ManifestCache())
    stream = table.scan(filter="id >= 0", context=context).plan_files()
    first = next(stream)
    assert len(context.file_verdicts) == 1
    rest = list(stream)
    assert len(context.file_verdicts) == 4
    planned = list(table.scan(filter="id >= 0", context=PlanContext(ManifestCache())).plan().tasks)
    assert [t.file_path for t in [first, *rest]] == [t.file_path for t in planned]
    assert [t.data_file for t in [first, *rest]] == [t.data_file for t in planned]
    early = PlanContext(ManifestCache())
    stream = table.scan(context=early).plan_files()
    next(stream)
    assert early.manifests._active == 1  # a plan in progress: cache files wait for it
    stream.close()
    assert early.manifests._active == 0
