"""Ref actions on History and Time travel: dry run shown, confirmation, commit Spark reads.

Every test that commits works on a copy of a fixture table (tests/ui/copies.py). Spark is the
oracle: after a commit made on a page, Spark's ``refs`` table must show the ref where the
page said it would be, and Spark must read the rolled-back branch as it read that snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.icecore.evolution.conftest import EvoCatalogs
from tests.ui.copies import Copy, copy_sql_table
from tests.ui.helpers import (
    Step,
    as_shown,
    code_blocks,
    drive,
    keys,
    no_problems,
    open_app,
    spark_count,
)
from ui import app

HISTORY = app.HISTORY.file
TIME_TRAVEL = app.TIME_TRAVEL.file

pytestmark = pytest.mark.spark


def _open(copy: Copy, monkeypatch: pytest.MonkeyPatch, page: str, **params: str) -> AppTest:
    monkeypatch.setenv("ICECORE_CATALOG", copy.catalog)
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    return open_app(page, catalog=copy.catalog, table=copy.table, **params)


def _refs(spark: Any, copy: Copy) -> dict[str, tuple[str, int]]:
    rows = spark.sql(f"SELECT name, type, snapshot_id FROM {copy.spark_name}.refs").collect()
    return {r.name: (r.type, r.snapshot_id) for r in rows}


def _confirm_and_commit(at: AppTest, prefix: str) -> AppTest:
    return drive(at, ("checkbox", f"{prefix}confirm", True), ("button", f"{prefix}commit", None))


def _dry_run(at: AppTest) -> str:
    blocks = [b for b in code_blocks(at) if b.startswith("Refs:")]
    assert len(blocks) == 1, code_blocks(at)
    return blocks[0]


@pytest.fixture
def trips(evo: EvoCatalogs, demo_warehouse: Path) -> Copy:
    return copy_sql_table(evo, demo_warehouse, "trips")


def test_history_rolls_main_back_after_a_dry_run(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Roll main back to month_end: the dry run warns of the schema change, Spark agrees after."""
    refs = _refs(spark, trips)
    main, month_end = refs["main"][1], refs["month_end"][1]
    location = trips.location()
    at = _open(trips, monkeypatch, HISTORY)
    no_problems(at)
    steps: list[Step] = [
        ("selectbox", "history_pick", month_end),
        ("radio", "ref_h_action", "Roll back main to here"),
    ]
    at = drive(at, *steps)
    no_problems(at)
    text = _dry_run(at)
    assert f"move branch main: snapshot {main} -> {month_end}" in text
    assert "rewinds past a schema change" in text
    assert at.button(key="ref_h_commit").disabled
    assert trips.location() == location  # the dry run wrote nothing

    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    assert any("Committed to" in as_shown(s.value) for s in at.success)
    assert _refs(spark, trips)["main"] == ("BRANCH", month_end)
    # The picked snapshot stays picked, though its label now names main too.
    assert at.selectbox(key="history_pick").value == month_end
    assert f"Act on snapshot {month_end}" in [s.value for s in at.subheader]
    assert spark_count(spark, f"SELECT count(*) FROM {trips.spark_name}") == spark_count(
        spark, f"SELECT count(*) FROM {trips.spark_name} VERSION AS OF {month_end}"
    )
    # The page shows the new state: main now sits on month_end's snapshot.
    rows = next(df.value for df in at.dataframe if "min snapshots to keep" in df.value.columns)
    assert dict(zip(rows["name"], rows["snapshot"], strict=True))["main"] == str(month_end)


def test_history_tags_a_snapshot_with_retention(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = _refs(spark, trips)["main"][1]
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("selectbox", "history_pick", main),
        ("radio", "ref_h_action", "Tag this snapshot"),
        ("text_input", "ref_h_f_name", "reviewed"),
        ("number_input", "ref_h_f_ref_age", 86_400_000),
    )
    no_problems(at)
    text = _dry_run(at)
    assert f"create tag reviewed at snapshot {main}" in text
    assert "retention: max-ref-age-ms=86400000" in text
    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    assert _refs(spark, trips)["reviewed"] == ("TAG", main)
    (age,) = spark.sql(
        f"SELECT max_reference_age_in_ms FROM {trips.spark_name}.refs WHERE name = 'reviewed'"
    ).collect()[0]
    assert age == 86_400_000
    # The refs table says the retention in words: Spark's 86,400,000 ms is one day.
    rows = next(df.value for df in at.dataframe if "max ref age" in df.value.columns)
    shown = dict(zip(rows["name"], rows["max ref age"], strict=True))
    assert shown["reviewed"] == "1 day"
    assert shown["main"] == "table default"  # Spark's refs table: null for main
    (main_age,) = spark.sql(
        f"SELECT max_reference_age_in_ms FROM {trips.spark_name}.refs WHERE name = 'main'"
    ).collect()[0]
    assert main_age is None


def test_a_refused_action_is_one_sentence_and_offers_no_commit(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tag named like an existing one: the core's sentence, no dry run, no commit button."""
    location = trips.location()
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("radio", "ref_h_action", "Tag this snapshot"),
        ("text_input", "ref_h_f_name", "month_end"),
    )
    assert not at.exception
    (error,) = [as_shown(e.value) for e in at.error]
    assert "month_end" in error and error.count(". ") == 0 and error.endswith(".")
    assert not [b for b in code_blocks(at) if b.startswith("Refs:")]
    assert not [b for b in at.button if b.key == "ref_h_commit"]
    assert trips.location() == location


def test_a_name_is_shown_as_text(spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ref name with Markdown in it reaches the dry run verbatim (a code block, not Markdown)."""
    name = "[x](https://example.org) **b**"
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("radio", "ref_h_action", "Create a branch here"),
        ("text_input", "ref_h_f_name", name),
    )
    no_problems(at)
    assert f"create branch {name} at snapshot" in _dry_run(at)


def test_time_travel_fast_forwards_main_to_the_picked_ref(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """To = audit (from the link): the form starts on main -> audit and says where main goes."""
    refs = _refs(spark, trips)
    main, audit = refs["main"][1], refs["audit"][1]
    at = drive(
        _open(trips, monkeypatch, TIME_TRAVEL, to="audit"),
        ("radio", "ref_t_action", "Fast-forward a branch"),
    )
    no_problems(at)
    assert at.selectbox(key="ref_t_f_ff_branch").value == "main"
    assert at.selectbox(key="ref_t_f_ff").value == "audit"
    said = [as_shown(c.value) for c in at.caption]
    assert f"main moves from snapshot {main} to snapshot {audit}, the head of audit." in said
    text = _dry_run(at)
    assert f"move branch main: snapshot {main} -> {audit}" in text and "moves forward" in text
    at = _confirm_and_commit(at, "ref_t_")
    no_problems(at)
    assert _refs(spark, trips)["main"] == ("BRANCH", audit)
    assert spark_count(spark, f"SELECT count(*) FROM {trips.spark_name}") == spark_count(
        spark, f"SELECT count(*) FROM {trips.spark_name} VERSION AS OF {audit}"
    )


def test_history_fast_forward_follows_the_picked_snapshot(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot inside audit's history (not its head) preselects audit.

    The page says that main goes to audit's head, not to the picked snapshot.
    """
    refs = _refs(spark, trips)
    main, audit = refs["main"][1], refs["audit"][1]
    (inside,) = spark.sql(
        f"SELECT parent_id FROM {trips.spark_name}.snapshots WHERE snapshot_id = {audit}"
    ).collect()[0]
    assert inside != main  # audit has two commits of its own
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("selectbox", "history_pick", inside),
        ("radio", "ref_h_action", "Fast-forward a branch"),
    )
    no_problems(at)
    assert at.selectbox(key="ref_h_f_ff").value == "audit"
    said = " ".join(as_shown(c.value) for c in at.caption)
    assert f"main moves from snapshot {main} to snapshot {audit}, the head of audit." in said
    assert f"That is not snapshot {inside}, the one picked" in said
    assert f"move branch main: snapshot {main} -> {audit}" in _dry_run(at)


def test_undo_of_a_rollback_with_set_current(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Roll main back, then undo it from the outcome: Spark sees the original head again."""
    refs = _refs(spark, trips)
    main, month_end = refs["main"][1], refs["month_end"][1]
    rows = spark_count(spark, f"SELECT count(*) FROM {trips.spark_name}")
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("selectbox", "history_pick", month_end),
        ("radio", "ref_h_action", "Roll back main to here"),
    )
    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    assert _refs(spark, trips)["main"] == ("BRANCH", month_end)
    undo = at.button(key="ref_h_undo")
    assert as_shown(undo.label) == f"Undo: set main back to snapshot {main}"
    at = drive(at, ("button", "ref_h_undo", None))
    no_problems(at)
    text = _dry_run(at)
    assert f"move branch main: snapshot {month_end} -> {main}" in text
    assert at.button(key="ref_h_commit").disabled
    assert _refs(spark, trips)["main"] == ("BRANCH", month_end)  # the dry run wrote nothing
    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    assert any("Committed to" in as_shown(s.value) for s in at.success)
    assert _refs(spark, trips)["main"] == ("BRANCH", main)
    assert spark_count(spark, f"SELECT count(*) FROM {trips.spark_name}") == rows


def test_set_current_where_a_rollback_is_refused(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot of audit is not in main's history: rollback refuses, set current moves main."""
    refs = _refs(spark, trips)
    main, audit = refs["main"][1], refs["audit"][1]
    (deleted,) = spark.sql(
        f"SELECT parent_id FROM {trips.spark_name}.snapshots WHERE snapshot_id = {audit}"
    ).collect()[0]
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("selectbox", "history_pick", deleted),
        ("radio", "ref_h_action", "Roll back main to here"),
    )
    (error,) = [as_shown(e.value) for e in at.error]
    assert "set_current_snapshot" in error  # the core's refusal of a rollback there
    assert "To point a branch at any snapshot, in its history or not: “Set current here”." in [
        c.value for c in at.caption
    ]
    at = drive(at, ("radio", "ref_h_action", "Set current here"))
    no_problems(at)
    text = _dry_run(at)
    assert f"move branch main: snapshot {main} -> {deleted}" in text
    assert "moves forward" in text  # audit left main at main's head
    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    assert _refs(spark, trips)["main"] == ("BRANCH", deleted)
    assert spark_count(spark, f"SELECT count(*) FROM {trips.spark_name}") == spark_count(
        spark, f"SELECT count(*) FROM {trips.spark_name} VERSION AS OF {deleted}"
    )


def test_rename_a_tag_and_drop_a_branch(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = _refs(spark, trips)
    month_end = refs["month_end"][1]
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("selectbox", "history_pick", month_end),
        ("radio", "ref_h_action", "Rename a branch or tag"),
    )
    assert at.selectbox(key="ref_h_f_ref").value == "month_end"  # the tag at the pick
    at = drive(at, ("text_input", "ref_h_f_new_name", "august_close"))
    no_problems(at)
    assert "rename tag month_end to august_close" in _dry_run(at)
    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    after = _refs(spark, trips)
    assert after["august_close"] == ("TAG", month_end) and "month_end" not in after
    assert "ref_h_undo" not in keys(at.button)  # a rename moves no branch: nothing to undo

    at = drive(
        at,
        ("radio", "ref_h_action", "Drop a branch or tag"),
        ("selectbox", "ref_h_f_ref", "audit"),
    )
    no_problems(at)
    assert f"drop branch audit (at snapshot {refs['audit'][1]})" in _dry_run(at)
    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    assert "audit" not in _refs(spark, trips)


def test_main_cannot_be_dropped_and_says_why(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = trips.location()
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("radio", "ref_h_action", "Drop a branch or tag"),
        ("selectbox", "ref_h_f_ref", "main"),
    )
    assert not at.exception
    (error,) = [as_shown(e.value) for e in at.error]
    assert error.startswith("Cannot drop the main branch of") and error.endswith(".")
    assert not [b for b in at.button if b.key == "ref_h_commit"]
    assert trips.location() == location


def test_a_drop_confirmed_before_another_writer_commits_is_refused(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark commits to audit after the user confirmed dropping it: refused, audit stays."""
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("radio", "ref_h_action", "Drop a branch or tag"),
        ("selectbox", "ref_h_f_ref", "audit"),
        ("checkbox", "ref_h_confirm", True),
    )
    no_problems(at)
    spark.sql(
        f"INSERT INTO {trips.spark_name}.branch_audit "
        f"SELECT * FROM {trips.spark_name}.branch_audit LIMIT 2"
    )
    moved = _refs(spark, trips)["audit"]
    at.button(key="ref_h_commit").click().run()
    assert not at.exception
    (error,) = [as_shown(e.value) for e in at.error]
    assert "audit" in error
    assert _refs(spark, trips)["audit"] == moved


def test_cherry_pick_a_staged_snapshot_onto_main(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A WAP-staged append picked onto a main that moved on: a new snapshot, rows as Spark's."""
    name = trips.spark_name
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('write.wap.enabled'='true')")
    spark.conf.set("spark.wap.id", "pick-7")
    try:
        spark.sql(f"INSERT INTO {name} SELECT * FROM {name} LIMIT 3")
    finally:
        spark.conf.unset("spark.wap.id")
    (staged,) = spark.sql(
        f"SELECT snapshot_id FROM {name}.snapshots WHERE summary['wap.id'] = 'pick-7'"
    ).collect()[0]
    spark.sql(f"INSERT INTO {name} SELECT * FROM {name} LIMIT 2")  # main moves on
    head = _refs(spark, trips)["main"][1]
    rows = spark_count(spark, f"SELECT count(*) FROM {name}")
    at = drive(
        _open(trips, monkeypatch, TIME_TRAVEL, to=str(staged)),
        ("radio", "ref_t_action", "Cherry-pick onto a branch"),
    )
    no_problems(at)
    assert at.selectbox(key="ref_t_f_cp").value == "main"
    text = _dry_run(at)
    assert f"At commit: cherry-pick of snapshot {staged} onto main (head {head})" in text
    assert _refs(spark, trips)["main"] == ("BRANCH", head)
    at = _confirm_and_commit(at, "ref_t_")
    no_problems(at)
    picked = _refs(spark, trips)["main"][1]
    assert picked not in (head, staged)
    (parent,) = spark.sql(
        f"SELECT parent_id FROM {name}.snapshots WHERE snapshot_id = {picked}"
    ).collect()[0]
    assert parent == head
    assert spark_count(spark, f"SELECT count(*) FROM {name}") == rows + 3


def test_time_travel_creates_a_branch_at_the_compared_snapshot(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    month_end = _refs(spark, trips)["month_end"][1]
    at = drive(
        _open(trips, monkeypatch, TIME_TRAVEL),
        ("selectbox", "tt_to", str(month_end)),
        ("radio", "ref_t_action", "Create a branch here"),
        ("text_input", "ref_t_f_name", "replay"),
        ("number_input", "ref_t_f_keep", 3),
    )
    no_problems(at)
    assert f"create branch replay at snapshot {month_end}" in _dry_run(at)
    at = _confirm_and_commit(at, "ref_t_")
    no_problems(at)
    assert _refs(spark, trips)["replay"] == ("BRANCH", month_end)
    (keep,) = spark.sql(
        f"SELECT min_snapshots_to_keep FROM {trips.spark_name}.refs WHERE name = 'replay'"
    ).collect()[0]
    assert keep == 3


def test_an_append_between_confirmation_and_commit_is_not_discarded(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark appends after the user confirmed a rollback: the commit is refused, main keeps it."""
    month_end = _refs(spark, trips)["month_end"][1]
    at = drive(
        _open(trips, monkeypatch, HISTORY),
        ("selectbox", "history_pick", month_end),
        ("radio", "ref_h_action", "Roll back main to here"),
        ("checkbox", "ref_h_confirm", True),
    )
    no_problems(at)
    spark.sql(f"INSERT INTO {trips.spark_name} SELECT * FROM {trips.spark_name} LIMIT 2")
    appended = _refs(spark, trips)["main"][1]
    at.button(key="ref_h_commit").click().run()
    assert not at.exception
    (error,) = [as_shown(e.value) for e in at.error]
    assert "main" in error
    assert _refs(spark, trips)["main"] == ("BRANCH", appended)


def test_publish_a_wap_snapshot(spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write staged with spark.wap.id is listed, and publishing it moves main (Spark agrees)."""
    spark.sql(f"ALTER TABLE {trips.spark_name} SET TBLPROPERTIES ('write.wap.enabled'='true')")
    spark.conf.set("spark.wap.id", "nightly-42")
    try:
        spark.sql(f"INSERT INTO {trips.spark_name} SELECT * FROM {trips.spark_name} LIMIT 2")
    finally:
        spark.conf.unset("spark.wap.id")
    (staged,) = spark.sql(
        f"SELECT snapshot_id FROM {trips.spark_name}.snapshots "
        "WHERE summary['wap.id'] = 'nightly-42'"
    ).collect()[0]
    at = drive(
        _open(trips, monkeypatch, HISTORY), ("radio", "ref_h_action", "Publish a WAP snapshot")
    )
    no_problems(at)
    assert at.selectbox(key="ref_h_f_wap").options == [f"nightly-42 · snapshot {staged}"]
    assert str(staged) in _dry_run(at)
    at = _confirm_and_commit(at, "ref_h_")
    no_problems(at)
    assert _refs(spark, trips)["main"] == ("BRANCH", staged)


@pytest.mark.parametrize(("page", "prefix"), [(HISTORY, "ref_h_"), (TIME_TRAVEL, "ref_t_")])
def test_read_only_hides_the_actions(
    demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch, page: str, prefix: str
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(demo_warehouse))
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    at = open_app(page, catalog=str(demo_warehouse), table="demo.trips")
    no_problems(at)
    assert not [r for r in at.radio if r.key == f"{prefix}action"]
    assert not [b for b in at.button if b.key == f"{prefix}commit"]
    monkeypatch.delenv("ICECORE_READ_ONLY")
    at = open_app(page, catalog=str(demo_warehouse), table="demo.trips")
    no_problems(at)
    assert [r for r in at.radio if r.key == f"{prefix}action"]


def test_ref_names_in_the_new_forms_are_text(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A branch named with Markdown: the forms' labels and captions show it verbatim."""
    name = "[x](https://example.org) **b**"
    spark.sql(f"ALTER TABLE {trips.spark_name} CREATE BRANCH `{name}`")
    at = drive(
        _open(trips, monkeypatch, TIME_TRAVEL, to=name),
        ("radio", "ref_t_action", "Drop a branch or tag"),
    )
    no_problems(at)
    assert at.selectbox(key="ref_t_f_ref").value == name  # the ref picked as "To"
    assert f"drop branch {name} (at snapshot" in _dry_run(at)
    at = drive(
        at,
        ("radio", "ref_t_action", "Fast-forward a branch"),
        ("selectbox", "ref_t_f_ff_branch", name),
        ("selectbox", "ref_t_f_ff", "month_end"),
    )
    assert not at.exception
    label = at.selectbox(key="ref_t_f_ff").label
    assert "](https" not in label and as_shown(label) == f"Move {name} forward to the head of"
    said = [c.value for c in at.caption if "moves from snapshot" in as_shown(c.value)]
    assert said and all("](https" not in c for c in said)
    assert as_shown(said[0]).startswith(f"{name} moves from snapshot")
