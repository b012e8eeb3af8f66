"""Every REST endpoint checks the principal's role (DESIGN.md "Identity, roles and audit").

The protocol's handlers (:class:`icecore.server.app.CatalogService`) over a real SQLite
catalog, called in this process as principals with the groups a verified token would give
(the tokens themselves are tested end to end in test_principals.py): listings show only
what a principal may see, with whole pages; loadTable needs viewer and vends storage keys
only to an unmasked reader; commits need owner and go through the guarded catalog's audited
commit path; create, drop, rename, register and purge need admin and are audited; a table
without a grant is refused the same way whether or not it exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecore.access import Policy, Principal, parse_grants
from icecore.catalog.base import TableIdentifier
from icecore.catalog.sql import SqlCatalog, create_sqlite_catalog
from icecore.errors import Forbidden, NotFound, ValidationError
from icecore.server.app import Call, CatalogService
from icecore.server.errors import RestError
from icecore.server.principals import client_principal
from tests.icecore.catalog.memory_sink import MemorySink

GRANTS = [
    {"group": "analysts", "role": "reader", "tables": ["sales.orders", "ops.*"]},
    {"group": "analysts", "role": "reader", "tables": ["sales.customers"], "mask": ["email"]},
    {"group": "sales-owners", "role": "owner", "tables": ["sales.*"]},
    {"group": "viewers", "role": "viewer", "tables": ["sales.*"]},
    {"group": "admin-client", "role": "admin", "tables": ["*"]},
]
ANA = Principal("ana-sub", "Ana Lytic", ("analysts",), "oidc")
OWEN = Principal("owen-sub", "Owen Sales", ("sales-owners",), "oidc")
VIC = Principal("vic-sub", "Vic Viewer", ("viewers",), "oidc")
NOBODY = Principal("eve-sub", "Eve", ("strangers",), "oidc")
ADMIN = client_principal("admin-client")
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "email", "required": False, "type": "string"},
    ],
}
TABLES = {
    "sales": ["audit_log", "customers", "orders"],
    "ops": ["jobs", "runs"],
    "secret": ["keys"],
}
VENDED = {"s3.region": "eu-test-1"}


@pytest.fixture
def sink() -> MemorySink:
    return MemorySink()


@pytest.fixture
def service(tmp_path: Path, sink: MemorySink) -> CatalogService:
    """The handlers over a fresh SQLite catalog holding :data:`TABLES`, made by the admin."""
    catalog = SqlCatalog(create_sqlite_catalog(tmp_path / "catalog.db"))
    svc = CatalogService(
        catalog,
        vended=VENDED,
        policy=Policy(parse_grants(GRANTS, "test")),
        name="lake",
        audit=sink,
    )
    for ns, tables in TABLES.items():
        svc.create_namespace(_call(ADMIN, body={"namespace": [ns]}))
        for name in tables:
            svc.create_table(_call(ADMIN, namespace=ns, body={"name": name, "schema": SCHEMA}))
    sink.events.clear()
    return svc


def _call(
    who: Principal,
    *,
    namespace: str | None = None,
    table: str | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
    vend: bool = False,
) -> Call:
    params = {k: v for k, v in (("namespace", namespace), ("table", table)) if v is not None}
    return Call(params, query or {}, body, vend=vend, principal=who)


def _ident(dotted: str) -> TableIdentifier:
    return TableIdentifier.parse(dotted)


def _pages(fetch: Any, key: str) -> list[list[Any]]:
    """Every page of a listing, following ``next-page-token`` with one item per page."""
    pages: list[list[Any]] = []
    query = {"pageSize": "1"}
    while True:
        answer = fetch(query)
        pages.append(answer[key])
        token = answer["next-page-token"]
        if token is None:
            return pages
        query = {"pageSize": "1", "pageToken": token}


def _set_property(value: str) -> dict[str, Any]:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": value}}]}


def _property(service: CatalogService, dotted: str) -> str | None:
    return service.catalog.load_table(_ident(dotted)).metadata.properties.get("k")


# Listings -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "namespaces"),
    [(ANA, ["ops", "sales"]), (VIC, ["sales"]), (NOBODY, []), (ADMIN, ["ops", "sales", "secret"])],
)
def test_namespaces_listed_are_those_holding_a_visible_table_in_whole_pages(
    service: CatalogService, who: Principal, namespaces: list[str]
) -> None:
    pages = _pages(lambda q: service.list_namespaces(_call(who, query=q)), "namespaces")
    assert [ns for page in pages for ns in page] == [[n] for n in namespaces]
    assert all(len(page) == 1 for page in pages if namespaces)


def test_tables_listed_are_the_visible_ones_in_whole_pages(service: CatalogService) -> None:
    def names(who: Principal, ns: str) -> list[str]:
        pages = _pages(
            lambda q: service.list_tables(_call(who, namespace=ns, query=q)), "identifiers"
        )
        assert all(len(page) == 1 for page in pages)
        return [t["name"] for page in pages for t in page]

    # audit_log sorts first and is hidden from ana: her first page is still one table.
    assert names(ANA, "sales") == ["customers", "orders"]
    assert names(OWEN, "sales") == TABLES["sales"]
    assert names(ADMIN, "secret") == ["keys"]


@pytest.mark.parametrize("namespace", ["secret", "no_such_namespace"])
def test_a_namespace_without_a_grant_is_refused_whether_or_not_it_exists(
    service: CatalogService, namespace: str
) -> None:
    for handler in (service.load_namespace, service.namespace_exists, service.list_tables):
        with pytest.raises(Forbidden, match=f"cannot see namespace {namespace}:"):
            handler(_call(VIC, namespace=namespace))
    with pytest.raises(Forbidden):
        service.list_namespaces(_call(VIC, query={"parent": namespace}))


def test_a_visible_namespace_loads(service: CatalogService) -> None:
    assert service.load_namespace(_call(VIC, namespace="sales"))["namespace"] == ["sales"]
    assert service.namespace_exists(_call(VIC, namespace="sales")).status_code == 204


# Loading and vended credentials ---------------------------------------------------------------


@pytest.mark.parametrize("table", ["secret.keys", "secret.missing", "ops.jobs"])
def test_a_table_without_a_grant_is_refused_the_same_whether_or_not_it_exists(
    service: CatalogService, table: str
) -> None:
    ns, name = table.split(".")
    messages = []
    for handler in (service.load_table, service.table_exists, service.report_metrics):
        with pytest.raises(Forbidden) as refused:
            handler(_call(VIC, namespace=ns, table=name))
        messages.append(str(refused.value))
    assert (
        messages
        == [
            f"You cannot see its metadata on {table}: that needs the viewer role and you have no "
            "grant; ask an admin of this deployment for a grant."
        ]
        * 3
    )


def test_a_viewer_loads_and_probes_and_a_missing_granted_table_is_404(
    service: CatalogService,
) -> None:
    loaded = service.load_table(_call(VIC, namespace="sales", table="orders"))
    assert loaded["metadata-location"] == service.catalog.metadata_location(_ident("sales.orders"))
    assert service.table_exists(_call(VIC, namespace="sales", table="orders")).status_code == 204
    report = {
        "report-type": "commit-report",
        "table-name": "sales.orders",
        "snapshot-id": 1,
        "sequence-number": 1,
        "operation": "append",
        "metrics": {},
    }
    assert (
        service.report_metrics(
            _call(VIC, namespace="sales", table="orders", body=report)
        ).status_code
        == 204
    )
    with pytest.raises(RestError) as missing:
        service.load_table(_call(VIC, namespace="sales", table="nope"))
    assert missing.value.code == 404


def test_a_name_under_a_visible_table_is_404_so_spark_finds_its_metadata_tables(
    service: CatalogService,
) -> None:
    # ana's grant names sales.orders alone; Spark asks for sales.orders.snapshots as a table
    # first and falls back to the metadata table only on NoSuchTable.
    for handler in (service.load_table, service.table_exists):
        with pytest.raises(RestError) as missing:
            handler(_call(ANA, namespace="sales\x1forders", table="snapshots"))
        assert (missing.value.code, missing.value.type) == (404, "NoSuchTableException")
    # Under a table she may not see, it stays a refusal.
    with pytest.raises(Forbidden):
        service.load_table(_call(ANA, namespace="sales\x1faudit_log", table="snapshots"))


@pytest.mark.parametrize(
    ("who", "table", "vended"),
    [
        (ANA, "sales.orders", True),  # reader
        (ANA, "sales.customers", False),  # reader with a mask: metadata only
        (VIC, "sales.orders", False),  # viewer
        (OWEN, "sales.customers", True),
        (ADMIN, "secret.keys", True),
    ],
)
def test_vended_credentials_only_for_an_unmasked_reader_and_up(
    service: CatalogService, who: Principal, table: str, vended: bool
) -> None:
    ns, name = table.split(".")
    asked = service.load_table(_call(who, namespace=ns, table=name, vend=True))
    assert asked["config"] == (VENDED if vended else {})
    assert service.load_table(_call(who, namespace=ns, table=name))["config"] == {}


# Commits --------------------------------------------------------------------------------------


def test_an_owner_commits_through_the_audited_commit_path(
    service: CatalogService, sink: MemorySink
) -> None:
    before = service.catalog.metadata_location(_ident("sales.orders"))
    answer = service.commit(
        _call(OWEN, namespace="sales", table="orders", body=_set_property("owen"))
    )
    assert _property(service, "sales.orders") == "owen"
    assert answer["metadata-location"] == service.catalog.metadata_location(_ident("sales.orders"))
    intent, outcome = sink.events
    assert (intent.phase, outcome.phase) == ("intent", "outcome")
    assert intent.id == outcome.id
    assert (outcome.action, outcome.result, outcome.source) == ("commit", "committed", "rest")
    assert (outcome.principal, outcome.subject) == ("Owen Sales (owen-sub)", "owen-sub")
    assert (outcome.catalog, outcome.table) == ("lake", "sales.orders")
    assert outcome.metadata_before == before
    assert outcome.metadata_after == answer["metadata-location"]
    assert "properties: k" in intent.summary


@pytest.mark.parametrize(("who", "table"), [(ANA, "sales.orders"), (OWEN, "ops.jobs")])
def test_a_commit_below_owner_is_refused_audited_and_changes_nothing(
    service: CatalogService, sink: MemorySink, who: Principal, table: str
) -> None:
    ns, name = table.split(".")
    before = service.catalog.metadata_location(_ident(table))
    with pytest.raises(Forbidden, match="that needs the owner role"):
        service.commit(_call(who, namespace=ns, table=name, body=_set_property("x")))
    assert service.catalog.metadata_location(_ident(table)) == before
    [refused] = sink.events
    assert (refused.action, refused.result, refused.table) == ("commit", "refused", table)
    assert refused.subject == who.subject


def test_a_transaction_needs_owner_on_every_table(
    service: CatalogService, sink: MemorySink
) -> None:
    def change(table: str, value: str) -> dict[str, Any]:
        ns, name = table.split(".")
        return {"identifier": {"namespace": [ns], "name": name}, **_set_property(value)}

    mixed = {"table-changes": [change("sales.orders", "t1"), change("ops.jobs", "t1")]}
    with pytest.raises(Forbidden, match="ops.jobs"):
        service.commit_transaction(_call(OWEN, body=mixed))
    assert _property(service, "sales.orders") is None
    assert _property(service, "ops.jobs") is None
    # Refused before any table is read: no intent, one refusal naming the table.
    assert [(e.action, e.result, e.table) for e in sink.events] == [
        ("commit", "refused", "ops.jobs")
    ]

    owned = {"table-changes": [change("sales.orders", "t2"), change("sales.customers", "t2")]}
    assert service.commit_transaction(_call(OWEN, body=owned)).status_code == 204
    assert _property(service, "sales.orders") == _property(service, "sales.customers") == "t2"
    committed = [e for e in sink.events if e.result == "committed"]
    assert sorted(e.table for e in committed) == ["sales.customers", "sales.orders"]
    assert {e.principal for e in committed} == {OWEN.display}


# Administration -------------------------------------------------------------------------------


def _admin_calls(service: CatalogService, who: Principal) -> dict[str, Any]:
    """Every administrative call, as ``who``, on the sales namespace and its tables."""
    orders = {"namespace": ["sales"], "name": "orders"}
    location = service.catalog.metadata_location(_ident("sales.orders"))
    return {
        "create_namespace": lambda: service.create_namespace(
            _call(who, body={"namespace": ["sales", "sub"]})
        ),
        "drop_namespace": lambda: service.drop_namespace(_call(who, namespace="sales")),
        "update_namespace_properties": lambda: service.update_properties(
            _call(who, namespace="sales", body={"updates": {"owner": "x"}})
        ),
        "create": lambda: service.create_table(
            _call(who, namespace="sales", body={"name": "fresh", "schema": SCHEMA})
        ),
        "register": lambda: service.register_table(
            _call(
                who,
                namespace="sales",
                body={"name": "again", "metadata-location": location},
            )
        ),
        "drop": lambda: service.drop_table(_call(who, namespace="sales", table="orders")),
        "purge": lambda: service.drop_table(
            _call(who, namespace="sales", table="orders", query={"purgeRequested": "true"})
        ),
        "rename": lambda: service.rename_table(
            _call(who, body={"source": orders, "destination": {**orders, "name": "renamed"}})
        ),
    }


@pytest.mark.parametrize(
    "action",
    [
        "create_namespace",
        "drop_namespace",
        "update_namespace_properties",
        "create",
        "register",
        "drop",
        "purge",
        "rename",
    ],
)
def test_an_owner_is_refused_every_admin_call_and_it_is_audited(
    service: CatalogService, sink: MemorySink, action: str
) -> None:
    tables_before = sorted(map(str, service.catalog.list_tables()))
    with pytest.raises(Forbidden, match="admin role"):
        _admin_calls(service, OWEN)[action]()
    assert sorted(map(str, service.catalog.list_tables())) == tables_before
    assert service.backend.namespace_properties(("sales",)) == {}
    assert [(e.action, e.result, e.subject) for e in sink.events] == [
        (action, "refused", OWEN.subject)
    ]


def test_an_admin_creates_registers_renames_and_drops_audited(
    service: CatalogService, sink: MemorySink
) -> None:
    calls = _admin_calls(service, ADMIN)
    for action in ("create", "register", "rename", "update_namespace_properties"):
        calls[action]()
    tables = sorted(map(str, service.catalog.list_tables(("sales",))))
    assert tables == [
        "sales.again",
        "sales.audit_log",
        "sales.customers",
        "sales.fresh",
        "sales.renamed",
    ]
    service.drop_table(_call(ADMIN, namespace="sales", table="fresh"))
    with pytest.raises(NotFound):
        service.catalog.metadata_location(_ident("sales.fresh"))
    outcomes = [(e.action, e.table, e.result) for e in sink.events if e.phase == "outcome"]
    assert outcomes == [
        ("create", "sales.fresh", "committed"),
        ("register", "sales.again", "committed"),
        ("rename", "sales.orders", "committed"),
        ("update_namespace_properties", "", "committed"),
        ("drop", "sales.fresh", "committed"),
    ]
    intents = [e for e in sink.events if e.phase == "intent"]
    assert len(intents) == len(outcomes)
    assert all(e.principal == "admin-client" and e.source == "rest" for e in sink.events)


def test_a_rename_needs_admin_on_the_destination_too(service: CatalogService) -> None:
    # An admin of sales only cannot move a table into ops.
    policy = Policy(parse_grants([{"group": "g", "role": "admin", "tables": ["sales.*"]}], "t"))
    scoped = CatalogService(service.catalog, policy=policy, name="lake")
    who = Principal("s", "s", ("g",))
    body = {
        "source": {"namespace": ["sales"], "name": "orders"},
        "destination": {"namespace": ["ops"], "name": "orders"},
    }
    with pytest.raises(Forbidden, match="ops.orders"):
        scoped.rename_table(_call(who, body=body))
    assert "sales.orders" in map(str, service.catalog.list_tables())


def test_without_a_policy_everyone_may_do_everything(service: CatalogService) -> None:
    open_service = CatalogService(service.catalog, vended=VENDED, name="lake")
    anyone = Principal("anonymous")
    listed = open_service.list_namespaces(_call(anyone))["namespaces"]
    assert listed == [["ops"], ["sales"], ["secret"]]
    loaded = open_service.load_table(_call(anyone, namespace="secret", table="keys", vend=True))
    assert loaded["config"] == VENDED
    open_service.commit(_call(anyone, namespace="secret", table="keys", body=_set_property("a")))
    assert _property(service, "secret.keys") == "a"
    open_service.drop_table(_call(anyone, namespace="secret", table="keys"))
    assert service.catalog.list_tables(("secret",)) == []


def test_a_name_no_catalog_would_create_leaves_no_audit_entry(
    service: CatalogService, sink: MemorySink
) -> None:
    orders = {"namespace": ["sales"], "name": "orders"}
    attempts = [
        lambda: service.create_namespace(_call(ADMIN, body={"namespace": ["x\x00y"]})),
        lambda: service.create_namespace(_call(ADMIN, body={"namespace": ["SALES"]})),
        lambda: service.create_table(
            _call(ADMIN, namespace="sales", body={"name": "ORDERS", "schema": SCHEMA})
        ),
        lambda: service.register_table(
            _call(
                ADMIN,
                namespace="sales",
                body={
                    "name": "Customers",
                    "metadata-location": service.catalog.metadata_location(_ident("sales.orders")),
                },
            )
        ),
        lambda: service.rename_table(
            _call(ADMIN, body={"source": orders, "destination": {**orders, "name": "a\x1fb"}})
        ),
        lambda: service.rename_table(
            _call(ADMIN, body={"source": orders, "destination": {**orders, "name": "Customers"}})
        ),
    ]
    for attempt in attempts:
        with pytest.raises(ValidationError):
            attempt()
    assert sink.events == []
    # A case change of the table's own name is no twin: the rename goes ahead.
    service.rename_table(
        _call(ADMIN, body={"source": orders, "destination": {**orders, "name": "Orders"}})
    )
    assert [(e.action, e.result) for e in sink.events if e.phase == "outcome"] == [
        ("rename", "committed")
    ]
