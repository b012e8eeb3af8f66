"""Webhook alerts: an HTTP POST of JSON when a table gets worse (issue 34 deliver 6).

DESIGN.md "Catalog health": ``[alerts]`` in ``icecore.toml`` names the webhook::

    [alerts]
    webhook = "https://hooks.example/icecore"   # or webhook-env = "VAR" holding the URL
    score_below = 50        # alert when a table's health score falls below this (0-100);
                            # a table's property icecore.alert.score_below overrides it
    timeout = 5             # seconds one POST may take
    retries = 5             # further attempts after the first
    backoff = 0.5           # seconds before the first retry, doubled each time (with jitter)
    max_seconds = 60        # bound on one alert's whole delivery, retries and waits included
    queue_size = 1000       # alerts waiting to be sent; more are dropped (and counted)

The webhook is ``http`` or ``https`` with a host and no ``user:password@`` (a secret belongs
in ``webhook-env``, or in the URL's path as chat services do); only its scheme and host are
ever shown (:attr:`AlertConfig.host`), because a hook's path is often its secret.

:func:`send_alert` never raises and never blocks its caller: it puts the alert on a bounded
queue that one background thread drains, and answers whether the alert was queued. The
thread POSTs the JSON; a connection error, a timeout, a 5xx or a 429 is retried with
exponential backoff and jitter (a ``Retry-After`` in seconds is waited instead, when it fits
the bound), until ``retries`` or ``max_seconds`` run out; any other answer (a 3xx is not
followed: the payload goes only to the configured host; a 4xx) ends it. :func:`flush` waits,
bounded, for the queue to drain, for a CLI about to exit.

The events (:data:`EVENTS`) and their payload keys are an allow-list: a payload holds
``event``, ``table``, ``catalog``, ``time`` and the event's own details, nothing else, each
string bounded; a catalog URI is shown without its password. Nothing else a caller passes
is sent, so a secret in an event dict never leaves the process.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import math
import os
import queue
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from icecore.catalog.postgres_uri import redact
from icecore.config import Config, load_config
from icecore.errors import ValidationError
from icecore.version import __version__

ALERTS = "alerts"
"""The section of ``icecore.toml``."""

SCORE_PROPERTY = "icecore.alert.score_below"
"""The table property overriding ``score_below`` for one table."""

DEFAULT_SCORE_BELOW = 50

EVENTS: Mapping[str, tuple[str, ...]] = {
    "score_below": ("score", "threshold", "factors"),
    "regression": ("snapshot_id", "what", "before", "after", "operation", "writer", "committed"),
    "job_failed": ("job", "error", "policy", "snapshot_id"),
}
"""Each event and the detail keys its payload may carry (beside :data:`COMMON`)."""

COMMON = ("event", "table", "catalog", "time")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""HTTP answers worth trying again: the hook is busy or briefly down."""

MAX_TEXT = 2000
"""Characters a string in a payload may hold (an error sentence, a factor's detail)."""
MAX_ITEMS = 20
"""Items a list or mapping in a payload may hold (factors, writer keys)."""


@dataclass(frozen=True, slots=True)
class AlertConfig:
    """``[alerts]`` as read (see the module); ``webhook`` None means alerts are off."""

    webhook: str | None = None
    score_below: int = DEFAULT_SCORE_BELOW
    timeout: float = 5.0
    retries: int = 5
    backoff: float = 0.5
    max_seconds: float = 60.0
    queue_size: int = 1000

    def __repr__(self) -> str:  # the URL's path may be the hook's secret
        return f"AlertConfig(webhook={self.host!r}, score_below={self.score_below})"

    @property
    def host(self) -> str | None:
        """The webhook's ``scheme://host[:port]``, all of it that is ever shown."""
        if self.webhook is None:
            return None
        parts = urlsplit(self.webhook)
        port = f":{parts.port}" if parts.port is not None else ""
        return f"{parts.scheme}://{parts.hostname}{port}"


def _number(section: Mapping[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ValidationError(f"In [alerts], {key} must be a number from {low:g} to {high:g}.")
    return float(value)


def check_webhook(url: str) -> str:
    """``url`` when it is an http(s) URL with a host and no credentials in it.

    Raises:
        ValidationError: it is not (the message never repeats the URL: it may be a secret).
    """
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        raise ValidationError("The [alerts] webhook is not a valid URL.") from e
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("The [alerts] webhook must be an http(s):// URL with a host.")
    if parts.username is not None or parts.password is not None:
        raise ValidationError(
            "The [alerts] webhook must not hold user:password@; put a secret in webhook-env."
        )
    return parts.geturl()


def parse_alerts(section: object) -> AlertConfig:
    """The ``[alerts]`` section (absent: alerts off).

    Raises:
        ValidationError: the section is malformed (one sentence, never the URL).
    """
    if section is None:
        return AlertConfig()
    if not isinstance(section, Mapping):
        raise ValidationError("[alerts] must be a table of key = value settings.")
    known = {
        "webhook",
        "webhook-env",
        "score_below",
        "timeout",
        "retries",
        "backoff",
        "max_seconds",
        "queue_size",
    }
    unknown = sorted(str(k) for k in section if k not in known)
    if unknown:
        raise ValidationError(
            f"[alerts] has no setting {unknown[0][:64]!r}; it knows {', '.join(sorted(known))}."
        )
    url = section.get("webhook")
    env = section.get("webhook-env")
    if env is not None:
        if not isinstance(env, str) or not env:
            raise ValidationError("In [alerts], webhook-env must name an environment variable.")
        url = os.environ.get(env) or None
    elif url is not None and not isinstance(url, str):
        raise ValidationError('In [alerts], webhook must be a URL string: webhook = "https://...".')
    return AlertConfig(
        webhook=check_webhook(url) if url else None,
        score_below=int(_number(section, "score_below", DEFAULT_SCORE_BELOW, 0, 100)),
        timeout=_number(section, "timeout", 5.0, 0.05, 300),
        retries=int(_number(section, "retries", 5, 0, 100)),
        backoff=_number(section, "backoff", 0.5, 0, 3600),
        max_seconds=_number(section, "max_seconds", 60.0, 0.05, 86_400),
        queue_size=int(_number(section, "queue_size", 1000, 1, 1_000_000)),
    )


def alert_config(config: Config | None = None) -> AlertConfig:
    """``[alerts]`` of ``config`` (default: :func:`icecore.config.load_config`).

    Raises:
        ValidationError: the config file or its ``[alerts]`` is malformed.
    """
    config = config if config is not None else load_config()
    return parse_alerts(config.raw.get(ALERTS))


def score_threshold(config: AlertConfig, properties: Mapping[str, str]) -> int:
    """The score below which a table alerts: its ``icecore.alert.score_below``, else the config's.

    A property that is not a whole number from 0 to 100 is ignored (the config's applies).
    """
    text = properties.get(SCORE_PROPERTY, "").strip()
    if text.isdigit() and 0 <= int(text) <= 100:
        return int(text)
    return config.score_below


def _bounded(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able data with strings and collections bounded (see the module)."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping) and depth < 3:
        return {str(k)[:200]: _bounded(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
    if isinstance(value, list | tuple) and depth < 3:
        return [_bounded(v, depth + 1) for v in value[:MAX_ITEMS]]
    return str(value)[:MAX_TEXT]


def _safe_catalog(text: str) -> str:
    """A catalog as shown: a name or a path as given, a URI without its password."""
    return redact(text) if "://" in text else text


def payload(event: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON an event is sent as: the allow-listed keys of :data:`EVENTS` only.

    Raises:
        ValidationError: the event is not one of :data:`EVENTS`, or has no table.
    """
    kind = event.get("event")
    if not isinstance(kind, str) or kind not in EVENTS:
        raise ValidationError(f"An alert's event must be one of {', '.join(EVENTS)}.")
    table = event.get("table")
    if not isinstance(table, str) or not table:
        raise ValidationError("An alert must name its table.")
    catalog = event.get("catalog")
    body: dict[str, Any] = {
        "event": kind,
        "table": table[:MAX_TEXT],
        "catalog": _safe_catalog(str(catalog))[:MAX_TEXT] if catalog is not None else None,
        "time": str(event.get("time") or dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))[
            :64
        ],
    }
    for key in EVENTS[kind]:
        if key in event:
            body[key] = _bounded(event[key])
    return body


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not an instruction: the payload goes only to the hook."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` in seconds (an HTTP date is not waited for: backoff applies)."""
    if value is not None and value.strip().isdigit():
        return float(value.strip())
    return None


def post(config: AlertConfig, body: bytes, *, stop: threading.Event | None = None) -> bool:
    """POST ``body`` to the webhook, retried as the module says; whether a 2xx answered.

    ``stop``: set to give up early (waits between attempts end at once). Never raises.
    """
    if config.webhook is None:
        return False
    stop = stop if stop is not None else threading.Event()
    deadline = time.monotonic() + config.max_seconds
    attempt = 0
    while not stop.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        retry_after: float | None = None
        request = urllib.request.Request(
            config.webhook,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "User-Agent": f"icecore/{__version__}"},
        )
        try:
            with _OPENER.open(request, timeout=min(config.timeout, remaining)) as answer:
                answer.read(4096)
                return True
        except urllib.error.HTTPError as e:
            with e:
                if e.code not in RETRY_STATUSES:
                    return False
                retry_after = _retry_after(e.headers.get("Retry-After"))
        except (OSError, http.client.HTTPException, ValueError):
            pass  # refused, reset, timed out, a garbled answer: try again
        attempt += 1
        if attempt > config.retries:
            return False
        if retry_after is not None:
            delay = retry_after
        else:
            step = config.backoff * 2 ** (attempt - 1)
            delay = step / 2 + random.uniform(0, step / 2)  # noqa: S311 - jitter, not a secret
        if delay >= deadline - time.monotonic():
            return False  # the next attempt could not come within the bound
        stop.wait(delay)
    return False


Done = Callable[[bool], None]


class AlertSender:
    """One background thread POSTing queued alerts in order (see the module).

    Attributes:
        config: the webhook and its bounds.
        sent, failed, dropped: alerts delivered, given up on, and refused by a full queue.
    """

    def __init__(self, config: AlertConfig, *, queue_size: int | None = None) -> None:
        self.config = config
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self._queue: queue.Queue[tuple[bytes, Done | None]] = queue.Queue(
            queue_size if queue_size is not None else config.queue_size
        )
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, event: Mapping[str, Any], done: Done | None = None) -> bool:
        """Queue ``event`` (made a :func:`payload`); False when it is invalid or the queue is full.

        ``done(ok)`` is called on the sender's thread once the alert is delivered or given up.
        """
        try:
            body = json.dumps(payload(event), ensure_ascii=False, default=str).encode()
            self._queue.put_nowait((body, done))
        except queue.Full:
            with self._lock:
                self.dropped += 1
            return False
        except (ValidationError, TypeError, ValueError):
            return False
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="icecore-alerts", daemon=True
                )
                self._thread.start()
        return True

    def _run(self) -> None:
        while True:
            body, done = self._queue.get()
            try:
                ok = post(self.config, body, stop=self._stop)
            except Exception:  # noqa: BLE001 - the sender must outlive any one alert
                ok = False
            with self._lock:
                if ok:
                    self.sent += 1
                else:
                    self.failed += 1
            try:
                if done is not None:
                    done(ok)
            except Exception:  # noqa: BLE001, S110 - a caller's callback must not stop sending
                pass
            finally:
                self._queue.task_done()

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every queued alert to end; whether they all did."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self) -> None:
        """Give up on what is still waiting (its retries end at once); for tests and exits."""
        self._stop.set()


_SENDERS: dict[AlertConfig, AlertSender] = {}
_SENDERS_LOCK = threading.Lock()


def sender_for(config: AlertConfig) -> AlertSender:
    """The process's sender for ``config`` (one thread per webhook configuration)."""
    with _SENDERS_LOCK:
        found = _SENDERS.get(config)
        if found is None:
            found = _SENDERS[config] = AlertSender(config)
        return found


def send_alert(event: dict[str, Any]) -> bool:
    """Queue one alert for the webhook of ``icecore.toml``'s ``[alerts]``; never raises or blocks.

    ``event`` holds ``event`` (one of :data:`EVENTS`), ``table``, optionally ``catalog`` and
    ``time``, and the event's details (``job_failed``: ``job``, ``error``, ``policy``,
    ``snapshot_id``). Returns whether it was queued: False when no webhook is configured,
    the config is malformed, the event is invalid, or the queue is full (counted in
    :attr:`AlertSender.dropped`). Delivery happens on the sender's thread; :func:`flush`
    waits for it.
    """
    try:
        config = alert_config()
        if config.webhook is None:
            return False
        return sender_for(config).submit(event)
    except Exception:  # noqa: BLE001 - an alert must never break the caller's work
        return False


def flush(timeout: float = 10.0) -> bool:
    """Wait up to ``timeout`` seconds in all for queued alerts to end; whether they all did."""
    deadline = time.monotonic() + timeout
    with _SENDERS_LOCK:
        senders = list(_SENDERS.values())
    done = True
    for sender in senders:
        done = sender.flush(deadline - time.monotonic()) and done
    return done


__all__ = [
    "ALERTS",
    "DEFAULT_SCORE_BELOW",
    "EVENTS",
    "SCORE_PROPERTY",
    "AlertConfig",
    "AlertSender",
    "alert_config",
    "check_webhook",
    "flush",
    "parse_alerts",
    "payload",
    "post",
    "score_threshold",
    "send_alert",
    "sender_for",
]
