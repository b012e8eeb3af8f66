"""Where a catalog keeps the metrics reports engines send (DESIGN.md "Workload").

Iceberg Java's REST client POSTs a ``ScanReport`` after every scan it plans and a
``CommitReport`` after every commit to ``.../tables/{t}/metrics`` (the REST spec's
``reportMetrics``, body ``ReportMetricsRequest``). ``serve-rest`` validates each one
(:func:`validate_report`, 400 otherwise) and keeps it here with the table, the time it was
received and, when sign-in exists, the principal who sent it. The placement follows the
audit log's (:mod:`icecore.catalog.audit_store`), so the reports go wherever the catalog goes:

- a SQL catalog (SQLite or PostgreSQL): the table ``icecore_reports`` in the catalog's own
  database, created by the first report, rows keyed by the catalog's ``catalog_name``. Each
  report is one INSERT, and the table's rows beyond the retention are DELETEd in the same
  transaction, so several ``serve-rest`` processes over one PostgreSQL catalog write the same
  store and the database serializes them. A read-only catalog writes nothing.
- a warehouse folder on a local file system: one JSON-lines file per table at the warehouse
  root, ``icecore-reports.<sha256 of ns.table>.jsonl`` (a file, never taken for a namespace;
  the name is a hash, so nothing a client sends is ever part of a path). A report is
  appended under an exclusive ``flock``; when the file holds more than the retention allows
  (by a tenth, so a trim is not paid on every write) or its oldest line is too old, it is
  rewritten with what is kept and swapped in with ``os.replace``; a writer that waited for
  the lock on the replaced file notices (the inode changed) and retries on the new one.
  Read-only (``ICECORE_READ_ONLY``) writes nothing.
- an object-store warehouse or a REST catalog: None (reports are not kept; the server
  still answers 204).

Retention is per table, by count (:data:`MAX_REPORTS_PER_TABLE`, newest kept) and by age
(:data:`MAX_REPORT_AGE`), enforced on write; readers apply it too, so what they return
never exceeds it whatever a file holds.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from icecore.catalog.base import Catalog
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.guarded import GuardedCatalog
from icecore.catalog.sql import OwnTable, SqlCatalog, first_line
from icecore.config import read_only as config_read_only
from icecore.errors import CatalogUnavailable, ValidationError
from icecore.io import normalize_path
from icecore.values import json_object

REPORTS_TABLE = "icecore_reports"
"""The reports' table in a SQL catalog's database."""

REPORTS_FILE_PREFIX = "icecore-reports."
"""The reports' files at a warehouse folder's root: ``icecore-reports.<hash>.jsonl``."""

MAX_REPORTS_PER_TABLE = 10_000
"""Reports kept per table by default (the newest)."""

MAX_REPORT_AGE = dt.timedelta(days=30)
"""Reports older than this are dropped by default."""

MAX_REPORT_BYTES = 64 * 1024
"""The largest report kept (its JSON); a bigger one is refused (413) before it is read."""

MAX_FILTER_DEPTH = 64
"""How deeply a report's filter may nest (a deeper one is malformed)."""

ReportKind = Literal["scan", "commit"]

_KINDS: Mapping[str, ReportKind] = {"scan-report": "scan", "commit-report": "commit"}


@dataclass(frozen=True, slots=True)
class Retention:
    """How many reports a table keeps, and for how long (enforced on write).

    Attributes:
        max_count: the newest this many are kept.
        max_age: older ones are dropped.
    """

    max_count: int = MAX_REPORTS_PER_TABLE
    max_age: dt.timedelta = MAX_REPORT_AGE

    def cutoff_ms(self, now_ms: int) -> int:
        """Reports received before this (ms since the epoch) are too old."""
        return now_ms - int(self.max_age.total_seconds() * 1000)


RESERVED_PREFIX = "icecore."
"""Report metadata keys only the server writes (a client's report carrying one is a 400)."""
SERVED_PLAN_KEY = "icecore.served-plan"
"""Metadata key of a ScanReport the server wrote for a plan it served itself: its filter
carries the client's literals, where engines' own reports mask them."""
PLAN_ID_KEY = "icecore.plan-id"
"""Metadata key of a served plan's report: the plan id the server answered (a link to the
plan's pruning explanation in the app names it)."""


@dataclass(frozen=True, slots=True)
class KeptReport:
    """One report as kept.

    Attributes:
        time_ms: when the server received it (ms since the epoch, UTC).
        table: the table it was posted for (``ns.table``, the request's path).
        principal: who sent it (:attr:`icecore.access.Principal.display`), None without
            sign-in.
        report: the ``ReportMetricsRequest`` as validated (:func:`validate_report`).
    """

    time_ms: int
    table: str
    principal: str | None
    report: Mapping[str, Any]

    @property
    def kind(self) -> ReportKind:
        """``scan`` or ``commit``."""
        return _KINDS[str(self.report["report-type"])]

    @property
    def time(self) -> str:
        """When it was received, ISO 8601 UTC with milliseconds."""
        moment = dt.datetime.fromtimestamp(self.time_ms / 1000, dt.UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class InvalidReport(ValidationError):
    """A metrics report that is not the spec's ``ReportMetricsRequest`` (400)."""


class ReportsUnavailable(CatalogUnavailable):
    """The reports could not be written or read."""


class ReportStore(Protocol):
    """Where one catalog's reports are kept (see the module)."""

    def append(self, report: KeptReport) -> bool:
        """Keep ``report`` (and apply the retention); False when nothing may be written."""
        ...

    def read(self, table: str | None = None, since_ms: int | None = None) -> list[KeptReport]:
        """The kept reports of ``table`` (all tables: None), oldest first."""
        ...


# --- validation (the spec's ReportMetricsRequest, ScanReport, CommitReport) ---------------

_SCAN_REQUIRED = (
    "table-name",
    "snapshot-id",
    "filter",
    "schema-id",
    "projected-field-ids",
    "projected-field-names",
    "metrics",
)
_COMMIT_REQUIRED = ("table-name", "snapshot-id", "sequence-number", "operation", "metrics")
_INT64 = (-(2**63), 2**63 - 1)
_LOGICAL = {"and", "or"}
_UNARY = {"is-null", "not-null", "is-nan", "not-nan"}
_COMPARISON = {"lt", "lt-eq", "gt", "gt-eq", "eq", "not-eq", "starts-with", "not-starts-with"}
_SET = {"in", "not-in"}


def _bad(what: str) -> InvalidReport:
    return InvalidReport(f"Malformed metrics report: {what}.")


def _is_int(value: Any) -> bool:
    return (
        isinstance(value, int) and not isinstance(value, bool) and (_INT64[0] <= value <= _INT64[1])
    )


def validate_report(body: Any) -> dict[str, Any]:
    """``body`` if it is a ``ScanReport`` or ``CommitReport`` as the REST spec defines them.

    Checked: ``report-type`` (``scan-report`` or ``commit-report``: Java's
    ``ReportMetricsRequestParser`` names), every required field with its type, the
    ``metrics`` map (``CounterResult``: ``unit``, ``value``; ``TimerResult``: ``time-unit``,
    ``count``, ``total-duration``), the ``metadata`` map of strings, and the scan's
    ``filter`` as the spec's ``Predicate`` (nesting bounded by :data:`MAX_FILTER_DEPTH`).
    Fields the spec does not name are kept as sent.

    Raises:
        InvalidReport: the first thing found wrong, in one sentence.
    """
    if not isinstance(body, dict):
        raise _bad("the body is not a JSON object")
    kind = body.get("report-type")
    if kind not in _KINDS:
        raise _bad("report-type must be scan-report or commit-report")
    required = _SCAN_REQUIRED if kind == "scan-report" else _COMMIT_REQUIRED
    missing = [name for name in required if name not in body]
    if missing:
        raise _bad(f"{kind} lacks {', '.join(missing)}")
    if not isinstance(body["table-name"], str):
        raise _bad("table-name must be a string")
    for name in ("snapshot-id", "sequence-number", "schema-id"):
        if name in required and not _is_int(body[name]):
            raise _bad(f"{name} must be an integer")
    if kind == "commit-report" and not isinstance(body["operation"], str):
        raise _bad("operation must be a string")
    if kind == "scan-report":
        ids, names = body["projected-field-ids"], body["projected-field-names"]
        if not isinstance(ids, list) or not all(_is_int(i) for i in ids):
            raise _bad("projected-field-ids must be a list of integers")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _bad("projected-field-names must be a list of strings")
        _check_predicate(body["filter"], 0)
    _check_metrics(body["metrics"])
    metadata = body.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values())
    ):
        raise _bad("metadata must map names to strings")
    return body


def _check_metrics(metrics: Any) -> None:
    if not isinstance(metrics, dict):
        raise _bad("metrics must be an object")
    for name, result in metrics.items():
        if not isinstance(result, dict):
            raise _bad(f"metric {str(name)[:100]!r} is not an object")
        counter = isinstance(result.get("unit"), str) and _is_int(result.get("value"))
        timer = (
            isinstance(result.get("time-unit"), str)
            and _is_int(result.get("count"))
            and _is_int(result.get("total-duration"))
        )
        if not (counter or timer):
            raise _bad(f"metric {str(name)[:100]!r} is neither a CounterResult nor a TimerResult")


def _check_predicate(node: Any, depth: int) -> None:
    """The spec's ``Predicate``: a boolean or one of its typed objects."""
    if depth > MAX_FILTER_DEPTH:
        raise _bad(f"the filter nests deeper than {MAX_FILTER_DEPTH}")
    if isinstance(node, bool):
        return
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise _bad("the filter is not a predicate")
    kind = node["type"]
    if kind in ("true", "false"):
        return
    if kind in _LOGICAL:
        _check_predicate(node.get("left"), depth + 1)
        _check_predicate(node.get("right"), depth + 1)
    elif kind == "not":
        _check_predicate(node.get("child"), depth + 1)
    elif kind in _UNARY:
        _check_value(node.get("child", node.get("term")), depth + 1)
    elif kind in _COMPARISON:
        if "term" in node:
            _check_value(node["term"], depth + 1)
            _check_literal(node.get("value"))
        else:
            _check_value(node.get("left"), depth + 1)
            _check_value(node.get("right"), depth + 1)
    elif kind in _SET:
        _check_value(node.get("child", node.get("term")), depth + 1)
        values = node.get("values")
        if isinstance(values, dict) and values.get("type") == "literals":
            values = values.get("values")
        if not isinstance(values, list):
            raise _bad(f"a {kind} predicate lacks its values")
        for value in values:
            _check_literal(value)
    else:
        raise _bad(f"unknown predicate type {kind[:40]!r}")


def _check_value(node: Any, depth: int) -> None:
    """The spec's ``ValueExpression`` or legacy ``Term``."""
    if depth > MAX_FILTER_DEPTH:
        raise _bad(f"the filter nests deeper than {MAX_FILTER_DEPTH}")
    if isinstance(node, str):
        return
    if not isinstance(node, dict):
        raise _bad("a predicate's term is not a reference")
    kind = node.get("type")
    if kind == "reference":
        if not (isinstance(node.get("name"), str) or _is_int(node.get("id"))):
            raise _bad("a reference has neither a name nor an id")
    elif kind == "transform":
        if not isinstance(node.get("transform"), str):
            raise _bad("a transform term lacks its transform")
        _check_value(node.get("term"), depth + 1)
    elif kind == "apply":
        if not isinstance(node.get("arguments"), list):
            raise _bad("a function application lacks its arguments")
    else:
        _check_literal(node)


def _check_literal(node: Any) -> None:
    if isinstance(node, dict) and node.get("type") == "literal":
        node = node.get("value")
    if node is None or isinstance(node, dict | list):
        raise _bad("a predicate's literal is not a value")
    if isinstance(node, float) and not math.isfinite(node):
        raise _bad("a predicate's literal is not a finite number")


# --- the stores ---------------------------------------------------------------------------


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _report_json(report: KeptReport) -> str:
    return json.dumps(
        {
            "time_ms": report.time_ms,
            "table": report.table,
            "principal": report.principal,
            "report": report.report,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def _report_from_json(line: bytes | str) -> KeptReport | None:
    """A kept line as a report; None when it is not one (cut short, edited)."""
    value = json_object(line)
    if value is None:
        return None
    return _kept(
        value.get("time_ms"), value.get("table"), value.get("principal"), value.get("report")
    )


def _kept(time_ms: Any, table: Any, principal: Any, report: Any) -> KeptReport | None:
    """A stored record as a report; None when a field is not what it should be."""
    if isinstance(report, str):
        try:
            report = json.loads(report)
        except (ValueError, RecursionError):
            return None
    if not _is_int(time_ms) or not isinstance(table, str):
        return None
    if principal is not None and not isinstance(principal, str):
        return None
    try:
        return KeptReport(time_ms, table, principal, validate_report(report))
    except InvalidReport:
        return None


def _newest(
    reports: Sequence[KeptReport], retention: Retention, now_ms: int, since_ms: int | None
) -> list[KeptReport]:
    """What the retention keeps of one table's reports (oldest first), from ``since_ms``."""
    floor = max(retention.cutoff_ms(now_ms), since_ms if since_ms is not None else -(2**63))
    kept = [r for r in reports if r.time_ms >= floor]
    return kept[-retention.max_count :] if retention.max_count > 0 else []


class SqlReportStore:
    """The reports in a SQL catalog's database (see the module).

    Attributes:
        catalog: the SQL catalog whose database holds the table.
        retention: what each table keeps.
        skipped: rows the last :meth:`read` could not read as reports.
    """

    def __init__(self, catalog: SqlCatalog, retention: Retention | None = None) -> None:
        self.catalog = catalog
        self.retention = retention or Retention()
        self.skipped = 0
        self._table = OwnTable.of(
            catalog,
            REPORTS_TABLE,
            (
                f"CREATE TABLE IF NOT EXISTS {REPORTS_TABLE} (seq {catalog.serial_key}, "
                "sql_catalog VARCHAR(255) NOT NULL, table_name TEXT NOT NULL, "
                "received_ms BIGINT NOT NULL, principal TEXT, report_type VARCHAR(32) NOT NULL, "
                "report TEXT NOT NULL)",
                f"CREATE INDEX IF NOT EXISTS {REPORTS_TABLE}_by_table "
                f"ON {REPORTS_TABLE} (sql_catalog, table_name, seq)",
            ),
        )

    def _create(self) -> None:
        """Create ``icecore_reports`` and its index once per store (if missing)."""
        cat = self.catalog
        self._table.ensure(
            lambda e: ReportsUnavailable(
                f"Cannot create the reports table {REPORTS_TABLE} in {cat.where} ({first_line(e)})."
            )
        )

    def append(self, report: KeptReport) -> bool:
        """INSERT the report and DELETE what the retention drops, in one transaction.

        Raises:
            ReportsUnavailable: the database refused or could not be reached.
        """
        cat = self.catalog
        if cat.read_only:
            return False
        mark = cat.placeholder
        key = (cat.catalog_name, report.table)
        body = json.dumps(report.report, separators=(",", ":"), ensure_ascii=False)
        where = f"sql_catalog = {mark} AND table_name = {mark}"
        try:
            self._create()
            with closing(cat._connect()) as conn:
                cat._begin(conn)
                try:
                    conn.execute(
                        f"INSERT INTO {REPORTS_TABLE} (sql_catalog, table_name, received_ms, "
                        f"principal, report_type, report) VALUES ({', '.join([mark] * 6)})",
                        (
                            *key,
                            report.time_ms,
                            report.principal,
                            report.report["report-type"],
                            body,
                        ),
                    )
                    # Retention: older than the cutoff, or past the newest max_count (by seq).
                    conn.execute(
                        f"DELETE FROM {REPORTS_TABLE} WHERE {where} AND (received_ms < {mark} "
                        f"OR seq <= COALESCE((SELECT seq FROM {REPORTS_TABLE} WHERE {where} "
                        f"ORDER BY seq DESC LIMIT 1 OFFSET {mark}), -1))",
                        (
                            *key,
                            self.retention.cutoff_ms(_now_ms()),
                            *key,
                            self.retention.max_count,
                        ),
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        except cat._driver_errors() as e:
            raise ReportsUnavailable(
                f"Cannot keep the metrics report in {cat.where} ({first_line(e)})."
            ) from e
        return True

    def read(self, table: str | None = None, since_ms: int | None = None) -> list[KeptReport]:
        """The kept reports (within the retention), oldest first."""
        cat = self.catalog
        if REPORTS_TABLE not in cat._table_names():
            self.skipped = 0
            return []
        now = _now_ms()
        floor = max(self.retention.cutoff_ms(now), since_ms if since_ms is not None else 0)
        sql = (
            f"SELECT received_ms, table_name, principal, report FROM {REPORTS_TABLE} "
            "WHERE sql_catalog = ? AND received_ms >= ?"
        )
        params: tuple[object, ...] = (cat.catalog_name, floor)
        if table is not None:
            sql += " AND table_name = ?"
            params += (table,)
        rows = cat._query(sql + " ORDER BY seq", params)
        found: dict[str, list[KeptReport]] = {}
        skipped = 0
        for received, name, principal, body in rows:
            kept = _kept(received, name, principal, body)
            if kept is None:
                skipped += 1
            else:
                found.setdefault(kept.table, []).append(kept)
        self.skipped = skipped
        return _merged(found, self.retention, now, since_ms)


def _merged(
    by_table: Mapping[str, Sequence[KeptReport]],
    retention: Retention,
    now_ms: int,
    since_ms: int | None,
) -> list[KeptReport]:
    """Each table's kept reports (retention applied), all in time order."""
    kept = [
        r for reports in by_table.values() for r in _newest(reports, retention, now_ms, since_ms)
    ]
    return sorted(kept, key=lambda r: r.time_ms)


def report_file_name(table: str) -> str:
    """The file holding ``table``'s reports in a warehouse folder (a hash: no client text)."""
    return f"{REPORTS_FILE_PREFIX}{hashlib.sha256(table.encode()).hexdigest()[:32]}.jsonl"


class FileReportStore:
    """The reports as one JSON-lines file per table beside a local warehouse (see the module).

    Attributes:
        root: the warehouse folder.
        retention: what each table keeps.
        read_only: write nothing.
        skipped: lines the last :meth:`read` could not read as reports.
    """

    def __init__(
        self, root: str | Path, retention: Retention | None = None, *, read_only: bool = False
    ) -> None:
        self.root = Path(root)
        self.retention = retention or Retention()
        self.read_only = read_only
        self.skipped = 0

    def append(self, report: KeptReport) -> bool:
        """Append one line under an exclusive lock; trim the file when it holds too much.

        Raises:
            ReportsUnavailable: the file could not be written.
        """
        if self.read_only:
            return False
        path = self.root / report_file_name(report.table)
        line = _report_json(report).encode() + b"\n"
        try:
            while True:
                fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    if os.fstat(fd).st_ino != os.stat(path).st_ino:
                        continue  # a trim replaced the file while we waited: use the new one
                    self._append_locked(fd, path, line)
                    return True
                finally:
                    os.close(fd)
        except OSError as e:
            raise ReportsUnavailable(
                f"Cannot keep the metrics report in {path} ({e.strerror or e})."
            ) from e

    def _append_locked(self, fd: int, path: Path, line: bytes) -> None:
        size = os.fstat(fd).st_size
        held = os.pread(fd, size, 0) if size else b""
        lines = held.splitlines(keepends=True)
        if lines and not lines[-1].endswith(b"\n"):
            lines[-1] += b"\n"  # a writer died mid-line: close it (readers skip it)
        now = _now_ms()
        first = _report_from_json(lines[0]) if lines else None
        too_old = first is not None and first.time_ms < self.retention.cutoff_ms(now)
        slack = max(1, self.retention.max_count // 10)
        if len(lines) + 1 <= self.retention.max_count + slack and not too_old:
            tail = line if not held or held.endswith(b"\n") else b"\n" + line
            view = memoryview(tail)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            return
        reports = [r for r in map(_report_from_json, lines) if r is not None]
        kept = _newest(reports, self.retention, now, None)
        if self.retention.max_count > 0:
            kept = kept[-(self.retention.max_count - 1) :] if self.retention.max_count > 1 else []
        new = b"".join(_report_json(r).encode() + b"\n" for r in kept) + line
        temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(temp, "wb") as handle:
            handle.write(new)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)

    def read(self, table: str | None = None, since_ms: int | None = None) -> list[KeptReport]:
        """The kept reports (within the retention), oldest first."""
        if table is not None:
            paths = [self.root / report_file_name(table)]
        else:
            try:
                paths = sorted(
                    p
                    for p in self.root.iterdir()
                    if p.name.startswith(REPORTS_FILE_PREFIX) and p.name.endswith(".jsonl")
                )
            except FileNotFoundError:
                paths = []
            except OSError as e:
                raise ReportsUnavailable(f"Cannot list {self.root} ({e.strerror or e}).") from e
        found: dict[str, list[KeptReport]] = {}
        skipped = 0
        for path in paths:
            for kept in self._lines(path):
                if kept is None or (table is not None and kept.table != table):
                    skipped += 1
                else:
                    found.setdefault(kept.table, []).append(kept)
        self.skipped = skipped
        return _merged(found, self.retention, _now_ms(), since_ms)

    def _lines(self, path: Path) -> Iterator[KeptReport | None]:
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return
        except OSError as e:
            raise ReportsUnavailable(f"Cannot read {path} ({e.strerror or e}).") from e
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            data = handle.read()
        for line in data.splitlines():
            if line.strip():
                yield _report_from_json(line)


def report_store_for(catalog: Catalog, retention: Retention | None = None) -> ReportStore | None:
    """The report store of ``catalog``, or None when it keeps none (see the module)."""
    inner: Any = catalog.inner if isinstance(catalog, GuardedCatalog) else catalog
    if isinstance(inner, SqlCatalog):
        return SqlReportStore(inner, retention)
    if isinstance(inner, FilesystemCatalog):
        protocol, local = normalize_path(inner.warehouse_root)
        if protocol == "file":
            return FileReportStore(Path(local), retention, read_only=config_read_only())
    return None


__all__ = [
    "MAX_REPORTS_PER_TABLE",
    "MAX_REPORT_AGE",
    "MAX_REPORT_BYTES",
    "REPORTS_FILE_PREFIX",
    "REPORTS_TABLE",
    "FileReportStore",
    "InvalidReport",
    "KeptReport",
    "ReportStore",
    "ReportsUnavailable",
    "Retention",
    "SqlReportStore",
    "report_file_name",
    "report_store_for",
]
