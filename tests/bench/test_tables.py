"""The benchmark table builder, checked by Spark (Iceberg Java) and PyIceberg.

A tiny table is built through the command line; the expected counts come from the requested
shape (files, snapshots, files per manifest) worked out by hand, and the pruning counts from
Spark's ``files`` metadata table (its partition values and readable metrics), never from what
the builder reports about itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
FILES = 2_000
SNAPSHOTS = 20
FILES_PER_MANIFEST = 50
DAYS = 50
# 100 files per snapshot, in manifests of 50: two manifests per snapshot.
EXPECTED_MANIFESTS = SNAPSHOTS * 2
ID_SPAN = 1 << 14  # ids of one 16-file group, as BenchTableBuilder.java lays them out
CATALOG = "benchcheck"


def scalar(spark: Any, sql: str) -> Any:
    return spark.sql(sql).collect()[0][0]


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str
) -> tuple[Path, dict[str, Any]]:
    warehouse = tmp_path_factory.mktemp("benchwh")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.tables",
            "--warehouse",
            str(warehouse),
            "--files",
            str(FILES),
            "--files-per-manifest",
            str(FILES_PER_MANIFEST),
            "--snapshots",
            str(SNAPSHOTS),
            "--days",
            str(DAYS),
            "--name",
            "tiny",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "manifests written" in done.stderr
    return warehouse, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def checked(spark: Any, built: tuple[Path, dict[str, Any]]) -> str:
    """Spark's name of the tiny table, through a Hadoop catalog on the test's warehouse."""
    warehouse, _ = built
    spark.conf.set(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{CATALOG}.warehouse", str(warehouse / "hadoop"))
    return f"{CATALOG}.bench.tiny"


def pyiceberg_table(metadata: str) -> Any:
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(metadata)


def test_cli_reports_the_requested_shape(built: tuple[Path, dict[str, Any]]) -> None:
    warehouse, result = built
    assert Path(result["table"]) == warehouse / "hadoop" / "bench" / "tiny"
    assert (Path(result["table"]) / "metadata" / "version-hint.text").is_file()
    assert (result["files"], result["manifests"], result["snapshots"]) == (
        FILES,
        EXPECTED_MANIFESTS,
        SNAPSHOTS,
    )
    assert result["seconds"] > 0
    # Metadata only: no data file is written.
    assert not (Path(result["table"]) / "data").exists()


def test_spark_reads_the_metadata_tables(spark: Any, checked: str) -> None:
    assert scalar(spark, f"SELECT count(*) FROM {checked}.files") == FILES
    assert scalar(spark, f"SELECT count(*) FROM {checked}.manifests") == EXPECTED_MANIFESTS
    assert scalar(spark, f"SELECT count(*) FROM {checked}.snapshots") == SNAPSHOTS
    assert scalar(spark, f"SELECT count(DISTINCT operation) FROM {checked}.snapshots") == 1
    assert (
        scalar(spark, f"SELECT count(DISTINCT partition.pickup_ts_day) FROM {checked}.files")
        == DAYS
    )
    # Every file has full metrics: bounds for all 8 columns, NaN counts for fare and tip.
    row = spark.sql(
        f"SELECT min(size(lower_bounds)), min(size(upper_bounds)), min(size(value_counts)), "
        f"min(size(null_value_counts)), min(size(nan_value_counts)), min(size(column_sizes)) "
        f"FROM {checked}.files"
    ).collect()[0]
    assert tuple(row) == (8, 8, 8, 8, 2, 8)
    # Manifests are clustered by time: each spans at most a few neighbouring days.
    # (the whole partition_summaries column: Iceberg cannot project part of its structs)
    summaries = spark.sql(f"SELECT partition_summaries FROM {checked}.manifests").collect()
    widest = max(
        (date.fromisoformat(row[0][0].upper_bound) - date.fromisoformat(row[0][0].lower_bound)).days
        for row in summaries
    )
    assert widest <= 3


def test_pyiceberg_plans_every_file(built: tuple[Path, dict[str, Any]]) -> None:
    _, result = built
    table = pyiceberg_table(result["metadata"])
    assert len(list(table.scan().plan_files())) == FILES


def test_narrow_id_range_prunes_by_metrics(
    spark: Any, checked: str, built: tuple[Path, dict[str, Any]]
) -> None:
    _, result = built
    group = 57
    low, high = group * ID_SPAN + ID_SPAN // 4, group * ID_SPAN + ID_SPAN // 2
    # Spark's own view of the metrics: files whose id bounds overlap [low, high].
    expected = scalar(
        spark,
        f"SELECT count(*) FROM {checked}.files WHERE readable_metrics.id.lower_bound <= {high} "
        f"AND readable_metrics.id.upper_bound >= {low}",
    )
    # One file per bucket holds ids of that group.
    assert expected == 16
    table = pyiceberg_table(result["metadata"])
    planned = list(table.scan(row_filter=f"id >= {low} and id <= {high}").plan_files())
    assert len(planned) == expected < FILES


def test_day_filter_prunes_by_partition(
    spark: Any, checked: str, built: tuple[Path, dict[str, Any]]
) -> None:
    _, result = built
    expected = scalar(
        spark,
        f"SELECT count(*) FROM {checked}.files WHERE partition.pickup_ts_day = DATE'2021-01-10'",
    )
    assert 0 < expected < FILES
    table = pyiceberg_table(result["metadata"])
    day = "pickup_ts >= '2021-01-10T00:00:00+00:00' and pickup_ts < '2021-01-11T00:00:00+00:00'"
    assert len(list(table.scan(row_filter=day).plan_files())) == expected


def test_icecore_plans_in_worker_processes_as_spark_counts(
    spark: Any,
    checked: str,
    built: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cold plans decode manifests in worker processes; warm ones reuse the disk cache."""
    import icecore
    from icecore.scan import decode_pool, planner
    from icecore.scan.context import PlanContext
    from icecore.scan.manifest_cache import ManifestCache

    _, result = built
    group = 57
    low, high = group * ID_SPAN + ID_SPAN // 4, group * ID_SPAN + ID_SPAN // 2
    expected = scalar(
        spark,
        f"SELECT count(*) FROM {checked}.files WHERE readable_metrics.id.lower_bound <= {high} "
        f"AND readable_metrics.id.upper_bound >= {low}",
    )
    started: list[Any] = []

    def counted(*args: Any) -> Any:
        started.append(decode_pool.start_decoding(*args))
        return started[-1]

    def decoded() -> list[int]:
        """Manifests the workers decoded, per call (0 when the pool was not started)."""
        return [0 if d is None else d.decoded for d in started]

    monkeypatch.setenv("ICECORE_PLAN_PROCESSES", "2")
    monkeypatch.setattr(decode_pool, "MIN_MANIFESTS", 2)
    monkeypatch.setattr(planner, "start_decoding", counted)
    context = PlanContext(ManifestCache(tmp_path / "cache"))
    table = icecore.load_table(result["metadata"])
    flt = f"id >= {low} AND id <= {high}"
    cold = table.scan(filter=flt, context=context).plan()
    assert decoded() == [EXPECTED_MANIFESTS, 0]  # every data manifest; no delete manifests
    warm = table.scan(filter=flt, context=PlanContext(context.manifests)).plan()
    assert decoded()[2:] == [0, 0]
    assert len(cold.tasks) == len(warm.tasks) == expected
    assert cold.data_files == warm.data_files == [t.file_path for t in warm.tasks]
    report = cold.report
    assert report.files_pruned_by_metrics == FILES - expected == len(report.pruned)
    assert all(p.reason.startswith("id ") for p in report.pruned[:50])


# --- the app's shaped tables (issue 20): a long history and an evolved table -----------------

HIST_SNAPSHOTS = 200
HIST_VERSIONS = 40
# Transactions of ceil(200 / (40 - 1)) = 6 snapshots: ceil(200 / 6) = 34 of them, each one
# metadata file after the table's first (v1, the empty table): 35 files, 34 of them logged in
# the last one, one main-branch history entry per transaction.
HIST_PER_VERSION = 6
HIST_TXNS = 34
HIST_BRANCHES = 5  # besides main
HIST_TAGS = 20
EVOLVED_SCHEMAS = 12
EVOLVED_SPECS = 5
EVOLVED_FILES = 300
SHAPE_START_MS = 1_748_736_000_000  # 2025-06-01T00:00:00Z, the builder's default start


def build_shape(warehouse: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.tables", "--warehouse", str(warehouse), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def shaped(
    tmp_path_factory: pytest.TempPathFactory, iceberg_jar: str
) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    warehouse = tmp_path_factory.mktemp("shapewh")
    history = build_shape(
        warehouse,
        "--kind",
        "snapshots",
        "--snapshots",
        str(HIST_SNAPSHOTS),
        "--metadata-versions",
        str(HIST_VERSIONS),
        "--name",
        "hist",
    )
    evolved = build_shape(
        warehouse,
        "--kind",
        "evolved",
        "--schemas",
        str(EVOLVED_SCHEMAS),
        "--specs",
        str(EVOLVED_SPECS),
        "--files",
        str(EVOLVED_FILES),
        "--name",
        "evo",
    )
    return warehouse, history, evolved


@pytest.fixture(scope="module")
def shaped_in_spark(spark: Any, shaped: tuple[Path, dict[str, Any], dict[str, Any]]) -> str:
    """Spark's catalog over the shaped tables' warehouse (``<catalog>.bench.hist`` / ``.evo``)."""
    warehouse = shaped[0]
    name = "shapecheck"
    spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", str(warehouse / "hadoop"))
    return name


def test_shaped_tables_are_renamed_into_place(
    shaped: tuple[Path, dict[str, Any], dict[str, Any]],
) -> None:
    warehouse, history, evolved = shaped
    assert Path(history["table"]) == warehouse / "hadoop" / "bench" / "hist"
    assert Path(evolved["table"]) == warehouse / "hadoop" / "bench" / "evo"
    # Built behind a bind mount: no staging folder is left, and no data file is written.
    assert sorted(p.name for p in warehouse.iterdir()) == ["hadoop"]
    assert sorted(p.name for p in (warehouse / "hadoop").iterdir()) == ["bench"]
    assert not (Path(history["table"]) / "data").exists()


def test_history_table_in_spark(spark: Any, shaped_in_spark: str) -> None:
    t = f"{shaped_in_spark}.bench.hist"
    assert scalar(spark, f"SELECT count(*) FROM {t}.snapshots") == HIST_SNAPSHOTS
    ops = {r[0] for r in spark.sql(f"SELECT DISTINCT operation FROM {t}.snapshots").collect()}
    assert {"append", "overwrite"} <= ops <= {"append", "overwrite", "delete"}
    refs = {
        r[0]: r[1]
        for r in spark.sql(f"SELECT type, count(*) FROM {t}.refs GROUP BY type").collect()
    }
    assert refs == {"BRANCH": HIST_BRANCHES + 1, "TAG": HIST_TAGS}
    # The branch with its own commits: its head is no snapshot of main's lineage.
    dev = scalar(spark, f"SELECT snapshot_id FROM {t}.refs WHERE name = 'dev'")
    main_lineage = {r[0] for r in spark.sql(f"SELECT snapshot_id FROM {t}.history").collect()}
    assert dev not in main_lineage
    assert scalar(spark, f"SELECT count(*) FROM {t}.history") == HIST_TXNS
    assert scalar(spark, f"SELECT count(*) FROM {t}.metadata_log_entries") == HIST_TXNS + 1
    # Fixed times: a minute per commit from 2025-06-01, in commit order.
    times = [
        r[0].timestamp() * 1000
        for r in spark.sql(f"SELECT committed_at FROM {t}.snapshots").collect()
    ]
    assert min(times) > SHAPE_START_MS and max(times) <= SHAPE_START_MS + HIST_SNAPSHOTS * 60_000
    made = [r[0] for r in spark.sql(f"SELECT made_current_at FROM {t}.history").collect()]
    assert made == sorted(made)
    # Merge appends keep the manifest list short (min-count-to-merge 50).
    assert scalar(spark, f"SELECT count(*) FROM {t}.manifests") <= 60
    # Row-level deletes exist beside whole-file deletes and overwrites.
    assert scalar(spark, f"SELECT count(*) FROM {t}.all_delete_files") > 0


def test_history_table_in_icecore_as_in_spark(
    spark: Any, shaped_in_spark: str, shaped: tuple[Path, dict[str, Any], dict[str, Any]]
) -> None:
    import icecore

    t = f"{shaped_in_spark}.bench.hist"
    table = icecore.load_table(shaped[1]["metadata"])
    spark_snaps = {
        r[0]: int(r[1].timestamp() * 1000)
        for r in spark.sql(f"SELECT snapshot_id, committed_at FROM {t}.snapshots").collect()
    }
    assert {s.snapshot_id: s.timestamp_ms for s in table.snapshots()} == spark_snaps
    spark_refs = {
        r[0]: r[1] for r in spark.sql(f"SELECT name, snapshot_id FROM {t}.refs").collect()
    }
    assert {n: r.snapshot_id for n, r in table.refs().items()} == spark_refs
    spark_history = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {t}.history").collect()]
    assert [h.snapshot_id for h in table.history()] == spark_history
    spark_log = [r[0] for r in spark.sql(f"SELECT file FROM {t}.metadata_log_entries").collect()]
    ours = [e.metadata_file for e in table.metadata.metadata_log] + [table.metadata_location]
    assert sorted(ours) == sorted(spark_log)


def test_evolved_table_in_spark_and_icecore(
    spark: Any, shaped_in_spark: str, shaped: tuple[Path, dict[str, Any], dict[str, Any]]
) -> None:
    import icecore

    t = f"{shaped_in_spark}.bench.evo"
    # One append under every schema but the last.
    assert scalar(spark, f"SELECT count(*) FROM {t}.snapshots") == EVOLVED_SCHEMAS - 1
    assert scalar(spark, f"SELECT count(*) FROM {t}.files") == EVOLVED_FILES
    # Files were written under every spec.
    assert scalar(spark, f"SELECT count(DISTINCT spec_id) FROM {t}.files") == EVOLVED_SPECS
    table = icecore.load_table(shaped[2]["metadata"])
    md = table.metadata
    assert len(md.schemas) == EVOLVED_SCHEMAS
    assert len(md.partition_specs) == EVOLVED_SPECS
    assert len({s.schema_id for s in md.schemas}) == EVOLVED_SCHEMAS
    # Spark's current schema is Icecore's current schema, column for column.
    spark_cols = [f.name for f in spark.table(t).schema.fields]
    current = next(s for s in md.schemas if s.schema_id == md.current_schema_id)
    assert [f.name for f in current.fields] == spark_cols
    # Every transform family Iceberg v2 can add appears in some spec.
    transforms = {str(f.transform).split("[")[0] for s in md.partition_specs for f in s.fields}
    assert {"identity", "bucket", "truncate", "year", "month", "day", "hour"} <= transforms
