"""UpdateSpec, UpdateSortOrder and properties against the hand-written table (conftest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from icecore.errors import ValidationError
from icecore.table import Table

from .test_schema_rules import assert_refused, written_json


def spec_fields(table: Table) -> list[tuple[int, str, str, int]]:
    """The default spec as (field id, name, transform, source id), from the written JSON."""
    raw = written_json(table)
    spec = next(s for s in raw["partition-specs"] if s["spec-id"] == raw["default-spec-id"])
    return [(f["field-id"], f["name"], f["transform"], f["source-id"]) for f in spec["fields"]]


def test_add_fields_with_java_names_and_ids(hand_table: Table) -> None:
    committed = (
        hand_table.update_spec()
        .add_field("qty", "bucket[16]")
        .add_field("name", "truncate[4]")
        .add_identity("loc.lat")
        .commit()
    )
    assert committed is not None
    assert spec_fields(committed) == [
        (1000, "id_bucket", "bucket[4]", 1),
        (1001, "ts_day", "day", 6),
        (1002, "qty_bucket_16", "bucket[16]", 3),
        (1003, "name_trunc_4", "truncate[4]", 2),
        (1004, "loc.lat", "identity", 10),
    ]
    raw = written_json(committed)
    assert raw["default-spec-id"] == 1 and raw["last-partition-id"] == 1004
    if hand_table.format_version == 1:
        # v1 also writes the deprecated partition-spec: the default spec's fields.
        assert [f["name"] for f in raw["partition-spec"]] == [f[1] for f in spec_fields(committed)]


def test_v2_remove_and_readd_reuses_the_historical_field_and_spec(v2_table: Table) -> None:
    removed = v2_table.update_spec().remove_field("ts_day").commit()
    assert removed is not None
    assert spec_fields(removed) == [(1000, "id_bucket", "bucket[4]", 1)]
    by_hour = removed.update_spec().add_field("ts", "hour").commit()
    assert by_hour is not None
    assert spec_fields(by_hour) == [
        (1000, "id_bucket", "bucket[4]", 1),
        (1002, "ts_hour", "hour", 6),
    ]
    back = by_hour.update_spec().remove_field("ts_hour").add_field("ts", "day", "ts_day").commit()
    assert back is not None
    # day(ts) named ts_day was field 1001 of spec 0; the whole spec is spec 0 again.
    assert written_json(back)["default-spec-id"] == 0
    assert [s["spec-id"] for s in written_json(back)["partition-specs"]] == [0, 1, 2]
    assert written_json(back)["last-partition-id"] == 1002


def test_v1_removed_fields_become_void_and_ids_stay_sequential(v1_table: Table) -> None:
    removed = v1_table.update_spec().remove_field("id_bucket").commit()
    assert removed is not None
    assert spec_fields(removed) == [(1000, "id_bucket", "void", 1), (1001, "ts_day", "day", 6)]
    added = removed.update_spec().add_field("id", "bucket[8]").commit()
    assert added is not None
    assert spec_fields(added)[-1] == (1002, "id_bucket_8", "bucket[8]", 1)
    # Re-adding a removed name renames the void field out of the way, as Iceberg Java does.
    renamed = added.update_spec().add_field("id", "bucket[4]", "id_bucket").commit()
    assert renamed is not None
    assert spec_fields(renamed) == [
        (1000, "id_bucket_1000", "void", 1),
        (1001, "ts_day", "day", 6),
        (1002, "id_bucket_8", "bucket[8]", 1),
        (1003, "id_bucket", "bucket[4]", 1),
    ]


def test_rename_field_and_remove_then_add_in_one_change(hand_table: Table) -> None:
    committed = (
        hand_table.update_spec()
        .rename_field("id_bucket", "by_id")
        .add_field("ts", "month")
        .remove_field("ts_day")
        .commit()
    )
    assert committed is not None
    if hand_table.format_version == 1:
        assert spec_fields(committed) == [
            (1000, "by_id", "bucket[4]", 1),
            (1001, "ts_day", "void", 6),
            (1002, "ts_month", "month", 6),
        ]
    else:
        assert spec_fields(committed) == [
            (1000, "by_id", "bucket[4]", 1),
            (1002, "ts_month", "month", 6),
        ]


REFUSED: list[tuple[str, Callable[[Table], Any], str]] = [
    ("unknown transform", lambda t: t.update_spec().add_field("id", "bucketize"), "Unknown"),
    ("bucket without N", lambda t: t.update_spec().add_field("id", "bucket"), "Unknown"),
    ("bucket[0]", lambda t: t.update_spec().add_field("id", "bucket[0]"), "Unknown"),
    ("day of a string", lambda t: t.update_spec().add_field("name", "day"), "does not apply"),
    ("bucket of a float", lambda t: t.update_spec().add_field("score", "bucket[2]"), "apply"),
    ("unknown column", lambda t: t.update_spec().add_field("nope", "identity"), "no such column"),
    ("struct source", lambda t: t.update_spec().add_field("loc", "identity"), "primitive"),
    (
        "source in a list",
        lambda t: t.update_spec().add_field("tags.element.k", "identity"),
        "inside a list or map",
    ),
    (
        "duplicate",
        lambda t: t.update_spec().add_field("id", "bucket[4]"),
        "already does",
    ),
    (
        "redundant time",
        lambda t: t.update_spec().add_field("ts", "hour").commit(),
        "redundant",
    ),
    (
        "name of another column",
        lambda t: t.update_spec().add_field("id", "bucket[8]", "name").commit(),
        "also a column's name",
    ),
    (
        "identity named after another column",
        lambda t: t.update_spec().add_field("qty", "identity", "name").commit(),
        "also a column's name",
    ),
    (
        "duplicate partition name",
        lambda t: t.update_spec().add_field("qty", "identity", "ts_day"),
        "already has a field of that name",
    ),
    ("remove unknown", lambda t: t.update_spec().remove_field("nope"), "no such field"),
    ("rename unknown", lambda t: t.update_spec().rename_field("nope", "x"), "no such field"),
    (
        "remove what is added",
        lambda t: t.update_spec().add_field("qty", "identity").remove_field("qty"),
        "being added",
    ),
    (
        "sort by unknown column",
        lambda t: t.update_sort_order().asc("nope"),
        "no such column",
    ),
    ("sort by day of a string", lambda t: t.update_sort_order().asc("name", "day"), "apply"),
    ("sort by a list field", lambda t: t.update_sort_order().asc("tags.element.k"), "list or map"),
    ("bad null order", lambda t: t.update_sort_order().asc("qty", null_order="last"), "nulls"),
    ("reserved property", lambda t: t.set_properties({"format-version": "3"}), "reserved"),
    ("reserved uuid", lambda t: t.set_properties(uuid="x"), "reserved"),
    ("remove reserved", lambda t: t.remove_properties("current-snapshot-id"), "reserved"),
    (
        "set and remove",
        lambda t: t.transaction().update_properties().set("a", "1").remove("a"),
        "both set and removed",
    ),
]


@pytest.mark.parametrize(("change", "match"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_changes_write_nothing(
    hand_table: Table, change: Callable[[Table], Any], match: str
) -> None:
    assert_refused(hand_table, change, match)


def test_sort_orders_new_reused_and_unsorted(hand_table: Table) -> None:
    sorted_by_qty = (
        hand_table.update_sort_order()
        .desc("qty", "bucket[4]")
        .asc("ts", "day", "nulls-last")
        .commit()
    )
    assert sorted_by_qty is not None
    raw = written_json(sorted_by_qty)
    assert raw["default-sort-order-id"] == 2
    assert raw["sort-orders"][-1] == {
        "order-id": 2,
        "fields": [
            {
                "transform": "bucket[4]",
                "source-id": 3,
                "direction": "desc",
                "null-order": "nulls-last",
            },
            {"transform": "day", "source-id": 6, "direction": "asc", "null-order": "nulls-last"},
        ],
    }
    back = sorted_by_qty.update_sort_order().asc("name").commit()
    assert back is not None and written_json(back)["default-sort-order-id"] == 1
    unsorted = back.update_sort_order().commit()
    assert unsorted is not None and written_json(unsorted)["default-sort-order-id"] == 0
    assert len(written_json(unsorted)["sort-orders"]) == 3


def test_properties_set_and_remove(hand_table: Table) -> None:
    committed = hand_table.set_properties({"a": "1"}, b="2")
    assert written_json(committed)["properties"] == {
        "owner": "tests",
        "write.metadata.metrics.column.name": "full",
        "a": "1",
        "b": "2",
    }
    removed = committed.remove_properties("a", "not-there")
    assert "a" not in written_json(removed)["properties"]
    same = removed.set_properties(b="2")
    assert same.metadata_location == removed.metadata_location, "no change, no new file"


def test_one_transaction_one_version(v2_table: Table) -> None:
    with v2_table.transaction() as tx:
        tx.update_schema().add_column("region", "string").commit()
        tx.update_spec().add_field("region", "identity").commit()  # uses the column just added
        tx.update_sort_order().asc("region").commit()
        tx.set_properties(owner="data-team")
    committed = tx.result
    assert committed is not None
    assert committed.metadata_location.endswith("v2.metadata.json")
    assert spec_fields(committed)[-1] == (1002, "region", "identity", 17)
    raw = written_json(committed)
    assert raw["sort-orders"][-1]["fields"][0]["source-id"] == 17
    assert raw["properties"]["owner"] == "data-team"
    with pytest.raises(ValidationError, match="was committed"):
        tx.set_properties(owner="again")
