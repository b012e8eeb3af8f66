"""Server-side scan planning over HTTP (issue 33 deliver 1): PyIceberg 0.12 as the client.

PyIceberg writes a table through ``serve-rest``; the same PyIceberg scan is then planned by
the server (``scan-planning-mode=server``) and by PyIceberg itself (local planning, the
peer): the rows must be equal, and the files the server returns must be the files Icecore's
planner plans for the table read straight from the SQLite catalog. Pages are made small
(``ICECORE_PLAN_PAGE_FILES=2``) so that a plan of a few files pages through ``/tasks``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

from icecore.catalog.plan_store import PLAN_FILE, task_key
from icecore.catalog.sql import SqlCatalog
from icecore.server.errors import RestError
from tests.icecore.server.conftest import RestServer, start_server, stop_server
from tests.oracle import arrow_rows

PLAN = "/v1/namespaces/pl/tables/{}/plan"
TASKS = "/v1/namespaces/pl/tables/{}/tasks"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """A server paging plans by 2 files, over a table of 6 data files (one per append)."""
    s = start_server(
        tmp_path_factory.mktemp("plan") / "warehouse", env={"ICECORE_PLAN_PAGE_FILES": "2"}
    )
    peer = RestCatalog("peer", uri=s.url)
    peer.create_namespace("pl")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "day", DateType(), required=False),
        NestedField(4, "score", DoubleType(), required=False),
    )
    for name in ("t", "other"):
        table = peer.create_table(f"pl.{name}", schema)
        for i in range(6 if name == "t" else 1):
            table.append(
                pa.table(
                    {
                        "id": pa.array([i * 10 + k for k in range(3)], pa.int64()),
                        "name": [f"n{i}", None, f"m{i}"],
                        "day": pa.array([19000 + i, 19000 + i, 19001 + i], pa.date32()),
                        "score": [float(i), float("nan"), None],
                    }
                )
            )
    yield s
    stop_server(s)


def _catalogs(server: RestServer) -> tuple[RestCatalog, RestCatalog]:
    local = RestCatalog("local", uri=server.url)
    served = RestCatalog("served", uri=server.url, **{"scan-planning-mode": "server"})
    return local, served


FILTERS = [
    None,
    "id = 31",
    "id < 20",
    "id IN (1, 41, 52)",
    "name = 'n3'",
    "name IS NULL",
    "name LIKE 'm%'",
    "NOT (id >= 30)",
    "day >= '2022-01-11'",
    "score > 2.5 OR id = 0",
    "score IS NOT NULL AND id > 12",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_server_planned_rows_and_files_match_local_planning(
    server: RestServer, flt: str | None
) -> None:
    local, served = _catalogs(server)
    kwargs: dict[str, Any] = {"row_filter": flt} if flt else {}
    expected = local.load_table("pl.t").scan(**kwargs).to_arrow()
    served_scan = served.load_table("pl.t").scan(**kwargs)
    assert served_scan._should_use_server_side_planning()
    got = served_scan.to_arrow()
    assert arrow_rows(got) == arrow_rows(expected)
    # The files are Icecore's planner's, reading the catalog without the server.
    direct = SqlCatalog(server.catalog_db).load_table("pl.t")
    ours = {t.file_path for t in direct.scan(filter=flt, case_sensitive=True).plan().tasks}
    assert {t.file.file_path for t in served_scan.plan_files()} == ours


def _plan(server: RestServer, body: Any, table: str = "t") -> requests.Response:
    return requests.post(server.url + PLAN.format(table), json=body, timeout=30)


def test_a_plan_bigger_than_a_page_comes_back_complete_through_tasks(server: RestServer) -> None:
    direct = SqlCatalog(server.catalog_db).load_table("pl.t")
    everything = {t.file_path for t in direct.scan().plan().tasks}
    assert len(everything) == 6  # six appends, three pages of two
    answer = _plan(server, {})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["status"] == "completed"
    assert "file-scan-tasks" not in result
    tokens = result["plan-tasks"]
    assert len(tokens) == 3
    seen: list[str] = []
    for token in tokens:
        page = requests.post(
            server.url + TASKS.format("t"), json={"plan-task": token}, timeout=30
        ).json()
        seen += [task["data-file"]["file-path"] for task in page["file-scan-tasks"]]
        assert all(task["data-file"]["content"] == "data" for task in page["file-scan-tasks"])
    assert sorted(seen) == sorted(everything)
    # The plan again by its id, then cancelled: its id and tokens are gone.
    plan_url = server.url + PLAN.format("t") + "/" + result["plan-id"]
    assert requests.get(plan_url, timeout=30).json() == result
    assert requests.delete(plan_url, timeout=30).status_code == 204
    assert requests.get(plan_url, timeout=30).status_code == 404
    gone = requests.post(server.url + TASKS.format("t"), json={"plan-task": tokens[0]}, timeout=30)
    assert gone.status_code == 404
    assert gone.json()["error"]["type"] == "NoSuchPlanTaskException"


def test_a_token_serves_only_its_table(server: RestServer) -> None:
    token = _plan(server, {}).json()["plan-tasks"][0]
    foreign = requests.post(
        server.url + TASKS.format("other"), json={"plan-task": token}, timeout=30
    )
    assert foreign.status_code == 404
    made_up = requests.post(
        server.url + TASKS.format("t"), json={"plan-task": token[:-2] + "xx"}, timeout=30
    )
    assert made_up.status_code == 404
    assert made_up.json()["error"]["type"] == "NoSuchPlanTaskException"


def test_stats_fields_and_partition_values_are_the_spec_json(server: RestServer) -> None:
    direct = SqlCatalog(server.catalog_db).load_table("pl.other")
    (task,) = direct.scan().plan().tasks
    answer = _plan(server, {"stats-fields": ["id", "name"]}, table="other").json()
    (served,) = answer["file-scan-tasks"]
    data = served["data-file"]
    assert data["file-path"] == task.file_path
    assert data["record-count"] == 3 and data["partition"] == []
    assert data["file-format"] == "parquet" and data["spec-id"] == 0
    assert data["lower-bounds"]["keys"] == [1, 2]
    # Appendix D binary single value: a long is 8 bytes little-endian; hex upper-case.
    assert data["lower-bounds"]["values"][0] == (0).to_bytes(8, "little").hex().upper()
    assert data["upper-bounds"]["values"][1] == b"n0".hex().upper()
    assert data["null-value-counts"] == {"keys": [1, 2], "values": [0, 1]}
    without = _plan(server, {}, table="other").json()["file-scan-tasks"][0]["data-file"]
    assert "lower-bounds" not in without and "value-counts" not in without


@pytest.mark.parametrize(
    ("body", "code", "kind"),
    [
        ({"filter": {"type": "eqq", "term": "id", "value": 1}}, 400, "BadRequestException"),
        ({"filter": {"type": "eq", "term": "nope", "value": 1}}, 400, "BadRequestException"),
        ({"filter": {"type": "eq", "term": "day", "value": "x"}}, 400, "BadRequestException"),
        ({"select": ["id", "nope"]}, 400, "BadRequestException"),
        ({"snapshot-id": 1}, 400, "BadRequestException"),
        ({"snapshot-id": "1"}, 400, "BadRequestException"),
        ({"case-sensitive": "yes"}, 400, "BadRequestException"),
        ({"start-snapshot-id": 1, "end-snapshot-id": 2}, 400, "BadRequestException"),
        ({"start-snapshot-id": 1}, 400, "BadRequestException"),
        ({"unknown": 1}, 400, "BadRequestException"),
        ([1, 2], 400, "BadRequestException"),
    ],
)
def test_malformed_requests_get_the_spec_errors(
    server: RestServer, body: Any, code: int, kind: str
) -> None:
    answer = _plan(server, body)
    assert answer.status_code == code, answer.text
    error = answer.json()["error"]
    assert error["type"] == kind and error["code"] == code
    assert error["message"].endswith(".") and "\n" not in error["message"]


def test_a_missing_table_or_plan_is_404(server: RestServer) -> None:
    answer = _plan(server, {}, table="missing")
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "NoSuchTableException"
    plan = requests.get(server.url + PLAN.format("t") + "/nope", timeout=30)
    assert plan.status_code == 404
    assert plan.json()["error"]["type"] == "NoSuchPlanIdException"


def test_config_advertises_the_planning_endpoints(server: RestServer) -> None:
    endpoints = requests.get(server.url + "/v1/config", timeout=30).json()["endpoints"]
    table = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"
    for needed in (
        f"POST {table}/plan",
        f"GET {table}/plan/{{plan-id}}",
        f"DELETE {table}/plan/{{plan-id}}",
        f"POST {table}/tasks",
    ):
        assert needed in endpoints


def test_plans_and_tokens_expire(tmp_path: Path) -> None:
    # The plan's submitted record is kept alive while it is made (keep_alive), so however long
    # the first plan of a fresh server takes, it is answered "completed"; the TTL runs from
    # then. 5 s leaves the first fetch room on a busy machine; the tokens are then waited for
    # until they are gone.
    s = start_server(
        tmp_path / "warehouse",
        env={"ICECORE_PLAN_PAGE_FILES": "1", "ICECORE_PLAN_TTL_S": "5"},
    )
    try:
        peer = RestCatalog("peer", uri=s.url)
        peer.create_namespace("pl")
        table = peer.create_table("pl.t", Schema(NestedField(1, "id", LongType())))
        for i in range(2):
            table.append(pa.table({"id": pa.array([i], pa.int64())}))
        answer = _plan(s, {})
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"] == "completed", answer.text
        token = answer.json()["plan-tasks"][0]
        url = s.url + TASKS.format("t")
        first = requests.post(url, json={"plan-task": token}, timeout=30)
        assert first.status_code == 200
        deadline = time.monotonic() + 30
        status = 200
        while status == 200 and time.monotonic() < deadline:
            status = requests.post(url, json={"plan-task": token}, timeout=30).status_code
        assert status == 404
    finally:
        stop_server(s)


def test_plans_live_in_the_catalog_database(server: RestServer) -> None:
    tokens = _plan(server, {}).json()["plan-tasks"]
    rows = SqlCatalog(server.catalog_db)._query(
        "SELECT record_key, payload FROM icecore_scan_plans"
    )
    keys = {str(key) for key, _ in rows}
    assert {task_key(token) for token in tokens} <= keys
    assert not any(token in keys for token in tokens)  # keyed by hash, not by the token


def test_two_servers_over_one_postgresql_catalog_serve_the_same_plan(
    pg_server: Any, tmp_path: Path
) -> None:
    import uuid as uuid_module

    from tests.pg_server import with_catalog_tables

    uri = with_catalog_tables(pg_server.create_database(f"p_{uuid_module.uuid4().hex[:8]}"))
    bare = uri.replace(f":{pg_server.password}@", "@") + "?catalog=pgplans"
    tables = tmp_path / "wh" / "tables"
    env = {"PGPASSWORD": pg_server.password, "ICECORE_PLAN_PAGE_FILES": "1"}
    one = start_server(tmp_path / "wh", "--allow-location", str(tables), catalog=bare, env=env)
    two = start_server(tmp_path / "wh", "--allow-location", str(tables), catalog=bare, env=env)
    try:
        peer = RestCatalog("pg", uri=one.url)
        peer.create_namespace("pl", {"location": str(tables / "pl")})
        table = peer.create_table("pl.t", Schema(NestedField(1, "id", LongType())))
        for i in range(3):
            table.append(pa.table({"id": pa.array([i, i + 10], pa.int64())}))
        body = {"filter": {"type": "lt", "term": "id", "value": 12}}
        planned = _plan(one, body).json()
        assert "plan-tasks" in planned, planned
        tokens = planned["plan-tasks"]
        assert len(tokens) == 3
        # Every token is served by the other process, which never saw the plan being made.
        paths = []
        for token in tokens:
            page = requests.post(two.url + TASKS.format("t"), json={"plan-task": token}, timeout=30)
            assert page.status_code == 200, page.text
            paths += [t["data-file"]["file-path"] for t in page.json()["file-scan-tasks"]]
        remote = RestCatalog("pg2", uri=two.url, **{"scan-planning-mode": "server"})
        served = remote.load_table("pl.t").scan(row_filter="id < 12")
        local = RestCatalog("pg3", uri=one.url).load_table("pl.t").scan(row_filter="id < 12")
        assert sorted(paths) == sorted(t.file.file_path for t in local.plan_files())
        assert arrow_rows(served.to_arrow()) == arrow_rows(local.to_arrow())
        plan_url = two.url + PLAN.format("t") + "/" + planned["plan-id"]
        assert requests.get(plan_url, timeout=30).json() == planned
        assert requests.delete(plan_url, timeout=30).status_code == 204
        gone = requests.post(one.url + TASKS.format("t"), json={"plan-task": tokens[0]}, timeout=30)
        assert gone.status_code == 404
    finally:
        stop_server(one)
        stop_server(two)


def test_a_folder_catalog_keeps_plans_in_a_file_beside_its_tables(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    env = {"ICECORE_PLAN_PAGE_FILES": "1"}
    one = start_server(warehouse, catalog=str(warehouse), env=env)
    two = start_server(warehouse, catalog=str(warehouse), env=env)
    try:
        peer = RestCatalog("fs", uri=one.url)
        peer.create_namespace("pl")
        table = peer.create_table("pl.t", Schema(NestedField(1, "id", LongType())))
        for i in range(2):
            table.append(pa.table({"id": pa.array([i], pa.int64())}))
        tokens = _plan(one, {}).json()["plan-tasks"]
        assert (warehouse / PLAN_FILE).is_file()
        pages = [
            requests.post(two.url + TASKS.format("t"), json={"plan-task": t}, timeout=30)
            for t in tokens
        ]
        assert [p.status_code for p in pages] == [200, 200]
        # The file is no namespace: listing the warehouse shows only the one made.
        assert peer.list_namespaces() == [("pl",)]
    finally:
        stop_server(one)
        stop_server(two)


def test_a_plan_with_more_files_than_the_bound_is_refused(
    server: RestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icecore.server import planning
    from icecore.server.app import Call, CatalogService

    monkeypatch.setattr(planning, "MAX_PLAN_FILES", 5)
    routes = planning.PlanningRoutes(CatalogService(SqlCatalog(server.catalog_db)))
    call = Call({"namespace": "pl", "table": "t"}, {}, {})
    with pytest.raises(RestError) as refused:
        routes.plan_table_scan(call)
    assert refused.value.code == 400 and "6 data files" in refused.value.message
    narrowed = Call({"namespace": "pl", "table": "t"}, {}, {"filter": FILTER_ID_BELOW_20})
    assert routes.plan_table_scan(narrowed)["status"] == "completed"


FILTER_ID_BELOW_20 = {"type": "lt", "term": "id", "value": 20}


def test_a_served_plan_is_kept_with_its_values_and_whatif_estimates_it(
    server: RestServer,
) -> None:
    """The workload keeps a served plan's filter as sent (engines' own reports mask it).

    ``icecore whatif`` estimates exactly those filters, and counts the masked ones apart.
    """
    from icecore.catalog.report_store import report_store_for
    from icecore.whatif import proposed_layout, recorded_filters, what_if
    from icecore.workload import workload

    flt = {"type": "lt", "term": "id", "value": 21}
    answer = _plan(server, {"filter": flt})
    assert answer.status_code == 200, answer.text
    direct = SqlCatalog(server.catalog_db)
    planned = direct.load_table("pl.t").scan(filter="id < 21").plan()
    kept = [
        k
        for k in report_store_for(direct).read("pl.t")  # type: ignore[union-attr]
        if k.report.get("filter") == flt
    ]
    assert kept, "the served plan was not kept"
    report = kept[-1].report
    assert report["metrics"]["result-data-files"]["value"] == len(planned.tasks)
    assert report["metadata"]["engine-name"] == "icecore"
    scans = workload(kept)["scans"]
    assert "21" in scans[-1]["filter"] and "21" not in scans[-1]["filter_group"]
    masked = {**kept[-1].report, "metadata": {"engine-name": "spark"}}
    engine_scan = type(kept[-1])(kept[-1].time_ms, "pl.t", None, masked)
    table = direct.load_table("pl.t")
    layout = proposed_layout(table, (), ("asc id",))
    found, not_used = recorded_filters([*kept, engine_scan], layout.schema)
    assert len(found) == 1 and not_used == 1
    (estimate,) = what_if(table, layout, found).estimates
    assert estimate.files_now == len(planned.tasks)
    assert estimate.files_after >= 1


def test_a_long_plan_is_submitted_then_fetched_completed_or_failed(tmp_path: Path) -> None:
    """``ICECORE_PLAN_WAIT_S=0``: every plan answers ``submitted`` and is polled to the end.

    A completed plan pages through its tasks as an at-once one does; a plan over the file
    bound ends ``failed`` with the 400 it would have been answered; one cancelled while it
    is made is gone.
    """
    s = start_server(
        tmp_path / "warehouse",
        env={
            "ICECORE_PLAN_WAIT_S": "0",
            "ICECORE_PLAN_PAGE_FILES": "2",
            "ICECORE_PLAN_MAX_FILES": "3",
        },
    )
    try:
        peer = RestCatalog("peer", uri=s.url)
        peer.create_namespace("pl")
        table = peer.create_table("pl.t", Schema(NestedField(1, "id", LongType(), required=False)))
        for i in range(3):
            table.append(pa.table({"id": pa.array([i], pa.int64())}))

        def poll(plan_id: str) -> dict[str, Any]:
            url = s.url + PLAN.format("t") + "/" + plan_id
            for _ in range(600):
                answer = requests.get(url, timeout=30)
                assert answer.status_code == 200, answer.text
                if answer.json()["status"] != "submitted":
                    return answer.json()
                assert answer.json() == {"status": "submitted"}
                time.sleep(0.05)
            raise AssertionError("the plan never ended")

        first = _plan(s, {"filter": {"type": "lt", "term": "id", "value": 2}})
        assert first.status_code == 200 and first.json()["status"] == "submitted", first.text
        done = poll(first.json()["plan-id"])
        assert done["status"] == "completed"
        files = [t["data-file"]["file-path"] for t in done.get("file-scan-tasks", [])]
        for token in done.get("plan-tasks", []):
            page = requests.post(s.url + TASKS.format("t"), json={"plan-task": token}, timeout=30)
            files += [t["data-file"]["file-path"] for t in page.json()["file-scan-tasks"]]
        direct = SqlCatalog(s.catalog_db).load_table("pl.t")
        assert sorted(files) == sorted(t.file_path for t in direct.scan("id < 2").plan().tasks)
        table.append(pa.table({"id": pa.array([9], pa.int64())}))  # 4 files: over the bound
        big = _plan(s, {}).json()
        failed = poll(big["plan-id"])
        assert failed["status"] == "failed"
        assert failed["error"]["code"] == 400 and "more than the 3" in failed["error"]["message"]
        gone = _plan(s, {}).json()
        url = s.url + PLAN.format("t") + "/" + gone["plan-id"]
        assert requests.delete(url, timeout=30).status_code == 204
        assert requests.get(url, timeout=30).status_code == 404
    finally:
        stop_server(s)


def test_a_plan_whose_filter_is_too_big_to_report_is_planned_and_not_kept(
    server: RestServer,
) -> None:
    """A plan request may be deeper and bigger than a /metrics report: planned all the same."""
    from icecore.catalog.report_store import report_store_for

    deep: dict[str, Any] = {"type": "lt", "term": "id", "value": 21}
    for _ in range(40):  # 80 levels: past a report's 64, within a plan's 100
        deep = {"type": "not", "child": {"type": "not", "child": deep}}
    answer = _plan(server, {"filter": deep})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "completed"
    big = {"type": "in", "term": "id", "values": list(range(20_000))}
    assert _plan(server, {"filter": big}).status_code == 200
    kept = report_store_for(SqlCatalog(server.catalog_db)).read("pl.t")  # type: ignore[union-attr]
    assert all(k.report.get("filter") not in (deep, big) for k in kept)
