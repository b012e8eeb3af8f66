"""Trends and retention of Spark-written tables with known histories; Spark is the oracle.

The story table is written once per module, by the session's Spark, in a private warehouse
(the shared fixture warehouse is never touched): a healthy period of big files, a manifest
rewrite, a streaming writer of tiny files (Spark Structured Streaming, its own query id), a
delete-heavy period (merge-on-read deletes), a branch holding its own data and a compaction
on main. Which snapshot each step made is read from Spark's ``snapshots`` table as the step
ends, and the streaming writer is named by the query id PySpark reports.

Retention is checked on tables made by the test itself (expiry deletes files): what
``icecore retention`` says a snapshot's expiry or a ref drop frees is compared with what
disappears from disk when Spark's ``expire_snapshots`` runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.alert_rules import run_alerts
from icecore.alerts import parse_alerts
from icecore.catalog import load_catalog
from icecore.cli import main as cli_main
from icecore.retention import retention
from icecore.trend import trend
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.icecore.test_alerts import Listener

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@dataclass(frozen=True)
class Story:
    arg: str
    full: str
    healthy: tuple[int, ...]
    rewrite: int
    streaming: tuple[int, ...]
    query_id: str
    deletes: tuple[int, ...]
    branch: int
    compaction: int
    app_id: str


@pytest.fixture(scope="module")
def evo(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    return register_catalogs(spark, tmp_path_factory.mktemp("trend"))


def _latest(spark: Any, full: str) -> int:
    row = spark.sql(
        f"SELECT snapshot_id FROM {full}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()
    return int(row[0][0])


def _big(spark: Any, full: str, start: int, rows: int = 3000, target: str = "") -> None:
    """One data file of ``rows`` rows of 64 hex characters (tens of kilobytes)."""
    (
        spark.range(start, start + rows)
        .selectExpr("id", "sha2(cast(id AS string), 256) AS payload")
        .coalesce(1)
        .writeTo(full + target)
        .append()
    )


@pytest.fixture(scope="module")
def story(evo: EvoCatalogs, tmp_path_factory: pytest.TempPathFactory) -> Story:
    spark, name = evo.spark, "story"
    full = evo.spark_name("fs", name)
    spark.sql(
        f"CREATE TABLE {full} (id bigint, payload string) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'commit.manifest.min-count-to-merge'='3')"
    )
    healthy = []
    for start in (0, 10_000):
        _big(spark, full, start)
        healthy.append(_latest(spark, full))
    spark.sql(f"CALL {evo.fs}.system.rewrite_manifests('db.{name}')")
    rewrite = _latest(spark, full)
    source = tmp_path_factory.mktemp("stream_source")
    for i in range(4):
        rows = [{"id": 100_000 + 2 * i + j, "payload": "s"} for j in range(2)]
        (source / f"batch{i}.json").write_text("\n".join(json.dumps(r) for r in rows))
    query = (
        spark.readStream.schema("id bigint, payload string")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .writeStream.format("iceberg")
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path_factory.mktemp("checkpoint")))
        .trigger(availableNow=True)
        .toTable(full)
    )
    query.awaitTermination()
    streaming = [
        int(r[0])
        for r in spark.sql(
            f"SELECT snapshot_id FROM {full}.snapshots ORDER BY committed_at"
        ).collect()
    ][-4:]
    deletes = []
    # Each delete hits another data file and leaves a row in it (a file losing every row is
    # dropped, not deleted from): Iceberg keeps one position delete file per data file (a
    # second delete of the same file replaces it), so these four pile up.
    for key in (1, 10_001, 100_000, 100_002):
        spark.sql(f"DELETE FROM {full} WHERE id = {key}")
        deletes.append(_latest(spark, full))
    spark.sql(f"ALTER TABLE {full} CREATE BRANCH old AS OF VERSION {healthy[-1]}")
    _big(spark, full, 50_000, target=".branch_old")
    branch = int(spark.sql(f"SELECT snapshot_id FROM {full}.refs WHERE name = 'old'").first()[0])
    spark.sql(
        f"CALL {evo.fs}.system.rewrite_data_files(table => 'db.{name}', "
        "options => map('rewrite-all', 'true'))"
    )
    compaction = _latest(spark, full)
    return Story(
        arg=evo.table_arg("fs", name),
        full=full,
        healthy=tuple(healthy),
        rewrite=rewrite,
        streaming=tuple(streaming),
        query_id=str(query.id),
        deletes=tuple(deletes),
        branch=branch,
        compaction=compaction,
        app_id=spark.sparkContext.applicationId,
    )


def _spark_files(spark: Any, full: str, snapshot_id: int) -> dict[int, tuple[int, int]]:
    """Spark's live files at a snapshot: content -> (files, bytes)."""
    rows = spark.sql(
        f"SELECT content, count(*), sum(file_size_in_bytes) FROM {full}.files "
        f"VERSION AS OF {snapshot_id} GROUP BY content"
    ).collect()
    return {int(r[0]): (int(r[1]), int(r[2])) for r in rows}


def test_trend_follows_spark_per_snapshot(evo: EvoCatalogs, story: Story) -> None:
    spark = evo.spark
    result = trend(icecore.load_table(story.arg))
    ancestry = [
        int(r[0])
        for r in spark.sql(
            f"SELECT snapshot_id FROM {story.full}.history WHERE is_current_ancestor "
            "ORDER BY made_current_at"
        ).collect()
    ]
    assert [p.snapshot_id for p in result.points] == ancestry
    for p in result.points:
        files = _spark_files(spark, story.full, p.snapshot_id)
        assert (p.data_files, p.data_bytes) == files.get(0, (0, 0)), p.snapshot_id
        assert p.delete_files == files.get(1, (0, 0))[0] + files.get(2, (0, 0))[0]
        manifests = spark.sql(
            f"SELECT count(*) FROM {story.full}.manifests VERSION AS OF {p.snapshot_id}"
        ).first()[0]
        assert p.manifests == manifests
    # Added files: Spark's entries table knows which files each snapshot added.
    added = {
        int(r[0]): (int(r[1]), int(r[2]))
        for r in spark.sql(
            f"SELECT snapshot_id, count(*), sum(data_file.file_size_in_bytes) "
            f"FROM {story.full}.all_entries WHERE status = 1 AND data_file.content = 0 "
            "GROUP BY snapshot_id"
        ).collect()
    }
    for p in result.points:
        assert (p.added_data_files, p.added_data_bytes) == added.get(p.snapshot_id, (0, 0))


def test_regressions_traced_to_the_snapshot_and_writer_that_started_them(
    story: Story,
) -> None:
    result = trend(icecore.load_table(story.arg))
    by_what = {r.what: r for r in result.regressions}
    small = by_what["avg_added_file_bytes"]
    assert small.snapshot_id == story.streaming[0]
    assert small.last_snapshot_id == story.streaming[-1]
    assert small.writer["spark.sql.streaming.queryId"] == story.query_id
    assert small.writer["spark.app.id"] == story.app_id
    assert small.operation == "append"
    assert small.after * 10 <= small.before
    piled = by_what["delete_files"]
    assert piled.snapshot_id == story.deletes[0]
    assert piled.operation == "delete"
    assert "spark.sql.streaming.queryId" not in piled.writer
    assert piled.writer["spark.app.id"] == story.app_id
    climb = by_what["manifests"]
    assert climb.snapshot_id == story.streaming[0]
    assert climb.writer["spark.sql.streaming.queryId"] == story.query_id
    # The compaction is healthy: nothing starts there, and the healthy period is clean.
    starts = {r.snapshot_id for r in result.regressions}
    assert not starts & {*story.healthy, story.rewrite, story.compaction}
    assert len(result.regressions) == 3


def test_branch_trend_and_cli(story: Story, capsys: pytest.CaptureFixture[str]) -> None:
    result = trend(icecore.load_table(story.arg), "old")
    assert [p.snapshot_id for p in result.points] == [*story.healthy, story.branch]
    assert not result.regressions
    assert cli_main(["trend", story.arg]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["branch"] == "main"
    assert [r["snapshot_id"] for r in out["regressions"]] == [
        story.streaming[0],
        story.streaming[0],
        story.deletes[0],
    ]
    assert set(out["snapshots"][0]) >= {
        "time",
        "data_bytes",
        "data_files",
        "avg_file_bytes",
        "delete_files",
        "manifests",
    }
    assert cli_main(["trend", story.arg, "--branch", "nope"]) == 1
    assert "no branch 'nope'" in capsys.readouterr().err
    # Nothing expired yet: the table's snapshots reach every data file and manifest on disk.
    assert cli_main(["retention", story.arg]) == 0
    out = json.loads(capsys.readouterr().out)
    disk = _on_disk(Path(story.arg))
    assert (out["total"]["files"], out["total"]["bytes"]) == (len(disk), sum(disk.values()))
    assert [r["name"] for r in out["refs"]] == ["main", "old"]
    assert {s["snapshot_id"] for s in out["snapshots"]} == {
        *story.healthy,
        story.rewrite,
        *story.streaming,
        *story.deletes,
        story.branch,
        story.compaction,
    }


def test_a_small_files_regression_alerts_the_webhook_once_with_its_snapshot(
    evo: EvoCatalogs, story: Story
) -> None:
    """Issue 34 deliver 6: ``icecore alerts`` sends the story's regressions to a listener."""
    listener = Listener()
    try:
        config = parse_alerts({"webhook": listener.url, "backoff": 0.01, "score_below": 0})
        catalog = str(evo.warehouse / "hadoop")
        first = run_alerts(load_catalog(catalog), config, catalog_name=catalog)
        mine = [e for e in first["sent"] if e["table"] == "db.story"]
        assert {(e["what"], e["snapshot_id"]) for e in mine} == {
            ("avg_added_file_bytes", story.streaming[0]),
            ("manifests", story.streaming[0]),
            ("delete_files", story.deletes[0]),
        }
        small = next(e for e in mine if e["what"] == "avg_added_file_bytes")
        assert small["event"] == "regression" and small["operation"] == "append"
        assert small["writer"]["spark.sql.streaming.queryId"] == story.query_id
        assert small["after"] * 10 <= small["before"]
        assert listener.wait("bodies", len(first["sent"]))
        assert small in listener.bodies
        again = run_alerts(load_catalog(catalog), config, catalog_name=catalog)
        assert again["sent"] == [] and again["already_sent"] == len(first["sent"])
        assert len(listener.bodies) == len(first["sent"])
    finally:
        listener.close()


# Retention ---------------------------------------------------------------------------------


def _on_disk(folder: Path) -> dict[str, int]:
    """Data, delete, manifest and manifest-list files under a table folder, with sizes.

    Hadoop's checksum files (``.name.crc``) go with their file and are not Iceberg's; metadata
    JSON files and the version hint are never deleted by expiry.
    """
    return {
        str(p): p.stat().st_size
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.suffix in (".parquet", ".avro")
    }


def _freed(before: dict[str, int], after: dict[str, int]) -> tuple[int, int]:
    gone = set(before) - set(after)
    assert not set(after) - set(before), "expiry writes no data files or manifests"
    return len(gone), sum(before[p] for p in gone)


def test_retention_equals_what_spark_expiry_deletes(evo: EvoCatalogs) -> None:
    spark, name = evo.spark, "kept"
    full = evo.spark_name("fs", name)
    folder = Path(evo.table_arg("fs", name))
    spark.sql(
        f"CREATE TABLE {full} (id bigint, payload string) USING iceberg "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='copy-on-write')"
    )
    _big(spark, full, 0, rows=500)
    first = _latest(spark, full)
    _big(spark, full, 1000, rows=500)
    spark.sql(f"ALTER TABLE {full} CREATE BRANCH side")
    _big(spark, full, 2000, rows=500, target=".branch_side")
    spark.sql(f"DELETE FROM {full}.branch_side WHERE id < 100")  # rewrites a shared file
    spark.sql(f"DELETE FROM {full} WHERE id >= 1000 AND id < 1100")  # main drops a file
    middle = _latest(spark, full)
    _big(spark, full, 3000, rows=500)

    table = icecore.load_table(str(folder))
    costs = retention(table)
    by_snapshot = {s.snapshot_id: s for s in costs.snapshots}
    by_ref = {r.name: r for r in costs.refs}
    # The whole table: every reachable file, as on disk.
    disk = _on_disk(folder)
    assert (costs.total.exclusive_files, costs.total.exclusive_bytes) == (
        len(disk),
        sum(disk.values()),
    )

    # 1. Expiring one snapshot of main frees what it alone keeps.
    before = _on_disk(folder)
    spark.sql(
        f"CALL {evo.fs}.system.expire_snapshots(table => 'db.{name}', "
        f"snapshot_ids => array({middle}))"
    )
    gone = _freed(before, _on_disk(folder))
    expected = by_snapshot[middle].cost
    assert gone == (expected.exclusive_files, expected.exclusive_bytes)
    assert expected.files["manifest_list"] == 1

    # 2. Dropping the branch and expiring what only it kept frees the branch's cost.
    table = icecore.load_table(str(folder))
    side = {r.name: r for r in retention(table).refs}["side"]
    assert side.cost.files["data"] >= 1 and side.snapshots
    # Expiring ``middle`` cut main's lineage at its child: the snapshots before it (``first``
    # among them) are now reached through the branch alone.
    assert set(by_ref["side"].snapshots) < set(side.snapshots)
    assert first in side.snapshots
    ids = {int(r[0]) for r in spark.sql(f"SELECT snapshot_id FROM {full}.snapshots").collect()}
    before = _on_disk(folder)
    spark.sql(f"ALTER TABLE {full} DROP BRANCH side")
    # older_than is exclusive: just after the newest commit, so every unreferenced one goes.
    (newest,) = spark.sql(
        "SELECT date_format(max(committed_at) + INTERVAL 1 millisecond, "
        f"'yyyy-MM-dd HH:mm:ss.SSS') FROM {full}.snapshots"
    ).first()
    spark.sql(
        f"CALL {evo.fs}.system.expire_snapshots(table => 'db.{name}', "
        f"older_than => TIMESTAMP '{newest}', retain_last => 100)"
    )
    gone = _freed(before, _on_disk(folder))
    assert gone == (side.cost.exclusive_files, side.cost.exclusive_bytes)
    kept = {int(r[0]) for r in spark.sql(f"SELECT snapshot_id FROM {full}.snapshots").collect()}
    assert kept == ids - set(side.snapshots)


# Pages -------------------------------------------------------------------------------------


def _frame(at: Any, column: str) -> Any:
    """The page's dataframe with that column."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, column
    return found[0]


def test_overview_shows_the_trend_and_its_regressions(
    evo: EvoCatalogs, story: Story, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.ui.helpers import figures, no_problems, open_app
    from ui import app

    monkeypatch.setenv("ICECORE_CATALOG", str(evo.warehouse / "hadoop"))
    at = open_app(app.OVERVIEW.file, catalog=str(evo.warehouse / "hadoop"), table="db.story")
    no_problems(at)
    shown = _frame(at, "began at snapshot")
    assert list(shown["began at snapshot"]) == [
        str(story.streaming[0]),
        str(story.streaming[0]),
        str(story.deletes[0]),
    ]
    assert list(shown["what"]) == ["avg_added_file_bytes", "manifests", "delete_files"]
    assert story.query_id in shown["writer"].iloc[0]
    # The chart's data-file line is Spark's count of live data files at each snapshot.
    (figure,) = figures(at)
    line = next(t for t in figure["data"] if t.get("name") == "data files")
    counts = [
        _spark_files(evo.spark, story.full, int(i)).get(0, (0, 0))[0] for i in line["customdata"]
    ]
    assert list(line["y"]) == counts


def test_history_shows_what_each_ref_costs(
    evo: EvoCatalogs, story: Story, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.ui.helpers import no_problems, open_app
    from ui import app

    monkeypatch.setenv("ICECORE_CATALOG", str(evo.warehouse / "hadoop"))
    at = open_app(app.HISTORY.file, catalog=str(evo.warehouse / "hadoop"), table="db.story")
    no_problems(at)
    assert not [d for d in at.dataframe if "snapshots only it keeps" in d.value.columns]
    at.button(key="history_retention").click().run()
    no_problems(at)
    shown = _frame(at, "snapshots only it keeps").set_index("ref")
    costs = {r.name: r for r in retention(icecore.load_table(story.arg)).refs}
    assert set(shown.index) == {"main", "old"}
    for name, ref in costs.items():
        assert shown.loc[name, "exclusive bytes"] == ref.cost.exclusive_bytes
        assert shown.loc[name, "snapshots only it keeps"] == len(ref.snapshots)
    # The branch alone keeps its own commit: one snapshot, with its data file.
    assert costs["old"].snapshots == (story.branch,)
    assert costs["old"].cost.files["data"] == 1


def test_deletion_vectors_counted_as_spark_counts_delete_files(
    spark: Any, demo_warehouse: Path
) -> None:
    """The shared v3 table (read only): many deletion vectors share one Puffin file."""
    result = trend(icecore.load_table(f"{demo_warehouse}::demo.events_v3"))
    full = "icecore.demo.events_v3"
    assert any(p.delete_files for p in result.points)
    for p in result.points:
        files = _spark_files(spark, full, p.snapshot_id)
        assert p.delete_files == files.get(1, (0, 0))[0] + files.get(2, (0, 0))[0]
        assert (p.data_files, p.data_bytes) == files.get(0, (0, 0))
        (puffin_bytes,) = spark.sql(
            "SELECT coalesce(sum(size), 0) FROM (SELECT DISTINCT file_path, file_size_in_bytes "
            f"AS size FROM {full}.delete_files VERSION AS OF {p.snapshot_id})"
        ).first()
        assert p.delete_bytes == puffin_bytes
