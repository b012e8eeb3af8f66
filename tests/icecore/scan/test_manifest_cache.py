"""The manifest cache: keyed by more than the path, bounded, on disk, and never wrong.

Real manifests of the shared fixture warehouse (written by Spark) are decoded into the
planning layout, stored, read back in another cache instance (as the next process would)
and compared with a fresh decode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore.manifest import ManifestContent, ManifestFile
from icecore.manifest_arrow import read_manifest_arrow
from icecore.scan import decode_pool, manifest_cache
from icecore.scan.context import PlanContext
from icecore.scan.manifest_cache import ManifestCache, ManifestKey
from icecore.scan.planning_manifest import (
    PlanningManifest,
    build_planning_manifest,
    build_planning_manifests,
)
from icecore.table import Table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def trips(demo_warehouse: Path) -> Table:
    return icecore.load_table(f"{demo_warehouse}::demo.trips")


def _manifests(table: Table) -> list[ManifestFile]:
    snapshot = table.snapshot()
    assert snapshot is not None
    return [m for m in table.manifests(snapshot) if m.content is ManifestContent.DATA]


def _key(table: Table, manifest: ManifestFile, **changes: object) -> ManifestKey:
    spec = table.metadata.spec_by_id(manifest.partition_spec_id)
    assert spec is not None
    key = ManifestKey(
        table_uuid=table.metadata.table_uuid or "",
        path=manifest.manifest_path,
        length=manifest.manifest_length,
        spec_id=spec.spec_id,
        format_version=table.metadata.format_version,
        partition_type=str(spec.partition_type(table.resolve().schema)),
        added_snapshot_id=manifest.added_snapshot_id,
        sequence_number=manifest.sequence_number,
        first_row_id=manifest.first_row_id,
    )
    return replace(key, **changes)  # type: ignore[arg-type]


def _decode(table: Table, manifest: ManifestFile) -> PlanningManifest:
    spec = table.metadata.spec_by_id(manifest.partition_spec_id)
    assert spec is not None
    decoded = read_manifest_arrow(
        table.io, manifest, table.resolve().schema, spec, table.metadata.format_version
    )
    return build_planning_manifest(decoded, manifest.manifest_path, spec.spec_id)


def _same(a: PlanningManifest, b: PlanningManifest) -> None:
    rows = list(range(a.num_rows))
    assert a.num_rows == b.num_rows > 0
    assert a.entries(rows) == b.entries(rows)
    assert a.distinct_partitions(a.required("partition")) == b.distinct_partitions(
        b.required("partition")
    )
    assert (a.codes == b.codes).all()


def test_a_second_cache_reads_what_the_first_wrote(tmp_path: Path, trips: Table) -> None:
    manifest = _manifests(trips)[0]
    key = _key(trips, manifest)
    first = ManifestCache(tmp_path)
    stored = first.get_or_load(key, lambda: _decode(trips, manifest))
    assert (first.misses, first.disk_hits) == (1, 0)
    assert first.get_or_load(key, lambda: pytest.fail("decoded twice")) is stored
    first.flush()
    assert first.nbytes_in_memory == 0  # once written, served from the file
    assert first.get_or_load(key, lambda: pytest.fail("decoded twice")).num_rows == stored.num_rows
    second = ManifestCache(tmp_path)
    again = second.get_or_load(key, lambda: pytest.fail("the disk copy was not used"))
    assert (second.misses, second.disk_hits) == (0, 1)
    _same(again, _decode(trips, manifest))


def test_same_path_in_another_table_spec_or_list_entry_is_not_shared(
    tmp_path: Path, trips: Table
) -> None:
    manifest = _manifests(trips)[0]
    cache = ManifestCache(tmp_path)
    cache.get_or_load(_key(trips, manifest), lambda: _decode(trips, manifest))
    for change in (
        {"table_uuid": "another-table"},
        {"length": manifest.manifest_length + 1},
        {"partition_type": "struct<>"},
        {"sequence_number": manifest.sequence_number + 1},
        {"added_snapshot_id": 1},
    ):
        assert not cache.contains(_key(trips, manifest, **change)), change


def test_a_damaged_cache_file_is_decoded_again(tmp_path: Path, trips: Table) -> None:
    manifest = _manifests(trips)[0]
    key = _key(trips, manifest)
    first = ManifestCache(tmp_path)
    first.get_or_load(key, lambda: _decode(trips, manifest))
    first.flush()
    (cached,) = tmp_path.glob("*/*.arrow")
    cached.write_bytes(cached.read_bytes()[:100])
    fresh = ManifestCache(tmp_path)
    found = fresh.get_or_load(key, lambda: _decode(trips, manifest))
    assert fresh.misses == 1
    _same(found, _decode(trips, manifest))


def test_without_a_directory_memory_is_bounded(trips: Table) -> None:
    manifests = _manifests(trips)[:3]
    assert len(manifests) == 3
    sizes = [_decode(trips, m).nbytes for m in manifests]
    cache = ManifestCache(None, max_memory_bytes=sum(sizes) - min(sizes) // 2)
    for m in manifests:
        cache.get_or_load(_key(trips, m), lambda m=m: _decode(trips, m))  # type: ignore[misc]
    assert 1 <= len(cache) <= 2
    assert cache.contains(_key(trips, manifests[-1]))
    assert not cache.contains(_key(trips, manifests[0]))  # least recently used goes first


def test_the_directory_is_bounded_least_recently_used_first(tmp_path: Path, trips: Table) -> None:
    manifests = _manifests(trips)[:3]
    cache = ManifestCache(tmp_path)
    for m in manifests:
        cache.get_or_load(_key(trips, m), lambda m=m: _decode(trips, m))  # type: ignore[misc]
    cache.flush()
    files = sorted(tmp_path.glob("*/*.arrow"))
    assert len(files) == 3
    # Last use is the file's mtime; set apart explicitly (files written within one clock
    # tick of the file system share an mtime, and ties would make "oldest" arbitrary).
    for age, path in enumerate(files):
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    newest = files[-1].stat().st_size
    cache.max_disk_bytes = newest
    cache.sweep()
    assert list(tmp_path.glob("*/*.arrow")) == [files[-1]]


def test_a_plan_reading_cache_files_marks_each_used_once(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cache file a restarted plan reads is marked used (its mtime, the LRU clock).

    A batch file's names are links to one inode, so it is touched once per plan, not once
    per manifest in it.
    """
    first = PlanContext(ManifestCache(tmp_path))
    expected = trips.scan(context=first).plan().tasks.file_paths()
    first.manifests.flush()
    files = sorted(tmp_path.glob("*/*.arrow"))
    inodes = {f.stat().st_ino for f in files}
    assert len(inodes) < len(files)  # some manifests share a batch file
    for path in files:
        os.utime(path, (1_000_000, 1_000_000))
    touched: list[str] = []
    real_utime = os.utime

    def utime(path: Any, *args: Any, **kwargs: Any) -> None:
        touched.append(str(path))
        real_utime(path, *args, **kwargs)

    monkeypatch.setattr(manifest_cache.os, "utime", utime)
    again = PlanContext(ManifestCache(tmp_path))
    assert trips.scan(context=again).plan().tasks.file_paths() == expected
    assert again.manifests.disk_hits == len(files)
    assert {Path(t).stat().st_ino for t in touched} == inodes
    assert len(touched) == len(inodes)
    assert all(f.stat().st_mtime > 1_000_000 for f in files)


def test_a_manifest_without_live_entries_reads_back_empty(tmp_path: Path, trips: Table) -> None:
    """After a rewrite a manifest may hold only DELETED entries.

    Its cache file has no record batches; another process must still read its columns.
    """
    manifest = _manifests(trips)[0]
    key = _key(trips, manifest, path=manifest.manifest_path + "#empty")
    spec = trips.metadata.spec_by_id(manifest.partition_spec_id)
    assert spec is not None
    decoded = read_manifest_arrow(
        trips.io, manifest, trips.resolve().schema, spec, trips.metadata.format_version
    ).slice(0, 0)
    first = ManifestCache(tmp_path)
    first.get_or_load(
        key, lambda: build_planning_manifest(decoded, manifest.manifest_path, spec.spec_id)
    )
    first.flush()
    again = ManifestCache(tmp_path).get_or_load(key, lambda: pytest.fail("not on disk"))
    assert again.num_rows == 0
    assert again.required("record_count").to_pylist() == []
    assert again.required("file_path").to_pylist() == []


@pytest.mark.parametrize("name", ["demo.trips", "demo.accounts"])
def test_cache_files_written_behind_are_in_place_when_the_process_exits(
    tmp_path: Path, demo_warehouse: Path, name: str
) -> None:
    """A plan does not wait for its cache files; the process does, before it exits.

    Manifests of one spec decoded together are written as one batch file, a link per key
    (``demo.accounts`` has two data manifests of one spec).
    """
    table = icecore.load_table(f"{demo_warehouse}::{name}")
    code = (
        "import icecore, sys\n"
        "t = icecore.load_table(sys.argv[1])\n"
        "print(len(t.scan().plan().tasks))\n"
    )
    env = {**os.environ, "ICECORE_CACHE_DIR": str(tmp_path), "ICECORE_PLAN_PROCESSES": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code, table.metadata_location],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[3],
    )
    assert int(done.stdout) > 0
    files = list(tmp_path.glob("*/*.arrow"))
    specs = [m.partition_spec_id for m in _manifests(table)]
    assert len(files) >= len(specs) > 0  # data manifests, and any delete manifests
    shared = len(specs) - len(set(specs))  # data manifests in another's batch file
    assert len({f.stat().st_ino for f in files}) <= len(files) - shared


def test_close_writes_what_waits_and_joins_the_writer_thread(tmp_path: Path, trips: Table) -> None:
    """At exit the writer thread is stopped and joined, not left inside Arrow's C++ code."""
    manifests = _manifests(trips)[:2]
    assert len(manifests) == 2
    cache = ManifestCache(tmp_path)
    before = set(threading.enumerate())
    cache.get_or_load(_key(trips, manifests[0]), lambda: _decode(trips, manifests[0]))
    started = [t for t in threading.enumerate() if t not in before]
    assert [t.name for t in started] == ["icecore-cache-writer"]  # the file is left to it
    cache.close()
    assert not started[0].is_alive()
    assert len(list(tmp_path.glob("*/*.arrow"))) == 1
    # Still usable: the decoder writes its own file now, and starts no thread.
    cache.get_or_load(_key(trips, manifests[1]), lambda: _decode(trips, manifests[1]))
    assert [t for t in threading.enumerate() if t not in before and t.is_alive()] == []
    assert len(list(tmp_path.glob("*/*.arrow"))) == 2


def test_manifests_decoded_in_worker_processes_plan_as_decoded_here(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers decode in batches and hand their files over; the plan is the same."""
    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 1)
    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", "2")
    here = PlanContext(ManifestCache(None))
    there = PlanContext(ManifestCache(tmp_path))
    for flt in ("", "trip_distance > 3", "vendor_id = 2"):
        want = trips.scan(filter=flt or None, context=here).plan()
        got = trips.scan(filter=flt or None, context=there).plan()
        assert [t.file_path for t in got.tasks] == [t.file_path for t in want.tasks]
        assert [t.data_file for t in got.tasks] == [t.data_file for t in want.tasks]
        assert got.report.to_dict(max_items=None) == want.report.to_dict(max_items=None)
    data_manifests = len(_manifests(trips))
    assert decode_pool.worker_pids()  # the pool ran
    # Adopted from the workers' answers: served from their files without a disk lookup.
    assert len(list(tmp_path.glob("*/*.arrow"))) >= data_manifests
    assert there.manifests.misses == there.manifests.disk_hits == 0
    assert there.manifests.hits >= data_manifests


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_cold_plan_reports_its_manifests_to_the_progress_listener(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    """Reading manifests is told as "done of total", on this thread, ending with all done.

    The app's progress bar (issue 20) is drawn from these calls; Streamlit elements may only
    be touched from the script's own thread, so the workers' progress is relayed here.
    """
    from icecore.progress import reporting

    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 1)
    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", workers)
    data_manifests = sum(m.content == ManifestContent.DATA for m in _manifests(trips))
    seen: list[tuple[str, int, int, threading.Thread]] = []
    with reporting(
        lambda what, done, total: seen.append((what, done, total, threading.current_thread()))
    ):
        trips.scan(context=PlanContext(ManifestCache(tmp_path))).plan()
    assert seen, "nothing was reported"
    assert {s[3] for s in seen} == {threading.current_thread()}
    data = [(done, total) for what, done, total, _ in seen if what == "Reading manifests"]
    assert data and data[-1] == (data_manifests, data_manifests)
    assert {total for _, total in data} == {data_manifests}
    assert {what for what, *_ in seen} <= {"Reading manifests", "Reading delete manifests"}
    assert all(0 <= done <= total for _, done, total, _ in seen)
    dones = [done for done, _ in data]
    assert dones == sorted(dones)
    # Warm: nothing left to read, nothing reported as work; a listener that raises is dropped.
    calls: list[int] = []

    def broken(what: str, done: int, total: int) -> None:
        calls.append(done)
        raise RuntimeError("a broken progress bar")

    with reporting(broken):
        plan = trips.scan(context=PlanContext(ManifestCache(tmp_path))).plan()
    assert len(plan.tasks) > 0
    assert len(calls) <= 1


def test_decode_workers_import_this_process_icecore_not_the_current_directorys(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``icecore`` folder in the working directory (another checkout) is not the workers'.

    ``python -m`` puts the working directory first on the path: workers of another version
    wrote cache files the planner could not find. Here that folder's package cannot even be
    imported, so workers that took it would decode nothing.
    """
    elsewhere = tmp_path / "cwd"
    (elsewhere / "icecore").mkdir(parents=True)
    (elsewhere / "icecore" / "__init__.py").write_text("raise ImportError('another icecore')\n")
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 1)
    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", "1")
    decode_pool._close_workers()  # started afresh, in that directory
    context = PlanContext(ManifestCache(tmp_path / "cache"))
    assert len(trips.scan(context=context).plan().tasks) > 0
    assert context.manifests.misses == context.manifests.disk_hits == 0  # all adopted
    assert context.manifests.hits >= len(_manifests(trips))
    decode_pool._close_workers()


def test_decode_workers_decode_without_loading_pandas(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker never loads pandas (0.4 s of its start; datafusion's import pulled it in).

    The plan is still made by the workers (every manifest adopted), and the worker's mapped
    files show Arrow loaded but no pandas extension.
    """
    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 1)
    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", "1")
    decode_pool._close_workers()
    context = PlanContext(ManifestCache(tmp_path / "cache"))
    expected = trips.scan(context=PlanContext(ManifestCache(None))).plan().tasks.file_paths()
    assert trips.scan(context=context).plan().tasks.file_paths() == expected
    assert context.manifests.misses == context.manifests.disk_hits == 0  # all adopted
    (pid,) = decode_pool.worker_pids()
    mapped = Path(f"/proc/{pid}/maps").read_text()
    assert "/pyarrow/" in mapped
    assert "/pandas/" not in mapped
    decode_pool._close_workers()


def _built_together(
    table: Table,
) -> list[tuple[ManifestKey, PlanningManifest, PlanningManifest]]:
    """Manifests laid out in one batch, each with its key and its layout built alone.

    Three manifests (one manifest's columns under three paths): as written, without lower
    bounds (its slice of the batch lacks those metric columns), and without live entries.
    """
    manifest = _manifests(table)[0]
    spec = table.metadata.spec_by_id(manifest.partition_spec_id)
    assert spec is not None
    decoded = read_manifest_arrow(
        table.io, manifest, table.resolve().schema, spec, table.metadata.format_version
    )
    at = decoded.schema.get_field_index("lower_bounds")
    no_bounds = decoded.set_column(
        at, decoded.schema.field(at), pa.nulls(decoded.num_rows, decoded.field(at).type)
    )
    tables = [decoded, no_bounds, decoded.slice(0, 0)]
    paths = [manifest.manifest_path + suffix for suffix in ("", "#no-bounds", "#empty")]
    offsets = [0]
    for t in tables:
        offsets.append(offsets[-1] + t.num_rows)
    together = build_planning_manifests(pa.concat_tables(tables), offsets, paths, spec.spec_id)
    alone = [
        build_planning_manifest(t, p, spec.spec_id) for t, p in zip(tables, paths, strict=True)
    ]
    keys = [_key(table, manifest, path=p) for p in paths]
    return list(zip(keys, together, alone, strict=True))


def _as_alone(got: PlanningManifest, alone: PlanningManifest) -> None:
    assert got.source.schema.names == alone.source.schema.names
    if alone.num_rows:
        _same(got, alone)
    else:
        assert got.num_rows == 0
        assert got.required("file_path").to_pylist() == []


def test_manifests_built_together_share_one_file_each_key_reads_its_own(
    tmp_path: Path, trips: Table
) -> None:
    """A decode worker writes a batch once; every key still reads exactly its manifest."""
    items = _built_together(trips)
    assert any(n.startswith("lower_bounds:") for n in items[0][2].source.schema.names) and not any(
        n.startswith("lower_bounds:") for n in items[1][2].source.schema.names
    )
    cache = ManifestCache(tmp_path)
    handovers = cache.store_batch_for_handover([(key, pm) for key, pm, _ in items])
    files = sorted(tmp_path.glob("*/*.arrow"))
    assert len(files) == len(items)
    assert len({f.stat().st_ino for f in files}) == 1  # one file, a name per key
    fresh, adopted = ManifestCache(tmp_path), ManifestCache(tmp_path)  # the next process
    for (key, _, alone), handover in zip(items, handovers, strict=True):
        assert handover is not None
        adopted.adopt(key, handover)
        _as_alone(fresh.get_or_load(key, lambda: pytest.fail("not on disk")), alone)
        _as_alone(adopted.get_or_load(key, lambda: pytest.fail("not adopted")), alone)
    assert fresh.disk_hits == adopted.hits == len(items)


def test_a_plan_opens_a_batch_file_once_for_all_its_manifests(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restarted plan reads a batch file's footer and codes once, not once per manifest.

    Outside a plan nothing is remembered, so a file replaced between plans is read anew.
    """
    items = _built_together(trips)
    ManifestCache(tmp_path).store_batch_for_handover([(key, pm) for key, pm, _ in items])
    opened: list[str] = []
    real_open = pa.ipc.open_file

    def counting(source: object, *args: object, **kwargs: object) -> object:
        opened.append("open")
        return real_open(source, *args, **kwargs)

    monkeypatch.setattr(pa.ipc, "open_file", counting)
    single = _manifests(trips)[1]  # a manifest with a file of its own: opened once too
    single_key = _key(trips, single)
    ManifestCache(tmp_path).store(single_key, _decode(trips, single))
    fresh = ManifestCache(tmp_path)  # the next process
    with fresh.planning():
        for key, _, alone in items:
            _as_alone(fresh.get_or_load(key, lambda: pytest.fail("not on disk")), alone)
        _same(
            fresh.get_or_load(single_key, lambda: pytest.fail("not on disk")),
            _decode(trips, single),
        )
    assert fresh.disk_hits == len(items) + 1
    assert len(opened) == 2
    opened.clear()
    again = ManifestCache(tmp_path)
    for key, _, alone in items:  # no plan running: each manifest opens the file itself
        _as_alone(again.get_or_load(key, lambda: pytest.fail("not on disk")), alone)
    assert len(opened) == len(items)


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time a cache file's record batches are parsed."""
    parsed: list[int] = []
    real = manifest_cache._record_batches

    def counting(data: pa.Buffer, schema: pa.Schema) -> object:
        parsed.append(1)
        return real(data, schema)

    monkeypatch.setattr(manifest_cache, "_record_batches", counting)
    return parsed


def test_a_plan_reads_a_batch_files_columns_once_for_all_its_manifests(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restarted plan copies a batch file's columns out once; each key gets its own rows.

    Outside a plan every read parses the file again (nothing is held between plans).
    """
    items = _built_together(trips)
    ManifestCache(tmp_path).store_batch_for_handover([(key, pm) for key, pm, _ in items])
    parsed = _count_parses(monkeypatch)
    names = ["content", "record_count", "file_path", "partition"]
    fresh = ManifestCache(tmp_path)  # the next process
    with fresh.planning():
        during = [
            fresh.get_or_load(key, lambda: pytest.fail("not on disk")).read(names)
            for key, _, _ in items
        ]
    assert len(parsed) == 1
    for (_, _, alone), got in zip(items, during, strict=True):
        assert got.equals(alone.read(names))
    parsed.clear()
    again = ManifestCache(tmp_path)
    after = [
        again.get_or_load(key, lambda: pytest.fail("not on disk")).read(names)
        for key, _, _ in items
    ]
    assert len(parsed) == len(items)
    assert all(a.equals(b) for a, b in zip(during, after, strict=True))


def _adopt_and_read(
    cache: ManifestCache, items: list[Any], handovers: list[Any], names: list[str]
) -> list[pa.Table]:
    """Adopt each handed-over manifest, then read ``names`` of each."""
    for (key, _, _), handover in zip(items, handovers, strict=True):
        assert handover is not None
        cache.adopt(key, handover)
    return [
        cache.get_or_load(key, lambda: pytest.fail("not adopted")).read(names)
        for key, _, _ in items
    ]


def test_a_plan_reads_an_adopted_batch_files_columns_once(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's batch file, adopted: its columns copied out once during a plan.

    Each key still gets its own rows; outside a plan the file is parsed once per manifest.
    """
    items = _built_together(trips)
    handovers = ManifestCache(tmp_path).store_batch_for_handover(
        [(key, pm) for key, pm, _ in items]
    )
    parsed = _count_parses(monkeypatch)
    names = ["content", "record_count", "file_path", "partition"]
    adopted = ManifestCache(tmp_path)  # the planning process
    with adopted.planning():
        during = _adopt_and_read(adopted, items, handovers, names)
    assert adopted.hits == len(items)
    assert len(parsed) == 1
    for (_, _, alone), got in zip(items, during, strict=True):
        assert got.equals(alone.read(names))
    parsed.clear()
    after = _adopt_and_read(ManifestCache(tmp_path), items, handovers, names)
    assert len(parsed) == len(items)
    assert all(a.equals(b) for a, b in zip(during, after, strict=True))


def test_a_batch_file_counts_once_against_the_directory_bound(tmp_path: Path, trips: Table) -> None:
    items = _built_together(trips)
    cache = ManifestCache(tmp_path)
    cache.store_batch_for_handover([(key, pm) for key, pm, _ in items])
    files = sorted(tmp_path.glob("*/*.arrow"))
    cache.max_disk_bytes = files[0].stat().st_size
    cache.sweep()
    assert sorted(tmp_path.glob("*/*.arrow")) == files


def test_a_damaged_batch_file_is_decoded_again_for_every_key(tmp_path: Path, trips: Table) -> None:
    items = _built_together(trips)
    ManifestCache(tmp_path).store_batch_for_handover([(key, pm) for key, pm, _ in items])
    some = next(iter(tmp_path.glob("*/*.arrow")))
    some.write_bytes(some.read_bytes()[:-100])  # every name of the file sees it cut short
    fresh = ManifestCache(tmp_path)
    for key, _, alone in items:
        _as_alone(fresh.get_or_load(key, lambda alone=alone: alone), alone)  # type: ignore[misc]
    assert fresh.misses == len(items)


def test_idle_decode_workers_are_retired_and_started_again(
    tmp_path: Path, trips: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server gives the workers' memory back once no big plan has used them for a while."""
    import time

    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 1)
    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", "2")
    monkeypatch.setenv(decode_pool.IDLE_ENV, "1")
    want = [t.file_path for t in trips.scan(context=PlanContext(ManifestCache(None))).plan().tasks]
    first = trips.scan(context=PlanContext(ManifestCache(tmp_path / "a"))).plan()
    pids = decode_pool.worker_pids()
    assert len(pids) == 2
    deadline = time.monotonic() + 30
    while decode_pool.worker_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert decode_pool.worker_pids() == []
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)  # ended and reaped
    again = trips.scan(context=PlanContext(ManifestCache(tmp_path / "b"))).plan()
    restarted = decode_pool.worker_pids()
    assert len(restarted) == 2 and not set(restarted) & set(pids)
    assert [t.file_path for t in first.tasks] == [t.file_path for t in again.tasks] == want
