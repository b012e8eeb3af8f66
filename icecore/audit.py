"""The audit log's record and the interface of its stores (DESIGN.md "Identity, roles and audit").

Every change Icecore makes to a catalog (a commit: evolution, refs, properties; a maintenance
job's start and end; create, drop, rename, register, purge) and every refused attempt is
recorded with who, what, where and how it ended. A change is written twice, append-only:
an ``intent`` before anything is written, and an ``outcome`` after, sharing one ``id``; a
process killed between the two leaves an intent without an outcome, which reads as result
``unknown``, so a change that committed is never missing from the log.

The stores (a table in a SQL catalog's database, a JSON-lines file beside a warehouse folder)
implement :class:`AuditSink`; the guarded catalog (:mod:`icecore.catalog.guarded`), the REST
server, the app's jobs and the CLI write through it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Phase = Literal["intent", "outcome"]
Result = Literal["committed", "conflict", "refused", "failed", "unknown", "started"]
RESULTS: tuple[str, ...] = ("committed", "conflict", "refused", "failed", "unknown")
"""What ``icecore audit`` reports as a change's ``result`` (DESIGN.md)."""

MAX_SUMMARY_CHARS = 2_000
"""A summary longer than this is cut: the log records what changed, not the whole diff."""


def new_event_id() -> str:
    """A fresh id joining an intent to its outcome."""
    return uuid.uuid4().hex


def now_iso() -> str:
    """The current time as the log writes it: ISO 8601, UTC, milliseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One line of the audit log.

    Attributes:
        id: joins an ``intent`` to its ``outcome`` (a refusal is a lone outcome).
        phase: ``intent`` (written before the change) or ``outcome`` (after it).
        time: when this line was written (ISO 8601 UTC).
        principal: who, as people know them (:attr:`icecore.access.Principal.display`).
        subject: their stable id (token ``sub``, REST client id, OS user).
        source: where the change came from: ``app``, ``rest`` or ``cli``.
        action: what was attempted: ``commit``, ``create``, ``drop``, ``rename``,
            ``register``, ``purge``, ``job:<name>`` (a maintenance job), ...
        catalog: the catalog's name as the deployment serves it.
        table: ``ns.table`` ('' for a namespace- or catalog-wide action).
        result: for an outcome, one of committed, conflict, refused, failed; ``started``
            for an intent.
        metadata_before: the table's metadata.json before, if it had one.
        metadata_after: the metadata.json the change made current, if it did.
        summary: what changed, in a few lines (cut at :data:`MAX_SUMMARY_CHARS`).
    """

    id: str
    phase: Phase
    time: str
    principal: str
    subject: str
    source: str
    action: str
    catalog: str
    table: str
    result: Result
    metadata_before: str | None = None
    metadata_after: str | None = None
    summary: str = ""


class AuditSink(Protocol):
    """Where a catalog's audit log is kept: appended to, never rewritten, by Icecore."""

    def append(self, event: AuditEvent) -> None:
        """Write one event durably before returning.

        Raises:
            IcecoreError: the log cannot be written (the change must then not go ahead).
        """
        ...

    def read(self) -> Sequence[AuditEvent]:
        """Every event in the order written."""
        ...


__all__ = [
    "MAX_SUMMARY_CHARS",
    "RESULTS",
    "AuditEvent",
    "AuditSink",
    "new_event_id",
    "now_iso",
]
