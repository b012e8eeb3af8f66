"""``ManageSnapshots.preview()`` and ``icecore ref ... --dry-run`` give the ref dry run.

On the hand-written graph table (tests/icecore/refs/graph_table.py), whose docstring draws
every snapshot, parent and ref the expected values below are read from. Its manifest lists
do not exist, so the dry run says it has no file diff instead of failing.

All its snapshots are from 1970: judged now, every snapshot no ref retains is expirable.
Before any operation: main keeps S3 (one snapshot), audit keeps S4, S2, S1 (min 3), the tag
v1 keeps S1; S5, S6, S7 are unreferenced.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import icecore
from icecore.refs.dry_run import Change, RefDryRun, Relation
from icecore.refs.wap import staged_wap_snapshots
from icecore.table import Table
from tests.icecore.evolution.hand_table import tree_state

from .graph_table import S1, S2, S3, S4, write_graph_table
from .test_cli_ref import ok, ref


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_graph_table(tmp_path)


@pytest.fixture
def table(folder: Path) -> Table:
    return icecore.load_table(str(folder))


def test_preview_of_a_rollback_is_the_dry_run(table: Table, folder: Path) -> None:
    """Main S3 -> S1: a rewind; S3 loses its only ref and, being old, would expire."""
    before = tree_state(folder)
    run = table.manage_snapshots().rollback_to_snapshot(S1).preview()
    assert tree_state(folder) == before
    assert isinstance(run, RefDryRun)
    assert [(m.name, m.change, m.from_snapshot_id, m.to_snapshot_id) for m in run.moves] == [
        ("main", Change.MOVED, S3, S1)
    ]
    (b,) = run.branches
    assert (b.relation, b.common_ancestor_id) == (Relation.REWIND, S1)
    assert b.diff is None and "does not exist" in b.diff_error
    assert run.unreachable == (S3,)
    assert run.would_expire == (S3,)
    assert run.metadata.refs["main"].snapshot_id == S1
    assert run.changes[0] == f"branch main: snapshot {S3} -> {S1} (rollback)"
    assert {r.kind for r in run.requirements} == {"assert-table-uuid", "assert-ref-snapshot-id"}


def test_set_current_onto_another_line_is_said_plainly(table: Table) -> None:
    """Main S3 -> S4 (audit's line): neither ancestor nor descendant; they share S2."""
    run = table.manage_snapshots().set_current_snapshot(S4).preview()
    (b,) = run.branches
    assert (b.relation, b.common_ancestor_id) == (Relation.UNRELATED, S2)
    assert any(
        w.startswith("main will point at a snapshot that is not in its history")
        for w in run.warnings
    )
    assert run.unreachable == (S3,)


def test_a_new_tag_keeps_an_expirable_snapshot(table: Table) -> None:
    """S3 is kept only as main's newest; a tag on S2 changes nothing, one on S5 keeps S5."""
    assert table.manage_snapshots().create_tag("t", S2).preview().kept_from_expiry == ()
    run = table.manage_snapshots().create_tag("t", 105).preview()
    assert run.kept_from_expiry == (105,)
    assert run.branches == () and run.unreachable == ()


def test_cli_dry_run_prints_the_ref_dry_run(folder: Path) -> None:
    before = tree_state(folder)
    out = ok(ref(str(folder), "rollback", "--to", str(S1), "--dry-run"))
    assert tree_state(folder) == before
    assert out["dry_run"] is True
    assert [(r["name"], r["change"]) for r in out["refs"]] == [("main", "moved")]
    (branch,) = out["branches"]
    assert (branch["relation"], branch["new_head_is_ancestor"]) == ("rewind", True)
    assert out["unreachable_snapshot_ids"] == [S3]
    assert out["would_expire_snapshot_ids"] == [S3]
    assert out["metadata"]["current-snapshot-id"] == S1  # the commit's preview is kept


def test_staged_wap_snapshots_until_published(table: Table) -> None:
    """S5 (w1) and S7 (w2) are staged, newest first; publishing w1 moves main onto S5."""
    assert [(w, s.snapshot_id) for w, s in staged_wap_snapshots(table.metadata)] == [
        ("w2", 107),
        ("w1", 105),
    ]
    published = table.manage_snapshots().publish_wap("w1").commit()
    assert [w for w, _ in staged_wap_snapshots(published.metadata)] == ["w2"]
    # Audit's history (S4, S2, S1) holds neither: both are still staged for it.
    assert [w for w, _ in staged_wap_snapshots(published.metadata, "audit")] == ["w2", "w1"]
