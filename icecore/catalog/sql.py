"""SQL catalogs: the ``iceberg_tables`` schema of Iceberg's JdbcCatalog, on SQLite or PostgreSQL.

Iceberg's JdbcCatalog (what Spark writes through) and PyIceberg's SqlCatalog share one
schema: ``iceberg_tables(catalog_name, table_namespace, table_name, metadata_location,
previous_metadata_location)`` and ``iceberg_namespace_properties``; JdbcCatalog's newer "V1"
schema adds ``iceberg_type`` (TABLE or VIEW). Namespaces are stored dot-joined. One database
may hold several catalogs, told apart by ``catalog_name``.

Commits follow the spec's "Metastore Tables": the new metadata file gets a unique name
(``<N+1>-<uuid>.metadata.json``, as Iceberg Java names it), and the swap is one
compare-and-swap ``UPDATE ... WHERE metadata_location = <base>`` in one transaction, as
JdbcCatalog does, so Spark and Icecore commits exclude each other. The SQL and the commit
protocol are written once here; :class:`SqlCatalog` runs them on SQLite, and
:class:`icecore.catalog.postgres.PostgresCatalog` overrides only the dialect hooks (how to
connect, list tables and columns, open the transaction, and which driver errors mean "another
writer holds the lock"). A lock held too long means the swap did not happen, and the new file,
never current, is deleted; any other failure during the swap leaves its outcome unknown.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

from icecore.catalog.base import CatalogBase, TableIdentifier
from icecore.errors import (
    CommitConflict,
    CommitStateUnknown,
    InvalidMetadata,
    NotFound,
    ValidationError,
)
from icecore.failpoints import failpoint
from icecore.io import FileIO
from icecore.metadata import TableMetadata
from icecore.metadata.builder import metadata_file_suffix

DEFAULT_CATALOG_NAME = "icecore"
"""The name Icecore's pipeline gives its Spark JdbcCatalog (``catalog_name`` in the table)."""

METADATA_PATH = "write.metadata.path"
"""Table property: where new metadata files go (default ``<location>/metadata``)."""

TABLES = "iceberg_tables"
NAMESPACES = "iceberg_namespace_properties"

_VERSION_PREFIX = re.compile(r"^(\d+)-")
_BUSY = ("locked", "busy")


def _is_wal_database(path: Path) -> bool:
    """Whether a SQLite file is in WAL mode: header bytes 18 and 19 (format versions) are 2."""
    try:
        with path.open("rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2 and header[19] == 2


def first_line(error: BaseException) -> str:
    """A driver error's first line: messages stay one sentence (PostgreSQL adds a LINE/caret)."""
    lines = str(error).strip().splitlines()
    return lines[0].strip().rstrip(".") if lines else type(error).__name__


class SqlCatalog(CatalogBase):
    """A JdbcCatalog/SqlCatalog-compatible catalog in a SQLite file.

    Args:
        path: the SQLite database file.
        catalog_name: which ``catalog_name`` to use; by default the only one in the file, or
            ``icecore`` when there are several and it is one of them.
        io: the FileIO that reads the tables' files.
        lock_timeout: seconds a commit waits for another writer's lock on the database.
        read_only: open the database read-only (a ``mode=ro`` URI) and refuse commits: a
            read-only deployment never writes to the catalog's folder. A read-write
            connection to a WAL-mode database checkpoints and deletes its ``-wal`` and
            ``-shm`` files when it closes; a read-only one leaves them as they are. A
            WAL-mode database without a ``-wal`` file (fully checkpointed, no connection
            open) is opened ``immutable`` as well, because even a read-only connection
            would create ``-wal``/``-shm`` there; a writer starting meanwhile appends to its
            own ``-wal``, so such a read sees the state at open, only a checkpoint running
            during the read could disturb it.
    """

    placeholder = "?"
    """The driver's parameter marker; the SQL below is written with ``?``."""

    read_only: bool = False
    """Whether commits are refused (and SQLite is opened ``mode=ro``)."""

    def __init__(
        self,
        path: str | Path,
        catalog_name: str | None = None,
        io: FileIO | None = None,
        lock_timeout: float = 10.0,
        *,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if not self.path.is_file():
            raise NotFound(f"SQL catalog database {self.path} does not exist.")
        self._open(catalog_name, io, lock_timeout)

    def _open(self, catalog_name: str | None, io: FileIO | None, lock_timeout: float) -> None:
        """Read what the catalog's tables look like; shared by every dialect's constructor."""
        self.io = io or FileIO()
        self.lock_timeout = lock_timeout
        self._has_type_column = "iceberg_type" in self._columns(TABLES)
        self.catalog_name = catalog_name or self._default_name()

    # Dialect hooks: SQLite here, PostgreSQL in icecore.catalog.postgres -----------------

    @property
    def uri(self) -> str:
        """The ``sqlite:///`` URI of this catalog."""
        return f"sqlite:///{self.path.resolve()}"

    @property
    def where(self) -> str:
        """The database as error messages name it (never with a password)."""
        return str(self.path)

    def _connect(self) -> Any:
        """A connection in autocommit mode; transactions are opened by :meth:`_begin`."""
        if self.read_only:
            return sqlite3.connect(
                self._read_only_uri(), timeout=self.lock_timeout, isolation_level=None, uri=True
            )
        return sqlite3.connect(self.path, timeout=self.lock_timeout, isolation_level=None)

    def _read_only_uri(self) -> str:
        """``file:<path>?mode=ro`` (``&immutable=1`` for a checkpointed WAL database)."""
        path = str(self.path.absolute())
        path = "/" + path.lstrip("/")  # "//x" (from sqlite:////x) would read as a URI host
        uri = f"file:{quote(path)}?mode=ro"
        wal = self.path.with_name(self.path.name + "-wal")
        if _is_wal_database(self.path) and not wal.exists():
            uri += "&immutable=1"
        return uri

    def _begin(self, conn: Any) -> None:
        """Open the swap's transaction, taking the write lock at once (SQLite: IMMEDIATE)."""
        conn.execute("BEGIN IMMEDIATE")

    def _driver_errors(self) -> tuple[type[Exception], ...]:
        return (sqlite3.DatabaseError,)

    def _is_busy(self, error: Exception) -> bool:
        """Whether ``error`` means another writer held the lock (the swap did not happen)."""
        return isinstance(error, sqlite3.OperationalError) and any(
            word in str(error).lower() for word in _BUSY
        )

    def _table_names(self) -> set[str]:
        rows = self._query("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {str(r[0]) for r in rows}

    def _column_names(self, table: str) -> set[str]:
        return {str(r[1]) for r in self._query(f"PRAGMA table_info({table})")}

    # One code path for every dialect ---------------------------------------------------

    def _query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            with closing(self._connect()) as conn:
                return list(conn.execute(sql.replace("?", self.placeholder), params).fetchall())
        except self._driver_errors() as e:
            raise InvalidMetadata(f"Cannot read SQL catalog {self.where}: {first_line(e)}.") from e

    def _columns(self, table: str) -> set[str]:
        columns = self._column_names(table)
        if not columns:
            raise InvalidMetadata(
                f"{self.where} is not an Iceberg SQL catalog: it has no {table} table."
            )
        return columns

    def _default_name(self) -> str:
        names = sorted(
            str(r[0])
            for r in self._query(
                f"SELECT DISTINCT catalog_name FROM {TABLES} "
                f"UNION SELECT DISTINCT catalog_name FROM {NAMESPACES}"
                if self._has_namespace_table()
                else f"SELECT DISTINCT catalog_name FROM {TABLES}"
            )
        )
        if len(names) <= 1:
            return names[0] if names else DEFAULT_CATALOG_NAME
        if DEFAULT_CATALOG_NAME in names:
            return DEFAULT_CATALOG_NAME
        raise ValidationError(
            f"{self.where} holds several catalogs ({', '.join(names)}); name one with "
            f"{self.uri.split('?')[0]}?catalog=NAME."
        )

    def _has_namespace_table(self) -> bool:
        return NAMESPACES in self._table_names()

    def _table_filter(self) -> str:
        if self._has_type_column:
            return " AND (iceberg_type IS NULL OR iceberg_type = 'TABLE')"
        return ""

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """Namespaces holding tables, plus those created with properties only."""
        sql = f"SELECT DISTINCT table_namespace FROM {TABLES} WHERE catalog_name = ?"
        params: tuple[object, ...] = (self.catalog_name,)
        if self._has_namespace_table():
            sql += f" UNION SELECT DISTINCT namespace FROM {NAMESPACES}"
            sql += " WHERE catalog_name = ?"
            params += (self.catalog_name,)
        return sorted(tuple(str(r[0]).split(".")) for r in self._query(sql, params))

    def list_tables(self, namespace: tuple[str, ...] | None = None) -> list[TableIdentifier]:
        """Tables of this catalog, optionally in one namespace."""
        sql = f"SELECT table_namespace, table_name FROM {TABLES} WHERE catalog_name = ?"
        params: tuple[object, ...] = (self.catalog_name,)
        if namespace is not None:
            sql += " AND table_namespace = ?"
            params += (".".join(namespace),)
        rows = self._query(sql + self._table_filter(), params)
        return sorted(TableIdentifier(tuple(str(ns).split(".")), str(name)) for ns, name in rows)

    def metadata_location(self, identifier: TableIdentifier) -> str:
        """The ``metadata_location`` column for ``identifier``."""
        rows = self._query(
            f"SELECT metadata_location FROM {TABLES} WHERE catalog_name = ? "
            "AND table_namespace = ? AND table_name = ?" + self._table_filter(),
            (self.catalog_name, ".".join(identifier.namespace), identifier.name),
        )
        if not rows or rows[0][0] is None:
            raise NotFound(f"Table {identifier} does not exist in SQL catalog {self.where}.")
        return str(rows[0][0])

    def _new_location(self, base_location: str, metadata: TableMetadata) -> str:
        folder = (
            metadata.properties.get(METADATA_PATH) or f"{metadata.location.rstrip('/')}/metadata"
        )
        match = _VERSION_PREFIX.match(base_location.rsplit("/", 1)[-1])
        version = int(match.group(1)) + 1 if match else 0
        return f"{folder.rstrip('/')}/{version:05d}-{uuid.uuid4()}{metadata_file_suffix(metadata)}"

    def commit_metadata(
        self,
        identifier: TableIdentifier,
        base_location: str,
        metadata: TableMetadata,
        payload: bytes,
    ) -> str:
        """Write the next metadata file and swap ``metadata_location`` from ``base_location``.

        The connection is opened before the file is written, so a catalog that cannot be
        reached (or refuses the credentials) fails the commit with nothing written.

        Raises:
            CommitConflict: the table's metadata_location is no longer ``base_location``, or
                the database stayed locked; the new file is deleted (it never was current).
            CommitStateUnknown: the database failed mid-swap; the new file is kept.
        """
        if self.read_only:
            raise ValidationError(
                f"Cannot commit to {identifier}: the SQL catalog {self.where} is open "
                "read-only (ICECORE_READ_ONLY or read_only=True); open it read-write to commit."
            )
        location = self._new_location(base_location, metadata)
        with closing(self._connect()) as conn:
            if not self.io.create_exclusive(location, payload):
                raise CommitConflict(f"the new metadata file {location} exists already")
            failpoint("sql-after-write")
            try:
                swapped = self._swap(conn, identifier, base_location, location)
            except (*self._driver_errors(), OSError) as e:  # type: ignore[misc]
                if not self._is_busy(e):
                    raise CommitStateUnknown(
                        f"The SQL catalog {self.where} failed while swapping {identifier} to "
                        f"{location} ({first_line(e)}).",
                        location,
                    ) from e
                self.io.delete(location)
                raise CommitConflict(
                    f"the SQL catalog {self.where} stayed locked by another writer for "
                    f"{self.lock_timeout:g}s ({first_line(e)})"
                ) from e
        if not swapped:
            self.io.delete(location)
            try:
                now = self.metadata_location(identifier)
            except NotFound:
                raise CommitConflict(f"table {identifier} was dropped") from None
            raise CommitConflict(f"{now} was committed after {base_location}")
        return location

    def _swap(
        self, conn: Any, identifier: TableIdentifier, base_location: str, location: str
    ) -> bool:
        """One compare-and-swap of ``metadata_location`` in one transaction; whether it matched.

        Under PostgreSQL's READ COMMITTED a second writer's UPDATE waits for the first one's
        row lock and then re-checks its WHERE clause on the committed row, so it matches no
        row once the first swap is in: the same exclusion SQLite's IMMEDIATE lock gives.
        """
        self._begin(conn)
        try:
            cursor = conn.execute(
                (
                    f"UPDATE {TABLES} SET metadata_location = ?, "
                    "previous_metadata_location = ? WHERE catalog_name = ? "
                    "AND table_namespace = ? AND table_name = ? AND metadata_location = ?"
                    + self._table_filter()
                ).replace("?", self.placeholder),
                (
                    location,
                    base_location,
                    self.catalog_name,
                    ".".join(identifier.namespace),
                    identifier.name,
                    base_location,
                ),
            )
            if cursor.rowcount != 1:
                conn.execute("ROLLBACK")
                return False
            failpoint("sql-before-commit")
            conn.execute("COMMIT")
        except self._driver_errors() as e:
            if self._is_busy(e):
                self._rollback_quietly(conn)
            raise
        failpoint("sql-after-commit")
        return True

    def _rollback_quietly(self, conn: Any) -> None:
        """End a transaction that lost the lock, so the connection closes cleanly."""
        try:
            conn.execute("ROLLBACK")
        except self._driver_errors():
            pass
