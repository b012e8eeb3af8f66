"""ManageSnapshots on the hand-written graph table: every expected ref comes from graph_table.

Semantics as Iceberg Java's ``SetSnapshotOperation``, ``UpdateSnapshotReferencesOperation``
and ``CherryPickOperation`` (the Spark oracle tests check the same on Spark-written tables);
refusals are one sentence and leave every file as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import icecore
from icecore.errors import CommitConflict, ValidationError
from icecore.metadata.requirements import AssertRefSnapshotId, AssertTableUUID
from icecore.refs.manage import ManageSnapshots
from icecore.table import Table
from tests.icecore.evolution.hand_table import tree_state

from .graph_table import S1, S2, S3, S4, S5, S6, TIMES, UUID, raw, refs_of, write_graph_table


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_graph_table(tmp_path)


@pytest.fixture
def table(folder: Path) -> Table:
    return icecore.load_table(str(folder))


def log_of(folder: Path) -> list[int]:
    return [entry["snapshot-id"] for entry in raw(folder)["snapshot-log"]]


# What each operation commits ---------------------------------------------------------------


def test_rollback_to_ancestor_moves_main_and_logs_it(table: Table, folder: Path) -> None:
    table.manage_snapshots().rollback_to_snapshot(S1).commit()
    md = raw(folder)
    assert md["current-snapshot-id"] == S1
    assert refs_of(folder) == {"main": S1, "audit": S4, "v1": S1}
    # Java's setRef appends (last-updated-ms, id) for every move of main.
    assert md["snapshot-log"][-1] == {"timestamp-ms": md["last-updated-ms"], "snapshot-id": S1}
    assert log_of(folder) == [S1, S2, S3, S1]


def test_rollback_of_another_branch_keeps_its_retention_and_main(
    table: Table, folder: Path
) -> None:
    table.manage_snapshots().rollback_to_snapshot(S2, branch="audit").commit()
    md = raw(folder)
    assert md["refs"]["audit"] == {"snapshot-id": S2, "type": "branch", "min-snapshots-to-keep": 3}
    assert md["current-snapshot-id"] == S3
    assert log_of(folder) == [S1, S2, S3]  # only main's moves are logged


def test_rollback_to_timestamp_takes_last_ancestor_strictly_before(
    table: Table, folder: Path
) -> None:
    # S2 was committed at exactly TIMES[S2]: Java's rollbackToTime wants strictly older.
    table.manage_snapshots().rollback_to_timestamp(TIMES[S2]).commit()
    assert refs_of(folder)["main"] == S1
    table.refresh().manage_snapshots().rollback_to_timestamp(TIMES[S4] + 1, "audit").commit()
    assert refs_of(folder)["audit"] == S4  # the head itself counts


def test_rollback_to_timestamp_accepts_iso_text(table: Table, folder: Path) -> None:
    table.manage_snapshots().rollback_to_timestamp("1970-01-01T00:00:02.5Z").commit()
    assert refs_of(folder)["main"] == S2


def test_set_current_to_a_non_ancestor_is_allowed_and_said(table: Table, folder: Path) -> None:
    manage = table.manage_snapshots().set_current_snapshot(S4)
    preview = manage.preview()
    assert any("not in the history of main" in line for line in preview.changes)
    assert preview.metadata.current_snapshot_id == S4
    manage.commit()
    assert raw(folder)["current-snapshot-id"] == S4
    assert log_of(folder) == [S1, S2, S3, S4]


def test_fast_forward_moves_branch_to_a_ref_ahead_of_it(table: Table, folder: Path) -> None:
    with table.manage_snapshots() as manage:
        manage.rollback_to_snapshot(S2).fast_forward("main", "audit")
    assert refs_of(folder)["main"] == S4
    assert log_of(folder)[-2:] == [S2, S4]


def test_cherry_pick_whose_parent_is_the_head_fast_forwards(table: Table, folder: Path) -> None:
    table.manage_snapshots().cherrypick_snapshot(S5).commit()
    assert refs_of(folder)["main"] == S5
    assert raw(folder)["current-snapshot-id"] == S5


def test_publish_wap_picks_the_staged_snapshot(table: Table, folder: Path) -> None:
    table.manage_snapshots().publish_wap("w1").commit()
    assert refs_of(folder)["main"] == S5


def test_create_branch_and_tag_with_retention(table: Table, folder: Path) -> None:
    with table.manage_snapshots() as manage:
        manage.create_branch(
            "dev", S2, max_ref_age_ms=10, max_snapshot_age_ms=20, min_snapshots_to_keep=2
        )
        manage.create_tag("release", max_ref_age_ms=30)
    md = raw(folder)
    assert md["refs"]["dev"] == {
        "snapshot-id": S2,
        "type": "branch",
        "max-ref-age-ms": 10,
        "max-snapshot-age-ms": 20,
        "min-snapshots-to-keep": 2,
    }
    assert md["refs"]["release"] == {"snapshot-id": S3, "type": "tag", "max-ref-age-ms": 30}
    assert log_of(folder) == [S1, S2, S3]


def test_rename_replace_and_remove(table: Table, folder: Path) -> None:
    with table.manage_snapshots() as manage:
        manage.rename_branch("audit", "review").rename_tag("v1", "first")
        manage.replace_branch("review", S5).replace_tag("first", S2)
    md = raw(folder)
    assert md["refs"]["review"] == {"snapshot-id": S5, "type": "branch", "min-snapshots-to-keep": 3}
    assert md["refs"]["first"] == {"snapshot-id": S2, "type": "tag", "max-ref-age-ms": 86_400_000}
    assert set(md["refs"]) == {"main", "review", "first"}
    table.refresh().manage_snapshots().remove_branch("review").remove_tag("first").commit()
    assert refs_of(folder) == {"main": S3}


def test_replace_main_is_logged(table: Table, folder: Path) -> None:
    table.manage_snapshots().replace_branch("main", S6).commit()
    assert raw(folder)["current-snapshot-id"] == S6
    assert log_of(folder) == [S1, S2, S3, S6]


def test_several_operations_are_one_metadata_version(table: Table, folder: Path) -> None:
    with table.manage_snapshots() as manage:
        manage.create_tag("a").rollback_to_snapshot(S2).remove_tag("v1")
    assert (folder / "metadata" / "version-hint.text").read_text().strip() == "2"
    assert refs_of(folder) == {"main": S2, "audit": S4, "a": S3}


def test_noop_writes_nothing(table: Table, folder: Path) -> None:
    before = tree_state(folder)
    with table.manage_snapshots() as manage:
        manage.rollback_to_snapshot(S3).fast_forward("audit", "audit").replace_tag("v1", S1)
    assert manage.result is table
    assert tree_state(folder) == before


def test_requirements_guard_every_touched_ref(table: Table) -> None:
    manage = table.manage_snapshots()
    manage.rollback_to_snapshot(S1).create_tag("new").remove_branch("audit")
    manage.rename_tag("v1", "old")
    assert set(manage.preview().requirements) == {
        AssertTableUUID(UUID),
        AssertRefSnapshotId("main", S3),
        AssertRefSnapshotId("new", None),
        AssertRefSnapshotId("audit", S4),
        AssertRefSnapshotId("v1", S1),
        AssertRefSnapshotId("old", None),
    }


def test_preview_writes_nothing_and_shows_moves(table: Table, folder: Path) -> None:
    before = tree_state(folder)
    preview = table.manage_snapshots().rollback_to_snapshot(S1).create_tag("t").preview()
    assert tree_state(folder) == before
    assert preview.changes[:2] == (
        f"branch main: snapshot {S3} -> {S1} (rollback)",
        f"create tag t at snapshot {S1} (new)",  # the current snapshot after the rollback
    )
    assert preview.metadata.refs["main"].snapshot_id == S1


# Refusals: one sentence each, nothing written ---------------------------------------------

Op = Callable[[ManageSnapshots], object]

REFUSALS: list[tuple[str, Op, str]] = [
    ("rollback to a non-ancestor", lambda m: m.rollback_to_snapshot(S4), "not an ancestor"),
    ("rollback to unknown", lambda m: m.rollback_to_snapshot(999), "no such snapshot"),
    ("rollback of a tag", lambda m: m.rollback_to_snapshot(S1, "v1"), "is a tag"),
    ("rollback of a missing branch", lambda m: m.rollback_to_snapshot(S1, "x"), "no branch"),
    ("rollback before time", lambda m: m.rollback_to_timestamp(TIMES[S1]), "before that time"),
    ("set-current unknown", lambda m: m.set_current_snapshot(999), "no such snapshot"),
    ("fast-forward not ahead", lambda m: m.fast_forward("main", "audit"), "diverged"),
    ("fast-forward backwards", lambda m: m.fast_forward("main", "v1"), "diverged"),
    ("fast-forward a tag", lambda m: m.fast_forward("v1", "main"), "is a tag"),
    ("fast-forward to nothing", lambda m: m.fast_forward("main", "x"), "no branch or tag"),
    (
        "cherry-pick parent moved",
        lambda m: m.cherrypick_snapshot(S6),
        "not append, dynamic overwrite, or fast-forward",
    ),
    ("create existing branch", lambda m: m.create_branch("audit"), "already"),
    ("create tag over branch", lambda m: m.create_tag("main"), "already"),
    ("create at unknown", lambda m: m.create_tag("t", 999), "no such snapshot"),
    ("create bad retention", lambda m: m.create_branch("b", min_snapshots_to_keep=0), "positive"),
    ("create empty name", lambda m: m.create_tag(" "), "needs a name"),
    ("create control chars", lambda m: m.create_tag("a\nb"), "control characters"),
    ("drop main", lambda m: m.remove_branch("main"), "main branch"),
    ("drop a tag as branch", lambda m: m.remove_branch("v1"), "is a tag"),
    ("drop a missing tag", lambda m: m.remove_tag("x"), "no tag"),
    ("rename main", lambda m: m.rename_branch("main", "x"), "main branch"),
    ("rename onto existing", lambda m: m.rename_branch("audit", "v1"), "exists already"),
    ("replace tag as branch", lambda m: m.replace_branch("v1", S2), "is a tag"),
    ("WAP never staged", lambda m: m.publish_wap("nope"), "no snapshot"),
]


@pytest.mark.parametrize(("case", "op", "words"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_are_one_sentence_and_write_nothing(
    table: Table, folder: Path, case: str, op: Op, words: str
) -> None:
    before = tree_state(folder)
    with pytest.raises(ValidationError) as info, table.manage_snapshots() as manage:
        op(manage)
    message = str(info.value)
    assert words in message, message
    assert "\n" not in message and message.endswith("."), message
    assert tree_state(folder) == before


def test_publishing_a_wap_id_twice_is_refused(table: Table, folder: Path) -> None:
    table.manage_snapshots().publish_wap("w1").commit()
    before = tree_state(folder)
    with pytest.raises(ValidationError, match="published already"):
        table.refresh().manage_snapshots().publish_wap("w1")
    assert tree_state(folder) == before


def test_later_operations_see_earlier_ones(table: Table) -> None:
    manage = table.manage_snapshots().rollback_to_snapshot(S1)
    with pytest.raises(ValidationError, match="not an ancestor"):
        manage.rollback_to_snapshot(S2)  # S2 is no longer in main's history
    manage.create_tag("t")
    with pytest.raises(ValidationError, match="already"):
        manage.create_tag("t")


# Races --------------------------------------------------------------------------------------


def test_a_ref_moved_after_the_preview_is_a_conflict(table: Table, folder: Path) -> None:
    manage = table.manage_snapshots().rollback_to_snapshot(S2)
    manage.preview()
    # Another writer moves main meanwhile (what an engine's append does).
    icecore.load_table(str(folder)).manage_snapshots().cherrypick_snapshot(S5).commit()
    before = tree_state(folder)
    with pytest.raises(CommitConflict) as info:
        manage.commit()
    message = str(info.value)
    assert f"main is at {S5} instead of {S3}" in message, message
    assert tree_state(folder) == before
    assert refs_of(folder)["main"] == S5  # the other writer's move is kept


def test_an_untouched_ref_moving_meanwhile_is_no_conflict(table: Table, folder: Path) -> None:
    manage = table.manage_snapshots().create_tag("t", S2)
    icecore.load_table(str(folder)).manage_snapshots().cherrypick_snapshot(S5).commit()
    manage.commit()
    assert refs_of(folder) == {"main": S5, "audit": S4, "v1": S1, "t": S2}


def test_a_name_taken_meanwhile_is_a_conflict(table: Table, folder: Path) -> None:
    manage = table.manage_snapshots().create_branch("dev", S1)
    icecore.load_table(str(folder)).manage_snapshots().create_tag("dev", S2).commit()
    with pytest.raises(CommitConflict, match="dev is at"):
        manage.commit()
    assert raw(folder)["refs"]["dev"] == {"snapshot-id": S2, "type": "tag"}


@pytest.mark.parametrize("change", ["schema", "ref"])
def test_read_only_refuses_every_commit_on_a_filesystem_table(
    table: Table, folder: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """ICECORE_READ_ONLY refuses commits on every catalog kind, not only SQLite and REST."""
    before = tree_state(folder)
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    with pytest.raises(ValidationError, match="read-only"):
        if change == "schema":
            table.update_schema().add_column("note", "string").commit()
        else:
            table.manage_snapshots().rollback_to_snapshot(S2).commit()
    assert tree_state(folder) == before
