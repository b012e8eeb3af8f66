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
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal, Protocol

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


FIELD_CHARS: Mapping[str, int] = {
    "id": 64,
    "phase": 16,
    "time": 40,
    "principal": 500,
    "subject": 500,
    "source": 32,
    "action": 200,
    "catalog": 2_000,
    "table": 2_000,
    "result": 16,
    "metadata_before": 2_000,
    "metadata_after": 2_000,
    "summary": MAX_SUMMARY_CHARS,
}
"""Longest value each field keeps: a store's row or line is bounded whatever a caller passed."""

MAX_LINE_BYTES = 128 * 1024
"""Longest JSON line a file store writes or reads (every field at its bound, escaped, fits)."""

PHASES = ("intent", "outcome")
EVENT_RESULTS = ("committed", "conflict", "refused", "failed", "unknown", "started")


_LIMITS: tuple[tuple[str, int], ...] = tuple(
    (f.name, FIELD_CHARS[f.name]) for f in fields(AuditEvent)
)
_NULLABLE = frozenset({"metadata_before", "metadata_after"})


def bounded(event: AuditEvent) -> AuditEvent:
    """``event`` with every text field cut to :data:`FIELD_CHARS` (stores keep it bounded)."""
    cut: dict[str, Any] = {}
    for name, limit in FIELD_CHARS.items():
        value = getattr(event, name)
        if isinstance(value, str) and len(value) > limit:
            cut[name] = value[:limit]
    return replace(event, **cut) if cut else event


def event_json(event: AuditEvent) -> str:
    """One event as the one-line JSON object a file store appends (no newline)."""
    return json.dumps(asdict(bounded(event)), ensure_ascii=False, separators=(",", ":"))


def event_from_mapping(values: Mapping[str, object]) -> AuditEvent | None:
    """The event a stored line or row holds, or None when it is not one (a corrupt record).

    Read with an allow-list: the known fields only, each a string of bounded length (the two
    metadata locations may be null), ``phase`` and ``result`` one of their values.
    """
    found: dict[str, Any] = {}
    for name, limit in _LIMITS:
        value = values.get(name)
        if value is None and name in _NULLABLE:
            found[name] = None
            continue
        if value is None and name == "summary":
            value = ""
        if type(value) is not str or len(value) > limit:
            return None
        found[name] = value
    if found["phase"] not in PHASES or found["result"] not in EVENT_RESULTS or not found["id"]:
        return None
    return AuditEvent(**found)


def event_from_json(line: str | bytes) -> AuditEvent | None:
    """The event of one stored JSON line, or None for a corrupt or foreign line."""
    try:
        values = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return event_from_mapping(values) if isinstance(values, dict) else None


def time_ms(text: str) -> int | None:
    """Milliseconds since the epoch of a time the log wrote (None if it is not one)."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class AuditChange:
    """One change as ``icecore audit`` and the Activity page show it: an intent and its outcome.

    Attributes:
        time: when it was attempted (the intent's time; a refusal's own time).
        principal: who (name and subject).
        action: what (``commit``, ``job:<kind>``, ``create``, ...).
        table: ``ns.table`` ('' for a namespace- or catalog-wide action).
        result: committed, conflict, refused, failed, or unknown (an intent without an
            outcome: the process ended between the two, or the change is still running).
        metadata_before: the table's metadata.json before.
        metadata_after: the one the change made current (committed only).
        summary: what changed (the intent's summary, the refusal's sentence).
        reason: why it ended as it did, when the outcome says (a conflict's, a failure's
            sentence, a job's result); '' otherwise.
        id: the event id joining the two records.
        subject: the principal's stable id.
        source: app, rest or cli.
        catalog: the catalog's name as the deployment serves it.
        ended: when the outcome was written ('' for unknown).
    """

    time: str
    principal: str
    action: str
    table: str
    result: str
    metadata_before: str | None
    metadata_after: str | None
    summary: str
    reason: str
    id: str
    subject: str
    source: str
    catalog: str
    ended: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``icecore audit`` prints (DESIGN.md's keys first)."""
        return asdict(self)


def audit_changes(events: Iterable[AuditEvent]) -> list[AuditChange]:
    """The log's changes, newest first: each intent joined with its outcome by ``id``.

    An intent without an outcome is ``unknown``; an outcome without an intent (a refusal,
    which is written alone) is shown as it is. When a store holds two outcomes for one id
    (it never should), the first written wins.
    """
    intents: dict[str, AuditEvent] = {}
    outcomes: dict[str, AuditEvent] = {}
    order: list[str] = []
    for event in events:
        seen = event.id in intents or event.id in outcomes
        if event.phase == "intent":
            intents.setdefault(event.id, event)
        else:
            outcomes.setdefault(event.id, event)
        if not seen:
            order.append(event.id)
    found: list[AuditChange] = []
    for event_id in order:
        intent, outcome = intents.get(event_id), outcomes.get(event_id)
        first = intent or outcome
        assert first is not None
        if intent is None and outcome is not None:
            found.append(_change(outcome, outcome.result, outcome.summary, "", outcome))
            continue
        assert intent is not None
        if outcome is None:
            found.append(_change(intent, "unknown", intent.summary, "", None))
        else:
            found.append(_change(intent, outcome.result, intent.summary, outcome.summary, outcome))
    # Newest first; of changes begun in the same millisecond, the later written first.
    order_of = {c.id: i for i, c in enumerate(found)}
    found.sort(key=lambda c: (time_ms(c.time) or 0, order_of[c.id]), reverse=True)
    return found


def _change(
    first: AuditEvent, result: str, summary: str, reason: str, outcome: AuditEvent | None
) -> AuditChange:
    return AuditChange(
        time=first.time,
        principal=first.principal,
        action=first.action,
        table=first.table,
        result=result,
        metadata_before=first.metadata_before
        or (outcome.metadata_before if outcome is not None else None),
        metadata_after=outcome.metadata_after if outcome is not None else None,
        summary=summary,
        reason=reason,
        id=first.id,
        subject=first.subject,
        source=first.source,
        catalog=first.catalog,
        ended=outcome.time if outcome is not None else "",
    )


def principal_matches(change: AuditChange, who: str) -> bool:
    """Whether ``who`` names the change's principal: its subject, name, or name and subject.

    Case-insensitive and whole (``ann`` does not name ``joanne``).
    """
    wanted = who.strip().lower()
    name = change.principal.rsplit(" (", 1)[0] if change.principal.endswith(")") else ""
    return wanted in {change.subject.lower(), change.principal.lower(), name.lower()} - {""}


def select_changes(
    changes: Iterable[AuditChange],
    *,
    table: str | None = None,
    principal: str | None = None,
    action: str | None = None,
    since_ms: int | None = None,
    results: Iterable[str] | None = None,
) -> list[AuditChange]:
    """The changes that match every filter given (None: no filter), in their order.

    ``action`` matches the whole action or its kind (``job`` matches ``job:expire_snapshots``);
    ``since_ms`` keeps changes attempted at or after it.
    """
    wanted = set(results) if results is not None else None
    kept: list[AuditChange] = []
    for change in changes:
        if table and change.table != table.strip():
            continue
        if principal and not principal_matches(change, principal):
            continue
        if action and action not in (change.action, change.action.split(":", 1)[0]):
            continue
        if since_ms is not None and (time_ms(change.time) or 0) < since_ms:
            continue
        if wanted is not None and change.result not in wanted:
            continue
        kept.append(change)
    return kept


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
    "FIELD_CHARS",
    "MAX_LINE_BYTES",
    "MAX_SUMMARY_CHARS",
    "RESULTS",
    "AuditChange",
    "AuditEvent",
    "AuditSink",
    "audit_changes",
    "bounded",
    "event_from_json",
    "event_from_mapping",
    "event_json",
    "new_event_id",
    "now_iso",
    "principal_matches",
    "select_changes",
    "time_ms",
]
