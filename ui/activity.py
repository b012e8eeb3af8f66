"""What the Activity page shows: a catalog's audit log as the session's principal may see it.

The log is read from the catalog's own store (:func:`icecore.catalog.audit_store
.audit_sink_for`), each intent joined with its outcome (:func:`icecore.audit.audit_changes`,
the same join ``icecore audit`` prints). A change is shown only if the principal may see its
table (any role: a viewer sees the activity of the tables they see, DESIGN.md "Identity,
roles and audit"); a change to no table (a namespace or the catalog) only to whoever holds
admin somewhere in the catalog. Each commit links to the snapshot it made current, on the
History page (``?catalog=&table=&snapshot=``, the app's shared-link parameters).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from icecore.access import Role
from icecore.audit import AuditChange, audit_changes
from icecore.catalog import TableIdentifier
from icecore.catalog.audit_store import audit_sink_for, reconcile, skipped_records
from icecore.catalog.guarded import GuardedCatalog
from icecore.errors import IcecoreError, ValidationError
from icecore.table_data import read_table_metadata

MAX_SHOWN = 500
"""Changes listed at most (the newest): a page, not the whole history of a busy catalog."""

SINCE_CHOICES: dict[str, dt.timedelta | None] = {
    "Any time": None,
    "Last hour": dt.timedelta(hours=1),
    "Last 24 hours": dt.timedelta(days=1),
    "Last 7 days": dt.timedelta(days=7),
    "Last 30 days": dt.timedelta(days=30),
}
"""The time filter's choices, and how far back each reaches."""


@dataclass(frozen=True, slots=True)
class Activity:
    """A catalog's log as one principal may see it.

    Attributes:
        kept: whether the catalog keeps a log at all (a REST catalog's is on its server).
        changes: the visible changes, newest first.
        skipped: records of the store that could not be read.
    """

    kept: bool
    changes: list[AuditChange]
    skipped: int = 0


def visible_activity(catalog: GuardedCatalog) -> Activity:
    """The changes of ``catalog``'s log its principal may see (see the module)."""
    sink = audit_sink_for(catalog)
    if sink is None:
        return Activity(kept=False, changes=[])
    changes = audit_changes(sink.read())
    admin = catalog.policy is None or (
        catalog.policy.catalog_role(catalog.principal, catalog.name) >= Role.ADMIN
    )
    shown: list[AuditChange] = []
    for change in changes:
        if not change.table:
            if admin:
                shown.append(change)
            continue
        try:
            identifier = TableIdentifier.parse(change.table)
        except ValidationError:
            continue
        if catalog.access(identifier).role > Role.NONE:
            shown.append(change)
    return Activity(kept=True, changes=shown, skipped=skipped_records(sink))


def settled(changes: Sequence[AuditChange], catalog: GuardedCatalog) -> list[AuditChange]:
    """The changes with each unknown commit that landed shown as committed (``reconcile``)."""
    return reconcile(changes, catalog.inner)


def snapshot_of(catalog: GuardedCatalog, location: str) -> int | None:
    """The current snapshot of a metadata file (None: no snapshot, or it cannot be read)."""
    try:
        return read_table_metadata(catalog.io, location).current_snapshot_id
    except IcecoreError:
        return None


def history_link(catalog: str, table: str, snapshot_id: int | None) -> str:
    """The History page's link to ``table`` at ``snapshot_id`` (at the current one if None)."""
    params = {"catalog": catalog, "table": table}
    if snapshot_id is not None:
        params["snapshot"] = str(snapshot_id)
    return "History?" + urlencode(params)


def since_cutoff_ms(choice: str, now: dt.datetime | None = None) -> int | None:
    """The earliest time (ms) a choice of :data:`SINCE_CHOICES` keeps; None for any time."""
    reach = SINCE_CHOICES.get(choice)
    if reach is None:
        return None
    return int(((now or dt.datetime.now(dt.UTC)) - reach).timestamp() * 1000)


__all__ = [
    "MAX_SHOWN",
    "SINCE_CHOICES",
    "Activity",
    "history_link",
    "settled",
    "since_cutoff_ms",
    "snapshot_of",
    "visible_activity",
]
