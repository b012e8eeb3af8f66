"""Totals against Spark, and each health check on inputs whose answer is worked out by hand.

Expiry follows Iceberg Java's ``RemoveSnapshots`` (see :mod:`icecore.health`); its cases use
the golden trips metadata (12 snapshots S0..S11: S0..S9 on ``main``, S10 and S11 only on
``audit``, tag ``month_end`` on S0), with "now" chosen relative to their timestamps.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore import health
from icecore.health import Status, Totals
from icecore.layout import snapshot_files
from icecore.manifest import ManifestFile
from icecore.metadata import SnapshotRef, SnapshotRefType, TableMetadata, parse_metadata
from tests.icecore.fakes import DEMO_TABLES, manifest_file
from tests.icecore.fakes import files as fake_files

GOLDEN = Path(__file__).resolve().parents[1] / "data/metadata/spark/trips-00024.metadata.json"
DAY_MS = 24 * 3600 * 1000


@pytest.mark.spark
@pytest.mark.parametrize(("spark_name", "spec"), DEMO_TABLES)
def test_totals_and_live_rows_match_spark(
    spark: Any, demo_warehouse: Path, spark_name: str, spec: str
) -> None:
    table = icecore.load_table(spec.format(w=demo_warehouse))
    snapshot = table.snapshot()
    manifests = table.manifests(snapshot) if snapshot else []
    t = health.totals(snapshot, manifests, snapshot_files(table, snapshot))
    row = spark.sql(
        f"""SELECT
          count_if(content = 0), sum(if(content = 0, file_size_in_bytes, 0)),
          sum(if(content = 0, record_count, 0)),
          count_if(content = 1 AND file_format <> 'PUFFIN'),
          count_if(content = 1 AND file_format = 'PUFFIN'), count_if(content = 2),
          sum(if(content <> 0, file_size_in_bytes, 0)), sum(if(content <> 0, record_count, 0))
        FROM {spark_name}.files"""
    ).collect()[0]
    assert (
        t.data_files,
        t.data_bytes,
        t.rows,
        t.position_delete_files,
        t.deletion_vectors,
        t.equality_delete_files,
        t.delete_bytes,
        t.delete_records,
    ) == tuple(v or 0 for v in row)
    counts = spark.sql(
        f"SELECT count_if(content = 0), count_if(content = 1) FROM {spark_name}.manifests"
    ).collect()[0]
    assert (t.data_manifests, t.delete_manifests) == tuple(counts)
    live = spark.sql(f"SELECT count(*) FROM {spark_name}").collect()[0][0]
    assert health.count_live_rows(table) == live
    assert t.summary.get("total-data-files") is not None


# --- checks on hand-made inputs --------------------------------------------------------


def _metadata(**changes: Any) -> TableMetadata:
    return dataclasses.replace(parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN)), **changes)


def _files(sizes: list[int], partitions: list[str] | None = None) -> pa.Table:
    return fake_files([(size, 1) for size in sizes], partitions=partitions or ["p=0"] * len(sizes))


def test_small_files_warn_from_five_files_under_three_quarters_of_the_target() -> None:
    metadata = _metadata(properties={"write.target-file-size-bytes": "1000"})  # small < 750
    warn = health.small_files(metadata, _files([100, 200, 300, 400, 500, 800, 900]))
    assert warn.status is Status.WARN
    assert dict(warn.evidence)["smaller than 750 B"] == 5
    ok = health.small_files(metadata, _files([100, 200, 300, 400, 800, 900]))
    assert ok.status is Status.OK


def _totals(rows: int, delete_records: int, delete_files: int) -> Totals:
    return Totals(
        snapshot_id=1,
        data_files=10,
        data_bytes=1000,
        rows=rows,
        position_delete_files=delete_files,
        deletion_vectors=0,
        equality_delete_files=0,
        delete_bytes=10,
        delete_records=delete_records,
        data_manifests=1,
        delete_manifests=1,
        manifest_bytes=100,
        summary={},
    )


def test_deletes_warn_at_the_rewrite_ratio() -> None:
    assert health.deletes(_totals(100, 30, 2)).status is Status.WARN  # 30% = threshold
    assert health.deletes(_totals(100, 29, 2)).status is Status.INFO
    assert health.deletes(_totals(100, 0, 0)).status is Status.OK


def _manifest(length: int) -> ManifestFile:
    return manifest_file(length=length)


def test_manifests_warn_when_many_or_tiny() -> None:
    metadata = _metadata(properties={})
    many = health.manifests(metadata, [_manifest(8 * 1024 * 1024)] * 100)
    assert many.status is Status.WARN and many.title == "Many manifests"
    # 10 manifests of 800 KiB: under a tenth of the 8 MiB target.
    tiny = health.manifests(metadata, [_manifest(800 * 1024)] * 10)
    assert tiny.status is Status.WARN and tiny.title == "Small manifests"
    assert health.manifests(metadata, [_manifest(800 * 1024)] * 9).status is Status.OK
    fewer = _metadata(properties={"commit.manifest.min-count-to-merge": "3"})
    assert health.manifests(fewer, [_manifest(8 * 1024 * 1024)] * 3).status is Status.WARN


def test_partition_skew_compares_the_biggest_partition_with_the_median() -> None:
    skewed = health.partition_skew(_files([10, 10, 10, 100], ["a", "b", "c", "d"]))
    assert skewed.status is Status.WARN
    assert dict(skewed.evidence)["largest / median"] == 10.0
    assert dict(skewed.evidence)["largest partition"] == "spec 0: d"
    even = health.partition_skew(_files([10, 10, 10, 30], ["a", "b", "c", "d"]))
    assert even.status is Status.OK


def _ids(metadata: TableMetadata) -> list[int]:
    return [s.snapshot_id for s in sorted(metadata.snapshots, key=lambda s: s.timestamp_ms)]


def test_expiry_keeps_branch_heads_and_tags_past_the_default_age() -> None:
    metadata = _metadata()
    s = _ids(metadata)
    now = max(x.timestamp_ms for x in metadata.snapshots) + 10 * DAY_MS
    expected = {*s[1:9], s[10]}  # main keeps S9, audit S11, the tag S0
    assert set(health.snapshots_to_expire(metadata, now)) == expected
    finding = health.expiry(metadata, now)
    assert finding.status is Status.WARN and dict(finding.evidence)["expirable now"] == 9


def test_expiry_honours_min_snapshots_to_keep() -> None:
    metadata = _metadata(properties={"history.expire.min-snapshots-to-keep": "3"})
    s = _ids(metadata)
    now = max(x.timestamp_ms for x in metadata.snapshots) + 10 * DAY_MS
    # main keeps S9, S8, S7; audit keeps S11, S10, S9; the tag keeps S0.
    assert set(health.snapshots_to_expire(metadata, now)) == set(s[1:7])


def test_an_expired_tag_protects_nothing_and_unreferenced_snapshots_age_out() -> None:
    metadata = _metadata()
    s = _ids(metadata)
    now = max(x.timestamp_ms for x in metadata.snapshots) + 10 * DAY_MS
    refs = dict(metadata.refs)
    refs["month_end"] = SnapshotRef(s[0], SnapshotRefType.TAG, max_ref_age_ms=DAY_MS)
    assert s[0] in health.snapshots_to_expire(_metadata(refs=refs), now)
    del refs["audit"]
    expired = set(health.snapshots_to_expire(_metadata(refs=refs), now))
    assert {s[10], s[11]} <= expired  # no branch reaches them any more


def test_nothing_expires_while_every_snapshot_is_young() -> None:
    metadata = _metadata()
    now = max(x.timestamp_ms for x in metadata.snapshots) + 1000
    assert health.snapshots_to_expire(metadata, now) == ()
    assert health.expiry(metadata, now).status is Status.OK


def _holds_until_checked(metadata: TableMetadata, now: int) -> int | None:
    """expiry_holds_until at ``now``, checked against snapshots_to_expire.

    The answer must be the same at every time up to it: probed at each snapshot time plus
    each age (and one ms either side) and on a grid.
    """
    until = health.expiry_holds_until(metadata, now)
    expected = health.snapshots_to_expire(metadata, now)
    end = until if until is not None else now + 400 * DAY_MS
    ages = [5 * DAY_MS, DAY_MS, 2 * DAY_MS, 3 * DAY_MS, 7 * DAY_MS]
    probes = {now, end, *(now + (end - now) * k // 16 for k in range(17))}
    probes |= {s.timestamp_ms + a + d for s in metadata.snapshots for a in ages for d in (-1, 0, 1)}
    for t in sorted(p for p in probes if now <= p <= end):
        assert health.snapshots_to_expire(metadata, t) == expected, (now, t, until)
    return until


def test_an_expiry_verdict_holds_until_a_snapshot_passes_an_age() -> None:
    metadata = _metadata()
    s = sorted(metadata.snapshots, key=lambda x: x.timestamp_ms)
    young = s[-1].timestamp_ms + 1000  # nothing expires yet (see the test above)
    until = _holds_until_checked(metadata, young)
    # The oldest snapshot passes the default 5-day age first (the tag keeps it, so the bound is
    # conservative there); the next one expires one ms after it passes.
    assert until == s[0].timestamp_ms + 5 * DAY_MS
    passing = s[1].timestamp_ms + 5 * DAY_MS
    assert health.snapshots_to_expire(metadata, passing) == ()
    assert health.snapshots_to_expire(metadata, passing + 1) == (s[1].snapshot_id,)
    assert _holds_until_checked(metadata, until + 1) == passing
    # From any later time the same holds, up to the next snapshot's passing.
    for now in (until + 1, s[3].timestamp_ms + 5 * DAY_MS, s[-1].timestamp_ms + 10 * DAY_MS):
        _holds_until_checked(metadata, now)
    # Once every snapshot is past every age, nothing changes any more.
    assert health.expiry_holds_until(metadata, s[-1].timestamp_ms + 400 * DAY_MS) is None


def test_ref_ages_count_and_never_ages_do_not_overflow() -> None:
    metadata = _metadata()
    s = sorted(metadata.snapshots, key=lambda x: x.timestamp_ms)
    refs = dict(metadata.refs)
    refs["month_end"] = SnapshotRef(s[0].snapshot_id, SnapshotRefType.TAG, max_ref_age_ms=DAY_MS)
    tagged = _metadata(refs=refs)
    young = s[0].timestamp_ms + 1000
    until = _holds_until_checked(tagged, young)
    assert until == s[0].timestamp_ms + DAY_MS  # the tag's own age passes first
    never = _metadata(
        properties={
            "history.expire.max-snapshot-age-ms": str(2**63 - 1),
            "history.expire.max-ref-age-ms": str(2**63 - 1),
        },
    )
    assert health.expiry_holds_until(never, young) == s[0].timestamp_ms + 2**63 - 1
    assert health.expiry_holds_until(_metadata(snapshots=[]), young) is None


def test_findings_run_every_check_in_order() -> None:
    metadata = _metadata()
    files = _files([10, 20])
    t = health.totals(None, [], files)
    checks = [f.check for f in health.findings(metadata, [], files, t, now_ms=0)]
    assert checks == [
        "small_files",
        "over_partitioning",
        "deletes",
        "manifests",
        "partition_skew",
        "snapshots_to_expire",
    ]
