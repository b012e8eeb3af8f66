"""UpdateSchema against the hand-written table: every rule, ids derived by hand from conftest."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import ValidationError
from icecore.table import Table
from icecore.types import ListType, MapType, StructType

from .hand_table import LAST_COLUMN_ID, tree_state, write_table


def folder_of(table: Table) -> Path:
    return Path(table.metadata_location).parent.parent


def assert_refused(table: Table, change: Callable[[Table], Any], match: str) -> None:
    """The change fails with one clear sentence and nothing at all is written."""
    root = folder_of(table)
    before = tree_state(root)
    with pytest.raises(ValidationError, match=match) as caught:
        change(table)
    message = str(caught.value)
    assert "\n" not in message and message.endswith("."), message
    assert tree_state(root) == before, "a refused change must not write anything"
    assert table.refresh().metadata_location == table.metadata_location


def written_json(table: Table) -> dict[str, Any]:
    """The committed metadata file, decoded without icecore."""
    result: dict[str, Any] = json.loads(Path(table.metadata_location).read_text())
    return result


def test_add_columns_everywhere_with_fresh_ids(hand_table: Table) -> None:
    new = hand_table.update_schema()
    new.add_column("note", "string", doc="free text")
    new.add_column("loc.alt", "double")
    new.add_column("tags.w", "int")
    new.add_column("attrs.u", "string")
    new.add_column("extra", "struct<a: int, b: list<string>>")
    committed = new.commit()
    assert committed is not None
    assert committed.metadata_location.endswith("v2.metadata.json")
    raw = written_json(committed)
    assert raw["last-column-id"] == LAST_COLUMN_ID + 8
    assert raw["current-schema-id"] == 1
    schema = committed.metadata.current_schema()
    # Ids in the order the columns were added; a new struct's fields, then their types.
    assert schema.find_id_by_name("note") == 17
    assert schema.find_id_by_name("loc.alt") == 18
    assert schema.find_id_by_name("tags.element.w") == 19
    assert schema.find_id_by_name("attrs.value.u") == 20
    assert schema.find_id_by_name("extra") == 21
    assert schema.find_id_by_name("extra.a") == 22
    assert schema.find_id_by_name("extra.b") == 23
    assert schema.find_id_by_name("extra.b.element") == 24
    note = schema.find_field(17)
    assert note is not None and note.doc == "free text" and not note.required
    assert [f.name for f in schema.fields][-2:] == ["note", "extra"]
    loc = schema.find_field(7)
    assert loc is not None and isinstance(loc.field_type, StructType)
    assert [f.name for f in loc.field_type.fields] == ["lat", "lon", "alt"]
    tags = schema.find_field(8)
    assert tags is not None and isinstance(tags.field_type, ListType)
    attrs = schema.find_field(9)
    assert attrs is not None and isinstance(attrs.field_type, MapType)
    assert raw["a-future-key"] == {"kept": True}, "unknown keys must survive a commit"
    assert (
        raw["schemas"][0]
        == json.loads((folder_of(hand_table) / "metadata" / "v1.metadata.json").read_text())[
            "schemas"
        ][0]
    ), "the old schema is written back as it was"


def test_rename_widen_move_doc_optional_identifier(hand_table: Table) -> None:
    with hand_table.update_schema() as update:
        update.rename_column("name", "full_name")
        update.update_column("qty", "long")
        update.update_column("score", "double")
        update.update_column("amount", "decimal(20,2)")
        update.update_column("loc.lat", doc="degrees north")
        update.make_column_optional("id")
        update.set_identifier_fields()
        update.move_first("ts")
        update.move_after("name", "amount")  # columns are named as before the change
        update.move_before("loc.lon", "loc.lat")
    committed = update.result
    assert committed is not None
    schema = committed.metadata.current_schema()
    assert [f.name for f in schema.fields] == [
        "ts", "id", "qty", "score", "amount", "full_name", "loc", "tags", "attrs"
    ]  # fmt: skip
    assert [(f.field_id, str(f.field_type)) for f in schema.fields[2:5]] == [
        (3, "long"),
        (4, "double"),
        (5, "decimal(20,2)"),
    ]
    loc = schema.find_field(7)
    assert loc is not None and isinstance(loc.field_type, StructType)
    assert [(f.name, f.doc) for f in loc.field_type.fields] == [
        ("lon", None),
        ("lat", "degrees north"),
    ]
    assert schema.identifier_field_ids == ()
    first = schema.find_field(1)
    assert first is not None and not first.required
    assert committed.metadata.last_column_id == LAST_COLUMN_ID
    raw = written_json(committed)
    # The per-column metrics property follows the rename (as Iceberg Java does).
    assert "write.metadata.metrics.column.full_name" in raw["properties"]
    assert "write.metadata.metrics.column.name" not in raw["properties"]


def test_drop_then_readd_gets_a_new_id_and_identical_schema_is_reused(v2_table: Table) -> None:
    added = v2_table.update_schema().add_column("note", "string").commit()
    assert added is not None and added.metadata.current_schema_id == 1
    dropped = added.update_schema().delete_column("note").commit()
    assert dropped is not None
    # The schema without "note" is schema 0 again: its id is reused, last-column-id is not.
    assert dropped.metadata.current_schema_id == 0
    assert [s.schema_id for s in dropped.metadata.schemas] == [0, 1]
    assert dropped.metadata.last_column_id == 17
    again = dropped.update_schema().add_column("note", "string").commit()
    assert again is not None
    assert again.metadata.current_schema().find_id_by_name("note") == 18
    assert again.metadata.current_schema_id == 2


def test_v3_required_column_with_default_and_write_default(v3_table: Table) -> None:
    committed = (
        v3_table.update_schema()
        .add_column("tier", "string", required=True, default="basic")
        .add_column("n", "int", default=7)
        .add_column("day", "date", default="2024-01-31")
        .add_column("price", "decimal(6,2)", default="1.50")
        .commit()
    )
    assert committed is not None
    fields = {f["name"]: f for f in written_json(committed)["schemas"][-1]["fields"]}
    assert fields["tier"]["required"] is True
    assert fields["tier"]["initial-default"] == "basic" == fields["tier"]["write-default"]
    assert fields["n"]["initial-default"] == 7
    assert fields["day"]["initial-default"] == "2024-01-31"
    assert fields["price"]["initial-default"] == "1.50"
    changed = committed.update_schema().set_default_value("tier", "silver").commit()
    assert changed is not None
    tier = {f["name"]: f for f in written_json(changed)["schemas"][-1]["fields"]}["tier"]
    assert (tier["initial-default"], tier["write-default"]) == ("basic", "silver")


def test_name_mapping_is_kept_current(tmp_path: Path) -> None:
    folder = write_table(tmp_path, 2)
    path = folder / "metadata" / "v1.metadata.json"
    raw = json.loads(path.read_text())
    mapping = [
        {"field-id": 1, "names": ["id"]},
        {"field-id": 2, "names": ["name", "label"]},
        {"field-id": 7, "names": ["loc"], "fields": [{"field-id": 10, "names": ["lat"]}]},
    ]
    raw["properties"]["schema.name-mapping.default"] = json.dumps(mapping)
    path.write_text(json.dumps(raw))
    table = icecore.load_table(str(folder))
    committed = (
        table.update_schema()
        .rename_column("name", "full_name")
        .add_column("label", "string")
        .add_column("loc.alt", "double")
        .commit()
    )
    assert committed is not None
    updated = json.loads(written_json(committed)["properties"]["schema.name-mapping.default"])
    by_id = {m.get("field-id"): m for m in updated}
    # The old name stays for files written before the rename; "label" now names field 17.
    assert by_id[2]["names"] == ["name", "full_name"]
    assert by_id[17] == {"names": ["label"], "field-id": 17}
    assert by_id[7]["fields"][-1] == {"names": ["alt"], "field-id": 18}


def test_preview_writes_nothing_and_matches_the_commit(v2_table: Table) -> None:
    root = folder_of(v2_table)
    before = tree_state(root)
    preview = v2_table.update_schema().add_column("note", "string").preview()
    assert tree_state(root) == before
    assert preview.changes == (
        "add schema 1",
        "  added note (id 17): string",
        "make schema 1 current",
    )
    assert '+          "name": "note",' in preview.diff()
    assert preview.metadata.metadata_log[-1].metadata_file == v2_table.metadata_location
    committed = v2_table.update_schema().add_column("note", "string").commit()
    assert committed is not None
    assert committed.metadata.schemas == preview.metadata.schemas


def test_an_exception_in_the_with_block_commits_nothing(v2_table: Table) -> None:
    before = tree_state(folder_of(v2_table))
    with pytest.raises(RuntimeError), v2_table.update_schema() as update:
        update.add_column("note", "string")
        raise RuntimeError("changed my mind")
    assert tree_state(folder_of(v2_table)) == before


REFUSED: list[tuple[str, Callable[[Table], Any], str]] = [
    ("existing", lambda t: t.update_schema().add_column("name", "int").commit(), "already exists"),
    (
        "existing, ignoring case",
        lambda t: t.update_schema().add_column("Name", "int").commit(),
        "differ only in case",
    ),
    (
        "parent not a struct",
        lambda t: t.update_schema().add_column("name.x", "int").commit(),
        "not a struct",
    ),
    (
        "missing parent",
        lambda t: t.update_schema().add_column("nope.x", "int").commit(),
        "no column 'nope'",
    ),
    ("bad type", lambda t: t.update_schema().add_column("x", "integer64"), "Unknown type"),
    ("bad nested type", lambda t: t.update_schema().add_column("x", "list<int"), "expected '>'"),
    ("unknown column", lambda t: t.update_schema().rename_column("nope", "x"), "no such column"),
    ("empty name", lambda t: t.update_schema().rename_column("name", ""), "empty name"),
    (
        "rename list element",
        lambda t: t.update_schema().rename_column("tags.element", "x"),
        "fixed names",
    ),
    ("drop unknown", lambda t: t.update_schema().delete_column("nope"), "no such column"),
    (
        "drop identifier field",
        lambda t: t.update_schema().delete_column("id").commit(),
        "identifier field 'id'",
    ),
    (
        "drop partition source",
        lambda t: t.update_schema().delete_column("ts").commit(),
        "partitioned by it",
    ),
    (
        "drop sort source",
        lambda t: t.update_schema().delete_column("name").commit(),
        "sort order uses it",
    ),
    (
        "drop map value",
        lambda t: t.update_schema().delete_column("attrs.value"),
        "cannot be dropped",
    ),
    ("long to int", lambda t: t.update_schema().update_column("id", "int"), "from long to int"),
    (
        "string to int",
        lambda t: t.update_schema().update_column("name", "int"),
        "from string to int",
    ),
    (
        "double to float",
        lambda t: t.update_schema().update_column("loc.lat", "float"),
        "from double to float",
    ),
    (
        "decimal scale",
        lambda t: t.update_schema().update_column("amount", "decimal(12,3)"),
        r"scale is fixed; files store unscaled values, so 1\.25 \(stored as 125\) would read "
        r"as 0\.125",
    ),
    (
        "decimal narrowing",
        lambda t: t.update_schema().update_column("amount", "decimal(10,2)"),
        "can only widen",
    ),
    ("int to string", lambda t: t.update_schema().update_column("qty", "string"), "only int"),
    ("nested type", lambda t: t.update_schema().update_column("loc", "string"), "primitive"),
    (
        "make existing required",
        lambda t: t.update_schema().update_column("name", required=True),
        "rows already written may hold nulls",
    ),
    (
        "float identifier",
        lambda t: t.update_schema().set_identifier_fields("id", "score").commit(),
        "cannot be float",
    ),
    (
        "optional identifier",
        lambda t: t.update_schema().set_identifier_fields("name").commit(),
        "must be required",
    ),
    (
        "identifier in a list",
        lambda t: t.update_schema().set_identifier_fields("tags.element.k").commit(),
        "must be required",
    ),
    (
        "unknown identifier",
        lambda t: t.update_schema().set_identifier_fields("nope").commit(),
        "no such column",
    ),
    (
        "move to another struct",
        lambda t: t.update_schema().move_before("loc.lat", "name"),
        "another struct",
    ),
    ("move before itself", lambda t: t.update_schema().move_before("name", "name"), "itself"),
    ("move unknown", lambda t: t.update_schema().move_first("nope"), "no such column"),
]


@pytest.mark.parametrize(("change", "match"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_changes_write_nothing(
    hand_table: Table, change: Callable[[Table], Any], match: str
) -> None:
    assert_refused(hand_table, change, match)


@pytest.mark.parametrize("fmt", [1, 2])
def test_defaults_and_required_columns_need_v3(tmp_path: Path, fmt: int) -> None:
    table = icecore.load_table(str(write_table(tmp_path, fmt)))
    assert_refused(
        table,
        lambda t: t.update_schema().add_column("x", "int", required=True, default=1),
        "need format version 3",
    )
    assert_refused(
        table, lambda t: t.update_schema().add_column("x", "int", default=1), "format version 3"
    )
    assert_refused(
        table, lambda t: t.update_schema().set_default_value("qty", 1), "format version 3"
    )
    assert_refused(
        table, lambda t: t.update_schema().add_column("x", "timestamp_ns").commit(), "version 3"
    )


def test_v3_default_rules(v3_table: Table) -> None:
    assert_refused(
        v3_table,
        lambda t: t.update_schema().add_column("x", "int", required=True),
        "without a non-null default",
    )
    assert_refused(
        v3_table, lambda t: t.update_schema().add_column("x", "int", default="abc"), "not a valid"
    )
    assert_refused(
        v3_table,
        lambda t: t.update_schema().add_column("x", "list<int>", default=[1]).commit(),
        "only primitive and struct",
    )
    assert_refused(
        v3_table,
        lambda t: t.update_schema().add_column("x", "struct<a: int>", default={"1": 2}),
        "only default to",
    )


def test_field_ids_run_out_at_the_reserved_range(tmp_path: Path) -> None:
    folder = write_table(tmp_path, 2)
    path = folder / "metadata" / "v1.metadata.json"
    raw = json.loads(path.read_text())
    raw["last-column-id"] = 2147483447
    path.write_text(json.dumps(raw))
    table = icecore.load_table(str(folder))
    assert_refused(table, lambda t: t.update_schema().add_column("x", "int"), "No field ids")


def test_identifier_fields_outside_lists_maps_and_optional_structs(tmp_path: Path) -> None:
    folder = write_table(tmp_path, 2)
    path = folder / "metadata" / "v1.metadata.json"
    raw = json.loads(path.read_text())
    required_int = {"required": True, "type": "int"}
    raw["schemas"][0]["fields"] += [
        {
            "id": 17,
            "name": "pt",
            "required": False,
            "type": {"type": "struct", "fields": [{"id": 18, "name": "x", **required_int}]},
        },
        {
            "id": 19,
            "name": "arr",
            "required": True,
            "type": {
                "type": "list",
                "element-id": 20,
                "element-required": True,
                "element": {"type": "struct", "fields": [{"id": 21, "name": "y", **required_int}]},
            },
        },
        {
            "id": 22,
            "name": "box",
            "required": True,
            "type": {"type": "struct", "fields": [{"id": 23, "name": "z", **required_int}]},
        },
    ]
    raw["last-column-id"] = 23
    path.write_text(json.dumps(raw))
    table = icecore.load_table(str(folder))
    assert_refused(
        table,
        lambda t: t.update_schema().set_identifier_fields("pt.x").commit(),
        "inside the optional struct 'pt'",
    )
    assert_refused(
        table,
        lambda t: t.update_schema().set_identifier_fields("arr.element.y").commit(),
        "inside the list or map",
    )
    committed = table.update_schema().set_identifier_fields("id", "box.z").commit()
    assert committed is not None
    assert written_json(committed)["schemas"][-1]["identifier-field-ids"] == [1, 23]
