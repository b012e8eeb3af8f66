"""No row value without the reader role, and column masks, enforced where rows are read.

DESIGN.md "Identity, roles and audit". The Spark-written fixture warehouse is opened through
:func:`icecore.catalog.guarded.guard` for a viewer, a reader and masked readers: the viewer
is refused on every row path and still gets plans and counts; the reader gets the rows the
unguarded catalog gives; a masked reader gets the same rows without the masked columns
(Spark, selecting the other columns, is the oracle for one case), is refused a masked column
by name or in a filter, and gets ``SELECT *`` without it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecore.access import Grant, Policy, Principal, Role
from icecore.catalog import load_catalog
from icecore.catalog.guarded import guard
from icecore.errors import Forbidden
from icecore.export import write_parquet
from icecore.point_in_time import At
from icecore.sql import run_sql
from icecore.table import Table
from icecore.table_data import access_of

pytestmark = pytest.mark.spark

GRANTS = (
    Grant("viewers", Role.VIEWER, ("demo.*",)),
    Grant("readers", Role.READER, ("demo.*",)),
    Grant("no-email", Role.READER, ("demo.*",), frozenset({"email", "pickup_loc.lat"})),
    Grant("no-country", Role.READER, ("demo.accounts",), frozenset({"country"})),
    Grant("masked-viewers", Role.VIEWER, ("demo.*",), frozenset({"email"})),
    Grant("no-tip", Role.READER, ("demo.trips",), frozenset({"tip_amount"})),
)
POLICY = Policy(GRANTS)


def _table(warehouse: Path, group: str | None, name: str) -> Table:
    catalog = load_catalog(warehouse)
    if group is None:
        return catalog.load_table(name)
    guarded = guard(catalog, Principal(group, groups=(group,)), POLICY, name="fixture")
    return guarded.load_table(name)


def _canon(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((str(k), _canon(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_canon(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC) if value.tzinfo is None else value
    return value


def _rows(table: pa.Table) -> Counter[Any]:
    return Counter(_canon(tuple(r.values())) for r in table.to_pylist())


def test_a_viewer_gets_plans_and_counts_but_no_row_value(demo_warehouse: Path) -> None:
    viewer = _table(demo_warehouse, "viewers", "demo.accounts")
    plain = _table(demo_warehouse, None, "demo.accounts")
    plan = viewer.scan().plan()
    assert plan.data_files == plain.scan().plan().data_files
    assert plan.files().equals(plain.scan().plan().files())
    # count(*): positions after deletes, no value read.
    unguarded_count = plain.scan().plan().to_arrow().num_rows
    assert run_sql(viewer, "SELECT count(*) AS n FROM rows").to_pylist() == [{"n": unguarded_count}]
    counted = viewer.scan().plan().to_batches(columns=[], metadata_columns=["_pos"])
    assert sum(b.num_rows for b in counted) == unguarded_count
    assert viewer.scan().plan().count().rows == unguarded_count  # Plan.count: viewer-level

    refusals = {
        "to_arrow": lambda: plan.to_arrow(limit=1),
        "to_batches": lambda: next(plan.to_batches(columns=["account_id"])),
        "_partition": lambda: plan.to_arrow(columns=[], metadata_columns=["_partition"]),
        "filtered count": lambda: list(
            viewer.scan("balance > 10").plan().to_batches(columns=[], metadata_columns=["_pos"])
        ),
        "filtered Plan.count": lambda: viewer.scan("balance > 10").plan().count(),
        "sql": lambda: run_sql(viewer, "SELECT account_id FROM rows LIMIT 1"),
        "sql *": lambda: run_sql(viewer, "SELECT * FROM rows LIMIT 1"),
        "sql filtered count": lambda: run_sql(
            viewer, "SELECT count(*) FROM rows", filter="balance > 10"
        ),
        "changelog": lambda: viewer.changelog(None),
        "shared plan": lambda: (
            plain.scan().plan().with_access(access_of(viewer), "demo.accounts").to_arrow(limit=1)
        ),
    }
    for what, refused in refusals.items():
        with pytest.raises(Forbidden, match="needs the reader role and you have the viewer"):
            refused()
            pytest.fail(f"{what} gave rows to a viewer")
    # Metadata tables stay viewer-level.
    assert run_sql(viewer, "SELECT count(*) AS n FROM files").to_pylist()[0]["n"] > 0


def test_a_viewer_cannot_export_and_no_file_is_left(demo_warehouse: Path, tmp_path: Path) -> None:
    viewer = _table(demo_warehouse, "viewers", "demo.accounts")
    plan = viewer.scan().plan()
    out = tmp_path / "rows.parquet"
    with pytest.raises(Forbidden, match="reader role"):
        write_parquet(plan.to_batches(), plan, None, out)
    assert list(tmp_path.iterdir()) == []


def test_a_reader_gets_the_unguarded_rows(demo_warehouse: Path) -> None:
    for name in ("demo.accounts", "demo.trips"):
        reader = _table(demo_warehouse, "readers", name).scan().plan().to_arrow()
        plain = _table(demo_warehouse, None, name).scan().plan().to_arrow()
        assert reader.schema == plain.schema
        assert _rows(reader) == _rows(plain)
    reader_changes = _table(demo_warehouse, "readers", "demo.accounts").changelog(None)
    plain_changes = _table(demo_warehouse, None, "demo.accounts").changelog(None)
    assert reader_changes.equals(plain_changes)


def test_a_masked_reader_gets_sparks_rows_of_the_other_columns(
    spark: Any, demo_warehouse: Path
) -> None:
    masked = _table(demo_warehouse, "no-email", "demo.accounts")
    ours = masked.scan().plan().to_arrow()
    assert ours.column_names == ["account_id", "country", "balance"]
    theirs = spark.sql("SELECT account_id, country, balance FROM icecore.demo.accounts")
    assert _rows(ours) == Counter(_canon(tuple(r)) for r in theirs.collect())
    # Equality deletes on the masked column still apply (they read it from the data file).
    plain = _table(demo_warehouse, None, "demo.accounts").scan().plan().to_arrow()
    assert ours.num_rows == plain.num_rows


def test_a_masked_reader_never_gets_the_masked_column(demo_warehouse: Path) -> None:
    masked = _table(demo_warehouse, "no-email", "demo.accounts")
    plan = masked.scan().plan()
    plain = _table(demo_warehouse, None, "demo.accounts")
    masked_refusals = {
        "by name": lambda: plan.to_arrow(columns=["email"]),
        "by name, any case": lambda: plan.to_arrow(columns=["EMAIL", "country"]),
        "sql": lambda: run_sql(masked, "SELECT email FROM rows"),
        "sql * with it in WHERE": lambda: run_sql(
            masked, "SELECT * FROM rows WHERE email LIKE 'user1%'"
        ),
        "changelog column": lambda: masked.changelog(None, columns=["email"]),
    }
    for what, refused in masked_refusals.items():
        with pytest.raises(Forbidden, match="Column email is masked for you"):
            refused()
            pytest.fail(f"{what} read the masked column")
    filter_refusals = {
        "scan filter": lambda: masked.scan("email = 'user206@example.org'"),
        "sql filter": lambda: run_sql(masked, "SELECT count(*) FROM rows", filter="email > 'u'"),
        "a plan shared by another principal": lambda: (
            plain.scan("email > 'u'").plan().with_access(access_of(masked), "demo.accounts")
        ),
    }
    for what, refused in filter_refusals.items():
        with pytest.raises(Forbidden, match="cannot filter on column email .* masked for you"):
            refused()
            pytest.fail(f"{what} filtered on the masked column")

    star = run_sql(masked, "SELECT * FROM rows")
    assert star.column_names == ["account_id", "country", "balance"]
    expected = plain.scan().plan().to_arrow().drop_columns(["email"])
    assert _rows(star) == _rows(expected)
    # The masked principal's changelog is the changelog of the other columns.
    changes = masked.changelog(None)
    assert "email" not in changes.column_names
    assert changes.num_rows == plain.changelog(None).num_rows


def test_a_masked_nested_field_hides_only_that_field(demo_warehouse: Path) -> None:
    masked = _table(demo_warehouse, "no-email", "demo.trips").scan().plan().to_arrow()
    plain = _table(demo_warehouse, None, "demo.trips").scan().plan().to_arrow()
    loc = masked.schema.field("pickup_loc").type
    assert [f.name for f in loc] == ["lon"]
    assert [f.name for f in plain.schema.field("pickup_loc").type] == ["lat", "lon"]
    expected = plain.set_column(
        plain.schema.get_field_index("pickup_loc"),
        pa.field("pickup_loc", loc),
        pa.array(
            [None if v is None else {"lon": v["lon"]} for v in plain["pickup_loc"].to_pylist()],
            loc,
        ),
    )
    assert _rows(masked) == _rows(expected)


def test_a_masked_column_stays_masked_under_its_old_name(demo_warehouse: Path) -> None:
    """The story renames tip to tip_amount: the mask names the current name, hides both."""
    masked = _table(demo_warehouse, "no-tip", "demo.trips")
    metadata = masked.metadata
    tip_id = metadata.current_schema().find_id_by_name("tip_amount")
    before = [
        s
        for s in masked.snapshots()
        if s.schema_id is not None
        and (schema := metadata.schema_by_id(s.schema_id)) is not None
        and schema.id_to_name().get(tip_id or -1) == "tip"
    ]
    assert before  # snapshots written before the rename
    at = At(snapshot_id=before[-1].snapshot_id)
    plain = _table(demo_warehouse, None, "demo.trips").scan(at=at).plan().to_arrow(limit=5)
    assert "tip" in plain.column_names
    rows = masked.scan(at=at).plan().to_arrow(limit=5)
    assert rows.column_names == [c for c in plain.column_names if c != "tip"]
    with pytest.raises(Forbidden, match="cannot filter on column tip "):
        masked.scan("tip > 1", at=at)
    with pytest.raises(Forbidden, match="Column tip is masked for you"):
        run_sql(masked, "SELECT tip FROM rows", at=at)


def test_metadata_tables_leave_out_values_of_masked_columns(demo_warehouse: Path) -> None:
    plain = _table(demo_warehouse, None, "demo.accounts")
    email_id = plain.metadata.current_schema().find_id_by_name("email")
    for group in ("no-email", "masked-viewers"):
        masked = _table(demo_warehouse, group, "demo.accounts")
        files = masked.inspect.files()
        for column in ("lower_bounds", "upper_bounds"):
            keys = {k for entries in files[column].to_pylist() if entries for k, _ in entries}
            assert email_id not in keys and keys
        metrics = files.schema.field("readable_metrics").type
        assert "email" not in [f.name for f in metrics] and "balance" in [f.name for f in metrics]
        entries = masked.inspect.entries()
        bounds = entries["data_file"].combine_chunks().field("lower_bounds").to_pylist()
        assert email_id not in {k for b in bounds if b for k, _ in b}
    plain_files = plain.inspect.files()
    assert email_id in {k for e in plain_files["lower_bounds"].to_pylist() if e for k, _ in e}


def test_partition_values_of_a_masked_source_column_are_nulled(demo_warehouse: Path) -> None:
    plain = _table(demo_warehouse, None, "demo.accounts")
    masked = _table(demo_warehouse, "no-country", "demo.accounts")
    plain_values = [p["country"] for p in plain.inspect.files()["partition"].to_pylist()]
    assert any(v is not None for v in plain_values)  # the table is partitioned by country
    for files in (masked.inspect.files(), masked.scan().plan().files()):
        assert all(p["country"] is None for p in files["partition"].to_pylist())
    summaries = masked.inspect.manifests()["partition_summaries"].to_pylist()
    assert all(s["lower_bound"] is None for ss in summaries if ss for s in ss)
    with pytest.raises(Forbidden, match="_partition .* masked for you"):
        masked.scan().plan().to_arrow(columns=["account_id"], metadata_columns=["_partition"])
    assert masked.scan().plan().to_arrow().column_names == ["account_id", "email", "balance"]
    # A diff's touched partitions say the value is masked instead of showing it.
    touched = masked.diff(None).partitions_touched
    assert "spec 1: country=masked" in touched
    assert not any(v in label for v in plain_values if v for label in touched)


def test_a_masked_export_holds_the_other_columns(demo_warehouse: Path, tmp_path: Path) -> None:
    masked = _table(demo_warehouse, "no-email", "demo.accounts")
    plan = masked.scan().plan()
    out = tmp_path / "rows.parquet"
    assert write_parquet(plan.to_batches(), plan, None, out) == plan.to_arrow().num_rows
    assert pq.read_schema(out).names == ["account_id", "country", "balance"]
    with pytest.raises(Forbidden, match="Column email is masked"):
        write_parquet(plan.to_batches(columns=["email"]), plan, ["email"], tmp_path / "x.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.parquet"]
