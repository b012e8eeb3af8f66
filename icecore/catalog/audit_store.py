"""Where a catalog keeps its audit log (:mod:`icecore.audit`).

Placeholder of the session's interface: :func:`audit_sink_for` is implemented by the audit
part of issue 31 (a table in a SQL catalog's database, a JSON-lines file beside a warehouse
folder); until then no catalog keeps a log.
"""

from __future__ import annotations

from icecore.audit import AuditSink
from icecore.catalog.base import Catalog


def audit_sink_for(catalog: Catalog) -> AuditSink | None:
    """The audit log of ``catalog``, or None when it keeps none."""
    return None
