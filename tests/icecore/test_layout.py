"""A snapshot's live files and the bounded metadata tree.

Files are checked against Spark's ``.files`` metadata table, and partition labels against
the partition folders Spark wrote each data file into (Spark prints partition values the
same way in paths). The tree is checked on hand-made file lists, where the expected shape
follows from the budget rule by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pyarrow as pa
import pytest

import icecore
from icecore.errors import ValidationError
from icecore.layout import (
    FILES_SCHEMA,
    MIN_BUDGET,
    UNPARTITIONED,
    content_name,
    metadata_tree,
    snapshot_files,
)
from icecore.manifest import ManifestContent
from icecore.metadata import Snapshot
from icecore.progress import reporting
from icecore.scan.context import default_context
from tests.icecore.fakes import DEMO_TABLES, manifest_file
from tests.icecore.fakes import files as fake_files

TABLES = DEMO_TABLES


@pytest.mark.spark
@pytest.mark.parametrize(("spark_name", "spec"), TABLES)
def test_snapshot_files_match_spark_files_table(
    spark: Any, demo_warehouse: Path, spark_name: str, spec: str
) -> None:
    table = icecore.load_table(spec.format(w=demo_warehouse))
    files = snapshot_files(table, table.snapshot())
    assert files.schema == FILES_SCHEMA
    ours = {
        (r["file_path"], r["content"], r["record_count"], r["file_size_in_bytes"], r["spec_id"])
        for r in files.to_pylist()
    }
    theirs = {
        (r.file_path, r.content, r.record_count, r.file_size_in_bytes, r.spec_id)
        for r in spark.sql(
            f"SELECT file_path, content, record_count, file_size_in_bytes, spec_id "
            f"FROM {spark_name}.files"
        ).collect()
    }
    assert ours == theirs
    manifests = {r.path for r in spark.sql(f"SELECT path FROM {spark_name}.manifests").collect()}
    assert set(files.column("manifest_path").to_pylist()) <= manifests


@pytest.mark.spark
@pytest.mark.parametrize(("spark_name", "spec"), TABLES)
def test_partition_labels_are_the_folders_spark_wrote(
    spark: Any, demo_warehouse: Path, spark_name: str, spec: str
) -> None:
    table = icecore.load_table(spec.format(w=demo_warehouse))
    files = snapshot_files(table, table.snapshot())
    data_root = f"{table.location}/data/"
    checked = 0
    for row in files.to_pylist():
        if row["content"] != 0:
            continue
        relative = row["file_path"].removeprefix(data_root)
        folders = "/".join(unquote_plus(p) for p in relative.split("/")[:-1])
        expected = folders or UNPARTITIONED
        assert row["partition"] == expected, row["file_path"]
        checked += 1
    assert checked > 0


@pytest.mark.spark
@pytest.mark.parametrize(("spark_name", "spec"), TABLES)
def test_every_consumer_lists_the_same_live_files(
    spark: Any, demo_warehouse: Path, spark_name: str, spec: str
) -> None:
    # Table.live_entries, the layout and the files metadata table read one listing
    # (manifest_arrow.live_files): at every snapshot they name the same files, and at the
    # current one the files Spark's .files table names.
    table = icecore.load_table(spec.format(w=demo_warehouse))
    for snapshot in table.snapshots():
        entries = {e.data_file.file_path for e in table.live_entries(snapshot)}
        layout = set(snapshot_files(table, snapshot).column("file_path").to_pylist())
        inspected = table.inspect("files", snapshot_id=snapshot.snapshot_id)
        assert entries == layout == set(inspected.column("file_path").to_pylist())
    current = table.snapshot()
    assert current is not None
    spark_files = spark.sql(f"SELECT file_path FROM {spark_name}.files").collect()
    assert {e.data_file.file_path for e in table.live_entries(current)} == {
        r.file_path for r in spark_files
    }


@pytest.mark.spark
@pytest.mark.parametrize(("spark_name", "spec"), TABLES)
def test_snapshot_files_decoded_here_are_the_planners(
    spark: Any, demo_warehouse: Path, spark_name: str, spec: str
) -> None:
    # cached=False (a health worker: decoded on this thread, kept nowhere) lays out the same
    # table as the planner's decode, at every snapshot (evolved specs, deletes, v3 included),
    # and leaves nothing in the planner's caches.
    table = icecore.load_table(spec.format(w=demo_warehouse))
    assert table.snapshots()
    told: list[tuple[str, int, int]] = []
    for snapshot in table.snapshots():
        default_context().clear()
        default_context().manifests.clear(disk=True)
        with reporting(lambda what, done, total: told.append((what, done, total))):
            here = snapshot_files(table, snapshot, cached=False)
        assert told == []  # nothing decoded through the planner
        assert all(default_context().manifests.lookup(k) is None for k in _keys(table, snapshot))
        assert here.equals(snapshot_files(table, snapshot)), snapshot.snapshot_id
        for name in ("manifest_path", "partition"):
            assert here.column(name).num_chunks == 1


def _keys(table: Any, snapshot: Snapshot) -> list[Any]:
    """The planner's cache keys of ``snapshot``'s manifests."""
    from icecore.point_in_time import At
    from icecore.scan.planner import TableScan

    scan = TableScan(table, at=At(snapshot_id=snapshot.snapshot_id))
    return [job.key for job in scan._jobs(table.manifests(snapshot))]


@pytest.mark.spark
@pytest.mark.parametrize(("spark_name", "spec"), TABLES)
def test_snapshot_files_read_the_planners_manifests_and_report_progress(
    spark: Any, demo_warehouse: Path, spark_name: str, spec: str
) -> None:
    # The live files come from the planner's decode (one decode, shared with scans, told to
    # the progress listener while it runs): cold, the listener hears every manifest of the
    # snapshot, data and delete alike; warm, nothing is decoded and nothing is told.
    table = icecore.load_table(spec.format(w=demo_warehouse))
    snapshot = table.snapshot()
    assert snapshot is not None
    default_context().clear()
    default_context().manifests.clear(disk=True)
    told: list[tuple[str, int, int]] = []
    with reporting(lambda what, done, total: told.append((what, done, total))):
        cold = snapshot_files(table, snapshot)
    manifests = len(table.manifests(snapshot))
    assert told and told[-1] == ("Reading manifests", manifests, manifests)
    assert [done for _, done, _ in told] == sorted(done for _, done, _ in told)
    told.clear()
    with reporting(lambda what, done, total: told.append((what, done, total))):
        warm = snapshot_files(table, snapshot)
    assert told == []
    assert warm.equals(cold)
    # One dictionary per encoded column, so Arrow can group by them.
    for name in ("manifest_path", "partition"):
        assert warm.column(name).num_chunks == 1
    expected = {
        (r.file_path, r.content, r.record_count)
        for r in spark.table(f"{spark_name}.files").collect()
    }
    assert {(r["file_path"], r["content"], r["record_count"]) for r in warm.to_pylist()} == expected


@pytest.mark.spark
def test_an_empty_snapshot_has_no_files(demo_warehouse: Path) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    assert snapshot_files(table, None).num_rows == 0


def test_content_names_tell_deletion_vectors_apart() -> None:
    assert content_name(0, "PARQUET") == "data"
    assert content_name(1, "PARQUET") == "position deletes"
    assert content_name(1, "puffin") == "deletion vector"
    assert content_name(2, "PARQUET") == "equality deletes"


# --- the tree, on hand-made files ------------------------------------------------------


def _files(layout: dict[str, list[tuple[int, int]]]) -> pa.Table:
    """Files per manifest as (bytes, rows); file paths name their manifest and rank."""
    return pa.concat_tables([fake_files(sizes, manifest) for manifest, sizes in layout.items()])


SNAPSHOT = Snapshot(snapshot_id=7, timestamp_ms=0, manifest_list="s3://t/metadata/snap-7.avro")


def test_a_small_tree_shows_every_file() -> None:
    files = _files({"m1": [(10, 1), (30, 3)], "m2": [(5, 2)]})
    tree = metadata_tree(SNAPSHOT, [manifest_file("m1"), manifest_file("m2")], files, budget=100)
    assert not tree.folded
    assert [n.level for n in tree.nodes].count("file") == 3
    by_id = {n.id: n for n in tree.nodes}
    assert by_id["snapshot 7"].bytes == 45 and by_id["snapshot 7"].rows == 6
    assert by_id["m1"].bytes == 40 and by_id["m1"].files == 2
    assert by_id["m1/f1"].parent == "m1" and by_id["m1/f1"].partition == "p=1"
    assert by_id["s3://t/metadata/snap-7.avro"].parent == "snapshot 7"


def test_a_big_manifest_folds_its_smallest_files_within_the_budget() -> None:
    # 2 + 1 + 20 files = 23 nodes > 10: the manifest keeps 10 - 3 = 7 slots, 6 biggest
    # files and one "14 more files" node holding the other 14 (sizes 1..20 by hand).
    files = _files({"m1": [(size, 1) for size in range(1, 21)]})
    tree = metadata_tree(SNAPSHOT, [manifest_file("m1")], files, budget=10)
    assert len(tree.nodes) <= 10
    shown = [n for n in tree.nodes if n.level == "file"]
    assert sorted(n.bytes for n in shown) == [15, 16, 17, 18, 19, 20]
    folded = next(n for n in tree.nodes if n.level == "folded")
    assert folded.files == 14 and folded.bytes == sum(range(1, 15))
    assert folded.label == "14 more files"
    assert tree.folded and tree.shown_files == 6 and tree.total_files == 20


def test_many_manifests_fold_into_one_node_and_totals_stay_exact() -> None:
    # 30 manifests of 5 files: 2 + 30 + 150 nodes > 40. k = min(5, isqrt(40)=6) = 5, so
    # (40 - 3) // (5 + 2) = 5 manifests are shown; the other 25 fold into one node.
    layout = {f"m{i:02d}": [(100 * i + j, 1) for j in range(5)] for i in range(30)}
    files = _files(layout)
    manifests = [manifest_file(m) for m in layout]
    tree = metadata_tree(SNAPSHOT, manifests, files, budget=40)
    assert len(tree.nodes) <= 40
    assert tree.shown_manifests == 5
    shown = [n.id for n in tree.nodes if n.level == "manifest"]
    assert shown == ["m29", "m28", "m27", "m26", "m25"]  # the biggest by bytes
    hidden = next(n for n in tree.nodes if n.label == "25 more manifests")
    assert hidden.files == 125
    root = tree.nodes[0]
    assert root.bytes == sum(size for sizes in layout.values() for size, _ in sizes)
    children = [n for n in tree.nodes if n.parent == tree.nodes[1].id]
    assert sum(n.bytes for n in children) == root.bytes


def test_sizing_by_rows_picks_the_files_with_most_rows() -> None:
    # 2 + 1 + 6 nodes > 8: four files keep their node, two fold (by rows: f0 and f5).
    files = _files({"m1": [(1000, 1), (1, 500), (2, 400), (3, 300), (4, 200), (5, 100)]})
    tree = metadata_tree(SNAPSHOT, [manifest_file("m1")], files, budget=MIN_BUDGET, size_by="rows")
    shown = {n.id for n in tree.nodes if n.level == "file"}
    assert "m1/f0" not in shown  # biggest in bytes, fewest rows
    assert shown == {"m1/f1", "m1/f2", "m1/f3", "m1/f4"}


def test_delete_manifests_are_labelled() -> None:
    files = _files({"d1": [(10, 3)]})
    tree = metadata_tree(
        SNAPSHOT, [manifest_file("d1", content=ManifestContent.DELETES)], files, budget=MIN_BUDGET
    )
    assert next(n for n in tree.nodes if n.id == "d1").content == "delete manifest"


def test_the_tree_refuses_an_unknown_measure() -> None:
    with pytest.raises(ValidationError):
        metadata_tree(SNAPSHOT, [], FILES_SCHEMA.empty_table(), size_by="colour")


def test_files_in_any_order_give_the_same_tree() -> None:
    # The tree groups files by manifest itself: rows interleaved across manifests (as a
    # concatenation in another order would give) make the same tree as rows grouped.
    layout = {f"m{i}": [(10 * i + j, j + 1) for j in range(6)] for i in range(4)}
    grouped = _files(layout)
    order = sorted(range(grouped.num_rows), key=lambda i: (i % 6, i))
    interleaved = grouped.take(pa.array(order))
    manifests = [manifest_file(m) for m in layout]
    for budget in (MIN_BUDGET, 12, 100):
        for size_by in ("bytes", "rows"):
            assert metadata_tree(
                SNAPSHOT, manifests, interleaved, budget=budget, size_by=size_by
            ) == metadata_tree(SNAPSHOT, manifests, grouped, budget=budget, size_by=size_by)


def test_a_folded_node_names_its_one_partition_and_content() -> None:
    # 2 + 1 + 6 nodes > 8: four files shown, the two smallest fold; both are in p=0 and are
    # data, so the folded node says so (a mixed fold says "several" and "mixed").
    files = fake_files(
        [(60, 1), (50, 1), (40, 1), (30, 1), (20, 1), (10, 1)],
        "m1",
        partitions=["p=1", "p=1", "p=1", "p=1", "p=0", "p=0"],
    )
    tree = metadata_tree(SNAPSHOT, [manifest_file("m1")], files, budget=MIN_BUDGET)
    folded = next(n for n in tree.nodes if n.level == "folded")
    assert (folded.files, folded.bytes, folded.partition, folded.content) == (2, 30, "p=0", "data")
    mixed = fake_files(
        [(60, 1), (50, 1), (40, 1), (30, 1), (20, 1), (10, 1)], "m1", contents=[0, 0, 0, 0, 0, 2]
    )
    tree = metadata_tree(SNAPSHOT, [manifest_file("m1")], mixed, budget=MIN_BUDGET)
    folded = next(n for n in tree.nodes if n.level == "folded")
    assert (folded.partition, folded.content) == ("several", "mixed")
