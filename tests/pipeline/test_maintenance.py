"""Maintenance jobs through real Spark, checked by icecore and by Spark.

Jobs run on copies of fixture tables (``tests/ui/copies.py``) or on tables made here through
Spark, never on the shared warehouse. Rewrites are run on a SQL-catalog copy (they add files
into the copy's folder and delete none); expiry and orphan removal delete files, so they run
on tables whose every file lives in this module's private warehouse. What each job should do
comes from icecore's estimate; what it did comes from Spark's procedure result and from
Spark reading the table afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore import health
from icecore.health import Status
from icecore.layout import snapshot_files
from icecore.maintenance import EstimateValue, Job, orphan_files, reach
from icecore.table import Table
from pipeline.maintenance import parser, recommendation, run_job
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.ui.copies import copy_sql_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def evo(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    return register_catalogs(spark, tmp_path_factory.mktemp("maintenance"))


def args(job: Job, table: str, *options: str) -> argparse.Namespace:
    return parser().parse_args([str(job), table, *options])


def content(table: Table) -> pa.Table:
    """Every live row read by icecore, in a fixed order (the content hash of the table)."""
    rows = table.scan().plan().to_arrow()
    keys = [f.name for f in rows.schema if not pa.types.is_nested(f.type)]
    return rows.sort_by([(name, "ascending") for name in keys])


def spark_digest(spark: Any, name: str) -> tuple[int, int]:
    """Spark's count and order-free content hash of the table's rows."""
    row = spark.sql(f"SELECT count(*), sum(xxhash64(*)) FROM {name}").collect()[0]
    return int(row[0]), int(row[1] or 0)


def counts(table: Table) -> health.Totals:
    snapshot = table.metadata.current_snapshot()
    manifests = table.manifests(snapshot) if snapshot else []
    return health.totals(snapshot, manifests, snapshot_files(table, snapshot))


def estimate(job: Job, table: Table, args: argparse.Namespace) -> dict[str, EstimateValue]:
    """The job's estimate as the pipeline makes it (its recommendation's, metadata alone)."""
    return dict(recommendation(job, table, args).estimate)


def test_rewrites_keep_rows_and_reduce_files_as_estimated(
    evo: EvoCatalogs, demo_warehouse: Path, spark: Any
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    arg = f"{evo.sql_uri}::{copy.table}"
    lines: list[str] = []
    table = icecore.load_table(arg)
    rows = content(table)
    digest = spark_digest(spark, copy.spark_name)

    # The untouched demo trips: the position-delete estimate is Spark's own rewrite, and it
    # is recommended only when Spark's rewrite leaves fewer delete files.
    job = Job.REWRITE_POSITION_DELETE_FILES
    found = recommendation(job, table, args(job, arg))
    before = counts(table)
    done = spark.sql(
        f"CALL {evo.sql}.system.rewrite_position_delete_files(table => '{copy.table}')"
    ).collect()[0]
    after = counts(icecore.load_table(arg))
    print(found, done)
    assert (
        int(done["rewritten_delete_files_count"]) == found.estimate["rewritten_delete_files_count"]
    )
    low, high = found.estimate["delete_files_after"]
    assert low <= after.position_delete_files <= high, (low, after, high)
    if found.status is Status.WARN:
        assert after.position_delete_files < before.position_delete_files
    assert spark_digest(spark, copy.spark_name) == digest

    for job, rewritten_key, added_key in (
        (Job.REWRITE_DATA_FILES, "rewritten_data_files_count", "added_data_files_count"),
        (
            Job.REWRITE_POSITION_DELETE_FILES,
            "rewritten_delete_files_count",
            "added_delete_files_count",
        ),
        (Job.REWRITE_MANIFESTS, "rewritten_manifests_count", "added_manifests_count"),
    ):
        before_table = icecore.load_table(arg)
        before = counts(before_table)
        guess = estimate(job, before_table, args(job, arg))
        out = run_job(spark, job, arg, args(job, arg), lines.append)
        after_table = icecore.load_table(arg)
        after = counts(after_table)
        done = out["result"]
        print(job, guess, done)
        # What Spark did is what icecore estimated from metadata alone.
        rewritten, added = int(done[rewritten_key]), int(done[added_key])
        guessed = [v for k, v in guess.items() if k.startswith("rewritten_")][0]
        assert rewritten == guessed, (job, guess, done)
        assert out["before"]["metadata_location"] == before_table.metadata_location
        if rewritten:
            assert out["after"]["snapshot_id"] != out["before"]["snapshot_id"]
        # Rows unchanged, as icecore and as Spark read them.
        assert content(after_table).equals(rows)
        assert spark_digest(spark, copy.spark_name) == digest
        if job is Job.REWRITE_DATA_FILES:
            assert rewritten > 0
            # Files moved into the new spec split by row values: the estimate brackets it.
            low, high = guess["data_files_after"]
            assert low <= added <= high, (low, added, high)
            assert added >= guess["added_files_count"]
            assert after.data_files == before.data_files - rewritten + added
            assert before.delete_files - after.delete_files == guess["removed_delete_files_count"]
        if job is Job.REWRITE_POSITION_DELETE_FILES:
            low, high = guess["delete_files_after"]
            assert low <= after.position_delete_files <= high, (low, after, high)
        if job is Job.REWRITE_MANIFESTS:
            assert added == guess["added_manifests_count"]
            assert after.data_manifests == before.data_manifests - rewritten + added
    assert any(line.startswith("running CALL") for line in lines)


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


@pytest.fixture(scope="module")
def history_table(evo: EvoCatalogs) -> tuple[str, str]:
    """A table with main, a tag on an old snapshot and a branch with its own commits."""
    name = "kept_history"
    full = evo.spark_name("sql", name)
    evo.create("sql", name, "(id bigint, v string) USING iceberg", "(1, 'a')", "(2, 'b')")
    spark = evo.spark
    spark.sql(f"ALTER TABLE {full} CREATE TAG keep_me")
    spark.sql(f"INSERT INTO {full} VALUES (3, 'c')")
    spark.sql(f"ALTER TABLE {full} CREATE BRANCH side WITH SNAPSHOT RETENTION 2 SNAPSHOTS")
    spark.sql(f"INSERT INTO {full}.branch_side VALUES (10, 'x')")
    spark.sql(f"INSERT INTO {full}.branch_side VALUES (11, 'y')")
    spark.sql(f"INSERT INTO {full}.branch_side VALUES (12, 'z')")
    spark.sql(f"INSERT INTO {full} VALUES (4, 'd')")
    spark.sql(f"DELETE FROM {full} WHERE id = 1")
    spark.sql(f"INSERT INTO {full} VALUES (6, 'f')")
    spark.sql(f"DELETE FROM {full} WHERE id = 6")
    spark.sql(f"INSERT INTO {full} VALUES (5, 'e')")
    return evo.table_arg("sql", name), full


def test_expire_snapshots_keeps_what_the_retention_rules_keep(
    evo: EvoCatalogs, spark: Any, history_table: tuple[str, str]
) -> None:
    arg, full = history_table
    table = icecore.load_table(arg)
    time.sleep(0.05)
    now = int(time.time() * 1000)
    options = ("--older-than", _iso(now), "--retain-last", "2")
    expected_gone = set(
        health.snapshots_to_expire(table.metadata, now, older_than_ms=now, retain_last=2)
    )
    guess = estimate(Job.EXPIRE_SNAPSHOTS, table, args(Job.EXPIRE_SNAPSHOTS, arg, *options))
    rows = content(table)
    digest = spark_digest(spark, full)
    refs = {name: ref.snapshot_id for name, ref in table.refs().items()}
    out = run_job(
        spark, Job.EXPIRE_SNAPSHOTS, arg, args(Job.EXPIRE_SNAPSHOTS, arg, *options), print
    )
    done = out["result"]
    # Spark is the oracle: the snapshots it kept are those the spec's rules keep.
    kept = {int(r[0]) for r in spark.sql(f"SELECT snapshot_id FROM {full}.snapshots").collect()}
    before_ids = {s.snapshot_id for s in table.metadata.snapshots}
    assert expected_gone, "the scenario must expire something"
    assert kept == before_ids - expected_gone
    assert set(refs.values()) <= kept
    after = icecore.load_table(arg)
    assert {s.snapshot_id for s in after.metadata.snapshots} == kept
    for key in (
        "deleted_data_files_count",
        "deleted_position_delete_files_count",
        "deleted_manifest_files_count",
        "deleted_manifest_lists_count",
    ):
        assert int(done[key]) == guess[key], key
    assert guess["expired_snapshots_count"] == len(expected_gone)
    assert int(done["deleted_data_files_count"]) > 0
    # Rows at every ref unchanged; everything reachable still exists.
    assert content(after).equals(rows)
    assert spark_digest(spark, full) == digest
    for name, snapshot_id in refs.items():
        assert after.refs()[name].snapshot_id == snapshot_id
        spark.sql(f"SELECT count(*) FROM {full} VERSION AS OF {snapshot_id}").collect()
    everything = reach(after, after.metadata.snapshots)
    assert all(Path(p).exists() for p in everything.files)


def test_orphans_are_found_listed_and_removed_only_when_unreachable(
    evo: EvoCatalogs, spark: Any, history_table: tuple[str, str]
) -> None:
    arg, full = history_table
    table = icecore.load_table(arg)
    data = Path(table.metadata.location) / "data"
    stray, young = data / "stray-orphan.parquet", data / "young-orphan.parquet"
    stray.write_bytes(b"not reachable")
    young.write_bytes(b"written just now")
    # Spark refuses an older_than within the last 24 hours: the stray file is made older.
    old = time.time() - 2 * 24 * 3600
    os.utime(stray, (old, old))
    cutoff = int((time.time() - 25 * 3600) * 1000)
    options = ("--older-than", _iso(cutoff))
    found = orphan_files(table, cutoff)
    assert [Path(f.path) for f in found.removable] == [stray]
    assert Path(young) in [Path(f.path) for f in found.young]
    guess = estimate(Job.REMOVE_ORPHAN_FILES, table, args(Job.REMOVE_ORPHAN_FILES, arg, *options))
    assert guess["orphan_files_count"] == 1
    rows = content(table)

    dry = run_job(
        spark,
        Job.REMOVE_ORPHAN_FILES,
        arg,
        args(Job.REMOVE_ORPHAN_FILES, arg, *options, "--dry-run"),
        print,
    )
    assert [p.removeprefix("file:") for p in dry["result"]["orphan_file_location"]] == [str(stray)]
    assert stray.exists()
    real = run_job(
        spark, Job.REMOVE_ORPHAN_FILES, arg, args(Job.REMOVE_ORPHAN_FILES, arg, *options), print
    )
    assert real["result"]["orphan_files_count"] == 1
    assert not stray.exists() and young.exists()
    after = icecore.load_table(arg)
    assert after.metadata_location == table.metadata_location
    assert content(after).equals(rows)
    assert spark_digest(spark, full)[0] == rows.num_rows
    everything = reach(after, after.metadata.snapshots)
    assert all(Path(p).exists() for p in everything.files)
    young.unlink()


def test_position_deletes_and_sort_on_a_filesystem_table(evo: EvoCatalogs, spark: Any) -> None:
    """A Hadoop-layout table with many position delete files in one partition.

    The delete rewrite merges them as estimated, then a sort rewrite keeps every row.
    """
    name = "deletes_fs"
    full = evo.spark_name("fs", name)
    evo.create(
        "fs",
        name,
        "(id bigint, zone string) USING iceberg PARTITIONED BY (zone) TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.delete.granularity'='partition')",
        ", ".join(f"({i}, 'a')" for i in range(12)),  # one data file in zone a
        *(f"({i + 100}, 'a'), ({i + 200}, 'b')" for i in range(6)),
    )
    spark.sql(f"ALTER TABLE {full} WRITE ORDERED BY id DESC")
    for i in range(6):
        spark.sql(f"DELETE FROM {full} WHERE id = {i}")  # six delete files for one data file
    arg = evo.table_arg("fs", name)
    rows = content(icecore.load_table(arg))
    digest = spark_digest(spark, full)
    assert digest[0] == 18

    before_table = icecore.load_table(arg)
    before = counts(before_table)
    assert before.delete_files == 6
    job = Job.REWRITE_POSITION_DELETE_FILES
    guess = estimate(job, before_table, args(job, arg))
    out = run_job(spark, job, arg, args(job, arg), lambda line: None)
    done = out["result"]
    after = counts(icecore.load_table(arg))
    guessed = [v for k, v in guess.items() if k.startswith("rewritten_")][0]
    assert int(done["rewritten_delete_files_count"]) == guessed > 0
    assert after.delete_files == before.delete_files - int(
        done["rewritten_delete_files_count"]
    ) + int(done["added_delete_files_count"])
    assert after.delete_files < before.delete_files
    low, high = guess["delete_files_after"]
    assert low <= after.position_delete_files <= high < before.position_delete_files
    assert content(icecore.load_table(arg)).equals(rows)
    assert spark_digest(spark, full) == digest

    job = Job.REWRITE_DATA_FILES
    only_b = args(job, arg, "--filter", "zone = 'b'")
    guess = estimate(job, icecore.load_table(arg), only_b)
    unfiltered = estimate(job, icecore.load_table(arg), args(job, arg))
    out = run_job(spark, job, arg, only_b, lambda line: None)
    assert int(out["result"]["rewritten_data_files_count"]) == guess["rewritten_files_count"] == 6
    assert unfiltered["rewritten_files_count"] > guess["rewritten_files_count"]
    assert content(icecore.load_table(arg)).equals(rows)

    sort_args = args(job, arg, "--strategy", "sort")
    out = run_job(spark, job, arg, sort_args, lambda line: None)
    assert int(out["result"]["rewritten_data_files_count"]) > 0
    assert out["after"]["snapshot_id"] != out["before"]["snapshot_id"]
    sorted_table = icecore.load_table(arg)
    assert content(sorted_table).equals(rows)
    assert spark_digest(spark, full) == digest
    assert counts(sorted_table).data_files < before.data_files
