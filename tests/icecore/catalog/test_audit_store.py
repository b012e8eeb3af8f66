"""The audit log's stores against real catalogs: SQLite, PostgreSQL and a warehouse folder.

Every store is written and read through its own catalog (a real SQLite file, a real
PostgreSQL server, a real folder); commits go through a real guarded catalog over the
hand-written table, so the intents and outcomes are the ones a change really writes.
Expected values come from the scenario each test builds, never from the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from icecore.access import Grant, Policy, Principal, Role
from icecore.audit import AuditEvent, audit_changes, select_changes
from icecore.catalog import FilesystemCatalog, SqlCatalog, TableIdentifier, load_catalog
from icecore.catalog.audit_store import (
    AUDIT_FILE,
    AUDIT_TABLE,
    AuditLogUnavailable,
    FileAuditLog,
    ObjectAuditLog,
    SqlAuditLog,
    audit_sink_for,
)
from icecore.catalog.guarded import guard
from icecore.catalog.sql import SqlCatalogAdmin, create_sqlite_catalog
from icecore.errors import CommitConflict, Forbidden, ValidationError
from icecore.io import FileIO
from icecore.metadata.builder import encode_metadata
from tests.conftest import REPO
from tests.icecore.evolution.hand_table import table_json, write_table
from tests.pg_server import PgServer, with_catalog_tables

ANN = Principal(subject="u-ann", name="Ann", groups=("owners",), source="oidc")
BOB = Principal(subject="u-bob", name="Bob", groups=("analysts",), source="oidc")
POLICY = Policy((Grant("owners", Role.OWNER), Grant("analysts", Role.READER)))
T = TableIdentifier(("db",), "t")


def event(event_id: str, phase: str, result: str, **more: str) -> AuditEvent:
    values: dict[str, str] = {
        "time": "2026-01-02T03:04:05.000Z",
        "principal": "Ann (u-ann)",
        "subject": "u-ann",
        "source": "cli",
        "action": "commit",
        "catalog": "c",
        "table": "db.t",
    }
    values.update(more)
    return AuditEvent(id=event_id, phase=phase, result=result, **values)  # type: ignore[arg-type]


def sqlite_catalog(root: Path, *, read_only: bool = False, name: str = "icecore") -> SqlCatalog:
    """A SQLite catalog holding the hand-written table as ``db.t`` (rows named ``name``)."""
    folder = write_table(root, 2)
    path = create_sqlite_catalog(root / "catalog.db")
    catalog = SqlCatalog(path, catalog_name=name)
    admin = SqlCatalogAdmin(catalog)
    admin.create_namespace(("db",), {})
    admin.register_table(T, str(folder / "metadata" / "v1.metadata.json"))
    return SqlCatalog(path, read_only=True) if read_only else catalog


def postgres_catalog(pg_server: PgServer, root: Path) -> SqlCatalog:
    uri = with_catalog_tables(pg_server.create_database(f"a_{uuid.uuid4().hex[:8]}"))
    folder = write_table(root, 2)
    catalog = load_catalog(uri)
    assert isinstance(catalog, SqlCatalog)
    admin = SqlCatalogAdmin(catalog)
    admin.create_namespace(("db",), {})
    admin.register_table(T, str(folder / "metadata" / "v1.metadata.json"))
    return catalog


def folder_catalog(root: Path) -> FilesystemCatalog:
    write_table(root, 2)
    return FilesystemCatalog(str(root))


# --- append and read, every store ---------------------------------------------------------


def roundtrip(catalog: object) -> None:
    sink = audit_sink_for(catalog)  # type: ignore[arg-type]
    assert sink is not None
    assert list(sink.read()) == []  # no log yet: nothing, and no error
    written = [
        event("a", "intent", "started", metadata_before="/m/v1.metadata.json", summary="s\nt"),
        event("a", "outcome", "committed", metadata_after="/m/v2.metadata.json"),
        event("b", "outcome", "refused", principal="Bob (u-bob)", summary="ünïcode ✓"),
    ]
    for e in written:
        sink.append(e)
    assert list(sink.read()) == written
    # a second store object on the same catalog reads the same log
    again = audit_sink_for(catalog)  # type: ignore[arg-type]
    assert again is not None and list(again.read()) == written


def test_sqlite_store_roundtrip(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path)
    roundtrip(catalog)
    assert isinstance(audit_sink_for(catalog), SqlAuditLog)
    # the log is a table of the catalog's own database; the catalog still lists its table
    assert AUDIT_TABLE in catalog._table_names()
    assert catalog.list_tables() == [T]


def test_postgres_store_roundtrip(pg_server: PgServer, tmp_path: Path) -> None:
    catalog = postgres_catalog(pg_server, tmp_path)
    roundtrip(catalog)
    assert AUDIT_TABLE in catalog._table_names()


def test_folder_store_roundtrip_is_a_file_no_listing_sees(tmp_path: Path) -> None:
    catalog = folder_catalog(tmp_path)
    roundtrip(catalog)
    log = tmp_path / AUDIT_FILE
    assert log.is_file()
    assert len(log.read_text().splitlines()) == 3
    assert catalog.list_tables() == [T] and catalog.list_namespaces() == [("db",)]


def test_catalogs_of_one_database_keep_their_own_logs(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path)
    SqlAuditLog(catalog).append(event("mine", "outcome", "refused"))
    other = SqlCatalog(catalog.path, catalog_name="other")
    assert list(SqlAuditLog(other).read()) == []


def test_read_only_sqlite_catalog_reads_its_log_and_writes_none(tmp_path: Path) -> None:
    writable = sqlite_catalog(tmp_path)
    SqlAuditLog(writable).append(event("x", "outcome", "refused"))
    catalog = SqlCatalog(writable.path, read_only=True)
    before = (tmp_path / "catalog.db").read_bytes()
    sink = audit_sink_for(catalog)
    assert sink is not None and [e.id for e in sink.read()] == ["x"]
    with pytest.raises(ValidationError, match="read-only"):
        sink.append(event("y", "outcome", "refused"))
    assert (tmp_path / "catalog.db").read_bytes() == before


def test_a_read_only_deployment_writes_no_log_beside_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = folder_catalog(tmp_path)
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    as_bob = guard(catalog, BOB, POLICY, name="c", audit=audit_sink_for(catalog))
    table = as_bob.load_table(T)
    with pytest.raises(Forbidden):  # still refused, and nothing is written
        as_bob.require(T, Role.OWNER, "run a maintenance job")
    with pytest.raises(ValidationError, match="read-only"):
        guard(catalog, ANN, POLICY, name="c", audit=audit_sink_for(catalog)).commit_metadata(
            T, table.metadata_location, table.metadata, b"{}"
        )
    assert not (tmp_path / AUDIT_FILE).exists()


def test_no_store_for_a_bare_metadata_file(tmp_path: Path) -> None:
    folder = write_table(tmp_path, 2)
    catalog = load_catalog(str(folder / "metadata" / "v1.metadata.json"))
    assert audit_sink_for(catalog) is None


# --- corrupt records ----------------------------------------------------------------------


def test_corrupt_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    sink = FileAuditLog(tmp_path / AUDIT_FILE)
    sink.append(event("a", "intent", "started"))
    with (tmp_path / AUDIT_FILE).open("ab") as f:
        f.write(b"not json\n")
        f.write(json.dumps({"id": "x", "phase": "bogus"}).encode() + b"\n")
        f.write(b"\xff\xfe\n")
        f.write(b"[1, 2]\n")
        f.write(b'{"id": "' + b"y" * 300_000 + b'"}\n')  # longer than any line may be
        f.write(b'{"id": "cut short by a crash", "pha')  # no newline: a writer died here
    sink.append(event("a", "outcome", "committed"))
    events = sink.read()
    assert [(e.id, e.phase) for e in events] == [("a", "intent"), ("a", "outcome")]
    assert sink.skipped == 6


def test_corrupt_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path)
    sink = SqlAuditLog(catalog)
    sink.append(event("a", "intent", "started"))
    import sqlite3

    with sqlite3.connect(catalog.path) as conn:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({AUDIT_TABLE})")][1:]
        row = ["icecore", "b", "sideways", *["x"] * (len(columns) - 3)]
        marks = ", ".join("?" for _ in columns)
        conn.execute(f"INSERT INTO {AUDIT_TABLE} ({', '.join(columns)}) VALUES ({marks})", row)
    assert [e.id for e in sink.read()] == ["a"]
    assert sink.skipped == 1


def test_unwritable_log_refuses_the_change(tmp_path: Path) -> None:
    catalog = folder_catalog(tmp_path)
    (tmp_path / AUDIT_FILE).mkdir()  # the log's name is taken by a folder: it cannot be written
    before = sorted(p.name for p in (tmp_path / "db" / "t" / "metadata").iterdir())
    table = guard(
        catalog, ANN, POLICY, name="c", audit=audit_sink_for(catalog), source="app"
    ).load_table(T)
    with pytest.raises(AuditLogUnavailable):
        table.update_schema().add_column("z", "string").commit()
    assert sorted(p.name for p in (tmp_path / "db" / "t" / "metadata").iterdir()) == before


# --- concurrent writers -------------------------------------------------------------------

WRITER = """
import sys
from icecore.audit import AuditEvent
from icecore.catalog import load_catalog
from icecore.catalog.audit_store import audit_sink_for
sink = audit_sink_for(load_catalog(sys.argv[1]))
for i in range(int(sys.argv[3])):
    sink.append(AuditEvent(id=f"{sys.argv[2]}-{i}", phase="outcome", time="t", principal="p",
        subject="p", source="cli", action="commit", catalog="c", table="db.t",
        result="refused", summary="x" * 3000))
"""


def appended_by_two_processes(catalog_uri: str, count: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, catalog_uri, name, str(count)],
            cwd=REPO,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p1", "p2")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    return [f"{name}-{i}" for name in ("p1", "p2") for i in range(count)]


def test_two_processes_appending_to_a_folder_log_keep_every_line(tmp_path: Path) -> None:
    catalog = folder_catalog(tmp_path)
    expected = appended_by_two_processes(str(tmp_path), 300)
    sink = audit_sink_for(catalog)
    assert sink is not None
    ids = [e.id for e in sink.read()]
    assert sorted(ids) == sorted(expected) and isinstance(sink, FileAuditLog)
    assert sink.skipped == 0
    for name in ("p1", "p2"):  # each process's lines in the order it wrote them
        assert [i for i in ids if i.startswith(name)] == [f"{name}-{n}" for n in range(300)]


def test_two_processes_appending_to_a_sqlite_log_keep_every_row(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path)
    expected = appended_by_two_processes(f"sqlite:///{catalog.path}", 100)
    sink = audit_sink_for(catalog)
    assert sink is not None and sorted(e.id for e in sink.read()) == sorted(expected)


def test_two_processes_appending_to_a_postgres_log_keep_every_row(
    pg_server: PgServer, tmp_path: Path
) -> None:
    catalog = postgres_catalog(pg_server, tmp_path)
    uri = with_password(pg_server, catalog)
    expected = appended_by_two_processes(uri, 100)
    sink = audit_sink_for(catalog)
    assert sink is not None and sorted(e.id for e in sink.read()) == sorted(expected)


def with_password(pg_server: PgServer, catalog: SqlCatalog) -> str:
    return pg_server.uri(catalog.uri.rsplit("/", 1)[1])


# --- what a guarded catalog's commits leave in each store ---------------------------------


@pytest.fixture(params=["sqlite", "postgres", "folder"])
def any_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> SqlCatalog | FilesystemCatalog:
    if request.param == "sqlite":
        return sqlite_catalog(tmp_path)
    if request.param == "postgres":
        return postgres_catalog(request.getfixturevalue("pg_server"), tmp_path)
    return folder_catalog(tmp_path)


def test_a_commit_records_intent_then_committed(any_catalog: SqlCatalog) -> None:
    sink = audit_sink_for(any_catalog)
    guarded = guard(any_catalog, ANN, POLICY, name="c", audit=sink, source="app")
    table = guarded.load_table(T)
    before = table.metadata_location
    after = table.update_schema().add_column("z", "string").commit()
    assert sink is not None
    events = list(sink.read())
    assert [(e.phase, e.result) for e in events] == [
        ("intent", "started"),
        ("outcome", "committed"),
    ]
    assert events[0].id == events[1].id
    assert {e.principal for e in events} == {"Ann (u-ann)"} and {e.source for e in events} == {
        "app"
    }
    [change] = audit_changes(events)
    assert (change.result, change.table, change.metadata_before, change.metadata_after) == (
        "committed",
        "db.t",
        before,
        after.metadata_location,
    )
    assert "+z" in change.summary  # the schema change the commit made, by name


def test_a_lost_swap_records_a_conflict(any_catalog: SqlCatalog) -> None:
    """Two writers loaded the same version; the second one's swap finds the first one's."""
    sink = audit_sink_for(any_catalog)
    first = guard(any_catalog, ANN, POLICY, name="c", audit=sink)
    second = guard(any_catalog, ANN, POLICY, name="c", audit=sink)
    stale = second.load_table(T)
    first.load_table(T).update_schema().add_column("a", "string").commit()
    with pytest.raises(CommitConflict):
        second.commit_metadata(
            T, stale.metadata_location, stale.metadata, encode_metadata(stale.metadata)
        )
    assert sink is not None
    changes = audit_changes(sink.read())
    assert [c.result for c in changes] == ["conflict", "committed"]
    assert changes[0].metadata_before == stale.metadata_location
    assert changes[0].metadata_after is None


def test_a_refused_commit_is_recorded_as_refused(any_catalog: SqlCatalog) -> None:
    sink = audit_sink_for(any_catalog)
    table = guard(any_catalog, BOB, POLICY, name="c", audit=sink).load_table(T)
    with pytest.raises(Forbidden):
        table.update_schema().add_column("z", "string").commit()
    assert sink is not None
    [change] = audit_changes(sink.read())
    assert (change.result, change.principal, change.table) == ("refused", "Bob (u-bob)", "db.t")
    assert "owner" in change.summary


def test_refusal_on_a_read_only_catalog_stays_a_refusal(tmp_path: Path) -> None:
    catalog = sqlite_catalog(tmp_path, read_only=True)
    table = guard(catalog, BOB, POLICY, name="c", audit=audit_sink_for(catalog)).load_table(T)
    with pytest.raises(Forbidden):
        table.update_schema().add_column("z", "string").commit()


def test_joined_changes_filter_by_table_person_action_and_time() -> None:
    events = [
        event("1", "intent", "started", time="2026-01-01T00:00:00.000Z"),
        event("1", "outcome", "committed", time="2026-01-01T00:00:01.000Z"),
        event("2", "intent", "started", time="2026-01-02T00:00:00.000Z", table="db.u"),
        event(
            "3",
            "outcome",
            "refused",
            time="2026-01-03T00:00:00.000Z",
            principal="Bob (u-bob)",
            subject="u-bob",
        ),
        event("4", "intent", "started", time="2026-01-04T00:00:00.000Z", action="job:x"),
        event("4", "outcome", "failed", time="2026-01-04T00:01:00.000Z", summary="boom"),
    ]
    same_time = [event(str(i), "outcome", "refused") for i in range(5)]
    assert [c.id for c in audit_changes(same_time)] == ["4", "3", "2", "1", "0"]
    changes = audit_changes(events)
    assert [(c.id, c.result) for c in changes] == [
        ("4", "failed"),
        ("3", "refused"),
        ("2", "unknown"),
        ("1", "committed"),
    ]
    assert changes[0].reason == "boom" and changes[0].ended == "2026-01-04T00:01:00.000Z"
    ids = lambda found: [c.id for c in found]  # noqa: E731
    assert ids(select_changes(changes, table="db.u")) == ["2"]
    assert ids(select_changes(changes, principal="bob")) == ["3"]
    assert ids(select_changes(changes, principal="u-bob")) == ["3"]
    assert ids(select_changes(changes, principal="Bob (u-bob)")) == ["3"]
    assert ids(select_changes(changes, principal="bo")) == []  # a whole name, not a part
    assert ids(select_changes(changes, action="job")) == ["4"]
    jan_2 = int(dt.datetime(2026, 1, 2, tzinfo=dt.UTC).timestamp() * 1000)
    assert ids(select_changes(changes, since_ms=jan_2)) == ["4", "3", "2"]


def test_object_store_warehouse_keeps_one_object_per_event(s3_server: Any) -> None:
    """On S3 (a moto server) a guarded commit leaves two objects at the warehouse's root."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server.endpoint)
    client.create_bucket(Bucket="audited")
    location = "s3://audited/wh/db/t"
    body = json.dumps(table_json(2, location)).encode()
    client.put_object(Bucket="audited", Key="wh/db/t/metadata/v1.metadata.json", Body=body)
    client.put_object(Bucket="audited", Key="wh/db/t/metadata/version-hint.text", Body=b"1")
    catalog = load_catalog("s3://audited/wh", io=FileIO(s3_server.properties))
    sink = audit_sink_for(catalog)
    assert isinstance(sink, ObjectAuditLog)
    table = guard(catalog, ANN, POLICY, name="c", audit=sink).load_table(T)
    table.update_schema().add_column("z", "string").commit()
    with pytest.raises(Forbidden):
        guard(catalog, BOB, POLICY, name="c", audit=sink).commit_metadata(
            T, location + "/metadata/v2.metadata.json", table.metadata, b"{}"
        )
    roots = [
        o["Key"]
        for o in client.list_objects_v2(Bucket="audited", Prefix="wh/")["Contents"]
        if o["Key"].count("/") == 1
    ]
    assert len(roots) == 3 and all(k.startswith("wh/icecore-audit.") for k in roots)
    changes = audit_changes(sink.read())
    assert [(c.result, c.principal) for c in changes] == [
        ("refused", "Bob (u-bob)"),
        ("committed", "Ann (u-ann)"),
    ]
    assert changes[1].metadata_after == "s3://audited/wh/db/t/metadata/v2.metadata.json"
    assert [str(t) for t in catalog.list_tables()] == ["db.t"]  # no namespace from the log
    client.put_object(Bucket="audited", Key="wh/icecore-audit.0.x.intent.json", Body=b"junk")
    assert len(sink.read()) == 3 and sink.skipped == 1


@pytest.mark.spark
def test_spark_sees_no_namespace_in_the_logs(spark: Any, tmp_path: Path) -> None:
    """Spark's HadoopCatalog and JdbcCatalog list the same namespaces and tables with a log."""
    from pipeline.spark import spark_catalog_conf

    folder = folder_catalog(tmp_path / "fs")
    sql = sqlite_catalog(tmp_path / "sql", name="audit_sql")  # a name no other test's Spark uses
    for catalog in (folder, sql):
        guard(catalog, ANN, POLICY, name="c", audit=audit_sink_for(catalog)).load_table(
            T
        ).update_schema().add_column("z", "string").commit()
    assert (tmp_path / "fs" / AUDIT_FILE).is_file()
    settings = spark_catalog_conf("audit_fs", folder.iceberg_catalog()[1])
    name, properties = sql.iceberg_catalog()
    settings |= spark_catalog_conf(f"{name}", properties)
    for key, value in settings.items():
        spark.conf.set(key, value)
    for spark_name in ("audit_fs", name):
        namespaces = [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {spark_name}").collect()]
        assert namespaces == ["db"], spark_name
        tables = [r.tableName for r in spark.sql(f"SHOW TABLES IN {spark_name}.db").collect()]
        assert tables == ["t"], spark_name
        columns = [r.col_name for r in spark.sql(f"DESCRIBE {spark_name}.db.t").collect()]
        assert "z" in columns
