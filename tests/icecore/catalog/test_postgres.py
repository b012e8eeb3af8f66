"""The PostgreSQL catalog against a real server: connecting, credentials, and refusals.

Each failure must be one sentence that names the host and the database, never the password,
and must leave the database as it was.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest

from icecore.catalog import PostgresCatalog, load_catalog
from icecore.catalog.postgres import PostgresTarget
from icecore.errors import CatalogUnavailable, InvalidMetadata, NotFound
from tests.pg_server import PgServer, with_catalog_tables


def fresh_database(pg_server: PgServer) -> str:
    return pg_server.create_database(f"t_{uuid.uuid4().hex[:8]}")


def test_uri_forms_and_no_password_anywhere(pg_server: PgServer) -> None:
    uri = with_catalog_tables(fresh_database(pg_server))
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("INSERT INTO iceberg_namespace_properties VALUES ('c', 'a.b', 'x', 'y')")
    database = uri.rsplit("/", 1)[1]
    for form in (uri, uri.replace("postgresql://", "postgresql+psycopg://")):
        catalog = load_catalog(form)
        assert isinstance(catalog, PostgresCatalog)
        assert catalog.list_namespaces() == [("a", "b")]
        assert catalog.list_tables() == []
        assert catalog.catalog_name == "c"
        expected = f"postgresql://{pg_server.user}@127.0.0.1:{pg_server.port}/{database}"
        assert catalog.uri == expected
        assert pg_server.password not in repr(catalog) + catalog.uri
        assert pg_server.password not in repr(catalog.target)
        assert load_catalog(form + "?catalog=other").list_namespaces() == []


def test_password_from_environment_and_pgpass(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = with_catalog_tables(fresh_database(pg_server))
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("INSERT INTO iceberg_namespace_properties VALUES ('c', 'a.b', 'x', 'y')")
    bare = uri.replace(f":{pg_server.password}@", "@")
    database = uri.rsplit("/", 1)[1]
    monkeypatch.setenv("PGPASSWORD", pg_server.password)
    assert load_catalog(bare).list_namespaces() == [("a", "b")]
    monkeypatch.delenv("PGPASSWORD")
    passfile = tmp_path / "pgpass"
    passfile.write_text(
        f"otherhost:*:*:*:wrong\n127.0.0.1:{pg_server.port}:{database}:*:{pg_server.password}\n"
    )
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    assert load_catalog(bare).list_namespaces() == [("a", "b")]
    assert PostgresTarget.parse(bare).resolve_password() == pg_server.password
    passfile.write_text("*:*:*:*:wrong\n")
    with pytest.raises(CatalogUnavailable):
        load_catalog(bare)


def test_wrong_password_is_one_sentence(pg_server: PgServer) -> None:
    uri = with_catalog_tables(fresh_database(pg_server))
    database = uri.rsplit("/", 1)[1]
    wrong = uri.replace(pg_server.password, "not-the-password")
    with pytest.raises(CatalogUnavailable) as caught:
        load_catalog(wrong)
    message = str(caught.value)
    assert f'database "{database}" on 127.0.0.1:{pg_server.port}' in message
    assert "password" in message and "not-the-password" not in message
    assert "\n" not in message


def test_missing_database_and_missing_tables(pg_server: PgServer) -> None:
    with pytest.raises(NotFound, match=r'database "nope_db" on 127\.0\.0\.1:\d+ does not exist'):
        load_catalog(pg_server.uri("nope_db"))
    uri = fresh_database(pg_server)
    with pytest.raises(InvalidMetadata, match="has no iceberg_tables table") as caught:
        load_catalog(uri)
    assert pg_server.password not in str(caught.value)
    with psycopg.connect(uri) as conn:  # nothing was created
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert tables == (0,)
