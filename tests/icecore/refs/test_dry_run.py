"""The dry run of ref operations, against Spark on copies of the Spark-written fixture tables.

Each test builds the metadata an operation would commit with icecore's metadata builder
(``set-snapshot-ref``, ``remove-snapshot-ref``), asks for the dry run, and checks it against
what Spark's metadata tables say (snapshots and their parents, refs, live data and delete
files at each snapshot) and, where the operation is then committed, against what Spark reads
afterwards. Expected values come from Spark or from the demo story by hand (docstrings say
how), never from the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.metadata import SnapshotRef, SnapshotRefType, TableMetadata
from icecore.metadata.builder import MetadataBuilder, encode_metadata
from icecore.metadata.updates import MetadataUpdate, RemoveSnapshotRef, SetSnapshotRef
from icecore.refs.dry_run import Change, Relation, Retention, dry_run
from icecore.table import Table
from tests.icecore.evolution.conftest import EvoCatalogs
from tests.ui.copies import Copy, copy_hadoop_table, copy_sql_table

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000


# What Spark says -----------------------------------------------------------------------------


def spark_parents(spark: Any, name: str) -> dict[int, int | None]:
    """Each snapshot's parent, from Spark's ``snapshots`` table."""
    rows = spark.sql(f"SELECT snapshot_id, parent_id FROM {name}.snapshots").collect()
    return {r.snapshot_id: r.parent_id for r in rows}


def spark_line(parents: dict[int, int | None], head: int) -> list[int]:
    """``head`` and its ancestors still in the table, newest first (walked here, by hand)."""
    line: list[int] = []
    current: int | None = head
    while current is not None and current in parents:
        line.append(current)
        current = parents[current]
    return line


def spark_refs(spark: Any, name: str) -> dict[str, tuple[str, int]]:
    """Refs by name: (type, snapshot id), from Spark's ``refs`` table."""
    rows = spark.sql(f"SELECT name, type, snapshot_id FROM {name}.refs").collect()
    return {r.name: (r.type, r.snapshot_id) for r in rows}


def spark_files(spark: Any, name: str, snapshot_id: int, content: str) -> dict[str, int]:
    """Live data or delete files at a snapshot: path -> record count."""
    rows = spark.sql(
        f"SELECT file_path, record_count FROM {name}.{content} VERSION AS OF {snapshot_id}"
    ).collect()
    return {r.file_path: r.record_count for r in rows}


def spark_newest_spec(spark: Any, name: str, snapshot_id: int) -> int:
    """The highest partition spec id among the live data files at a snapshot."""
    rows = spark.sql(
        f"SELECT max(spec_id) FROM {name}.data_files VERSION AS OF {snapshot_id}"
    ).collect()
    return int(rows[0][0])


def spark_count(spark: Any, name: str, snapshot_id: int | None = None) -> int:
    """``count(*)`` at a snapshot (or the current one): rows after deletes."""
    version = f" VERSION AS OF {snapshot_id}" if snapshot_id is not None else ""
    return int(spark.sql(f"SELECT count(*) FROM {name}{version}").collect()[0][0])


def spark_last_commit_ms(spark: Any, name: str) -> int:
    """The newest snapshot's commit time, in epoch ms."""
    (when,) = spark.sql(f"SELECT max(committed_at) FROM {name}.snapshots").collect()[0]
    assert isinstance(when, dt.datetime)
    return int(when.timestamp() * 1000)  # pyspark gives local time, as .timestamp() takes it


# Building what an operation would commit -------------------------------------------------------


def load(cats: EvoCatalogs, copy: Copy) -> Table:
    if (copy.folder / "metadata" / "version-hint.text").exists():
        return icecore.load_table(str(copy.folder))
    return icecore.load_table(f"{cats.sql_uri}::{copy.table}")


def after(t: Table, *updates: MetadataUpdate) -> TableMetadata:
    return MetadataBuilder(t.metadata).apply_all(updates).build(t.metadata_location)


def commit(t: Table, new: TableMetadata) -> None:
    assert t.catalog is not None
    t.catalog.commit_metadata(t.identifier, t.metadata_location, new, encode_metadata(new))


def far_future(spark: Any, name: str) -> int:
    """Ten days after the last commit: past the 5-day default max snapshot age."""
    return spark_last_commit_ms(spark, name) + 10 * DAY_MS


# trips: v2, merge-on-read, schema and partition evolution, tag month_end, branch audit -----


@pytest.fixture
def trips(cats: EvoCatalogs, demo_warehouse: Path) -> Copy:
    return copy_sql_table(cats, demo_warehouse, "trips")


def test_rollback_of_main_past_schema_and_spec_changes(
    spark: Any, cats: EvoCatalogs, trips: Copy
) -> None:
    """Main rolled back to the month_end tag, then committed: Spark reads what the dry run said.

    By the story, month_end tags the third daily append (spec 0: day + bucket, schema 0),
    which expire_snapshots kept as main's oldest ancestor; main's head is the last append
    with spec 2 (bucket + hour + vendor_id) after the schema evolution. The audit branch
    starts at main's head, so no snapshot becomes unreachable, and ten days on (keeping one
    snapshot per branch) only main's old head newly expires: audit keeps only its own head.
    """
    refs = spark_refs(spark, trips.spark_name)
    main, audit, month_end = refs["main"][1], refs["audit"][1], refs["month_end"][1]
    parents = spark_parents(spark, trips.spark_name)
    assert month_end in spark_line(parents, main)
    assert spark_files(spark, trips.spark_name, month_end, "delete_files") == {}
    t = load(cats, trips)
    location = t.metadata_location

    run = dry_run(
        t,
        after(t, SetSnapshotRef("main", SnapshotRef(month_end))),
        now_ms=far_future(spark, trips.spark_name),
    )

    assert [
        (m.name, m.kind, m.change, m.from_snapshot_id, m.to_snapshot_id) for m in run.moves
    ] == [("main", "branch", Change.MOVED, main, month_end)]
    (b,) = run.branches
    assert (b.relation, b.common_ancestor_id) == (Relation.REWIND, month_end)
    assert b.rows_before == sum(spark_files(spark, trips.spark_name, main, "data_files").values())
    assert b.rows_after == spark_count(spark, trips.spark_name, month_end)
    assert b.delete_records_after == 0
    assert b.diff is not None
    head_files = spark_files(spark, trips.spark_name, main, "data_files")
    target_files = spark_files(spark, trips.spark_name, month_end, "data_files")
    assert {f.file_path for f in b.diff.data_files_removed} == set(head_files) - set(target_files)
    assert {f.file_path for f in b.diff.data_files_added} == set(target_files) - set(head_files)
    # The story's schema evolution, undone: from the head's schema to month_end's.
    assert {(c.kind, c.name, c.before, c.after) for c in b.diff.schema_changes} == {
        ("type", "passenger_count", "long", "int"),
        ("renamed", "tip", "tip_amount", "tip"),
        ("added", "store_and_fwd", "", "string"),
        ("removed", "congestion_fee", "double", ""),
    }
    schema_warning, spec_warning = run.warnings
    assert "schema change" in schema_warning and "congestion_fee" in schema_warning
    assert "partition spec change" in spec_warning
    newest = spark_newest_spec(spark, trips.spark_name, main)
    oldest = spark_newest_spec(spark, trips.spark_name, month_end)
    assert f"spec {newest} (" in spec_warning and f"spec {oldest} (" in spec_warning
    assert "vendor_id" in spec_warning and "pickup_ts_day" in spec_warning
    assert run.unreachable == ()
    assert run.would_expire == (main,)
    assert run.kept_from_expiry == ()
    assert main in spark_line(parents, audit)  # audit still reaches main's old head
    json.dumps(run.to_json())
    assert not any("not in its history" in line for line in run.lines())
    assert load(cats, trips).metadata_location == location  # a dry run writes nothing

    commit(t, after(t, SetSnapshotRef("main", SnapshotRef(month_end))))
    assert spark_refs(spark, trips.spark_name)["main"] == ("BRANCH", month_end)
    assert spark_count(spark, trips.spark_name) == b.rows_after

    # A Spark append on the rolled-back main forks it from audit: moving main to audit's
    # head now leaves main's history, and their last common snapshot is month_end.
    spark.sql(f"INSERT INTO {trips.spark_name} SELECT * FROM {trips.spark_name} LIMIT 3")
    forked = spark_refs(spark, trips.spark_name)["main"][1]
    t = load(cats, trips)
    run = dry_run(t, after(t, SetSnapshotRef("main", SnapshotRef(audit))))
    (b,) = run.branches
    assert (b.relation, b.common_ancestor_id) == (Relation.UNRELATED, month_end)
    assert b.from_snapshot_id == forked and b.leaves_history
    assert any(
        "main will point at a snapshot that is not in its history" in w for w in run.warnings
    )
    assert "  main will point at a snapshot that is not in its history" in run.lines()
    assert b.rows_after == sum(spark_files(spark, trips.spark_name, audit, "data_files").values())


def test_fast_forward_main_to_audit(spark: Any, cats: EvoCatalogs, trips: Copy) -> None:
    """Main moved to audit's head: forward, the diff is Spark's file difference, no warning.

    Ten days on, main's old head is no longer any branch's newest snapshot: it newly expires.
    """
    refs = spark_refs(spark, trips.spark_name)
    main, audit = refs["main"][1], refs["audit"][1]
    t = load(cats, trips)
    run = dry_run(
        t,
        after(t, SetSnapshotRef("main", SnapshotRef(audit))),
        now_ms=far_future(spark, trips.spark_name),
    )
    (b,) = run.branches
    assert b.relation == Relation.FORWARD and not b.leaves_history
    old = spark_files(spark, trips.spark_name, main, "data_files")
    new = spark_files(spark, trips.spark_name, audit, "data_files")
    assert b.diff is not None
    assert {f.file_path for f in b.diff.data_files_added} == set(new) - set(old)
    assert {f.file_path for f in b.diff.data_files_removed} == set(old) - set(new)
    assert b.rows_after == sum(new.values())
    deletes = spark_files(spark, trips.spark_name, audit, "delete_files")
    assert b.delete_records_after == sum(deletes.values())
    assert run.warnings == ()
    assert run.would_expire == (main,)
    assert run.unreachable == ()


def test_dropping_audit_leaves_its_snapshots_unreachable(
    spark: Any, cats: EvoCatalogs, trips: Copy
) -> None:
    """Audit's own commits (not ancestors of main, by Spark's parents) lose their last ref.

    Ten days on, audit's older commit expires already (audit keeps one snapshot); dropping
    the branch adds its head.
    """
    refs = spark_refs(spark, trips.spark_name)
    main, audit = refs["main"][1], refs["audit"][1]
    parents = spark_parents(spark, trips.spark_name)
    own = [s for s in spark_line(parents, audit) if s not in spark_line(parents, main)]
    assert len(own) == 2  # the story: a DELETE and an INSERT on the branch
    t = load(cats, trips)
    run = dry_run(
        t, after(t, RemoveSnapshotRef("audit")), now_ms=far_future(spark, trips.spark_name)
    )
    assert [(m.name, m.change, m.from_snapshot_id, m.to_snapshot_id) for m in run.moves] == [
        ("audit", Change.REMOVED, audit, None)
    ]
    assert run.branches == ()
    assert set(run.unreachable) == set(own)
    assert run.would_expire == (audit,)
    assert run.lines()[1] == f"  drop branch audit (at snapshot {audit})"


def test_new_refs_rename_and_retention(spark: Any, cats: EvoCatalogs, trips: Copy) -> None:
    """A tag and a branch created with retention protect snapshots; a rename is one move.

    The snapshot is main's parent: ten days on it and its ancestors would expire (main keeps
    one snapshot), until a tag keeps it and a branch keeping three keeps two more.
    """
    refs = spark_refs(spark, trips.spark_name)
    main, audit = refs["main"][1], refs["audit"][1]
    parent = spark_parents(spark, trips.spark_name)[main]
    assert parent is not None
    t = load(cats, trips)
    tag = SnapshotRef(parent, SnapshotRefType.TAG, max_ref_age_ms=7 * DAY_MS)
    branch = SnapshotRef(parent, min_snapshots_to_keep=3, max_snapshot_age_ms=DAY_MS)
    run = dry_run(
        t,
        after(
            t,
            SetSnapshotRef("golden", tag),
            SetSnapshotRef("fix", branch),
            RemoveSnapshotRef("audit"),
            SetSnapshotRef("audit_2024", t.metadata.refs["audit"]),
        ),
        now_ms=far_future(spark, trips.spark_name),
    )
    by_name = {m.name: m for m in run.moves}
    assert set(by_name) == {"golden", "fix", "audit_2024"}
    assert by_name["golden"].change == Change.CREATED and by_name["golden"].kind == "tag"
    assert by_name["golden"].retention_after == Retention(None, None, 7 * DAY_MS)
    assert by_name["fix"].retention_after == Retention(3, DAY_MS, None)
    renamed = by_name["audit_2024"]
    assert (renamed.change, renamed.renamed_from) == (Change.RENAMED, "audit")
    assert (renamed.from_snapshot_id, renamed.to_snapshot_id) == (audit, audit)
    assert run.branches == () and run.unreachable == () and run.would_expire == ()
    # The tag keeps its snapshot; the branch keeps it and two ancestors (min 3 to keep).
    kept = spark_line(spark_parents(spark, trips.spark_name), parent)[:3]
    assert set(run.kept_from_expiry) == set(kept)
    exported = {r["name"]: r for r in run.to_json()["refs"]}
    assert exported["fix"]["retention_after"] == {
        "min-snapshots-to-keep": 3,
        "max-snapshot-age-ms": DAY_MS,
        "max-ref-age-ms": None,
    }
    assert "rename branch audit to audit_2024" in run.text()


def test_no_change_is_said_so(spark: Any, cats: EvoCatalogs, trips: Copy) -> None:
    t = load(cats, trips)
    refs = spark_refs(spark, trips.spark_name)
    run = dry_run(t, after(t, SetSnapshotRef("main", SnapshotRef(refs["main"][1]))))
    assert run.is_noop
    assert run.lines() == ["Nothing would change: every ref stays where it is."]


# v3 with deletion vectors, v1 in a filesystem catalog ------------------------------------------


def test_v3_rollback_to_before_the_deletion_vectors(
    spark: Any, cats: EvoCatalogs, demo_warehouse: Path
) -> None:
    """events_v3 back to its first append (no delete file yet): Spark's count is rows after."""
    copy = copy_sql_table(cats, demo_warehouse, "events_v3")
    parents = spark_parents(spark, copy.spark_name)
    main = spark_refs(spark, copy.spark_name)["main"][1]
    first = spark_line(parents, main)[-1]
    assert spark_files(spark, copy.spark_name, first, "delete_files") == {}
    t = load(cats, copy)
    run = dry_run(t, after(t, SetSnapshotRef("main", SnapshotRef(first))))
    (b,) = run.branches
    assert b.relation == Relation.REWIND
    assert b.rows_after == spark_count(spark, copy.spark_name, first)
    assert b.delete_records_after == 0
    assert b.diff is not None
    dvs = spark_files(spark, copy.spark_name, main, "delete_files")
    assert dvs
    assert {f.file_path for f in b.diff.delete_files_removed} == set(dvs)
    assert run.warnings == ()  # no schema or spec change in events_v3's story


def test_v1_rollback_past_a_partition_spec_change(
    spark: Any, cats: EvoCatalogs, demo_warehouse: Path
) -> None:
    """customers_v1 back to its first insert: before bucket became void and year was added.

    The story: spec 0 is (country, bucket[4](customer_id)), spec 1 (country, void, year).
    The table deletes copy-on-write, so Spark's count equals the record counts.
    """
    copy = copy_hadoop_table(cats, demo_warehouse, "customers_v1")
    parents = spark_parents(spark, copy.spark_name)
    main = spark_refs(spark, copy.spark_name)["main"][1]
    first = spark_line(parents, main)[-1]
    t = load(cats, copy)
    new = after(t, SetSnapshotRef("main", SnapshotRef(first)))
    run = dry_run(t, new)
    (b,) = run.branches
    assert b.rows_before == spark_count(spark, copy.spark_name)
    assert b.rows_after == spark_count(spark, copy.spark_name, first)
    (warning,) = run.warnings
    assert "partition spec change" in warning
    newest = spark_newest_spec(spark, copy.spark_name, main)
    oldest = spark_newest_spec(spark, copy.spark_name, first)
    assert f"spec {newest} (" in warning and f"spec {oldest} (" in warning
    assert newest != oldest and "signup_date_year" in warning

    commit(t, new)
    assert spark_count(spark, copy.spark_name) == b.rows_after
