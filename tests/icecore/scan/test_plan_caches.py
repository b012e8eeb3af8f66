"""Planning again from a context's caches gives exactly the plan a cold context gives.

Verdicts are cached per (manifest, spec fields, bound filter) and shared by every snapshot
that lists the manifest; compiled evaluators per (table, metadata location, schema, filter,
spec). These tests plan every filter of the oracle test on every ref in one order with warm
caches and compare each plan, item for item, with the same plan made in a fresh context
(the disk cache off, so nothing is read back either).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import FilterError
from icecore.scan.context import PlanContext
from icecore.scan.manifest_cache import ManifestCache
from icecore.scan.planner import Plan
from icecore.table import Table
from tests.icecore.scan.test_planner import FILTERS, REFS

pytestmark = pytest.mark.spark


def _memory_only() -> PlanContext:
    """A context of its own: a manifest cache without a directory, every cache empty."""
    return PlanContext(ManifestCache(None))


@pytest.fixture
def memory_only() -> Iterator[PlanContext]:
    yield _memory_only()


def _planned(
    table: Table, ref: str | None, flt: str, context: PlanContext | None = None
) -> dict[str, Any] | str:
    """The plan's summary, or the error for a filter the snapshot's schema cannot bind."""
    try:
        return _summary(table.scan(filter=flt or None, ref=ref, context=context).plan())
    except FilterError as error:
        return str(error)


def _summary(plan: Plan) -> dict[str, Any]:
    report = plan.report
    return {
        "tasks": [
            (t.file_path, sorted(d.file_path for d in t.delete_files), str(t.residual))
            for t in plan.tasks
        ],
        "files": plan.data_files,
        "deletes": plan.delete_files,
        "pruned": [(p.level, p.path, p.reason) for p in report.pruned],
        "report": report.to_dict(max_items=None),
    }


@pytest.mark.parametrize("table", ["trips", "events_v3", "accounts"])
def test_warm_plans_equal_cold_plans(
    demo_warehouse: Path, memory_only: PlanContext, table: str
) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.{table}")
    cases = [(ref, flt) for flt in FILTERS[table] for ref in REFS[table]]
    warm = {case: _planned(t, *case, memory_only) for case in cases}
    again = {case: _planned(t, *case, memory_only) for case in cases}
    assert sum(isinstance(v, dict) for v in warm.values()) > len(cases) // 2
    for case in cases:
        cold = _planned(t, *case, _memory_only())
        assert warm[case] == cold, case
        assert again[case] == cold, case
    reloaded = icecore.load_table(f"{demo_warehouse}::demo.{table}")  # new metadata object
    for case in cases:
        assert _planned(reloaded, *case, memory_only) == again[case]


def test_one_manifest_judged_once_per_filter(
    demo_warehouse: Path, memory_only: PlanContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest already judged under a filter is not read again for it.

    The current snapshot and an older one share manifests: planning the older one reads no
    column of the shared ones, and a new filter reads them again.
    """
    from icecore.scan.planning_manifest import PlanningManifest

    reads: list[str] = []
    original = PlanningManifest.read

    def counting(self: PlanningManifest, names: Any) -> Any:
        reads.append(self.path)
        return original(self, names)

    monkeypatch.setattr(PlanningManifest, "read", counting)
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    flt = "fare > 50 AND vendor_id = 2"
    t.scan(filter=flt, context=memory_only).plan()
    first = set(reads)
    assert first
    current = t.snapshot()
    assert current is not None
    mine = {m.manifest_path for m in t.manifests(current)}
    older, shared = next(
        (s.snapshot_id, mine & {m.manifest_path for m in t.manifests(s)} & first)
        for s in t.metadata.snapshots
        if s.snapshot_id != current.snapshot_id
        and mine & {m.manifest_path for m in t.manifests(s)} & first
    )
    reads.clear()
    t.scan(filter=flt, snapshot_id=older, context=memory_only).plan()
    assert not shared & set(reads)  # shared manifests were not read again
    reads.clear()
    t.scan(filter="fare > 51 AND vendor_id = 2", context=memory_only).plan()
    assert set(reads) == first


@pytest.mark.parametrize("table", ["trips", "accounts"])
def test_deletes_looked_up_in_small_chunks_and_uncached_columns_give_the_same_plans(
    demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    """Deletes found 3 files at a time, columns read again per plan: the same plans.

    A context that keeps no planned columns reads them for every plan; the plans equal a
    default context's.
    """
    from icecore.scan import planned

    t = icecore.load_table(f"{demo_warehouse}::demo.{table}")
    cases = [(ref, flt) for flt in FILTERS[table] for ref in REFS[table]]
    kept = {case: _planned(t, *case) for case in cases}
    monkeypatch.setattr(planned, "LOOKUP_CHUNK", 3)
    keeps_nothing = PlanContext(ManifestCache(None), planned_bytes=0)
    with_deletes = 0
    for case in cases:
        made = _planned(t, *case, context=keeps_nothing)
        assert made == kept[case], case
        with_deletes += isinstance(made, dict) and bool(made["deletes"])
    assert with_deletes  # the fixture's deletes are exercised
    assert len(keeps_nothing.planned_columns) == 0


def test_a_reloaded_table_plans_from_the_same_context(demo_warehouse: Path) -> None:
    """Keys name the table version (uuid, metadata location, schema id), not a Python object.

    A table loaded again is a new metadata object at the same location: planning it again
    in the same context binds and compiles nothing new. A context of its own shares nothing
    with the process's default one.
    """
    from icecore.scan.context import default_context

    flt = "fare > 50 AND vendor_id = 2"
    default = default_context()
    default_sizes = (len(default.bound), len(default.compiled), len(default.file_verdicts))
    context = _memory_only()
    first = icecore.load_table(f"{demo_warehouse}::demo.trips")
    planned = _summary(first.scan(filter=flt, context=context).plan())
    sizes = (len(context.bound), len(context.compiled), len(context.file_verdicts))
    assert all(sizes)
    reloaded = icecore.load_table(f"{demo_warehouse}::demo.trips")
    assert reloaded.metadata is not first.metadata
    assert _summary(reloaded.scan(filter=flt, context=context).plan()) == planned
    assert (len(context.bound), len(context.compiled), len(context.file_verdicts)) == sizes
    assert (len(default.bound), len(default.compiled), len(default.file_verdicts)) == (
        default_sizes
    )
