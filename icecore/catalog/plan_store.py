"""Where ``serve-rest`` keeps the state of served scan plans (issue 33, DESIGN.md "Workload").

A plan served through the REST protocol (``POST .../plan``) leaves state a later call needs:
its result (``GET .../plan/{plan-id}``) and what each plan-task token returns
(``POST .../tasks``). Several ``serve-rest`` processes may serve one catalog behind one
address, and any of them may get the follow-up call, so the state lives where every one of
them reads it, as the audit log does (:mod:`icecore.catalog.audit_store`):

- a SQL catalog (SQLite or PostgreSQL): the table ``icecore_scan_plans`` in the catalog's own
  database, created when the first plan is kept, rows carrying the catalog's name;
- a warehouse folder on a local file system: the SQLite file
  ``<warehouse>/icecore-scan-plans.db`` (a *file*, so no listing takes it for a namespace;
  SQLite serializes the processes' writes);
- anything else (an object-store warehouse, a catalog open read-only): this process's
  memory, bounded the same way (a client is then served by the process that planned).

Each row is one record: a plan (key ``plan:<sha256 of its id>``) or a plan task (key
``task:<sha256 of the token>``), with the table and principal it is bound to, when it
expires, and its JSON payload. A plan's payload lists its tokens (``fetchPlanningResult``
answers them again), so whoever reads the table reads live tokens; a token serves only the
principal who planned, on its table. Rows past their expiry are deleted by the next write.
Every record is bounded by the caller
(:mod:`icecore.server.planning`): payload size, plans per principal, age.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from icecore.catalog.base import Catalog
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.guarded import GuardedCatalog
from icecore.catalog.sql import OwnTable, SqlCatalog, first_line
from icecore.config import read_only as config_read_only
from icecore.errors import CatalogUnavailable
from icecore.io import normalize_path

PLAN_TABLE = "icecore_scan_plans"
"""The plan state's table in a SQL catalog's database (and in the folder catalog's file)."""

PLAN_FILE = "icecore-scan-plans.db"
"""The SQLite file holding a warehouse folder's plan state (a file: never a namespace)."""


class PlanStateUnavailable(CatalogUnavailable):
    """The plan state could not be written or read (the database refused or is unreachable)."""


@dataclass(frozen=True)
class PlanRecord:
    """One kept record: a plan or a plan task.

    Attributes:
        key: ``plan:<sha256 of the plan id>`` or ``task:<sha256 of the token>``.
        plan_id: the plan it belongs to (a task's plan; a plan's own id).
        table: the table it was planned for (``ns.table``).
        principal: who asked for it (its tokens serve nobody else).
        expires_at: when it stops being served (seconds since the epoch).
        payload: the JSON it answers with.
    """

    key: str
    plan_id: str
    table: str
    principal: str
    expires_at: float
    payload: Any


def task_key(token: str) -> str:
    """The key a plan-task token is kept under: its SHA-256, never the token itself."""
    return "task:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def plan_key(plan_id: str) -> str:
    """The key a plan is kept under."""
    return "plan:" + hashlib.sha256(plan_id.encode("utf-8")).hexdigest()


class PlanStore(Protocol):
    """Keeps plan records where every server process of a catalog reads them."""

    def put(self, records: list[PlanRecord]) -> None:
        """Keep ``records`` in one transaction (replacing a key's record), expired ones gone."""
        ...

    def get(self, key: str) -> PlanRecord | None:
        """The record under ``key`` if it has not expired, else None."""
        ...

    def drop_plan(self, plan_id: str) -> int:
        """Delete a plan and its tasks; how many records went."""
        ...

    def touch(self, key: str, expires_at: float) -> bool:
        """Move an unexpired record's expiry to ``expires_at``; False if none is there.

        One atomic step: a record dropped meanwhile (a cancelled plan) is never brought back.
        """
        ...

    def replace_live(self, record: PlanRecord) -> bool:
        """Replace the unexpired record under ``record.key``; False (nothing kept) if none is.

        One atomic step, as :meth:`touch`: a plan cancelled while it was being made is not
        brought back by its result.
        """
        ...

    def live_plans(self, principal: str) -> list[tuple[str, float]]:
        """``(plan id, expires_at)`` of the principal's unexpired plans."""
        ...


class SqlPlanStore:
    """Plan records in a SQL database (see the module): one table, plain INSERT/SELECT/DELETE.

    Args:
        connect: opens an autocommit connection.
        placeholder: the driver's parameter mark (``?`` or ``%s``).
        errors: the driver's error classes.
        table_names: the database's table names (to create the table once).
        scope: the catalog's name, kept on every row (one database may hold several catalogs).
        where: the database as messages name it (never with a password).
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        placeholder: str,
        errors: tuple[type[Exception], ...],
        table_names: Callable[[], set[str]],
        scope: str,
        where: str,
    ) -> None:
        self._connect = connect
        self._mark = placeholder
        self._errors = errors
        self._table_names = table_names
        self.scope = scope
        self.where = where
        self._table = OwnTable(
            connect,
            errors,
            table_names,
            PLAN_TABLE,
            [
                f"CREATE TABLE IF NOT EXISTS {PLAN_TABLE} (record_key VARCHAR(80) NOT NULL, "
                "sql_catalog VARCHAR(255) NOT NULL, plan_id VARCHAR(80) NOT NULL, "
                "table_name TEXT NOT NULL, principal TEXT NOT NULL, expires_at DOUBLE PRECISION "
                "NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (sql_catalog, record_key))"
            ],
        )

    def _sql(self, text: str) -> str:
        return text.replace("?", self._mark)

    def _failed(self, e: Exception) -> PlanStateUnavailable:
        return PlanStateUnavailable(
            f"Cannot keep scan plans in {self.where} ({first_line(e)}); try again."
        )

    def _create(self) -> None:
        self._table.ensure(self._failed)

    def put(self, records: list[PlanRecord]) -> None:
        """Drop the expired records, then replace ``records`` (DELETE + INSERT) in one go.

        A submitted plan's record becomes its completed or failed one.
        """
        self._create()
        replace = self._sql(f"DELETE FROM {PLAN_TABLE} WHERE sql_catalog = ? AND record_key = ?")
        insert = self._sql(
            f"INSERT INTO {PLAN_TABLE} (record_key, sql_catalog, plan_id, table_name, principal, "
            "expires_at, payload) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        try:
            with closing(self._connect()) as conn:
                conn.execute(
                    self._sql(f"DELETE FROM {PLAN_TABLE} WHERE sql_catalog = ? AND expires_at < ?"),
                    (self.scope, time.time()),
                )
                conn.execute("BEGIN")
                try:
                    for r in records:
                        conn.execute(replace, (self.scope, r.key))
                        conn.execute(
                            insert,
                            (
                                r.key,
                                self.scope,
                                r.plan_id,
                                r.table,
                                r.principal,
                                r.expires_at,
                                json.dumps(r.payload, separators=(",", ":")),
                            ),
                        )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        except self._errors as e:
            raise self._failed(e) from e

    def _select(self, where: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        self._create()
        try:
            with closing(self._connect()) as conn:
                return list(conn.execute(self._sql(where), params).fetchall())
        except self._errors as e:
            raise self._failed(e) from e

    def get(self, key: str) -> PlanRecord | None:
        """The unexpired record under ``key``."""
        rows = self._select(
            f"SELECT record_key, plan_id, table_name, principal, expires_at, payload "
            f"FROM {PLAN_TABLE} WHERE sql_catalog = ? AND record_key = ? AND expires_at >= ?",
            (self.scope, key, time.time()),
        )
        if not rows:
            return None
        k, plan_id, table, principal, expires, payload = rows[0]
        return PlanRecord(
            str(k), str(plan_id), str(table), str(principal), float(expires), json.loads(payload)
        )

    def _changed(self, statement: str, params: tuple[Any, ...]) -> int:
        """Run one DELETE or UPDATE; how many rows it changed."""
        self._create()
        try:
            with closing(self._connect()) as conn:
                return int(conn.execute(self._sql(statement), params).rowcount or 0)
        except self._errors as e:
            raise self._failed(e) from e

    def drop_plan(self, plan_id: str) -> int:
        """DELETE the plan's records."""
        return self._changed(
            f"DELETE FROM {PLAN_TABLE} WHERE sql_catalog = ? AND plan_id = ?",
            (self.scope, plan_id),
        )

    def touch(self, key: str, expires_at: float) -> bool:
        """UPDATE the unexpired record's expiry (one statement: a dropped record stays gone)."""
        return (
            self._changed(
                f"UPDATE {PLAN_TABLE} SET expires_at = ? WHERE sql_catalog = ? AND "
                "record_key = ? AND expires_at >= ?",
                (expires_at, self.scope, key, time.time()),
            )
            > 0
        )

    def replace_live(self, record: PlanRecord) -> bool:
        """UPDATE the unexpired record in place (one statement: a dropped one stays gone)."""
        payload = json.dumps(record.payload, separators=(",", ":"))
        return (
            self._changed(
                f"UPDATE {PLAN_TABLE} SET plan_id = ?, table_name = ?, principal = ?, "
                "expires_at = ?, payload = ? WHERE sql_catalog = ? AND record_key = ? "
                "AND expires_at >= ?",
                (
                    record.plan_id,
                    record.table,
                    record.principal,
                    record.expires_at,
                    payload,
                    self.scope,
                    record.key,
                    time.time(),
                ),
            )
            > 0
        )

    def live_plans(self, principal: str) -> list[tuple[str, float]]:
        """The principal's unexpired plans, oldest first."""
        rows = self._select(
            f"SELECT plan_id, expires_at FROM {PLAN_TABLE} WHERE sql_catalog = ? AND "
            "principal = ? AND record_key LIKE ? AND expires_at >= ? ORDER BY expires_at",
            (self.scope, principal, "plan:%", time.time()),
        )
        return [(str(p), float(e)) for p, e in rows]


class MemoryPlanStore:
    """Plan records in this process's memory (see the module), under a lock."""

    def __init__(self) -> None:
        self._records: dict[str, PlanRecord] = {}
        self._lock = threading.Lock()

    def put(self, records: list[PlanRecord]) -> None:
        """Drop the expired records, then keep ``records``."""
        now = time.time()
        with self._lock:
            for key in [k for k, r in self._records.items() if r.expires_at < now]:
                del self._records[key]
            self._records.update((r.key, r) for r in records)

    def get(self, key: str) -> PlanRecord | None:
        """The unexpired record under ``key``."""
        with self._lock:
            record = self._records.get(key)
        return record if record is not None and record.expires_at >= time.time() else None

    def drop_plan(self, plan_id: str) -> int:
        """Forget the plan's records."""
        with self._lock:
            keys = [k for k, r in self._records.items() if r.plan_id == plan_id]
            for key in keys:
                del self._records[key]
        return len(keys)

    def touch(self, key: str, expires_at: float) -> bool:
        """Move the unexpired record's expiry (under the lock: a dropped one stays gone)."""
        with self._lock:
            record = self._records.get(key)
            if record is None or record.expires_at < time.time():
                return False
            self._records[key] = replace(record, expires_at=expires_at)
        return True

    def replace_live(self, record: PlanRecord) -> bool:
        """Replace the unexpired record (under the lock: a dropped one stays gone)."""
        with self._lock:
            found = self._records.get(record.key)
            if found is None or found.expires_at < time.time():
                return False
            self._records[record.key] = record
        return True

    def live_plans(self, principal: str) -> list[tuple[str, float]]:
        """The principal's unexpired plans, oldest first."""
        now = time.time()
        with self._lock:
            found = [
                (r.plan_id, r.expires_at)
                for r in self._records.values()
                if r.key.startswith("plan:") and r.principal == principal and r.expires_at >= now
            ]
        return sorted(found, key=lambda p: p[1])


def _sqlite_file_store(path: Path, scope: str) -> SqlPlanStore:
    def connect() -> sqlite3.Connection:
        return sqlite3.connect(path, timeout=30, isolation_level=None)

    def names() -> set[str]:
        if not path.exists():
            return set()
        with closing(connect()) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        return {str(r[0]) for r in rows}

    return SqlPlanStore(connect, "?", (sqlite3.DatabaseError,), names, scope, str(path))


def plan_store_for(catalog: Catalog) -> PlanStore:
    """Where ``catalog``'s served plans are kept (see the module)."""
    inner: Any = catalog.inner if isinstance(catalog, GuardedCatalog) else catalog
    if isinstance(inner, SqlCatalog) and not inner.read_only:
        return SqlPlanStore(
            inner._connect,
            inner.placeholder,
            inner._driver_errors(),
            inner._table_names,
            inner.catalog_name,
            inner.where,
        )
    if isinstance(inner, FilesystemCatalog) and not config_read_only():
        protocol, local = normalize_path(inner.warehouse_root)
        if protocol == "file":
            return _sqlite_file_store(Path(local) / PLAN_FILE, "")
    return MemoryPlanStore()


__all__ = [
    "PLAN_FILE",
    "PLAN_TABLE",
    "MemoryPlanStore",
    "PlanRecord",
    "PlanStateUnavailable",
    "PlanStore",
    "SqlPlanStore",
    "plan_key",
    "task_key",
]
