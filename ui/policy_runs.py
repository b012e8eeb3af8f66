"""What the Maintenance page shows of maintenance by policy (issue 34 deliver 5).

A table's effective ``[[policies]]`` values, each with where it came from (the config file's
entry or a table property ``icecore.policy.<key>``: :func:`icecore.maintenance_policies
.effective`), and the table's last maintenance jobs from the catalog's audit log, whoever ran
them (``icecore maintain``, the app, ``python -m pipeline.maintenance`` by hand): the job,
who, when, how it ended, and the metadata before and after. Everything is shown as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icecore.audit import AuditChange
from icecore.config import config_path
from icecore.maintenance_policies import effective, load_policies
from icecore.table_data import TableData

LAST_RUNS = 5
"""Jobs listed per table (the newest)."""

JOB_ACTION = "job:"


def policy_rows(table: TableData) -> list[dict[str, Any]]:
    """One row per policy key set for the table: key, value, source.

    Raises:
        ValidationError: the config file or a table property holds an invalid policy.
    """
    name = str(table.identifier)
    found = effective(name, load_policies(), table.metadata.properties, str(config_path()))
    return [{"policy": key, **value.to_dict(key)} for key, value in found.items()]


def last_runs(
    changes: Sequence[AuditChange], table: str, limit: int = LAST_RUNS
) -> list[dict[str, Any]]:
    """The table's newest maintenance jobs in ``changes`` (newest first), as page rows."""
    runs = [c for c in changes if c.table == table and c.action.startswith(JOB_ACTION)]
    runs.sort(key=lambda c: c.time, reverse=True)
    return [
        {
            "job": c.action.removeprefix(JOB_ACTION),
            "started": c.time,
            "ended": c.ended,
            "result": c.result,
            "by": c.principal,
            "from": c.source,
            "metadata before": c.metadata_before or "",
            "metadata after": c.metadata_after or "",
            "details": c.reason,
        }
        for c in runs[:limit]
    ]


__all__ = ["LAST_RUNS", "last_runs", "policy_rows"]
