"""Which alerts a catalog has sent, so each is sent once (:mod:`icecore.alerts`).

``icecore alerts`` evaluates every table on each run; an alert whose key (table, event and
the snapshot or score bucket it is about, :func:`icecore.alert_rules.alert_key`) was sent
before is not sent again. The sent alerts are kept where the catalog is, placed as the
audit log and the metrics reports are (:mod:`icecore.catalog.report_store`):

- a SQL catalog (SQLite or PostgreSQL): the table ``icecore_alerts`` in the catalog's own
  database, created by the first alert, rows keyed by the catalog's ``catalog_name``, one
  per alert key (a unique index on ``(sql_catalog, alert_key)``). A run *claims* each new
  alert before sending it: ``INSERT ... ON CONFLICT DO NOTHING``, and only the process whose
  row went in (the row count is 1) sends it, so two runs at once (``icecore alerts`` in two
  shells, on two hosts over one PostgreSQL) send each alert once. A claim is *pending*
  (``pending_until`` set) while its run sends; delivered, it becomes a sent alert
  (``pending_until`` cleared); not delivered (retries spent, the run interrupted), it is
  released (its row DELETEd) and the next run sends it. A run killed outright mid-send
  leaves a pending claim that lapses at its ``pending_until`` (the run's whole sending
  bound, :func:`icecore.alert_rules.claim_until`): after that no run counts it as sent and
  the next one takes it over (``UPDATE ... WHERE pending_until < now``, again one winner),
  so a crash delays an alert but never suppresses it; the hook may then see it twice if
  the dead run's POST had got through. A read-only catalog records nothing (every run
  sends what it finds). A table made before claims gets the unique index (duplicate keys
  from the days before are dropped first) and the ``pending_until`` column on the next run.
- a warehouse folder on a local file system: the JSON-lines file
  ``<warehouse>/icecore-alerts.jsonl`` (a file, never taken for a namespace), appended
  under an exclusive ``flock``; past :data:`MAX_KEPT` lines (by a tenth) the newest are
  rewritten and swapped in. A run holds ``<warehouse>/icecore-alerts.lock`` from reading
  the keys to recording, so two runs at once never send one alert twice: holding the lock
  is the claim, and an alert is recorded only once the hook accepted it (one that failed,
  or a run killed before recording, sends again next run). Read-only
  (``ICECORE_READ_ONLY``) writes nothing.
- an object-store warehouse or a REST catalog: None (nothing is remembered: every run sends
  what it finds; say ``--dry-run`` to look first).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from icecore.catalog.base import Catalog
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.guarded import GuardedCatalog
from icecore.catalog.sql import OwnTable, SqlCatalog, first_line
from icecore.config import read_only as config_read_only
from icecore.errors import CatalogUnavailable
from icecore.failpoints import failpoint
from icecore.io import normalize_path
from icecore.values import json_object

ALERTS_TABLE = "icecore_alerts"
"""The sent alerts' table in a SQL catalog's database."""

ALERTS_FILE = "icecore-alerts.jsonl"
"""The sent alerts' file at a warehouse folder's root."""

ALERTS_LOCK = "icecore-alerts.lock"
"""Held (``flock``) by an ``icecore alerts`` run over a warehouse folder, start to end."""

MAX_KEPT = 10_000
"""Sent alerts a warehouse file keeps (the newest); older keys may alert again."""


class AlertLogUnavailable(CatalogUnavailable):
    """The sent alerts could not be read or written."""


@dataclass(frozen=True, slots=True)
class SentAlert:
    """One alert sent: its key, when, and the payload (no secret: see :mod:`icecore.alerts`)."""

    key: str
    time_ms: int
    payload: dict[str, Any]


class AlertStore(Protocol):
    """Where a catalog's sent alerts are kept."""

    @property
    def writable(self) -> bool:
        """Whether :meth:`add` records (False when Icecore runs read-only)."""
        ...

    def keys(self) -> set[str]:
        """Every key sent (and still kept)."""
        ...

    def add(self, sent: SentAlert) -> bool:
        """Record one sent alert; False when nothing may be written (read-only)."""
        ...

    def claim(self, sent: SentAlert, until_ms: int) -> bool:
        """Whether this run may send ``sent`` (no other run has, or is sending, its key).

        Called under :meth:`run_lock` for keys not in :meth:`keys`; each claim won is then
        :meth:`settle` d with whether the hook accepted it. ``until_ms``: when the claim
        lapses if never settled (its run died), so another run may send the alert.
        """
        ...

    def settle(self, sent: SentAlert, delivered: bool) -> None:
        """End a claim: keep it when ``delivered``, else release it (sent again next run)."""
        ...

    def recent(self, limit: int) -> list[SentAlert]:
        """The newest ``limit`` sent alerts, newest first."""
        ...

    def run_lock(self) -> AbstractContextManager[object]:
        """Held by one run from reading the keys to recording what it sent."""
        ...


def now_ms() -> int:
    """Milliseconds since the epoch, as the sent alerts are stamped."""
    return int(dt.datetime.now(dt.UTC).timestamp() * 1000)


def _line(sent: SentAlert) -> bytes:
    body = {"key": sent.key, "time_ms": sent.time_ms, "payload": sent.payload}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _parse(line: bytes | str) -> SentAlert | None:
    body = json_object(line)
    if body is None:
        return None
    key, time_ms, payload = body.get("key"), body.get("time_ms"), body.get("payload")
    if not isinstance(key, str) or not isinstance(time_ms, int) or not isinstance(payload, dict):
        return None
    return SentAlert(key, time_ms, payload)


class SqlAlertStore:
    """The sent alerts in a SQL catalog's database (see the module).

    A row is a claim while ``pending_until`` (ms since the epoch) is set: its run is sending
    it. :meth:`settle` clears it (delivered) or deletes the row (not delivered). A claim
    whose ``pending_until`` has passed belongs to a run that died mid-send: other runs do
    not count it as sent and :meth:`claim` takes it over.
    """

    def __init__(self, catalog: SqlCatalog) -> None:
        self.catalog = catalog
        self._ready = False
        self._table = OwnTable.of(
            catalog,
            ALERTS_TABLE,
            (
                f"CREATE TABLE IF NOT EXISTS {ALERTS_TABLE} (seq {catalog.serial_key}, "
                "sql_catalog VARCHAR(255) NOT NULL, alert_key TEXT NOT NULL, "
                "sent_ms BIGINT NOT NULL, payload TEXT NOT NULL, pending_until BIGINT)",
                # A table from before the unique index may hold a key twice: keep the first.
                f"DELETE FROM {ALERTS_TABLE} WHERE seq NOT IN (SELECT MIN(seq) FROM "
                f"{ALERTS_TABLE} GROUP BY sql_catalog, alert_key)",
                f"CREATE UNIQUE INDEX IF NOT EXISTS {ALERTS_TABLE}_key "
                f"ON {ALERTS_TABLE} (sql_catalog, alert_key)",
            ),
            upgrade=True,
        )

    @property
    def writable(self) -> bool:
        """Whether :meth:`add` records (the catalog is not open read-only)."""
        return not self.catalog.read_only

    def _failed(self, what: str) -> Callable[[Exception], AlertLogUnavailable]:
        where = self.catalog.where
        return lambda e: AlertLogUnavailable(f"Cannot {what} in {where} ({first_line(e)}).")

    def _create(self) -> None:
        """The table, its unique key and ``pending_until`` (added to a table made before it)."""
        if self._ready:
            return
        cat = self.catalog
        self._table.ensure(self._failed(f"create the alerts table {ALERTS_TABLE}"))
        if "pending_until" not in cat._column_names(ALERTS_TABLE):
            try:
                with closing(cat._connect()) as conn:
                    conn.execute(f"ALTER TABLE {ALERTS_TABLE} ADD COLUMN pending_until BIGINT")
            except cat._driver_errors() as e:  # a second run added it first: that is success
                if "pending_until" not in cat._column_names(ALERTS_TABLE):
                    raise self._failed(f"upgrade the alerts table {ALERTS_TABLE}")(e) from e
        self._ready = True

    def _execute(self, what: str, sql: str, params: tuple[Any, ...]) -> int:
        """Run one statement (its own transaction); the rows it changed."""
        cat = self.catalog
        try:
            self._create()
            with closing(cat._connect()) as conn:
                return int(conn.execute(sql.replace("?", cat.placeholder), params).rowcount)
        except cat._driver_errors() as e:
            raise self._failed(what)(e) from e

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        cat = self.catalog
        if ALERTS_TABLE not in cat._table_names():
            return []
        if not self._ready and "pending_until" not in cat._column_names(ALERTS_TABLE):
            sql = sql.replace("pending_until", "NULL")  # a table from before claims: all sent
        try:
            with closing(cat._connect()) as conn:
                return list(conn.execute(sql.replace("?", cat.placeholder), params).fetchall())
        except cat._driver_errors() as e:
            raise self._failed("read the sent alerts")(e) from e

    def run_lock(self) -> AbstractContextManager[object]:
        """Nothing: each alert is claimed on its own (:meth:`claim`), the database decides."""
        return nullcontext()

    def keys(self) -> set[str]:
        """Every key sent by this catalog, or being sent by a live run (its claim not passed)."""
        rows = self._rows(
            f"SELECT alert_key FROM {ALERTS_TABLE} WHERE sql_catalog = ? "
            "AND (pending_until IS NULL OR pending_until >= ?)",
            (self.catalog.catalog_name, now_ms()),
        )
        return {str(r[0]) for r in rows}

    def add(self, sent: SentAlert) -> bool:
        """Record one sent alert (a claim delivered); False when nothing may be written.

        Raises:
            AlertLogUnavailable: the database refused or could not be reached.
        """
        if self.catalog.read_only:
            return False
        if self.claim(sent, until_ms=now_ms()):
            self.settle(sent, delivered=True)
        return True

    def claim(self, sent: SentAlert, until_ms: int) -> bool:
        """Claim ``sent.key`` until ``until_ms`` for this run; whether this run won it.

        ``INSERT ... ON CONFLICT DO NOTHING`` against the unique key (SQLite 3.24+ and
        PostgreSQL spell it alike) makes check-and-insert one statement: of two runs at once,
        exactly one sees a row count of 1. A key whose claim has passed (its run died
        mid-send) is taken over by one UPDATE, again won by one run. A read-only catalog
        claims without recording (True: every run sends).

        Raises:
            AlertLogUnavailable: the database refused or could not be reached.
        """
        cat = self.catalog
        if cat.read_only:
            return True
        body = json.dumps(sent.payload, ensure_ascii=False)
        what = "claim the alert"
        inserted = self._execute(
            what,
            f"INSERT INTO {ALERTS_TABLE} (sql_catalog, alert_key, sent_ms, payload, "
            "pending_until) VALUES (?, ?, ?, ?, ?) ON CONFLICT (sql_catalog, alert_key) DO NOTHING",
            (cat.catalog_name, sent.key, sent.time_ms, body, until_ms),
        )
        if inserted == 1:
            failpoint("alert-claimed")  # tests: a run killed between its claim and its POST
            return True
        taken = self._execute(
            what,
            f"UPDATE {ALERTS_TABLE} SET sent_ms = ?, payload = ?, pending_until = ? "
            "WHERE sql_catalog = ? AND alert_key = ? AND pending_until < ?",
            (sent.time_ms, body, until_ms, cat.catalog_name, sent.key, now_ms()),
        )
        if taken == 1:
            failpoint("alert-claimed")
        return taken == 1

    def settle(self, sent: SentAlert, delivered: bool) -> None:
        """End this run's claim: delivered, it is kept as sent; else DELETEd (sent next run).

        Only this run's claim (its ``sent_ms``) is touched, never one another run took over.

        Raises:
            AlertLogUnavailable: the database refused or could not be reached.
        """
        cat = self.catalog
        if cat.read_only:
            return
        mine = (
            "WHERE sql_catalog = ? AND alert_key = ? AND sent_ms = ? AND pending_until IS NOT NULL"
        )
        params = (cat.catalog_name, sent.key, sent.time_ms)
        if delivered:
            self._execute(
                "record the sent alert",
                f"UPDATE {ALERTS_TABLE} SET pending_until = NULL {mine}",
                params,
            )
        else:
            self._execute("release the unsent alert", f"DELETE FROM {ALERTS_TABLE} {mine}", params)

    def recent(self, limit: int) -> list[SentAlert]:
        """The newest ``limit`` alerts sent (delivered), newest first."""
        rows = self._rows(
            f"SELECT alert_key, sent_ms, payload FROM {ALERTS_TABLE} WHERE sql_catalog = ? "
            f"AND pending_until IS NULL ORDER BY seq DESC LIMIT {max(0, int(limit))}",
            (self.catalog.catalog_name,),
        )
        found = [
            _parse(json.dumps({"key": r[0], "time_ms": int(r[1]), "payload": json.loads(r[2])}))
            for r in rows
        ]
        return [s for s in found if s is not None]


class FileAlertStore:
    """The sent alerts as a JSON-lines file at a local warehouse's root (see the module)."""

    def __init__(self, root: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(root) / ALERTS_FILE
        self.read_only = read_only

    @property
    def writable(self) -> bool:
        """Whether :meth:`add` records (Icecore does not run read-only)."""
        return not self.read_only

    def _all(self) -> list[SentAlert]:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return []
        except OSError as e:
            raise AlertLogUnavailable(f"Cannot read {self.path} ({e.strerror or e}).") from e
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            data = handle.read()
        return [s for s in map(_parse, data.splitlines()) if s is not None]

    @contextmanager
    def run_lock(self) -> Iterator[object]:
        """An exclusive ``flock`` on :data:`ALERTS_LOCK`, held for one run.

        A second run waits for the first, then finds what it sent (none is sent twice).
        Read-only: no lock (nothing is kept).

        Raises:
            AlertLogUnavailable: the lock file could not be opened.
        """
        if self.read_only:
            yield None
            return
        where = self.path.with_name(ALERTS_LOCK)
        try:
            fd = os.open(where, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise AlertLogUnavailable(f"Cannot open {where} ({e.strerror or e}).") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield None
        finally:
            os.close(fd)

    def keys(self) -> set[str]:
        """Every key sent (and still kept)."""
        return {s.key for s in self._all()}

    def add(self, sent: SentAlert) -> bool:
        """Append one line under an exclusive lock; keep the newest :data:`MAX_KEPT` when past.

        Raises:
            AlertLogUnavailable: the file could not be written.
        """
        if self.read_only:
            return False
        line = _line(sent)
        try:
            while True:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                        continue  # a trim replaced the file while we waited: use the new one
                    self._append_locked(fd, line)
                    return True
                finally:
                    os.close(fd)
        except OSError as e:
            raise AlertLogUnavailable(
                f"Cannot record the sent alert in {self.path} ({e.strerror or e})."
            ) from e

    def claim(self, sent: SentAlert, until_ms: int) -> bool:
        """True: :meth:`run_lock`, held from reading the keys, is this store's claim."""
        return True

    def settle(self, sent: SentAlert, delivered: bool) -> None:
        """Record ``sent`` when ``delivered`` (:meth:`add`); an unsent one is sent next run.

        Raises:
            AlertLogUnavailable: the file could not be written.
        """
        if delivered:
            self.add(sent)

    def _append_locked(self, fd: int, line: bytes) -> None:
        size = os.fstat(fd).st_size
        held = os.pread(fd, size, 0) if size else b""
        lines = held.splitlines(keepends=True)
        if len(lines) < MAX_KEPT + MAX_KEPT // 10:
            tail = line if not held or held.endswith(b"\n") else b"\n" + line
            view = memoryview(tail)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            return
        kept = [x if x.endswith(b"\n") else x + b"\n" for x in lines[-(MAX_KEPT - 1) :]]
        temp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with open(temp, "wb") as handle:
            handle.write(b"".join(kept) + line)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)

    def recent(self, limit: int) -> list[SentAlert]:
        """The newest ``limit`` sent alerts, newest first."""
        return list(reversed(self._all()))[: max(0, limit)]


def alert_store_for(catalog: Catalog) -> AlertStore | None:
    """The sent-alerts store of ``catalog``, or None when it keeps none (see the module)."""
    inner: Any = catalog.inner if isinstance(catalog, GuardedCatalog) else catalog
    if isinstance(inner, SqlCatalog):
        return SqlAlertStore(inner)
    if isinstance(inner, FilesystemCatalog):
        protocol, local = normalize_path(inner.warehouse_root)
        if protocol == "file":
            return FileAlertStore(Path(local), read_only=config_read_only())
    return None


__all__ = [
    "ALERTS_FILE",
    "ALERTS_LOCK",
    "ALERTS_TABLE",
    "MAX_KEPT",
    "AlertLogUnavailable",
    "AlertStore",
    "FileAlertStore",
    "SentAlert",
    "SqlAlertStore",
    "alert_store_for",
    "now_ms",
]
