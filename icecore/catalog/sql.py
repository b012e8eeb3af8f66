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
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlsplit

from icecore.catalog.base import CatalogBase, TableIdentifier
from icecore.catalog.registry import CatalogSpec
from icecore.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    InvalidMetadata,
    NamespaceNotEmpty,
    NotFound,
    ValidationError,
)
from icecore.failpoints import failpoint
from icecore.identifier import check_new_identifier, check_new_namespace, check_no_case_twin
from icecore.io import FileIO, normalize_path
from icecore.metadata import TableMetadata

if TYPE_CHECKING:
    from icecore.catalog.views import ViewStore

DEFAULT_CATALOG_NAME = "icecore"
"""The name Icecore's pipeline gives its Spark JdbcCatalog (``catalog_name`` in the table)."""

METADATA_PATH = "write.metadata.path"
"""Table property: where new metadata files go (default ``<location>/metadata``)."""

TABLES = "iceberg_tables"
NAMESPACES = "iceberg_namespace_properties"

MAX_LOCATION_CHARS = 1000
"""Longest metadata file location a row holds: JdbcCatalog's ``VARCHAR(1000)``."""

MAX_PROPERTY_KEY_CHARS = 255
MAX_PROPERTY_VALUE_CHARS = 1000
"""Longest namespace property key and value: JdbcCatalog's ``VARCHAR(255)``/``(1000)``."""

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


def check_location_length(location: str) -> str:
    """``location`` if a catalog row can hold it; else :class:`ValidationError`, before writing.

    PostgreSQL refuses a longer value in the middle of the swap, which would leave the
    commit's outcome unknown; SQLite would store it, but Spark's JdbcCatalog could not.
    """
    if len(location) > MAX_LOCATION_CHARS:
        raise ValidationError(
            f"The metadata file location {location[:80]}... is {len(location)} characters; a "
            f"SQL catalog holds at most {MAX_LOCATION_CHARS}: choose a shorter table location."
        )
    return location


def check_properties_fit(properties: Mapping[str, str]) -> None:
    """Refuse namespace properties longer than the catalog's columns, before writing."""
    for key, value in properties.items():
        if len(key) > MAX_PROPERTY_KEY_CHARS or len(value) > MAX_PROPERTY_VALUE_CHARS:
            raise ValidationError(
                f"Namespace property {key[:80]!r} is too long for a SQL catalog: keys hold at "
                f"most {MAX_PROPERTY_KEY_CHARS} characters and values {MAX_PROPERTY_VALUE_CHARS}."
            )


def first_line(error: BaseException) -> str:
    """A driver error's first line: messages stay one sentence (PostgreSQL adds a LINE/caret)."""
    lines = str(error).strip().splitlines()
    return lines[0].strip().rstrip(".") if lines else type(error).__name__


def create_own_table(
    connect: Callable[[], Any],
    errors: tuple[type[Exception], ...],
    table_names: Callable[[], set[str]],
    table: str,
    statements: Sequence[str],
) -> None:
    """Create one of Icecore's own tables (audit log, reports, scan plans) in a catalog's database.

    ``statements`` are ``CREATE ... IF NOT EXISTS``. Two first writers at once: PostgreSQL
    may refuse the second CREATE even then (a unique violation in its catalog); the table is
    there, and that is success.

    Raises:
        the driver's error (one of ``errors``) when the table is still missing.
    """
    try:
        with closing(connect()) as conn:
            for statement in statements:
                conn.execute(statement)
    except errors:
        if table not in table_names():
            raise


class OwnTable:
    """One of Icecore's own tables in a catalog's database, created once by its first writer.

    The audit log, the metrics reports, the scan plans and the sent alerts share this shape
    (:func:`create_own_table` under a per-store "done" flag, the driver's error turned into
    the store's own one-sentence error), so it lives here once.

    Attributes:
        name: the table.
        statements: ``CREATE ... IF NOT EXISTS`` (and other idempotent statements) run in order.
        upgrade: run ``statements`` once per store even when the table is there (they bring an
            older table up to date, e.g. add an index); otherwise a listed table is enough.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        errors: tuple[type[Exception], ...],
        table_names: Callable[[], set[str]],
        name: str,
        statements: Sequence[str],
        *,
        upgrade: bool = False,
    ) -> None:
        self._connect = connect
        self._errors = errors
        self._table_names = table_names
        self.name = name
        self.statements = tuple(statements)
        self.upgrade = upgrade
        self._ready = False

    @classmethod
    def of(
        cls, catalog: SqlCatalog, name: str, statements: Sequence[str], *, upgrade: bool = False
    ) -> OwnTable:
        """The table ``name`` in ``catalog``'s database."""
        return cls(
            catalog._connect,
            catalog._driver_errors(),
            catalog._table_names,
            name,
            statements,
            upgrade=upgrade,
        )

    def ensure(self, failed: Callable[[Exception], Exception]) -> None:
        """Create the table unless done before (by this store, or by anyone: it is listed).

        Raises:
            ``failed(e)`` for the driver's error ``e`` when the table could not be made.
        """
        if self._ready or (not self.upgrade and self.name in self._table_names()):
            self._ready = True
            return
        try:
            create_own_table(
                self._connect, self._errors, self._table_names, self.name, self.statements
            )
        except self._errors as e:
            raise failed(e) from e
        self._ready = True


def sqlite_jdbc_properties(path: str | Path, warehouse: str | Path) -> dict[str, str]:
    """Iceberg Java's JdbcCatalog properties for a SQLite catalog file, tables under ``warehouse``.

    SQLite allows one writer at a time: JdbcCatalog waits for the lock instead of failing at
    once (Iceberg's maintenance actions open a second connection while committing).
    """
    return {
        "type": "jdbc",
        "uri": f"jdbc:sqlite:{Path(path).resolve()}",
        "warehouse": str(Path(warehouse).resolve()),
        "jdbc.busy_timeout": "10000",
        "jdbc.journal_mode": "WAL",
    }


def sqlite_path(uri: str) -> tuple[Path, str | None]:
    """The database file and ``?catalog=NAME`` of a ``sqlite:`` catalog string.

    Icecore reads ``sqlite:///x.db`` as the absolute ``/x.db`` (docs/ARCHITECTURE.md);
    PyIceberg's SQLAlchemy spelling is mapped to this one before it gets here
    (:mod:`icecore.catalog.pyiceberg_config`).
    """
    parts = urlsplit(uri)
    path = parts.path
    if parts.netloc:
        path = f"{parts.netloc}{path}"
    return Path(path), parse_qs(parts.query).get("catalog", [None])[0]


def load_sqlite(spec: CatalogSpec) -> SqlCatalog:
    """The registry's loader: a ``sqlite:`` catalog string (``?catalog=NAME`` picks the rows).

    A PyIceberg ``type: sql`` catalog arrives as ``sqlite:///<abs>?catalog=<its name>``: its
    name is its ``catalog_name``, as in PyIceberg's SqlCatalog, and its :attr:`uri` that name.
    """
    path, catalog_name = sqlite_path(spec.uri)
    return SqlCatalog(
        path,
        catalog_name=catalog_name,
        io=spec.file_io(),
        read_only=spec.read_only,
        name=spec.name,
    )


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

    serial_key = "INTEGER PRIMARY KEY AUTOINCREMENT"
    """A column numbering inserted rows in order (the audit log's, :mod:`.audit_store`)."""

    read_only: bool = False
    """Whether commits are refused (and SQLite is opened ``mode=ro``)."""

    kind = "sql"

    def __init__(
        self,
        path: str | Path,
        catalog_name: str | None = None,
        io: FileIO | None = None,
        lock_timeout: float = 10.0,
        *,
        read_only: bool = False,
        name: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.config_name = name
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
        """The ``sqlite:///`` URI of this catalog (the configured name, when opened by one)."""
        if self.config_name is not None:
            return self.config_name
        return f"sqlite:///{self.path.resolve()}"

    @property
    def warehouse_root(self) -> str | None:
        """The folder holding the database: where new tables go by default."""
        return str(self.path.resolve().parent)

    def iceberg_catalog(self) -> tuple[str | None, dict[str, str]]:
        """Iceberg Java's JdbcCatalog on the same file, named as its rows are."""
        return self.catalog_name, sqlite_jdbc_properties(self.path, self.path.resolve().parent)

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

    def _lock_names(self, conn: Any, namespace: tuple[str, ...]) -> None:
        """Hold, until the transaction ends, the right to add table names to ``namespace``.

        Nothing to do on SQLite: :meth:`_begin`'s IMMEDIATE transaction holds the database's
        write lock, so a second creator reads the first one's row once it may write.
        """

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

    def view_store(self) -> ViewStore:
        """Its views, as JdbcCatalog keeps them (:class:`icecore.catalog.views.SqlViews`)."""
        from icecore.catalog.views import SqlViews

        return SqlViews(self)

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
        from icecore.metadata.builder import metadata_file_suffix  # commits only: not at import

        location = (
            f"{folder.rstrip('/')}/{version:05d}-{uuid.uuid4()}{metadata_file_suffix(metadata)}"
        )
        return check_location_length(location)

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

    def commit_metadata_all(
        self, commits: Sequence[tuple[TableIdentifier, str, TableMetadata, bytes]]
    ) -> list[str]:
        """Commit to several tables at once: every swap in one transaction, all or none.

        Each entry is what :meth:`commit_metadata` takes. The new files are written first;
        then one transaction compare-and-swaps every row, and is rolled back (the new files
        deleted) if any row moved since it was loaded: no table sees the change of another
        without its own (the REST ``CommitTransactionRequest``).

        Raises:
            CommitConflict: a table's metadata_location is no longer its base, or the
                database stayed locked; nothing changed.
            CommitStateUnknown: the database failed mid-transaction; the files are kept.
        """
        if self.read_only:
            raise ValidationError(
                f"Cannot commit to the SQL catalog {self.where}: it is open read-only."
            )
        locations = [self._new_location(base, md) for _, base, md, _ in commits]
        written: list[str] = []

        def undo() -> None:
            for loc in written:
                self.io.delete(loc)

        with closing(self._connect()) as conn:
            for location, (_, _, _, payload) in zip(locations, commits, strict=True):
                if not self.io.create_exclusive(location, payload):
                    undo()
                    raise CommitConflict(f"the new metadata file {location} exists already")
                written.append(location)
            try:
                self._begin(conn)
                moved = None
                # Rows in one order: two such transactions on PostgreSQL cannot deadlock.
                swaps = sorted(zip(locations, commits, strict=True), key=lambda lc: lc[1][0])
                for location, (identifier, base, _, _) in swaps:
                    if not self._swap_row(conn, identifier, base, location):
                        moved = identifier
                        break
                if moved is not None:
                    conn.execute("ROLLBACK")
                else:
                    conn.execute("COMMIT")
            except (*self._driver_errors(), OSError) as e:  # type: ignore[misc]
                if not self._is_busy(e):
                    raise CommitStateUnknown(
                        f"The SQL catalog {self.where} failed while committing "
                        f"{len(commits)} tables ({first_line(e)}).",
                        locations[0] if locations else None,
                    ) from e
                self._rollback_quietly(conn)
                undo()
                raise CommitConflict(
                    f"the SQL catalog {self.where} stayed locked by another writer for "
                    f"{self.lock_timeout:g}s ({first_line(e)})"
                ) from e
        if moved is not None:
            undo()
            raise CommitConflict(f"table {moved} changed since it was loaded")
        return locations

    def _swap_row(
        self, conn: Any, identifier: TableIdentifier, base_location: str, location: str
    ) -> bool:
        """The compare-and-swap statement of one row, inside the caller's transaction."""
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
        return bool(cursor.rowcount == 1)

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
            if not self._swap_row(conn, identifier, base_location, location):
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


# Namespace and table management (what a REST server needs) ---------------------------------
#
# The SQL is Iceberg Java's JdbcCatalog's (JdbcUtil): a namespace without properties is one
# row ``exists=true`` in iceberg_namespace_properties, which loading it hides; a namespace
# also exists while a table (or a deeper namespace) names it; tables are rows of
# iceberg_tables. Spark's JdbcCatalog and PyIceberg's SqlCatalog therefore see what is made
# here, and the other way round.

CREATE_TABLES_SQL = (
    "CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,table_namespace "
    "VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,metadata_location VARCHAR(1000),"
    "previous_metadata_location VARCHAR(1000),PRIMARY KEY (catalog_name, table_namespace, "
    "table_name))"
)
"""JdbcCatalog's ``V0_CREATE_CATALOG_SQL``, the schema it creates by default."""

CREATE_NAMESPACES_SQL = (
    "CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,namespace "
    "VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),PRIMARY KEY "
    "(catalog_name, namespace, property_key))"
)
"""JdbcCatalog's ``CREATE_NAMESPACE_PROPERTIES_TABLE_SQL``."""

NAMESPACE_EXISTS_PROPERTY = "exists"
"""JdbcCatalog's marker row for a namespace created without properties."""


def create_sqlite_catalog(path: str | Path) -> Path:
    """Create an empty JdbcCatalog-schema SQLite catalog at ``path`` (tables kept if present)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(target, isolation_level=None)) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if TABLES not in names:
            conn.execute(CREATE_TABLES_SQL)
        if NAMESPACES not in names:
            conn.execute(CREATE_NAMESPACES_SQL)
    return target


def _like_prefix(namespace: str) -> str:
    """A LIKE pattern for the namespaces below ``namespace`` (``!`` escapes, as JdbcUtil)."""
    escaped = namespace.replace("!", "!!").replace("_", "!_").replace("%", "!%")
    return f"{escaped}.%"


class SqlCatalogAdmin:
    """Namespace and table management on a :class:`SqlCatalog` (create, drop, rename, ...).

    Kept apart from the read-and-commit side so that what a served catalog may change is in
    one place; every statement runs in one transaction on the catalog's own connection.
    """

    def __init__(self, catalog: SqlCatalog) -> None:
        self.catalog = catalog

    @property
    def warehouse(self) -> str:
        """Where new tables go by default: the folder holding the catalog database."""
        root = self.catalog.warehouse_root
        if root is not None:
            return root
        raise ValidationError(
            f"The SQL catalog {self.catalog.where} has no warehouse folder; give the table a "
            "location or set the namespace's location property."
        )

    def _write(self, work: Any) -> Any:
        """Run ``work(conn)`` in one write transaction; driver errors become one sentence."""
        cat = self.catalog
        if cat.read_only:
            raise ValidationError(
                f"The SQL catalog {cat.where} is open read-only; open it read-write to change it."
            )
        try:
            with closing(cat._connect()) as conn:
                cat._begin(conn)
                try:
                    result = work(conn)
                except BaseException:
                    cat._rollback_quietly(conn)
                    raise
                conn.execute("COMMIT")
                return result
        except cat._driver_errors() as e:
            raise CommitStateUnknown(
                f"The SQL catalog {cat.where} failed while writing ({first_line(e)})."
            ) from e

    def _run(self, conn: Any, sql: str, params: tuple[object, ...] = ()) -> Any:
        return conn.execute(sql.replace("?", self.catalog.placeholder), params)

    def _ensure_namespace_table(self) -> None:
        if not self.catalog._has_namespace_table():
            self._write(lambda conn: conn.execute(CREATE_NAMESPACES_SQL))

    # Namespaces ----------------------------------------------------------------------------

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        """JdbcCatalog's rule: a property row, a table or a deeper namespace names it."""
        cat = self.catalog
        text = ".".join(namespace)
        params: tuple[object, ...] = (cat.catalog_name, text, _like_prefix(text))
        where = "catalog_name = ? AND (table_namespace = ? OR table_namespace LIKE ? ESCAPE '!')"
        if cat._query(f"SELECT 1 FROM {TABLES} WHERE {where} LIMIT 1", params):
            return True
        if not cat._has_namespace_table():
            return False
        where = "catalog_name = ? AND (namespace = ? OR namespace LIKE ? ESCAPE '!')"
        return bool(cat._query(f"SELECT 1 FROM {NAMESPACES} WHERE {where} LIMIT 1", params))

    def all_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace, with the parents of nested ones (``a.b`` implies ``a``)."""
        found: set[tuple[str, ...]] = set()
        for ns in self.catalog.list_namespaces():
            for i in range(1, len(ns) + 1):
                found.add(ns[:i])
        return sorted(found)

    def namespace_properties(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The namespace's properties (without JdbcCatalog's ``exists`` marker).

        Raises:
            NotFound: no such namespace.
        """
        if not self.namespace_exists(namespace):
            raise NotFound(f"Namespace {'.'.join(namespace)} does not exist.")
        cat = self.catalog
        if not cat._has_namespace_table():
            return {}
        rows = cat._query(
            f"SELECT property_key, property_value FROM {NAMESPACES} "
            "WHERE catalog_name = ? AND namespace = ?",
            (cat.catalog_name, ".".join(namespace)),
        )
        props = {str(k): str(v) for k, v in rows if k is not None and v is not None}
        props.pop(NAMESPACE_EXISTS_PROPERTY, None)
        return props

    def create_namespace(self, namespace: tuple[str, ...], properties: dict[str, str]) -> None:
        """Create a namespace with its properties.

        Raises:
            AlreadyExists: the namespace exists.
            ValidationError: a level breaks :mod:`icecore.identifier`'s rule, or differs
                only by case from a namespace beside it.
        """
        check_new_namespace(namespace)
        check_properties_fit(properties)
        if self.namespace_exists(namespace):
            raise AlreadyExists(f"Namespace {'.'.join(namespace)} already exists.")
        known = self.all_namespaces()
        for i in range(len(namespace)):
            beside = {ns[i] for ns in known if len(ns) > i and ns[:i] == namespace[:i]}
            check_no_case_twin(namespace[i], beside, "namespace level")
        self._ensure_namespace_table()
        rows = dict(properties) or {NAMESPACE_EXISTS_PROPERTY: "true"}
        text = ".".join(namespace)

        def work(conn: Any) -> None:
            for key, value in rows.items():
                self._run(
                    conn,
                    f"INSERT INTO {NAMESPACES} (catalog_name, namespace, property_key, "
                    "property_value) VALUES (?, ?, ?, ?)",
                    (self.catalog.catalog_name, text, key, value),
                )

        self._write(work)

    def update_namespace_properties(
        self, namespace: tuple[str, ...], updates: dict[str, str], removals: list[str]
    ) -> tuple[list[str], list[str], list[str]]:
        """Set and remove properties; returns (updated, removed, missing) as the spec's response.

        Raises:
            NotFound: no such namespace.
            ValidationError: a key is both set and removed.
        """
        overlap = sorted(set(updates) & set(removals))
        if overlap:
            raise ValidationError(f"Property {overlap[0]!r} cannot be both set and removed.")
        check_properties_fit(updates)
        current = self.namespace_properties(namespace)
        self._ensure_namespace_table()
        text = ".".join(namespace)
        name = self.catalog.catalog_name
        removed = [k for k in removals if k in current]
        missing = [k for k in removals if k not in current]

        def work(conn: Any) -> None:
            for key in removed:
                self._run(
                    conn,
                    f"DELETE FROM {NAMESPACES} WHERE catalog_name = ? AND namespace = ? "
                    "AND property_key = ?",
                    (name, text, key),
                )
            for key, value in updates.items():
                self._run(
                    conn,
                    f"DELETE FROM {NAMESPACES} WHERE catalog_name = ? AND namespace = ? "
                    "AND property_key = ?",
                    (name, text, key),
                )
                self._run(
                    conn,
                    f"INSERT INTO {NAMESPACES} (catalog_name, namespace, property_key, "
                    "property_value) VALUES (?, ?, ?, ?)",
                    (name, text, key, value),
                )
            left = self._run(
                conn,
                f"SELECT COUNT(*) FROM {NAMESPACES} WHERE catalog_name = ? AND namespace = ?",
                (name, text),
            ).fetchone()[0]
            if not left:  # keep the namespace alive once its last property is gone
                self._run(
                    conn,
                    f"INSERT INTO {NAMESPACES} (catalog_name, namespace, property_key, "
                    "property_value) VALUES (?, ?, ?, ?)",
                    (name, text, NAMESPACE_EXISTS_PROPERTY, "true"),
                )

        self._write(work)
        return sorted(updates), removed, missing

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        """Drop an empty namespace.

        Raises:
            NotFound: no such namespace.
            NamespaceNotEmpty: it holds tables or namespaces.
        """
        if not self.namespace_exists(namespace):
            raise NotFound(f"Namespace {'.'.join(namespace)} does not exist.")
        cat = self.catalog
        text = ".".join(namespace)
        children = [ns for ns in self.all_namespaces() if ns[: len(namespace)] == namespace]
        if (
            cat.list_tables(namespace)
            or cat.list_views(namespace)
            or any(len(ns) > len(namespace) for ns in children)
        ):
            raise NamespaceNotEmpty(
                f"Namespace {text} is not empty; drop its tables, views and namespaces first."
            )
        if cat._has_namespace_table():
            self._write(
                lambda conn: self._run(
                    conn,
                    f"DELETE FROM {NAMESPACES} WHERE catalog_name = ? AND namespace = ?",
                    (cat.catalog_name, text),
                )
            )

    # Tables --------------------------------------------------------------------------------

    def default_table_location(self, identifier: TableIdentifier) -> str:
        """JdbcCatalog's default: the namespace's ``location`` property, else the warehouse.

        The name becomes a folder there, so it is checked first (a staged create asks
        for this location before anything else).
        """
        check_new_identifier(identifier)
        props = self.namespace_properties(identifier.namespace)
        base = props.get("location")
        if base:
            return f"{base.rstrip('/')}/{identifier.name}"
        return "/".join((self.warehouse.rstrip("/"), *identifier.namespace, identifier.name))

    def create_table(
        self, identifier: TableIdentifier, metadata: TableMetadata, payload: bytes
    ) -> str:
        """Write the first metadata file and add the table's row; returns the file's location.

        Raises:
            NotFound: the namespace does not exist.
            AlreadyExists: a table of that name exists (the written file is deleted).
            ValidationError: the name breaks :mod:`icecore.identifier`'s rule (nothing written).
        """
        check_new_identifier(identifier)
        if not self.namespace_exists(identifier.namespace):
            raise NotFound(f"Namespace {'.'.join(identifier.namespace)} does not exist.")
        self._check_no_twin(identifier)  # before any folder is made; again with the insert
        folder = (
            metadata.properties.get(METADATA_PATH) or f"{metadata.location.rstrip('/')}/metadata"
        )
        from icecore.metadata.builder import metadata_file_suffix  # commits only: not at import

        location = f"{folder.rstrip('/')}/00000-{uuid.uuid4()}{metadata_file_suffix(metadata)}"
        check_location_length(location)
        protocol, local = normalize_path(location)
        if protocol == "file":  # object stores have no folders; a local one must exist
            Path(local).parent.mkdir(parents=True, exist_ok=True)
        if not self.catalog.io.create_exclusive(location, payload):
            raise AlreadyExists(f"The metadata file {location} exists already.")
        try:
            self._insert_row(identifier, location)
        except ValidationError:  # AlreadyExists, or a twin created meanwhile
            self.catalog.io.delete(location)
            raise
        return location

    def register_table(self, identifier: TableIdentifier, metadata_location: str) -> None:
        """Add a row for an existing metadata file (``registerTable``)."""
        check_new_identifier(identifier)
        check_location_length(metadata_location)
        if not self.namespace_exists(identifier.namespace):
            raise NotFound(f"Namespace {'.'.join(identifier.namespace)} does not exist.")
        self._insert_row(identifier, metadata_location)

    def _names_in(self, conn: Any, namespace: tuple[str, ...]) -> list[str]:
        """Every table (and view) name in ``namespace``, read on ``conn`` (if given)."""
        sql = f"SELECT table_name FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ?"
        params = (self.catalog.catalog_name, ".".join(namespace))
        if conn is None:
            rows = self.catalog._query(sql, params)
        else:
            rows = self._run(conn, sql, params).fetchall()
        return [str(r[0]) for r in rows]

    def _check_no_twin(
        self, identifier: TableIdentifier, conn: Any = None, *, renamed: str | None = None
    ) -> None:
        """Refuse a new table name differing only by case from one in its namespace.

        ``renamed`` is the name a rename within the namespace replaces (``trips`` may become
        ``Trips``). Run inside the insert's transaction too (``conn``), after
        :meth:`SqlCatalog._lock_names`, so two creators of ``TRIPS`` and ``trips`` cannot
        both pass. Writers other than Icecore (Spark's JdbcCatalog) take no such lock.
        """
        if conn is not None:
            self.catalog._lock_names(conn, identifier.namespace)
        names = self._names_in(conn, identifier.namespace)
        check_no_case_twin(identifier.name, [n for n in names if n != renamed], "table")

    def _insert_row(self, identifier: TableIdentifier, location: str) -> None:
        cat = self.catalog
        key = (cat.catalog_name, ".".join(identifier.namespace), identifier.name)

        def work(conn: Any) -> None:
            kind = "iceberg_type" if cat._has_type_column else "NULL"
            found = self._run(
                conn,
                f"SELECT {kind} FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ? "
                "AND table_name = ?",
                key,
            ).fetchall()
            if found:
                what = "View" if found[0][0] == "VIEW" else "Table"  # one name, one kind
                raise AlreadyExists(f"{what} {identifier} already exists.")
            self._check_no_twin(identifier, conn)
            if cat._has_type_column:
                self._run(
                    conn,
                    f"INSERT INTO {TABLES} (catalog_name, table_namespace, table_name, "
                    "metadata_location, previous_metadata_location, iceberg_type) "
                    "VALUES (?, ?, ?, ?, NULL, 'TABLE')",
                    (*key, location),
                )
            else:
                self._run(
                    conn,
                    f"INSERT INTO {TABLES} (catalog_name, table_namespace, table_name, "
                    "metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)",
                    (*key, location),
                )

        self._write(work)

    def drop_table(self, identifier: TableIdentifier) -> str:
        """Remove the table's row (its files stay); returns its last metadata location.

        Raises:
            NotFound: no such table.
        """
        cat = self.catalog
        location = cat.metadata_location(identifier)
        key = (cat.catalog_name, ".".join(identifier.namespace), identifier.name)

        def work(conn: Any) -> None:
            cursor = self._run(
                conn,
                f"DELETE FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ? "
                "AND table_name = ?" + cat._table_filter(),
                key,
            )
            if cursor.rowcount != 1:
                raise NotFound(f"Table {identifier} does not exist in {cat.where}.")

        self._write(work)
        return location

    def rename_table(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        """Rename a table (its files stay where they are, as JdbcCatalog does).

        Raises:
            NotFound: no such table, or the destination namespace does not exist.
            AlreadyExists: the destination exists.
        """
        cat = self.catalog
        check_new_identifier(destination)
        cat.metadata_location(source)
        if not self.namespace_exists(destination.namespace):
            raise NotFound(f"Namespace {'.'.join(destination.namespace)} does not exist.")
        same_namespace = source.namespace == destination.namespace

        def work(conn: Any) -> None:
            taken = self._run(
                conn,
                f"SELECT 1 FROM {TABLES} WHERE catalog_name = ? AND table_namespace = ? "
                "AND table_name = ?",
                (cat.catalog_name, ".".join(destination.namespace), destination.name),
            ).fetchall()
            if taken:
                raise AlreadyExists(f"Table {destination} already exists.")
            self._check_no_twin(destination, conn, renamed=source.name if same_namespace else None)
            cursor = self._run(
                conn,
                f"UPDATE {TABLES} SET table_namespace = ?, table_name = ? WHERE catalog_name = ? "
                "AND table_namespace = ? AND table_name = ?" + cat._table_filter(),
                (
                    ".".join(destination.namespace),
                    destination.name,
                    cat.catalog_name,
                    ".".join(source.namespace),
                    source.name,
                ),
            )
            if cursor.rowcount != 1:
                raise NotFound(f"Table {source} does not exist in {cat.where}.")

        self._write(work)
