"""One point in time (:mod:`icecore.point_in_time`): checked when made, resolved as Spark reads.

The rules are held to Spark on the fixture's trips table, whose schema evolved after its
``month_end`` tag and before its ``audit`` branch: the columns Spark reads ``VERSION AS OF``
and ``TIMESTAMP AS OF`` each point, and the rows it counts there (which snapshot it read).
A hand-written v3 table with a branch and a tag on one old snapshot (schema 0, while the
table's current schema is 1) settles the branch/tag rule without Spark. Every public door
gives the same answer for the keywords and for the value.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import NotFound, ValidationError
from icecore.health import count_live_rows
from icecore.point_in_time import CURRENT, At, point_of
from icecore.sql import run_sql
from tests.icecore.test_cli import icecore_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "metadata"
V3 = DATA / "handwritten" / "v3-full.metadata.json"
EMPTY = DATA / "spark" / "trips-00000.metadata.json"
OLD, NEW = 3051729675574597004, 3055729675574597004
"""v3-full's snapshots: OLD written with schema 0 (``x``), NEW (current) with schema 1."""


# --- made once, checked when made ---------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "sentence"),
    [
        (lambda: At(snapshot_id=-1), "Snapshot id -1 is negative"),
        (lambda: At.of(snapshot_id=-7), "Snapshot id -7 is negative"),
        (lambda: At.of(as_of="yesterday-ish"), "'yesterday-ish' is not an ISO-8601 time"),
        (lambda: At.of(as_of="2024-13-01"), "is not an ISO-8601 time"),
        (lambda: At.of(snapshot_id=1, ref="main"), "not several"),
        (lambda: At(ref="main", as_of_ms=0), "not several"),
        # Several is said first, even when the time is also unreadable.
        (lambda: At.of(ref="main", as_of="not a time"), "not several"),
        (lambda: point_of(At(ref="main"), snapshot_id=1), "not several"),
        (lambda: At(ref=""), "is not a branch or tag name"),
        (lambda: At(snapshot_id="5"), "is not a whole number"),  # type: ignore[arg-type]
        (lambda: At(snapshot_id=True), "is not a whole number"),
    ],
)
def test_a_point_is_checked_when_it_is_made(make: Any, sentence: str) -> None:
    with pytest.raises(ValidationError, match=sentence) as raised:
        make()
    assert str(raised.value).count(". ") == 0 and str(raised.value).endswith(".")  # one sentence


def test_one_time_spelled_three_ways_is_one_value() -> None:
    ms = (dt.datetime(2024, 8, 9, 10, tzinfo=dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // (
        dt.timedelta(milliseconds=1)
    )
    spellings = [
        At.of(as_of="2024-08-09T10:00:00Z"),
        At.of(as_of="2024-08-09 12:00:00+02:00"),
        At.of(as_of="2024-08-09T10:00:00"),  # no offset: UTC
        At.of(as_of=dt.datetime(2024, 8, 9, 10, tzinfo=dt.UTC)),
        At.of(as_of=ms),
    ]
    assert {a.as_of_ms for a in spellings} == {ms}
    assert len(set(spellings)) == 1
    assert At.of() == CURRENT and CURRENT.is_current and not At(ref="main").is_current
    assert At(ref="main") != CURRENT  # the names differ; what they read is compared by key


def test_what_a_user_types_in_one_box() -> None:
    refs = {"main", "v1.0", "2024"}
    assert At.guess("42", refs) == At(snapshot_id=42)
    assert At.guess(42, refs) == At(snapshot_id=42)
    assert At.guess("v1.0", refs) == At(ref="v1.0")
    assert At.guess("2024-08-09", refs) == At.of(as_of="2024-08-09")
    with pytest.raises(ValidationError, match="ISO-8601"):
        At.guess("no-such-thing", refs)
    with pytest.raises(ValidationError, match="negative"):
        At.guess("-3", refs)


# --- resolved once: Spark's rules, without Spark ----------------------------------------------


def test_a_branch_reads_todays_schema_and_a_tag_its_snapshots() -> None:
    """v3-full: branch ``audit`` and tag ``v1.0`` both point at OLD (schema 0, one column)."""
    table = icecore.load_table(str(V3))
    current = table.metadata.current_schema()
    assert current.schema_id == 1 and [f.name for f in current.fields] == ["x", "y", "z"]

    tag = table.resolve(At(ref="v1.0"))
    by_id = table.resolve(At(snapshot_id=OLD))
    by_time = table.resolve(At.of(as_of=1515100955770 + 1))
    for point in (tag, by_id, by_time):
        assert point.snapshot_id == OLD
        assert [f.name for f in point.schema.fields] == ["x"]
        assert not point.reads_branch
    branch = table.resolve(At(ref="audit"))
    assert branch.snapshot_id == OLD and branch.schema == current and branch.reads_branch
    main, now = table.resolve(At(ref="main")), table.resolve()
    assert main.snapshot_id == now.snapshot_id == NEW
    # One read, named two ways, has one key; a tag and its snapshot's id too; the branch at
    # that snapshot reads another schema, so it is another read.
    assert main.key == now.key
    assert tag.key == by_id.key == by_time.key
    assert len({now.key, tag.key, branch.key}) == 3
    # A resolved point passed down is not resolved again.
    assert table.resolve(tag) is tag
    assert table.scan(at=tag).schema is tag.schema


def test_points_that_name_nothing_are_one_sentence_each() -> None:
    table = icecore.load_table(str(V3))
    with pytest.raises(NotFound, match="Snapshot 42 does not exist"):
        table.resolve(At(snapshot_id=42))
    with pytest.raises(NotFound, match=r"no branch or tag named 'nope' \(it has: audit, main"):
        table.resolve(At(ref="nope"))
    with pytest.raises(NotFound, match="no snapshot as of 2018-01-04T21:22:35.769"):
        table.resolve(At(as_of_ms=1515100955770 - 1))  # before the first snapshot
    empty = icecore.load_table(str(EMPTY))
    assert empty.resolve().snapshot is None  # an empty table reads as empty...
    assert empty.resolve().schema == empty.metadata.current_schema()
    with pytest.raises(NotFound, match="no branch or tag named 'main'"):
        empty.resolve(At(ref="main"))  # ... but has no main to name


def test_the_keywords_and_the_value_give_the_same_answer_without_spark() -> None:
    table = icecore.load_table(str(V3))
    for keywords, at in [
        ({}, CURRENT),
        ({"snapshot_id": OLD}, At(snapshot_id=OLD)),
        ({"ref": "v1.0"}, At(ref="v1.0")),
        ({"ref": "audit"}, At(ref="audit")),
        ({"as_of": "2018-01-04T21:22:35.770Z"}, At(as_of_ms=1515100955770)),
    ]:
        assert table.snapshot(**keywords) == table.snapshot(at=at)
        assert table.scan(**keywords).schema == table.scan(at=at).schema
        assert table.scan(**keywords).snapshot == table.scan(at=at).snapshot
    with pytest.raises(ValidationError, match="not several"):
        table.scan(ref="main", at=At(ref="main"))
    with pytest.raises(ValidationError, match="not several"):
        table.inspect("snapshots", snapshot_id=OLD, at=CURRENT)


def test_points_typed_or_made_name_the_same_snapshot() -> None:
    table = icecore.load_table(str(V3))
    assert table.point("v1.0") == table.point(At(ref="v1.0")) == table.point(At(snapshot_id=OLD))
    assert table.point(str(NEW)) == table.point(CURRENT) == table.point(table.resolve())
    with pytest.raises(NotFound, match="neither a snapshot id"):
        table.point("-5")
    empty = icecore.load_table(str(EMPTY))
    with pytest.raises(NotFound, match="has no snapshot yet"):
        empty.point(CURRENT)


def test_the_cli_says_a_bad_point_in_one_sentence() -> None:
    for args, sentence in [
        (["--snapshot", "-5"], "Snapshot id -5 is negative; snapshot ids are positive."),
        (["--as-of", "soon"], "'soon' is not an ISO-8601 time"),
    ]:
        result = icecore_cli("plan", str(V3), *args)
        assert result.returncode == 1
        assert sentence in result.stderr and "Traceback" not in result.stderr


# --- held to Spark ---------------------------------------------------------------------------


def _spark_read(spark: Any, clause: str) -> tuple[list[str], int]:
    """The columns Spark reads at a point of trips, and the rows it counts there."""
    source = f"icecore.demo.trips {clause}".strip()
    columns = spark.sql(f"SELECT * FROM {source}").columns
    count = spark.sql(f"SELECT count(*) FROM {source}").collect()[0][0]
    return columns, count


@pytest.mark.spark
def test_each_point_reads_the_snapshot_and_schema_spark_reads(
    spark: Any, demo_warehouse: Path
) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    refs = table.refs()
    tagged = refs["month_end"].snapshot_id
    current = table.metadata.current_snapshot_id
    log = table.history()
    alive = [e for e in log if table.metadata.snapshot_by_id(e.snapshot_id) is not None]
    first_ms, last_ms = alive[0].made_current_at_ms, alive[-1].made_current_at_ms
    points = [
        (CURRENT, ""),
        (At(ref="main"), "VERSION AS OF 'main'"),
        (At(ref="month_end"), "VERSION AS OF 'month_end'"),
        (At(ref="audit"), "VERSION AS OF 'audit'"),
        (At(snapshot_id=tagged), f"VERSION AS OF {tagged}"),
        (At(snapshot_id=current), f"VERSION AS OF {current}"),
        (At(as_of_ms=first_ms), f"TIMESTAMP AS OF timestamp_millis({first_ms})"),
        (At(as_of_ms=last_ms + 1), f"TIMESTAMP AS OF timestamp_millis({last_ms + 1})"),
    ]
    seen: dict[str, list[str]] = {}
    counted: dict[int | None, int] = {}  # ours, once per snapshot (it reads every data file)
    for at, clause in points:
        columns, count = _spark_read(spark, clause)
        point = table.resolve(at)
        assert [f.name for f in point.schema.fields] == columns, at
        if point.snapshot_id not in counted:
            counted[point.snapshot_id] = count_live_rows(table, at=point)
        assert counted[point.snapshot_id] == count, at
        seen[str(at)] = columns
    assert len(counted) >= 3  # the current snapshot, the tag's and the branch's at least
    # The fixture tells the rules apart: the tag (and a time before the evolution) read an
    # older schema than the branch and the current table.
    assert seen["ref month_end"] != seen["the current snapshot"]
    assert seen["ref audit"] == seen["the current snapshot"]
    before = log[0].made_current_at_ms - 1
    with pytest.raises(NotFound, match="no snapshot as of"):
        table.resolve(At(as_of_ms=before))
    with pytest.raises(Exception, match="(?i)cannot find a snapshot older than"):
        spark.sql(
            f"SELECT * FROM icecore.demo.trips TIMESTAMP AS OF timestamp_millis({before})"
        ).collect()


def _paths(plan: Any) -> list[str]:
    return sorted(plan.files().column("file_path").to_pylist())


@pytest.mark.spark
def test_every_public_door_gives_one_answer_for_the_keywords_and_the_value(
    demo_warehouse: Path,
) -> None:
    name = f"{demo_warehouse}::demo.trips"
    table = icecore.load_table(name)
    tagged = table.refs()["month_end"].snapshot_id
    alive = [e for e in table.history() if table.metadata.snapshot_by_id(e.snapshot_id)]
    as_of = dt.datetime.fromtimestamp(alive[0].made_current_at_ms / 1000, dt.UTC)
    cases = [
        ({"snapshot_id": tagged}, At(snapshot_id=tagged), ["--snapshot", str(tagged)]),
        ({"ref": "audit"}, At(ref="audit"), ["--ref", "audit"]),
        ({"as_of": as_of.isoformat()}, At.of(as_of=as_of), ["--as-of", as_of.isoformat()]),
    ]
    for keywords, at, flags in cases:
        by_keywords = table.scan(**keywords).plan()
        by_value = table.scan(at=at).plan()
        assert by_keywords.report.snapshot_id == by_value.report.snapshot_id
        assert _paths(by_keywords) == _paths(by_value)
        assert by_keywords.schema == by_value.schema
        assert table.inspect("files", **keywords).equals(table.inspect("files", at=at))
        result = icecore_cli("plan", name, *flags)
        assert result.returncode == 0, result.stderr
        planned = json.loads(result.stdout)
        assert planned["snapshot_id"] == by_value.report.snapshot_id
        assert sorted(planned["data_files"]) == _paths(by_value)
    # Two points of a diff, typed or made.
    made = table.diff(At(ref="month_end"), At(ref="main")).to_dict()
    assert made == table.diff("month_end", "main").to_dict()
    # SQL takes the value alone (it is a door below the keywords): the value or its resolution.
    query = "SELECT count(*) AS n FROM files"
    tag = At(snapshot_id=tagged)
    assert run_sql(table, query, at=tag).equals(run_sql(table, query, at=table.resolve(tag)))
    assert run_sql(table, query, at=tag).to_pylist() == [
        {"n": table.inspect("files", snapshot_id=tagged).num_rows}
    ]
