"""The Evolution page on Spark-written tables: dry runs write nothing, commits Spark reads.

Spark is the oracle: after a commit made on the page, Spark (Iceberg 1.10 through its own
catalogs) must describe the new column, partition field, sort order and property, read the
old rows with the new column null, and keep writing. Every test that commits works on a
copy of a fixture table (tests/ui/copies.py); the shared warehouse is only read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

import icecore
from tests.icecore.evolution.conftest import EvoCatalogs
from tests.icecore.evolution.hand_table import tree_state
from tests.icecore.evolution.spark_checks import describe, partitioning, spark_properties
from tests.ui.copies import Copy, copy_hadoop_table, copy_sql_table
from tests.ui.helpers import (
    as_shown,
    code_blocks,
    drive,
    keys,
    metrics,
    no_problems,
    open_app,
    spark_count,
)
from ui import app
from ui.shell import escape_markdown, filesystem_warning

PAGE = app.EVOLUTION.file

pytestmark = pytest.mark.spark


def _open(copy: Copy, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("ICECORE_CATALOG", copy.catalog)
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    return open_app(PAGE, catalog=copy.catalog, table=copy.table)


def _column(spark: Any, name: str, column: str) -> Any:
    rows = [r for r in spark.sql(f"DESCRIBE TABLE {name}").collect() if r.col_name == column]
    return rows[0] if rows else None


def _commit(at: AppTest) -> AppTest:
    return drive(at, ("checkbox", "evo_confirm", True), ("button", "evo_commit", None))


ADD_ALT = [
    ("selectbox", "evo_f_add_parent", "pickup_loc"),
    ("text_input", "evo_f_add_name", "alt"),
    ("text_input", "evo_f_add_type", "double"),
]


def test_a_dry_run_shows_the_change_and_writes_nothing(
    evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    raw = copy.metadata()
    location, files = copy.location(), tree_state(copy.folder)
    at = drive(_open(copy, monkeypatch), *ADD_ALT)
    no_problems(at)
    new_id = raw["last-column-id"] + 1
    assert f"added pickup_loc.alt (id {new_id}): double" in code_blocks(at)[0]
    ids = next(df.value for df in at.dataframe if "now" in df.value.columns)
    schema_ids = dict(zip(ids[""], zip(ids["now"], ids["after"], strict=True), strict=True))
    next_schema = max(s["schema-id"] for s in raw["schemas"]) + 1
    assert schema_ids["schema id"] == (raw["current-schema-id"], next_schema)
    assert schema_ids["partition spec id"] == (raw["default-spec-id"], raw["default-spec-id"])
    schema = next(df.value for df in at.dataframe if "change" in df.value.columns)
    added = schema[schema["change"] == "added"]
    assert list(added["id"]) == [new_id] and list(added["type"]) == ["double"]
    assert any(block.startswith("--- current\n+++ after commit") for block in code_blocks(at))
    assert at.button(key="evo_commit").disabled
    assert copy.location() == location and tree_state(copy.folder) == files
    assert "alt" not in _column(evo.spark, copy.spark_name, "pickup_loc").data_type


def test_a_confirmed_commit_lands_and_spark_reads_the_new_columns(
    spark: Any, evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    before = copy.location()
    at = drive(_open(copy, monkeypatch), *ADD_ALT, ("button", "evo_stage", None))
    drive(
        at,
        ("text_input", "evo_f_add_name", "note"),
        ("text_input", "evo_f_add_doc", "free text"),
    )
    _commit(at)
    no_problems(at)
    after = copy.location()
    assert after != before and Path(after).parent == copy.folder / "metadata"
    raw = copy.metadata()
    assert len(at.success) == 1 and escape_markdown(after) in at.success[0].value
    assert metrics(at)["Schema id"] == str(raw["current-schema-id"])

    # Spark, through its own catalog, reads the new columns: null in every old row.
    note = _column(spark, copy.spark_name, "note")
    assert (note.data_type, note.comment) == ("string", "free text")
    assert _column(spark, copy.spark_name, "pickup_loc").data_type == (
        "struct<lat:double,lon:double,alt:double>"
    )
    rows = spark_count(spark, "SELECT count(*) FROM icecore.demo.trips")
    counted = spark.sql(
        f"SELECT count(*), count(note), count(pickup_loc.alt) FROM {copy.spark_name}"
    ).collect()[0]
    assert tuple(counted) == (rows, 0, 0) and rows > 0

    # Other pages show the new version at once (nothing cached by name).
    at.switch_page(app.OVERVIEW.file).run()
    no_problems(at)
    assert metrics(at)["Schema id"] == str(raw["current-schema-id"])
    at.switch_page(app.MAIN_SCRIPT.name).run()
    listed = at.dataframe[0].value
    assert list(listed[listed["table"] == copy.table]["metadata location"]) == [after]


def test_partition_sort_and_property_changes_commit_as_one_and_spark_writes_with_them(
    spark: Any, evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    versions = len(copy.metadata()["metadata-log"])
    at = _open(copy, monkeypatch)
    drive(
        at,
        ("radio", "evo_kind", "Partition spec"),
        ("selectbox", "evo_f_part_source", "pickup_zone"),
        ("selectbox", "evo_f_part_transform", "truncate[W]"),
        ("number_input", "evo_f_part_w", 4),
        ("button", "evo_stage", None),
        ("radio", "evo_kind", "Sort order"),
        ("multiselect", "evo_f_sort_columns", ["fare"]),
        ("radio", "evo_f_sort_dir_fare", "desc"),
        ("button", "evo_stage", None),
        ("radio", "evo_kind", "Properties"),
        ("text_input", "evo_f_prop_key", "team"),
        ("text_input", "evo_f_prop_value", "analytics"),
    )
    no_problems(at)
    _commit(at)
    no_problems(at)
    raw = copy.metadata()
    assert len(raw["metadata-log"]) == versions + 1, "one new metadata version"
    assert "truncate(4, pickup_zone)" in partitioning(spark, copy.spark_name)
    properties = spark_properties(spark, copy.spark_name)
    assert properties["team"] == "analytics"
    assert properties["sort-order"] == "fare DESC NULLS LAST"
    assert metrics(at)["Partition spec id"] == str(raw["default-spec-id"])
    assert metrics(at)["Sort order id"] == str(raw["default-sort-order-id"])

    # Spark keeps writing: new files carry the new spec.
    spark.sql(f"INSERT INTO {copy.spark_name} SELECT * FROM icecore.demo.trips LIMIT 5")
    written = spark_count(
        spark,
        f"SELECT count(*) FROM {copy.spark_name}.files WHERE spec_id = {raw['default-spec-id']}",
    )
    assert written > 0


def _note_confirmed(copy: Copy, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The page with a new column ``note`` typed and its dry run confirmed."""
    return drive(
        _open(copy, monkeypatch),
        ("text_input", "evo_f_add_name", "note"),
        ("checkbox", "evo_confirm", True),
    )


def test_a_concurrent_commit_is_a_conflict_sentence_with_a_reload(
    spark: Any, evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "zones")
    at = _note_confirmed(copy, monkeypatch)
    # Another writer changes the schema between the dry run and the commit.
    spark.sql(f"ALTER TABLE {copy.spark_name} ADD COLUMN other int")
    theirs = copy.location()
    drive(at, ("button", "evo_commit", None))
    assert not at.exception
    assert len(at.error) == 1
    sentence = as_shown(at.error[0].value)
    assert "another writer committed" in sentence and "added other" in sentence
    assert "\n" not in sentence and "Traceback" not in sentence
    assert copy.location() == theirs, "nothing of the losing change was committed"
    assert _column(spark, copy.spark_name, "note") is None
    assert any("moved on" in w.value for w in at.warning)

    drive(at, ("button", "evo_retry", None))
    assert not at.error and at.checkbox(key="evo_confirm").value is False
    assert "added note" in code_blocks(at)[0]
    _commit(at)
    no_problems(at)
    assert [c[0] for c in describe(spark, copy.spark_name)][-2:] == ["other", "note"]


def test_a_concurrent_append_does_not_stop_a_schema_change(
    spark: Any, evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "zones")
    at = _note_confirmed(copy, monkeypatch)
    rows = spark_count(spark, f"SELECT count(*) FROM {copy.spark_name}")
    spark.sql(f"INSERT INTO {copy.spark_name} VALUES (999, 'Nowhere', 'Test', 'None')")
    _commit(at)
    no_problems(at)
    assert spark_count(spark, f"SELECT count(*) FROM {copy.spark_name}") == rows + 1
    assert _column(spark, copy.spark_name, "note").data_type == "string"


def test_a_filesystem_table_shows_the_warning_and_its_commit_reaches_spark(
    spark: Any, evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_hadoop_table(evo, demo_warehouse, "customers_v1")
    version = int(Path(copy.location()).name.split(".")[0][1:])
    at = _open(copy, monkeypatch)
    no_problems(at)
    warning = filesystem_warning(icecore.load_table(f"{copy.catalog}::{copy.table}"))
    assert warning is not None and [w.value for w in at.warning] == [escape_markdown(warning)]
    drive(at, ("text_input", "evo_f_add_name", "segment"))
    _commit(at)
    no_problems(at)
    assert Path(copy.location()).name == f"v{version + 1}.metadata.json"
    assert _column(spark, copy.spark_name, "segment").data_type == "string"
    rows = spark_count(spark, "SELECT count(*) FROM hadoop.demo.customers_v1")
    assert spark_count(spark, f"SELECT count(*) FROM {copy.spark_name} WHERE segment IS NULL") == (
        rows
    )


def _open_fixture_read_only(
    demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[AppTest, object]:
    """The page on the shared fixture's trips, read-only, and the table folder's state."""
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    monkeypatch.setenv("ICECORE_CATALOG", str(demo_warehouse))
    files = tree_state(demo_warehouse / "demo" / "trips")
    return open_app(PAGE, catalog=str(demo_warehouse), table="demo.trips"), files


def test_read_only_mode_on_the_fixture_shows_a_dry_run_and_no_commit_control(
    demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at, files = _open_fixture_read_only(demo_warehouse, monkeypatch)
    drive(at, ("text_input", "evo_f_add_name", "note"))
    no_problems(at)
    assert "added note" in code_blocks(at)[0]
    assert "evo_confirm" not in keys(at.checkbox) and "evo_commit" not in keys(at.button)
    assert any("Read-only mode" in i.value for i in at.info)
    assert tree_state(demo_warehouse / "demo" / "trips") == files


def test_a_sort_order_dry_run_estimates_what_typed_filters_would_read_after_a_rewrite(
    demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The what-if section: today's files are the planner's; the filter text stays text."""
    at, files = _open_fixture_read_only(demo_warehouse, monkeypatch)
    drive(
        at,
        ("radio", "evo_kind", "Sort order"),
        ("multiselect", "evo_f_sort_columns", ["fare"]),
    )
    no_problems(at)
    hostile = "fare > 30 OR pickup_zone = '**bold** <b>x</b>'"
    drive(
        at,
        ("text_area", "evo_whatif_filters", f"fare > 30\n\n{hostile}\n"),
        ("button", "evo_whatif_run", None),
    )
    no_problems(at)
    shown = next(df.value for df in at.dataframe if "files after" in df.value.columns)
    assert list(shown["filter"]) == ["fare > 30", hostile]
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    planned = len(list(table.scan("fare > 30").plan().tasks))
    assert int(shown["files now"].iloc[0]) == planned
    assert all(int(n) >= 0 for n in shown["files after"])
    assert tree_state(demo_warehouse / "demo" / "trips") == files
