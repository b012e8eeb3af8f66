"""The Evolution page's forms on the hand-written table (no Spark needed).

Every change kind's form must give the dry-run line that the hand-written table's ids make
(its last column id is 16, so a new column is 17; its spec fields are 1000 and 1001; its
sort order is 1), every mistake one sentence in place of the dry run, and nothing may be
written until a confirmed commit. Commits here land on the test's own copy; the Spark
oracle checks commits in test_evolution.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.icecore.evolution.hand_table import LAST_COLUMN_ID, tree_state, write_table
from tests.ui.helpers import (
    Step,
    as_shown,
    code_blocks,
    drive,
    keys,
    metrics,
    no_problems,
    open_app,
)
from ui import app

PAGE = app.EVOLUTION.file
NEW_ID = LAST_COLUMN_ID + 1

Open = Callable[..., AppTest]


@pytest.fixture
def hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Open:
    """Open the page on a fresh hand-written table ``db.t`` of a format version."""
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    monkeypatch.setenv("ICECORE_CONFIG", str(tmp_path / "no-config.toml"))

    def opener(version: int = 3) -> AppTest:
        write_table(tmp_path, version)
        monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path))
        return open_app(PAGE, catalog=str(tmp_path), table="db.t")

    return opener


def _schema_action(label: str) -> Step:
    return ("selectbox", "evo_schema_action", label)


def _kind(label: str) -> Step:
    return ("radio", "evo_kind", label)


SPEC = _kind("Partition spec")

CHANGES: list[tuple[str, list[Step], str]] = [
    (
        "add-nested",
        [
            ("selectbox", "evo_f_add_parent", "loc"),
            ("text_input", "evo_f_add_name", "alt"),
            ("text_input", "evo_f_add_type", "double"),
        ],
        f"added loc.alt (id {NEW_ID}): double",
    ),
    (
        "add-in-list",
        [
            ("selectbox", "evo_f_add_parent", "tags.element"),
            ("text_input", "evo_f_add_name", "w"),
            ("text_input", "evo_f_add_type", "int"),
        ],
        f"added tags.element.w (id {NEW_ID}): int",
    ),
    (
        "add-required-v3",
        [
            ("text_input", "evo_f_add_name", "tier"),
            ("checkbox", "evo_f_add_required", True),
            ("text_input", "evo_f_add_default", "basic"),
        ],
        f"added tier (id {NEW_ID}): string",
    ),
    (
        "rename",
        [
            _schema_action("Rename a column"),
            ("selectbox", "evo_f_rename_column", "qty"),
            ("text_input", "evo_f_rename_to", "quantity"),
        ],
        "renamed quantity (id 3): qty -> quantity",
    ),
    (
        "drop",
        [_schema_action("Drop a column"), ("selectbox", "evo_f_drop_column", "score")],
        "removed score (id 4): float",
    ),
    (
        "widen",
        [
            _schema_action("Widen a column's type"),
            ("selectbox", "evo_f_widen_column", "amount"),
            ("selectbox", "evo_f_widen_to_5", "decimal(14,2)"),
        ],
        "type amount (id 5): decimal(12,2) -> decimal(14,2)",
    ),
    (
        "move-first",
        [
            _schema_action("Move a column"),
            ("selectbox", "evo_f_move_column", "ts"),
            ("radio", "evo_f_move_where", "first"),
        ],
        "column order is now: ts, id, name, qty, score, amount, loc, tags, attrs",
    ),
    (
        "doc",
        [
            _schema_action("Change a column's doc"),
            ("selectbox", "evo_f_doc_column", "qty"),
            ("text_input", "evo_f_doc_3", "Units"),
        ],
        "doc qty (id 3): Units",
    ),
    (
        "write-default-v3",
        [
            _schema_action("Change a column's write default (v3)"),
            ("selectbox", "evo_f_default_column", "qty"),
            ("text_input", "evo_f_default_3", "7"),
        ],
        "write default of qty: None -> 7",
    ),
    (
        "identifier-fields",
        [_schema_action("Set the identifier fields"), ("multiselect", "evo_f_identifier", [])],
        "identifier fields: none",
    ),
    (
        "partition-add",
        [
            SPEC,
            ("selectbox", "evo_f_part_source", "name"),
            ("selectbox", "evo_f_part_transform", "truncate[W]"),
            ("number_input", "evo_f_part_w", 3),
        ],
        "name_trunc_3=truncate[3](name) [id 1002]",
    ),
    (
        "partition-add-bucket-named",
        [
            SPEC,
            ("selectbox", "evo_f_part_source", "qty"),
            ("selectbox", "evo_f_part_transform", "bucket[N]"),
            ("number_input", "evo_f_part_n", 8),
            ("text_input", "evo_f_part_name", "qty_b"),
        ],
        "qty_b=bucket[8](qty) [id 1002]",
    ),
    (
        "partition-remove",
        [
            SPEC,
            ("selectbox", "evo_spec_action", "Remove a partition field"),
            ("selectbox", "evo_f_part_remove", "ts_day"),
        ],
        "add partition spec 1: id_bucket=bucket[4](id) [id 1000]",
    ),
    (
        "partition-rename",
        [
            SPEC,
            ("selectbox", "evo_spec_action", "Rename a partition field"),
            ("selectbox", "evo_f_part_rename", "id_bucket"),
            ("text_input", "evo_f_part_rename_to", "id_b"),
        ],
        "add partition spec 1: id_b=bucket[4](id) [id 1000], ts_day=day(ts) [id 1001]",
    ),
    (
        "sort",
        [
            _kind("Sort order"),
            ("multiselect", "evo_f_sort_columns", ["qty", "name"]),
            ("radio", "evo_f_sort_dir_qty", "desc"),
        ],
        "add sort order 2: qty desc nulls-last, name asc nulls-first",
    ),
    (
        "unsorted",
        [_kind("Sort order"), ("multiselect", "evo_f_sort_columns", [])],
        "make sort order 0 the default",
    ),
    (
        "properties",
        [
            _kind("Properties"),
            ("text_input", "evo_f_prop_key", "team"),
            ("text_input", "evo_f_prop_value", "data"),
            ("multiselect", "evo_f_prop_remove", ["owner"]),
        ],
        "set property team = data\nremove property owner",
    ),
]


@pytest.mark.parametrize(("steps", "line"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_each_form_gives_its_dry_run_and_writes_nothing(
    hand: Open, tmp_path: Path, steps: list[Step], line: str
) -> None:
    at = hand(3)
    before = tree_state(tmp_path)
    drive(at, *steps)
    no_problems(at)
    assert line in code_blocks(at)[0]
    assert at.button(key="evo_commit").disabled, "no commit before the confirmation"
    assert tree_state(tmp_path) == before


MISTAKES: list[tuple[str, int, list[Step], str]] = [
    ("existing-column", 2, [("text_input", "evo_f_add_name", "qty")], "already exists"),
    (
        "unknown-type",
        2,
        [("text_input", "evo_f_add_name", "x"), ("text_input", "evo_f_add_type", "varchar")],
        "Unknown type 'varchar'",
    ),
    (
        "required-without-default",
        3,
        [("text_input", "evo_f_add_name", "tier"), ("checkbox", "evo_f_add_required", True)],
        "without a non-null default",
    ),
    (
        "make-existing-required",
        2,
        [
            _schema_action("Make a column optional or required"),
            ("selectbox", "evo_f_null_column", "name"),
        ],
        "Cannot make existing column 'name' required",
    ),
    (
        "drop-partition-source",
        2,
        [_schema_action("Drop a column"), ("selectbox", "evo_f_drop_column", "ts")],
        "partitioned by it",
    ),
    (
        "optional-identifier",
        2,
        [
            _schema_action("Set the identifier fields"),
            ("multiselect", "evo_f_identifier", ["id", "name"]),
        ],
        "must be required",
    ),
    (
        "transform-type",
        2,
        [
            SPEC,
            ("selectbox", "evo_f_part_source", "name"),
            ("selectbox", "evo_f_part_transform", "year"),
        ],
        "year does not apply to string",
    ),
    (
        "void-field",
        2,
        [
            SPEC,
            ("selectbox", "evo_f_part_source", "name"),
            ("selectbox", "evo_f_part_transform", "void"),
        ],
        "Cannot add a void partition field",
    ),
    (
        "sort-transform",
        2,
        [
            _kind("Sort order"),
            ("multiselect", "evo_f_sort_columns", ["name"]),
            ("text_input", "evo_f_sort_transform_name", "bucket[x]"),
        ],
        "Unknown transform 'bucket[x]'",
    ),
    (
        "reserved-property",
        2,
        [_kind("Properties"), ("text_input", "evo_f_prop_key", "format-version")],
        "is reserved",
    ),
]


@pytest.mark.parametrize(
    ("version", "steps", "says"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_a_mistake_is_one_sentence_in_place_of_the_dry_run(
    hand: Open, tmp_path: Path, version: int, steps: list[Step], says: str
) -> None:
    at = hand(version)
    before = tree_state(tmp_path)
    drive(at, *steps)
    assert not at.exception
    assert len(at.error) == 1 and says in as_shown(at.error[0].value), [e.value for e in at.error]
    assert not at.main.code, "no dry run for a change that breaks a rule"
    assert "evo_commit" not in keys(at.button)
    assert tree_state(tmp_path) == before


def test_defaults_and_required_columns_are_v3_only(hand: Open) -> None:
    at = hand(2)
    assert "evo_f_add_required" not in keys(at.checkbox)
    assert any("need format version 3" in c.value for c in at.caption)
    drive(at, _schema_action("Change a column's write default (v3)"))
    assert [i.value for i in at.info] == ["Default values need format version 3; this table is v2."]


def test_an_unchanged_value_is_nothing_to_commit(hand: Open) -> None:
    at = hand(2)
    drive(at, _schema_action("Change a column's doc"), ("selectbox", "evo_f_doc_column", "qty"))
    no_problems(at)
    assert "nothing to commit" in at.info[0].value
    assert "evo_commit" not in keys(at.button)


def _versions(table: Path) -> list[str]:
    return sorted(p.name for p in (table / "metadata").glob("v*.metadata.json"))


def test_staged_changes_commit_as_one_version(hand: Open, tmp_path: Path) -> None:
    at = hand(2)
    drive(
        at,
        ("text_input", "evo_f_add_name", "region"),
        ("button", "evo_stage", None),
    )
    assert at.text_input(key="evo_f_add_name").value == "", "staging starts a fresh form"
    # The spec may use the column the same commit adds.
    drive(
        at,
        SPEC,
        ("selectbox", "evo_f_part_source", "qty"),
        ("selectbox", "evo_f_part_transform", "bucket[N]"),
        ("number_input", "evo_f_part_n", 4),
    )
    no_problems(at)
    assert "add_column region string" in code_blocks(at)[0]
    lines = code_blocks(at)[1]
    assert f"added region (id {NEW_ID}): string" in lines
    assert "qty_bucket_4=bucket[4](qty) [id 1002]" in lines
    drive(at, ("checkbox", "evo_confirm", True), ("button", "evo_commit", None))
    no_problems(at)
    table = tmp_path / "db" / "t"
    assert _versions(table) == ["v1.metadata.json", "v2.metadata.json"]
    committed = json.loads((table / "metadata" / "v2.metadata.json").read_text())
    schema = next(s for s in committed["schemas"] if s["schema-id"] == 1)
    added = {"id": NEW_ID, "name": "region", "required": False, "type": "string"}
    assert schema["fields"][-1] == added
    assert committed["current-schema-id"] == 1 and committed["default-spec-id"] == 1
    assert metrics(at)["Schema id"] == "1" and metrics(at)["Partition spec id"] == "1"
    assert not at.main.code[0].value.startswith("add_column"), "nothing staged after the commit"


def test_clearing_staged_changes(hand: Open) -> None:
    at = hand(2)
    drive(at, ("text_input", "evo_f_add_name", "a"), ("button", "evo_stage", None))
    drive(at, ("button", "evo_clear", None))
    assert [i.value for i in at.info] == ["Type the new column's name."]
    assert not at.main.code


def test_an_edit_after_confirming_takes_the_confirmation_back(hand: Open, tmp_path: Path) -> None:
    at = hand(2)
    drive(at, ("text_input", "evo_f_add_name", "a"), ("checkbox", "evo_confirm", True))
    assert not at.button(key="evo_commit").disabled
    drive(at, ("text_input", "evo_f_add_name", "b"))
    assert at.checkbox(key="evo_confirm").value is False
    assert at.button(key="evo_commit").disabled
    assert _versions(tmp_path / "db" / "t") == ["v1.metadata.json"]


def test_read_only_mode_shows_the_dry_run_but_no_commit_control(
    hand: Open, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    at = hand(2)
    drive(at, ("text_input", "evo_f_add_name", "a"))
    no_problems(at)
    assert f"added a (id {NEW_ID}): string" in code_blocks(at)[0]
    assert "evo_confirm" not in keys(at.checkbox)
    assert "evo_commit" not in keys(at.button)
    assert any("Read-only mode" in i.value for i in at.info)


def test_read_only_from_the_config_file(
    hand: Open, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "icecore.toml"
    config.write_text("read_only = true\n")
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    at = hand(2)
    drive(at, ("text_input", "evo_f_add_name", "a"))
    assert "evo_commit" not in keys(at.button)


def test_a_bare_metadata_file_gets_a_dry_run_and_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    metadata = write_table(tmp_path, 2) / "metadata" / "v1.metadata.json"
    monkeypatch.setenv("ICECORE_CATALOG", str(metadata))
    at = open_app(PAGE, catalog=str(metadata), table="static.t")
    drive(at, ("text_input", "evo_f_add_name", "a"))
    no_problems(at)
    assert code_blocks(at)
    assert any("bare metadata file" in i.value for i in at.info)
    assert "evo_commit" not in keys(at.button)


def test_html_in_a_new_column_name_stays_text(hand: Open) -> None:
    at = hand(2)
    drive(at, ("text_input", "evo_f_add_name", "<b>x</b><script>alert(1)</script>"))
    no_problems(at)
    for element in (*at.markdown, *at.caption, *at.title, *at.info):
        assert "<script>" not in element.value
    schema = next(df.value for df in at.dataframe if "change" in df.value.columns)
    assert "<b>x</b><script>alert(1)</script>" in set(schema["field"])
