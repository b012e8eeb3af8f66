"""The metrics-report stores against real catalogs: SQLite, PostgreSQL and a warehouse folder.

Reports are the REST spec's ``ScanReport``/``CommitReport`` bodies, written by hand from the
spec's schemas and Iceberg Java's metric names (``ScanMetricsResult``); every store is
written and read through its own real catalog. Retention is checked by counting what a
store holds after writes whose number and times the test chooses, including a store that
already holds 100,000 reports (bulk inserted, as a busy server would leave it).
"""

from __future__ import annotations

import copy
import json
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from icecore.catalog import FilesystemCatalog, SqlCatalog
from icecore.catalog.report_store import (
    REPORTS_TABLE,
    FileReportStore,
    InvalidReport,
    KeptReport,
    Retention,
    SqlReportStore,
    report_file_name,
    report_store_for,
    validate_report,
)
from tests.icecore.catalog.test_audit_store import folder_catalog, postgres_catalog, sqlite_catalog
from tests.pg_server import PgServer

SCAN: dict[str, Any] = {
    "report-type": "scan-report",
    "table-name": "served.db.t",
    "snapshot-id": 8_273_645_102_938_475_610,
    "filter": {
        "type": "and",
        "left": {"type": "gt", "term": "id", "value": "(3-digit-int)"},
        "right": {"type": "not-null", "term": "name"},
    },
    "schema-id": 0,
    "projected-field-ids": [1, 2],
    "projected-field-names": ["id", "name"],
    "metrics": {
        "total-planning-duration": {
            "count": 1,
            "time-unit": "nanoseconds",
            "total-duration": 2_644_235_116,
        },
        "result-data-files": {"unit": "count", "value": 3},
        "skipped-data-files": {"unit": "count", "value": 7},
        "total-file-size-in-bytes": {"unit": "bytes", "value": 4096},
    },
    "metadata": {"engine-name": "spark", "engine-version": "3.5.6"},
}
COMMIT: dict[str, Any] = {
    "report-type": "commit-report",
    "table-name": "served.db.t",
    "snapshot-id": 42,
    "sequence-number": 3,
    "operation": "append",
    "metrics": {
        "total-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 5_000_000},
        "attempts": {"unit": "count", "value": 2},
    },
}


def kept(table: str = "db.t", at_ms: int | None = None, n: int = 0, **more: Any) -> KeptReport:
    report = copy.deepcopy(SCAN)
    report["schema-id"] = n  # tells reports apart
    report.update(more)
    return KeptReport(
        at_ms if at_ms is not None else time.time_ns() // 1_000_000, table, None, report
    )


# --- validation ---------------------------------------------------------------------------


def test_the_spec_shapes_are_valid() -> None:
    assert validate_report(SCAN) == SCAN
    assert validate_report(COMMIT) == COMMIT
    # The filter's other spec forms: a bare boolean, sets, typed literals, references.
    for flt in (
        True,
        {"type": "true"},
        {"type": "in", "term": "id", "values": [1, 2, 3]},
        {"type": "not", "child": {"type": "is-null", "term": "x"}},
        {"type": "eq", "term": {"type": "transform", "transform": "day", "term": "ts"}, "value": 5},
        {
            "type": "lt",
            "left": {"type": "reference", "name": "id"},
            "right": {"type": "literal", "value": 3},
        },
        {
            "type": "not-in",
            "child": {"type": "reference", "id": 1},
            "values": {"type": "literals", "values": [1], "data-type": "int"},
        },
    ):
        assert validate_report({**SCAN, "filter": flt})["filter"] == flt


MALFORMED: list[Any] = [
    None,
    [],
    "scan",
    {**SCAN, "report-type": "other-report"},
    {k: v for k, v in SCAN.items() if k != "report-type"},
    {k: v for k, v in SCAN.items() if k != "filter"},
    {k: v for k, v in COMMIT.items() if k != "sequence-number"},
    {**SCAN, "snapshot-id": "1"},
    {**SCAN, "snapshot-id": True},
    {**SCAN, "snapshot-id": 2**63},
    {**SCAN, "projected-field-ids": [1, "2"]},
    {**SCAN, "projected-field-names": "id"},
    {**SCAN, "filter": {"type": "like", "term": "id", "value": 1}},
    {**SCAN, "filter": {"type": "gt", "term": "id", "value": [1]}},
    {**SCAN, "filter": {"type": "in", "term": "id"}},
    {**SCAN, "filter": "id > 1"},
    {**SCAN, "metrics": {"result-data-files": {"unit": "count"}}},
    {**SCAN, "metrics": {"result-data-files": 3}},
    {**SCAN, "metrics": []},
    {**SCAN, "metadata": {"engine-name": 1}},
    {**COMMIT, "operation": 3},
]


@pytest.mark.parametrize("body", MALFORMED)
def test_malformed_reports_are_refused(body: Any) -> None:
    with pytest.raises(InvalidReport):
        validate_report(body)


def test_a_filter_nested_too_deep_is_refused() -> None:
    deep: Any = True
    for _ in range(100):
        deep = {"type": "not", "child": deep}
    with pytest.raises(InvalidReport):
        validate_report({**SCAN, "filter": deep})


# --- every store --------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres", "folder"])
def any_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> SqlCatalog | FilesystemCatalog:
    if request.param == "sqlite":
        return sqlite_catalog(tmp_path)
    if request.param == "postgres":
        return postgres_catalog(request.getfixturevalue("pg_server"), tmp_path)
    return folder_catalog(tmp_path)


def test_reports_are_kept_per_table_with_their_principal(any_catalog: Any) -> None:
    store = report_store_for(any_catalog)
    assert store is not None and store.read() == []
    written = [
        kept("db.t", n=1),
        KeptReport(time.time_ns() // 1_000_000, "db.t", "Ann (u-ann)", COMMIT),
        kept("db.other", n=2),
        kept("db.t", n=3, metadata={"engine-name": "spark", "note": "ünïcode ✓"}),
    ]
    for report in written:
        assert store.append(report) is True
    again = report_store_for(any_catalog)
    assert again is not None
    assert again.read("db.t") == [written[0], written[1], written[3]]
    assert again.read("db.other") == [written[2]]
    assert sorted(again.read(), key=lambda r: r.report.get("schema-id", -1)) == sorted(
        written, key=lambda r: r.report.get("schema-id", -1)
    )
    assert again.read("db.t")[1].principal == "Ann (u-ann)"
    assert again.read("db.t")[1].kind == "commit"
    # --since: only what was received from then on
    assert again.read("db.t", since_ms=written[3].time_ms + 1) == []


def test_retention_by_count_and_age_is_enforced_on_write(any_catalog: Any) -> None:
    store = report_store_for(any_catalog, Retention(max_count=5, max_age=dt_days(1)))
    assert store is not None
    now = time.time_ns() // 1_000_000
    old = kept(at_ms=now - 2 * 86_400_000, n=99)
    store.append(old)
    for n in range(8):
        store.append(kept(at_ms=now + n, n=n))
    store.append(kept("db.other", at_ms=now, n=100))
    assert [r.report["schema-id"] for r in store.read("db.t")] == [3, 4, 5, 6, 7]
    assert [r.report["schema-id"] for r in store.read("db.other")] == [100]
    held = stored_count(any_catalog, "db.t")
    # SQL stores delete at once; a folder's file trims past a tenth more than the count.
    assert held == 5 if isinstance(any_catalog, SqlCatalog) else 5 <= held <= 6
    assert 99 not in [r.report["schema-id"] for r in raw_reports(any_catalog, "db.t")]


def dt_days(days: int) -> Any:
    import datetime as dt

    return dt.timedelta(days=days)


def raw_reports(catalog: Any, table: str) -> list[KeptReport]:
    """What a store holds, read without the reader's retention (a huge retention)."""
    store = report_store_for(catalog, Retention(max_count=10**9, max_age=dt_days(100_000)))
    assert store is not None
    return store.read(table)


def stored_count(catalog: Any, table: str) -> int:
    if isinstance(catalog, SqlCatalog):
        rows = catalog._query(
            f"SELECT COUNT(*) FROM {REPORTS_TABLE} WHERE table_name = ?", (table,)
        )
        return int(rows[0][0])  # type: ignore[call-overload]
    path = Path(catalog.warehouse_root) / report_file_name(table)
    return len(path.read_bytes().splitlines())


def test_read_only_catalogs_write_no_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writable = sqlite_catalog(tmp_path)
    ro = SqlCatalog(writable.path, read_only=True)
    store = report_store_for(ro)
    assert store is not None and store.append(kept()) is False and store.read() == []
    assert REPORTS_TABLE not in writable._table_names()
    folder = tmp_path / "wh"
    folder_catalog(folder)
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    store = report_store_for(FilesystemCatalog(str(folder)))
    assert store is not None and store.append(kept()) is False
    assert not any(p.name.startswith("icecore-reports") for p in folder.iterdir())


def test_the_folder_store_is_a_file_named_by_hash_that_no_listing_sees(tmp_path: Path) -> None:
    catalog = folder_catalog(tmp_path)
    namespaces = catalog.list_namespaces()
    store = report_store_for(catalog)
    assert isinstance(store, FileReportStore)
    store.append(kept("db.t"))
    store.append(kept("../../etc/passwd"))  # a table name never becomes a path
    files = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("icecore-reports"))
    assert len(files) == 2 and all(
        len(f) == len("icecore-reports.") + 32 + len(".jsonl") for f in files
    )
    assert catalog.list_namespaces() == namespaces
    # A line cut short by a crash is skipped (and counted) and the next report kept whole.
    path = tmp_path / report_file_name("db.t")
    with path.open("ab") as handle:
        handle.write(b'{"time_ms": 1, "tab')
    store.append(kept("db.t", n=5))
    assert [r.report["schema-id"] for r in store.read("db.t")] == [0, 5]
    assert store.skipped == 1


# --- 100,000 reports ------------------------------------------------------------------------

BULK = 100_000


def test_retention_holds_over_100000_sqlite_reports(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path)
    store = SqlReportStore(catalog)
    assert store.append(kept(n=-1))  # creates the table
    now = time.time_ns() // 1_000_000
    body = json.dumps(SCAN)
    with closing(catalog._connect()) as conn:  # one transaction: a bulk insert
        conn.execute("BEGIN")
        conn.executemany(
            f"INSERT INTO {REPORTS_TABLE} (sql_catalog, table_name, received_ms, principal, "
            "report_type, report) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (catalog.catalog_name, "db.t", now - BULK + i, None, "scan-report", body)
                for i in range(BULK)
            ],
        )
        conn.execute("COMMIT")
    assert stored_count(catalog, "db.t") == BULK + 1
    started = time.perf_counter()
    store.append(kept(n=7))
    first_write_s = time.perf_counter() - started
    assert stored_count(catalog, "db.t") == store.retention.max_count
    started = time.perf_counter()
    for n in range(20):
        store.append(kept(n=1000 + n))
    each_s = (time.perf_counter() - started) / 20
    found = store.read("db.t")
    assert len(found) == store.retention.max_count
    assert [r.report["schema-id"] for r in found[-21:]] == [7, *range(1000, 1020)]
    print(f"sqlite: trim of {BULK:,} {first_write_s:.3f}s, then {each_s * 1000:.1f} ms a report")


def test_retention_holds_over_100000_folder_reports(tmp_path: Path) -> None:
    catalog = folder_catalog(tmp_path)
    store = report_store_for(catalog)
    assert isinstance(store, FileReportStore)
    now = time.time_ns() // 1_000_000
    small = {**SCAN, "filter": True, "metadata": {}}
    with (tmp_path / report_file_name("db.t")).open("w") as handle:
        for i in range(BULK):
            line = {"time_ms": now - BULK + i, "table": "db.t", "principal": None, "report": small}
            handle.write(json.dumps(line) + "\n")
    store.append(kept(n=7))
    assert stored_count(catalog, "db.t") == store.retention.max_count
    started = time.perf_counter()
    for n in range(20):
        store.append(kept(n=1000 + n))
    each_s = (time.perf_counter() - started) / 20
    found = store.read("db.t")
    assert len(found) == store.retention.max_count
    assert [r.report["schema-id"] for r in found[-21:]] == [7, *range(1000, 1020)]
    print(f"folder: {each_s * 1000:.1f} ms a report at {store.retention.max_count:,} kept")


def test_two_stores_in_one_postgres_database_write_the_same_table(
    pg_server: PgServer, tmp_path: Path
) -> None:
    catalog = postgres_catalog(pg_server, tmp_path)
    first, second = SqlReportStore(catalog), SqlReportStore(catalog)
    for n in range(6):
        (first if n % 2 else second).append(kept(n=n))
    assert [r.report["schema-id"] for r in first.read("db.t")] == list(range(6))
