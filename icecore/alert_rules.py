"""What a catalog should alert about now, and sending each alert once (issue 34 deliver 6).

``icecore alerts CATALOG [--dry-run]`` (DESIGN.md "Catalog health", ``[alerts]``): every
table the caller may see is judged as ``icecore health`` and ``icecore trend`` judge it:

* ``score_below``: its score (:func:`icecore.catalog_health.catalog_health`) is below its
  threshold (:func:`icecore.alerts.score_threshold`: the table's
  ``icecore.alert.score_below`` property, else ``[alerts] score_below``);
* ``regression``: each regression of its main branch (:func:`icecore.trend.trend`), at the
  snapshot that started it, with that commit's operation and writer.

Each alert has a key (:func:`alert_key`): the table, the event, and what it is about: the
regression's metric and starting snapshot, or the score's ten-point bucket (a score that
keeps falling alerts again at each new bucket; one that stays alerts once). Alerts whose
key the catalog's store (:mod:`icecore.catalog.alert_store`) holds are not sent again. Each
new alert is claimed in the store before it is sent (two runs at once: one sends it), and
the claim is kept only once the webhook accepted it, so one that failed is sent next run.
Once one alert fails (its retries and ``max_seconds`` spent), the run gives up on the rest
(failed, sent next run): a dead hook costs one alert's bound, not one per alert.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from icecore.alerts import AlertConfig, AlertSender, payload, score_threshold
from icecore.catalog.alert_store import AlertStore, SentAlert, alert_store_for, now_ms
from icecore.catalog_health import catalog_health
from icecore.errors import IcecoreError, ValidationError
from icecore.trend import trend

if TYPE_CHECKING:
    from icecore.catalog import Catalog

SCORE_BUCKET = 10
"""Points per score bucket: a table alerts once per bucket it falls into."""


def alert_key(event: dict[str, Any]) -> str:
    """The identity of an alert: the same key is sent once (see the module)."""
    kind, table = event["event"], event["table"]
    if kind == "regression":
        about = f"{event['what']}@{event['snapshot_id']}"
    elif kind == "score_below":
        about = f"below{event['threshold']}:{int(event['score']) // SCORE_BUCKET * SCORE_BUCKET}"
    else:
        about = f"{event.get('job')}@{event.get('time')}"
    return f"{table}|{kind}|{about}"


def evaluate(
    catalog: Catalog, config: AlertConfig, *, catalog_name: str, now_ms: int | None = None
) -> list[dict[str, Any]]:
    """Every alert the catalog's tables call for now, as :func:`icecore.alerts.payload` s.

    A table that cannot be read is skipped (``icecore health`` shows its error).
    """
    events: list[dict[str, Any]] = []
    for row in catalog_health(catalog, now_ms=now_ms):
        if row["error"] is not None:
            continue
        name = str(row["table"])
        try:
            table = catalog.load_table(name)
            regressions = trend(table).regressions
        except IcecoreError:
            continue
        threshold = score_threshold(config, table.metadata.properties)
        if row["score"] is not None and int(row["score"]) < threshold:
            events.append(
                payload(
                    {
                        "event": "score_below",
                        "table": name,
                        "catalog": catalog_name,
                        "score": row["score"],
                        "threshold": threshold,
                        "factors": [
                            {k: f[k] for k in ("check", "points", "title")} for f in row["factors"]
                        ],
                    }
                )
            )
        for r in regressions:
            events.append(
                payload(
                    {
                        "event": "regression",
                        "table": name,
                        "catalog": catalog_name,
                        "snapshot_id": r.snapshot_id,
                        "what": r.what,
                        "before": r.before,
                        "after": r.after,
                        "operation": r.operation,
                        "writer": dict(r.writer),
                        "committed": r.time,
                    }
                )
            )
    return events


CLAIM_MARGIN_MS = 60_000
"""Added to a run's sending bound before its unsettled claims lapse (slow database, clocks)."""


def claim_until(config: AlertConfig, count: int, now: int) -> int:
    """When claims made at ``now`` for ``count`` alerts lapse if their run never settles them.

    A run sends its alerts one after another, each within ``max_seconds``
    (:mod:`icecore.alerts`), and settles them all at the end: a live run's claims never
    lapse first; a dead run's alerts go out with the first run after this.
    """
    return now + int(config.max_seconds * 1000) * max(1, count) + CLAIM_MARGIN_MS


def run_alerts(
    catalog: Catalog,
    config: AlertConfig,
    *,
    catalog_name: str,
    dry_run: bool = False,
    store: AlertStore | None = None,
    now: int | None = None,
) -> dict[str, Any]:
    """Evaluate the catalog, send what is new (unless ``dry_run``), record what was accepted.

    Returns the JSON ``icecore alerts`` prints: ``webhook`` (scheme and host only),
    ``dry_run``, ``sent`` (or ``would_send``), ``failed``, ``already_sent`` (a count) and
    ``remembered`` (whether what is sent now is kept for this catalog: not for an object
    store or a REST catalog, nor when Icecore runs read-only; then each run sends again).

    Raises:
        ValidationError: sending was asked for and ``[alerts]`` names no webhook.
    """
    if not dry_run and config.webhook is None:
        raise ValidationError(
            'No webhook to send alerts to: add [alerts] webhook = "https://..." to icecore.toml.'
        )
    store = store if store is not None else alert_store_for(catalog)
    events = evaluate(catalog, config, catalog_name=catalog_name, now_ms=now)
    remembered = store is not None and store.writable
    if dry_run or store is None:
        return _send(events, set(), config, store, dry_run, remembered)
    with store.run_lock():  # a second run waits, then finds what this one sent
        return _send(events, store.keys(), config, store, dry_run, remembered)


def _send(
    events: list[dict[str, Any]],
    known: set[str],
    config: AlertConfig,
    store: AlertStore | None,
    dry_run: bool,
    remembered: bool,
) -> dict[str, Any]:
    """Send the events whose key is not in ``known`` and record those the hook accepted."""
    if dry_run and store is not None:
        known = store.keys()
    new = [e for e in events if alert_key(e) not in known]
    out: dict[str, Any] = {
        "webhook": config.host,
        "dry_run": dry_run,
        "already_sent": len(events) - len(new),
        "remembered": remembered,
    }
    if dry_run:
        return {**out, "would_send": new}
    # Claim each alert before sending it: of two runs at once, one wins each key (the
    # store's claim), and only the winner sends; one another run holds is already sent.
    stamp = now_ms()
    until = claim_until(config, len(new), stamp)
    won: list[SentAlert] = []
    sender = AlertSender(config, queue_size=max(1, len(new)))
    outcome: dict[int, bool] = {}

    def done(i: int) -> Callable[[bool], None]:
        def record(ok: bool) -> None:
            outcome[i] = ok
            if not ok:
                # The hook is down or refuses: the rest would wait out their retries one
                # after another; they end at once instead and go out on the next run.
                sender.close()

        return record

    try:
        for event in new:  # a claim won is settled below even when a later one raises
            claim = SentAlert(alert_key(event), stamp, event)
            if store is None or store.claim(claim, until):
                won.append(claim)
        out["already_sent"] += len(new) - len(won)
        for i, claim in enumerate(won):
            sender.submit(claim.payload, done=done(i))
        # Sent one after another; after a failure the rest end at once (see done), so this
        # waits for at most one alert's max_seconds beyond those the hook accepted.
        sender.flush(config.max_seconds * max(1, len(won)))
    finally:
        sender.close()
        if store is not None:  # kept when delivered, released otherwise (sent next run)
            for i, claim in enumerate(won):
                store.settle(claim, outcome.get(i, False))
    return {
        **out,
        "sent": [c.payload for i, c in enumerate(won) if outcome.get(i)],
        "failed": [c.payload for i, c in enumerate(won) if not outcome.get(i)],
    }


__all__ = ["CLAIM_MARGIN_MS", "SCORE_BUCKET", "alert_key", "claim_until", "evaluate", "run_alerts"]
