"""Lookups on TableMetadata, checked against the JSON of Spark-written and hand-written files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecore.metadata import (
    MAIN_BRANCH,
    Operation,
    SnapshotRef,
    SnapshotRefType,
    TableMetadata,
    parse_metadata,
)
from tests.icecore.metadata.conftest import DATA, SPARK_GOLDEN, golden_json


def _load(name: str) -> tuple[TableMetadata, dict[str, Any]]:
    path = DATA / name
    return parse_metadata(path.read_bytes(), str(path)), golden_json(name)


def _raw_ancestry(raw: dict[str, Any], snapshot_id: int) -> list[int]:
    """Parent walk over the raw JSON, stopping at a parent that is not listed (expired)."""
    by_id = {s["snapshot-id"]: s for s in raw["snapshots"]}
    chain: list[int] = []
    current = by_id.get(snapshot_id)
    while current is not None:
        chain.append(current["snapshot-id"])
        current = by_id.get(current.get("parent-snapshot-id"))
    return chain


@pytest.mark.parametrize("path", SPARK_GOLDEN, ids=lambda p: p.name)
def test_spark_golden_model_matches_its_json(path: Path) -> None:
    md, raw = _load(f"spark/{path.name}")
    assert md.format_version == raw["format-version"]
    assert md.table_uuid == raw["table-uuid"]
    assert md.location == raw["location"]
    assert md.last_updated_ms == raw["last-updated-ms"]
    assert md.last_column_id == raw["last-column-id"]
    assert md.current_schema_id == raw["current-schema-id"]
    assert [s.schema_id for s in md.schemas] == [s["schema-id"] for s in raw["schemas"]]
    assert md.current_schema().schema_id == raw["current-schema-id"]
    assert [s.spec_id for s in md.partition_specs] == [s["spec-id"] for s in raw["partition-specs"]]
    assert md.default_spec().spec_id == raw["default-spec-id"]
    assert md.last_partition_id == raw["last-partition-id"]
    assert md.default_sort_order().order_id == raw["default-sort-order-id"]
    assert dict(md.properties) == raw["properties"]
    assert [s.snapshot_id for s in md.snapshots] == [s["snapshot-id"] for s in raw["snapshots"]]
    # Spark writes -1 (v1, v2) or null (v3) for "no current snapshot"; both mean None.
    raw_current = raw["current-snapshot-id"]
    expected_current = None if raw_current in (None, -1) else raw_current
    assert md.current_snapshot_id == expected_current
    if expected_current is None:
        assert md.current_snapshot() is None
    else:
        current = md.current_snapshot()
        assert current is not None and current.snapshot_id == expected_current
    assert {n: (r.snapshot_id, r.type.value) for n, r in md.refs.items()} == {
        n: (r["snapshot-id"], r["type"]) for n, r in raw["refs"].items()
    }
    assert [(e.timestamp_ms, e.snapshot_id) for e in md.snapshot_log] == [
        (e["timestamp-ms"], e["snapshot-id"]) for e in raw["snapshot-log"]
    ]
    assert [e.metadata_file for e in md.metadata_log] == [
        e["metadata-file"] for e in raw["metadata-log"]
    ]
    for snap, raw_snap in zip(md.snapshots, raw["snapshots"], strict=True):
        assert snap.parent_snapshot_id == raw_snap.get("parent-snapshot-id")
        assert snap.timestamp_ms == raw_snap["timestamp-ms"]
        assert snap.manifest_list == raw_snap["manifest-list"]
        assert snap.schema_id == raw_snap["schema-id"]
        assert snap.summary is not None
        assert snap.summary.operation == raw_snap["summary"]["operation"]
        assert snap.summary.get("total-records") == raw_snap["summary"]["total-records"]
        assert snap.first_row_id == raw_snap.get("first-row-id")
        assert snap.added_rows == raw_snap.get("added-rows")
        assert md.snapshot_by_id(snap.snapshot_id) is snap


def test_v1_spark_table_gets_appendix_e_sequence_numbers() -> None:
    md, raw = _load("spark/customers_v1-v6.metadata.json")
    assert "last-sequence-number" not in raw
    assert all("sequence-number" not in s for s in raw["snapshots"])
    assert md.last_sequence_number == 0
    assert [s.sequence_number for s in md.snapshots] == [0] * len(raw["snapshots"])
    # Spark still writes the deprecated v1 fields next to the lists that replace them.
    assert raw["schema"]["schema-id"] == md.current_schema_id
    assert [f["field-id"] for f in raw["partition-spec"]] == [
        f.field_id for f in md.default_spec().fields
    ]


def test_v3_spark_table_row_lineage() -> None:
    md, raw = _load("spark/events_v3-00006.metadata.json")
    assert md.next_row_id == raw["next-row-id"]
    last = md.snapshots[-1]
    assert last.first_row_id is not None and last.added_rows is not None
    # "next-row-id": a long higher than all assigned row ids (spec "Row Lineage").
    assert md.next_row_id is not None
    for snap, raw_snap in zip(md.snapshots, raw["snapshots"], strict=True):
        assert raw_snap["first-row-id"] + raw_snap["added-rows"] <= md.next_row_id
        assert snap.first_row_id == raw_snap["first-row-id"]


def test_branches_tags_and_expired_ancestors_in_spark_table() -> None:
    md, raw = _load("spark/trips-00024.metadata.json")
    assert md.refs["month_end"].type is SnapshotRefType.TAG
    assert md.refs["audit"].type is SnapshotRefType.BRANCH
    assert set(md.tags()) == {n for n, r in raw["refs"].items() if r["type"] == "tag"}
    assert set(md.branches()) == {n for n, r in raw["refs"].items() if r["type"] == "branch"}
    for name, ref in raw["refs"].items():
        snap = md.snapshot_for_ref(name)
        assert snap is not None and snap.snapshot_id == ref["snapshot-id"]
    for name in ("main", "audit"):
        start = raw["refs"][name]["snapshot-id"]
        chain = [s.snapshot_id for s in md.ancestors_of(start)]
        assert chain == _raw_ancestry(raw, start)
    # The oldest listed snapshot's parent was expired: the walk stops there.
    oldest = md.ancestors_of(raw["refs"]["main"]["snapshot-id"])[-1]
    listed = {s["snapshot-id"] for s in raw["snapshots"]}
    assert oldest.parent_snapshot_id is not None
    assert oldest.parent_snapshot_id not in listed
    assert md.snapshot_by_id(oldest.parent_snapshot_id) is None


def test_implied_main_branch_when_refs_are_absent(v1_legacy_text: str) -> None:
    md = parse_metadata(v1_legacy_text, "v1-legacy.metadata.json")
    # Spec "Table Metadata Fields": there is always a main branch pointing to the
    # current-snapshot-id even if the refs map is null.
    assert dict(md.refs) == {MAIN_BRANCH: SnapshotRef(22, SnapshotRefType.BRANCH)}
    snap = md.snapshot_for_ref("main")
    assert snap is not None and snap.snapshot_id == 22
    assert md.snapshot_for_ref("nope") is None


def test_no_implied_main_without_a_current_snapshot() -> None:
    md, raw = _load("spark/zones-00000.metadata.json")
    assert raw["current-snapshot-id"] == -1
    assert dict(md.refs) == {}
    assert md.snapshot_for_ref("main") is None


def test_ancestors_stop_at_an_expired_parent(v3_full_text: str) -> None:
    md = parse_metadata(v3_full_text)
    # 3055... -> 3051... -> 3040... (not listed: expired).
    chain = md.ancestors_of(3055729675574597004)
    assert [s.snapshot_id for s in chain] == [3055729675574597004, 3051729675574597004]
    assert md.ancestors_of(3040000000000000000) == ()
    assert md.ancestors_of(3051729675574597004)[0].operation == Operation.APPEND


def test_v1_ancestors_and_lookups(v1_legacy_text: str) -> None:
    md = parse_metadata(v1_legacy_text)
    assert [s.snapshot_id for s in md.ancestors_of(22)] == [22, 11]
    assert md.schema_by_id(0) is md.current_schema()
    assert md.schema_by_id(1) is None
    assert md.spec_by_id(0) is md.default_spec()
    assert md.spec_by_id(1) is None
    assert md.sort_order_by_id(0) is md.default_sort_order()
    assert md.sort_order_by_id(5) is None
    assert md.snapshot_by_id(99) is None


def test_metadata_is_immutable(v3_full_text: str) -> None:
    md = parse_metadata(v3_full_text)
    with pytest.raises(AttributeError):
        md.location = "elsewhere"  # type: ignore[misc]
    with pytest.raises(TypeError):
        md.properties["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        md.refs["x"] = md.refs["main"]  # type: ignore[index]
    with pytest.raises(TypeError):
        md.extra["x"] = 1  # type: ignore[index]
    assert isinstance(md.snapshots, tuple)
    assert hash(md) == hash(parse_metadata(v3_full_text))
