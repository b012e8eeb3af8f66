"""One rule for new namespace and table names, on every catalog that creates them.

Each catalog (a warehouse folder, SQLite, PostgreSQL) is driven directly through its admin
side; the file system is the judge of what was written: a refused name leaves every folder
and file under the test's temporary folder as it was. Names already in a catalog that break
the rule stay listed and loadable: the rule refuses new names only.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Callable
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from icecore.catalog import load_catalog
from icecore.catalog.base import TableIdentifier
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.filesystem_admin import FilesystemCatalogAdmin
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin, create_sqlite_catalog
from icecore.errors import AlreadyExists, ValidationError
from icecore.metadata.builder import encode_metadata
from icecore.server.backend import CatalogAdmin
from icecore.server.create import new_table_metadata
from tests.pg_server import PgServer, with_catalog_tables

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}

UNSAFE = [
    "../../escape",
    "",
    "x\x00y",
    "x" * 3000,
    "a\x1fb",
    "a.b",
    "a b",
    "-x",
    ".hidden",
    "..",
    "a/b",
    "a\\b",
    "tab\there",
    "é" * 128,  # 128 letters, 256 bytes in UTF-8
]


@dataclass
class Case:
    """A catalog under test: its admin, the folder its tables go in, how to add namespaces."""

    kind: str
    admin: CatalogAdmin
    root: Path
    namespace_properties: Callable[[tuple[str, ...]], dict[str, str]]

    def create_namespace(self, namespace: tuple[str, ...]) -> None:
        self.admin.create_namespace(namespace, self.namespace_properties(namespace))

    def create_table(self, identifier: TableIdentifier) -> str:
        location = self.admin.default_table_location(identifier)
        metadata = new_table_metadata(location=location, schema=SCHEMA)
        return self.admin.create_table(identifier, metadata, encode_metadata(metadata))


def _tree(folder: Path) -> set[str]:
    """Every folder and file below ``folder`` (relative), to compare before and after."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture(params=["folder", "sqlite", "postgres"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    if request.param == "folder":
        return Case(
            "folder",
            FilesystemCatalogAdmin(FilesystemCatalog(str(warehouse))),
            tmp_path,
            lambda ns: {},
        )
    if request.param == "sqlite":
        db = create_sqlite_catalog(warehouse / "catalog.db")
        return Case("sqlite", SqlCatalogAdmin(SqlCatalog(db)), tmp_path, lambda ns: {})
    pg_server: PgServer = request.getfixturevalue("pg_server")
    uri = with_catalog_tables(pg_server.create_database(f"n_{uuid.uuid4().hex[:8]}"))
    catalog = load_catalog(uri)
    assert isinstance(catalog, SqlCatalog)
    # A PostgreSQL catalog has no folder of its own: each namespace names its location.
    return Case(
        "postgres",
        SqlCatalogAdmin(catalog),
        tmp_path,
        lambda ns: {"location": str(warehouse.joinpath(*ns))},
    )


@pytest.mark.parametrize("name", UNSAFE)
def test_an_unsafe_table_name_is_refused_and_writes_nothing(case: Case, name: str) -> None:
    case.create_namespace(("db",))
    before = _tree(case.root)
    identifier = TableIdentifier(("db",), name)
    with pytest.raises(ValidationError, match="Invalid table name"):
        case.create_table(identifier)
    with pytest.raises(ValidationError, match="Invalid table name"):
        case.admin.register_table(identifier, str(case.root / "wh" / "any.metadata.json"))
    assert _tree(case.root) == before
    assert not (case.root / "escape").exists()


@pytest.mark.parametrize("level", UNSAFE)
def test_an_unsafe_namespace_level_is_refused_and_writes_nothing(case: Case, level: str) -> None:
    before = _tree(case.root)
    with pytest.raises(ValidationError, match="Invalid namespace"):
        case.create_namespace(("db", level))
    assert _tree(case.root) == before
    assert case.admin.all_namespaces() == []


def test_names_differing_only_by_case_are_refused(case: Case) -> None:
    case.create_namespace(("db",))
    case.create_table(TableIdentifier(("db",), "trips"))
    before = _tree(case.root)
    for twin in ("TRIPS", "Trips", "ＴＲＩＰＳ"):  # the last in full-width letters
        with pytest.raises(ValidationError, match="differs only by case"):
            case.create_table(TableIdentifier(("db",), twin))
    with pytest.raises(ValidationError, match="differs only by case"):
        case.create_namespace(("DB",))
    with pytest.raises(ValidationError, match="differs only by case"):
        case.create_namespace(("Db", "inner"))
    assert _tree(case.root) == before
    assert [t.name for t in case.admin.catalog.list_tables(("db",))] == ["trips"]  # type: ignore[attr-defined]
    with pytest.raises(AlreadyExists):  # the same name again is "already exists", as before
        case.create_table(TableIdentifier(("db",), "trips"))


def test_letters_of_any_script_are_names(case: Case) -> None:
    case.create_namespace(("données",))
    names = ["café", "東京", "straße", "x" * 255, "a$-ok_1"]
    for name in names:
        case.create_table(TableIdentifier(("données",), name))
    listed = case.admin.catalog.list_tables(("données",))  # type: ignore[attr-defined]
    assert sorted(t.name for t in listed) == sorted(names)
    # German sharp s folds to "ss": STRASSE is straße's twin.
    with pytest.raises(ValidationError, match="differs only by case"):
        case.create_table(TableIdentifier(("données",), "STRASSE"))


def test_namespace_depth_and_length_are_bounded(case: Case) -> None:
    seven = tuple(f"l{i}" for i in range(7))
    case.create_namespace(seven)
    assert seven in case.admin.all_namespaces()
    before = _tree(case.root)
    with pytest.raises(ValidationError, match="at most 7"):
        case.create_namespace((*seven, "l7"))
    with pytest.raises(ValidationError, match="longer than 255 bytes"):
        case.create_namespace(("a" * 200, "b" * 60))
    assert _tree(case.root) == before


def test_rename_checks_the_new_name_and_allows_a_change_of_case(tmp_path: Path) -> None:
    db = create_sqlite_catalog(tmp_path / "catalog.db")
    catalog = SqlCatalog(db)
    case = Case("sqlite", SqlCatalogAdmin(catalog), tmp_path, lambda ns: {})
    case.create_namespace(("db",))
    case.create_table(TableIdentifier(("db",), "trips"))
    case.create_table(TableIdentifier(("db",), "rides"))
    trips = TableIdentifier(("db",), "trips")
    for bad in ("../x", "", "a\x1fb", "x" * 3000):
        with pytest.raises(ValidationError, match="Invalid table name"):
            case.admin.rename_table(trips, TableIdentifier(("db",), bad))
    with pytest.raises(ValidationError, match="differs only by case"):
        case.admin.rename_table(trips, TableIdentifier(("db",), "RIDES"))
    case.admin.rename_table(trips, TableIdentifier(("db",), "Trips"))  # its own twin: fine
    assert [t.name for t in catalog.list_tables(("db",))] == ["Trips", "rides"]


def test_names_already_in_a_sql_catalog_stay_listed_and_loadable(tmp_path: Path) -> None:
    """Rows another writer made (Spark, PyIceberg, an older Icecore) are read as they are."""
    db = create_sqlite_catalog(tmp_path / "catalog.db")
    catalog = SqlCatalog(db)
    admin = SqlCatalogAdmin(catalog)
    admin.create_namespace(("db",), {})
    good = TableIdentifier(("db",), "good")
    metadata = new_table_metadata(location=str(tmp_path / "good"), schema=SCHEMA)
    location = admin.create_table(good, metadata, encode_metadata(metadata))
    legacy = [
        TableIdentifier(("db",), "my table"),
        TableIdentifier(("db",), "TRIPS"),
        TableIdentifier(("db",), "trips"),
        TableIdentifier(("odd-ns ",), "x" * 300),
    ]
    with closing(sqlite3.connect(db)) as conn, conn:
        for ident in legacy:
            conn.execute(
                "INSERT INTO iceberg_tables VALUES ('icecore', ?, ?, ?, NULL)",
                (".".join(ident.namespace), ident.name, location),
            )
    reopened = SqlCatalog(db)
    assert set(legacy) <= set(reopened.list_tables())
    for ident in legacy:
        assert reopened.load_table(ident).metadata.location == str(tmp_path / "good")
    assert ("odd-ns ",) in SqlCatalogAdmin(reopened).all_namespaces()
    # A new name beside the legacy twins is still refused; the twins themselves stay.
    with pytest.raises(ValidationError, match="differs only by case"):
        SqlCatalogAdmin(reopened).register_table(TableIdentifier(("db",), "Trips"), location)


@pytest.mark.slow
def test_concurrent_creators_of_case_twins_one_wins(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six threads create TRIPS, trips, Trips, ... at one moment: exactly one table results.

    The window is held open: inside the insert's transaction, each creator waits, after
    reading the names, until all six have read them or a second has passed. Without a lock
    all six read an empty namespace and insert; with it, the first waits alone, the barrier
    breaks, and the others read its row in turn.
    """
    case.create_namespace(("race",))
    twins = ["trips", "TRIPS", "Trips", "tRIPS", "TrIpS", "triPS"]
    barrier = threading.Barrier(len(twins))
    outcomes: dict[str, str] = {}
    if isinstance(case.admin, SqlCatalogAdmin):
        read_names = SqlCatalogAdmin._names_in
        in_transaction = threading.Barrier(len(twins))

        def held_open(self: SqlCatalogAdmin, conn: object, namespace: tuple[str, ...]) -> list[str]:
            names = read_names(self, conn, namespace)
            if conn is not None:
                with suppress(threading.BrokenBarrierError):
                    in_transaction.wait(timeout=1.0)
            return names

        monkeypatch.setattr(SqlCatalogAdmin, "_names_in", held_open)

    def create(name: str) -> None:
        barrier.wait()
        try:
            case.create_table(TableIdentifier(("race",), name))
            outcomes[name] = "created"
        except ValidationError as e:
            outcomes[name] = type(e).__name__

    threads = [threading.Thread(target=create, args=(name,)) for name in twins]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    created = [name for name, outcome in outcomes.items() if outcome == "created"]
    assert len(created) == 1, outcomes
    listed = case.admin.catalog.list_tables(("race",))  # type: ignore[attr-defined]
    assert [t.name for t in listed] == created


def test_folders_already_in_a_warehouse_stay_listed_and_loadable(tmp_path: Path) -> None:
    """Folders another writer named outside the rule are read; other names never become paths."""
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    catalog = FilesystemCatalog(str(warehouse))
    admin = FilesystemCatalogAdmin(catalog)
    case = Case("folder", admin, tmp_path, lambda ns: {})
    case.create_namespace(("db",))
    case.create_namespace(("odd",))
    for name in ("t1", "t2", "t3"):
        case.create_table(TableIdentifier(("db",), name))
    (warehouse / "db" / "t1").rename(warehouse / "db" / "my table")
    (warehouse / "db" / "t2").rename(warehouse / "db" / "-dash")
    (warehouse / "db" / "t3").rename(warehouse / "odd" / "x.y")
    (warehouse / "odd").rename(warehouse / "odd ns")
    legacy = [
        TableIdentifier(("db",), "my table"),
        TableIdentifier(("db",), "-dash"),
        TableIdentifier(("odd ns",), "x.y"),
    ]
    assert set(legacy) <= set(catalog.list_tables())
    for ident in legacy:
        assert catalog.load_table(ident).metadata.current_schema().fields[0].name == "id"
    assert ("odd ns",) in admin.all_namespaces()
    assert admin.namespace_properties(("odd ns",))["location"] == f"{warehouse}/odd ns"
    for unsafe in ("..", "../wh", "", ".hidden", "no such", "a/b"):
        with pytest.raises(ValidationError, match="Invalid"):
            catalog.table_location(TableIdentifier(("db",), unsafe))
        with pytest.raises(ValidationError, match="Invalid"):
            catalog.namespace_location((unsafe,))


def test_what_a_sql_catalog_row_cannot_hold_is_refused_before_writing(case: Case) -> None:
    """Longer than JdbcCatalog's VARCHAR(255)/(1000) columns: refused before writing.

    PostgreSQL refused such values in the middle of the write (an outcome-unknown 500).
    """
    if case.kind == "folder":
        pytest.skip("a warehouse folder keeps no properties and fixes every table's location")
    case.create_namespace(("db",))
    before = _tree(case.root)
    for properties in ({"k" * 256: "v"}, {"k": "v" * 1001}):
        with pytest.raises(ValidationError, match="too long for a SQL catalog"):
            case.admin.create_namespace(("other",), properties)
        with pytest.raises(ValidationError, match="too long for a SQL catalog"):
            case.admin.update_namespace_properties(("db",), properties, [])
    assert ("other",) not in case.admin.all_namespaces()
    long_location = str(case.root / "wh" / "db" / ("d" * 200) / ("e" * 200) / ("f" * 200)) * 2
    metadata = new_table_metadata(location=long_location, schema=SCHEMA)
    with pytest.raises(ValidationError, match="at most 1000"):
        case.admin.create_table(TableIdentifier(("db",), "t"), metadata, encode_metadata(metadata))
    with pytest.raises(ValidationError, match="at most 1000"):
        case.admin.register_table(TableIdentifier(("db",), "t"), long_location + ".metadata.json")
    assert _tree(case.root) == before
    assert case.admin.catalog.list_tables(("db",)) == []  # type: ignore[attr-defined]
