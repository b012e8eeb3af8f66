"""``icecore views CATALOG`` and ``icecore view CATALOG::ns.view`` (DESIGN.md "Views").

A SQLite catalog holding a table and views made through the view store; the JSON printed is
checked against what was put in, and a view reading a missing table still shows, with that
reference listed as missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icecore.catalog.base import TableIdentifier
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin, create_sqlite_catalog
from icecore.cli import main
from icecore.expressions.parser import referenced_tables
from icecore.metadata.builder import encode_metadata
from icecore.metadata.view import new_view_metadata, view_version_from_json
from icecore.schema import schema_from_json
from icecore.server.create import new_table_metadata

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def catalog_uri(tmp_path: Path) -> str:
    db = create_sqlite_catalog(tmp_path / "catalog.db")
    catalog = SqlCatalog(db)
    admin = SqlCatalogAdmin(catalog)
    admin.create_namespace(("db",), {})
    table = TableIdentifier(("db",), "trips")
    md = new_table_metadata(location=admin.default_table_location(table), schema=SCHEMA)
    admin.create_table(table, md, encode_metadata(md))
    store = catalog.view_store()
    for name, sql in (
        ("recent", "WITH x AS (SELECT * FROM trips) SELECT * FROM x JOIN db.gone ON true"),
        ("nested", "SELECT * FROM icecore.db.recent"),
    ):
        version = view_version_from_json(
            {
                "version-id": 1,
                "schema-id": 0,
                "timestamp-ms": 1_700_000_000_000,
                "summary": {"engine-name": "Spark"},
                "default-catalog": "icecore",
                "default-namespace": ["db"],
                "representations": [
                    {"type": "sql", "sql": sql, "dialect": "spark"},
                    {"type": "sql", "sql": sql, "dialect": "trino"},
                ],
            }
        )
        ident = TableIdentifier(("db",), name)
        store.create_view(
            ident,
            new_view_metadata(str(tmp_path / "db" / name), schema_from_json(SCHEMA), version),
        )
    return f"sqlite:///{db}"


def test_views_lists_each_view(catalog_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = _run(capsys, "views", catalog_uri)
    assert [v["view"] for v in listed] == ["db.nested", "db.recent"]
    assert all(v["current_version_id"] == 1 for v in listed)
    assert all(v["dialects"] == ["spark", "trino"] for v in listed)


def test_view_shows_versions_sql_reads_and_missing(
    catalog_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = _run(capsys, "view", f"{catalog_uri}::db.recent")
    assert shown["view"] == "db.recent"
    assert [r["dialect"] for r in shown["versions"][0]["representations"]] == ["spark", "trino"]
    assert shown["schema"]["fields"][0]["name"] == "id"
    assert shown["reads"] == ["db.gone", "db.trips"]  # x is the WITH clause's, not a table
    assert shown["missing"] == ["db.gone"]
    nested = _run(capsys, "view", f"{catalog_uri}::db.nested")
    assert nested["reads"] == ["db.recent"] and nested["missing"] == []  # a view reads a view


def test_a_missing_view_is_one_sentence(
    catalog_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", f"{catalog_uri}::db.none"]) == 1
    assert "View db.none does not exist" in capsys.readouterr().err
    assert main(["view", "no-separator"]) == 1


def test_referenced_tables_parses_per_dialect() -> None:
    sql = "SELECT a FROM `db`.`t` JOIN u USING (a)"
    assert referenced_tables(sql, "spark") == [("db", "t"), ("u",)]
    assert referenced_tables("SELECT * FROM b JOIN a ON true JOIN b ON true") == [("a",), ("b",)]
    assert referenced_tables("SELECT (", "spark") is None
    assert referenced_tables("SELECT * FROM s.t", "no-such-dialect") == [("s", "t")]


def test_an_unreadable_view_is_listed_with_its_error(
    catalog_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = _run(capsys, "views", catalog_uri)
    broken = next(v for v in listed if v["view"] == "db.nested")
    Path(broken["metadata_location"]).write_text("{not json")
    again = {v["view"]: v for v in _run(capsys, "views", catalog_uri)}
    assert "not valid JSON" in again["db.nested"]["error"]
    assert again["db.recent"]["current_version_id"] == 1
