"""The guarded catalog on a real SQLite catalog: listings, loads and commits per principal.

The catalog is a real JdbcCatalog-schema SQLite file holding hand-written tables (their
metadata files are real files; expected names, refs and ids are read from the hand-written
JSON of tests/icecore/refs/graph_table.py and tests/icecore/evolution/hand_table.py). The
audit sink is a list in memory (memory_sink.py beside this file): it implements Icecore's
own AuditSink interface, so no Iceberg part is stood in for.
"""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from icecore.access import Grant, Policy, Principal, Role
from icecore.audit import AuditEvent
from icecore.catalog import load_catalog
from icecore.catalog.guarded import GuardedCatalog, change_summary, commit_all, guard
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin, create_sqlite_catalog
from icecore.errors import CommitConflict, Forbidden, IcecoreError, NotFound, ValidationError
from icecore.export import check_output, protected_paths
from icecore.identifier import TableIdentifier
from icecore.metadata import parse_metadata_dict
from icecore.metadata.builder import encode_metadata
from icecore.server.commit import supports_transactions
from icecore.table_data import access_of
from tests.icecore.catalog.memory_sink import BrokenSink, MemorySink
from tests.icecore.evolution.hand_table import table_json, write_table
from tests.icecore.refs.graph_table import S3, graph_json

CATALOG = "prod"
ORDERS = TableIdentifier(("sales",), "orders")  # the graph table: snapshots and refs
CUSTOMERS = TableIdentifier(("sales", "eu"), "customers")
PEOPLE = TableIdentifier(("hr",), "people")
GHOST = TableIdentifier(("hr",), "ghost")  # never created

POLICY = Policy(
    (
        Grant("analysts", Role.READER, ("sales.*",), frozenset({"name"})),
        Grant("auditors", Role.VIEWER, ("prod::*",)),
        Grant("sales-owners", Role.OWNER, ("sales.*",)),
        Grant("eu-desk", Role.VIEWER, ("sales.eu.customers",)),
        Grant("finance-admins", Role.ADMIN, ("finance.*",)),
        Grant("q1-admins", Role.ADMIN, ("finance.q1.*",)),
        Grant("elsewhere", Role.ADMIN, ("dev::*",)),
    )
)


def who(*groups: str) -> Principal:
    return Principal(subject="sub-1", name="Pat", groups=groups, source="oidc")


def _write(root: Path, ident: TableIdentifier, raw: dict[str, Any]) -> str:
    folder = root.joinpath(*ident.namespace, ident.name)
    (folder / "metadata").mkdir(parents=True)
    raw["location"] = str(folder)
    first = folder / "metadata" / "00000-aaaa.metadata.json"
    first.write_text(json.dumps(raw))
    return str(first)


@pytest.fixture
def sql(tmp_path: Path) -> SqlCatalog:
    """sales.orders (snapshots, refs), sales.eu.customers, hr.people; empty finance(.q1)."""
    catalog = SqlCatalog(create_sqlite_catalog(tmp_path / "catalog.db"))
    admin = SqlCatalogAdmin(catalog)
    for ns in (("sales",), ("sales", "eu"), ("hr",), ("finance",), ("finance", "q1")):
        admin.create_namespace(ns, {})
    admin.register_table(ORDERS, _write(tmp_path, ORDERS, graph_json("")))
    admin.register_table(CUSTOMERS, _write(tmp_path, CUSTOMERS, table_json(2, "")))
    admin.register_table(PEOPLE, _write(tmp_path, PEOPLE, table_json(2, "")))
    return catalog


def as_(sql: SqlCatalog, *groups: str, sink: MemorySink | None = None) -> GuardedCatalog:
    return guard(sql, who(*groups), POLICY, name=CATALOG, audit=sink, source="app")


def current(sql: SqlCatalog, ident: TableIdentifier) -> str:
    return sql.metadata_location(ident)


# Listings ---------------------------------------------------------------------------------


def test_listings_show_only_what_a_grant_reaches(sql: SqlCatalog) -> None:
    analysts = as_(sql, "analysts")
    assert analysts.list_tables() == [ORDERS, CUSTOMERS]  # sorted: ('sales',) first
    assert analysts.list_tables(("hr",)) == []
    assert analysts.list_namespaces() == [("sales",), ("sales", "eu")]

    auditors = as_(sql, "auditors")  # prod::* reaches every table and namespace of prod
    assert auditors.list_tables() == sql.list_tables()
    assert auditors.list_namespaces() == sql.list_namespaces()

    # one table granted: its namespace and the namespaces above it, nothing beside it
    desk = as_(sql, "eu-desk")
    assert desk.list_tables() == [CUSTOMERS]
    assert desk.list_namespaces() == [("sales",), ("sales", "eu")]

    # a namespace-wide grant shows its (empty) namespace
    finance = as_(sql, "finance-admins")
    assert finance.list_tables() == []
    assert finance.list_namespaces() == [("finance",), ("finance", "q1")]
    # and a nested one shows the namespace above it, for the tree to reach it
    assert as_(sql, "q1-admins").list_namespaces() == [("finance",), ("finance", "q1")]
    assert as_(sql, "q1-admins").namespace_role(("finance",)) is Role.NONE

    for nobody in (as_(sql), as_(sql, "elsewhere"), as_(sql, "Analysts")):
        assert nobody.list_tables() == [] and nobody.list_namespaces() == []


def test_no_policy_is_full_access(sql: SqlCatalog) -> None:
    sink = MemorySink()
    everyone = guard(sql, who(), None, name=CATALOG, audit=sink, source="cli")
    assert everyone.list_tables() == sql.list_tables()
    assert everyone.list_namespaces() == sql.list_namespaces()
    assert everyone.namespace_role(("hr",)) is Role.ADMIN
    table = everyone.load_table(PEOPLE)
    assert access_of(table).role is Role.ADMIN and access_of(table).mask == frozenset()
    committed = table.set_properties(touched="yes")
    assert current(sql, PEOPLE) == committed.metadata_location
    # the audit still applies where there are no grants
    assert [(e.phase, e.result, e.source) for e in sink.events] == [
        ("intent", "started", "cli"),
        ("outcome", "committed", "cli"),
    ]


# Loads ------------------------------------------------------------------------------------


def test_refusals_read_the_same_whether_the_table_exists_or_not(sql: SqlCatalog) -> None:
    analysts = as_(sql, "analysts")
    messages = []
    for ident in (PEOPLE, GHOST):
        for attempt in (analysts.load_table, analysts.metadata_location):
            with pytest.raises(Forbidden) as e:
                attempt(ident)
            messages.append(str(e.value).replace(str(ident), "TABLE"))
    assert len(set(messages)) == 1, messages
    # a string name is refused the same way
    with pytest.raises(Forbidden):
        analysts.load_table("hr.people")
    # a principal with the grant gets NotFound for the missing table, as the catalog says
    with pytest.raises(NotFound):
        as_(sql, "auditors").load_table(GHOST)


def test_a_loaded_table_carries_the_principals_access(sql: SqlCatalog) -> None:
    table = as_(sql, "analysts").load_table(ORDERS)
    assert table.metadata_location == current(sql, ORDERS)
    assert access_of(table).role is Role.READER
    assert access_of(table).masks("name") and not access_of(table).masks("id")
    assert access_of(as_(sql, "auditors").load_table(ORDERS)).role is Role.VIEWER
    # refresh goes through the guard again
    assert access_of(table.refresh()).role is Role.READER
    assert table.refresh().catalog is table.catalog


# Commits ----------------------------------------------------------------------------------


def test_a_reader_cannot_commit_and_the_refusal_is_recorded(sql: SqlCatalog) -> None:
    sink = MemorySink()
    table = as_(sql, "analysts", sink=sink).load_table(ORDERS)
    before = current(sql, ORDERS)
    files = sorted(Path(before).parent.iterdir())
    with pytest.raises(Forbidden, match="needs the owner role and you have the reader role"):
        table.set_properties(a="b")
    with pytest.raises(Forbidden):
        table.manage_snapshots().create_tag("mine").commit()
    assert current(sql, ORDERS) == before
    assert sorted(Path(before).parent.iterdir()) == files, "no metadata file was written"
    assert [(e.phase, e.result, e.action, e.table, e.subject) for e in sink.events] == [
        ("outcome", "refused", "commit", "sales.orders", "sub-1"),  # as a done commit files
    ] * 2
    assert sink.events[0].principal == "Pat (sub-1)" and sink.events[0].catalog == CATALOG
    assert sink.events[0].id != sink.events[1].id


def test_a_commit_to_an_invisible_table_is_refused_and_recorded(sql: SqlCatalog) -> None:
    sink = MemorySink()
    guarded = as_(sql, "analysts", sink=sink)
    raw = sql.load_table(PEOPLE)
    before = raw.metadata_location
    with pytest.raises(Forbidden, match="you have no grant"):
        guarded.commit_metadata(PEOPLE, before, raw.metadata, encode_metadata(raw.metadata))
    assert current(sql, PEOPLE) == before
    assert [(e.result, e.action, e.table) for e in sink.events] == [
        ("refused", "commit", "hr.people")
    ]


def test_an_owner_commits_and_both_phases_are_recorded(sql: SqlCatalog) -> None:
    sink = MemorySink()
    table = as_(sql, "sales-owners", sink=sink).load_table(ORDERS)
    before = table.metadata_location
    committed = table.set_properties(a="b")
    assert current(sql, ORDERS) == committed.metadata_location != before
    assert committed.metadata.properties["a"] == "b"
    intent, outcome = sink.events
    assert (intent.phase, intent.result, outcome.phase, outcome.result) == (
        "intent",
        "started",
        "outcome",
        "committed",
    )
    assert intent.id == outcome.id
    assert (intent.metadata_before, intent.metadata_after) == (before, None)
    assert (outcome.metadata_before, outcome.metadata_after) == (
        before,
        committed.metadata_location,
    )
    assert intent.summary == "properties: a"
    assert {e.table for e in sink.events} == {"sales.orders"}
    assert {e.principal for e in sink.events} == {"Pat (sub-1)"}
    # the committed table is still bound to the guard: its next commit is checked and recorded
    assert committed.catalog is table.catalog
    again = committed.manage_snapshots().create_tag("v2", S3).commit()
    assert again.catalog is table.catalog
    assert [e.summary for e in sink.events if e.phase == "intent"][1] == f"tag v2 created at {S3}"
    assert len(sink.events) == 4


def test_change_summary_of_real_commits(sql: SqlCatalog) -> None:
    sink = MemorySink()
    table = as_(sql, "sales-owners", sink=sink).load_table(ORDERS)
    with table.update_schema() as update:
        update.add_column("note", "string")
    after_schema = table.refresh()
    after_schema.manage_snapshots().remove_branch("audit").commit()
    summaries = [e.summary for e in sink.events if e.phase == "intent"]
    # hand_table's schema is id 0; the new one is the next id
    assert summaries == ["schema 0 -> 1 (+note)", "branch audit dropped"]


def test_change_summary_of_a_new_snapshot_and_everything_at_once() -> None:
    before_raw = graph_json("/w/sales/orders")
    after_raw = copy.deepcopy(before_raw)
    after_raw["snapshots"].append(
        {
            "snapshot-id": 108,
            "parent-snapshot-id": S3,
            "sequence-number": 8,
            "timestamp-ms": 5000,
            "summary": {"operation": "overwrite"},
            "manifest-list": "/w/sales/orders/metadata/snap-108.avro",
            "schema-id": 0,
        }
    )
    after_raw["last-sequence-number"] = 8
    after_raw["snapshots"] = [s for s in after_raw["snapshots"] if s["snapshot-id"] != 106]
    after_raw["current-snapshot-id"] = 108
    after_raw["refs"]["main"] = {"snapshot-id": 108, "type": "branch"}
    after_raw["refs"]["v2"] = {"snapshot-id": S3, "type": "tag"}
    del after_raw["refs"]["audit"]
    after_raw["refs"]["v1"]["max-ref-age-ms"] = 1000
    after_raw["properties"]["owner"] = "someone else"
    after_raw["properties"]["new.key"] = "1"
    before = parse_metadata_dict(before_raw, "/w/a.metadata.json")
    after = parse_metadata_dict(after_raw, "/w/b.metadata.json")
    assert change_summary(before, after).splitlines() == [
        "snapshot 108 added (overwrite)",
        "1 snapshot(s) expired",
        "branch audit dropped",
        f"branch main: {S3} -> 108",
        "tag v1: retention changed",
        f"tag v2 created at {S3}",
        "properties: new.key, owner",
    ]
    assert change_summary(before, before) == "metadata rewritten"
    assert change_summary(None, after) == "new metadata (format v2)"


def test_a_lost_swap_is_recorded_as_a_conflict(sql: SqlCatalog) -> None:
    sink = MemorySink()
    guarded = as_(sql, "sales-owners", sink=sink)
    base = guarded.load_table(ORDERS)
    payload = encode_metadata(base.metadata)
    first = guarded.commit_metadata(ORDERS, base.metadata_location, base.metadata, payload)
    with pytest.raises(CommitConflict):
        guarded.commit_metadata(ORDERS, base.metadata_location, base.metadata, payload)
    assert current(sql, ORDERS) == first
    results = [(e.phase, e.result) for e in sink.events]
    assert results == [
        ("intent", "started"),
        ("outcome", "committed"),
        ("intent", "started"),
        ("outcome", "conflict"),
    ]
    assert sink.events[2].id == sink.events[3].id != sink.events[0].id
    assert sink.events[3].metadata_after is None


def test_an_unwritable_intent_stops_the_commit(sql: SqlCatalog) -> None:
    table = as_(sql, "sales-owners", sink=BrokenSink("intent")).load_table(ORDERS)
    before = current(sql, ORDERS)
    with pytest.raises(IcecoreError, match="disk is full"):
        table.set_properties(a="b")
    assert current(sql, ORDERS) == before


def test_an_unwritable_outcome_does_not_undo_or_hide_a_commit(
    sql: SqlCatalog, caplog: pytest.LogCaptureFixture
) -> None:
    sink = BrokenSink("outcome")
    table = as_(sql, "sales-owners", sink=sink).load_table(ORDERS)
    with caplog.at_level(logging.WARNING, logger="icecore.catalog.guarded"):
        committed = table.set_properties(a="b")
    assert current(sql, ORDERS) == committed.metadata_location
    # the intent is there (it reads as unknown) and the lost outcome is reported
    assert [e.phase for e in sink.events] == ["intent"]
    assert sink.events[0].id in caplog.text and "unknown" in caplog.text
    # a refusal stays a refusal when its record cannot be written
    with pytest.raises(Forbidden):
        as_(sql, "analysts", sink=sink).load_table(ORDERS).set_properties(a="c")


def test_audit_events_bound_what_a_visitor_supplies(sql: SqlCatalog) -> None:
    sink = MemorySink()
    huge = TableIdentifier(("x" * 5000,), "y")
    with pytest.raises(Forbidden) as e:
        as_(sql, "analysts", sink=sink).require(huge, Role.ADMIN, "drop it")
    assert len(str(e.value)) < 500
    assert len(sink.events[0].table) <= 1000 and len(sink.events[0].summary) <= 2000


# Several tables at once --------------------------------------------------------------------


def _same(table: Any) -> tuple[TableIdentifier, str, Any, bytes]:
    md = table.metadata
    return (table.identifier, table.metadata_location, md, encode_metadata(md))


def test_commit_all_checks_every_table_before_writing_any(sql: SqlCatalog) -> None:
    sink = MemorySink()
    owners = as_(sql, "sales-owners", sink=sink)
    orders, customers = owners.load_table(ORDERS), owners.load_table(CUSTOMERS)
    people = sql.load_table(PEOPLE)
    before = {i: current(sql, i) for i in (ORDERS, CUSTOMERS, PEOPLE)}
    with pytest.raises(Forbidden):
        commit_all(owners, [_same(orders), _same(customers), _same(people)])
    assert {i: current(sql, i) for i in before} == before
    assert [(e.result, e.table) for e in sink.events] == [("refused", "hr.people")]

    sink.events.clear()
    locations = commit_all(owners, [_same(orders), _same(customers)])
    assert [current(sql, ORDERS), current(sql, CUSTOMERS)] == locations
    assert current(sql, PEOPLE) == before[PEOPLE]
    by_id: dict[str, list[AuditEvent]] = {}
    for event in sink.events:
        by_id.setdefault(event.id, []).append(event)
    assert sorted(
        (ev[0].table, ev[0].phase, ev[1].phase, ev[1].result, ev[1].metadata_after)
        for ev in by_id.values()
    ) == sorted(
        [
            ("sales.eu.customers", "intent", "outcome", "committed", locations[1]),
            ("sales.orders", "intent", "outcome", "committed", locations[0]),
        ]
    )


def test_commit_all_records_a_conflict_for_every_table(sql: SqlCatalog) -> None:
    sink = MemorySink()
    owners = as_(sql, "sales-owners", sink=sink)
    orders, customers = owners.load_table(ORDERS), owners.load_table(CUSTOMERS)
    moved = orders.set_properties(a="b")  # orders moves on: the pair's base is stale
    sink.events.clear()
    with pytest.raises(CommitConflict):
        commit_all(owners, [_same(orders), _same(customers)])
    assert current(sql, ORDERS) == moved.metadata_location
    assert current(sql, CUSTOMERS) == customers.metadata_location
    outcomes = sorted((e.table, e.result) for e in sink.events if e.phase == "outcome")
    assert outcomes == [("sales.eu.customers", "conflict"), ("sales.orders", "conflict")]


def test_a_sqlite_row_is_what_the_guard_commits(sql: SqlCatalog) -> None:
    """The commits above are read back from the database itself, not through Icecore."""
    committed = as_(sql, "sales-owners").load_table(ORDERS).set_properties(a="b")
    with sqlite3.connect(sql.path) as conn:
        (location,) = conn.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_name = 'orders'"
        ).fetchone()
    assert location == committed.metadata_location


def test_an_export_through_the_guard_still_protects_every_table_and_the_database(
    sql: SqlCatalog,
) -> None:
    table = as_(sql, "analysts").load_table(ORDERS)
    dirs, files = protected_paths(table)
    assert str(sql.path) in files
    people = Path(sql.metadata_location(PEOPLE)).parent.parent  # a table the reader cannot see
    assert str(people) in dirs
    for target in (sql.path, people / "data" / "x.parquet"):
        with pytest.raises(ValidationError):
            check_output(target, dirs, files, force=True)


def test_the_guard_offers_several_table_commits_only_where_the_catalog_does(
    sql: SqlCatalog, tmp_path: Path
) -> None:
    sink = MemorySink()
    owners = as_(sql, "sales-owners", sink=sink)
    assert supports_transactions(sql) and supports_transactions(owners)
    folder = tmp_path / "folder-warehouse"
    write_table(folder, 2)
    assert not supports_transactions(guard(load_catalog(folder), who(), POLICY, name=CATALOG))
    orders, customers = owners.load_table(ORDERS), owners.load_table(CUSTOMERS)
    people = sql.load_table(PEOPLE)
    with pytest.raises(Forbidden):
        owners.commit_metadata_all([_same(orders), _same(people)])  # type: ignore[attr-defined]
    assert current(sql, ORDERS) == orders.metadata_location
    locations = owners.commit_metadata_all([_same(orders), _same(customers)])  # type: ignore[attr-defined]
    assert [current(sql, ORDERS), current(sql, CUSTOMERS)] == locations
    assert sorted(e.result for e in sink.events if e.phase == "outcome") == [
        "committed",
        "committed",
        "refused",
    ]


def test_bind_puts_a_shared_table_under_one_sessions_guard(sql: SqlCatalog) -> None:
    """A table loaded once for every session is bound to each session's guard, checked."""
    shared = sql.load_table(ORDERS)
    analysts, auditors = as_(sql, "analysts"), as_(sql, "auditors")
    mine, theirs = analysts.bind(shared), auditors.bind(shared)
    assert (access_of(mine).role, access_of(theirs).role) == (Role.READER, Role.VIEWER)
    assert access_of(shared).role is Role.ADMIN  # the unguarded catalog's own answer
    assert mine.metadata_location == shared.metadata_location and mine.catalog is analysts
    with pytest.raises(Forbidden):
        analysts.bind(sql.load_table(PEOPLE))
    with pytest.raises(Forbidden, match="owner"):
        theirs.set_properties(a="b")
