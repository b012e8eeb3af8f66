"""Views in every catalog that keeps them: a warehouse folder, SQLite and PostgreSQL.

Each catalog is driven directly (its admin side for namespaces and tables, its view store for
views); the database rows and the files written are the judge, read with sqlite3 or the
catalog's own SQL, never through the code under test alone.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from icecore.catalog import load_catalog
from icecore.catalog.base import CatalogBase, TableIdentifier
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.filesystem_admin import FilesystemCatalogAdmin
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin, create_sqlite_catalog
from icecore.catalog.views import ViewStore, commit_view_updates, view_store_for
from icecore.errors import AlreadyExists, CommitConflict, NamespaceNotEmpty, NotFound
from icecore.metadata.builder import encode_metadata
from icecore.metadata.updates import SetProperties
from icecore.metadata.view import (
    AddViewVersion,
    SetCurrentViewVersion,
    ViewVersion,
    apply_view_updates,
    new_view_metadata,
    view_version_from_json,
)
from icecore.schema import schema_from_json
from icecore.server.backend import CatalogAdmin
from icecore.server.create import new_table_metadata
from tests.pg_server import PgServer, with_catalog_tables

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}


def version(sql: str, version_id: int = 1) -> ViewVersion:
    return view_version_from_json(
        {
            "version-id": version_id,
            "schema-id": 0,
            "timestamp-ms": 1_700_000_000_000,
            "summary": {"engine-name": "test"},
            "default-namespace": ["db"],
            "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        }
    )


@dataclass
class Case:
    kind: str
    catalog: CatalogBase
    admin: CatalogAdmin
    view_location: Callable[[TableIdentifier], str]
    rows: Callable[[], list[tuple[str, str, str | None]]]
    namespace_properties: Callable[[tuple[str, ...]], dict[str, str]] = lambda ns: {}

    def create_namespace(self, namespace: tuple[str, ...]) -> None:
        self.admin.create_namespace(namespace, self.namespace_properties(namespace))

    @property
    def store(self) -> ViewStore:
        store = view_store_for(self.catalog)
        assert store is not None
        return store

    def create_table(self, identifier: TableIdentifier) -> str:
        location = self.admin.default_table_location(identifier)
        metadata = new_table_metadata(location=location, schema=SCHEMA)
        return self.admin.create_table(identifier, metadata, encode_metadata(metadata))

    def create_view(self, identifier: TableIdentifier, sql: str = "SELECT 1") -> str:
        md = new_view_metadata(
            self.view_location(identifier), schema_from_json(SCHEMA), version(sql)
        )
        return self.store.create_view(identifier, md)


def _sqlite_rows(path: Path) -> Callable[[], list[tuple[str, str, str | None]]]:
    def rows() -> list[tuple[str, str, str | None]]:
        with closing(sqlite3.connect(path)) as conn:
            cols = {r[1] for r in conn.execute("PRAGMA table_info(iceberg_tables)")}
            kind = "iceberg_type" if "iceberg_type" in cols else "NULL"
            return sorted(
                conn.execute(f"SELECT table_namespace, table_name, {kind} FROM iceberg_tables")
            )

    return rows


@pytest.fixture(params=["folder", "sqlite", "postgres"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    if request.param == "folder":
        fs = FilesystemCatalog(str(warehouse))
        store = fs.view_store()
        return Case("folder", fs, FilesystemCatalogAdmin(fs), store.view_folder, list)
    if request.param == "sqlite":
        db = create_sqlite_catalog(warehouse / "catalog.db")
        cat = SqlCatalog(db)
        return Case(
            "sqlite",
            cat,
            SqlCatalogAdmin(cat),
            lambda i: str(warehouse.joinpath(*i.namespace, i.name)),
            _sqlite_rows(db),
        )
    pg_server: PgServer = request.getfixturevalue("pg_server")
    uri = with_catalog_tables(pg_server.create_database(f"v_{uuid.uuid4().hex[:8]}"))
    catalog = load_catalog(uri)
    assert isinstance(catalog, SqlCatalog)

    def pg_rows() -> list[tuple[str, str, str | None]]:
        return sorted(
            (str(a), str(b), None if c is None else str(c))
            for a, b, c in catalog._query(
                "SELECT table_namespace, table_name, iceberg_type FROM iceberg_tables"
            )
        )

    return Case(
        "postgres",
        catalog,
        SqlCatalogAdmin(catalog),
        lambda i: str(warehouse.joinpath(*i.namespace, i.name)),
        pg_rows,
        lambda ns: {"location": str(warehouse.joinpath(*ns))},
    )


DB = ("db",)


def test_create_list_load_and_views_are_not_tables(case: Case) -> None:
    case.create_namespace(DB)
    table, view = TableIdentifier(DB, "trips"), TableIdentifier(DB, "recent")
    case.create_table(table)
    location = case.create_view(view, "SELECT * FROM db.trips")
    assert Path(location).is_file()
    assert case.catalog.list_views(DB) == [view]
    assert case.catalog.list_views() == [view]
    assert case.catalog.list_tables(DB) == [table]
    loaded = case.catalog.load_view("db.recent")
    assert loaded.metadata_location == location
    assert loaded.metadata.current_version.sql("spark") == "SELECT * FROM db.trips"
    with pytest.raises(NotFound):
        case.catalog.load_table(view)
    with pytest.raises(NotFound):
        case.catalog.load_view(table)
    if case.kind != "folder":  # JdbcCatalog's V1 rows: the V0 schema got the column
        assert case.rows() == [("db", "recent", "VIEW"), ("db", "trips", None)]


def test_a_name_is_a_table_or_a_view_never_both(case: Case) -> None:
    case.create_namespace(DB)
    case.create_table(TableIdentifier(DB, "trips"))
    with pytest.raises(AlreadyExists, match="Table"):
        case.create_view(TableIdentifier(DB, "trips"))
    case.create_view(TableIdentifier(DB, "recent"))
    with pytest.raises(AlreadyExists, match="View"):
        case.create_table(TableIdentifier(DB, "recent"))
    with pytest.raises(AlreadyExists, match="View"):
        case.create_view(TableIdentifier(DB, "recent"))
    with pytest.raises(NotFound):
        case.create_view(TableIdentifier(("nowhere",), "v"))


def test_a_stale_swap_is_a_conflict_and_retried_commits_keep_every_version(case: Case) -> None:
    case.create_namespace(DB)
    ident = TableIdentifier(DB, "recent")
    first = case.create_view(ident)
    base = case.catalog.load_view(ident)
    one = apply_view_updates(
        base.metadata, [AddViewVersion(version("SELECT 2")), SetCurrentViewVersion(-1)]
    )
    case.store.commit_view(ident, first, one)
    with pytest.raises(CommitConflict):
        case.store.commit_view(ident, first, one)
    # Two writers replacing at once, each through the retrying commit: neither is lost.
    errors: list[BaseException] = []

    def replace(sql: str) -> None:
        try:
            commit_view_updates(
                case.store,
                ident,
                [AddViewVersion(version(sql)), SetCurrentViewVersion(-1)],
                expected_uuid=base.metadata.view_uuid,
                attempts=20,
            )
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=replace, args=(f"SELECT {n}",)) for n in (3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    md = case.catalog.load_view(ident).metadata
    sqls = {v.sql("spark") for v in md.versions}
    assert {"SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4"} <= sqls
    assert len(md.version_log) == 4
    with pytest.raises(CommitConflict, match="uuid"):
        commit_view_updates(case.store, ident, [SetProperties({"a": "b"})], expected_uuid="x")


def test_drop_rename_and_register(case: Case) -> None:
    case.create_namespace(DB)
    ident = TableIdentifier(DB, "recent")
    location = case.create_view(ident)
    case.store.drop_view(ident)
    assert case.catalog.list_views(DB) == []
    # dropping forgets the view; its files stay (a folder view's are moved aside)
    kept = (
        Path(location)
        if case.kind != "folder"
        else next(Path(location).parents[2].glob(".dropped-*-recent/metadata/v1.metadata.json"))
    )
    assert kept.is_file()
    with pytest.raises(NotFound):
        case.store.drop_view(ident)
    if case.kind == "folder":
        return  # a folder view's metadata names its folder: no rename or foreign register
    case.store.register_view(ident, location)
    assert case.catalog.load_view(ident).metadata_location == location
    case.create_namespace(("other",))
    moved = TableIdentifier(("other",), "renamed")
    case.store.rename_view(ident, moved)
    assert case.catalog.list_views() == [moved]
    case.create_table(TableIdentifier(DB, "trips"))
    with pytest.raises(AlreadyExists):
        case.store.rename_view(moved, TableIdentifier(DB, "trips"))


def test_a_catalog_opened_before_views_existed_sees_them(tmp_path: Path) -> None:
    db = create_sqlite_catalog(tmp_path / "catalog.db")
    early, writer = SqlCatalog(db), SqlCatalog(db)  # both opened on the V0 schema
    SqlCatalogAdmin(writer).create_namespace(DB, {})
    ident = TableIdentifier(DB, "recent")
    writer.view_store().create_view(
        ident,
        new_view_metadata(
            str(tmp_path / "db" / "recent"), schema_from_json(SCHEMA), version("SELECT 1")
        ),
    )
    assert early.list_views(DB) == [ident]
    assert early.list_tables(DB) == []  # the view's row is not taken for a table


def test_views_reading_a_table(case: Case) -> None:
    case.create_namespace(DB)
    case.create_table(TableIdentifier(DB, "trips"))
    case.create_view(TableIdentifier(DB, "by_name"), "SELECT * FROM db.trips")
    case.create_view(TableIdentifier(DB, "by_default"), "SELECT count(*) FROM trips")
    case.create_view(TableIdentifier(DB, "other"), "SELECT * FROM db.zones")
    case.create_view(TableIdentifier(DB, "broken"), "SELECT (")
    from icecore.view_lineage import views_reading

    found = views_reading(case.catalog, TableIdentifier(DB, "trips"))
    assert found.views == ("db.by_default", "db.by_name")
    assert [name for name, _ in found.unreadable] == ["db.broken"]


def test_a_namespace_holding_a_view_is_not_empty(case: Case) -> None:
    case.create_namespace(DB)
    case.create_view(TableIdentifier(DB, "recent"))
    with pytest.raises(NamespaceNotEmpty):
        case.admin.drop_namespace(DB)
    assert case.catalog.list_views(DB) == [TableIdentifier(DB, "recent")]
