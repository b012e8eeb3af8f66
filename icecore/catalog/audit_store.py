"""Where a catalog keeps its audit log (:mod:`icecore.audit`; DESIGN.md "Identity, roles, audit").

The log lives where the catalog lives, so whoever can reach the catalog reaches its log, and
the log goes wherever the catalog is backed up:

- a SQL catalog (SQLite or PostgreSQL: :class:`~icecore.catalog.sql.SqlCatalog`): the table
  ``icecore_audit`` in the catalog's own database, created when the first event is written.
  One row per event, numbered by the database (``seq``) in the order written; Icecore only
  ever INSERTs (an intent and its outcome are two rows, never an UPDATE or a DELETE), each
  INSERT its own transaction, so concurrent writers (processes, the app's sessions, the REST
  server) are serialized by the database itself. One database may hold several catalogs: the
  rows carry the catalog's ``catalog_name`` and each catalog reads its own. A catalog open
  read-only (``read_only=True``, ``ICECORE_READ_ONLY``) makes no commits, so it never writes
  its log; it still reads it (``icecore audit``, the Activity page).
- a warehouse folder on a local file system (:class:`~icecore.catalog.filesystem
  .FilesystemCatalog`): the JSON-lines file ``<warehouse>/icecore-audit.jsonl``, one event per
  line. It is a *file* inside the warehouse root, so Icecore's listing and Spark's
  HadoopCatalog (both list folders as namespaces) never take it for a namespace. Each event
  is one ``write`` of a whole line through ``O_APPEND``, under an exclusive ``flock`` on the
  file (so two processes' lines never interleave, even on a file system where ``O_APPEND``
  alone would not promise it), then ``fsync``; a reader holds a shared ``flock`` so it never
  sees half a line. A line that a crash cut short is closed with a newline by the next writer
  and skipped (and counted) by readers, as is any line that is not an event. When Icecore
  runs read-only (``ICECORE_READ_ONLY``, ``read_only`` in icecore.toml) it writes nothing
  beside the tables: the file is read, never written (no change can be made either).
- a warehouse on an object store (``s3://``): objects cannot be appended to, so each event
  is one object at the warehouse's root, ``icecore-audit.<time>.<id>.<phase>.json``, put
  with a conditional create (never over an existing object), durable once the PUT returns.
  Objects at the root, not a prefix: a "folder" of them would be listed as a namespace by
  Spark's HadoopCatalog. The names sort by time; a reader lists the root and reads the
  newest :data:`MAX_OBJECTS_READ` events (one GET each).
- a REST catalog client: None: the server keeps the log of the changes made through it.

A store that cannot write raises :class:`AuditLogUnavailable` (an
:class:`~icecore.errors.IcecoreError`): the guarded catalog appends the intent before the
swap, so the change then does not go ahead.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import uuid
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

from icecore.audit import (
    MAX_LINE_BYTES,
    AuditChange,
    AuditEvent,
    AuditSink,
    Result,
    bounded,
    event_from_json,
    event_from_mapping,
    event_json,
    now_iso,
)
from icecore.catalog.base import Catalog, TableIdentifier
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.guarded import GuardedCatalog, change_summary
from icecore.catalog.sql import OwnTable, SqlCatalog, first_line
from icecore.config import read_only as config_read_only
from icecore.errors import CatalogUnavailable, IcecoreError, ValidationError
from icecore.io import FileIO, normalize_path
from icecore.table_data import read_table_metadata

AUDIT_TABLE = "icecore_audit"
"""The audit log's table in a SQL catalog's database."""

AUDIT_FILE = "icecore-audit.jsonl"
"""The audit log's file in a warehouse folder (a file: never listed as a namespace)."""

_COLUMNS = (
    ("event_id", "id"),
    ("phase", "phase"),
    ("event_time", "time"),
    ("principal", "principal"),
    ("subject", "subject"),
    ("source", "source"),
    ("action", "action"),
    ("served_catalog", "catalog"),
    ("table_name", "table"),
    ("result", "result"),
    ("metadata_before", "metadata_before"),
    ("metadata_after", "metadata_after"),
    ("summary", "summary"),
)
"""The table's columns and the event fields they hold (``time``, ``table`` are SQL words)."""


class AuditLogUnavailable(CatalogUnavailable):
    """The audit log could not be written (or read): a change is not made unrecorded."""


class SqlAuditLog:
    """The audit log in a SQL catalog's database (see the module).

    Attributes:
        catalog: the SQL catalog whose database holds the table.
        skipped: rows the last :meth:`read` could not read as events.
    """

    def __init__(self, catalog: SqlCatalog) -> None:
        self.catalog = catalog
        self.skipped = 0
        columns = ", ".join(
            f"{col} TEXT" if col.startswith("metadata_") else f"{col} TEXT NOT NULL"
            for col, _ in _COLUMNS
        )
        self._table = OwnTable.of(
            catalog,
            AUDIT_TABLE,
            [
                f"CREATE TABLE IF NOT EXISTS {AUDIT_TABLE} (seq {catalog.serial_key}, "
                f"sql_catalog VARCHAR(255) NOT NULL, {columns})"
            ],
        )

    def _create(self) -> None:
        """Create ``icecore_audit`` once per store (if it is missing)."""
        cat = self.catalog
        self._table.ensure(
            lambda e: AuditLogUnavailable(
                f"Cannot create the audit log table {AUDIT_TABLE} in {cat.where} "
                f"({first_line(e)}); the change was not made."
            )
        )

    def append(self, event: AuditEvent) -> None:
        """INSERT one row, committed (durable) before returning.

        Raises:
            ValidationError: the catalog is open read-only (it can make no change either).
            AuditLogUnavailable: the database refused the row or could not be reached.
        """
        cat = self.catalog
        if cat.read_only:
            raise ValidationError(
                f"The SQL catalog {cat.where} is open read-only, so its audit log cannot be "
                "written and no change can be made; open it read-write to change it."
            )
        event = bounded(event)
        names = ", ".join(col for col, _ in _COLUMNS)
        marks = ", ".join(cat.placeholder for _ in range(len(_COLUMNS) + 1))
        values = (cat.catalog_name, *(getattr(event, attr) for _, attr in _COLUMNS))
        try:
            self._create()
            with closing(cat._connect()) as conn:
                conn.execute(
                    f"INSERT INTO {AUDIT_TABLE} (sql_catalog, {names}) VALUES ({marks})", values
                )
        except cat._driver_errors() as e:
            raise AuditLogUnavailable(
                f"Cannot write the audit log in {cat.where} ({first_line(e)}); the change "
                "was not made."
            ) from e
        except AuditLogUnavailable:
            raise
        except IcecoreError as e:  # could not connect (PostgreSQL down, password refused)
            raise AuditLogUnavailable(
                f"Cannot write the audit log: {str(e).rstrip('.')}; the change was not made."
            ) from e

    def read(self) -> Sequence[AuditEvent]:
        """Every event of this catalog in the order written (none before the first)."""
        cat = self.catalog
        if AUDIT_TABLE not in cat._table_names():
            self.skipped = 0
            return []
        names = ", ".join(col for col, _ in _COLUMNS)
        rows = cat._query(
            f"SELECT {names} FROM {AUDIT_TABLE} WHERE sql_catalog = ? ORDER BY seq",
            (cat.catalog_name,),
        )
        events, self.skipped = _kept(
            event_from_mapping(
                {attr: value for (_, attr), value in zip(_COLUMNS, row, strict=True)}
            )
            for row in rows
        )
        return events


class FileAuditLog:
    """The audit log as a JSON-lines file beside a local warehouse's tables (see the module).

    Attributes:
        path: the file.
        skipped: lines the last :meth:`read` could not read as events.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.skipped = 0

    def append(self, event: AuditEvent) -> None:
        """Append one line under an exclusive lock and ``fsync`` it before returning.

        Raises:
            ValidationError: Icecore runs read-only (it writes nothing beside the tables).
            AuditLogUnavailable: the file could not be written.
        """
        _refuse_if_read_only(self.read_only, str(self.path))
        line = event_json(event).encode() + b"\n"
        if len(line) > MAX_LINE_BYTES:  # only a summary of many multi-byte characters
            line = event_json(replace(bounded(event), summary="")).encode() + b"\n"
        created = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line  # a writer died mid-line: keep ours whole
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)  # releases the lock
            if created:
                _fsync_folder(self.path.parent)
        except OSError as e:
            raise AuditLogUnavailable(
                f"Cannot write the audit log {self.path} ({e.strerror or e}); the change was "
                "not made."
            ) from e

    def read(self) -> Sequence[AuditEvent]:
        """Every event in the order written; unreadable lines are skipped and counted."""
        events: list[AuditEvent] = []
        skipped = 0
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            self.skipped = 0
            return []
        except OSError as e:
            raise AuditLogUnavailable(
                f"Cannot read the audit log {self.path} ({e.strerror or e})."
            ) from e
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            while True:
                line = handle.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                if not line.endswith(b"\n"):
                    if len(line) > MAX_LINE_BYTES:  # too long: skip the rest of it
                        while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(
                            b"\n"
                        ):
                            pass
                    skipped += 1
                    continue
                if not line.strip():
                    continue
                found = event_from_json(line)
                if found is None:
                    skipped += 1
                else:
                    events.append(found)
        self.skipped = skipped
        return events


MAX_OBJECTS_READ = 10_000
"""Events an object-store log reads at most (the newest): one request each."""

_OBJECT_PREFIX = "icecore-audit."
_SAFE_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


class ObjectAuditLog:
    """The audit log of a warehouse on an object store: one object per event (see the module).

    Attributes:
        io: the warehouse's FileIO.
        root: the warehouse (``s3://bucket/path``).
        skipped: objects the last :meth:`read` could not read as events.
    """

    def __init__(self, io: FileIO, root: str, *, read_only: bool = False) -> None:
        self.io = io
        self.root = root.rstrip("/")
        self.read_only = read_only
        self.skipped = 0

    def _name(self, event: AuditEvent) -> str:
        stamp = re.sub(r"[^0-9TZ]", "", event.time)[:24] or "0"
        ident = event.id if _SAFE_ID.fullmatch(event.id) else uuid.uuid4().hex
        return f"{self.root}/{_OBJECT_PREFIX}{stamp}.{ident}.{event.phase}.json"

    def append(self, event: AuditEvent) -> None:
        """Create the event's object; never replaces one.

        Raises:
            ValidationError: Icecore runs read-only (it writes nothing beside the tables).
            AuditLogUnavailable: the object could not be created.
        """
        _refuse_if_read_only(self.read_only, self.root)
        name = self._name(event)
        try:
            created = self.io.create_exclusive(name, event_json(event).encode())
        except IcecoreError as e:
            raise AuditLogUnavailable(
                f"Cannot write the audit log under {self.root} ({str(e).rstrip('.')}); the "
                "change was not made."
            ) from e
        if not created:
            raise AuditLogUnavailable(
                f"The audit record {name} exists already; the change was not made."
            )

    def read(self) -> Sequence[AuditEvent]:
        """The newest :data:`MAX_OBJECTS_READ` events in the order written (by name)."""
        try:
            listing = self.io.ls(self.root, fresh=True)
        except IcecoreError as e:
            raise AuditLogUnavailable(
                f"Cannot list the audit log under {self.root} ({str(e).rstrip('.')})."
            ) from e
        names = sorted(
            f.path
            for f in listing
            if not f.is_dir
            and f.path.rsplit("/", 1)[-1].startswith(_OBJECT_PREFIX)
            and f.path.endswith(".json")
        )[-MAX_OBJECTS_READ:]
        events, self.skipped = _kept(self._event_at(name) for name in names)
        return events

    def _event_at(self, name: str) -> AuditEvent | None:
        """The event one object holds, or None when it cannot be read as one."""
        try:
            return event_from_json(self.io.read(name, limit=MAX_LINE_BYTES))
        except IcecoreError:
            return None


def _refuse_if_read_only(read_only: bool, where: str) -> None:
    if read_only:
        raise ValidationError(
            f"Icecore runs read-only (ICECORE_READ_ONLY or read_only in icecore.toml), so the "
            f"audit log {where} is not written and no change can be made."
        )


def _fsync_folder(folder: Path) -> None:
    """Make a new file's name durable too (its folder's entry)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def audit_sink_for(catalog: Catalog) -> AuditSink | None:
    """The audit log of ``catalog``, or None when it keeps none (see the module)."""
    inner: Any = catalog.inner if isinstance(catalog, GuardedCatalog) else catalog
    if isinstance(inner, SqlCatalog):
        return SqlAuditLog(inner)
    if isinstance(inner, FilesystemCatalog):
        protocol, local = normalize_path(inner.warehouse_root)
        if protocol != "file":
            return ObjectAuditLog(inner.io, inner.warehouse_root, read_only=config_read_only())
        return FileAuditLog(Path(local) / AUDIT_FILE, read_only=config_read_only())
    return None


def _kept(found: Iterable[AuditEvent | None]) -> tuple[list[AuditEvent], int]:
    """The events read, and how many records could not be read as one (None)."""
    events: list[AuditEvent] = []
    skipped = 0
    for event in found:
        if event is None:
            skipped += 1
        else:
            events.append(event)
    return events, skipped


def skipped_records(sink: AuditSink) -> int:
    """How many records the sink's last read skipped as unreadable (0 if it does not count)."""
    count = getattr(sink, "skipped", 0)
    return count if isinstance(count, int) else 0


def reconcile(changes: Sequence[AuditChange], catalog: Catalog) -> list[AuditChange]:
    """The changes, with each ``unknown`` commit that did land shown as committed.

    An intent without an outcome is a process that ended between the two (or a commit still
    running). For a commit, the table's metadata tells whether it landed: when the file that
    followed ``metadata_before`` (in the current metadata's log, or the current file itself)
    makes exactly the change the intent summarized (:func:`change_summary` of the two), it
    is that commit: ``committed``, with that file as ``metadata_after`` and the ``reason``
    saying it was read from the table. Anything else stays ``unknown`` (a table that moved
    on by another change, one that cannot be read, a job).
    """
    found: list[AuditChange] = []
    for change in changes:
        landed = _landed(change, catalog) if change.result == "unknown" else None
        if landed is None:
            found.append(change)
        else:
            found.append(
                replace(
                    change,
                    result="committed",
                    metadata_after=landed,
                    reason="no outcome was recorded; the table's metadata shows this commit",
                )
            )
    return found


def _landed(change: AuditChange, catalog: Catalog) -> str | None:
    """The metadata file an unknown commit made current, if the table shows it did."""
    if change.action != "commit" or not change.metadata_before or not change.table:
        return None
    try:
        identifier = TableIdentifier.parse(change.table)
        current = catalog.metadata_location(identifier)
        before = normalize_path(change.metadata_before)
        if normalize_path(current) == before:
            return None
        metadata = read_table_metadata(catalog.io, current)
        files = [entry.metadata_file for entry in metadata.metadata_log] + [current]
        following = next(
            (files[i + 1] for i, name in enumerate(files[:-1]) if normalize_path(name) == before),
            None,
        )
        if following is None:
            return None
        old = read_table_metadata(catalog.io, change.metadata_before)
        new = metadata if following == current else read_table_metadata(catalog.io, following)
    except (IcecoreError, ValueError):
        return None
    return following if change_summary(old, new) == change.summary else None


JOB_AUDIT_ENV = "ICECORE_AUDIT_JOB"
"""The environment variable that hands a maintenance job its audit intent (see below)."""

_JOB_KEYS = ("id", "principal", "subject", "source", "catalog", "action", "table")


def job_audit_env(catalog: GuardedCatalog, event_id: str, action: str, table: str) -> str:
    """What a job process needs to write the outcome of the intent ``event_id`` (JSON).

    A maintenance job outlives the page that launched it, so the job itself writes its end
    (:func:`record_job_outcome`): who launched it and what, never a secret.
    """
    return json.dumps(
        {
            "id": event_id,
            "principal": catalog.principal.display,
            "subject": catalog.principal.subject,
            "source": catalog.source,
            "catalog": catalog.name,
            "action": action,
            "table": table,
        }
    )


def record_job_outcome(
    handed: str,
    sink: AuditSink,
    result: Result,
    before: str | None,
    after: str | None,
    summary: str,
) -> None:
    """Append the outcome of the job intent that :func:`job_audit_env` ``handed`` over.

    Raises:
        ValidationError: ``handed`` is not what :func:`job_audit_env` writes.
        AuditLogUnavailable: the log could not be written.
    """
    try:
        values = json.loads(handed)
    except ValueError:
        values = None
    if not isinstance(values, dict):
        raise ValidationError(f"{JOB_AUDIT_ENV} does not hold a job's audit record.")
    found = event_from_mapping(
        {k: values.get(k) for k in _JOB_KEYS}
        | {
            "phase": "outcome",
            "time": now_iso(),
            "result": result,
            "metadata_before": before,
            "metadata_after": after,
            "summary": summary[:2_000],
        }
    )
    if found is None:
        raise ValidationError(f"{JOB_AUDIT_ENV} does not hold a job's audit record.")
    sink.append(found)


__all__ = [
    "AUDIT_FILE",
    "JOB_AUDIT_ENV",
    "AUDIT_TABLE",
    "AuditLogUnavailable",
    "FileAuditLog",
    "MAX_OBJECTS_READ",
    "ObjectAuditLog",
    "SqlAuditLog",
    "audit_sink_for",
    "job_audit_env",
    "reconcile",
    "record_job_outcome",
    "skipped_records",
]
