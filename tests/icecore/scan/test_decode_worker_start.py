"""Decode workers start wherever the planner's icecore comes from, and say so when they fail.

Issue 32: the workers ran ``python -P`` with a PYTHONPATH built from ``sys.path`` minus its
empty entry, so from ``python -c`` (or a notebook) in the checkout every worker died with
"No module named 'icecore'" and the plan silently fell back to one thread.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

import icecore
from icecore.scan import decode_pool
from icecore.scan.context import PlanContext
from icecore.scan.manifest_cache import ManifestCache
from tests.decode_probe import run_probe

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.spark
def test_workers_decode_for_a_plan_run_with_python_c_in_the_checkout(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    """``python -c`` in the checkout: icecore is found only through the empty path entry."""
    found = run_probe(sys.executable, f"{demo_warehouse}::demo.trips", tmp_path / "cache", REPO)
    assert Path(found["icecore"]).resolve().is_relative_to(REPO)
    assert found["manifests"] > 0 and found["tasks"] > 0
    # Every data manifest came from a worker's hand-over; the planner decoded none itself.
    assert found["decoded_here"] == 0, found
    assert found["adopted"] >= found["manifests"], found
    assert found["warnings"] == []
    assert "No module named" not in found["stderr"]


def test_worker_path_puts_this_icecore_first_and_keeps_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    path = decode_pool.worker_path()
    assert path[0] == str(Path(icecore.__file__).resolve().parent.parent)
    assert str(tmp_path) in path  # '' is the current folder, kept as its absolute path
    assert "" not in path
    assert len(path) == len(set(path))


@pytest.mark.spark
def test_a_worker_that_cannot_start_is_one_warning_and_the_plan_is_the_same(
    demo_warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies at start: the plan is decoded here, and one warning says why."""
    broken = tmp_path / "python"
    broken.write_text(
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'icecore'\" >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    want = [t.file_path for t in table.scan(context=PlanContext(ManifestCache(None))).plan().tasks]
    decode_pool._close_workers()
    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 1)
    monkeypatch.setattr(decode_pool, "_warned", False)
    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", "2")
    monkeypatch.setattr(sys, "executable", str(broken))
    context = PlanContext(ManifestCache(tmp_path / "cache"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [t.file_path for t in table.scan(context=context).plan().tasks]
        again = table.scan(context=PlanContext(ManifestCache(tmp_path / "other"))).plan()
    decode_pool._close_workers()
    assert got == want == [t.file_path for t in again.tasks]
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1, said  # once per process, not once per worker or per plan
    assert "decode worker" in said[0]
    assert "No module named 'icecore'" in said[0]  # the worker's own words
    assert context.manifests.misses > 0  # decoded here instead
