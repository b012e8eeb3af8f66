"""What a view reads (parsed from its SQL per dialect) and which views read a table.

The relations are found by sqlglot in each representation's dialect (issue 35, Deliver 4);
these cases pin the resolution rules of view-spec.md "Versions" (``default-namespace`` for
unqualified names, ``default-catalog`` for three-part ones) and that nothing is guessed: a
CTE, a table function and a subquery's alias are not relations, and SQL that does not parse
is said to. The catalog cases use a real SQLite catalog and the CLI's JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icecore.catalog.base import TableIdentifier
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin, create_sqlite_catalog
from icecore.catalog.views import view_store_for
from icecore.cli import main
from icecore.metadata.builder import encode_metadata
from icecore.metadata.view import new_view_metadata, view_version_from_json
from icecore.schema import schema_from_json
from icecore.server.create import new_table_metadata
from icecore.view_lineage import MAX_SQL_CHARS, version_reads, views_reading

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}


def version(
    sql: str | dict[str, str], namespace: tuple[str, ...] = ("db",), catalog: str | None = None
) -> Any:
    reps = sql if isinstance(sql, dict) else {"spark": sql}
    body: dict[str, Any] = {
        "version-id": 1,
        "schema-id": 0,
        "timestamp-ms": 1_700_000_000_000,
        "summary": {"engine-name": "spark", "engine-version": "3.5.6"},
        "default-namespace": list(namespace),
        "representations": [
            {"type": "sql", "sql": text, "dialect": dialect} for dialect, text in reps.items()
        ],
    }
    if catalog is not None:
        body["default-catalog"] = catalog
    return view_version_from_json(body)


def names(sql: str | dict[str, str], **kw: Any) -> list[str]:
    return version_reads(version(sql, **kw)).names


def test_unqualified_names_take_the_default_namespace() -> None:
    assert names("SELECT * FROM trips t JOIN geo.zones z ON t.z = z.id") == [
        "db.trips",
        "geo.zones",
    ]
    assert names("SELECT * FROM trips", namespace=("a", "b")) == ["a.b.trips"]


def test_ctes_functions_and_aliases_are_not_relations() -> None:
    sql = (
        "WITH recent AS (SELECT * FROM trips WHERE ts > now() - INTERVAL 1 DAY) "
        "SELECT r.*, s.n FROM recent r, (SELECT count(*) AS n FROM stops) s "
        "WHERE r.id IN (SELECT id FROM flagged) UNION ALL SELECT * FROM range(10)"
    )
    assert sorted(names(sql)) == ["db.flagged", "db.stops", "db.trips"]


def test_a_catalog_part_is_the_default_catalog_or_another_catalog() -> None:
    reads = version_reads(version("SELECT * FROM prod.db.a, other.db.b", catalog="prod"))
    assert [(r.name, r.kind) for r in reads.references] == [
        ("db.a", "missing"),
        ("other.db.b", "other catalog"),
    ]


def test_the_catalogs_own_name_is_this_catalog() -> None:
    # Spark writes its session's current catalog as default-catalog, and the SQL as typed:
    # a view made from catalog "icecore" in catalog "vws" names vws's table with "vws.".
    v = version("SELECT * FROM vws.db.trips, icecore.db.u, x.db.t", catalog="icecore")
    reads = version_reads(v, None, own_names=("vws",))
    assert [(r.name, r.kind) for r in reads.references] == [
        ("db.trips", "missing"),
        ("db.u", "missing"),
        ("x.db.t", "other catalog"),
    ]


def test_each_dialect_is_parsed_in_its_own_syntax() -> None:
    # Trino quotes with "..." and Spark with `...`: each text is read by its own dialect.
    reads = version_reads(
        version({"spark": "SELECT * FROM `odd name`", "trino": 'SELECT * FROM "odd name"'})
    )
    ((ref),) = reads.references
    assert ref.name == "db.odd name" and ref.dialects == ("spark", "trino")


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELEC nonsense (", "not one query that parses"),
        ("SELECT 1; SELECT 2", "not one query that parses"),
        ("SELECT * FROM t WHERE x = '" + "y" * MAX_SQL_CHARS + "'", "longer than"),
    ],
)
def test_sql_that_cannot_be_read_is_said_not_guessed(sql: str, reason: str) -> None:
    reads = version_reads(version(sql))
    assert reads.references == ()
    ((dialect, why),) = reads.unparsed
    assert dialect == "spark" and reason in why


VIEWS = {
    "recent": "SELECT * FROM trips WHERE id > 10",
    "recent_top": "SELECT * FROM db.recent ORDER BY id LIMIT 5",
    "orphan": "SELECT * FROM dropped_long_ago",
}


def views_catalog(folder: Path, views: dict[str, str | dict[str, str]] | None = None) -> SqlCatalog:
    """A SQLite catalog in ``folder`` with table db.trips and ``views`` (name -> SQL)."""
    cat = SqlCatalog(create_sqlite_catalog(folder / "catalog.db"))
    admin = SqlCatalogAdmin(cat)
    admin.create_namespace(("db",), {})
    ident = TableIdentifier(("db",), "trips")
    location = admin.default_table_location(ident)
    metadata = new_table_metadata(location=location, schema=SCHEMA)
    admin.create_table(ident, metadata, encode_metadata(metadata))
    store = view_store_for(cat)
    assert store is not None
    for name, sql in (VIEWS if views is None else views).items():
        v = TableIdentifier(("db",), name)
        md = new_view_metadata(str(folder / "views" / name), schema_from_json(SCHEMA), version(sql))
        store.create_view(v, md)
    return cat


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    """db.trips, a view on it, a view on that view, a view on a table that is gone."""
    return views_catalog(tmp_path)


def test_kinds_and_readers_in_a_catalog(catalog: SqlCatalog) -> None:
    from icecore.view_lineage import view_reads

    kinds = {
        name: [
            (r.name, r.kind)
            for r in view_reads(catalog.load_view(f"db.{name}"), catalog).references
        ]
        for name in ("recent", "recent_top", "orphan")
    }
    assert kinds == {
        "recent": [("db.trips", "table")],
        "recent_top": [("db.recent", "view")],
        "orphan": [("db.dropped_long_ago", "missing")],
    }
    trips = TableIdentifier(("db",), "trips")
    assert views_reading(catalog, trips).views == ("db.recent",)
    assert views_reading(catalog, TableIdentifier(("db",), "recent")).views == ("db.recent_top",)


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_views_and_view(
    catalog: SqlCatalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = f"sqlite://{tmp_path / 'catalog.db'}"
    listed = _cli(["views", where], capsys)
    assert sorted(v["view"] for v in listed) == ["db.orphan", "db.recent", "db.recent_top"]
    assert all(v["dialects"] == ["spark"] and v["current_version_id"] == 1 for v in listed)
    one = _cli(["view", f"{where}::db.recent"], capsys)
    assert one["reads"] == ["db.trips"] and one["read_kinds"] == {"db.trips": "table"}
    ((v1),) = one["versions"]
    assert v1["representations"] == [
        {"dialect": "spark", "sql": "SELECT * FROM trips WHERE id > 10"}
    ]
    assert v1["summary"]["engine-name"] == "spark"
    assert one["schema"] == SCHEMA  # Iceberg's schema JSON, as written
    assert one["missing"] == []
    assert main(["view", f"{where}::db.nothing"]) == 1
    assert "nothing" in capsys.readouterr().err
