"""Row-level changelogs against Spark's ``create_changelog_view`` (Iceberg 1.10).

Where Spark's procedure answers (ranges without delete manifests), rows must match as
multisets. Where it refuses ("Delete files are currently not supported in changelog
scans"), the test asserts the refusal and checks Icecore against a second oracle: Spark's
full reads of the two snapshots, ``EXCEPT ALL`` both ways (the net change of the range).
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore.changelog import CHANGE_TYPE, METADATA_COLUMNS, changelog, changelog_snapshots
from icecore.errors import ValidationError
from icecore.table import Table
from tests.oracle import arrow_rows, canon, spark_rows

pytestmark = pytest.mark.spark

REFUSAL = "Delete files are currently not supported in changelog scans"
_views = itertools.count()


def _load(warehouse: Path, name: str) -> Table:
    if name.startswith("hadoop."):
        return icecore.load_table(f"{warehouse}/hadoop::{name.removeprefix('hadoop.')}")
    return icecore.load_table(f"{warehouse}::{name}")


def _spark_table(name: str) -> tuple[str, str]:
    """(catalog, table argument) of a fixture table name."""
    if name.startswith("hadoop."):
        return "hadoop", name.removeprefix("hadoop.")
    return "icecore", name


def _spark_changelog(
    spark: Any, name: str, start: int | None, end: int, extra: str = ""
) -> tuple[list[str], Counter[tuple[Any, ...]]]:
    catalog, arg = _spark_table(name)
    options = [f"'end-snapshot-id', '{end}'"]
    if start is not None:
        options.insert(0, f"'start-snapshot-id', '{start}'")
    view = f"changelog_{next(_views)}"
    spark.sql(
        f"CALL {catalog}.system.create_changelog_view(table => '{arg}', "
        f"options => map({', '.join(options)}), changelog_view => '{view}'{extra})"
    )
    return spark_rows(spark, f"SELECT * FROM {view}")


def _ids(table: Table) -> list[int]:
    """Snapshot ids of the main lineage, oldest first."""
    current = table.snapshot()
    assert current is not None
    return [s.snapshot_id for s in reversed(table.metadata.ancestors_of(current.snapshot_id))]


def _signed(rows: Counter[tuple[Any, ...]], sign: int) -> Counter[tuple[Any, ...]]:
    return Counter({k: sign * v for k, v in rows.items()})


def _icecore_signed(result: pa.Table, names: list[str]) -> dict[tuple[Any, ...], int]:
    """Net change per row of ``names``: INSERT +1, DELETE -1, zeros dropped."""
    signed: Counter[tuple[Any, ...]] = Counter()
    types = result.column(CHANGE_TYPE).to_pylist()
    for row, change in zip(result.select(names).to_pylist(), types, strict=True):
        key = tuple(canon(v) for v in row.values())
        signed[key] += 1 if change in ("INSERT", "UPDATE_AFTER") else -1
    return {k: v for k, v in signed.items() if v}


def _except_all_oracle(
    spark: Any, name: str, table: Table, start: int, end: int
) -> tuple[list[str], dict[tuple[Any, ...], int]]:
    """Spark's reads at ``end`` EXCEPT ALL ``start`` (+) and the reverse (-), on shared columns."""
    names = []
    for snapshot_id in (start, end):
        snapshot = table.metadata.snapshot_by_id(snapshot_id)
        assert snapshot is not None and snapshot.schema_id is not None
        schema = table.metadata.schema_by_id(snapshot.schema_id)
        assert schema is not None
        names.append({f.name for f in schema.fields})
    current = [f.name for f in table.metadata.current_schema().fields]
    shared = [n for n in current if n in names[0] and n in names[1]]
    catalog, arg = _spark_table(name)
    cols = ", ".join(f"`{n}`" for n in shared)
    ref = f"{catalog}.{arg}"

    def read(a: int, b: int) -> Counter[tuple[Any, ...]]:
        sql = (
            f"SELECT {cols} FROM {ref} VERSION AS OF {a} "
            f"EXCEPT ALL SELECT {cols} FROM {ref} VERSION AS OF {b}"
        )
        return spark_rows(spark, sql)[1]

    signed = read(end, start)
    signed.update(_signed(read(start, end), -1))
    return shared, {k: v for k, v in signed.items() if v}


def _assert_matches_spark(
    spark: Any, warehouse: Path, name: str, start: int | None, end: int, **options: Any
) -> pa.Table:
    extra = ""
    if options.get("identifier_columns") is not None:
        cols = ", ".join(f"'{c}'" for c in options["identifier_columns"])
        extra += f", identifier_columns => array({cols})"
    if options.get("net_changes"):
        extra += ", net_changes => true"
    columns, expected = _spark_changelog(spark, name, start, end, extra)
    result = changelog(_load(warehouse, name), start, end, **options)
    assert result.column_names == columns
    assert arrow_rows(result) == expected
    return result


def test_append_ranges_match_spark(spark: Any, demo_warehouse: Path) -> None:
    """Append-only ranges: every row an INSERT of its snapshot, ordinals from 0."""
    zones = _load(demo_warehouse, "demo.zones")
    result = _assert_matches_spark(spark, demo_warehouse, "demo.zones", None, _ids(zones)[-1])
    assert result.num_rows > 0
    ids = _ids(_load(demo_warehouse, "demo.trips"))
    for start, end in [(ids[0], ids[1]), (ids[0], ids[3]), (ids[1], ids[2])]:
        result = _assert_matches_spark(spark, demo_warehouse, "demo.trips", start, end)
        assert set(result.column(CHANGE_TYPE).to_pylist()) == {"INSERT"}
    accounts = _ids(_load(demo_warehouse, "demo.accounts"))
    _assert_matches_spark(spark, demo_warehouse, "demo.accounts", None, accounts[0])


def test_update_images_and_net_changes_match_spark(spark: Any, demo_warehouse: Path) -> None:
    """``identifier_columns`` (updates on by default) and ``net_changes`` as Spark has them."""
    ids = _ids(_load(demo_warehouse, "demo.trips"))
    _assert_matches_spark(
        spark, demo_warehouse, "demo.trips", ids[0], ids[3], identifier_columns=["trip_id"]
    )
    _assert_matches_spark(spark, demo_warehouse, "demo.trips", ids[0], ids[3], net_changes=True)
    accounts = _ids(_load(demo_warehouse, "demo.accounts"))
    _assert_matches_spark(
        spark, demo_warehouse, "demo.accounts", None, accounts[0], identifier_columns=["account_id"]
    )


def test_copy_on_write_delete_matches_spark(spark: Any, demo_warehouse: Path) -> None:
    """A v1 copy-on-write DELETE rewrites files: carry-overs go, only deleted rows stay."""
    name = "hadoop.demo.customers_v1"
    ids = _ids(_load(demo_warehouse, name))
    result = _assert_matches_spark(spark, demo_warehouse, name, ids[-2], ids[-1])
    assert set(result.column(CHANGE_TYPE).to_pylist()) == {"DELETE"}
    _assert_matches_spark(spark, demo_warehouse, name, None, ids[-1])
    _assert_matches_spark(spark, demo_warehouse, name, None, ids[-1], net_changes=True)
    _assert_matches_spark(
        spark, demo_warehouse, name, ids[0], ids[-1], identifier_columns=["customer_id"]
    )


def test_whole_file_delete_in_v3_matches_spark(spark: Any, demo_warehouse: Path) -> None:
    """A DELETE that drops whole files (no deletion vector) is within what Spark answers."""
    ids = _ids(_load(demo_warehouse, "demo.events_v3"))
    result = _assert_matches_spark(spark, demo_warehouse, "demo.events_v3", ids[1], ids[2])
    assert set(result.column(CHANGE_TYPE).to_pylist()) == {"DELETE"}
    _assert_matches_spark(spark, demo_warehouse, "demo.events_v3", None, ids[2])


def _delete_manifest_snapshots(table: Table) -> list[int]:
    """Main-lineage snapshots Spark's changelog refuses: they list any delete manifest."""
    refused = []
    for snapshot_id in _ids(table):
        snapshot = table.metadata.snapshot_by_id(snapshot_id)
        assert snapshot is not None
        manifests = table.manifests(snapshot)
        if any(m.content.name == "DELETES" for m in manifests):
            refused.append(snapshot_id)
    return refused


@pytest.mark.parametrize("name", ["demo.trips", "demo.events_v3", "demo.accounts"])
def test_delete_files_refused_by_spark_checked_by_except_all(
    spark: Any, demo_warehouse: Path, name: str
) -> None:
    """Merge-on-read ranges: Spark 1.10 refuses; Icecore equals the snapshots' difference.

    Every single-snapshot step (the changelog without net changes, as a signed multiset) and
    the whole range with ``net_changes`` are compared with ``EXCEPT ALL`` of full reads.
    """
    table = _load(demo_warehouse, name)
    ids = _ids(table)
    refused = set(_delete_manifest_snapshots(table))
    assert refused, f"{name} should have delete files"
    steps = [(a, b) for a, b in itertools.pairwise(ids) if b in refused]
    first_start, last_end = steps[0][0], steps[-1][1]
    for start, end in steps:
        if changelog_snapshots(table, start, end):
            with pytest.raises(Exception, match=REFUSAL):
                _spark_changelog(spark, name, start, end)
        else:  # a replace snapshot alone: skipped before Spark looks for delete manifests
            assert not _spark_changelog(spark, name, start, end)[1]
        shared, expected = _except_all_oracle(spark, name, table, start, end)
        result = changelog(table, start, end)
        assert set(result.column("_commit_snapshot_id").to_pylist()) <= {end}
        assert _icecore_signed(result, shared) == expected, (name, start, end)
    shared, expected = _except_all_oracle(spark, name, table, first_start, last_end)
    net = changelog(table, first_start, last_end, net_changes=True)
    assert _icecore_signed(net, shared) == expected
    full = changelog(table, first_start, last_end)
    assert _icecore_signed(full, shared) == expected


def test_merge_on_read_update_pairs(demo_warehouse: Path) -> None:
    """A MOR UPDATE deletes by position and re-inserts: with ``trip_id`` they pair up."""
    table = _load(demo_warehouse, "demo.trips")
    ids = _ids(table)
    update = next(
        s
        for s in ids
        if (snap := table.metadata.snapshot_by_id(s)) is not None
        and snap.summary is not None
        and snap.summary.get("operation") == "overwrite"
    )
    parent = ids[ids.index(update) - 1]
    result = changelog(table, parent, update, identifier_columns=["trip_id"])
    kinds = Counter(result.column(CHANGE_TYPE).to_pylist())
    assert kinds["UPDATE_BEFORE"] == kinds["UPDATE_AFTER"] > 0
    plain = changelog(table, parent, update)
    names = [c for c in plain.column_names if c not in METADATA_COLUMNS]
    assert _icecore_signed(result, names) == _icecore_signed(plain, names)


def test_options_and_errors(demo_warehouse: Path) -> None:
    """Columns select after carry-over removal; bad ranges and option mixes are refused."""
    table = _load(demo_warehouse, "demo.trips")
    ids = _ids(table)
    result = changelog(table, ids[0], ids[2], columns=["trip_id"])
    assert result.column_names == ["trip_id", *METADATA_COLUMNS]
    assert sorted(set(result.column("_change_ordinal").to_pylist())) == [0, 1]
    assert changelog(table, ids[2], ids[2]).num_rows == 0
    with pytest.raises(ValidationError, match="not a parent ancestor"):
        changelog(table, ids[2], ids[1])
    with pytest.raises(ValidationError, match="net changes"):
        changelog(table, ids[0], ids[1], identifier_columns=["trip_id"], net_changes=True)
    with pytest.raises(ValidationError, match="identifier columns"):
        changelog(table, ids[0], ids[1], compute_updates=True)
