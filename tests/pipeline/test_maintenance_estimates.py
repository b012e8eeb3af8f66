"""Maintenance estimates held to Spark: files a rewrite writes, over-partitioning, orphans.

Spark is the oracle: a rewrite's estimate is made before Spark's own ``rewrite_data_files``
runs and must bracket the data files it wrote; the over-partitioning evidence is recounted
from Spark's ``files`` metadata table; the orphan list must equal Spark's
``remove_orphan_files(dry_run => true)``. Everything runs on copies or on tables made here.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore import health
from icecore.evolution.change_text import apply_spec_change
from icecore.health import Status, format_bytes
from icecore.layout import snapshot_files
from icecore.maintenance import Job, orphan_files, recommendations
from icecore.table import Table
from pipeline.maintenance import parser, recommendation
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.pipeline.test_demo_cli import one_sentence
from tests.pipeline.test_maintenance_cli import run
from tests.ui.copies import copy_hadoop_table, copy_sql_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def evo(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    return register_catalogs(spark, tmp_path_factory.mktemp("maintenance-estimates"))


def _rewrite(spark: Any, catalog: str, name: str) -> dict[str, Any]:
    """Spark's own rewrite_data_files, with the options the maintenance job passes."""
    row = spark.sql(
        f"CALL {catalog}.system.rewrite_data_files(table => '{name}', strategy => 'binpack', "
        "options => map('remove-dangling-deletes', 'true'))"
    ).collect()[0]
    return dict(row.asDict())


def _data_files(spark: Any, full: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {full}.data_files").collect()[0][0])


def test_compaction_of_one_partition_stays_recommended_and_its_estimate_brackets_spark(
    evo: EvoCatalogs, spark: Any
) -> None:
    name = "one_partition_small_files"
    full = evo.spark_name("sql", name)
    evo.create(
        "sql",
        name,
        "(id bigint, zone string) USING iceberg PARTITIONED BY (zone)",
        *(f"({i}, 'a'), ({i + 100}, 'a')" for i in range(8)),
    )
    arg = evo.table_arg("sql", name)
    table = icecore.load_table(arg)
    found = recommendation(
        Job.REWRITE_DATA_FILES, table, parser().parse_args([str(Job.REWRITE_DATA_FILES), arg])
    )
    low, high = found.estimate["data_files_after"]
    assert found.status is Status.WARN and found.force_reason is None
    assert found.estimate["rewritten_files_count"] == 8
    before = _data_files(spark, full)
    done = _rewrite(spark, evo.sql, f"db.{name}")
    written = int(done["added_data_files_count"])
    assert int(done["rewritten_data_files_count"]) == 8
    assert low <= written <= high, (low, written, high)
    assert _data_files(spark, full) == before - 8 + written < before


def test_rewrite_of_an_over_partitioned_table_is_bracketed_and_needs_force(
    evo: EvoCatalogs, demo_warehouse: Path, spark: Any
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    arg = f"{evo.sql_uri}::{copy.table}"
    table = icecore.load_table(arg)
    job_args = parser().parse_args([str(Job.REWRITE_DATA_FILES), arg])
    found = recommendation(Job.REWRITE_DATA_FILES, table, job_args)
    low, high = found.estimate["data_files_after"]
    removed = found.estimate["rewritten_files_count"]
    print(found.estimate)
    # The demo's trips fan out: the estimate says the table may grow, so it is no
    # recommendation, and the CLI refuses it in one sentence unless forced.
    assert found.force_reason is not None and high > removed
    assert found.status is not Status.WARN
    refused = run(str(Job.REWRITE_DATA_FILES), arg)
    assert refused.returncode == 1, refused.stderr
    sentence = one_sentence(refused.stderr)
    assert "--force" in sentence and f"{removed:,}" in sentence
    assert icecore.load_table(arg).metadata_location == table.metadata_location
    dry = run(str(Job.REWRITE_DATA_FILES), arg, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout.strip().splitlines()[-1])["estimate"]["data_files_after"] == [
        low,
        high,
    ]

    # With --force the job runs: Spark's rewrite_data_files, whose counts the estimate
    # brackets. (One rewrite: the job's own result is Spark's procedure row; a second
    # rewrite in this session on another copy cost a minute and checked the same.)
    before = _data_files(spark, copy.spark_name)
    forced = run(str(Job.REWRITE_DATA_FILES), arg, "--force")
    assert forced.returncode == 0, forced.stderr
    done = json.loads(forced.stdout.strip().splitlines()[-1])["result"]
    written = int(done["added_data_files_count"])
    print({"low": low, "written": written, "high": high, "removed": removed})
    assert int(done["rewritten_data_files_count"]) == removed
    assert low <= written <= high, (low, written, high)
    assert _data_files(spark, copy.spark_name) == before - removed + written


def test_over_partitioning_is_a_finding_with_spark_s_numbers_and_a_coarser_spec(
    evo: EvoCatalogs, demo_warehouse: Path, spark: Any
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    table = icecore.load_table(f"{evo.sql_uri}::{copy.table}")
    snapshot = table.metadata.current_snapshot()
    files = snapshot_files(table, snapshot)
    finding = health.over_partitioning(table.metadata, files)
    assert finding.status is Status.WARN and finding.spec_changes
    evidence = dict(finding.evidence)
    # The small-files finding of the same snapshot does not promise faster reads from the
    # compaction the over-partitioning finding says cannot help.
    t = health.totals(snapshot, table.manifests(snapshot), files)
    small = next(
        f for f in health.findings(table.metadata, [], files, t) if f.check == "small_files"
    )
    assert small.status is Status.WARN
    assert "speeds up reads" not in small.detail and "coarsen the spec first" in small.detail

    spec = table.metadata.default_spec()
    rows = spark.sql(
        f"SELECT file_size_in_bytes, record_count, partition FROM {copy.spark_name}.files "
        f"WHERE content = 0 AND spec_id = {spec.spec_id}"
    ).collect()
    names = [pf.name for pf in spec.fields]
    partitions: dict[tuple[Any, ...], list[int]] = {}
    for r in rows:
        key = tuple(r["partition"][n] for n in names)
        partitions.setdefault(key, [0, 0])
        partitions[key][0] += int(r["file_size_in_bytes"])
        partitions[key][1] += int(r["record_count"])
    assert evidence["data files of the spec"] == len(rows)
    assert evidence["partitions of the spec"] == len(partitions)
    assert evidence["median data file"] == format_bytes(
        statistics.median(int(r["file_size_in_bytes"]) for r in rows)
    )
    assert evidence["rows per data file (median)"] == statistics.median(
        int(r["record_count"]) for r in rows
    )
    assert evidence["median partition size"] == format_bytes(
        statistics.median(v[0] for v in partitions.values())
    )
    assert evidence["rows per partition (median)"] == statistics.median(
        v[1] for v in partitions.values()
    )
    for i, pf in enumerate(spec.fields):
        assert evidence[f"values of {pf.name} ({pf.transform})"] == len({k[i] for k in partitions})
    # The rewrite recommendation leads with it and carries the same spec change.
    recs = recommendations(table, table.manifests(snapshot), files, orphans=False)
    rewrite = next(r for r in recs if r.job is Job.REWRITE_DATA_FILES)
    assert rewrite.spec_changes == finding.spec_changes
    assert rewrite.reason.startswith(finding.detail)
    assert "speeds up reads" not in rewrite.reason  # one story: coarsen first
    # The proposed spec is one icecore's evolution accepts: its dry run has fewer
    # partitions' worth of fields and commits nothing.
    transaction = table.transaction()
    update = transaction.update_spec()
    for line in finding.spec_changes:
        apply_spec_change(update, line)
    update.commit()
    preview = transaction.preview()
    assert not preview.is_noop
    assert icecore.load_table(f"{evo.sql_uri}::{copy.table}").metadata_location == (
        table.metadata_location
    )


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _plant_and_age(folder: Path) -> dict[str, Path]:
    """Orphans of every kind Spark's listing treats apart; everything else made old."""
    data = folder / "data"
    planted = {
        "plain": data / "plain-orphan.parquet",
        "crc": data / ".plain-orphan.parquet.crc",
        "tmp": data / "_tmp" / "in-tmp.parquet",
        "beside": folder / "beside-data.parquet",
        "hidden_folder": folder / ".hidden" / "part-0.parquet",
        "young": data / "young-orphan.parquet",
    }
    for path in planted.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not reachable")
    old = time.time() - 3 * 24 * 3600
    for path in folder.rglob("*"):
        if path.is_file() and path != planted["young"]:
            os.utime(path, (old, old))
    return planted


def _spark_dry_run(spark: Any, catalog: str, name: str, cutoff_s: float) -> set[str]:
    rows = spark.sql(
        f"CALL {catalog}.system.remove_orphan_files(table => '{name}', "
        f"older_than => TIMESTAMP '{_iso(cutoff_s)}', dry_run => true)"
    ).collect()
    return {str(r[0]).removeprefix("file:") for r in rows}


def _icecore_orphans(table: Table, cutoff_s: float) -> set[str]:
    found = orphan_files(table, int(cutoff_s * 1000))
    return {str(Path(f.path)) for f in found.removable}


def test_orphans_equal_spark_s_dry_run_on_sql_and_hadoop_tables(
    evo: EvoCatalogs, demo_warehouse: Path, spark: Any
) -> None:
    name = "orphans_sql"
    full = evo.spark_name("sql", name)
    evo.create(
        "sql",
        name,
        "(id bigint, zone string) USING iceberg PARTITIONED BY (zone)",
        "(1, 'a'), (2, 'b')",
        "(3, 'a')",
    )
    spark.sql(f"DELETE FROM {full} WHERE id = 3")
    sql_table = icecore.load_table(evo.table_arg("sql", name))
    hadoop = copy_hadoop_table(evo, demo_warehouse, "customers_v1")
    hadoop_table = icecore.load_table(str(hadoop.folder))
    cutoff = time.time() - 25 * 3600
    for table, catalog, spark_name in (
        (sql_table, evo.sql, f"db.{name}"),
        (hadoop_table, evo.fs, hadoop.table),
    ):
        folder = Path(table.metadata.location)
        planted = _plant_and_age(folder)
        assert any(folder.rglob(".*.crc")), "Hadoop's local filesystem writes checksums"
        expected = _spark_dry_run(spark, catalog, spark_name, cutoff)
        found = _icecore_orphans(table, cutoff)
        assert found == expected, (sorted(found ^ expected), table.metadata.location)
        assert {str(planted["plain"]), str(planted["beside"])} <= found
        for kind in ("crc", "tmp", "hidden_folder", "young"):
            assert str(planted[kind]) not in found, kind
        summary = recommendation(
            Job.REMOVE_ORPHAN_FILES,
            table,
            parser().parse_args(
                [str(Job.REMOVE_ORPHAN_FILES), str(folder), "--older-than", _iso(cutoff)]
            ),
        ).estimate
        assert summary["orphan_files_count"] == len(expected)
        assert summary["hidden_files_count"] >= 1
