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

from typing import Any

import psycopg
from psycopg import errors as pgerrors

from icecore.catalog.postgres_uri import (
    PostgresTarget,
    hide_password,
    redact,
    remembered_password,
)
from icecore.catalog.registry import CatalogSpec
from icecore.catalog.sql import SqlCatalog
from icecore.errors import CatalogUnavailable, IcecoreError, NotFound
from icecore.io import FileIO

CONNECT_TIMEOUT_S = 10


def load_postgres(spec: CatalogSpec) -> PostgresCatalog:
    """The registry's loader: a ``postgresql://`` catalog string."""
    return PostgresCatalog(spec.uri, io=spec.file_io(), name=spec.name)


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
    serial_key = "BIGSERIAL PRIMARY KEY"

    def __init__(
        self,
        target: PostgresTarget | str,
        catalog_name: str | None = None,
        io: FileIO | None = None,
        lock_timeout: float = 10.0,
        *,
        name: str | None = None,
    ) -> None:
        self.target = target if isinstance(target, PostgresTarget) else PostgresTarget.parse(target)
        self.config_name = name
        self._open(catalog_name or self.target.catalog_name, io, lock_timeout)

    def __repr__(self) -> str:
        return f"PostgresCatalog({self.uri!r})"

    @property
    def uri(self) -> str:
        """The ``postgresql://`` URI without the password (the configured name, if any)."""
        return self.config_name if self.config_name is not None else self.target.uri

    @property
    def warehouse_root(self) -> str | None:
        """None: a database has no folder; its tables' locations are their own."""
        return None

    def iceberg_catalog(self) -> tuple[str | None, dict[str, str]]:
        """Iceberg Java's JdbcCatalog on the same database, named as its rows are.

        No ``warehouse``: the caller knows where its tables live (a table's location).
        """
        return self.catalog_name, self.target.jdbc_properties()

    @property
    def where(self) -> str:
        """``database "db" on host:port``."""
        return self.target.where

    def _connect(self) -> Any:
        """Connect in autocommit mode; libpq finds the password when the URI has none."""
        t = self.target
        kwargs: dict[str, Any] = dict(t.options)
        password = t.password if t.password is not None else remembered_password(t)
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


__all__ = ["CONNECT_TIMEOUT_S", "PostgresCatalog", "PostgresTarget", "hide_password", "redact"]
