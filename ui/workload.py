"""What the Workload page shows: the reports engines sent, as the session's principal may see them.

The reports are read from the catalog's own store (:func:`icecore.catalog.report_store
.report_store_for`, where ``serve-rest`` keeps every ``ScanReport`` and ``CommitReport``
posted to ``/metrics``) and summarized by :mod:`icecore.workload`, the same JSON
``icecore workload`` prints. A table's reports are shown only if the principal may see the
table (any role), as the Activity page does for the audit log.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from icecore.access import Role
from icecore.catalog import TableIdentifier
from icecore.catalog.guarded import GuardedCatalog
from icecore.catalog.report_store import PLAN_ID_KEY, KeptReport, report_store_for
from icecore.errors import FilterError, Unsupported, ValidationError
from icecore.expressions.json_expr import decode_literals, expression_from_json
from icecore.scan.context import bind_filter
from icecore.workload import catalog_summary, workload

if TYPE_CHECKING:
    from icecore.table import Table

SINCE_CHOICES: dict[str, dt.timedelta | None] = {
    "Any time": None,
    "Last hour": dt.timedelta(hours=1),
    "Last 24 hours": dt.timedelta(days=1),
    "Last 7 days": dt.timedelta(days=7),
}
"""The time filter's choices, and how far back each reaches."""


@dataclass(frozen=True, slots=True)
class Reports:
    """A catalog's kept reports as one principal may see them.

    Attributes:
        kept: whether the catalog keeps reports Icecore can read here.
        reports: the visible reports, oldest first.
        skipped: records of the store that could not be read.
    """

    kept: bool
    reports: list[KeptReport]
    skipped: int = 0


def since_ms(choice: str) -> int | None:
    """The earliest report time a :data:`SINCE_CHOICES` choice keeps (ms), None for all."""
    reach = SINCE_CHOICES.get(choice)
    return (
        None if reach is None else time.time_ns() // 1_000_000 - int(reach.total_seconds() * 1000)
    )


def visible_reports(
    catalog: GuardedCatalog, table: str | None = None, since: int | None = None
) -> Reports:
    """The reports of ``table`` (every table: None) its principal may see (see the module)."""
    store = report_store_for(catalog)
    if store is None:
        return Reports(kept=False, reports=[])
    allowed: dict[str, bool] = {}

    def may_see(name: str) -> bool:
        if name not in allowed:
            try:
                allowed[name] = catalog.access(TableIdentifier.parse(name)).role > Role.NONE
            except ValidationError:
                allowed[name] = False
        return allowed[name]

    found = [r for r in store.read(table, since) if may_see(r.table)]
    return Reports(kept=True, reports=found, skipped=int(getattr(store, "skipped", 0)))


def table_workload(reports: list[KeptReport]) -> dict[str, Any]:
    """:func:`icecore.workload.workload` of the reports."""
    return workload(reports)


def summary(reports: list[KeptReport]) -> list[dict[str, Any]]:
    """:func:`icecore.workload.catalog_summary` of the reports."""
    return catalog_summary(reports)


def scans_over_time(scans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scans per hour, by engine and principal (rows for a chart or a table)."""
    counts: dict[tuple[str, str, str], int] = {}
    for scan in scans:
        hour = str(scan["time"])[:13] + ":00Z"
        key = (hour, scan["engine"] or "unknown", scan["principal"] or "anonymous")
        counts[key] = counts.get(key, 0) + 1
    return [
        {"hour": h, "engine": e, "principal": p, "scans": n}
        for (h, e, p), n in sorted(counts.items())
    ]


PLAN_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
"""What a plan id from a link may be (the server makes them with ``secrets.token_urlsafe``)."""


def served_plan_link(catalog: str, table: str, plan_id: str) -> str:
    """Scan preview of a served plan: its filter and snapshot, with the pruning explained."""
    return "Scan_preview?" + urlencode({"catalog": catalog, "table": table, "plan": plan_id})


def served_plan(catalog: GuardedCatalog, table: Table, plan_id: str) -> tuple[str, int] | None:
    """The filter (as SQL the Scan preview reads) and snapshot of a plan serve-rest served.

    Found in the table's kept reports (a served plan is kept as a ScanReport naming its plan
    id); None for an id that is not one, or not of this table. The id comes from a link:
    allow-listed before use, compared, never used as a path or query text.
    """
    if not PLAN_ID.fullmatch(plan_id):
        return None
    name = str(table.identifier)
    for kept in reversed(visible_reports(catalog, name).reports):
        meta = kept.report.get("metadata") or {}
        if meta.get(PLAN_ID_KEY) != plan_id or kept.table != name:
            continue
        schema = table.metadata.current_schema()
        node = kept.report.get("filter", True)
        try:
            expr = decode_literals(expression_from_json(node), schema, False)
            text = str(bind_filter(schema, expr, False).filter)
        except (FilterError, Unsupported):
            return None
        return ("" if text == "true" else text), int(kept.report["snapshot-id"])
    return None
