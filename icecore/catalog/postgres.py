"""SQL catalog on PostgreSQL: the multi-user catalog, shared with Spark and PyIceberg.

The tables and the commit protocol are :class:`~icecore.catalog.sql.SqlCatalog`'s; this
module holds only what differs on PostgreSQL (and is the one module that imports the
driver, psycopg 3): the URI, credentials, connecting, the catalog's tables and columns from
``information_schema``, the swap's transaction with a ``lock_timeout``, and which errors
mean "another writer held the row lock".

URIs: ``postgresql://[user[:password]@]host[:port]/database[?catalog=NAME&libpq-option=...]``,
also spelled ``postgresql+psycopg://`` (SQLAlchemy's form, which PyIceberg takes) or
``postgres://``. Missing parts come from libpq's ``PGHOST``, ``PGPORT``, ``PGUSER`` and
``PGDATABASE``. The password comes from the URI, else ``PGPASSWORD``, else the password file
(``PGPASSFILE`` or ``~/.pgpass``), exactly as libpq looks it up; it is never part of
:attr:`PostgresCatalog.uri`, of an error message or of ``repr``.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

import psycopg
from psycopg import errors as pgerrors

from icecore.catalog.postgres_uri import SCHEMES, is_postgres_uri
from icecore.catalog.sql import SqlCatalog
from icecore.errors import CatalogUnavailable, IcecoreError, NotFound
from icecore.io import FileIO

CONNECT_TIMEOUT_S = 10

_NAMED = frozenset({"catalog", "host", "port", "user", "dbname", "password"})
"""Query keys that name the target rather than pass through to libpq."""

_REMEMBERED: dict[tuple[str, int, str, str], str] = {}
"""Passwords given by :func:`hide_password`, per (host, port, database, user), this process only."""


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    """Where a PostgreSQL catalog lives, parsed from its URI (the password is kept apart).

    Attributes:
        host, port, database, user: the server, database and role.
        catalog_name: ``?catalog=NAME``, the ``catalog_name`` to use, when given.
        options: further libpq options from the query string (``sslmode``, ...).
        password: the URI's password, if it had one; excluded from ``repr``.
    """

    host: str
    port: int
    database: str
    user: str
    catalog_name: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, uri: str) -> PostgresTarget:
        """Read a catalog URI; libpq's environment variables fill the parts it leaves out."""
        parts = urlsplit(uri.strip())
        if parts.scheme.lower() not in SCHEMES:
            raise NotFound(f"{redact(uri)} is not a postgresql:// catalog URI.")
        query = parse_qsl(parts.query)
        given = dict(query)  # libpq lets the query name these too (a socket folder as host)
        user = (
            given.get("user")
            or unquote(parts.username or "")
            or os.environ.get("PGUSER")
            or getpass.getuser()
        )
        try:
            port = int(given.get("port") or parts.port or os.environ.get("PGPORT", "5432"))
        except ValueError as e:
            raise NotFound(f"{redact(uri)} has an invalid port.") from e
        return cls(
            host=given.get("host")
            or unquote(parts.hostname or "")
            or os.environ.get("PGHOST", "localhost"),
            port=port,
            database=given.get("dbname")
            or unquote(parts.path.lstrip("/"))
            or os.environ.get("PGDATABASE", user),
            user=user,
            catalog_name=given.get("catalog") or None,
            options=tuple((k, v) for k, v in query if k not in _NAMED),
            password=given.get("password")
            or (unquote(parts.password) if parts.password is not None else None),
        )

    @property
    def uri(self) -> str:
        """The URI without the password: safe in a link, on a page, in a log, as a cache key."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        query = list(self.options)
        if host.startswith("/"):  # a unix socket folder goes in the query, as libpq allows
            host, query = "", [("host", self.host), *query]
        if self.catalog_name:
            query.append(("catalog", self.catalog_name))
        tail = f"?{urlencode(query)}" if query else ""
        user = quote(self.user, safe="")
        return f"postgresql://{user}@{host}:{self.port}/{quote(self.database)}{tail}"

    @property
    def where(self) -> str:
        """``database "db" on host:port``, as error messages name it."""
        return f'database "{self.database}" on {self.host}:{self.port}'

    @property
    def jdbc_url(self) -> str:
        """The PostgreSQL JDBC driver's URL for the same database (no credentials in it)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"jdbc:postgresql://{host}:{self.port}/{quote(self.database)}"

    @property
    def key(self) -> tuple[str, int, str, str]:
        """What a password belongs to: host, port, database and user."""
        return (self.host, self.port, self.database, self.user)

    def resolve_password(self) -> str | None:
        r"""The password libpq would use: the URI's, ``PGPASSWORD``, or the password file.

        Follows libpq's "The Password File": lines ``host:port:database:user:password``,
        ``*`` matches anything, ``\:`` and ``\\`` escape; the first matching line wins.
        """
        if self.password is not None:
            return self.password
        if self.key in _REMEMBERED:
            return _REMEMBERED[self.key]
        if "PGPASSWORD" in os.environ:
            return os.environ["PGPASSWORD"]
        path = Path(os.environ.get("PGPASSFILE") or Path.home() / ".pgpass")
        try:
            lines = path.read_text().splitlines()
        except OSError:
            return None
        wanted = (self.host, str(self.port), self.database, self.user)
        for line in lines:
            if not line.strip() or line.startswith("#"):
                continue
            fields = _pgpass_fields(line)
            if len(fields) == 5 and all(
                f in ("*", w) for f, w in zip(fields[:4], wanted, strict=True)
            ):
                return fields[4]
        return None


def _pgpass_fields(line: str) -> list[str]:
    fields: list[str] = []
    current, escaped = "", False
    for char in line:
        if escaped:
            current, escaped = current + char, False
        elif char == "\\":
            escaped = True
        elif char == ":" and len(fields) < 4:
            fields.append(current)
            current = ""
        else:
            current += char
    return [*fields, current]


def hide_password(catalog: str) -> str:
    """``catalog`` without its password, which this process remembers for later connections.

    What the app does with a catalog string a user typed or linked: the string without the
    password is what reaches the URL, the page, the logs and the cache keys, and it still
    connects (the password is looked up by host, port, database and user). Other catalog
    strings are returned unchanged.
    """
    if not is_postgres_uri(catalog):
        return catalog
    try:
        target = PostgresTarget.parse(catalog)
    except IcecoreError:
        return redact(catalog)
    if target.password is None:
        return catalog
    _REMEMBERED[target.key] = target.password
    return target.uri


def redact(uri: str) -> str:
    """``uri`` with any password removed (for messages about URIs that did not parse)."""
    parts = urlsplit(uri)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "password"]
    netloc = parts.netloc
    if "@" in netloc:
        login, host = netloc.rsplit("@", 1)
        netloc = f"{login.split(':', 1)[0]}@{host}"
    return parts._replace(netloc=netloc, query=urlencode(query)).geturl()


class PostgresCatalog(SqlCatalog):
    """A JdbcCatalog/SqlCatalog-compatible catalog in a PostgreSQL database.

    Args:
        target: the database (see :class:`PostgresTarget`), or its URI.
        catalog_name: which ``catalog_name`` to use (overrides ``?catalog=``); by default the
            only one in the database, or ``icecore`` when there are several.
        io: the FileIO that reads the tables' files.
        lock_timeout: seconds a commit waits for another writer's row lock.

    Raises:
        CatalogUnavailable: no server answers, or it refuses the user or password.
        NotFound: the database does not exist.
        InvalidMetadata: the database has no ``iceberg_tables`` table.
    """

    placeholder = "%s"

    def __init__(
        self,
        target: PostgresTarget | str,
        catalog_name: str | None = None,
        io: FileIO | None = None,
        lock_timeout: float = 10.0,
    ) -> None:
        self.target = target if isinstance(target, PostgresTarget) else PostgresTarget.parse(target)
        self._open(catalog_name or self.target.catalog_name, io, lock_timeout)

    def __repr__(self) -> str:
        return f"PostgresCatalog({self.uri!r})"

    @property
    def uri(self) -> str:
        """The ``postgresql://`` URI of this catalog, without the password."""
        return self.target.uri

    @property
    def where(self) -> str:
        """``database "db" on host:port``."""
        return self.target.where

    def _connect(self) -> Any:
        """Connect in autocommit mode; libpq finds the password when the URI has none."""
        t = self.target
        kwargs: dict[str, Any] = dict(t.options)
        password = t.password if t.password is not None else _REMEMBERED.get(t.key)
        if password is not None:  # else libpq reads PGPASSWORD or the password file
            kwargs["password"] = password
        try:
            return psycopg.connect(
                host=t.host,
                port=t.port,
                dbname=t.database,
                user=t.user,
                connect_timeout=CONNECT_TIMEOUT_S,
                autocommit=True,
                **kwargs,
            )
        except psycopg.Error as e:
            raise _connect_error(t, e) from e

    def _begin(self, conn: Any) -> None:
        """Open the swap's transaction; a row lock held longer than the timeout fails it."""
        conn.execute("BEGIN")
        conn.execute(f"SET LOCAL lock_timeout = {int(self.lock_timeout * 1000)}")

    def _lock_names(self, conn: Any, namespace: tuple[str, ...]) -> None:
        """A transaction-scoped advisory lock per catalog and namespace.

        Two creators of ``TRIPS`` and ``trips`` insert different rows, so no row lock makes
        them wait; with this lock the second one's next statement (READ COMMITTED reads
        what was committed before each statement) sees the first one's row and refuses.
        """
        key = f"icecore table names {self.catalog_name} {'.'.join(namespace)}"
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))

    def _driver_errors(self) -> tuple[type[Exception], ...]:
        return (psycopg.Error,)

    def _is_busy(self, error: Exception) -> bool:
        return isinstance(error, pgerrors.LockNotAvailable | pgerrors.SerializationFailure)

    def _table_names(self) -> set[str]:
        rows = self._query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {str(r[0]) for r in rows}

    def _column_names(self, table: str) -> set[str]:
        rows = self._query(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = ?",
            (table,),
        )
        return {str(r[0]) for r in rows}


def _connect_error(t: PostgresTarget, error: psycopg.Error) -> IcecoreError:
    """One sentence for a failed connection (libpq reports these without a SQLSTATE)."""
    reason = _reason(error)
    if isinstance(error, pgerrors.InvalidCatalogName) or (
        f'database "{t.database}" does not exist' in reason
    ):
        return NotFound(
            f"The PostgreSQL {t.where} does not exist; create it or fix the catalog URI."
        )
    if isinstance(error, pgerrors.InvalidPassword) or "password authentication failed" in reason:
        return CatalogUnavailable(
            f"The PostgreSQL server refused the password of user {t.user} for {t.where}; "
            "fix the password (in the URI, PGPASSWORD or ~/.pgpass)."
        )
    return CatalogUnavailable(
        f"Cannot connect to the PostgreSQL {t.where} as user {t.user} ({reason}); check that "
        "the server runs and accepts this user."
    )


def _reason(error: psycopg.Error) -> str:
    """The server's or libpq's first line, which names the cause but never the password."""
    lines = str(error).strip().splitlines()
    return lines[0].rsplit(": ", 1)[-1].strip().rstrip(".") if lines else type(error).__name__
