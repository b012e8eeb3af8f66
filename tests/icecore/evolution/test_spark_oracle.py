"""Every kind of Icecore commit on Spark-written v1, v2 and v3 tables, through both catalogs.

After each commit Spark (Iceberg 1.10.2) must describe the table as we do, read the old rows
as the spec says (a new column null, or its initial default; a renamed or widened column with
its old values), append rows that use the change, and agree with Icecore on the rows of its
own later snapshots; PyIceberg 0.12 must open the result. Expected rows are the ones this
test inserted, changed by hand.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from tests.oracle import spark_rows

from .conftest import EvoCatalogs
from .spark_checks import (
    assert_icecore_reads_like_spark,
    assert_spark_sees_schema,
    hadoop_read,
    our_schema,
    partitioning,
    pyiceberg_schema,
    spark_properties,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DDL = (
    "(id bigint NOT NULL, name string, qty int, score float, amount decimal(10,2), "
    "ts timestamp, loc struct<lat: double, lon: double>, tags array<struct<k: string>>, "
    "attrs map<string, struct<v: int>>) USING iceberg PARTITIONED BY (bucket(4, id)) "
    "TBLPROPERTIES ('format-version' = '{version}', 'team' = 'spark')"
)
ROWS = (
    "(1, 'a', 10, 1.5, 1.25, timestamp'2024-01-01 10:00:00', named_struct('lat', 1.0, 'lon', "
    "2.0), array(named_struct('k', 'x')), map('m', named_struct('v', 1))), "
    "(2, 'b', 20, 2.5, 2.50, timestamp'2024-01-02 10:00:00', named_struct('lat', 3.0, 'lon', "
    "4.0), array(named_struct('k', 'y')), map('m', named_struct('v', 2)))"
)
# Columns both engines read the same way (Arrow and PySpark differ on how a map looks).
COMPARABLE = "id, name, qty, score, amount, ts, loc, tags"


def same_schema_as_peer(evo: EvoCatalogs, kind: str, table: Any) -> None:
    def norm(rows: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
        return [(i, n, s.replace(" ", "")) for i, n, s in rows]

    assert norm(pyiceberg_schema(evo, kind, table)) == norm(our_schema(table))


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_every_commit_kind_keeps_spark_reading_and_writing(
    evo: EvoCatalogs, kind: str, version: int
) -> None:
    spark = evo.spark
    name = f"oracle_{kind}_v{version}"
    full = evo.spark_name(kind, name)
    table = evo.create(kind, name, DDL.format(version=version), ROWS)

    # 1. Add columns: top level (with a doc), in a struct, in a list's and a map's structs.
    with table.update_schema() as update:
        update.add_column("note", "string", doc="free text")
        update.add_column("loc.alt", "double")
        update.add_column("tags.w", "int")
        update.add_column("attrs.u", "string")
        if version >= 3:
            update.add_column("tier", "string", required=True, default="basic")
    table = update.result
    assert table is not None
    assert_spark_sees_schema(spark, full, table.metadata.current_schema())
    if kind == "fs":
        # Hadoop reads our version hint (Spark wrote the last one, with a checksum file).
        hint = str(evo.warehouse / "hadoop" / "db" / name / "metadata" / "version-hint.text")
        assert hadoop_read(spark, hint) == table.metadata_location.rsplit("/v", 1)[1].split(".")[0]
    extra = ", tier" if version >= 3 else ""
    # attrs whole: Iceberg 1.10.2's Spark reader fails on attrs['m'].u for files written
    # before u was added to the map's value struct (also after Spark's own ALTER TABLE).
    _, old_rows = spark_rows(
        spark, f"SELECT id, note, loc.alt, tags[0].w, attrs{extra} FROM {full}"
    )
    filled = ("basic",) if version >= 3 else ()
    assert old_rows == {
        (1, None, None, None, ((1, None),), *filled): 1,
        (2, None, None, None, ((2, None),), *filled): 1,
    }
    tier_value = ", 'gold'" if version >= 3 else ""
    spark.sql(
        f"INSERT INTO {full} VALUES (3, 'c', 30, 3.5, 3.75, timestamp'2024-01-03 10:00:00', "
        "named_struct('lat', 5.0, 'lon', 6.0, 'alt', 7.0), array(named_struct('k', 'z', 'w', 8)), "
        f"map('m', named_struct('v', 3, 'u', 'q')), 'new'{tier_value})"
    )
    _, new_row = spark_rows(
        spark, f"SELECT note, loc.alt, tags[0].w, attrs['m'].u FROM {full} WHERE id = 3"
    )
    assert new_row == {("new", 7.0, 8, "q"): 1}
    assert_icecore_reads_like_spark(evo, kind, name, COMPARABLE + ", note" + extra)
    same_schema_as_peer(evo, kind, table.refresh())

    # 2. Rename, widen int/float/decimal, document, move.
    table = table.refresh()
    with table.update_schema() as update:
        update.rename_column("name", "full_name")
        update.update_column("qty", "long", doc="how many")
        update.update_column("score", "double")
        update.update_column("amount", "decimal(14,2)")
        update.move_first("note")
    table = update.result
    assert table is not None
    assert_spark_sees_schema(spark, full, table.metadata.current_schema())
    comments = {r.col_name: r.comment for r in spark.sql(f"DESCRIBE TABLE {full}").collect()}
    assert comments["qty"] == "how many" and comments["note"] == "free text"
    _, widened = spark_rows(spark, f"SELECT id, full_name, qty, score, amount FROM {full}")
    assert widened == {
        (1, "a", 10, 1.5, Decimal("1.25")): 1,
        (2, "b", 20, 2.5, Decimal("2.50")): 1,
        (3, "c", 30, 3.5, Decimal("3.75")): 1,
    }
    spark.sql(
        f"INSERT INTO {full} (note, id, full_name, qty, score, amount, ts, loc, tags, attrs"
        f"{extra}) VALUES ('n4', 4, 'd', 5000000000, 0.1, 123456789012.34, "
        "timestamp'2024-01-04 10:00:00', named_struct('lat', 0.0, 'lon', 0.0, 'alt', 0.0), "
        f"array(), map(){tier_value})"
    )
    _, big = spark_rows(spark, f"SELECT qty, amount FROM {full} WHERE id = 4")
    assert big == {(5_000_000_000, Decimal("123456789012.34")): 1}
    assert_icecore_reads_like_spark(
        evo, kind, name, "note, id, full_name, qty, score, amount, ts, loc, tags" + extra
    )
    same_schema_as_peer(evo, kind, table.refresh())

    # 3. Drop a column and a nested field; identifier fields.
    table = table.refresh()
    with table.update_schema() as update:
        update.delete_column("score")
        update.delete_column("loc.lon")
        update.set_identifier_fields("id")
    table = update.result
    assert table is not None
    assert_spark_sees_schema(spark, full, table.metadata.current_schema())
    assert spark_properties(spark, full)["identifier-fields"] == "[id]"
    _, locs = spark_rows(spark, f"SELECT id, loc FROM {full}")
    assert locs == {
        (1, (1.0, None)): 1,
        (2, (3.0, None)): 1,
        (3, (5.0, 7.0)): 1,
        (4, (0.0, 0.0)): 1,
    }
    same_schema_as_peer(evo, kind, table)

    # 4. Partition spec: partition by day(ts), stop bucketing; new data lands in the new spec.
    table = table.update_spec().add_field("ts", "day").remove_field("id_bucket").commit()
    assert table is not None
    assert partitioning(spark, full) == ["days(ts)"]  # Spark does not list v1's void field
    transforms = [str(f.transform) for f in table.metadata.default_spec().fields]
    assert transforms == (["void", "day"] if version == 1 else ["day"])
    spark.sql(
        f"INSERT INTO {full} (note, id, full_name, qty, amount, ts, loc, tags, attrs{extra}) "
        "VALUES ('n5', 5, 'e', 1, 1.00, timestamp'2024-02-05 10:00:00', "
        f"named_struct('lat', 0.0, 'alt', 0.0), array(), map(){tier_value})"
    )
    new_spec = table.metadata.default_spec_id
    _, files = spark_rows(spark, f"SELECT spec_id, partition.ts_day FROM {full}.files")
    assert files[(new_spec, dt.date(2024, 2, 5))] == 1
    assert sum(files.values()) >= 4
    assert_icecore_reads_like_spark(evo, kind, name, "id, full_name, qty, amount, ts, loc" + extra)

    # 5. Sort order, 6. properties and 7. id made optional again, in one transaction.
    table = table.refresh()
    with table.transaction() as tx:
        tx.update_sort_order().asc("ts").desc("full_name").commit()
        tx.set_properties({"commit.retry.num-retries": "6", "team": "icecore"})
        tx.update_schema().set_identifier_fields().make_column_optional("id").commit()
    table = tx.result
    assert table is not None
    props = spark_properties(spark, full)
    assert props["sort-order"] == "ts ASC NULLS FIRST, full_name DESC NULLS LAST"
    assert (props["team"], props["commit.retry.num-retries"]) == ("icecore", "6")
    spark.sql(
        f"INSERT INTO {full} (note, id, full_name, qty, amount, ts, loc, tags, attrs{extra}) "
        "VALUES ('n6', 6, 'f', 1, 1.00, timestamp'2024-02-06 10:00:00', "
        f"named_struct('lat', 0.0, 'alt', 0.0), array(), map(){tier_value}), "
        "('n7', NULL, 'g', 1, 1.00, timestamp'2024-02-07 10:00:00', "
        f"named_struct('lat', 0.0, 'alt', 0.0), array(), map(){tier_value})"
    )
    assert "identifier-fields" not in spark_properties(spark, full)
    spark.sql(f"DELETE FROM {full} WHERE id = 1")
    _, ids = spark_rows(spark, f"SELECT id FROM {full}")
    assert ids == {(2,): 1, (3,): 1, (4,): 1, (5,): 1, (6,): 1, (None,): 1}
    assert_icecore_reads_like_spark(evo, kind, name, "id, full_name, qty, amount, ts, loc" + extra)
    same_schema_as_peer(evo, kind, table.refresh())
    if version >= 3:
        # 8. v3: a new write default; the initial default (what old rows read) stays.
        table = table.refresh().update_schema().set_default_value("tier", "silver").commit()
        assert table is not None
        _, tiers = spark_rows(spark, f"SELECT id, tier FROM {full} WHERE id IN (2, 3)")
        assert tiers == {(2, "basic"): 1, (3, "gold"): 1}
