"""The metadata builder and what a commit writes: log, timestamps, v1 fields, unknown keys."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

import icecore
from icecore.errors import ValidationError
from icecore.metadata.builder import MetadataBuilder, check_metadata
from icecore.metadata.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    SetCurrentSchema,
    SetProperties,
)
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.schema import Schema
from icecore.table import Table
from icecore.transforms import IdentityTransform
from icecore.types import NestedField, StringType

from .hand_table import LAST_COLUMN_ID, write_table
from .test_schema_rules import written_json


def test_metadata_log_and_last_updated(tmp_path: Path) -> None:
    table = icecore.load_table(str(write_table(tmp_path, 2)))
    table = table.set_properties({"write.metadata.previous-versions-max": "2"})
    locations = [table.metadata_location]
    for i in range(3):
        table = table.set_properties(step=str(i))
        locations.append(table.metadata_location)
    raw = written_json(table)
    assert raw["last-updated-ms"] > 1_700_000_000_000
    # Two entries kept: the files replaced by the last two commits, oldest first.
    assert [e["metadata-file"] for e in raw["metadata-log"]] == locations[-3:-1]
    previous = json.loads(Path(locations[-2]).read_text())
    assert raw["metadata-log"][-1]["timestamp-ms"] == previous["last-updated-ms"]
    assert sorted(p.name for p in (tmp_path / "db" / "t" / "metadata").iterdir()) == [
        "v1.metadata.json",
        "v2.metadata.json",
        "v3.metadata.json",
        "v4.metadata.json",
        "v5.metadata.json",
        "version-hint.text",
    ]
    assert (tmp_path / "db" / "t" / "metadata" / "version-hint.text").read_text() == "5"


def test_v1_deprecated_fields_follow_the_change(v1_table: Table) -> None:
    committed = v1_table.update_schema().add_column("note", "string").commit()
    assert committed is not None
    raw = written_json(committed)
    assert raw["format-version"] == 1
    assert "last-sequence-number" not in raw
    assert raw["schema"]["schema-id"] == 1
    assert [f["name"] for f in raw["schema"]["fields"]][-1] == "note"
    assert raw["schema"] == raw["schemas"][-1]
    spec = committed.update_spec().add_field("note", "identity").commit()
    assert spec is not None
    assert written_json(spec)["partition-spec"][-1] == {
        "source-id": 17,
        "field-id": 1002,
        "name": "note",
        "transform": "identity",
    }


def test_gzip_codec_writes_gz_metadata(tmp_path: Path) -> None:
    table = icecore.load_table(str(write_table(tmp_path, 2)))
    table = table.set_properties({"write.metadata.compression-codec": "gzip"})
    assert table.metadata_location.endswith("/v2.gz.metadata.json")
    raw = Path(table.metadata_location).read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(raw))["properties"]["write.metadata.compression-codec"] == (
        "gzip"
    )
    again = table.refresh().set_properties(a="b")
    assert again.metadata_location.endswith("/v3.gz.metadata.json")


def test_builder_refuses_reused_field_ids_and_lower_last_column_id(v2_table: Table) -> None:
    md = v2_table.metadata
    current = md.current_schema()
    # An id the current schema uses elsewhere cannot name a new column: drop "attrs"
    # (ids 9, 14-16) and give its old value id 16 to a new top-level column.
    kept = tuple(f for f in current.fields if f.name != "attrs")
    moved = Schema((*kept, NestedField(16, "x", StringType())), 0, (1,))
    with pytest.raises(ValidationError, match="Field id 16 would move from 'attrs.value.v'"):
        MetadataBuilder(md).apply(AddSchema(moved, LAST_COLUMN_ID))
    # Add x (17) and drop it again: schema 0 is current again, but 17 is taken for good.
    with_x = Schema((*current.fields, NestedField(17, "x", StringType())), 0, (1,))
    builder = MetadataBuilder(md).apply_all(
        (
            AddSchema(with_x, 17),
            SetCurrentSchema(LAST_ADDED),
            AddSchema(current, 17),
            SetCurrentSchema(LAST_ADDED),
        )
    )
    assert builder.current_schema_id == 0 and builder.last_column_id == 17
    with_y = Schema((*current.fields, NestedField(17, "y", StringType())), 0, (1,))
    with pytest.raises(ValidationError, match="'y' would reuse field id 17"):
        builder.apply(AddSchema(with_y, 17))
    with pytest.raises(ValidationError, match="lower last-column-id"):
        MetadataBuilder(md).apply(AddSchema(current, LAST_COLUMN_ID - 1))
    with pytest.raises(ValidationError, match="none was added"):
        MetadataBuilder(md).apply(SetCurrentSchema(LAST_ADDED))
    with pytest.raises(ValidationError, match="reserved"):
        MetadataBuilder(md).apply(SetProperties({"format-version": "3"}))
    added = Schema((*current.fields, NestedField(17, "x", StringType())), 0, (1,))
    builder = MetadataBuilder(md).apply_all((AddSchema(added, 17), SetCurrentSchema(LAST_ADDED)))
    assert builder.current_schema().schema_id == 1
    assert [type(c).__name__ for c in builder.changes] == ["AddSchema", "SetCurrentSchema"]


def test_builder_checks_specs_against_the_schema(v2_table: Table) -> None:
    md = v2_table.metadata
    bad = PartitionSpec(0, (PartitionField(99, 1002, "nope", IdentityTransform()),))
    with pytest.raises(ValidationError, match="column id 99"):
        MetadataBuilder(md).apply(AddPartitionSpec(bad))
    same = PartitionSpec(7, md.default_spec().fields)
    builder = MetadataBuilder(md).apply(AddPartitionSpec(same))
    assert builder.changes == [], "an identical spec is reused, not added"


def test_check_metadata_refuses_duplicate_ids(v2_table: Table) -> None:
    md = v2_table.metadata
    doubled = dataclasses.replace(md, schemas=(md.schemas[0], md.schemas[0]))
    with pytest.raises(ValidationError, match="share an id"):
        check_metadata(doubled)
