"""Rows per snapshot as a reader sees them: live rows equal Spark's count(*) at every snapshot.

One table per delete kind of the fixture warehouse (pipeline/demo.py): ``demo.trips``
(position deletes), ``demo.events_v3`` (deletion vectors), ``demo.accounts`` (equality
deletes). Every expected number is Spark's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.progress import reporting
from icecore.row_counts import (
    REMOVED_KINDS,
    forget_counts,
    live_rows,
    read_live_rows,
    rows_between,
    snapshot_rows,
)
from tests.conftest import REPO
from tests.icecore.evolution.conftest import register_catalogs

pytestmark = pytest.mark.spark

KIND_OF_TABLE = {
    "demo.trips": "position_deletes",
    "demo.events_v3": "deletion_vectors",
    "demo.accounts": "equality_deletes",
}


def _count(spark: Any, table: str, snapshot_id: int) -> int:
    return int(
        spark.sql(f"SELECT count(*) FROM icecore.{table} VERSION AS OF {snapshot_id}").collect()[0][
            0
        ]
    )


def _added_records(spark: Any, table: str, snapshot_id: int) -> int:
    """Records of the data files the snapshot added (its ADDED entries), from Spark."""
    row = spark.sql(
        f"SELECT sum(data_file.record_count) FROM icecore.{table}.entries "
        f"VERSION AS OF {snapshot_id} WHERE status = 1 AND snapshot_id = {snapshot_id} "
        "AND data_file.content = 0"
    ).collect()[0][0]
    return int(row or 0)


@pytest.mark.parametrize("name", sorted(KIND_OF_TABLE))
def test_live_rows_at_every_snapshot_equal_sparks_count(
    spark: Any, demo_warehouse: Path, name: str
) -> None:
    forget_counts()
    table = icecore.load_table(f"{demo_warehouse}::{name}")
    counted = {c.snapshot_id: c for c in snapshot_rows(table)}
    spark_live = {s.snapshot_id: _count(spark, name, s.snapshot_id) for s in table.snapshots()}
    assert {i: c.rows_live for i, c in counted.items()} == spark_live
    kind = KIND_OF_TABLE[name]
    removed_by_kind = 0
    for s in table.snapshots():
        c = counted[s.snapshot_id]
        assert c.rows_added == _added_records(spark, name, s.snapshot_id)
        if s.parent_snapshot_id is not None and s.parent_snapshot_id not in spark_live:
            # An expired parent: nobody can count there; the summary may still tell.
            assert c.rows_note == "" or (c.rows_removed is None and "expired" in c.rows_note)
            continue
        assert c.rows_note == "", (s.snapshot_id, c.rows_note)
        before = spark_live[s.parent_snapshot_id] if s.parent_snapshot_id is not None else 0
        assert c.rows_removed == before + c.rows_added - spark_live[s.snapshot_id]
        parts = [c.rows_removed_by[k] for k in REMOVED_KINDS]
        assert None not in parts and sum(p or 0 for p in parts) == c.rows_removed
        removed_by_kind += c.rows_removed_by[kind] or 0
    # Some commit of the table removed rows by its delete kind, and the count says so.
    assert removed_by_kind > 0


def test_a_delete_by_position_deletes_is_counted(spark: Any, demo_warehouse: Path) -> None:
    """The DELETE of voided trips wrote position deletes: its rows removed are Spark's drop."""
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    deletes = [
        s
        for s in table.snapshots()
        if s.summary is not None
        and int(s.summary.get("added-position-delete-files") or 0) > 0
        and int(s.summary.get("deleted-data-files") or 0) == 0
        and int(s.summary.get("added-data-files") or 0) == 0
    ]
    assert deletes
    counted = {c.snapshot_id: c for c in snapshot_rows(table, deletes)}
    for s in deletes:
        assert s.parent_snapshot_id is not None
        dropped = _count(spark, "demo.trips", s.parent_snapshot_id) - _count(
            spark, "demo.trips", s.snapshot_id
        )
        assert dropped > 0
        c = counted[s.snapshot_id]
        assert c.rows_removed == dropped
        assert c.rows_removed_by["position_deletes"] == dropped
        assert c.delete_files_added == int(s.summary.get("added-delete-files") or 0)  # type: ignore[union-attr]


def test_rows_between_a_tag_and_main_are_sparks(spark: Any, demo_warehouse: Path) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    refs = {
        r.name: r.snapshot_id
        for r in spark.sql("SELECT name, snapshot_id FROM icecore.demo.trips.refs").collect()
    }
    diff = table.diff("month_end", "main")
    before, after = table.point("month_end"), table.point("main")
    rows = rows_between(table, before, after, diff.rows_added)
    live_from = _count(spark, "demo.trips", refs["month_end"])
    live_to = _count(spark, "demo.trips", refs["main"])
    assert (rows.live_from, rows.live_to, rows.note) == (live_from, live_to, "")
    data_files = "SELECT file_path, record_count FROM icecore.demo.trips.data_files VERSION AS OF"
    old = {
        r.file_path: r.record_count
        for r in spark.sql(f"{data_files} {refs['month_end']}").collect()
    }
    new = {r.file_path: r.record_count for r in spark.sql(f"{data_files} {refs['main']}").collect()}
    assert rows.added == sum(n for p, n in new.items() if p not in old)
    assert rows.removed == live_from + rows.added - live_to
    # Deletes since the tag removed rows that no data file's disappearance accounts for.
    assert rows.removed > sum(n for p, n in old.items() if p not in new)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icecore", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_cli_history_and_diff_give_the_counts(spark: Any, demo_warehouse: Path) -> None:
    result = _cli("history", f"{demo_warehouse}::demo.events_v3")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    for row in rows:
        assert row["rows_live"] == _count(spark, "demo.events_v3", row["snapshot_id"])
        assert set(row["rows_removed_by"]) == set(REMOVED_KINDS)
        assert {"rows_added", "rows_removed", "rows_note", "delete_files_added"} <= row.keys()
    assert any((r["rows_removed_by"]["deletion_vectors"] or 0) > 0 for r in rows)

    result = _cli("diff", f"{demo_warehouse}::demo.trips", "month_end", "main")
    assert result.returncode == 0, result.stderr
    diff = json.loads(result.stdout)
    refs = {
        r.name: r.snapshot_id
        for r in spark.sql("SELECT name, snapshot_id FROM icecore.demo.trips.refs").collect()
    }
    live_from = _count(spark, "demo.trips", refs["month_end"])
    live_to = _count(spark, "demo.trips", refs["main"])
    assert (diff["rows_live_from"], diff["rows_live_to"]) == (live_from, live_to)
    assert live_from + diff["rows_added"] - diff["rows_removed"] == live_to


def test_a_snapshot_is_read_once_and_the_reads_are_reported(demo_warehouse: Path) -> None:
    """Counting tells the progress listener each snapshot it reads, and reads it only once."""
    forget_counts()
    table = icecore.load_table(f"{demo_warehouse}::demo.accounts")
    heard: list[tuple[str, int, int]] = []
    with reporting(lambda what, done, total: heard.append((what, done, total))):
        first = snapshot_rows(table)
    counting = [h for h in heard if h[0] == "Counting live rows"]
    assert counting and counting[-1][1] == counting[-1][2] == len(counting)
    heard.clear()
    again = icecore.load_table(f"{demo_warehouse}::demo.accounts")  # a new Table, same uuid
    with reporting(lambda what, done, total: heard.append((what, done, total))):
        second = snapshot_rows(again)
    assert second == first
    assert not [h for h in heard if h[0] == "Counting live rows"]


def test_overviews_count_past_the_bound_is_kept_for_historys(
    spark: Any, demo_warehouse: Path
) -> None:
    """A count read whatever its size (Overview's) is the one the row counts then give."""
    forget_counts()
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    snapshot = next(s for s in table.snapshots() if live_rows(table, s, read=False)[0] is None)
    expected = _count(spark, "demo.trips", snapshot.snapshot_id)
    assert read_live_rows(table, snapshot) == expected
    again = icecore.load_table(f"{demo_warehouse}::demo.trips")  # a new Table, same uuid
    assert live_rows(again, snapshot, read=False, bound=1) == (expected, "")


def test_a_count_that_cannot_be_read_is_null_and_says_why(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A missing delete file: no number, and a reason; past the read bound, counted from deletes.

    Position deletes are counted from the delete files alone (icecore.scan.count), so the
    bound on data bytes read does not hold them back, and a missing file that must be read
    (the delete file) gives no number and says which.
    """
    forget_counts()
    catalogs = register_catalogs(spark, tmp_path_factory.mktemp("row-counts"))
    full = catalogs.spark_name("sql", "gone")
    spark.sql(
        f"CREATE TABLE {full} (id BIGINT, part INT) USING iceberg PARTITIONED BY (part) "
        "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')"
    )
    spark.sql(f"INSERT INTO {full} SELECT id, CAST(id % 2 AS INT) FROM range(100)")
    spark.sql(f"DELETE FROM {full} WHERE id % 10 = 0")
    table = catalogs.load("sql", "gone")
    first, deleted = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    live_then = _spark_count_of(spark, full, first.snapshot_id)
    past_bound = snapshot_rows(table, bound=1)
    assert past_bound[0].rows_live == live_then  # from the summary: nothing to read
    # No data file need be read: the bound on data bytes does not apply.
    assert past_bound[1].rows_live == _spark_count_of(spark, full, deleted.snapshot_id)
    assert past_bound[1].rows_note == ""
    forget_counts()

    raw = str(table.inspect("delete_files").column("file_path").to_pylist()[0])
    victim = Path(raw.split(":", 1)[1] if raw.startswith("file:") else raw)
    victim.unlink()
    gone = snapshot_rows(catalogs.load("sql", "gone"))
    assert gone[0].rows_live == live_then
    assert gone[1].rows_live is None and gone[1].rows_removed is None
    assert gone[1].rows_note.startswith("it cannot be read: ")
    assert victim.name in gone[1].rows_note
    assert deleted.snapshot_id == gone[1].snapshot_id


def _spark_count_of(spark: Any, full: str, snapshot_id: int) -> int:
    return int(
        spark.sql(f"SELECT count(*) FROM {full} VERSION AS OF {snapshot_id}").collect()[0][0]
    )


@pytest.mark.spark
def test_a_count_that_must_read_past_the_bound_is_null_and_says_why(
    demo_warehouse: Path,
) -> None:
    """Equality deletes match values: counting reads the data files, held to the bound."""
    forget_counts()
    table = icecore.load_table(f"{demo_warehouse}::demo.accounts")
    equality = {
        s.snapshot_id
        for s in table.snapshots()
        if int((s.summary or {}).get("total-equality-deletes", "0")) > 0
    }
    with_equality = [r for r in snapshot_rows(table, bound=1) if r.snapshot_id in equality]
    assert with_equality
    assert all(r.rows_live is None for r in with_equality)
    assert all("more than the 1 B a count here may read" in r.rows_note for r in with_equality)
    forget_counts()
