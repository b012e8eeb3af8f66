"""The catalogs' swap: SQL compare-and-swap, filesystem exclusive versions, static refusal.

The SQL catalog here is a real SQLite file with the ``iceberg_tables`` schema Iceberg's
JdbcCatalog creates (its V0 form); Spark's own commits through it are covered by the
evolution tests.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from icecore.catalog import SqlCatalog, StaticCatalog, TableIdentifier, load_catalog
from icecore.errors import CommitConflict, Unsupported
from icecore.metadata.builder import encode_metadata
from tests.icecore.evolution.hand_table import table_json, write_table

IDENT = TableIdentifier(("db",), "t")


def sql_catalog(tmp_path: Path, properties: dict[str, str] | None = None) -> SqlCatalog:
    folder = tmp_path / "db" / "t"
    (folder / "metadata").mkdir(parents=True)
    raw = table_json(2, str(folder))
    raw["properties"].update(properties or {})
    first = folder / "metadata" / "00000-aaaa.metadata.json"
    first.write_text(json.dumps(raw))
    db = tmp_path / "catalog.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace "
            "VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, metadata_location "
            "VARCHAR(1000), previous_metadata_location VARCHAR(1000), PRIMARY KEY "
            "(catalog_name, table_namespace, table_name))"
        )
        conn.execute(
            "INSERT INTO iceberg_tables VALUES ('icecore', 'db', 't', ?, NULL)", (str(first),)
        )
    return SqlCatalog(db)


def row(catalog: SqlCatalog) -> tuple[str, str | None]:
    with sqlite3.connect(catalog.path) as conn:
        found = conn.execute(
            "SELECT metadata_location, previous_metadata_location FROM iceberg_tables"
        ).fetchone()
    return found[0], found[1]


def test_sql_swap_is_a_compare_and_swap(tmp_path: Path) -> None:
    catalog = sql_catalog(tmp_path)
    table = catalog.load_table(IDENT)
    payload = encode_metadata(table.metadata)
    first = catalog.commit_metadata(IDENT, table.metadata_location, table.metadata, payload)
    assert Path(first).name.startswith("00001-") and Path(first).read_bytes() == payload
    assert row(catalog) == (first, table.metadata_location)
    folder = tmp_path / "db" / "t" / "metadata"
    files = sorted(p.name for p in folder.iterdir())
    with pytest.raises(CommitConflict, match="was committed after"):
        catalog.commit_metadata(IDENT, table.metadata_location, table.metadata, payload)
    assert sorted(p.name for p in folder.iterdir()) == files, "the losing file is removed"
    assert row(catalog) == (first, table.metadata_location)
    with sqlite3.connect(catalog.path) as conn:
        conn.execute("DELETE FROM iceberg_tables")
    with pytest.raises(CommitConflict, match="was dropped"):
        catalog.commit_metadata(IDENT, first, table.metadata, payload)


def test_sql_new_files_go_to_write_metadata_path(tmp_path: Path) -> None:
    elsewhere = tmp_path / "meta-elsewhere"
    elsewhere.mkdir()
    catalog = sql_catalog(tmp_path, {"write.metadata.path": str(elsewhere)})
    committed = catalog.load_table(IDENT).set_properties(a="b")
    assert Path(committed.metadata_location).parent == elsewhere
    assert load_catalog(f"sqlite:///{catalog.path}").load_table("db.t").metadata_location == (
        committed.metadata_location
    )


def test_filesystem_versions_are_never_replaced(tmp_path: Path) -> None:
    write_table(tmp_path, 2)
    catalog = load_catalog(tmp_path)
    table = catalog.load_table(IDENT)
    payload = encode_metadata(table.metadata)
    second = catalog.commit_metadata(IDENT, table.metadata_location, table.metadata, payload)
    assert second.endswith("/v2.metadata.json")
    with pytest.raises(CommitConflict, match="committed after"):
        catalog.commit_metadata(IDENT, table.metadata_location, table.metadata, b"other")
    assert Path(second).read_bytes() == payload


def test_a_static_catalog_cannot_commit(tmp_path: Path) -> None:
    folder = write_table(tmp_path, 2)
    static = StaticCatalog(str(folder / "metadata" / "v1.metadata.json"))
    table = static.load_table(static.identifier)
    with pytest.raises(Unsupported, match="bare metadata file"):
        table.set_properties(a="b")
    assert sorted(p.name for p in (folder / "metadata").iterdir()) == [
        "v1.metadata.json",
        "version-hint.text",
    ]
