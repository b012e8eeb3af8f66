"""The view routes check roles as the table routes do (DESIGN.md "Identity, roles and audit").

Grants match a view's name as they match a table's (``sales.*`` reaches ``sales.recent``):
viewer to list and load, owner to replace, admin to drop and rename, namespace admin to
create; changes are in the audit log as ``view:*`` actions.
"""

from __future__ import annotations

from typing import Any

import pytest

from icecore.errors import Forbidden
from icecore.server.app import Call, CatalogService
from icecore.server.views import ViewRoutes
from tests.icecore.catalog.memory_sink import MemorySink
from tests.icecore.server.test_roles import ADMIN, ANA, NOBODY, OWEN, SCHEMA, VIC, service, sink

__all__ = ["service", "sink"]  # the fixtures test_roles defines, used here


def _call(
    who: Any, *, namespace: str | None = None, view: str | None = None, body: Any = None
) -> Call:
    params = {k: v for k, v in (("namespace", namespace), ("view", view)) if v is not None}
    return Call(params, {}, body, principal=who)


def _version(sql: str) -> dict[str, Any]:
    return {
        "version-id": 1,
        "schema-id": 0,
        "timestamp-ms": 1,
        "summary": {},
        "default-namespace": ["sales"],
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
    }


def _create(routes: ViewRoutes, who: Any, name: str) -> Any:
    body = {"name": name, "schema": SCHEMA, "view-version": _version("SELECT 1"), "properties": {}}
    return routes.create_view(_call(who, namespace="sales", body=body))


def test_view_roles(service: CatalogService, sink: MemorySink) -> None:
    routes = ViewRoutes(service)
    with pytest.raises(Forbidden):
        _create(routes, OWEN, "recent")  # creating needs the namespace's admin
    created = _create(routes, ADMIN, "recent")
    outcomes = [(e.action, e.result) for e in sink.events if e.phase == "outcome"]
    assert outcomes == [("view:create", "refused"), ("view:create", "committed")]
    listed = routes.list_views(_call(VIC, namespace="sales"))["identifiers"]
    assert listed == [{"namespace": ["sales"], "name": "recent"}]
    with pytest.raises(Forbidden):
        routes.load_view(_call(NOBODY, namespace="sales", view="recent"))
    loaded = routes.load_view(_call(VIC, namespace="sales", view="recent"))
    assert loaded["metadata-location"] == created["metadata-location"]
    replace = {
        "updates": [
            {"action": "add-view-version", "view-version": _version("SELECT 2")},
            {"action": "set-current-view-version", "view-version-id": -1},
        ]
    }
    with pytest.raises(Forbidden):
        routes.replace_view(_call(ANA, namespace="sales", view="recent", body=replace))
    replaced = routes.replace_view(_call(OWEN, namespace="sales", view="recent", body=replace))
    assert replaced["metadata"]["current-version-id"] == 2
    with pytest.raises(Forbidden):
        routes.drop_view(_call(OWEN, namespace="sales", view="recent"))
    routes.drop_view(_call(ADMIN, namespace="sales", view="recent"))
    done = [(e.action, e.result) for e in sink.events if e.phase == "outcome"]
    assert ("view:replace", "committed") in done and ("view:drop", "committed") in done
