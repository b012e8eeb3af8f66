"""Cherry-pick rules on hand-written metadata (no files are read on these paths, none written).

Each case is Iceberg Java 1.10's ``CherryPickOperation`` / ``WapUtil`` rule, applied to a
snapshot graph written out below; the expected updates and messages come from those rules,
not from the code under test. Summaries and field summaries of the snapshot writer are
checked against values worked out by hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest

from icecore.errors import NotFound, Unsupported, ValidationError
from icecore.identifier import TableIdentifier
from icecore.io import FileIO
from icecore.metadata import parse_metadata
from icecore.metadata.model import Snapshot, SnapshotRef, SnapshotRefType, Summary
from icecore.metadata.requirements import AssertRefSnapshotId, AssertTableUUID
from icecore.metadata.updates import SetSnapshotRef
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.refs.cherry_pick import cherry_pick
from icecore.refs.snapshot_writer import (
    PickedFile,
    append_summary,
    field_summaries,
    manifest_list_schema,
)
from icecore.table_data import TableData
from icecore.transforms import parse_transform
from icecore.types import DoubleType, StringType

UUID = "6f0a0a4e-9a7b-4d16-b7a5-0e0c7f5b3d11"


def _snap(sid: int, parent: int | None, operation: str, **summary: str) -> dict[str, Any]:
    return {
        "snapshot-id": sid,
        "parent-snapshot-id": parent,
        "sequence-number": sid,
        "timestamp-ms": 1_700_000_000_000 + sid,
        "manifest-list": f"/nowhere/snap-{sid}.avro",
        "summary": {"operation": operation, **summary},
        "schema-id": 0,
    }


# main: 1 -> 2 -> 3 (head). Off main: 10 (WAP x on 2), 11 (delete on 3), 12 (dynamic
# overwrite on 2: replayed, see the Spark tests), 13 (dynamic overwrite on 20), 20 (append
# on 1), 21 (append on 1, already picked as 3), 22 (WAP y on 1, y published by 2), 23 (WAP y
# on 3), 24 (overwrite on 2).
SNAPSHOTS = [
    _snap(1, None, "append"),
    _snap(2, 1, "append", **{"published-wap-id": "y"}),
    _snap(3, 2, "append", **{"source-snapshot-id": "21"}),
    _snap(10, 2, "append", **{"wap.id": "x"}),
    _snap(11, 3, "delete"),
    _snap(12, 2, "overwrite", **{"replace-partitions": "true"}),
    _snap(13, 20, "overwrite", **{"replace-partitions": "true"}),
    _snap(20, 1, "append"),
    _snap(21, 1, "append"),
    _snap(22, 1, "append", **{"wap.id": "y"}),
    _snap(23, 3, "append", **{"wap.id": "y"}),
    _snap(24, 2, "overwrite"),
]


def _table(
    tmp_path: Path, *, current: int | None = 3, snapshots: list[Any] | None = None
) -> TableData:
    refs: dict[str, Any] = {
        "tag1": {"snapshot-id": 2, "type": "tag"},
        "dev": {
            "snapshot-id": 2,
            "type": "branch",
            "max-ref-age-ms": 1000,
            "min-snapshots-to-keep": 3,
        },
    }
    if current is not None:
        refs["main"] = {"snapshot-id": current, "type": "branch"}
    raw = {
        "format-version": 2,
        "table-uuid": UUID,
        "location": str(tmp_path / "t"),
        "last-sequence-number": 24,
        "last-updated-ms": 1_700_000_000_100,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [
            {
                "type": "struct",
                "schema-id": 0,
                "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
            }
        ],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": current if current is not None else -1,
        "snapshots": SNAPSHOTS if snapshots is None else snapshots,
        "refs": refs,
        "snapshot-log": [],
        "metadata-log": [],
    }
    md = parse_metadata(json.dumps(raw))
    return TableData(TableIdentifier(("db",), "t"), md, str(tmp_path / "m.json"), FileIO())


def _pick(table: TableData, sid: int, branch: str = "main") -> Any:
    return cherry_pick(table, table.metadata, sid, branch)


def test_fast_forward_moves_only_the_ref(tmp_path: Path) -> None:
    table = _table(tmp_path)
    updates, requirements = _pick(table, 11)  # a delete whose parent is the head
    assert updates == (SetSnapshotRef("main", SnapshotRef(11)),)
    assert requirements == (AssertTableUUID(UUID), AssertRefSnapshotId("main", 3))


def test_fast_forward_keeps_the_branch_retention(tmp_path: Path) -> None:
    table = _table(tmp_path)
    updates, requirements = _pick(table, 10, "dev")  # WAP x on 2, dev's head
    (update,) = updates
    assert update == SetSnapshotRef(
        "dev", SnapshotRef(10, SnapshotRefType.BRANCH, min_snapshots_to_keep=3, max_ref_age_ms=1000)
    )
    assert requirements[1] == AssertRefSnapshotId("dev", 2)


def test_empty_main_fast_forwards_to_a_parentless_snapshot(tmp_path: Path) -> None:
    table = _table(tmp_path, current=None)
    updates, requirements = _pick(table, 1)
    assert updates == (SetSnapshotRef("main", SnapshotRef(1)),)
    assert requirements[1] == AssertRefSnapshotId("main", None)


@pytest.mark.parametrize(
    ("sid", "branch", "error", "message"),
    [
        (
            24,
            "main",
            ValidationError,
            "Cannot cherry-pick snapshot 24: not append, dynamic overwrite, or fast-forward",
        ),
        (
            2,
            "main",
            ValidationError,
            "Cannot cherry-pick snapshot 2: it is already an ancestor of main",
        ),
        (21, "main", ValidationError, "already picked to create snapshot 3 of main"),
        (22, "main", ValidationError, "WAP id 'y' was already published on main \\(snapshot 2\\)"),
        (23, "main", ValidationError, "WAP id 'y' was already published"),  # even a fast-forward
        (13, "main", ValidationError, "not based on an ancestor of main"),
        (99, "main", NotFound, "unknown snapshot 99"),
        (11, "tag1", ValidationError, "tag1: it is a tag"),
        (11, "nope", NotFound, "no such branch"),
    ],
)
def test_refusals(
    tmp_path: Path, sid: int, branch: str, error: type[Exception], message: str
) -> None:
    table = _table(tmp_path)
    with pytest.raises(error, match=message):
        _pick(table, sid, branch)
    assert not (tmp_path / "t").exists()  # nothing written


def test_v1_needs_spark_for_a_new_snapshot(tmp_path: Path) -> None:
    """Icecore writes v2/v3 manifests only; the refusal comes before any file is read."""
    from icecore.refs.snapshot_writer import write_append_snapshot

    table = _table(tmp_path)
    v1 = dataclasses.replace(table.metadata, format_version=1)
    with pytest.raises(Unsupported, match="format versions 2 and 3 only"):
        write_append_snapshot(table, v1, None, [], {}, {})
    assert not (tmp_path / "t").exists()


# The snapshot writer's pieces, by hand -------------------------------------------------------


def _file(spec_id: int, partition: dict[int, Any], records: int, size: int) -> PickedFile:
    return PickedFile({}, spec_id, partition, records, size)


def test_append_summary_carries_totals_from_the_head() -> None:
    head = Snapshot(
        5,
        0,
        summary=Summary(
            "append",
            {
                "total-records": "10",
                "total-files-size": "1000",
                "total-data-files": "4",
                "total-delete-files": "1",
                "total-position-deletes": "2",
                "total-equality-deletes": "0",
            },
        ),
    )
    files = [
        _file(0, {1000: "a"}, 3, 100),
        _file(0, {1000: "a"}, 2, 50),
        _file(0, {1000: None}, 1, 10),
    ]
    summary = append_summary({"published-wap-id": "w", "source-snapshot-id": "7"}, files, head)
    assert summary == {
        "published-wap-id": "w",
        "source-snapshot-id": "7",
        "added-data-files": "3",
        "added-records": "6",
        "added-files-size": "160",
        "changed-partition-count": "2",
        "total-records": "16",
        "total-files-size": "1160",
        "total-data-files": "7",
        "total-delete-files": "1",
        "total-position-deletes": "2",
        "total-equality-deletes": "0",
        "engine-name": "icecore",
    }
    assert list(summary)[:2] == ["published-wap-id", "source-snapshot-id"]


def test_append_summary_starts_totals_at_zero_and_skips_unknown_ones() -> None:
    files = [_file(0, {}, 4, 40)]
    first = append_summary({}, files, None)
    assert (first["total-records"], first["total-data-files"], first["total-delete-files"]) == (
        "4",
        "1",
        "0",
    )
    head = Snapshot(
        5, 0, summary=Summary("append", {"total-records": "x", "total-data-files": "2"})
    )
    later = append_summary({}, files, head)
    assert "total-records" not in later and "total-files-size" not in later
    assert later["total-data-files"] == "3"


def test_field_summaries_by_hand() -> None:
    spec = PartitionSpec(
        0,
        (
            PartitionField(1, 1000, "s", parse_transform("identity")),
            PartitionField(2, 1001, "d", parse_transform("identity")),
        ),
    )
    files = [
        _file(0, {1000: "b", 1001: 2.5}, 1, 1),
        _file(0, {1000: None, 1001: math.nan}, 1, 1),
        _file(0, {1000: "a", 1001: -1.0}, 1, 1),
    ]
    out = field_summaries(spec, [StringType(), DoubleType()], files)
    assert out == [
        {"contains_null": True, "contains_nan": False, "lower_bound": b"a", "upper_bound": b"b"},
        {
            "contains_null": False,
            "contains_nan": True,
            "lower_bound": struct.pack("<d", -1.0),
            "upper_bound": struct.pack("<d", 2.5),
        },
    ]


def test_manifest_list_schema_is_the_spec_s() -> None:
    """Field ids and requiredness of "Manifest Lists" (v2), plus first_row_id in v3."""
    v2 = {f["field-id"]: (f["name"], f["type"]) for f in manifest_list_schema(2)["fields"]}
    v3 = {f["field-id"]: f["name"] for f in manifest_list_schema(3)["fields"]}
    assert sorted(v2) == [500, 501, 502, 503, 504, 505, 506, 507, 512, 513, 514, 515, 516, 517, 519]
    assert set(v3) - set(v2) == {520} and v3[520] == "first_row_id"
    required = {fid for fid, (_, t) in v2.items() if not isinstance(t, list)}
    assert required == {500, 501, 502, 503, 504, 505, 506, 512, 513, 514, 515, 516, 517}


def test_changed_partition_count_counts_nan_once_and_signed_zeros_apart() -> None:
    """Java counts distinct partition paths: ``d=NaN`` once, ``d=-0.0`` and ``d=0.0`` apart."""
    nans = [_file(0, {1000: math.nan}, 1, 1), _file(0, {1000: float("nan")}, 1, 1)]
    assert append_summary({}, nans, None)["changed-partition-count"] == "1"
    zeros = [_file(0, {1000: -0.0}, 1, 1), _file(0, {1000: 0.0}, 1, 1)]
    assert append_summary({}, zeros, None)["changed-partition-count"] == "2"


def test_write_avro_keeps_field_ids_and_header() -> None:
    """Readers find manifest fields by ``field-id`` (Appendix A): the attributes must survive."""
    from icecore.avro import read_avro, write_avro
    from icecore.manifest import AvroFields

    schema = manifest_list_schema(3)
    record = {
        "manifest_path": "m.avro",
        "manifest_length": 7,
        "partition_spec_id": 0,
        "content": 0,
        "sequence_number": 2,
        "min_sequence_number": 1,
        "added_snapshot_id": 9,
        "added_files_count": 1,
        "existing_files_count": 0,
        "deleted_files_count": 0,
        "added_rows_count": 3,
        "existing_rows_count": 0,
        "deleted_rows_count": 0,
        "partitions": [
            {
                "contains_null": False,
                "contains_nan": None,
                "lower_bound": b"",
                "upper_bound": b"\x00",
            }
        ],
        "key_metadata": None,
        "first_row_id": 0,
    }
    data = write_avro(schema, [record], {"format-version": "3", "snapshot-id": "9"})
    back = read_avro(data, "m")
    assert back.records == [record]
    assert back.metadata["format-version"] == "3" and back.metadata["avro.codec"] == "deflate"
    fields = AvroFields(back.schema, "m", "list")
    assert fields.get(back.records[0], 520) == 0 and fields.get(back.records[0], 515) == 2
