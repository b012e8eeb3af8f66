"""SQLite catalogs opened read-only never write to the catalog's folder (issue 15, finding 9).

A read-write connection to a WAL-mode database checkpoints and deletes the ``-wal`` and
``-shm`` files when it closes (SQLite's documented WAL behaviour): a read-only deployment
must not. The catalog here is written by hand in the schema Iceberg's JdbcCatalog creates,
pointing at the hand-written table of the evolution tests.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import icecore
from icecore.catalog import SqlCatalog, TableIdentifier, load_catalog
from icecore.errors import ValidationError
from tests.icecore.evolution.hand_table import write_table


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def make_catalog(folder: Path, metadata_location: str) -> sqlite3.Connection:
    """A WAL-mode catalog.db with one table; the returned connection is still open."""
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "catalog.db")
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    conn.execute(
        "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, "
        "table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, "
        "metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), "
        "PRIMARY KEY (catalog_name, table_namespace, table_name))"
    )
    conn.execute(
        "INSERT INTO iceberg_tables VALUES ('icecore', 'db', 't', ?, NULL)", (metadata_location,)
    )
    conn.commit()
    return conn


@pytest.fixture
def table_metadata(tmp_path: Path) -> str:
    folder = write_table(tmp_path / "tables", 2)
    return str(folder / "metadata" / "v1.metadata.json")


def read_everything(catalog_dir: Path) -> None:
    catalog = load_catalog(str(catalog_dir), read_only=True)
    assert isinstance(catalog, SqlCatalog) and catalog.read_only
    assert catalog.list_tables() == [TableIdentifier(("db",), "t")]
    assert catalog.load_table("db.t").metadata.last_column_id > 0


def test_wal_files_of_a_live_writer_are_left_alone(tmp_path: Path, table_metadata: str) -> None:
    writer = make_catalog(tmp_path / "live", table_metadata)
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in (tmp_path / "live").iterdir():
        shutil.copy(p, copy / p.name)  # the writer is still open: -wal and -shm exist
    writer.close()
    before = contents(copy)
    assert set(before) == {"catalog.db", "catalog.db-wal", "catalog.db-shm"}
    read_everything(copy)
    after = contents(copy)
    # The database and its write-ahead log are byte-equal and nothing appeared or went. The
    # -shm file is SQLite's shared-memory index, not data: every WAL reader records its read
    # mark there by design (only a read-only file, or immutable=1, which would ignore the
    # log's commits, avoids that); it keeps its size.
    assert set(after) == set(before)
    assert after["catalog.db"] == before["catalog.db"]
    assert after["catalog.db-wal"] == before["catalog.db-wal"]
    assert len(after["catalog.db-shm"]) == len(before["catalog.db-shm"])
    # What the log holds (the table row, never checkpointed) was read, not skipped.
    assert (
        load_catalog(str(copy), read_only=True)
        .metadata_location(TableIdentifier(("db",), "t"))
        .endswith("v1.metadata.json")
    )


def test_a_checkpointed_wal_database_gets_no_new_files(tmp_path: Path, table_metadata: str) -> None:
    make_catalog(tmp_path / "cat", table_metadata).close()
    before = contents(tmp_path / "cat")
    assert set(before) == {"catalog.db"}
    read_everything(tmp_path / "cat")
    assert contents(tmp_path / "cat") == before


def test_read_only_follows_the_environment(
    tmp_path: Path, table_metadata: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_catalog(tmp_path / "cat", table_metadata).close()
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    catalog = load_catalog(f"sqlite:///{tmp_path / 'cat' / 'catalog.db'}")
    assert isinstance(catalog, SqlCatalog) and catalog.read_only
    monkeypatch.delenv("ICECORE_READ_ONLY")
    catalog = load_catalog(str(tmp_path / "cat"))
    assert isinstance(catalog, SqlCatalog) and not catalog.read_only


def test_a_commit_through_a_read_only_catalog_is_refused(
    tmp_path: Path, table_metadata: str
) -> None:
    make_catalog(tmp_path / "cat", table_metadata).close()
    before = contents(tmp_path / "cat")
    metadata_dir = Path(table_metadata).parent
    metadata_before = contents(metadata_dir)
    table = load_catalog(str(tmp_path / "cat"), read_only=True).load_table("db.t")
    with pytest.raises(ValidationError) as info:
        table.update_schema().add_column("note", "string").commit()
    assert str(info.value).startswith("Cannot commit to db.t: the SQL catalog ")
    assert "read-only" in str(info.value) and "\n" not in str(info.value)
    assert contents(tmp_path / "cat") == before
    assert contents(metadata_dir) == metadata_before
    # The same catalog opened read-write commits (the default is unchanged).
    writable = icecore.load_catalog(str(tmp_path / "cat"), read_only=False)
    writable.load_table("db.t").update_schema().add_column("note", "string").commit()
    assert writable.load_table("db.t").metadata.current_schema().find_field_by_name("note")
