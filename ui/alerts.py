"""The Tables page's alerts: the webhook's host and the last alerts sent (issue 34 deliver 6).

The page never sends an alert and never waits on a webhook (``icecore alerts`` and the
maintenance runs send them, :mod:`icecore.alerts`): it reads ``[alerts]`` for the host the
alerts go to (scheme and host only; the rest of a hook's URL may be its secret) and the
catalog's remembered alerts (:mod:`icecore.catalog.alert_store`), shown only for the tables
the session may see.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import streamlit as st

from icecore.alerts import alert_config
from icecore.catalog.alert_store import alert_store_for
from icecore.errors import IcecoreError
from ui import data

RECENT = 5
"""Alerts shown per catalog."""
_READ = 200
"""Newest alerts read, before the session's grants filter them."""


def webhook_host() -> str | None:
    """Where alerts go (``scheme://host``), or None when ``[alerts]`` names no valid webhook."""
    try:
        return alert_config().host
    except IcecoreError:
        return None


def _about(payload: dict[str, Any]) -> str:
    if payload.get("event") == "regression":
        return f"{payload.get('what')} at snapshot {payload.get('snapshot_id')}"
    if payload.get("event") == "score_below":
        return f"score {payload.get('score')} < {payload.get('threshold')}"
    return f"{payload.get('job')}: {payload.get('error')}"


@st.cache_data(ttl=30, max_entries=32, show_spinner=False)
def _recent(catalog: str) -> list[dict[str, Any]]:
    try:
        store = alert_store_for(data.open_catalog(catalog))
        sent = store.recent(_READ) if store is not None else []
    except IcecoreError:
        return []
    return [
        {
            "sent": dt.datetime.fromtimestamp(s.time_ms / 1000, tz=dt.UTC).isoformat(
                timespec="seconds"
            ),
            "table": str(s.payload.get("table")),
            "event": str(s.payload.get("event")),
            "about": _about(s.payload),
            "catalog": catalog,
        }
        for s in sent
    ]


def recent_alerts(catalog: str, limit: int = RECENT) -> list[dict[str, Any]]:
    """The newest alerts sent about the tables of ``catalog`` this session may see."""
    visible = set(data.table_names(catalog))
    return [r for r in _recent(catalog) if r["table"] in visible][:limit]


__all__ = ["RECENT", "recent_alerts", "webhook_host"]
