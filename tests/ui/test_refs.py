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
from tests.ui.helpers import Step, as_shown, code_blocks, drive, no_problems, open_app, spark_count

HISTORY = "pages/2_History.py"
TIME_TRAVEL = "pages/5_Time_travel.py"

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
    rows = next(df.value for df in at.dataframe if "min-snapshots-to-keep" in df.value.columns)
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


def test_time_travel_fast_forwards_main_to_audit(
    spark: Any, trips: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = _refs(spark, trips)["audit"][1]
    at = drive(
        _open(trips, monkeypatch, TIME_TRAVEL),
        ("radio", "ref_t_action", "Fast-forward a branch into main"),
        ("selectbox", "ref_t_f_ff", "audit"),
    )
    no_problems(at)
    assert "moves forward" in _dry_run(at)
    at = _confirm_and_commit(at, "ref_t_")
    no_problems(at)
    assert _refs(spark, trips)["main"] == ("BRANCH", audit)


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
