"""Scan planning checks roles as loadTable does, and serves a plan only to whoever made it.

Over :mod:`tests.icecore.server.test_roles`' catalog and grants (in-process handlers): a
principal without a grant on the table is refused (403) before it is looked up; a viewer
plans; another principal asking for that plan by its id gets 404, as for an id that never
existed; a filter or statistics on a column masked for the principal are refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from icecore.access import Principal
from icecore.errors import Forbidden
from icecore.server.app import Call, CatalogService
from icecore.server.errors import RestError
from icecore.server.planning import PlanningRoutes
from tests.icecore.server.test_roles import ANA, NOBODY, VIC, service, sink

__all__ = ["service", "sink"]  # the fixtures test_roles defines, used here


def _call(who: Principal, table: str, body: Any = None, plan_id: str | None = None) -> Call:
    params = {"namespace": "sales", "table": table}
    if plan_id is not None:
        params["plan_id"] = plan_id
    return Call(params, {}, body, principal=who)


def test_plans_need_the_viewer_role_and_serve_only_their_principal(
    service: CatalogService,
) -> None:
    routes = PlanningRoutes(service)
    with pytest.raises(Forbidden):
        routes.plan_table_scan(_call(NOBODY, "orders", {}))
    planned = routes.plan_table_scan(_call(VIC, "orders", {}))
    assert planned["status"] == "completed" and planned["file-scan-tasks"] == []
    plan_id = planned["plan-id"]
    assert routes.fetch_planning_result(_call(VIC, "orders", plan_id=plan_id)) == planned
    with pytest.raises(RestError) as foreign:
        routes.fetch_planning_result(_call(ANA, "orders", plan_id=plan_id))
    assert foreign.value.code == 404
    with pytest.raises(RestError) as other_table:
        routes.fetch_planning_result(_call(VIC, "customers", plan_id=plan_id))
    assert other_table.value.code == 404
    with pytest.raises(Forbidden):
        routes.fetch_planning_result(_call(NOBODY, "orders", plan_id=plan_id))


def test_a_masked_column_is_neither_filtered_on_nor_its_statistics_served(
    service: CatalogService,
) -> None:
    routes = PlanningRoutes(service)
    on_email = {"filter": {"type": "eq", "term": "email", "value": "a@b.c"}}
    with pytest.raises(Forbidden, match="email"):
        routes.plan_table_scan(_call(ANA, "customers", on_email))
    with pytest.raises(Forbidden, match="email"):
        routes.plan_table_scan(_call(ANA, "customers", {"stats-fields": ["email"]}))
    assert routes.plan_table_scan(_call(ANA, "customers", {"stats-fields": ["id"]}))
    # Unmasked on orders, the same requests are served.
    assert routes.plan_table_scan(_call(ANA, "orders", on_email))["status"] == "completed"


def test_a_principal_keeps_a_bounded_number_of_plans(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icecore.server import planning

    monkeypatch.setattr(planning, "PLANS_PER_PRINCIPAL", 2)
    routes = PlanningRoutes(service)
    ids = [routes.plan_table_scan(_call(VIC, "orders", {}))["plan-id"] for _ in range(3)]
    with pytest.raises(RestError) as forgotten:
        routes.fetch_planning_result(_call(VIC, "orders", plan_id=ids[0]))
    assert forgotten.value.code == 404
    for kept in ids[1:]:
        assert routes.fetch_planning_result(_call(VIC, "orders", plan_id=kept))["plan-id"] == kept
    # Another principal's plans do not count against VIC's.
    routes.plan_table_scan(_call(ANA, "orders", {}))
    assert routes.fetch_planning_result(_call(VIC, "orders", plan_id=ids[2]))
