"""PostgreSQL catalog URIs, parsed and redacted without importing the PostgreSQL driver.

:func:`icecore.load_catalog` checks every URI against these schemes, and the app and the
pipeline parse, hide and redact passwords here: the driver (psycopg and libpq, ~8 MiB and
50 ms to import) is loaded only by :mod:`icecore.catalog.postgres`, when a PostgreSQL
catalog is opened.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from icecore.errors import IcecoreError, NotFound, Unsupported

SCHEMES = ("postgresql", "postgresql+psycopg", "postgres")
"""URI schemes that name a PostgreSQL catalog."""


def is_postgres_uri(text: str) -> bool:
    """Whether ``text`` is a PostgreSQL catalog URI."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


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

    def jdbc_properties(self) -> dict[str, str]:
        """Iceberg Java's JdbcCatalog properties for this database, the password included.

        The password (the URI's, ``PGPASSWORD`` or ``~/.pgpass``) goes into
        ``jdbc.password``, a key Spark's default ``spark.redaction.regex`` hides.

        Raises:
            Unsupported: the host is a unix socket folder, which the JDBC driver cannot use.
        """
        if self.host.startswith("/"):
            raise Unsupported(
                f"Spark's PostgreSQL JDBC driver cannot use the unix socket {self.host}; give "
                "the catalog as postgresql://user@host:port/database."
            )
        properties = {"type": "jdbc", "uri": self.jdbc_url, "jdbc.user": self.user}
        password = self.resolve_password()
        if password is not None:
            properties["jdbc.password"] = password
        return properties

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


def remembered_password(target: PostgresTarget) -> str | None:
    """The password :func:`hide_password` took out of a URI for ``target``, if any."""
    return _REMEMBERED.get(target.key)


__all__ = [
    "SCHEMES",
    "PostgresTarget",
    "hide_password",
    "is_postgres_uri",
    "redact",
    "remembered_password",
]
