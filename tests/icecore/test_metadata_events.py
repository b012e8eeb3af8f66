"""Metadata events and the state at a snapshot, against what Spark did and what Spark reads.

Spark performs each kind of metadata commit on a private table (its own catalogs on a
temporary warehouse; the fixture warehouse is never changed). After each statement the
table's metadata file is taken from the catalog's SQLite database, without Icecore, and the
events Icecore gives for that file must name the change the statement made: the expected
values are written from the SQL run here. The schema, partition spec and sort order at a
snapshot are held to Spark's reads: the columns of ``VERSION AS OF`` and the spec and sort
order ids Spark recorded on the data files that snapshot wrote (``all_entries``).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icecore import metadata_events as events_module
from icecore.metadata_events import MetadataEvent, metadata_events
from icecore.metadata_log import read_log_file, read_newest_first, state_at
from icecore.point_in_time import At
from icecore.progress import reporting
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.icecore.test_cli import icecore_cli

pytestmark = pytest.mark.spark

_names = itertools.count()


@pytest.fixture(scope="module")
def evo(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EvoCatalogs]:
    yield register_catalogs(spark, tmp_path_factory.mktemp("events"))


def _location(evo: EvoCatalogs, name: str) -> str:
    """The table's current metadata file, from the JdbcCatalog's SQLite table (not Icecore)."""
    with sqlite3.connect(evo.warehouse / "catalog.db") as conn:
        (found,) = conn.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'db' "
            "AND table_name = ?",
            (name,),
        ).fetchone()
    return str(found).removeprefix("file:")


def _snapshot(spark: Any, full: str) -> int:
    return int(
        spark.sql(
            f"SELECT snapshot_id FROM {full}.snapshots ORDER BY committed_at DESC LIMIT 1"
        ).collect()[0][0]
    )


def _same(a: str, b: str) -> bool:
    return Path(a.removeprefix("file:")) == Path(b.removeprefix("file:"))


def _of(events: list[MetadataEvent], location: str, kind: str) -> MetadataEvent:
    found = [e for e in events if _same(e.metadata_file, location) and e.kind == kind]
    assert len(found) == 1, (kind, location, [(e.metadata_file, e.kind) for e in events])
    return found[0]


def test_each_spark_metadata_commit_is_an_event_that_names_its_change(evo: EvoCatalogs) -> None:
    spark = evo.spark
    name = f"events_{next(_names)}"
    full = evo.spark_name("sql", name)
    spark.sql(
        f"CREATE TABLE {full} (id bigint, name string, amount int, ts timestamp) USING iceberg "
        "PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version' = '1')"
    )
    spark.sql(f"INSERT INTO {full} VALUES (1, 'a', 10, TIMESTAMP '2024-01-01 10:00:00')")
    first = _snapshot(spark, full)
    made: dict[str, str] = {}

    def run(step: str, sql: str) -> None:
        spark.sql(sql)
        made[step] = _location(evo, name)

    run("upgrade", f"ALTER TABLE {full} SET TBLPROPERTIES ('format-version' = '2')")
    run("add", f"ALTER TABLE {full} ADD COLUMN note string")
    run("rename", f"ALTER TABLE {full} RENAME COLUMN name TO full_name")
    run("type", f"ALTER TABLE {full} ALTER COLUMN amount TYPE bigint")
    run("add_field", f"ALTER TABLE {full} ADD PARTITION FIELD days(ts)")
    run("drop_field", f"ALTER TABLE {full} DROP PARTITION FIELD bucket(4, id)")
    run("order", f"ALTER TABLE {full} WRITE ORDERED BY id DESC NULLS LAST, full_name")
    run("set", f"ALTER TABLE {full} SET TBLPROPERTIES ('team.name' = 'data eng', 'x.y' = '1')")
    run("change", f"ALTER TABLE {full} SET TBLPROPERTIES ('x.y' = '2')")
    run("unset", f"ALTER TABLE {full} UNSET TBLPROPERTIES ('x.y')")
    current = _snapshot(spark, full)
    run("branch", f"ALTER TABLE {full} CREATE BRANCH dev")
    run("tag", f"ALTER TABLE {full} CREATE TAG keep AS OF VERSION {first}")
    run("drop_tag", f"ALTER TABLE {full} DROP TAG keep")

    events = metadata_events(evo.load("sql", name))

    upgrade = _of(events, made["upgrade"], "format_version")
    assert (upgrade.details["before"], upgrade.details["after"]) == (1, 2)
    assert "upgraded from 1 to 2" in upgrade.changes[0]

    def field_changes(step: str) -> list[tuple[str, str, str, str]]:
        event = _of(events, made[step], "schema")
        return [
            (c["kind"], c["name"], c["before"], c["after"]) for c in event.details["field_changes"]
        ]

    assert field_changes("add") == [("added", "note", "", "string")]
    assert field_changes("rename") == [("renamed", "full_name", "name", "full_name")]
    assert field_changes("type") == [("type", "amount", "int", "long")]  # Spark's bigint
    assert "renamed name to full_name" in _of(events, made["rename"], "schema").changes[0]

    added = _of(events, made["add_field"], "spec").details
    assert [(f["transform"], f["source"]) for f in added["fields_added"]] == [("day", "ts")]
    assert added["fields_removed"] == []
    dropped = _of(events, made["drop_field"], "spec").details
    assert [(f["transform"], f["source"]) for f in dropped["fields_removed"]] == [
        ("bucket[4]", "id")
    ]
    assert dropped["fields_added"] == []

    order = _of(events, made["order"], "sort_order")
    assert [
        (f["source"], f["transform"], f["direction"], f["null_order"])
        for f in order.details["fields"]
    ] == [
        ("id", "identity", "desc", "nulls-last"),
        ("full_name", "identity", "asc", "nulls-first"),  # Spark's default for ASC
    ]
    assert "id DESC NULLS LAST, full_name ASC NULLS FIRST" in order.changes[0]

    set_ = _of(events, made["set"], "properties").details
    assert set_["set"] == {"team.name": "data eng", "x.y": "1"}
    assert _of(events, made["change"], "properties").details["changed"] == {"x.y": ["1", "2"]}
    unset = _of(events, made["unset"], "properties")
    assert unset.details["removed"] == {"x.y": "2"}
    assert unset.changes == ("removed x.y (was '2')",)

    branch = _of(events, made["branch"], "ref").details["created"]
    assert branch == [{"name": "dev", "type": "branch", "snapshot_id": current}]
    tag = _of(events, made["tag"], "ref").details["created"]
    assert tag == [{"name": "keep", "type": "tag", "snapshot_id": first}]
    gone = _of(events, made["drop_tag"], "ref").details["removed"]
    assert gone == [{"name": "keep", "type": "tag", "snapshot_id": first}]

    # Each statement made one metadata file, and no file made an event of another kind
    # (WRITE ORDERED BY also sets write.distribution-mode: Spark's own property).
    kinds = {
        step: {e.kind for e in events if _same(e.metadata_file, f)} for step, f in made.items()
    }
    assert kinds["order"] == {"sort_order", "properties"}
    assert _of(events, made["order"], "properties").details["set"] == {
        "write.distribution-mode": "range"
    }
    assert all(len(k) == 1 for step, k in kinds.items() if step != "order"), kinds


def test_the_state_at_each_snapshot_is_what_spark_reads_and_wrote_with(
    evo: EvoCatalogs,
) -> None:
    spark = evo.spark
    name = f"states_{next(_names)}"
    full = evo.spark_name("sql", name)
    spark.sql(
        f"CREATE TABLE {full} (id bigint, name string, ts timestamp) USING iceberg "
        "PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('format-version' = '2')"
    )
    spark.sql(f"INSERT INTO {full} VALUES (1, 'a', TIMESTAMP '2024-01-01 10:00:00')")
    snapshots = [_snapshot(spark, full)]
    spark.sql(f"ALTER TABLE {full} ADD COLUMN note string")
    spark.sql(f"ALTER TABLE {full} RENAME COLUMN name TO full_name")
    spark.sql(f"INSERT INTO {full} VALUES (2, 'b', TIMESTAMP '2024-01-02 10:00:00', 'x')")
    snapshots.append(_snapshot(spark, full))
    spark.sql(f"ALTER TABLE {full} REPLACE PARTITION FIELD bucket(4, id) WITH days(ts)")
    spark.sql(f"ALTER TABLE {full} WRITE ORDERED BY id")
    spark.sql(f"INSERT INTO {full} VALUES (3, 'c', TIMESTAMP '2024-01-03 10:00:00', 'y')")
    snapshots.append(_snapshot(spark, full))
    spark.sql(f"ALTER TABLE {full} ADD COLUMN later int")
    spark.sql(f"ALTER TABLE {full} ADD PARTITION FIELD bucket(2, id)")

    table = evo.load("sql", name)
    for snapshot_id in snapshots:
        state = state_at(table, At(snapshot_id=snapshot_id))
        assert state.exact, state.note
        columns = spark.sql(f"SELECT * FROM {full} VERSION AS OF {snapshot_id}").columns
        assert [f.name for f in state.schema.fields] == columns
        written = spark.sql(
            f"SELECT DISTINCT data_file.spec_id FROM {full}.all_entries "
            f"WHERE snapshot_id = {snapshot_id} AND status = 1"
        ).collect()
        assert [r[0] for r in written] == [state.spec.spec_id]
    # Today's state differs from the first snapshot's: the test would pass on no old code.
    today = table.metadata
    first = state_at(table, At(snapshot_id=snapshots[0]))
    assert first.schema.schema_id != today.current_schema_id
    assert first.spec.spec_id != today.default_spec_id
    assert first.sort_order.order_id != today.default_sort_order_id
    last = state_at(table, At(snapshot_id=snapshots[-1]))
    id_field = today.current_schema().find_field_by_name("id")
    assert id_field is not None
    assert [(f.direction.value, f.source_id) for f in last.sort_order.fields] == [
        ("asc", id_field.field_id)
    ]
    # A branch reads with today's schema, a tag with its snapshot's (Iceberg's schemaFor).
    spark.sql(f"ALTER TABLE {full} CREATE TAG t0 AS OF VERSION {snapshots[0]}")
    spark.sql(f"ALTER TABLE {full} CREATE BRANCH b0 AS OF VERSION {snapshots[0]}")
    table = evo.load("sql", name)
    tagged = state_at(table, At(ref="t0"))
    branched = state_at(table, At(ref="b0"))
    assert [f.name for f in tagged.schema.fields] == spark.table(f"{full}.tag_t0").columns
    assert [f.name for f in branched.schema.fields] == spark.table(f"{full}.branch_b0").columns
    assert tagged.spec.spec_id == first.spec.spec_id
    assert branched.spec.spec_id == table.metadata.default_spec_id


def test_a_missing_old_metadata_file_is_an_event_not_a_crash(evo: EvoCatalogs) -> None:
    spark = evo.spark
    name = f"missing_{next(_names)}"
    full = evo.spark_name("sql", name)
    spark.sql(f"CREATE TABLE {full} (id bigint) USING iceberg")
    spark.sql(f"ALTER TABLE {full} ADD COLUMN a string")
    middle = _location(evo, name)
    spark.sql(f"ALTER TABLE {full} ADD COLUMN b int")
    last = _location(evo, name)
    spark.sql(f"INSERT INTO {full} VALUES (1, 'x', 2)")
    Path(middle).unlink()

    events = metadata_events(evo.load("sql", name))

    missing = _of(events, middle, "unreadable")
    assert middle in missing.changes[0] and "missing" in missing.changes[0]
    schema = _of(events, last, "schema")
    assert "1 file between cannot be read" in schema.changes[0]
    assert [(c["kind"], c["name"]) for c in schema.details["field_changes"]] == [
        ("added", "a"),
        ("added", "b"),
    ]
    assert state_at(evo.load("sql", name)).exact  # its own file is there


def test_reading_is_bounded_told_to_the_listener_and_cached(
    evo: EvoCatalogs, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark = evo.spark
    name = f"bounded_{next(_names)}"
    full = evo.spark_name("sql", name)
    spark.sql(f"CREATE TABLE {full} (id bigint) USING iceberg")
    for i in range(4):
        spark.sql(f"ALTER TABLE {full} SET TBLPROPERTIES ('k' = '{i}')")
    table = evo.load("sql", name)
    assert len(table.metadata.metadata_log) == 4

    # Files 0 (create) to 4 (current, in hand): two reads compare 3 with 4 and 2 with 3.
    bounded = metadata_events(table, max_files=2)
    assert bounded[0].kind == "not_read"
    assert bounded[0].details["files_not_read"] == 2
    assert [e.details["changed"] for e in bounded[1:]] == [{"k": ["1", "2"]}, {"k": ["2", "3"]}]

    told: list[tuple[str, int, int]] = []
    events_module._PAIRS.clear()
    with reporting(lambda *a: told.append(a)):
        events = metadata_events(table)
    assert [e.kind for e in events] == ["properties"] * 4
    assert told[-1] == ("Reading earlier metadata files", 4, 4)
    reads: list[str] = []
    real = read_log_file

    def counted(t: Any, location: str, timestamp_ms: int) -> Any:
        reads.append(location)
        return real(t, location, timestamp_ms)

    monkeypatch.setattr(events_module, "read_log_file", counted)
    assert metadata_events(table) == events and reads == []  # each file read once
    assert len(list(read_newest_first(table, [(table.metadata_location, 0)] * 3, max_files=2))) == 2


def test_the_cli_adds_the_events_among_the_snapshots_only_when_asked(evo: EvoCatalogs) -> None:
    spark = evo.spark
    name = f"cli_{next(_names)}"
    full = evo.spark_name("sql", name)
    spark.sql(f"CREATE TABLE {full} (id bigint) USING iceberg")
    spark.sql(f"INSERT INTO {full} VALUES (1)")
    spark.sql(f"ALTER TABLE {full} ADD COLUMN c string")
    altered = _location(evo, name)
    spark.sql(f"INSERT INTO {full} VALUES (2, 'x')")
    second = _snapshot(spark, full)

    plain = icecore_cli("history", evo.table_arg("sql", name))
    assert plain.returncode == 0, plain.stderr
    rows = json.loads(plain.stdout)
    assert all("kind" not in r for r in rows)
    asked = icecore_cli("history", evo.table_arg("sql", name), "--metadata")
    assert asked.returncode == 0, asked.stderr
    both = json.loads(asked.stdout)
    assert [r for r in both if "kind" not in r] == rows
    events = [r for r in both if "kind" in r]
    schema = [e for e in events if e["kind"] == "schema"]
    assert len(schema) == 1 and _same(schema[0]["metadata_file"], altered)
    assert schema[0]["details"]["field_changes"][0] | {"field_id": 0} == {
        "kind": "added",
        "field_id": 0,
        "name": "c",
        "before": "",
        "after": "string",
    }
    assert dt.datetime.fromisoformat(schema[0]["time"]).tzinfo is not None
    order = [r.get("kind") or r["snapshot_id"] for r in both]
    assert order.index("schema") < order.index(second)  # in time order


def test_a_rollback_moves_main_and_a_retention_change_is_named(evo: EvoCatalogs) -> None:
    spark = evo.spark
    name = f"refs_{next(_names)}"
    full = evo.spark_name("sql", name)
    spark.sql(f"CREATE TABLE {full} (id bigint) USING iceberg")
    spark.sql(f"INSERT INTO {full} VALUES (1)")
    first = _snapshot(spark, full)
    spark.sql(f"INSERT INTO {full} VALUES (2)")
    second = _snapshot(spark, full)
    spark.sql(f"ALTER TABLE {full} CREATE BRANCH b AS OF VERSION {first} RETAIN 7 DAYS")
    spark.sql(f"ALTER TABLE {full} REPLACE BRANCH b AS OF VERSION {first} RETAIN 3 DAYS")
    retained = _location(evo, name)
    spark.sql(f"CALL {evo.sql}.system.rollback_to_snapshot('db.{name}', {first})")
    rolled = _location(evo, name)

    events = metadata_events(evo.load("sql", name))

    moved = _of(events, rolled, "ref")
    assert moved.details["moved"] == [
        {"name": "main", "type": "branch", "before": second, "after": first}
    ]
    retention = _of(events, retained, "ref").details["retention"]
    day_ms = 24 * 3600 * 1000
    assert retention == [
        {"name": "b", "setting": "max_ref_age_ms", "before": 7 * day_ms, "after": 3 * day_ms}
    ]
