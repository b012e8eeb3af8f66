"""Ref operations on copies of Spark-written tables, with Spark (Iceberg 1.10) as the oracle.

For each scenario two copies of a fixture table are made: Icecore acts on one, Spark's own
procedure or DDL on the other (``rollback_to_snapshot``, ``set_current_snapshot``,
``rollback_to_timestamp``, ``CREATE BRANCH ... RETAIN``, ``fast_forward``, ``REPLACE``,
``DROP``, ``publish_changes``, ``cherrypick_snapshot``). After each step the two copies'
refs, current snapshot and snapshot-log must be equal; Spark must read the moved ref as it
read the target snapshot before; Spark's ``refs`` / ``history`` / ``snapshots`` tables must
say what Icecore says; and Spark must keep appending to the branches. Refusals are checked
the same way: Spark refuses too, and Icecore writes nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import CommitConflict, ValidationError
from icecore.table import Table
from tests.icecore.evolution.conftest import EvoCatalogs
from tests.icecore.evolution.hand_table import tree_state
from tests.ui.copies import Copy, copy_hadoop_table, copy_sql_table

from .twins import rollback_and_tag_twins

pytestmark = pytest.mark.spark

DAY_MS = 86_400_000


# Spark and metadata helpers ----------------------------------------------------------------


def load(copy: Copy) -> Table:
    return icecore.load_catalog(copy.catalog).load_table(copy.table)


def call(spark: Any, copy: Copy, procedure: str, **args: object) -> None:
    """``CALL catalog.system.procedure(table => 'db.t', ...)`` on ``copy``."""
    catalog = copy.spark_name.split(".")[0]
    named = "".join(f", {k} => {v}" for k, v in args.items())
    spark.sql(f"CALL {catalog}.system.{procedure}(table => '{copy.table}'{named})").collect()


def fingerprint(
    spark: Any, source: str, columns: Sequence[str] | None = None
) -> tuple[int, Decimal | None]:
    """Row count and an order-free hash sum of the rows (``columns`` only) Spark reads."""
    row_expr = ", ".join(f"`{c}`" for c in columns) if columns is not None else "*"
    row = spark.sql(
        f"SELECT count(*) AS n, sum(cast(xxhash64(to_json(struct({row_expr}))) AS "
        f"decimal(38, 0))) AS h FROM {source}"
    ).collect()[0]
    return int(row.n), row.h


def columns_of(spark: Any, source: str) -> list[str]:
    return list(spark.sql(f"SELECT * FROM {source} LIMIT 0").columns)


def at(copy: Copy, version: int | str) -> str:
    quoted = f"'{version}'" if isinstance(version, str) else str(version)
    return f"{copy.spark_name} VERSION AS OF {quoted}"


def state(copy: Copy) -> dict[str, Any]:
    """What a ref operation decides, read from the metadata file without Icecore."""
    md = copy.metadata()
    log = md["snapshot-log"]
    return {
        "current": md.get("current-snapshot-id"),
        "refs": md["refs"],
        "log": [entry["snapshot-id"] for entry in log],
        # Java stamps a move of main with the new version's last-updated-ms.
        "last_log_is_this_version": bool(log) and log[-1]["timestamp-ms"] == md["last-updated-ms"],
    }


def assert_same_state(ours: Copy, spark_copy: Copy, step: str) -> None:
    assert state(ours) == state(spark_copy), step


def assert_spark_metadata_agrees(spark: Any, copy: Copy) -> None:
    """Spark's refs, history and snapshots tables say what Icecore says."""
    table = load(copy)
    spark_refs = {
        r.name: (r.type, r.snapshot_id, r.max_reference_age_in_ms, r.min_snapshots_to_keep)
        for r in spark.sql(f"SELECT * FROM {copy.spark_name}.refs").collect()
    }
    assert spark_refs == {
        name: (
            ref.type.value.upper(),
            ref.snapshot_id,
            ref.max_ref_age_ms,
            ref.min_snapshots_to_keep,
        )
        for name, ref in table.refs().items()
    }
    spark_history = [
        (r.ms, r.snapshot_id, r.parent_id, r.is_current_ancestor)
        for r in spark.sql(
            "SELECT unix_millis(made_current_at) AS ms, snapshot_id, parent_id, "
            f"is_current_ancestor FROM {copy.spark_name}.history"
        ).collect()
    ]
    assert spark_history == [
        (h.made_current_at_ms, h.snapshot_id, h.parent_id, h.is_current_ancestor)
        for h in table.history()
    ]
    spark_snapshots = {
        (r.snapshot_id, r.parent_id)
        for r in spark.sql(
            f"SELECT snapshot_id, parent_id FROM {copy.spark_name}.snapshots"
        ).collect()
    }
    assert spark_snapshots == {(s.snapshot_id, s.parent_snapshot_id) for s in table.snapshots()}


def spark_refuses(spark: Any, sql: str) -> str:
    """Run ``sql`` expecting Spark to refuse it; returns its message."""
    try:
        spark.sql(sql).collect()
    except Exception as e:  # py4j/pyspark wrap Iceberg's ValidationException and friends
        return str(e)
    raise AssertionError(f"Spark accepted: {sql}")


def spark_time(ms: int) -> str:
    """A Spark timestamp literal (the session time zone is UTC)."""
    text = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return f"TIMESTAMP '{text}'"


def metadata_files(copy: Copy) -> dict[str, tuple[int, int]]:
    return tree_state(copy.folder / "metadata")


# Every operation, Icecore against Spark's procedure ----------------------------------------

TABLES = [
    pytest.param("sql", "trips", True, id="v2-mor-sqlite"),
    pytest.param("fs", "customers_v1", False, id="v1-filesystem"),
    pytest.param("sql", "events_v3", True, id="v3-dv-sqlite"),
]


def _copy(cats: EvoCatalogs, demo_warehouse: Path, kind: str, source: str) -> Copy:
    if kind == "fs":
        return copy_hadoop_table(cats, demo_warehouse, source)
    return copy_sql_table(cats, demo_warehouse, source)


@pytest.mark.parametrize(("kind", "source", "full"), TABLES)
def test_each_operation_matches_spark(
    cats: EvoCatalogs, demo_warehouse: Path, kind: str, source: str, full: bool
) -> None:
    spark = cats.spark
    ours, theirs = (
        _copy(cats, demo_warehouse, kind, source),
        _copy(cats, demo_warehouse, kind, source),
    )
    md = load(ours).metadata
    head = md.current_snapshot_id
    assert head is not None
    ancestors = md.ancestors_of(head)
    assert len(ancestors) >= 3, "the scenario needs a head with two ancestors"
    parent, target = ancestors[1], ancestors[2]
    # A rolled-back branch is read with the table's current schema, a snapshot id or tag
    # with the snapshot's: rows are compared on the columns all of them share.
    shared = [
        c
        for c in columns_of(spark, ours.spark_name)
        if c in columns_of(spark, at(ours, target.snapshot_id))
        and c in columns_of(spark, at(ours, parent.snapshot_id))
    ]
    assert shared

    def rows(source: str) -> tuple[int, Decimal | None]:
        return fingerprint(spark, source, shared)

    expected = {
        "target": rows(at(ours, target.snapshot_id)),
        "parent": rows(at(ours, parent.snapshot_id)),
    }
    assert expected["target"] != rows(ours.spark_name)

    # 1. Roll main back to an ancestor.
    load(ours).manage_snapshots().rollback_to_snapshot(target.snapshot_id).commit()
    call(spark, theirs, "rollback_to_snapshot", snapshot_id=target.snapshot_id)
    assert_same_state(ours, theirs, "rollback_to_snapshot")
    assert state(ours)["current"] == target.snapshot_id
    assert rows(ours.spark_name) == expected["target"]

    # 2. Set main back to the old head: not an ancestor any more, allowed.
    load(ours).manage_snapshots().set_current_snapshot(head).commit()
    call(spark, theirs, "set_current_snapshot", snapshot_id=head)
    assert_same_state(ours, theirs, "set_current_snapshot")

    # 3. Roll back to a time just after the parent was committed: the parent.
    when = parent.timestamp_ms + 1
    load(ours).manage_snapshots().rollback_to_timestamp(when).commit()
    call(spark, theirs, "rollback_to_timestamp", timestamp=spark_time(when))
    assert_same_state(ours, theirs, "rollback_to_timestamp")
    assert state(ours)["current"] == parent.snapshot_id
    assert rows(ours.spark_name) == expected["parent"]

    # 4. A branch and a tag at the target, with retention, in one commit.
    with load(ours).manage_snapshots() as manage:
        manage.create_branch(
            "b1",
            target.snapshot_id,
            max_ref_age_ms=7 * DAY_MS,
            max_snapshot_age_ms=3 * DAY_MS,
            min_snapshots_to_keep=2,
        )
        manage.create_tag("t1", target.snapshot_id, max_ref_age_ms=5 * DAY_MS)
    spark.sql(
        f"ALTER TABLE {theirs.spark_name} CREATE BRANCH b1 AS OF VERSION {target.snapshot_id} "
        "RETAIN 7 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS 3 DAYS"
    )
    spark.sql(
        f"ALTER TABLE {theirs.spark_name} CREATE TAG t1 AS OF VERSION {target.snapshot_id} "
        "RETAIN 5 DAYS"
    )
    assert_same_state(ours, theirs, "create branch and tag")
    assert rows(f"{ours.spark_name}.branch_b1") == expected["target"]
    assert rows(at(ours, "t1")) == expected["target"]

    if full:
        # 5. Fast-forward the branch to main (main's head has the branch head in its history).
        load(ours).manage_snapshots().fast_forward("b1", "main").commit()
        call(spark, theirs, "fast_forward", branch="'b1'", to="'main'")
        assert_same_state(ours, theirs, "fast_forward")
        assert rows(f"{ours.spark_name}.branch_b1") == expected["parent"]

        # 6. Replace the branch and the tag (retention kept), then drop the tag.
        with load(ours).manage_snapshots() as manage:
            manage.replace_branch("b1", target.snapshot_id).replace_tag("t1", head)
        spark.sql(
            f"ALTER TABLE {theirs.spark_name} REPLACE BRANCH b1 AS OF VERSION {target.snapshot_id}"
        )
        spark.sql(f"ALTER TABLE {theirs.spark_name} REPLACE TAG t1 AS OF VERSION {head}")
        assert_same_state(ours, theirs, "replace branch and tag")
        load(ours).manage_snapshots().remove_tag("t1").commit()
        spark.sql(f"ALTER TABLE {theirs.spark_name} DROP TAG t1")
        assert_same_state(ours, theirs, "drop tag")

    assert_spark_metadata_agrees(spark, ours)

    # Spark keeps writing: to the branch, and to main after the rollbacks.
    spark.sql(
        f"INSERT INTO {ours.spark_name}.branch_b1 SELECT * FROM {ours.spark_name}.branch_b1 LIMIT 1"
    )
    assert rows(f"{ours.spark_name}.branch_b1")[0] == expected["target"][0] + 1
    spark.sql(f"INSERT INTO {ours.spark_name} SELECT * FROM {ours.spark_name} LIMIT 1")
    after = load(ours).metadata
    assert rows(ours.spark_name)[0] == expected["parent"][0] + 1
    main = after.current_snapshot()
    assert main is not None and main.parent_snapshot_id == parent.snapshot_id
    branch = after.snapshot_for_ref("b1")
    assert branch is not None and branch.parent_snapshot_id == target.snapshot_id

    if full:
        _refusals_match_spark(spark, ours, theirs, head)


def _refusals_match_spark(spark: Any, ours: Copy, theirs: Copy, old_head: int) -> None:
    """What Spark refuses, Icecore refuses in one sentence, writing nothing."""
    cases = [
        (
            lambda t: t.manage_snapshots().rollback_to_snapshot(old_head),
            f"CALL {theirs.spark_name.split('.')[0]}.system.rollback_to_snapshot("
            f"'{theirs.table}', {old_head})",
        ),
        (
            lambda t: t.manage_snapshots().fast_forward("main", "b1"),
            f"CALL {theirs.spark_name.split('.')[0]}.system.fast_forward('{theirs.table}', "
            "'main', 'b1')",
        ),
        (
            lambda t: t.manage_snapshots().remove_branch("main"),
            f"ALTER TABLE {theirs.spark_name} DROP BRANCH main",
        ),
        (
            lambda t: t.manage_snapshots().create_tag("b1"),
            f"ALTER TABLE {theirs.spark_name} CREATE TAG b1",
        ),
        (
            lambda t: t.manage_snapshots().publish_wap("never-staged"),
            f"CALL {theirs.spark_name.split('.')[0]}.system.publish_changes('{theirs.table}', "
            "'never-staged')",
        ),
    ]
    before = metadata_files(ours)
    for ours_op, spark_sql in cases:
        spark_refuses(spark, spark_sql)
        with pytest.raises(ValidationError) as info:
            ours_op(load(ours))
        message = str(info.value)
        assert "\n" not in message and message.endswith("."), message
    assert metadata_files(ours) == before


# Write-audit-publish ----------------------------------------------------------------------


def _stage(spark: Any, copy: Copy, wap_id: str) -> None:
    """A Spark write staged under ``spark.wap.id`` (the table has write.wap.enabled)."""
    spark.conf.set("spark.wap.id", wap_id)
    try:
        spark.sql(f"INSERT INTO {copy.spark_name} SELECT * FROM {copy.spark_name} LIMIT 2")
    finally:
        spark.conf.unset("spark.wap.id")


def _staged(copy: Copy, wap_id: str) -> int:
    ids = [
        s.snapshot_id
        for s in load(copy).snapshots()
        if s.summary and s.summary.get("wap.id") == wap_id
    ]
    assert len(ids) == 1
    return ids[0]


def _shape(copy: Copy) -> dict[str, Any]:
    """Refs and log by what the snapshots are (WAP ids), since the two copies' new ids differ."""
    md = load(copy).metadata

    def name(snapshot_id: int | None) -> str | int | None:
        snapshot = md.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
        wap = snapshot.summary.get("wap.id") if snapshot and snapshot.summary else None
        return f"wap:{wap}" if wap else snapshot_id

    return {
        "current": name(md.current_snapshot_id),
        "refs": {n: name(r.snapshot_id) for n, r in md.refs.items()},
        "log": [name(e.snapshot_id) for e in md.snapshot_log],
        "snapshots": len(md.snapshots),
    }


def test_write_audit_publish_matches_spark(cats: EvoCatalogs, demo_warehouse: Path) -> None:
    spark = cats.spark
    ours, theirs = (
        copy_sql_table(cats, demo_warehouse, "zones"),
        copy_sql_table(cats, demo_warehouse, "zones"),
    )
    for copy in (ours, theirs):
        spark.sql(f"ALTER TABLE {copy.spark_name} SET TBLPROPERTIES ('write.wap.enabled'='true')")
        _stage(spark, copy, "w1")
    head = load(ours).metadata.current_snapshot_id
    staged = _staged(ours, "w1")
    assert load(ours).metadata.current_snapshot_id == head  # staged, not published
    expected = fingerprint(spark, at(ours, staged))

    load(ours).manage_snapshots().publish_wap("w1").commit()
    call(spark, theirs, "publish_changes", wap_id="'w1'")
    assert _shape(ours) == _shape(theirs)
    assert _shape(ours)["current"] == "wap:w1"
    assert fingerprint(spark, ours.spark_name) == expected

    # A second staged write, cherry-picked by snapshot id.
    for copy in (ours, theirs):
        _stage(spark, copy, "w2")
    load(ours).manage_snapshots().cherrypick_snapshot(_staged(ours, "w2")).commit()
    call(spark, theirs, "cherrypick_snapshot", snapshot_id=_staged(theirs, "w2"))
    assert _shape(ours) == _shape(theirs)
    assert_spark_metadata_agrees(spark, ours)

    # Publishing w1 again: both refuse, nothing written.
    before = metadata_files(ours)
    spark_refuses(
        spark,
        f"CALL {theirs.spark_name.split('.')[0]}.system.publish_changes('{theirs.table}', 'w1')",
    )
    with pytest.raises(ValidationError, match="published already"):
        load(ours).manage_snapshots().publish_wap("w1")
    assert metadata_files(ours) == before

    rows = fingerprint(spark, ours.spark_name)[0]
    spark.sql(f"INSERT INTO {ours.spark_name} SELECT * FROM {ours.spark_name} LIMIT 1")
    assert fingerprint(spark, ours.spark_name)[0] == rows + 1


# Races -------------------------------------------------------------------------------------


def test_spark_append_between_preview_and_commit_is_a_conflict(
    cats: EvoCatalogs, demo_warehouse: Path
) -> None:
    spark = cats.spark
    copy = copy_sql_table(cats, demo_warehouse, "events_v3")
    table = load(copy)
    head = table.metadata.current_snapshot_id
    assert head is not None
    parent = table.metadata.ancestors_of(head)[1].snapshot_id
    manage = table.manage_snapshots().rollback_to_snapshot(parent)
    assert manage.preview().metadata.current_snapshot_id == parent
    rows = fingerprint(spark, copy.spark_name)[0]
    spark.sql(f"INSERT INTO {copy.spark_name} SELECT * FROM {copy.spark_name} LIMIT 1")
    appended = load(copy).metadata.current_snapshot_id
    before = metadata_files(copy)
    with pytest.raises(CommitConflict) as info:
        manage.commit()
    message = str(info.value)
    assert f"main is at {appended} instead of {head}" in message, message
    assert "(append)" in message, message
    assert metadata_files(copy) == before
    assert fingerprint(spark, copy.spark_name)[0] == rows + 1  # the append is kept


# PostgreSQL --------------------------------------------------------------------------------


def test_postgres_catalog_rollback_and_tag_match_spark(cats_pg: EvoCatalogs) -> None:
    spark = cats_pg.spark
    ddl = "(id bigint, s string) USING iceberg TBLPROPERTIES ('format-version' = '2')"
    for name in ("r_ours", "r_spark"):
        cats_pg.create("pg", name, ddl, "(1, 'a')", "(2, 'b')", "(3, 'c')")
    rollback_and_tag_twins(
        spark,
        lambda: cats_pg.load("pg", "r_ours"),
        lambda: cats_pg.load("pg", "r_spark"),
        cats_pg.spark_name("pg", "r_ours"),
        cats_pg.spark_name("pg", "r_spark"),
    )
