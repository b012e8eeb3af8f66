"""Build the demo warehouse: real Iceberg tables written by real Spark, with a story to explore.

``python -m pipeline.demo --warehouse warehouse [--force] [--scale full|mini] [--catalog C]``

The story (each step is a Spark SQL statement or Iceberg procedure; see :func:`trips_story`):

* ``demo.trips`` (format v2, SQL catalog): synthetic taxi trips appended in daily batches,
  partitioned by ``day(pickup_ts), bucket(16, trip_id)``; a tag ``month_end``; merge-on-read
  DELETE, UPDATE and MERGE (position delete files); a compaction of the last week and an
  expiry of the oldest snapshots; schema evolution (add, rename, int→long, drop); a sort
  order; partition evolution (day→hour for new data, then an added identity field); and a
  branch ``audit`` with commits of its own.
* ``demo.customers_v1`` (format v1, filesystem/Hadoop catalog in ``<warehouse>/hadoop``):
  unicode partition values, a v1-safe partition evolution (the dropped field becomes
  ``void``), and a copy-on-write delete.
* ``demo.events_v3`` (format v3): deletion vectors from several deletes, some hitting the
  same data files twice (the DV is replaced, not stacked).
* ``demo.zones``: a small unpartitioned lookup table.

With ``--catalog`` the tables of the SQL catalog (all but ``customers_v1``, whose story is
the filesystem catalog) go to another catalog, registered in Spark as ``icecore``: a
PostgreSQL database (``postgresql://user@host:port/db``, Iceberg's JdbcCatalog), or an
Iceberg REST catalog (an ``http(s)://`` URI, or the name of a ``[catalogs.NAME]`` entry of
icecore.toml with ``type = "rest"``) through Spark's ``type=rest`` catalog; the REST server
decides where the table files live. Every step works through REST: the equality deletes of
``accounts`` are committed by Iceberg's Java API on the table Spark's catalog loads, so
through the same REST client. Secrets (a PostgreSQL password, a REST credential or token)
are read from the environment or icecore.toml as Icecore reads them and set on the running
Spark session, never on ``spark-submit``'s command line (see :mod:`pipeline.spark`).

The build is all-or-nothing: prerequisites are checked before Spark starts, the warehouse is
written in place (Iceberg metadata holds absolute paths, so it can't be built elsewhere and
moved) under a ``.icecore-demo-building`` marker, and any failure removes what this run wrote
(and, with ``--force``, puts the previous warehouse back). A finished warehouse carries
``.icecore-demo.json``; a second run without ``--force`` keeps it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from icecore.catalog import load_catalog
from icecore.catalog.postgres_uri import PostgresTarget, is_postgres_uri
from icecore.errors import IcecoreError
from pipeline.spark import (
    HADOOP_CATALOG,
    HADOOP_SUBDIR,
    SQL_CATALOG,
    PipelineError,
    is_rest_catalog,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DONE_MARKER = ".icecore-demo.json"
BUILDING_MARKER = ".icecore-demo-building"
NAMESPACE = "demo"
FIRST_DAY = dt.date(2024, 8, 1)
TRIP_COLUMNS: tuple[str, ...] = (
    "trip_id",
    "vendor_id",
    "pickup_ts",
    "dropoff_ts",
    "pickup_zone",
    "dropoff_zone",
    "passenger_count",
    "trip_distance",
    "fare",
    "tip",
    "payment_type",
    "store_and_fwd",
    "pickup_loc",
    "tags",
)

ZONES: tuple[tuple[int, str, str, str], ...] = (
    (1, "EWR", "Newark Airport", "EWR"),
    (4, "Manhattan", "Alphabet City", "Yellow Zone"),
    (13, "Manhattan", "Battery Park City", "Yellow Zone"),
    (43, "Manhattan", "Central Park", "Yellow Zone"),
    (48, "Manhattan", "Clinton East", "Yellow Zone"),
    (68, "Manhattan", "East Chelsea", "Yellow Zone"),
    (79, "Manhattan", "East Village", "Yellow Zone"),
    (87, "Manhattan", "Financial District North", "Yellow Zone"),
    (100, "Manhattan", "Garment District", "Yellow Zone"),
    (107, "Manhattan", "Gramercy", "Yellow Zone"),
    (113, "Manhattan", "Greenwich Village North", "Yellow Zone"),
    (132, "Queens", "JFK Airport", "Airports"),
    (138, "Queens", "LaGuardia Airport", "Airports"),
    (141, "Manhattan", "Lenox Hill West", "Yellow Zone"),
    (142, "Manhattan", "Lincoln Square East", "Yellow Zone"),
    (161, "Manhattan", "Midtown Center", "Yellow Zone"),
    (162, "Manhattan", "Midtown East", "Yellow Zone"),
    (164, "Manhattan", "Midtown South", "Yellow Zone"),
    (170, "Manhattan", "Murray Hill", "Yellow Zone"),
    (186, "Manhattan", "Penn Station/Madison Sq West", "Yellow Zone"),
    (181, "Brooklyn", "Park Slope", "Boro Zone"),
    (189, "Brooklyn", "Prospect Heights", "Boro Zone"),
    (230, "Manhattan", "Times Sq/Theatre District", "Yellow Zone"),
    (231, "Manhattan", "TriBeCa/Civic Center", "Yellow Zone"),
    (234, "Manhattan", "Union Sq", "Yellow Zone"),
    (236, "Manhattan", "Upper East Side North", "Yellow Zone"),
    (237, "Manhattan", "Upper East Side South", "Yellow Zone"),
    (239, "Manhattan", "Upper West Side South", "Yellow Zone"),
    (249, "Manhattan", "West Village", "Yellow Zone"),
    (255, "Brooklyn", "Williamsburg (North Side)", "Boro Zone"),
    (7, "Queens", "Astoria", "Boro Zone"),
    (129, "Queens", "Jackson Heights", "Boro Zone"),
)

COUNTRIES: tuple[str, ...] = (
    "Deutschland",
    "España",
    "France",
    "Italia",
    "Österreich",
    "Česko",
    "日本",
    "México",
    "United States",
    "Ελλάδα",
)


@dataclass(frozen=True, slots=True)
class Scale:
    """How big the story is; ``full`` for the app, ``mini`` for the tests' shared fixture."""

    rows_per_day: int
    days_by_day: int
    """Daily batches written with the first spec, day(pickup_ts) + bucket(16, trip_id)."""
    days_by_hour: int
    """Daily batches written after day → hour."""
    days_with_vendor: int
    """Daily batches written after identity(vendor_id) was added."""
    month_end_day: int
    """The tag ``month_end`` points at the snapshot that appended this day (1-based)."""
    fix_days: int
    """The last this many days of the day spec get the UPDATE, the MERGE and a compaction."""
    expire_first: int
    """expire_snapshots removes this many of the oldest snapshots."""
    customers: int
    events: int
    accounts: int

    @property
    def days(self) -> int:
        """All daily batches on main."""
        return self.days_by_day + self.days_by_hour + self.days_with_vendor


SCALES: dict[str, Scale] = {
    "full": Scale(
        rows_per_day=8_500,
        days_by_day=57,
        days_by_hour=2,
        days_with_vendor=1,
        month_end_day=31,
        fix_days=7,
        expire_first=10,
        customers=20_000,
        events=60_000,
        accounts=20_000,
    ),
    "mini": Scale(
        rows_per_day=300,
        days_by_day=6,
        days_by_hour=1,
        days_with_vendor=1,
        month_end_day=3,
        fix_days=2,
        expire_first=2,
        customers=400,
        events=2_000,
        accounts=400,
    ),
}


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What the build did, written to the done marker and printed as JSON at the end."""

    warehouse: str
    scale: str
    seconds: float
    sql_catalog: str
    hadoop_warehouse: str
    tables: list[str]


Progress = Callable[[str], None]


def _stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _Steps:
    """Numbered, timed progress lines: ``[ 3/12  14.2s] trips: append day 7/60``."""

    def __init__(self, total: int, progress: Progress) -> None:
        self.total = total
        self.done = 0
        self.progress = progress
        self.start = time.monotonic()

    def step(self, message: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        self.progress(f"[{self.done:>3}/{self.total} {elapsed:6.1f}s] {message}")

    def note(self, message: str) -> None:
        elapsed = time.monotonic() - self.start
        self.progress(f"[   {'':>{len(str(self.total))}} {elapsed:6.1f}s]   {message}")


def _unit(column: str, salt: str) -> str:
    """SQL for a deterministic pseudo-random number in [0, 1) from a column and a salt."""
    return f"(pmod(xxhash64({column}, '{salt}'), 1000003) / 1000003.0)"


def _pick(column: str, salt: str, values: list[str]) -> str:
    """SQL choosing one of ``values`` deterministically per row."""
    quoted = ", ".join(values)
    index = f"1 + cast(pmod(xxhash64({column}, '{salt}'), {len(values)}) AS int)"
    return f"element_at(array({quoted}), {index})"


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def trips_batch_sql(day_index: int, rows: int) -> str:
    """SQL for one day's trips (0-based ``day_index`` from 2024-08-01), deterministic per id."""
    first_id = day_index * 1_000_000
    day_start = dt.datetime.combine(FIRST_DAY + dt.timedelta(days=day_index), dt.time())
    epoch = int(day_start.replace(tzinfo=dt.UTC).timestamp())
    zones = [_sql_str(z[2]) for z in ZONES]
    u = _unit
    return f"""
    WITH base AS (
      SELECT {first_id} + id AS trip_id,
             -- busier in the daytime: fold a uniform second-of-day towards 08:00-20:00
             cast({epoch} + pmod(xxhash64(id, 'ts'), 86400) AS bigint) AS pickup_s,
             0.4 + 18.0 * pow({u("id", "dist")}, 2.2) AS distance,
             {u("id", "pay")} AS pay_u,
             {u("id", "void")} AS void_u
      FROM range({rows})
    ), trips AS (
      SELECT trip_id,
             cast(1 + pmod(xxhash64(trip_id, 'vendor'), 3) AS int) AS vendor_id,
             timestamp_seconds(pickup_s) AS pickup_ts,
             timestamp_seconds(pickup_s + cast(180 + distance * 150
               + 600 * {u("trip_id", "dur")} AS bigint)) AS dropoff_ts,
             {_pick("trip_id", "pz", zones)} AS pickup_zone,
             {_pick("trip_id", "dz", zones)} AS dropoff_zone,
             cast(CASE WHEN {u("trip_id", "pc")} < 0.70 THEN 1
                       WHEN {u("trip_id", "pc")} < 0.88 THEN 2
                       ELSE 3 + pmod(xxhash64(trip_id, 'pc2'), 4) END AS int) AS passenger_count,
             round(distance, 2) AS trip_distance,
             round((3.0 + distance * 2.5 + 4.0 * {u("trip_id", "fare")})
                   * CASE WHEN void_u < 0.004 THEN -1 ELSE 1 END, 2) AS fare,
             CASE WHEN pay_u < 0.68 THEN 'card' WHEN pay_u < 0.93 THEN 'cash'
                  WHEN pay_u < 0.97 THEN 'dispute' ELSE NULL END AS payment_type,
             CASE WHEN {u("trip_id", "fwd")} < 0.02 THEN 'Y' ELSE 'N' END AS store_and_fwd,
             named_struct(
               'lat', round(40.70 + 0.12 * {u("trip_id", "lat")}, 5),
               'lon', round(-74.02 + 0.16 * {u("trip_id", "lon")}, 5)) AS pickup_loc
      FROM base
    )
    SELECT trip_id, vendor_id, pickup_ts, dropoff_ts, pickup_zone, dropoff_zone,
           passenger_count, trip_distance, fare,
           CASE WHEN payment_type = 'card'
                THEN round(abs(fare) * (0.10 + 0.15 * {u("trip_id", "tip")}), 2)
                WHEN payment_type = 'cash' AND {u("trip_id", "ctip")} < 0.1 THEN 1.0
                ELSE 0.0 END AS tip,
           payment_type, store_and_fwd, pickup_loc,
           filter(array(
             CASE WHEN pickup_zone LIKE '%Airport%' OR dropoff_zone LIKE '%Airport%'
                  THEN 'airport' END,
             CASE WHEN hour(pickup_ts) < 6 THEN 'night' END,
             CASE WHEN passenger_count > 3 THEN 'group' END), x -> x IS NOT NULL) AS tags
    FROM trips
    """


def _snapshot_ids(spark: SparkSession, table: str) -> list[int]:
    rows = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at").collect()
    return [int(r[0]) for r in rows]


def _current_snapshot_id(spark: SparkSession, table: str) -> int:
    rows = spark.sql(
        f"SELECT snapshot_id FROM {table}.history WHERE is_current_ancestor "
        "ORDER BY made_current_at DESC LIMIT 1"
    ).collect()
    return int(rows[0][0])


def _append_day(spark: SparkSession, table: str, day_index: int, scale: Scale) -> None:
    spark.sql(f"INSERT INTO {table} {trips_batch_sql(day_index, scale.rows_per_day)}")


def trips_story(spark: SparkSession, scale: Scale, steps: _Steps) -> None:
    """Write ``demo.trips`` and everything that happens to it, in order."""
    table = f"{SQL_CATALOG}.{NAMESPACE}.trips"
    spark.sql(f"""
      CREATE TABLE {table} (
        trip_id bigint NOT NULL COMMENT 'Unique trip id; grows with time',
        vendor_id int COMMENT 'Taxi technology provider (1-3)',
        pickup_ts timestamp COMMENT 'Meter engaged (UTC)',
        dropoff_ts timestamp COMMENT 'Meter disengaged (UTC)',
        pickup_zone string, dropoff_zone string,
        passenger_count int, trip_distance double COMMENT 'Miles',
        fare double COMMENT 'USD; negative for voided trips', tip double,
        payment_type string, store_and_fwd string,
        pickup_loc struct<lat: double, lon: double>, tags array<string>)
      USING iceberg
      PARTITIONED BY (days(pickup_ts), bucket(16, trip_id))
      TBLPROPERTIES (
        'format-version' = '2',
        'write.delete.mode' = 'merge-on-read',
        'write.update.mode' = 'merge-on-read',
        'write.merge.mode' = 'merge-on-read',
        'write.metadata.delete-after-commit.enabled' = 'false',
        'comment' = 'Synthetic NYC-style taxi trips, one batch a day')
    """)
    steps.step("trips: created (v2, day(pickup_ts) + bucket(16, trip_id), merge-on-read)")

    day = 0
    for _ in range(scale.days_by_day):
        _append_day(spark, table, day, scale)
        day += 1
        if day == scale.month_end_day:
            spark.sql(f"ALTER TABLE {table} CREATE TAG month_end")
            steps.note(f"tag month_end -> day {day} ({FIRST_DAY + dt.timedelta(days=day - 1)})")
        if day % 10 == 0 or day == scale.days_by_day:
            steps.note(f"trips: appended day {day}/{scale.days}")
    steps.step(f"trips: {scale.days_by_day} daily appends, {scale.rows_per_day} trips each")

    spark.sql(f"DELETE FROM {table} WHERE fare < 0")
    steps.step("trips: DELETE voided trips (fare < 0) -> position delete files")
    fix_from = FIRST_DAY + dt.timedelta(days=scale.days_by_day - scale.fix_days)
    spark.sql(
        f"UPDATE {table} SET tip = 0.0 WHERE payment_type = 'cash' AND tip > 0 "
        f"AND pickup_ts >= TIMESTAMP '{fix_from.isoformat()} 00:00:00'"
    )
    steps.step(
        f"trips: UPDATE cash tips to 0 since {fix_from} -> position deletes + new data files"
    )

    # Last week's corrections: disputed trips voided or fixed, and a few late trips. The
    # pickup_ts condition lets Iceberg read only last week's partitions.
    late = trips_batch_sql(scale.days_by_day - 1, max(scale.rows_per_day // 100, 5))
    late_columns = ", ".join(
        "trip_id + 500000 AS trip_id" if c == "trip_id" else c for c in TRIP_COLUMNS
    )
    spark.sql(f"""
      CREATE OR REPLACE TEMPORARY VIEW corrections AS
      SELECT {", ".join(TRIP_COLUMNS)},
             CASE WHEN pmod(trip_id, 3) = 0 THEN 'void' ELSE 'fix' END AS action
      FROM {table} WHERE payment_type = 'dispute' AND pmod(trip_id, 2) = 0
        AND pickup_ts >= TIMESTAMP '{fix_from.isoformat()} 00:00:00'
      UNION ALL
      SELECT {late_columns}, 'late' AS action FROM ({late})
    """)
    spark.sql(f"""
      MERGE INTO {table} t USING corrections src
      ON t.trip_id = src.trip_id AND t.pickup_ts >= TIMESTAMP '{fix_from.isoformat()} 00:00:00'
      WHEN MATCHED AND src.action = 'void' THEN DELETE
      WHEN MATCHED AND src.action = 'fix' THEN
        UPDATE SET fare = round(src.fare * 0.9, 2), payment_type = 'card'
      WHEN NOT MATCHED AND src.action = 'late' THEN
        INSERT ({", ".join(TRIP_COLUMNS)})
        VALUES ({", ".join("src." + c for c in TRIP_COLUMNS)})
    """)
    steps.step("trips: MERGE disputed-trip corrections and late trips")

    result = spark.sql(f"""
      CALL {SQL_CATALOG}.system.rewrite_data_files(
        table => '{NAMESPACE}.trips', strategy => 'binpack',
        where => 'pickup_ts >= "{fix_from.isoformat()} 00:00:00"',
        options => map('min-input-files', '2', 'rewrite-all', 'true'))
    """).collect()[0]
    steps.step(
        f"trips: rewrite_data_files since {fix_from} (where UPDATE and MERGE left small "
        f"files): {result[0]} files -> {result[1]} files"
    )

    snapshots = _snapshot_ids(spark, table)
    keep_from = snapshots[scale.expire_first]
    committed = spark.sql(
        "SELECT date_format(committed_at, 'yyyy-MM-dd HH:mm:ss.SSS') "
        f"FROM {table}.snapshots WHERE snapshot_id = {keep_from}"
    ).collect()[0][0]
    expired = spark.sql(f"""
      CALL {SQL_CATALOG}.system.expire_snapshots(
        table => '{NAMESPACE}.trips', older_than => TIMESTAMP '{committed}',
        retain_last => 1)
    """).collect()[0]
    steps.step(
        f"trips: expire_snapshots older than snapshot #{scale.expire_first + 1} "
        f"({expired['deleted_data_files_count']} data files removed; month_end keeps its own)"
    )

    spark.sql(f"ALTER TABLE {table} ADD COLUMN congestion_fee double COMMENT 'From 2024-09'")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN tip TO tip_amount")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN passenger_count TYPE bigint")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN store_and_fwd")
    steps.step("trips: schema evolution (add congestion_fee, rename tip, int->long, drop)")

    spark.sql(f"ALTER TABLE {table} WRITE ORDERED BY pickup_zone, pickup_ts")
    spark.sql(f"ALTER TABLE {table} REPLACE PARTITION FIELD days(pickup_ts) WITH hours(pickup_ts)")
    steps.step("trips: sort order (pickup_zone, pickup_ts); partition day -> hour")

    new_columns = (
        "trip_id, vendor_id, pickup_ts, dropoff_ts, pickup_zone, dropoff_zone, "
        "passenger_count, trip_distance, fare, tip AS tip_amount, payment_type, pickup_loc, "
        "tags, CASE WHEN pickup_zone LIKE 'Midtown%' THEN 2.5 ELSE 0.0 END AS congestion_fee"
    )
    for _ in range(scale.days_by_hour):
        sql = trips_batch_sql(day, scale.rows_per_day)
        spark.sql(f"INSERT INTO {table} SELECT {new_columns} FROM ({sql})")
        day += 1
    steps.step(f"trips: {scale.days_by_hour} daily appends with the hour spec")

    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD vendor_id")
    for _ in range(scale.days_with_vendor):
        sql = trips_batch_sql(day, scale.rows_per_day)
        spark.sql(f"INSERT INTO {table} SELECT {new_columns} FROM ({sql})")
        day += 1
    steps.step(f"trips: identity(vendor_id) added; {scale.days_with_vendor} more daily appends")

    spark.sql(f"ALTER TABLE {table} CREATE BRANCH audit")
    spark.sql(f"DELETE FROM {table}.branch_audit WHERE fare > 60")
    spark.sql(f"""
      INSERT INTO {table}.branch_audit
      SELECT {new_columns} FROM ({trips_batch_sql(day, max(scale.rows_per_day // 50, 5))})
    """)
    steps.step("trips: branch audit (outliers removed, a preview of tomorrow appended)")


def customers_story(spark: SparkSession, scale: Scale, steps: _Steps) -> None:
    """Write ``demo.customers_v1``: format v1 in the filesystem catalog, v1-safe evolution."""
    table = f"{HADOOP_CATALOG}.{NAMESPACE}.customers_v1"
    countries = [_sql_str(c) for c in COUNTRIES]
    select = f"""
      SELECT id AS customer_id,
             concat('customer-', id) AS name,
             {_pick("id", "country", countries)} AS country,
             date_add(DATE '2019-01-01', cast(pmod(xxhash64(id, 'signup'), 2000) AS int))
               AS signup_date,
             {_pick("id", "tier", ["'gold'", "'silver'", "'bronze'", "'churned'"])} AS tier,
             round(2000 * pow({_unit("id", "ltv")}, 3), 2) AS lifetime_value
      FROM range({{start}}, {{end}})
    """
    spark.sql(f"""
      CREATE TABLE {table} (customer_id bigint, name string, country string,
        signup_date date, tier string, lifetime_value double)
      USING iceberg PARTITIONED BY (country, bucket(4, customer_id))
      TBLPROPERTIES ('format-version' = '1')
    """)
    half = scale.customers // 2
    spark.sql(f"INSERT INTO {table} " + select.format(start=0, end=half))
    spark.sql(f"ALTER TABLE {table} DROP PARTITION FIELD bucket(4, customer_id)")
    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD years(signup_date)")
    spark.sql(f"INSERT INTO {table} " + select.format(start=half, end=scale.customers))
    spark.sql(f"DELETE FROM {table} WHERE tier = 'churned' AND lifetime_value < 1")
    steps.step("customers_v1: v1 table, bucket -> void, + year(signup_date), copy-on-write delete")


def events_story(spark: SparkSession, scale: Scale, steps: _Steps) -> None:
    """Write ``demo.events_v3``: format v3 with deletion vectors from several deletes."""
    table = f"{SQL_CATALOG}.{NAMESPACE}.events_v3"
    kinds = ["'view'", "'click'", "'purchase'", "'signup'", "'bot'"]
    countries = [_sql_str(c) for c in COUNTRIES]
    spark.sql(f"""
      CREATE TABLE {table} (event_id bigint NOT NULL, user_id bigint, event_ts timestamp,
        kind string, country string, amount decimal(10, 2), payload string)
      USING iceberg PARTITIONED BY (days(event_ts), truncate(2, kind))
      TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read',
        'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')
    """)
    per_batch = scale.events // 2
    for batch in range(2):
        spark.sql(f"""
          INSERT INTO {table}
          SELECT id AS event_id, pmod(xxhash64(id, 'user'), {max(per_batch // 10, 10)}) AS user_id,
                 timestamp_seconds(cast(unix_timestamp(TIMESTAMP '2024-09-01 00:00:00')
                   + {batch} * 86400 * 3 + pmod(xxhash64(id, 'ts'), 86400 * 3) AS bigint))
                   AS event_ts,
                 {_pick("id", "kind", kinds)} AS kind,
                 {_pick("id", "country", countries)} AS country,
                 CASE WHEN {_unit("id", "amt")} < 0.3
                      THEN cast(round(200 * {_unit("id", "amt2")}, 2) AS decimal(10, 2)) END
                   AS amount,
                 to_json(named_struct('page', concat('/p/', pmod(id, 97)))) AS payload
          FROM range({batch * per_batch}, {(batch + 1) * per_batch})
        """)
    spark.sql(f"DELETE FROM {table} WHERE kind = 'bot'")
    spark.sql(f"DELETE FROM {table} WHERE pmod(user_id, 7) = 0")
    spark.sql(f"DELETE FROM {table} WHERE country = 'France' AND kind = 'view'")
    spark.sql(f"UPDATE {table} SET amount = 0 WHERE amount < 1")
    steps.step("events_v3: v3 table, 2 appends, 3 deletes + 1 update -> deletion vectors")


ACCOUNT_ID_BASE = 3_000_000_000
"""Account ids start here: above 2**31, so py4j hands them to Java as longs."""


def accounts_batch_sql(start: int, end: int) -> str:
    """SQL for accounts ``start`` to ``end`` (offsets from :data:`ACCOUNT_ID_BASE`)."""
    countries = [_sql_str(c) for c in COUNTRIES[:4]]
    return f"""
      SELECT {ACCOUNT_ID_BASE} + id AS account_id,
             CASE WHEN pmod(id, 13) = 5 THEN NULL ELSE concat('user', id, '@example.org') END
               AS email,
             {_pick("id", "acountry", countries)} AS country,
             cast(round(5000 * {_unit("id", "bal")}, 2) AS decimal(12, 2)) AS balance
      FROM range({start}, {end})
    """


def write_equality_deletes(
    spark: SparkSession,
    table_name: str,
    columns: list[str],
    rows: Sequence[Sequence[object]],
    partition: dict[str, object] | None = None,
) -> None:
    """Commit one equality delete file through Iceberg's Java API (Spark SQL can't write them).

    Spec "Equality Delete Files": the file holds the ``columns`` values of deleted rows and
    applies to data files of lower data sequence number, in its partition (or everywhere when
    written under an unpartitioned spec). ``partition`` gives the partition values by
    partition-field name for the table's current spec. The table is the one Spark's catalog
    loads, so the file is written with that catalog's FileIO and the row delta commits
    through that catalog, whatever it is (JdbcCatalog, or a REST server's commit endpoint).
    """
    jvm = spark.sparkContext._jvm
    gateway = spark.sparkContext._gateway
    assert jvm is not None and gateway is not None
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, table_name
    )
    schema = table.schema()
    field_ids = gateway.new_array(jvm.int, len(columns))
    names = jvm.java.util.ArrayList()
    for i, column in enumerate(columns):
        field_ids[i] = schema.findField(column).fieldId()
        names.add(column)
    delete_schema = schema.select(names)
    spec = table.spec()
    factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(
        schema, spec, field_ids, delete_schema, None
    )
    partition_data = None
    if partition is not None:
        partition_data = jvm.org.apache.iceberg.data.GenericRecord.create(spec.partitionType())
        for name, value in partition.items():
            partition_data.setField(name, value)
    location = table.locationProvider().newDataLocation(
        f"eq-deletes-{int(time.time() * 1000)}-{'-'.join(columns)}.parquet"
    )
    output = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
        table.io().newOutputFile(location)
    )
    writer = factory.newEqDeleteWriter(
        output, jvm.org.apache.iceberg.FileFormat.PARQUET, partition_data
    )
    for values in rows:
        record = jvm.org.apache.iceberg.data.GenericRecord.create(delete_schema)
        for column, value in zip(columns, values, strict=True):
            record.setField(column, value)
        writer.write(record)
    writer.close()
    table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()
    spark.sql(f"REFRESH TABLE {table_name}")


def accounts_story(spark: SparkSession, scale: Scale, steps: _Steps) -> None:
    """Write ``demo.accounts``: equality deletes, global and partition-scoped (format v2).

    Closed accounts are deleted by key under the unpartitioned spec (global deletes), then by
    email with a NULL key (nulls match nulls); the table is partitioned by country; re-opened
    accounts are inserted again with their old ids (a later sequence number, so the old
    deletes must not hide them); finally Italian accounts are deleted in their partition only.
    """
    table = f"{SQL_CATALOG}.{NAMESPACE}.accounts"
    half = scale.accounts // 2
    spark.sql(f"""
      CREATE TABLE {table} (account_id bigint NOT NULL, email string, country string,
        balance decimal(12, 2))
      USING iceberg TBLPROPERTIES ('format-version' = '2')
    """)
    spark.sql(f"ALTER TABLE {table} SET IDENTIFIER FIELDS account_id")
    spark.sql(f"INSERT INTO {table} {accounts_batch_sql(0, half)}")
    closed = [[ACCOUNT_ID_BASE + i] for i in range(0, half, 10)]
    write_equality_deletes(spark, table, ["account_id"], closed)
    write_equality_deletes(spark, table, ["email"], [[None], ["user1@example.org"]])
    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD country")
    reopened = f"SELECT * FROM ({accounts_batch_sql(0, half)}) WHERE pmod(account_id, 20) = 0"
    spark.sql(f"INSERT INTO {table} {reopened}")
    spark.sql(f"INSERT INTO {table} {accounts_batch_sql(half, scale.accounts)}")
    italian = [[ACCOUNT_ID_BASE + i] for i in range(half, scale.accounts, 7)]
    write_equality_deletes(spark, table, ["account_id"], italian, partition={"country": "Italia"})
    steps.step("accounts: equality deletes, global (by id, by email with NULL) and per partition")


def zones_story(spark: SparkSession, steps: _Steps) -> None:
    """Write ``demo.zones``: a small unpartitioned lookup table."""
    table = f"{SQL_CATALOG}.{NAMESPACE}.zones"
    values = ", ".join(
        f"({zid}, {_sql_str(borough)}, {_sql_str(zone)}, {_sql_str(service)})"
        for zid, borough, zone, service in ZONES
    )
    spark.sql(f"""
      CREATE TABLE {table} (zone_id int, borough string, zone string, service_zone string)
      USING iceberg TBLPROPERTIES ('format-version' = '2')
    """)
    spark.sql(f"INSERT INTO {table} VALUES {values}")
    steps.step("zones: unpartitioned lookup table")


TOTAL_STEPS = 18
SQL_TABLES: tuple[str, ...] = ("accounts", "zones", "trips", "events_v3")
"""The story's tables in the SQL (or ``--catalog``) catalog, namespace :data:`NAMESPACE`."""


def write_story(spark: SparkSession, scale: Scale, progress: Progress) -> list[str]:
    """Run every table's story on an open session; returns the tables written."""
    steps = _Steps(TOTAL_STEPS, progress)
    steps.step("Spark is up")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {SQL_CATALOG}.{NAMESPACE}")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {HADOOP_CATALOG}.{NAMESPACE}")
    zones_story(spark, steps)
    trips_story(spark, scale, steps)
    events_story(spark, scale, steps)
    customers_story(spark, scale, steps)
    accounts_story(spark, scale, steps)
    steps.step("done")
    return [f"{NAMESPACE}.{name}" for name in SQL_TABLES] + [
        f"{HADOOP_SUBDIR}:{NAMESPACE}.customers_v1"
    ]


def spark_error_summary(error: BaseException) -> str:
    """One line from a Spark/Py4J error: the Java exception's message, not Py4J's wrapper."""
    java = getattr(error, "java_exception", None)
    text = str(java.toString()) if java is not None else str(error)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return (first or type(error).__name__)[:500]


def stop_quietly(spark: SparkSession) -> None:
    """Stop a session whose JVM may already be gone (after an OutOfMemoryError, say)."""
    with contextlib.suppress(Exception):
        spark.stop()


def is_built(warehouse: Path) -> bool:
    """Whether ``warehouse`` holds a finished demo build."""
    return (warehouse / DONE_MARKER).is_file()


def _check_writable(warehouse: Path) -> None:
    """Fail before Spark starts when the warehouse can't be created or written."""
    probe_dir = warehouse
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise PipelineError(
            f"Cannot create the warehouse at {warehouse}: {probe_dir} is a file, not a folder; "
            "choose another --warehouse."
        )
    try:
        warehouse.mkdir(parents=True, exist_ok=True)
        probe = warehouse / ".icecore-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise PipelineError(
            f"Cannot write the warehouse at {warehouse} ({e.strerror or e}); choose a writable "
            "--warehouse."
        ) from e


@contextmanager
def _all_or_nothing(warehouse: Path, force: bool) -> Iterator[None]:
    """Build in place, undoing everything on failure (and restoring a forced-away build)."""
    backup: Path | None = None
    existed = warehouse.exists()
    if existed and any(warehouse.iterdir()):
        if force and (is_built(warehouse) or (warehouse / BUILDING_MARKER).exists()):
            backup = warehouse.with_name(f"{warehouse.name}.previous-{int(time.time())}")
            warehouse.rename(backup)
            existed = False
        elif (warehouse / BUILDING_MARKER).exists():
            shutil.rmtree(warehouse)  # a crashed build of ours: start over
            existed = False
        else:
            raise PipelineError(
                f"{warehouse} exists and is not an Icecore demo warehouse; choose another "
                "--warehouse or empty it."
            )
    _check_writable(warehouse)
    (warehouse / BUILDING_MARKER).write_text("building\n")
    try:
        yield
    except BaseException:
        if existed:
            for child in warehouse.iterdir():
                if child.is_dir():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        else:
            shutil.rmtree(warehouse, ignore_errors=True)
        if backup is not None:
            backup.rename(warehouse)
        raise
    (warehouse / BUILDING_MARKER).unlink()
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def _forget_demo_tables(spark: SparkSession) -> None:
    """Unregister a previous build's tables from a shared catalog (their files went with it).

    A folder warehouse forgets its tables with its ``catalog.db``; a PostgreSQL or REST
    catalog outlives the folder, so ``--force`` drops them (not their files: the old folder is
    set aside, and a REST server decides about its own) before the story creates them again.
    Only the story's own tables: a shared catalog's ``demo`` namespace may hold others'.
    """
    for name in SQL_TABLES:
        spark.sql(f"DROP TABLE IF EXISTS {SQL_CATALOG}.{NAMESPACE}.{name}")


def check_catalog(catalog: str) -> str:
    """Refuse a ``--catalog`` Spark cannot use, before Spark starts; returns its public name.

    A REST catalog is opened once by Icecore's client, so an unreachable server or a refused
    credential is one sentence now rather than a Java stack trace after Spark has started.
    The name returned holds no secret (a PostgreSQL URI loses its password).
    """
    if is_postgres_uri(catalog):
        return PostgresTarget.parse(catalog).uri
    try:
        if is_rest_catalog(catalog):
            load_catalog(catalog, read_only=False)
            return catalog
    except IcecoreError as e:
        raise PipelineError(f"The demo cannot use the catalog {catalog}: {e}") from e
    raise PipelineError(
        "--catalog takes a postgresql://user@host:port/database URI, an http(s):// REST "
        'catalog URI or the name of a REST entry of icecore.toml (type = "rest"), '
        f"not {catalog!r}."
    )


def build_demo(
    warehouse: str | Path,
    *,
    scale: str = "full",
    force: bool = False,
    master: str | None = None,
    spark: SparkSession | None = None,
    progress: Progress = _stderr_progress,
    catalog: str | None = None,
) -> DemoResult | None:
    """Build the demo warehouse, or keep an existing one (returns ``None`` then).

    Args:
        warehouse: target folder (created if needed).
        scale: ``full`` (the app's demo) or ``mini`` (the tests' fixture).
        force: rebuild even when a finished build is there.
        master: Spark master URL (default ``local[*]`` or ``ICECORE_SPARK_MASTER``).
        spark: reuse an open session (it must have been built for this warehouse with the
            hadoop catalog); otherwise one is started and stopped here.
        progress: receives one line per step.
        catalog: a ``postgresql://`` URI: keep the SQL catalog in that database (shared with
            other users and Spark jobs) instead of ``<warehouse>/catalog.db``; or a REST
            catalog (``http(s)://`` URI or icecore.toml entry name) to create those tables
            through. With ``spark`` given, the session must already have it as ``icecore``.

    Raises:
        PipelineError: a prerequisite is missing or the warehouse can't be written; nothing is
            left half-written.
    """
    from pipeline.spark import build_session, check_prerequisites

    root = Path(warehouse).resolve()
    if scale not in SCALES:
        raise PipelineError(f"Unknown scale {scale!r}; use one of {', '.join(SCALES)}.")
    if is_built(root) and not force:
        progress(f"Demo warehouse already built at {root}; keeping it (use --force to rebuild).")
        return None
    catalog_name = check_catalog(catalog) if catalog is not None else str(root)
    check_prerequisites()
    started = time.monotonic()
    with _all_or_nothing(root, force):
        own_session = spark is None
        session = spark or build_session(
            root, master=master, hadoop_catalog=True, app_name="icecore-demo", catalog=catalog
        )
        try:
            if catalog is not None and force:
                _forget_demo_tables(session)
            tables = write_story(session, SCALES[scale], progress)
        except Exception as e:  # Spark/Py4J errors: one sentence, then undo the build
            raise PipelineError(
                f"The demo build failed and was undone: {spark_error_summary(e)}"
            ) from e
        finally:
            if own_session:
                stop_quietly(session)
        result = DemoResult(
            warehouse=str(root),
            scale=scale,
            seconds=round(time.monotonic() - started, 1),
            sql_catalog=catalog_name,
            hadoop_warehouse=str(root / HADOOP_SUBDIR),
            tables=tables,
        )
        (root / DONE_MARKER).write_text(json.dumps(asdict(result), indent=2) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--warehouse", default="warehouse", help="target folder (./warehouse)")
    parser.add_argument("--force", action="store_true", help="rebuild an existing warehouse")
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    parser.add_argument(
        "--catalog",
        default=None,
        help="keep the SQL catalog's tables elsewhere: postgresql://user@host:port/db "
        "(password from PGPASSWORD or ~/.pgpass), an http(s):// REST catalog URI "
        "(secret from ICECORE_REST_CREDENTIAL or ICECORE_REST_TOKEN) or the name of a "
        "REST entry of icecore.toml",
    )
    args = parser.parse_args(argv)
    try:
        result = build_demo(
            args.warehouse,
            scale=args.scale,
            force=args.force,
            master=args.master,
            catalog=args.catalog,
        )
    except PipelineError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted; the partial warehouse was removed.", file=sys.stderr)
        return 130
    if result is not None:
        print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
