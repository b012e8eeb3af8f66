"""The PostgreSQL catalog against a real server: connecting, credentials, and refusals.

Each failure must be one sentence that names the host and the database, never the password,
and must leave the database as it was.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest

from icecore.catalog import PostgresCatalog, TableIdentifier, load_catalog
from icecore.catalog.postgres import PostgresTarget, hide_password, redact
from icecore.errors import CatalogUnavailable, CommitConflict, InvalidMetadata, NotFound
from icecore.metadata.builder import encode_metadata
from tests.icecore.evolution.hand_table import write_table
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


IDENT = TableIdentifier(("db",), "t")


def pg_catalog(pg_server: PgServer, tmp_path: Path, lock_timeout: float = 10.0) -> PostgresCatalog:
    """A PostgreSQL catalog holding the hand-written table ``db.t`` (as test_commit's SQLite)."""
    uri = with_catalog_tables(fresh_database(pg_server))
    folder = write_table(tmp_path, 2)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO iceberg_tables VALUES ('icecore', 'db', 't', %s, NULL)",
            (str(folder / "metadata" / "v1.metadata.json"),),
        )
    return PostgresCatalog(uri, lock_timeout=lock_timeout)


def pg_row(catalog: PostgresCatalog, uri: str) -> tuple[str, str | None]:
    with psycopg.connect(uri) as conn:
        found = conn.execute(
            "SELECT metadata_location, previous_metadata_location FROM iceberg_tables"
        ).fetchone()
    assert found is not None
    return found[0], found[1]


def test_pg_swap_is_a_compare_and_swap(pg_server: PgServer, tmp_path: Path) -> None:
    catalog = pg_catalog(pg_server, tmp_path)
    uri = pg_server.uri(catalog.target.database)
    table = catalog.load_table(IDENT)
    payload = encode_metadata(table.metadata)
    first = catalog.commit_metadata(IDENT, table.metadata_location, table.metadata, payload)
    assert Path(first).name.startswith("00000-") and Path(first).read_bytes() == payload
    assert pg_row(catalog, uri) == (first, table.metadata_location)
    folder = tmp_path / "db" / "t" / "metadata"
    files = sorted(p.name for p in folder.iterdir())
    with pytest.raises(CommitConflict, match="was committed after"):
        catalog.commit_metadata(IDENT, table.metadata_location, table.metadata, payload)
    assert sorted(p.name for p in folder.iterdir()) == files, "the losing file is removed"
    assert pg_row(catalog, uri) == (first, table.metadata_location)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DELETE FROM iceberg_tables")
    with pytest.raises(CommitConflict, match="was dropped"):
        catalog.commit_metadata(IDENT, first, table.metadata, payload)


def test_pg_row_locked_too_long_is_a_conflict_and_writes_nothing(
    pg_server: PgServer, tmp_path: Path
) -> None:
    catalog = pg_catalog(pg_server, tmp_path, lock_timeout=0.3)
    uri = pg_server.uri(catalog.target.database)
    table = catalog.load_table(IDENT)
    folder = tmp_path / "db" / "t" / "metadata"
    files = sorted(p.name for p in folder.iterdir())
    with psycopg.connect(uri) as holder:  # another writer's open transaction on the row
        holder.execute("SELECT 1 FROM iceberg_tables FOR UPDATE")
        payload = encode_metadata(table.metadata)
        with pytest.raises(CommitConflict, match="stayed locked by another writer"):
            catalog.commit_metadata(IDENT, table.metadata_location, table.metadata, payload)
        holder.rollback()
    assert sorted(p.name for p in folder.iterdir()) == files
    assert pg_row(catalog, uri) == (table.metadata_location, None)
    committed = table.set_properties(a="b")  # the lock is gone: the commit goes through
    assert committed.metadata.properties["a"] == "b"
    assert pg_row(catalog, uri) == (committed.metadata_location, table.metadata_location)


def test_pg_catalog_table_dropped_before_a_commit(pg_server: PgServer, tmp_path: Path) -> None:
    catalog = pg_catalog(pg_server, tmp_path)
    uri = pg_server.uri(catalog.target.database)
    table = catalog.load_table(IDENT)
    files = sorted(p.name for p in (tmp_path / "db" / "t" / "metadata").iterdir())
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DROP TABLE iceberg_tables")
    with pytest.raises(InvalidMetadata, match="Cannot read SQL catalog") as caught:
        table.set_properties(a="b")
    assert "\n" not in str(caught.value) and pg_server.password not in str(caught.value)
    assert sorted(p.name for p in (tmp_path / "db" / "t" / "metadata").iterdir()) == files


@pytest.mark.parametrize(
    ("given", "shown", "password"),
    [
        (
            "postgresql://a:pw9@h:1/d?catalog=x&sslmode=require",
            "postgresql://a@h:1/d?sslmode=require&catalog=x",
            "pw9",
        ),
        ("postgresql+psycopg://u:p%40ss@[::1]:5/d", "postgresql://u@[::1]:5/d", "p@ss"),
        (
            "postgresql:///db?host=/run/pg&user=me&password=s3",
            "postgresql://me@:5432/db?host=%2Frun%2Fpg",
            "s3",
        ),
    ],
)
def test_uri_parts_and_the_password_kept_apart(given: str, shown: str, password: str) -> None:
    target = PostgresTarget.parse(given)
    assert target.uri == shown and target.password == password
    assert PostgresTarget.parse(shown).uri == shown
    assert password not in redact(given) and password not in repr(target)
    assert hide_password(given) == shown
    assert PostgresTarget.parse(shown).resolve_password() == password  # remembered
