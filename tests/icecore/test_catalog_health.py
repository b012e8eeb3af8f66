"""``icecore health CATALOG``: every table's numbers against Spark, unreadable tables, the score.

Spark is the oracle for the numbers (its ``files``, ``snapshots`` and ``manifests`` metadata
tables and ``count(*)``) on the session's fixture warehouse; the rest runs on a small
PyIceberg-written table and hand-made metadata whose answers are worked out by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from icecore import catalog_health as catalog_health_module
from icecore import health
from icecore.catalog import load_catalog, load_table
from icecore.catalog_health import (
    METADATA_POINTS,
    POINTS,
    catalog_health,
    empty_row,
    score,
    table_health,
)
from icecore.health import Finding, Status
from icecore.identifier import TableIdentifier
from icecore.layout import snapshot_files
from icecore.lru import LRU
from icecore.metadata import parse_metadata
from icecore.metadata_bloat import manifest_lists, metadata_parts
from icecore.scan.context import default_context
from tests.icecore.fakes import DEMO_TABLES
from tests.icecore.health_tables import GOLDEN, write_health_warehouse
from tests.ui.rows_table import CITIES, NAME

SPARK_CATALOGS = (("icecore", "{w}"), ("hadoop", "{w}/hadoop"))
"""(Spark catalog name, icecore catalog URI) of the fixture warehouse's two catalogs."""


def _spark_numbers(spark: Any, name: str) -> dict[str, int]:
    files = spark.sql(
        f"""SELECT count_if(content = 0), sum(if(content = 0, file_size_in_bytes, 0)),
          sum(if(content = 0, record_count, 0)), count_if(content <> 0),
          sum(if(content <> 0, record_count, 0))
        FROM {name}.files"""
    ).collect()[0]
    data_files, data_bytes, rows, delete_files, delete_records = (v or 0 for v in files)
    return {
        "data_files": data_files,
        "data_bytes": data_bytes,
        "rows": rows,
        "delete_files": delete_files,
        "delete_records": delete_records,
        "snapshots": spark.sql(f"SELECT count(*) FROM {name}.snapshots").collect()[0][0],
        "manifests": spark.sql(f"SELECT count(*) FROM {name}.manifests").collect()[0][0],
    }


@pytest.mark.spark
@pytest.mark.parametrize(("spark_catalog", "uri"), SPARK_CATALOGS)
def test_every_table_s_numbers_match_spark(
    spark: Any, demo_warehouse: Path, spark_catalog: str, uri: str
) -> None:
    rows = catalog_health(load_catalog(uri.format(w=demo_warehouse)))
    listed = {
        f"demo.{r.tableName}" for r in spark.sql(f"SHOW TABLES IN {spark_catalog}.demo").collect()
    }
    assert {r["table"] for r in rows} == listed
    for row in rows:
        name = f"{spark_catalog}.{row['table']}"
        assert row["error"] is None, row["error"]
        expected = _spark_numbers(spark, name)
        assert {k: row[k] for k in expected} == expected, name
        assert row["avg_file_bytes"] == round(expected["data_bytes"] / expected["data_files"])
        if expected["delete_files"] == 0:  # rows are before deletes: equal to count(*) without
            assert row["rows"] == spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]
        newest = spark.sql(
            f"SELECT committed_at, operation, summary FROM {name}.snapshots "
            "ORDER BY committed_at DESC LIMIT 1"
        ).collect()[0]
        assert row["last_commit"]["operation"] == newest.operation
        assert row["last_commit"]["writer"].get("engine-name") == newest.summary.get("engine-name")
        assert row["last_commit"]["writer"].get("spark.app.id") == newest.summary.get(
            "spark.app.id"
        )
        assert 0 <= row["score"] <= 100
        assert row["score"] == 100 - sum(f["points"] for f in row["factors"])
        assert row["estimated"] == []


@pytest.mark.spark
def test_counts_stay_exact_from_manifest_lists_alone(spark: Any, demo_warehouse: Path) -> None:
    # files_bound=0: no manifest is read; the manifest lists' counts must still equal Spark's.
    rows = catalog_health(load_catalog(str(demo_warehouse)), files_bound=0)
    for row in rows:
        name = f"icecore.{row['table']}"
        expected = _spark_numbers(spark, name)
        for key in ("data_files", "rows", "delete_files", "delete_records", "manifests"):
            assert row[key] == expected[key], (name, key)
        assert "data_bytes" in row["estimated"] and row["small_file_share"] is None


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """:func:`tests.icecore.health_tables.write_health_warehouse`'s three tables."""
    return write_health_warehouse(tmp_path)


def test_an_unreadable_table_is_a_row_with_its_error(warehouse: Path) -> None:
    rows = {r["table"]: r for r in catalog_health(load_catalog(str(warehouse)))}
    assert set(rows) == {NAME, "db.broken", "db.empty"}
    broken = rows["db.broken"]
    assert "not valid JSON" in broken["error"] and "v1.metadata.json" in broken["error"]
    assert broken["score"] is None and broken["rows"] is None
    people = rows[NAME]
    assert people["error"] is None
    assert (people["rows"], people["data_files"], people["snapshots"]) == (len(CITIES), 1, 1)
    empty = rows["db.empty"]
    assert empty["error"] is None and empty["snapshots"] == 0 and empty["rows"] == 0
    assert empty["last_commit"] is None


def test_known_rows_are_reused_by_metadata_location(warehouse: Path) -> None:
    known: LRU[str, dict[str, Any]] = LRU(16)
    seen: list[tuple[int, int]] = []
    first = catalog_health(
        load_catalog(str(warehouse)), known=known, progress=lambda *a: seen.append(a)
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]
    kept = known.get(next(r["metadata_location"] for r in first if r["table"] == NAME))
    assert kept is not None
    kept["rows"] = -1  # a reused row is the kept one, not read again
    again = {r["table"]: r for r in catalog_health(load_catalog(str(warehouse)), known=known)}
    assert again[NAME]["rows"] == -1
    # A corrupt metadata file stays corrupt: its row is kept too. A missing one is asked again.
    broken = next(r for r in first if r["table"] == "db.broken")
    assert known.get(broken["metadata_location"]) is not None
    lost = warehouse / "db/lost/metadata"
    lost.mkdir(parents=True)
    obj = json.loads((warehouse / "db/people/metadata/v1.metadata.json").read_text())
    for snapshot in obj["snapshots"]:
        snapshot["manifest-list"] = str(warehouse / "nowhere" / "snap.avro")
    (lost / "v1.metadata.json").write_text(json.dumps(obj))
    (lost / "version-hint.text").write_text("1")
    rows = {r["table"]: r for r in catalog_health(load_catalog(str(warehouse)), known=known)}
    assert rows["db.lost"]["error"] and known.get(rows["db.lost"]["metadata_location"]) is None


def test_a_kept_row_is_read_again_once_a_snapshot_ages_past_its_expiry_age(
    warehouse: Path,
) -> None:
    # A table nobody commits to keeps its metadata file, but its snapshots age: a row kept by
    # metadata location is reused up to holds_until_ms (the first snapshot time plus expiry
    # age at or after when it was judged) and read again after it, with that time's verdict.
    catalog = load_catalog(str(warehouse))
    table = load_table(f"{warehouse}::{NAME}")
    snapshot = table.snapshot()
    assert snapshot is not None
    judged = snapshot.timestamp_ms + 1000
    known: LRU[str, dict[str, Any]] = LRU(16)
    first = {r["table"]: r for r in catalog_health(catalog, known=known, now_ms=judged)}
    row = first[NAME]
    until = health.expiry_holds_until(table.metadata, judged)
    assert until is not None and row["holds_until_ms"] == until > judged
    assert first["db.empty"]["holds_until_ms"] is None  # no snapshot: true forever
    kept = known.get(row["metadata_location"])
    assert kept is not None
    kept["rows"] = -1  # marks the kept row: reused rows show it
    at_until = {r["table"]: r for r in catalog_health(catalog, known=known, now_ms=until)}
    assert at_until[NAME]["rows"] == -1
    later = {r["table"]: r for r in catalog_health(catalog, known=known, now_ms=until + 1)}
    assert later[NAME]["rows"] == len(CITIES)  # read again: the row of that time
    assert later[NAME] == table_health(catalog, TableIdentifier.parse(NAME), now_ms=until + 1)
    assert later[NAME]["holds_until_ms"] == health.expiry_holds_until(table.metadata, until + 1)


def test_the_cli_prints_the_rows_as_json(warehouse: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "icecore", "health", str(warehouse)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = {r["table"]: r for r in json.loads(done.stdout)}
    assert rows[NAME]["rows"] == len(CITIES) and rows["db.broken"]["error"]


def _finding(check: str, status: Status) -> Finding:
    return Finding(check, status, check.title(), f"{check} detail.", ())


def test_the_score_loses_each_finding_s_points_and_names_it() -> None:
    found = [
        _finding("small_files", Status.WARN),
        _finding("deletes", Status.INFO),
        _finding("manifests", Status.OK),
    ]
    got, factors = score(found, 0)
    assert got == 100 - POINTS["small_files"][0] - POINTS["deletes"][1]
    assert [(f["check"], f["points"]) for f in factors] == [
        ("small_files", POINTS["small_files"][0]),
        ("deletes", POINTS["deletes"][1]),
    ]
    assert factors[0]["detail"] == "small_files detail."
    big, factors = score([], 11 * 2**20)
    assert big == 100 - METADATA_POINTS and factors[0]["check"] == "metadata_size"
    every = [_finding(check, Status.WARN) for check in POINTS]
    assert score(every, 11 * 2**20)[0] == 0  # never below 0


# --- metadata bloat ----------------------------------------------------------------------


def test_parts_add_up_to_a_java_written_metadata_file() -> None:
    # Iceberg Java writes metadata.json compactly: the parts must add up to the file's bytes.
    raw = GOLDEN.read_bytes()
    obj = json.loads(raw)
    metadata = parse_metadata(raw, location=str(GOLDEN))
    parts = metadata_parts(obj, metadata, now_ms=metadata.last_updated_ms)
    assert sum(p.bytes for p in parts) == len(raw)
    by = {p.part: p for p in parts}
    assert by["snapshots"].count == len(obj["snapshots"])
    assert by["metadata-log"].count == len(obj["metadata-log"])
    assert parts[-1].part == "other"


def test_a_part_is_its_key_and_compact_value_with_the_fix_for_what_is_unused() -> None:
    raw = GOLDEN.read_bytes()
    obj = json.loads(raw)
    obj["properties"] = {"a": "bc"}
    # Only the current schema, which every snapshot names, and one that nothing uses.
    current = next(s for s in obj["schemas"] if s["schema-id"] == obj["current-schema-id"])
    obj["schemas"] = [current, dict(current, **{"schema-id": 99})]
    for snapshot in obj["snapshots"]:
        snapshot["schema-id"] = current["schema-id"]
    metadata = parse_metadata(json.dumps(obj), location="m.json")
    by = {p.part: p for p in metadata_parts(obj, metadata, now_ms=metadata.last_updated_ms)}
    assert by["properties"].bytes == len('"properties":{"a":"bc"}')
    assert by["schemas"].unused == 1 and "clean_expired_metadata" in by["schemas"].fix
    far_future = metadata.last_updated_ms + 365 * 24 * 3600 * 1000
    aged = {p.part: p for p in metadata_parts(obj, metadata, now_ms=far_future)}
    expirable = len(health.snapshots_to_expire(metadata, far_future))
    assert expirable > 0 and aged["snapshots"].unused == expirable
    assert "expire_snapshots" in aged["snapshots"].fix


@pytest.mark.spark
def test_the_catalog_verdict_on_too_fine_partitions_skips_only_the_proposal(
    spark: Any, demo_warehouse: Path
) -> None:
    # demo.trips is partitioned too finely (tests/pipeline/test_maintenance_estimates.py):
    # the catalog row warns without paying for the coarser-spec search; the Overview proposes.
    table = load_table(f"{demo_warehouse}::demo.trips")
    files = snapshot_files(table, table.snapshot())
    with_proposal = health.over_partitioning(table.metadata, files)
    without = health.over_partitioning(table.metadata, files, propose_spec=False)
    assert with_proposal.status is without.status is Status.WARN
    assert with_proposal.spec_changes and not without.spec_changes
    row = next(
        r for r in catalog_health(load_catalog(str(demo_warehouse))) if r["table"] == "demo.trips"
    )
    assert "over_partitioning" in [f["check"] for f in row["factors"]]


@pytest.mark.spark
@pytest.mark.parametrize(("spark_name", "spec"), DEMO_TABLES)
def test_manifests_per_snapshot_match_spark_s_all_manifests(
    spark: Any, demo_warehouse: Path, spark_name: str, spec: str
) -> None:
    table = load_table(spec.format(w=demo_warehouse))
    lists = manifest_lists(table, last=len(table.metadata.snapshots))
    per_snapshot = {
        r.reference_snapshot_id: (r.manifests, r.deletes)
        for r in spark.sql(
            "SELECT reference_snapshot_id, count(*) AS manifests, count_if(content = 1) AS deletes"
            f" FROM {spark_name}.all_manifests GROUP BY reference_snapshot_id"
        ).collect()
    }
    ours = {m.snapshot_id: (m.manifests, m.delete_manifests) for m in lists if m.manifests}
    assert ours == per_snapshot
    times = [m.timestamp_ms for m in lists]
    assert times == sorted(times, reverse=True)  # newest first


def _health_workers() -> list[int]:
    """Pids of this process's ``python -m icecore.catalog_health`` children (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"icecore.catalog_health" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_full_rows_read_in_worker_processes_are_the_rows_read_here(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two workers read the full rows (the threshold lowered to this warehouse's three tables):
    # every row, the corrupt table's error and the empty table included, equals the one read
    # in this process (the rows Spark checks above), in listing order, kept in ``known`` alike.
    monkeypatch.setattr(catalog_health_module, "PROCESS_MIN_TABLES", 1)
    catalog = load_catalog(str(warehouse))
    here = catalog_health(catalog, processes=0, now_ms=1_800_000_000_000)
    workers: list[list[int]] = []
    known: LRU[str, dict[str, Any]] = LRU(16)
    there = catalog_health(
        catalog,
        processes=2,
        now_ms=1_800_000_000_000,
        known=known,
        progress=lambda done, total: workers.append(_health_workers()),
    )
    assert there == here
    assert any(workers), "no icecore.catalog_health worker ran"
    assert all(known.get(r["metadata_location"]) for r in there if r["table"] != "db.lost")
    assert _health_workers() == []  # the call's workers are gone when it returns
    # The workers decode manifests themselves (kept nowhere): a truncated manifest, then a
    # missing one, is the same error row there as here (here read past every cache).
    table = load_table(f"{warehouse}::{NAME}")
    snapshot = table.snapshot()
    assert snapshot is not None
    manifest = Path(table.manifests(snapshot)[0].manifest_path.removeprefix("file:"))
    whole = manifest.read_bytes()
    for damage in ("truncated", "missing"):
        if damage == "truncated":
            manifest.write_bytes(whole[: len(whole) // 2])
        else:
            manifest.unlink()
        default_context().clear()
        default_context().manifests.clear(disk=True)
        here = catalog_health(catalog, processes=0, now_ms=1_800_000_000_000)
        there = catalog_health(catalog, processes=2, now_ms=1_800_000_000_000)
        assert there == here, damage
        error = next(r["error"] for r in there if r["table"] == NAME)
        assert error and manifest.name in error, (damage, error)


@pytest.mark.parametrize("executable", ["/nonexistent/python", "/bin/false"])
def test_tables_of_a_worker_that_fails_are_read_here(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch, executable: str
) -> None:
    # A worker that cannot start (no interpreter) or dies before answering (exits at once):
    # its tables are read in this process, and the rows are the same.
    if not Path(executable).exists() and executable != "/nonexistent/python":
        pytest.skip(f"{executable} is missing")
    catalog = load_catalog(str(warehouse))
    here = catalog_health(catalog, processes=0, now_ms=1_800_000_000_000)
    monkeypatch.setattr(catalog_health_module, "PROCESS_MIN_TABLES", 1)
    monkeypatch.setattr(sys, "executable", executable)
    assert catalog_health(catalog, processes=2, now_ms=1_800_000_000_000) == here


@pytest.mark.parametrize("processes", [0, 2])
def test_the_rows_so_far_are_given_as_the_tables_are_read(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    # The Tables page draws the catalog filling in with ``partial``: first every name with
    # nothing read (with workers: once they are reading), then as rows come in (here after
    # every row: the interval set to 0), a row per table in listing order, each either its
    # final row or its name only; never on a visit where every row is kept.
    monkeypatch.setattr(catalog_health_module, "PROCESS_MIN_TABLES", 1)
    monkeypatch.setattr(catalog_health_module, "PARTIAL_EVERY_S", 0.0)
    catalog = load_catalog(str(warehouse))
    known: LRU[str, dict[str, Any]] = LRU(16)
    given: list[list[dict[str, Any]]] = []
    workers: list[int] = []

    def partial(rows: list[dict[str, Any]]) -> None:
        given.append(rows)
        if processes and len(given) == 1:  # the workers are started (on their threads)
            deadline = time.monotonic() + 60
            while not _health_workers() and time.monotonic() < deadline:
                time.sleep(0.05)
            workers.append(len(_health_workers()))

    final = catalog_health(
        catalog, processes=processes, now_ms=1_800_000_000_000, known=known, partial=partial
    )
    names_only = [empty_row(r["table"], r["metadata_location"]) for r in final]
    assert given[0] == names_only
    assert len(given) == 1 + len(final)
    read = []
    for rows in given:
        assert all(r in (f, n) for r, f, n in zip(rows, final, names_only, strict=True))
        read.append(sum(1 for r, f in zip(rows, final, strict=True) if r is f or r == f))
    assert read == sorted(read) and read[-1] == len(final)
    if processes:
        assert workers[0] > 0, "partial came before the workers were reading"
    given.clear()
    assert catalog_health(catalog, now_ms=1_800_000_000_000, known=known, partial=partial)
    assert given == []
