"""Tests for icecore.manifest: hand-written manifests for the spec's rules, Spark as oracle."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pytest

from icecore.avro import read_avro_metadata
from icecore.errors import InvalidMetadata, NotFound
from icecore.io import FileIO
from icecore.manifest import (
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    read_manifest_list,
)
from icecore.manifest_arrow import read_manifest
from icecore.partitioning import PartitionSpec, partition_spec_from_json
from icecore.schema import Schema, schema_from_json

# --------------------------------------------------------------------------------------
# A small v3 manifest written here (schema per "Manifests" / "Data File Fields")

TABLE_SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "city", "required": False, "type": "string"},
    ],
}
SPEC_FIELDS = [{"name": "city", "transform": "identity", "source-id": 2, "field-id": 1000}]


def _opt(t: Any) -> list[Any]:
    return ["null", t]


def _int_map(name: str, kid: int, vid: int, value: str) -> dict[str, Any]:
    return {
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": name,
            "fields": [
                {"name": "key", "type": "int", "field-id": kid},
                {"name": "value", "type": value, "field-id": vid},
            ],
        },
    }


ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "manifest_entry",
    "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": _opt("long"), "default": None, "field-id": 1},
        {"name": "sequence_number", "type": _opt("long"), "default": None, "field-id": 3},
        {"name": "file_sequence_number", "type": _opt("long"), "default": None, "field-id": 4},
        {
            "name": "data_file",
            "field-id": 2,
            "type": {
                "type": "record",
                "name": "r2",
                "fields": [
                    {"name": "content", "type": "int", "field-id": 134},
                    {"name": "file_path", "type": "string", "field-id": 100},
                    {"name": "file_format", "type": "string", "field-id": 101},
                    {
                        "name": "partition",
                        "field-id": 102,
                        "type": {
                            "type": "record",
                            "name": "r102",
                            # an Avro-sanitized name: the field id, not the name, must match
                            "fields": [
                                {
                                    "name": "city_x2D",
                                    "type": _opt("string"),
                                    "default": None,
                                    "field-id": 1000,
                                }
                            ],
                        },
                    },
                    {"name": "record_count", "type": "long", "field-id": 103},
                    {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
                    {
                        "name": "null_value_counts",
                        "type": _opt(_int_map("k121_v122", 121, 122, "long")),
                        "default": None,
                        "field-id": 110,
                    },
                    {
                        "name": "lower_bounds",
                        "type": _opt(_int_map("k126_v127", 126, 127, "bytes")),
                        "default": None,
                        "field-id": 125,
                    },
                    {
                        "name": "equality_ids",
                        "type": _opt({"type": "array", "items": "int", "element-id": 136}),
                        "default": None,
                        "field-id": 135,
                    },
                    {
                        "name": "first_row_id",
                        "type": _opt("long"),
                        "default": None,
                        "field-id": 142,
                    },
                    {
                        "name": "referenced_data_file",
                        "type": _opt("string"),
                        "default": None,
                        "field-id": 143,
                    },
                ],
            },
        },
    ],
}


def _entry(
    status: int,
    path: str,
    records: int,
    *,
    snapshot_id: int | None = None,
    seq: int | None = None,
    file_seq: int | None = None,
    first_row_id: int | None = None,
    content: int = 0,
    city: str | None = "Milan",
) -> dict[str, Any]:
    return {
        "status": status,
        "snapshot_id": snapshot_id,
        "sequence_number": seq,
        "file_sequence_number": file_seq,
        "data_file": {
            "content": content,
            "file_path": path,
            "file_format": "PARQUET",
            "partition": {"city_x2D": city},
            "record_count": records,
            "file_size_in_bytes": 100 + records,
            "null_value_counts": [{"key": 1, "value": 0}, {"key": 2, "value": 3}],
            "lower_bounds": [{"key": 2, "value": b""}],
            "equality_ids": [1] if content == 2 else None,
            "first_row_id": first_row_id,
            "referenced_data_file": None,
        },
    }


def _write_manifest(path: Path, entries: list[dict[str, Any]], content: str = "data") -> int:
    buf = io.BytesIO()
    fastavro.writer(
        buf,
        fastavro.parse_schema(ENTRY_SCHEMA),
        entries,
        codec="deflate",
        metadata={
            "schema": json.dumps(TABLE_SCHEMA),
            "partition-spec": json.dumps(SPEC_FIELDS),
            "partition-spec-id": "0",
            "format-version": "3",
            "content": content,
        },
    )
    path.write_bytes(buf.getvalue())
    return len(buf.getvalue())


def _manifest_file(path: Path, length: int, **kw: Any) -> ManifestFile:
    values: dict[str, Any] = {
        "manifest_path": str(path),
        "manifest_length": length,
        "partition_spec_id": 0,
        "content": ManifestContent.DATA,
        "sequence_number": 7,
        "min_sequence_number": 3,
        "added_snapshot_id": 42,
        "added_files_count": None,
        "existing_files_count": None,
        "deleted_files_count": None,
        "added_rows_count": None,
        "existing_rows_count": None,
        "deleted_rows_count": None,
        "first_row_id": 1000,
    }
    values.update(kw)
    return ManifestFile(**values)


SCHEMA = schema_from_json(TABLE_SCHEMA)
SPEC = partition_spec_from_json({"spec-id": 0, "fields": SPEC_FIELDS})


def test_inheritance_rules_from_the_spec(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(
        path,
        [
            _entry(1, "a", 100),  # ADDED, all null: inherits everything
            _entry(0, "b", 10, snapshot_id=5, seq=2, file_seq=2, first_row_id=3),
            _entry(2, "c", 8, snapshot_id=6, seq=3, file_seq=4),  # DELETED, null row id
            _entry(1, "d", 25, seq=4, city=None),  # ADDED with an explicit data seq number
            _entry(0, "e", 5, snapshot_id=5, seq=3, file_seq=3),  # EXISTING, null row id
        ],
    )
    entries = read_manifest(FileIO(), _manifest_file(path, length), SCHEMA, SPEC, 3)
    got = [
        (
            e.status,
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            e.data_file.first_row_id,
        )
        for e in entries
    ]
    added, existing, deleted = (
        ManifestEntryStatus.ADDED,
        ManifestEntryStatus.EXISTING,
        ManifestEntryStatus.DELETED,
    )
    # "First Row ID Inheritance": 1000 + record counts of preceding null-row-id data files
    # (a, then d); the DELETED entry is outside the range the manifest list reserved.
    assert got == [
        (added, 42, 7, 7, 1000),
        (existing, 5, 2, 2, 3),
        (deleted, 6, 3, 4, None),
        (added, 42, 4, 7, 1100),
        (existing, 5, 3, 3, 1125),
    ]
    first = entries[0].data_file
    assert first.partition == {1000: "Milan"}
    assert entries[3].data_file.partition == {1000: None}
    assert first.null_value_counts == {1: 0, 2: 3}
    assert first.lower_bounds == {2: b""}
    assert first.column_sizes is None
    assert first.content is DataFileContent.DATA
    assert first.spec_id == 0


def test_no_row_ids_when_manifest_has_none(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(path, [_entry(1, "a", 100)])
    manifest = _manifest_file(path, length, first_row_id=None)
    [entry] = read_manifest(FileIO(), manifest, SCHEMA, SPEC, 3)
    assert entry.data_file.first_row_id is None


def test_delete_files_get_no_row_ids(tmp_path: Path) -> None:
    path = tmp_path / "d.avro"
    length = _write_manifest(path, [_entry(1, "eq", 4, content=2)], content="deletes")
    manifest = _manifest_file(path, length, content=ManifestContent.DELETES, first_row_id=None)
    [entry] = read_manifest(FileIO(), manifest, SCHEMA, SPEC, 3)
    assert entry.data_file.content is DataFileContent.EQUALITY_DELETES
    assert entry.data_file.equality_ids == (1,)
    assert entry.data_file.first_row_id is None
    assert entry.sequence_number == 7


def test_truncated_manifest(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(path, [_entry(1, f"f{i}", i) for i in range(50)])
    data = path.read_bytes()
    path.write_bytes(data[: length // 2])
    with pytest.raises(InvalidMetadata) as err:
        read_manifest(FileIO(), _manifest_file(path, length), SCHEMA, SPEC, 3)
    assert str(path) in str(err.value)
    # Even when the manifest list's length matches the cut bytes, the Avro reader notices.
    with pytest.raises(InvalidMetadata, match="truncated") as err:
        read_manifest(FileIO(), _manifest_file(path, length // 2), SCHEMA, SPEC, 3)
    assert str(path) in str(err.value)


def test_bad_magic_manifest(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(path, [_entry(1, "a", 1)])
    path.write_bytes(b"XXXX" + path.read_bytes()[4:])
    with pytest.raises(InvalidMetadata, match="magic") as err:
        read_manifest(FileIO(), _manifest_file(path, length), SCHEMA, SPEC, 3)
    assert str(path) in str(err.value)


def test_missing_manifest_and_manifest_list(tmp_path: Path) -> None:
    path = tmp_path / "gone.avro"
    with pytest.raises(NotFound, match="gone.avro"):
        read_manifest(FileIO(), _manifest_file(path, 10), SCHEMA, SPEC, 3)
    with pytest.raises(NotFound, match="gone.avro"):
        read_manifest_list(FileIO(), str(path))


@pytest.mark.parametrize(
    ("entry", "what"),
    [(_entry(3, "a", 1), "unknown status"), (_entry(1, "a", 1, content=7), "unknown content")],
)
def test_unknown_status_or_content_is_one_sentence(
    tmp_path: Path, entry: dict[str, Any], what: str
) -> None:
    # The spec knows statuses 0-2 and contents 0-2; anything else is a broken manifest,
    # told as InvalidMetadata naming the file (the object reader raised a bare ValueError).
    path = tmp_path / "m.avro"
    length = _write_manifest(path, [entry])
    with pytest.raises(InvalidMetadata, match=what) as err:
        read_manifest(FileIO(), _manifest_file(path, length), SCHEMA, SPEC, 3)
    assert str(path) in str(err.value)


def test_wrong_spec_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(path, [_entry(1, "a", 1)])
    other = partition_spec_from_json({"spec-id": 3, "fields": SPEC_FIELDS})
    with pytest.raises(InvalidMetadata, match="spec"):
        read_manifest(FileIO(), _manifest_file(path, length), SCHEMA, other, 3)


# --------------------------------------------------------------------------------------
# Spark as the oracle

TABLES = [
    ("icecore.demo.trips", 2),
    ("icecore.demo.events_v3", 3),
    ("icecore.demo.zones", 2),
    ("hadoop.demo.customers_v1", 1),
]


def _current_manifest_list(spark: Any, table: str) -> str:
    row = spark.sql(
        f"SELECT manifest_list FROM {table}.snapshots WHERE snapshot_id = "
        f"(SELECT snapshot_id FROM {table}.refs WHERE name = 'main')"
    ).collect()
    assert len(row) == 1
    return str(row[0]["manifest_list"])


def _header_schema_and_spec(
    file_io: FileIO, manifest: ManifestFile
) -> tuple[Schema, PartitionSpec]:
    """The manifest's own schema and spec, from its Avro header ("Manifests")."""
    meta = read_avro_metadata(file_io.read(manifest.manifest_path), manifest.manifest_path)
    spec = partition_spec_from_json(
        {"spec-id": int(meta["partition-spec-id"]), "fields": json.loads(meta["partition-spec"])}
    )
    return schema_from_json(json.loads(meta["schema"])), spec


def _read_all(
    file_io: FileIO, manifests: list[ManifestFile], version: int
) -> list[tuple[ManifestEntry, PartitionSpec]]:
    out = []
    for m in manifests:
        schema, spec = _header_schema_and_spec(file_io, m)
        out.extend((e, spec) for e in read_manifest(file_io, m, schema, spec, version))
    return out


def _norm(value: Any) -> Any:
    return bytes(value) if isinstance(value, bytearray) else value


def _ours(entry: ManifestEntry, spec: PartitionSpec, with_entry: bool) -> tuple[Any, ...]:
    f = entry.data_file
    names = {pf.field_id: pf.name for pf in spec.fields}
    partition = tuple(sorted((names[fid], v) for fid, v in f.partition.items()))
    head: tuple[Any, ...] = (
        (int(entry.status), entry.snapshot_id, entry.sequence_number, entry.file_sequence_number)
        if with_entry
        else ()
    )
    return head + (
        int(f.content),
        f.file_path,
        f.file_format,
        f.spec_id,
        partition,
        f.record_count,
        f.file_size_in_bytes,
        f.equality_ids,
        f.referenced_data_file,
        f.content_offset,
        f.content_size_in_bytes,
        f.first_row_id,
        f.null_value_counts,
        f.lower_bounds,
    )


def _spark(row: Any, spec_names: dict[int, list[str]], with_entry: bool) -> tuple[Any, ...]:
    f = row["data_file"] if with_entry else row
    # An unpartitioned table's metadata tables have no partition column at all.
    raw_partition = f.asDict().get("partition")
    part = raw_partition.asDict() if raw_partition is not None else {}
    names = spec_names[f["spec_id"]]
    partition = tuple(sorted((n, part[n]) for n in names))
    head: tuple[Any, ...] = (
        (row["status"], row["snapshot_id"], row["sequence_number"], row["file_sequence_number"])
        if with_entry
        else ()
    )
    eq = tuple(f["equality_ids"]) if f["equality_ids"] is not None else None
    lower = (
        {k: _norm(v) for k, v in f["lower_bounds"].items()}
        if f["lower_bounds"] is not None
        else None
    )
    return head + (
        f["content"],
        f["file_path"],
        f["file_format"],
        f["spec_id"],
        partition,
        f["record_count"],
        f["file_size_in_bytes"],
        eq,
        f["referenced_data_file"],
        f["content_offset"],
        f["content_size_in_bytes"],
        f["first_row_id"],
        f["null_value_counts"],
        lower,
    )


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize(("table", "version"), TABLES)
def test_manifest_list_matches_spark(
    spark: Any, demo_warehouse: Path, table: str, version: int
) -> None:
    file_io = FileIO()
    ours = read_manifest_list(file_io, _current_manifest_list(spark, table), version)
    rows = spark.sql(f"SELECT * FROM {table}.manifests").collect()
    assert len(ours) == len(rows)
    by_path = {m.manifest_path: m for m in ours}
    for row in rows:
        m = by_path[row["path"]]
        assert m.manifest_length == row["length"]
        assert m.partition_spec_id == row["partition_spec_id"]
        assert int(m.content) == row["content"]
        assert m.added_snapshot_id == row["added_snapshot_id"]
        prefix = "data" if m.content is ManifestContent.DATA else "delete"
        assert m.added_files_count == row[f"added_{prefix}_files_count"]
        assert m.existing_files_count == row[f"existing_{prefix}_files_count"]
        assert m.deleted_files_count == row[f"deleted_{prefix}_files_count"]
        summaries = row["partition_summaries"] or []
        assert len(m.partitions or ()) == len(summaries)
        for ours_s, theirs in zip(m.partitions or (), summaries, strict=True):
            assert ours_s.contains_null == theirs["contains_null"]
            assert ours_s.contains_nan == theirs["contains_nan"]
            # Spark renders a void field's missing bound as the text "null".
            if ours_s.lower_bound is None:
                assert theirs["lower_bound"] in (None, "null")
            else:
                assert theirs["lower_bound"] is not None
        if version == 1:
            assert (m.sequence_number, m.min_sequence_number) == (0, 0)
        else:
            assert m.sequence_number >= m.min_sequence_number >= 0
        if version < 3:
            assert m.first_row_id is None


@pytest.mark.spark
@pytest.mark.parametrize(("table", "version"), TABLES)
def test_manifest_list_entries_made_together_are_the_ones_made_alone(
    spark: Any, demo_warehouse: Path, table: str, version: int
) -> None:
    # The planner asks for the kept manifests together (one Arrow pass); each equals the one
    # read alone and the one of the whole list, in any order asked, repeats included.
    from icecore.manifest_list_columns import read_manifest_list_columns

    path = _current_manifest_list(spark, table)
    whole = read_manifest_list(FileIO(), path, version)
    n = len(whole)
    order = [*range(n - 1, -1, -1), 0, n - 1]
    together = read_manifest_list_columns(FileIO(), path, version).manifests(np.asarray(order))
    assert together == [whole[i] for i in order]
    alone = read_manifest_list_columns(FileIO(), path, version)
    assert [alone.manifest(i) for i in order] == together
    assert alone.manifests([n - 1]) == [whole[n - 1]]
    assert alone.manifests() == whole


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize(("table", "version"), TABLES)
def test_entries_files_and_delete_files_match_spark(
    spark: Any, demo_warehouse: Path, table: str, version: int
) -> None:
    file_io = FileIO()
    manifests = read_manifest_list(file_io, _current_manifest_list(spark, table), version)
    ours = _read_all(file_io, manifests, version)
    spec_names = {spec.spec_id: [pf.name for pf in spec.fields] for _, spec in ours}
    if not spec_names:
        spec_names = {0: []}

    theirs_entries = spark.sql(f"SELECT * FROM {table}.entries").collect()
    assert sorted(_ours(e, s, True) for e, s in ours) == sorted(
        _spark(r, spec_names, True) for r in theirs_entries
    )

    live = [(e, s) for e, s in ours if e.status is not ManifestEntryStatus.DELETED]
    theirs_files = spark.sql(f"SELECT * FROM {table}.files").collect()
    assert sorted(_ours(e, s, False) for e, s in live) == sorted(
        _spark(r, spec_names, False) for r in theirs_files
    )
    theirs_deletes = spark.sql(f"SELECT * FROM {table}.delete_files").collect()
    assert sorted(
        _ours(e, s, False) for e, s in live if e.data_file.content is not DataFileContent.DATA
    ) == sorted(_spark(r, spec_names, False) for r in theirs_deletes)


@pytest.mark.spark
@pytest.mark.slow
def test_scenarios_are_present(spark: Any, demo_warehouse: Path) -> None:
    """The fixture tables hold what the comparisons above are meant to cover."""
    file_io = FileIO()
    trips = read_manifest_list(file_io, _current_manifest_list(spark, "icecore.demo.trips"), 2)
    assert {m.content for m in trips} == {ManifestContent.DATA, ManifestContent.DELETES}
    assert len({m.partition_spec_id for m in trips}) > 1
    events = read_manifest_list(file_io, _current_manifest_list(spark, "icecore.demo.events_v3"), 3)
    entries = [e for e, _ in _read_all(file_io, events, 3)]
    dvs = [e.data_file for e in entries if e.data_file.file_format.upper() == "PUFFIN"]
    assert dvs and all(d.referenced_data_file and d.content_offset is not None for d in dvs)
    assert all(
        e.data_file.first_row_id is not None
        for e in entries
        if e.data_file.content is DataFileContent.DATA
        and e.status is not ManifestEntryStatus.DELETED
    )
    customers = read_manifest_list(
        file_io, _current_manifest_list(spark, "hadoop.demo.customers_v1"), 1
    )
    assert all(m.sequence_number == 0 for m in customers)
