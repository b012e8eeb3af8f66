"""Cherry-pick against Spark: the same picks on two copies, by Icecore and by Spark's procedure.

Spark stages WAP snapshots (``write.wap.enabled`` + ``spark.wap.id``) in a v2 table with
merge-on-read position deletes and a v3 table with deletion vectors (row lineage); on one
copy Icecore fast-forwards ``w3`` and then cherry-picks ``w1`` (a new snapshot), on the
other Spark's ``cherrypick_snapshot`` does the same. Everything Spark reports must agree
except the new snapshot's id, its manifest paths and the engine's own summary keys.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import IcecoreError, NotFound, ValidationError
from icecore.manifest import ManifestEntryStatus, read_manifest_list
from icecore.manifest_arrow import read_manifest
from icecore.refs.cherry_pick import cherry_pick, plan_cherry_pick
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs

from .cherry_scenario import TableCopy, WapTable, copy_table, metadata_location, stage_wap_table

pytestmark = pytest.mark.spark

ENGINE_KEYS = {"engine-name", "engine-version", "app-id", "iceberg-version", "spark.app.id"}
"""Summary keys each engine writes about itself (Java's EnvironmentContext, Spark's app id)."""

EXPECTED_MAIN = [1, 5, 10, 11, 12, 20, 50]
"""Main after the story and the picks, by hand: s1 {1 a, 2 b, 3 b} - s2 {3} + s3 {4 b, 5 d}
+ w3 {20 a} + w1 {10 a, 11 c, 12 null}, then w5 replaces partition b with {50}
(w2, w4 stay staged)."""

PICKS = ("w3", "w1", "w5")
"""A fast-forward, an append that needs a new snapshot, a dynamic overwrite replayed."""


@dataclass(frozen=True)
class Picked:
    """Two copies after the same picks: ``ours`` by Icecore, ``theirs`` by Spark."""

    evo: EvoCatalogs
    table: WapTable
    ours: TableCopy
    theirs: TableCopy


@pytest.fixture(scope="module")
def wap_catalogs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EvoCatalogs]:
    yield register_catalogs(spark, tmp_path_factory.mktemp("cherry"))


@pytest.fixture(scope="module")
def wap_tables(wap_catalogs: EvoCatalogs) -> dict[int, WapTable]:
    """The WAP story in v2 and v3, written once for the module."""
    return {v: stage_wap_table(wap_catalogs, v) for v in (2, 3)}


def icecore_pick(copy: TableCopy, snapshot_id: int, branch: str = "main") -> icecore.Table:
    """Pick through the public API; its dry run must write nothing, even for a new snapshot.

    The dry run is never a no-op: a fast-forward moves the branch; a pick that writes a
    snapshot says so as what happens at commit (no ref can move before it exists).
    """
    table = icecore.load_table(copy.icecore_name)
    manage = table.manage_snapshots().cherrypick_snapshot(snapshot_id, branch)
    before = {str(p): p.read_bytes() for p in copy.folder.rglob("*") if p.is_file()}
    dry = manage.preview()
    assert {str(p): p.read_bytes() for p in copy.folder.rglob("*") if p.is_file()} == before
    assert not dry.is_noop
    assert bool(dry.pending) != bool(dry.moves)
    for line in dry.pending:
        assert f"At commit: {line}" in dry.text()
        assert line.startswith(f"cherry-pick of snapshot {snapshot_id} onto {branch}")
    result = manage.commit()
    assert isinstance(result, icecore.Table)
    return result


def spark_pick(evo: EvoCatalogs, copy: TableCopy, snapshot_id: int) -> None:
    name = copy.spark_name.split(".", 1)[1]
    evo.spark.sql(f"CALL {evo.sql}.system.cherrypick_snapshot('{name}', {snapshot_id})").collect()


@pytest.fixture(scope="module", params=[2, 3], ids=["v2", "v3"])
def picked(
    request: pytest.FixtureRequest, wap_catalogs: EvoCatalogs, wap_tables: dict[int, WapTable]
) -> Picked:
    table = wap_tables[request.param]
    ours, theirs = copy_table(wap_catalogs, table), copy_table(wap_catalogs, table)
    for role in PICKS:
        icecore_pick(ours, table.ids[role])
        spark_pick(wap_catalogs, theirs, table.ids[role])
    return Picked(wap_catalogs, table, ours, theirs)


def rows(spark: Any, sql: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in spark.sql(sql).collect()]


def new_ids(p: Picked) -> dict[int, str]:
    """The snapshots each copy created, named by the snapshot they were picked from."""
    out: dict[int, str] = {}
    for copy in (p.ours, p.theirs):
        sql = "SELECT snapshot_id, summary['source-snapshot-id'] AS source FROM {t}.snapshots"
        for r in rows(p.evo.spark, sql.format(t=copy.spark_name)):
            if r["source"] is not None:
                out[r["snapshot_id"]] = f"picked from {r['source']}"
    assert len(out) == 4  # w1 and w5 on each copy
    return out


def _norm(value: Any, names: dict[int, str]) -> Any:
    if isinstance(value, dict):
        return {k: _norm(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v, names) for v in value]
    if isinstance(value, int) and value in names:
        return names[value]
    return value


def view(p: Picked, copy: TableCopy, sql: str, drop: Collection[str] = ()) -> list[Any]:
    names = new_ids(p)
    out = []
    for r in rows(p.evo.spark, sql.format(t=copy.spark_name)):
        r = {k: v for k, v in r.items() if k not in drop}
        if isinstance(r.get("summary"), dict):
            r["summary"] = {k: v for k, v in r["summary"].items() if k not in ENGINE_KEYS}
        out.append(_norm(r, names))
    return out


def test_main_reads_the_same_as_after_spark(picked: Picked) -> None:
    spark = picked.evo.spark
    for copy in (picked.ours, picked.theirs):
        ids = [r["id"] for r in rows(spark, f"SELECT id FROM {copy.spark_name} ORDER BY id")]
        assert ids == EXPECTED_MAIN
    ours = rows(spark, f"SELECT * FROM {picked.ours.spark_name} ORDER BY id")
    assert ours == rows(spark, f"SELECT * FROM {picked.theirs.spark_name} ORDER BY id")


@pytest.mark.parametrize(
    ("sql", "drop"),
    [
        (
            "SELECT snapshot_id, parent_id, operation, summary FROM {t}.snapshots",
            set(),
        ),
        ("SELECT * FROM {t}.refs ORDER BY name", set()),
        ("SELECT * FROM {t}.history ORDER BY made_current_at", {"made_current_at"}),
        ("SELECT * FROM {t}.files ORDER BY file_path", set()),
        ("SELECT * FROM {t}.all_data_files ORDER BY file_path", set()),
        ("SELECT * FROM {t}.entries ORDER BY data_file.file_path, snapshot_id", set()),
        ("SELECT * FROM {t}.manifests", {"path", "length"}),
    ],
    ids=["snapshots", "refs", "history", "files", "all_data_files", "entries", "manifests"],
)
def test_metadata_tables_agree_with_spark(picked: Picked, sql: str, drop: set[str]) -> None:
    ours = view(picked, picked.ours, sql, drop)
    theirs = view(picked, picked.theirs, sql, drop)
    if "manifests" not in sql:  # ids differ, and ORDER BY leaves ties (a file in 2 manifests)
        ours.sort(key=repr)
        theirs.sort(key=repr)
    assert ours == theirs


def _metadata_json(copy: TableCopy, evo: EvoCatalogs) -> dict[str, Any]:
    import json

    name = copy.icecore_name.rsplit(".", 1)[1]
    return dict(json.loads(Path(metadata_location(evo, name)).read_text()))


def test_sequence_numbers_and_row_lineage_agree(picked: Picked) -> None:
    ours, theirs = (
        _metadata_json(picked.ours, picked.evo),
        _metadata_json(picked.theirs, picked.evo),
    )
    for key in ("last-sequence-number", "next-row-id", "format-version"):
        assert ours.get(key) == theirs.get(key), key
    names = new_ids(picked)
    for key in ("sequence-number", "first-row-id", "added-rows", "schema-id", "parent-snapshot-id"):
        # Every snapshot of both copies, new ones named by their source: same values.
        values = [
            {
                names.get(s["snapshot-id"], s["snapshot-id"]): _norm(s.get(key), names)
                for s in m["snapshots"]
            }
            for m in (ours, theirs)
        ]
        assert values[0] == values[1], key


def test_icecore_and_pyiceberg_read_the_written_files(picked: Picked) -> None:
    """Icecore's readers, and PyIceberg as a second peer, see what Spark sees in the new files."""
    spark, table = picked.evo.spark, picked.table
    ours = icecore.load_table(picked.ours.icecore_name)
    head = ours.snapshot()
    assert head is not None
    staged = rows(
        spark,
        f"SELECT DISTINCT data_file.file_path AS p FROM {table.spark_name}.all_entries "
        f"WHERE snapshot_id = {table.ids['w5']} AND status = 1",
    )
    manifests = read_manifest_list(ours.io, head.manifest_list or "", ours.format_version)
    new = manifests[0]
    assert new.added_snapshot_id == head.snapshot_id
    assert (new.added_files_count, new.existing_files_count, new.deleted_files_count) == (
        len(staged),
        0,
        0,
    )
    assert new.sequence_number == new.min_sequence_number == head.sequence_number
    spec = ours.metadata.spec_by_id(new.partition_spec_id)
    assert spec is not None
    entries = read_manifest(ours.io, new, ours.metadata.current_schema(), spec, ours.format_version)
    assert sorted(e.data_file.file_path for e in entries) == sorted(r["p"] for r in staged)
    assert {(e.status, e.snapshot_id, e.sequence_number) for e in entries} == {
        (ManifestEntryStatus.ADDED, head.snapshot_id, head.sequence_number)
    }
    scanned = ours.scan().plan().to_arrow().column("id").to_pylist()
    assert sorted(scanned) == EXPECTED_MAIN

    from pyiceberg.catalog.sql import SqlCatalog

    peer = SqlCatalog(picked.evo.sql, uri=picked.evo.sql_uri, warehouse=str(picked.evo.warehouse))
    peer_table = peer.load_table(picked.ours.icecore_name.split("::", 1)[1])
    assert sorted(peer_table.scan().to_arrow().column("id").to_pylist()) == EXPECTED_MAIN
    # The new manifest through PyIceberg's own Avro reader (its entries table trips on the
    # v3 table's deletion vector, whose column_sizes are null: a PyIceberg 0.12 limitation).
    peer_head = peer_table.current_snapshot()
    assert peer_head is not None and peer_head.snapshot_id == head.snapshot_id
    peer_new = peer_head.manifests(peer_table.io)[0]
    assert peer_new.added_files_count == len(staged)
    peer_entries = peer_new.fetch_manifest_entry(peer_table.io, discard_deleted=False)
    assert sorted(e.data_file.file_path for e in peer_entries) == sorted(r["p"] for r in staged)
    assert {(int(e.status), e.snapshot_id, e.sequence_number) for e in peer_entries} == {
        (1, head.snapshot_id, head.sequence_number)
    }


def files_of(copy: TableCopy, evo: EvoCatalogs) -> dict[str, bytes]:
    """Every file of the copy's folder, and the catalog's pointer, for byte comparisons."""
    out = {str(p): p.read_bytes() for p in copy.folder.rglob("*") if p.is_file()}
    with sqlite3.connect(evo.warehouse / "catalog.db") as conn:
        out["catalog"] = repr(
            conn.execute("SELECT * FROM iceberg_tables ORDER BY table_name").fetchall()
        ).encode()
    return out


def test_refusals_write_nothing_and_match_spark(picked: Picked) -> None:
    evo, ids = picked.evo, picked.table.ids
    cases = {
        # Java checks the WAP id first: w1 itself, picked already, is refused for it too.
        "w1": "WAP id 'w1' was already published",
        "w5": "WAP id 'w5' was already published",
        # w6 replaces partition a, where w3 (picked since its parent s3) added a file.
        "w6": "added .* since, in a partition it replaces",
        "w4": "WAP id 'w1' was already published",  # the same WAP id staged again
        "w2": "not append, dynamic overwrite, or fast-forward",  # a delete on an old parent
        "s1": "already an ancestor",
    }
    before = files_of(picked.ours, evo)
    for role, message in cases.items():
        table = icecore.load_table(picked.ours.icecore_name)
        with pytest.raises(ValidationError, match=message):
            cherry_pick(table, table.metadata, ids[role])
        with pytest.raises(Exception, match=r"(?i)cherry|wap|ancestor"):  # Spark refuses as well
            spark_pick(evo, picked.theirs, ids[role])
    table = icecore.load_table(picked.ours.icecore_name)
    with pytest.raises(NotFound, match="unknown snapshot 12345"):
        cherry_pick(table, table.metadata, 12345)
    with pytest.raises(NotFound, match="no such branch"):
        cherry_pick(table, table.metadata, ids["w4"], "audit")
    assert files_of(picked.ours, evo) == before


def test_spark_appends_after_the_pick(picked: Picked) -> None:
    spark = picked.evo.spark
    spark.sql(f"INSERT INTO {picked.ours.spark_name} VALUES (40, 'a', 40.0), (41, 'z', 41.0)")
    ids = [r["id"] for r in rows(spark, f"SELECT id FROM {picked.ours.spark_name} ORDER BY id")]
    assert ids == sorted([*EXPECTED_MAIN, 40, 41])
    ours = icecore.load_table(picked.ours.icecore_name)
    assert sorted(ours.scan().plan().to_arrow().column("id").to_pylist()) == ids


def test_pick_onto_a_branch_leaves_main(
    wap_catalogs: EvoCatalogs, wap_tables: dict[int, WapTable]
) -> None:
    """On a branch, the branch head plays main's part; Spark reads the branch as main would."""
    table = wap_tables[3]
    copy = copy_table(wap_catalogs, table)
    spark = wap_catalogs.spark
    spark.sql(f"ALTER TABLE {copy.spark_name} CREATE BRANCH audit RETAIN 7 DAYS")
    main_before = rows(spark, f"SELECT * FROM {copy.spark_name} ORDER BY id")
    before = files_of(copy, wap_catalogs)
    loaded = icecore.load_table(copy.icecore_name)
    plan = plan_cherry_pick(loaded, loaded.metadata, table.ids["w1"], "audit")
    staged = rows(
        spark,
        f"SELECT DISTINCT data_file.file_path AS p FROM {table.spark_name}.all_entries "
        f"WHERE snapshot_id = {table.ids['w1']} AND status = 1",
    )
    assert not plan.fast_forward and sorted(f.path for f in plan.added) == sorted(
        r["p"] for r in staged
    )
    assert files_of(copy, wap_catalogs) == before  # a plan writes nothing
    result = icecore_pick(copy, table.ids["w1"], "audit")
    audit = result.metadata.refs["audit"]
    assert audit.max_ref_age_ms == 7 * 24 * 3600 * 1000  # retention kept
    assert result.metadata.refs["main"].snapshot_id == table.ids["s3"]
    ids = [
        r["id"]
        for r in rows(spark, f"SELECT id FROM {copy.spark_name} VERSION AS OF 'audit' ORDER BY id")
    ]
    assert ids == [1, 2, 4, 5, 10, 11, 12]
    assert rows(spark, f"SELECT * FROM {copy.spark_name} ORDER BY id") == main_before
    with pytest.raises(IcecoreError):
        icecore_pick(copy, table.ids["w1"], "audit")


def test_dynamic_overwrite_on_the_head_fast_forwards_like_spark(
    wap_catalogs: EvoCatalogs, wap_tables: dict[int, WapTable]
) -> None:
    """w5 replaced partition b on s3, main's head: both engines only move main to it."""
    table = wap_tables[2]
    ours, theirs = copy_table(wap_catalogs, table), copy_table(wap_catalogs, table)
    result = icecore_pick(ours, table.ids["w5"])
    spark_pick(wap_catalogs, theirs, table.ids["w5"])
    assert result.metadata.current_snapshot_id == table.ids["w5"]
    spark = wap_catalogs.spark
    # By hand: s3 holds 1 (a), 2 and 4 (b), 5 (d); w5 replaces b with 50.
    for copy in (ours, theirs):
        ids = [r["id"] for r in rows(spark, f"SELECT id FROM {copy.spark_name} ORDER BY id")]
        assert ids == [1, 5, 50]
    for sql in (
        "SELECT * FROM {t}.refs",
        "SELECT snapshot_id, parent_id, is_current_ancestor FROM {t}.history",
    ):
        assert rows(spark, sql.format(t=ours.spark_name)) == rows(
            spark, sql.format(t=theirs.spark_name)
        )
