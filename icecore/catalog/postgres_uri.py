"""Recognizing a PostgreSQL catalog URI, without importing the PostgreSQL driver.

:func:`icecore.load_catalog` checks every URI against these schemes; the driver (psycopg and
libpq, ~8 MiB and 50 ms to import) is loaded only when one names a PostgreSQL catalog.
"""

from __future__ import annotations

SCHEMES = ("postgresql", "postgresql+psycopg", "postgres")
"""URI schemes that name a PostgreSQL catalog."""


def is_postgres_uri(text: str) -> bool:
    """Whether ``text`` is a PostgreSQL catalog URI."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


__all__ = ["SCHEMES", "is_postgres_uri"]
