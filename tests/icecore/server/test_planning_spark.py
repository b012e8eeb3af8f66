"""Server-side planning of the Spark-written demo tables, for the planner oracle's filters.

v2 position deletes, v3 deletion vectors, equality deletes.

The tables of the shared fixture warehouse are registered in a fresh SQLite catalog served
by ``serve-rest`` (pages of 3 files, so most plans page through ``/tasks``). For each table,
ref and filter that PyIceberg 0.12's parser can write (all but the ``TIMESTAMP '...'`` one):

- the served plan, fetched over HTTP as PyIceberg sends it (its ``PlanTableScanRequest``
  JSON) and paged through every plan task, maps each data file to the delete files that
  Icecore's planner gives it (the planner equals Iceberg Java's ``planFiles`` in
  ``tests/icecore/scan/test_planner.py``);
- where PyIceberg reads the table itself (no equality deletes), PyIceberg with
  ``scan-planning-mode=server`` reads the same rows as PyIceberg planning locally.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.rest.scan_planning import PlanTableScanRequest
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.parser import parse

import icecore
from icecore.catalog.base import TableIdentifier
from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin, create_sqlite_catalog
from icecore.errors import FilterError
from icecore.expressions.json_expr import decode_literals, expression_from_json
from tests.icecore.scan.test_planner import FILTERS, REFS
from tests.icecore.server.conftest import RestServer, start_server, stop_server
from tests.oracle import arrow_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _pyiceberg_filter(text: str) -> BooleanExpression | None:
    if not text:
        return AlwaysTrue()
    try:
        return parse(text)
    except Exception:  # noqa: BLE001 - a filter PyIceberg's parser cannot write is not sent
        return None


CASES = [
    (table, ref, flt)
    for table, filters in FILTERS.items()
    for ref in REFS[table]
    for flt in filters
    if _pyiceberg_filter(flt) is not None
]


@pytest.fixture(scope="module")
def served(demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """The demo tables registered in a fresh SQLite catalog, served with pages of 3 files."""
    warehouse = tmp_path_factory.mktemp("plan-spark") / "warehouse"
    db = create_sqlite_catalog(warehouse / "catalog.db")
    catalog = SqlCatalogAdmin(SqlCatalog(db))
    catalog.create_namespace(("demo",), {})
    for name in FILTERS:
        source = icecore.load_table(f"{demo_warehouse}::demo.{name}")
        catalog.register_table(TableIdentifier(("demo",), name), source.metadata_location)
    server = start_server(
        warehouse,
        "--allow-location",
        str(demo_warehouse),
        catalog=f"sqlite:///{db}",
        env={"ICECORE_PLAN_PAGE_FILES": "3"},
    )
    yield server
    stop_server(server)


def _served_plan(
    server: RestServer, table: str, request: PlanTableScanRequest
) -> dict[str, set[str]]:
    """Data file -> delete files of the served plan, every plan task fetched."""
    base = f"{server.url}/v1/namespaces/demo/tables/{table}"
    body = request.model_dump_json(by_alias=True, exclude_none=True)
    answer = requests.post(base + "/plan", data=body, timeout=120)
    assert answer.status_code == 200, answer.text
    pages, pending = [answer.json()], list(answer.json().get("plan-tasks", []))
    assert pages[0]["status"] == "completed"
    while pending:
        page = requests.post(base + "/tasks", json={"plan-task": pending.pop()}, timeout=120)
        assert page.status_code == 200, page.text
        pages.append(page.json())
        pending += page.json().get("plan-tasks", [])
    planned: dict[str, set[str]] = {}
    for page in pages:
        deletes = page.get("delete-files", [])
        for task in page.get("file-scan-tasks", []):
            path = task["data-file"]["file-path"]
            assert path not in planned, "a data file planned twice"
            planned[path] = {
                deletes[i]["file-path"] for i in task.get("delete-file-references", [])
            }
    return planned


@pytest.mark.parametrize(("table", "ref", "flt"), CASES)
def test_served_plans_are_icecore_plans_and_read_the_same_rows(
    demo_warehouse: Path, served: RestServer, table: str, ref: str | None, flt: str
) -> None:
    row_filter = _pyiceberg_filter(flt)
    assert row_filter is not None
    direct = icecore.load_table(f"{demo_warehouse}::demo.{table}")
    snapshot_id = direct.metadata.refs[ref].snapshot_id if ref else None
    request = PlanTableScanRequest(
        snapshot_id=snapshot_id,
        filter=None if row_filter == AlwaysTrue() else row_filter,
        case_sensitive=True,
    )
    # Icecore's planner given the filter PyIceberg sends (bound as the server binds it).
    expr = expression_from_json(request.model_dump(by_alias=True, mode="json").get("filter"))
    scan = direct.scan(snapshot_id=snapshot_id, case_sensitive=True)
    expr = decode_literals(expr, scan.schema, True)
    try:
        plan = direct.scan(expr, snapshot_id=snapshot_id, case_sensitive=True).plan()
    except FilterError:
        # A column the snapshot's schema lacks (renamed since): Icecore binds to the
        # snapshot's schema, as Spark's VERSION AS OF does, and the server answers 400.
        body = request.model_dump_json(by_alias=True, exclude_none=True)
        url = f"{served.url}/v1/namespaces/demo/tables/{table}/plan"
        answer = requests.post(url, data=body, timeout=120)
        assert answer.status_code == 400
        assert "not in the table's schema" in answer.json()["error"]["message"]
        return
    ours = {t.file_path: {d.file_path for d in t.delete_files} for t in plan.tasks}
    assert _served_plan(served, table, request) == ours

    has_equality = any(d.content == 2 for t in plan.tasks for d in t.delete_files)
    if has_equality:
        return  # PyIceberg 0.12 reads no equality deletes, whoever plans
    local = RestCatalog("local", uri=served.url).load_table(f"demo.{table}")
    remote = RestCatalog("remote", uri=served.url, **{"scan-planning-mode": "server"})
    remote_table = remote.load_table(f"demo.{table}")
    kwargs: dict[str, Any] = {"row_filter": row_filter, "snapshot_id": snapshot_id}
    try:
        expected = local.scan(**kwargs).to_arrow()
    except (NotImplementedError, ValueError) as e:
        pytest.skip(f"PyIceberg 0.12 cannot read this scan locally: {e}")
    served_scan = remote_table.scan(**kwargs)
    assert served_scan._should_use_server_side_planning()
    assert arrow_rows(served_scan.to_arrow()) == arrow_rows(expected)


def _java_appends(spark: Any, table: str, start: int | None, end: int, flt: str) -> set[str]:
    """Iceberg Java's incremental append scan: the data files it plans."""
    jvm = spark.sparkContext._jvm
    name = f"icecore.demo.{table}"
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, name
    )
    scan = java_table.newIncrementalAppendScan().toSnapshot(end)
    if start is not None:
        scan = scan.fromSnapshotExclusive(start)
    if flt:
        converter = jvm.org.apache.spark.sql.execution.datasources.SparkExpressionConverter
        spark_expr = converter.collectResolvedSparkExpression(spark._jsparkSession, name, flt)
        scan = scan.filter(converter.convertToIcebergExpression(spark_expr))
    found: set[str] = set()
    tasks = scan.planFiles()
    iterator = tasks.iterator()
    while iterator.hasNext():
        task = iterator.next()
        assert task.deletes().size() == 0
        found.add(str(task.file().location()))
    tasks.close()
    return found


@pytest.mark.parametrize("flt", ["", "trip_id < 2000000", "payment_type IN ('cash', 'dispute')"])
def test_incremental_append_scans_plan_what_java_plans(
    spark: Any, demo_warehouse: Path, served: RestServer, flt: str
) -> None:
    direct = icecore.load_table(f"{demo_warehouse}::demo.trips")
    metadata = direct.metadata
    chain = []
    current = metadata.snapshot_by_id(metadata.current_snapshot_id)
    while current is not None:
        chain.append(current.snapshot_id)
        parent = current.parent_snapshot_id
        current = metadata.snapshot_by_id(parent) if parent is not None else None
    chain.reverse()
    assert len(chain) >= 3
    row_filter = _pyiceberg_filter(flt)
    for start, end in [
        (None, chain[-1]),
        (chain[0], chain[-1]),
        (chain[1], chain[len(chain) // 2]),
    ]:
        request = PlanTableScanRequest(
            start_snapshot_id=start,
            end_snapshot_id=end,
            filter=None if row_filter == AlwaysTrue() else row_filter,
        )
        served_files = _served_plan(served, "trips", request)
        assert all(not deletes for deletes in served_files.values())
        assert set(served_files) == _java_appends(spark, "trips", start, end, flt)
