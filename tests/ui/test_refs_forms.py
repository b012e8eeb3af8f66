"""What the ref forms start from, and the undo a commit offers, on the hand-written graph.

Every expected value is read off the graph drawn in tests/icecore/refs/graph_table.py
(main -> S3, audit -> S4 off S2, tag v1 -> S1, S5 staged on S3); the undo is committed and
its result read from the metadata JSON on disk, without Icecore.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import icecore
from icecore.table import Table
from tests.icecore.refs.graph_table import S1, S2, S3, S4, S5, refs_of, write_graph_table
from ui import refs
from ui.refs import SET_CURRENT, RefAction


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_graph_table(tmp_path)


@pytest.fixture
def table(folder: Path) -> Table:
    return icecore.load_table(str(folder))


def test_refs_at_and_branches_holding(table: Table) -> None:
    md = table.metadata
    assert refs.refs_at(md, S3) == ["main"]
    assert refs.refs_at(md, S4) == ["audit"]
    assert refs.refs_at(md, S1) == ["v1"]
    assert refs.refs_at(md, S5) == []
    assert refs.branches_holding(md, S2) == ["audit", "main"]
    assert refs.branches_holding(md, S4) == ["audit"]
    assert refs.branches_holding(md, S5) == []


def test_fast_forward_starts_from_the_pick(table: Table) -> None:
    md = table.metadata
    assert refs.fast_forward_source(md, S4) == "audit"  # the branch whose head was picked
    assert refs.fast_forward_source(md, S2) == "audit"  # a branch whose history holds it
    assert refs.fast_forward_source(md, S3) is None  # on main alone
    assert refs.fast_forward_source(md, S3, picked_ref="audit") == "audit"  # the ref picked
    assert refs.fast_forward_source(md, S3, picked_ref="main") is None


def test_a_rollback_offers_its_undo_and_the_undo_puts_main_back(table: Table, folder: Path) -> None:
    done = refs.commit(table, RefAction(refs.ROLLBACK, (S1,), (("branch", "main"),)))
    assert refs_of(folder)["main"] == S1
    assert done.undo == RefAction(SET_CURRENT, (S3,), (("branch", "main"),))
    rolled = icecore.load_table(str(folder))
    # S3 is no longer in main's history: a rollback there is refused, set current is not.
    with pytest.raises(icecore.IcecoreError, match="set_current_snapshot"):
        refs.dry_run(rolled, RefAction(refs.ROLLBACK, (S3,), (("branch", "main"),)))
    assert done.undo is not None
    again = refs.commit(rolled, done.undo)
    assert refs_of(folder) == {"main": S3, "audit": S4, "v1": S1}
    assert again.undo == RefAction(SET_CURRENT, (S1,), (("branch", "main"),))


def test_no_undo_where_refs_appear_or_go(table: Table) -> None:
    renamed = refs.commit(table, RefAction(refs.RENAME_TAG, ("v1", "first")))
    assert renamed.undo is None


def test_the_app_offers_only_its_verbs(table: Table) -> None:
    with pytest.raises(icecore.IcecoreError, match="does not offer"):
        refs.stage(table, RefAction("expire_snapshots"))
    assert "remove_branch" in refs.VERBS and "set_current_snapshot" in refs.VERBS
