"""Opening tables: every way a user names one, and every way that can go wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import InvalidMetadata, NotFound, Unsupported, ValidationError


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime: proof that nothing was written."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.spark
def test_three_ways_to_name_a_table(spark: Any, demo_warehouse: Path) -> None:
    by_catalog = icecore.load_table(f"{demo_warehouse}::demo.trips")
    by_metadata = icecore.load_table(by_catalog.metadata_location)
    assert by_metadata.metadata == by_catalog.metadata
    fs_table = icecore.load_table(demo_warehouse / "hadoop" / "demo" / "customers_v1")
    assert fs_table.format_version == 1
    spark_ids = {
        r.snapshot_id
        for r in spark.sql("SELECT * FROM hadoop.demo.customers_v1.snapshots").collect()
    }
    assert {s.snapshot_id for s in fs_table.snapshots()} == spark_ids


@pytest.mark.spark
def test_time_travel_selectors_match_spark(spark: Any, demo_warehouse: Path) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    refs = {
        r.name: r.snapshot_id for r in spark.sql("SELECT * FROM icecore.demo.trips.refs").collect()
    }
    for name, snapshot_id in refs.items():
        snapshot = table.snapshot(ref=name)
        assert snapshot is not None and snapshot.snapshot_id == snapshot_id
    history = spark.sql(
        "SELECT unix_millis(made_current_at) AS ms, snapshot_id FROM icecore.demo.trips.history "
        "ORDER BY made_current_at"
    ).collect()
    jvm = spark.sparkContext._jvm
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, "icecore.demo.trips"
    )
    snapshot_util = jvm.org.apache.iceberg.util.SnapshotUtil
    for row in history:
        for at_ms in (row.ms, row.ms + 1):
            java_id = snapshot_util.snapshotIdAsOfTime(java_table, at_ms)
            if table.metadata.snapshot_by_id(java_id) is None:
                with pytest.raises(NotFound, match="has been expired"):
                    table.snapshot(as_of=at_ms)
                continue
            ours = table.snapshot(as_of=at_ms)
            assert ours is not None and ours.snapshot_id == java_id
    first_ms = history[0].ms
    with pytest.raises(NotFound, match="no snapshot as of"):
        table.snapshot(as_of=first_ms - 1)
    with pytest.raises(NotFound, match="no branch or tag named 'nope'"):
        table.snapshot(ref="nope")
    with pytest.raises(NotFound, match="Snapshot 42 does not exist"):
        table.snapshot(snapshot_id=42)
    with pytest.raises(ValidationError, match="not several"):
        table.snapshot(snapshot_id=1, ref="main")
    with pytest.raises(ValidationError, match="ISO-8601"):
        table.snapshot(as_of="yesterday-ish")


def copy_table(demo_warehouse: Path, tmp_path: Path) -> Path:
    source = demo_warehouse / "hadoop" / "demo" / "customers_v1"
    target = tmp_path / "customers_v1"
    shutil.copytree(source, target)
    return target


@pytest.mark.spark
def test_corrupt_truncated_and_future_metadata(demo_warehouse: Path, tmp_path: Path) -> None:
    table_dir = copy_table(demo_warehouse, tmp_path)
    metadata = sorted((table_dir / "metadata").glob("v*.metadata.json"))[-1]
    text = metadata.read_text()
    before = tree_state(tmp_path)

    truncated = tmp_path / "truncated.metadata.json"
    truncated.write_text(text[: len(text) // 2])
    with pytest.raises(InvalidMetadata, match="truncated.metadata.json"):
        icecore.load_table(str(truncated))

    corrupt = tmp_path / "corrupt.metadata.json"
    corrupt.write_bytes(b"\x00\xffnot json at all")
    with pytest.raises(InvalidMetadata, match="corrupt.metadata.json"):
        icecore.load_table(str(corrupt))

    future = tmp_path / "future.metadata.json"
    future.write_text(json.dumps({**json.loads(text), "format-version": 4}))
    with pytest.raises(Unsupported, match="4"):
        icecore.load_table(str(future))

    with pytest.raises(NotFound, match="does not exist"):
        icecore.load_table(str(tmp_path / "missing.metadata.json"))
    with pytest.raises(NotFound, match="is not a table"):
        icecore.load_table(str(tmp_path / "no-such-table-dir"))
    after = tree_state(tmp_path)
    for name in ("truncated.metadata.json", "corrupt.metadata.json", "future.metadata.json"):
        after.pop(name)
    assert after == before, "reading must never write"


@pytest.mark.spark
def test_version_hint_naming_a_missing_file_through_load_table(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    table_dir = copy_table(demo_warehouse, tmp_path)
    (table_dir / "metadata" / "version-hint.text").write_text("99")
    with pytest.raises(InvalidMetadata, match="names version 99"):
        icecore.load_table(str(table_dir))
