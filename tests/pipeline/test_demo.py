"""The demo story, checked through Spark: the tables, their rows, refs and snapshots.

Expected values come from the story's inputs (the scale's parameters, the generator's rows
queried through Spark) and the story's rules written out here by hand, never from counting
the tables the code under test wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.demo import ACCOUNT_ID_BASE, SCALES, ZONES, accounts_batch_sql, trips_batch_sql

pytestmark = pytest.mark.spark

MINI = SCALES["mini"]
TRIPS = "icecore.demo.trips"


def scalar(spark: Any, sql: str) -> Any:
    return spark.sql(sql).collect()[0][0]


def current_metadata(warehouse: Path, table_dir: str) -> dict[str, Any]:
    metadata = sorted((warehouse / table_dir / "metadata").glob("*.metadata.json"))
    newest = max(metadata, key=lambda p: json.loads(p.read_text())["last-updated-ms"])
    return json.loads(newest.read_text())


def test_tables_exist_in_both_catalogs(spark: Any, demo_warehouse: Path) -> None:
    sql_tables = {r.tableName for r in spark.sql("SHOW TABLES IN icecore.demo").collect()}
    assert sql_tables == {"trips", "events_v3", "zones", "accounts"}
    fs_tables = {r.tableName for r in spark.sql("SHOW TABLES IN hadoop.demo").collect()}
    assert fs_tables == {"customers_v1"}
    assert (demo_warehouse / "catalog.db").is_file()
    assert (demo_warehouse / "hadoop/demo/customers_v1/metadata/version-hint.text").is_file()


def test_trips_rows_follow_the_story(spark: Any, demo_warehouse: Path) -> None:
    # Every generated trip, day by day, as the generator produces it (not as the table holds it).
    generated = " UNION ALL ".join(
        f"SELECT * FROM ({trips_batch_sql(day, MINI.rows_per_day)})" for day in range(MINI.days)
    )
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW generated AS {generated}")
    late = max(MINI.rows_per_day // 100, 5)
    # The story's rules: voided trips (fare < 0) of the day-spec days deleted (later days were
    # appended after the DELETE); among the last `fix_days` of those days, disputed even ids
    # that are multiples of 3 voided by the MERGE; `late` late trips inserted by the MERGE.
    day_spec_end = f"TIMESTAMP '2024-08-01' + INTERVAL {MINI.days_by_day} DAYS"
    merge_from = f"TIMESTAMP '2024-08-01' + INTERVAL {MINI.days_by_day - MINI.fix_days} DAYS"
    expected = scalar(
        spark,
        f"SELECT count(*) FROM generated WHERE NOT (fare < 0 AND pickup_ts < {day_spec_end}) "
        "AND NOT (coalesce(payment_type = 'dispute', false) AND pmod(trip_id, 6) = 0 AND "
        f"pickup_ts >= {merge_from} AND pickup_ts < {day_spec_end})",
    )
    assert scalar(spark, f"SELECT count(*) FROM {TRIPS}") == expected + late
    voided = f"SELECT count(*) FROM {TRIPS} WHERE fare < 0 AND pickup_ts < {day_spec_end}"
    assert scalar(spark, voided) == 0
    # The UPDATE zeroed cash tips of the last `fix_days` day-partitioned days only (late
    # trips, ids +500000, arrived after it).
    window = (
        f"pickup_ts >= TIMESTAMP '2024-08-01' + INTERVAL {MINI.days_by_day - MINI.fix_days} "
        f"DAYS AND pickup_ts < TIMESTAMP '2024-08-01' + INTERVAL {MINI.days_by_day} DAYS"
    )
    cash_tips = f"SELECT count(*) FROM {TRIPS} WHERE payment_type = 'cash' AND tip_amount > 0"
    assert scalar(spark, f"{cash_tips} AND {window} AND pmod(trip_id, 1000000) < 500000") == 0
    assert scalar(spark, f"{cash_tips} AND NOT ({window})") > 0
    month_end = scalar(spark, f"SELECT count(*) FROM {TRIPS} VERSION AS OF 'month_end'")
    assert month_end == MINI.month_end_day * MINI.rows_per_day


def test_trips_refs_and_snapshots(spark: Any, demo_warehouse: Path) -> None:
    refs = {r.name: r.type for r in spark.sql(f"SELECT name, type FROM {TRIPS}.refs").collect()}
    assert refs == {"main": "BRANCH", "month_end": "TAG", "audit": "BRANCH"}
    # Commits on main: one per daily append, DELETE, UPDATE, MERGE, the compaction; then the
    # first `expire_first` are expired; the audit branch adds two of its own.
    main_commits = MINI.days + 3 + 1
    expected_snapshots = main_commits - MINI.expire_first + 2
    assert scalar(spark, f"SELECT count(*) FROM {TRIPS}.snapshots") == expected_snapshots
    lineage = scalar(spark, f"SELECT count(*) FROM {TRIPS}.history WHERE is_current_ancestor")
    assert lineage == main_commits - MINI.expire_first
    main_id = scalar(spark, f"SELECT snapshot_id FROM {TRIPS}.refs WHERE name = 'main'")
    audit_id = scalar(spark, f"SELECT snapshot_id FROM {TRIPS}.refs WHERE name = 'audit'")
    parent = scalar(
        spark, f"SELECT parent_id FROM {TRIPS}.snapshots WHERE snapshot_id = {audit_id}"
    )
    grandparent = scalar(
        spark, f"SELECT parent_id FROM {TRIPS}.snapshots WHERE snapshot_id = {parent}"
    )
    assert grandparent == main_id
    audit_rows = scalar(spark, f"SELECT count(*) FROM {TRIPS} VERSION AS OF 'audit'")
    main_rows = scalar(spark, f"SELECT count(*) FROM {TRIPS}")
    outliers = scalar(spark, f"SELECT count(*) FROM {TRIPS} WHERE fare > 60")
    assert audit_rows == main_rows - outliers + max(MINI.rows_per_day // 50, 5)


def test_trips_evolution_and_deletes(spark: Any, demo_warehouse: Path) -> None:
    metadata = current_metadata(demo_warehouse, "demo/trips")
    assert metadata["format-version"] == 2
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    assert fields["passenger_count"] == "long"
    assert "tip_amount" in fields and "tip" not in fields
    assert "store_and_fwd" not in fields and fields["congestion_fee"] == "double"
    specs = {
        s["spec-id"]: [f["transform"] for f in s["fields"]] for s in metadata["partition-specs"]
    }
    assert specs[0] == ["day", "bucket[16]"]
    assert specs[metadata["default-spec-id"]] == ["bucket[16]", "hour", "identity"]
    assert len(specs) == 3
    assert metadata["default-sort-order-id"] != 0
    contents = {r.content for r in spark.sql(f"SELECT content FROM {TRIPS}.delete_files").collect()}
    assert contents == {1}, "merge-on-read writes position delete files"
    spec_ids = {r.spec_id for r in spark.sql(f"SELECT spec_id FROM {TRIPS}.files").collect()}
    assert spec_ids == {0, 1, 2}


def test_events_v3_has_deletion_vectors(spark: Any, demo_warehouse: Path) -> None:
    table = "icecore.demo.events_v3"
    metadata = current_metadata(demo_warehouse, "demo/events_v3")
    assert metadata["format-version"] == 3
    formats = {
        r.file_format for r in spark.sql(f"SELECT file_format FROM {table}.delete_files").collect()
    }
    assert formats == {"PUFFIN"}
    assert scalar(spark, f"SELECT count(*) FROM {table} WHERE kind = 'bot'") == 0
    assert scalar(spark, f"SELECT count(*) FROM {table} WHERE pmod(user_id, 7) = 0") == 0
    assert scalar(spark, f"SELECT count(*) FROM {table}") > 0


def test_customers_v1_evolved_safely(spark: Any, demo_warehouse: Path) -> None:
    metadata = current_metadata(demo_warehouse, "hadoop/demo/customers_v1")
    assert metadata["format-version"] == 1
    spec = next(
        s for s in metadata["partition-specs"] if s["spec-id"] == metadata["default-spec-id"]
    )
    assert [f["transform"] for f in spec["fields"]] == ["identity", "void", "year"]
    countries = {
        r.country
        for r in spark.sql("SELECT DISTINCT country FROM hadoop.demo.customers_v1").collect()
    }
    assert {"Österreich", "日本", "Ελλάδα"} <= countries
    assert scalar(spark, "SELECT count(*) FROM hadoop.demo.customers_v1") < MINI.customers


def test_zones(spark: Any, demo_warehouse: Path) -> None:
    assert scalar(spark, "SELECT count(*) FROM icecore.demo.zones") == len(ZONES)
    assert spark.sql("SELECT * FROM icecore.demo.zones.partitions").count() == 1


def test_second_run_keeps_the_warehouse(demo_warehouse: Path) -> None:
    catalog_db = demo_warehouse / "catalog.db"
    before = (catalog_db.stat().st_mtime_ns, catalog_db.read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.demo", "--warehouse", str(demo_warehouse)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "keeping it" in result.stderr
    assert (catalog_db.stat().st_mtime_ns, catalog_db.read_bytes()) == before


def test_accounts_equality_deletes_follow_sequence_numbers(
    spark: Any, demo_warehouse: Path
) -> None:
    table = "icecore.demo.accounts"
    half = MINI.accounts // 2
    generated = accounts_batch_sql(0, MINI.accounts)
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW generated_accounts AS "
        f"SELECT *, account_id - {ACCOUNT_ID_BASE} AS n FROM ({generated})"
    )
    # First half: closed ids (n % 10 = 0), NULL emails and user1's email deleted globally;
    # re-opened ids (n % 20 = 0) inserted again afterwards survive those older deletes.
    # Second half: Italian accounts with (n - half) % 7 = 0 deleted in their partition only.
    first = scalar(
        spark,
        f"SELECT count(*) FROM generated_accounts WHERE n < {half} AND n % 10 != 0 "
        "AND email IS NOT NULL AND email != 'user1@example.org'",
    )
    reopened = scalar(
        spark, f"SELECT count(*) FROM generated_accounts WHERE n < {half} AND n % 20 = 0"
    )
    second = scalar(
        spark,
        f"SELECT count(*) FROM generated_accounts WHERE n >= {half} "
        f"AND NOT (country = 'Italia' AND (n - {half}) % 7 = 0)",
    )
    assert scalar(spark, f"SELECT count(*) FROM {table}") == first + reopened + second
    deletes = spark.sql(
        f"SELECT content, equality_ids, spec_id FROM {table}.delete_files"
    ).collect()
    assert sorted((r.content, tuple(r.equality_ids), r.spec_id) for r in deletes) == [
        (2, (1,), 0),
        (2, (1,), 1),
        (2, (2,), 0),
    ]
