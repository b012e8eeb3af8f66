"""``POST .../metrics`` keeps what clients report (DESIGN.md "Workload", issue 33 deliver 2).

Real ``serve-rest`` processes over a real SQLite file and a real PostgreSQL catalog: a valid
report is answered 204 and kept in the catalog's own database; a malformed one gets the
spec's 400 ``ErrorModel``, an oversized one 413, and neither is kept; two processes over one
PostgreSQL catalog write one store. The principal is kept when sign-in exists (the handlers
called in-process as a signed-in principal, as in test_roles.py).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from icecore.access import Policy, Principal, parse_grants
from icecore.catalog import SqlCatalog, load_catalog
from icecore.catalog.report_store import MAX_REPORT_BYTES, SqlReportStore
from icecore.catalog.sql import create_sqlite_catalog
from icecore.server.app import Call, CatalogService
from tests.icecore.catalog.test_report_store import COMMIT, SCAN
from tests.icecore.server.conftest import RestServer, start_server, stop_server
from tests.pg_server import PgServer, with_catalog_tables

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    served = start_server(tmp_path_factory.mktemp("metrics") / "wh")
    base = served.url
    assert requests.post(f"{base}/v1/namespaces", json={"namespace": ["m"]}, timeout=10).ok
    for name in ("t", "u"):
        body = {"name": name, "schema": SCHEMA}
        assert requests.post(f"{base}/v1/namespaces/m/tables", json=body, timeout=10).ok
    yield served
    stop_server(served)


def _post(url: str, table: str, body: Any) -> requests.Response:
    return requests.post(f"{url}/v1/namespaces/m/tables/{table}/metrics", json=body, timeout=10)


def _kept(server: RestServer) -> SqlReportStore:
    return SqlReportStore(SqlCatalog(server.catalog_db))


def test_a_report_is_kept_per_table_and_a_malformed_one_is_400(server: RestServer) -> None:
    before = {t: len(_kept(server).read(f"m.{t}")) for t in ("t", "u")}
    assert _post(server.url, "t", SCAN).status_code == 204
    assert _post(server.url, "u", COMMIT).status_code == 204
    broken = {k: v for k, v in SCAN.items() if k != "projected-field-ids"}
    r = _post(server.url, "t", broken)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "BadRequestException" and error["code"] == 400
    assert "projected-field-ids" in error["message"]
    huge = copy.deepcopy(SCAN)
    huge["metadata"] = {"padding": "x" * MAX_REPORT_BYTES}
    assert _post(server.url, "t", huge).status_code == 413
    t_reports, u_reports = _kept(server).read("m.t"), _kept(server).read("m.u")
    assert len(t_reports) == before["t"] + 1 and len(u_reports) == before["u"] + 1
    assert t_reports[-1].report == SCAN and t_reports[-1].principal is None
    assert u_reports[-1].report == COMMIT
    # A table the catalog does not hold: the spec's 404, nothing kept.
    assert _post(server.url, "absent", SCAN).status_code == 404
    assert _kept(server).read("m.absent") == []


def test_the_principal_is_kept_when_sign_in_exists(tmp_path: Path) -> None:
    catalog = SqlCatalog(create_sqlite_catalog(tmp_path / "catalog.db"))
    policy = Policy(parse_grants([{"group": "g", "role": "admin", "tables": ["*"]}], "test"))
    store = SqlReportStore(catalog)
    service = CatalogService(catalog, policy=policy, name="lake", reports=store)
    ann = Principal("u-ann", "Ann", ("g",), "oidc")
    service.create_namespace(Call({}, {}, {"namespace": ["s"]}, principal=ann))
    service.create_table(
        Call({"namespace": "s"}, {}, {"name": "t", "schema": SCHEMA}, principal=ann)
    )
    params = {"namespace": "s", "table": "t"}
    assert service.report_metrics(Call(params, {}, SCAN, principal=ann)).status_code == 204
    assert [r.principal for r in store.read("s.t")] == ["Ann (u-ann)"]


def test_two_servers_over_one_postgres_catalog_keep_one_store(
    pg_server: PgServer, tmp_path: Path
) -> None:
    uri = with_catalog_tables(pg_server.create_database(f"m_{uuid.uuid4().hex[:8]}"))
    catalog = load_catalog(uri)
    assert isinstance(catalog, SqlCatalog)
    servers = [
        start_server(tmp_path / f"wh{i}", "--allow-location", str(tmp_path), catalog=uri)
        for i in range(2)
    ]
    try:
        base = servers[0].url
        assert requests.post(f"{base}/v1/namespaces", json={"namespace": ["m"]}, timeout=10).ok
        body = {"name": "t", "schema": SCHEMA, "location": str(tmp_path / "t")}
        r = requests.post(f"{base}/v1/namespaces/m/tables", json=body, timeout=10)
        assert r.ok, r.text
        for n in range(6):
            report = {**SCAN, "schema-id": n}
            assert _post(servers[n % 2].url, "t", report).status_code == 204
    finally:
        for server in servers:
            stop_server(server)
    found = SqlReportStore(catalog).read("m.t")
    assert [r.report["schema-id"] for r in found] == list(range(6))


def test_a_client_cannot_pose_as_a_plan_icecore_served(server: RestServer) -> None:
    """``icecore.*`` metadata marks the server's own served plans: a client's is a 400."""
    forged = copy.deepcopy(SCAN)
    forged["metadata"] = {"engine-name": "spark", "icecore.served-plan": "true"}
    answer = _post(server.url, "t", forged)
    assert answer.status_code == 400, answer.text
    assert "icecore." in answer.json()["error"]["message"]
