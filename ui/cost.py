"""The table's trend and what each ref costs, shared by every session (Overview, History).

Both depend on the metadata file alone (every snapshot, manifest list and manifest it names
never changes), so each is computed once per metadata file and shared, as
:data:`ui.data._LIVE_FILES` is; the first session draws a progress bar while the manifests
are read (:func:`ui.data.shared_with_progress`), later ones draw nothing.
"""

from __future__ import annotations

import datetime as dt
from functools import partial

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from icecore.retention import Retention, retention
from icecore.table import Table
from icecore.trend import Trend, trend
from ui import data
from ui.shared_cache import SharedCache

ENTRIES = 16
"""Trends and retention results kept (each holds a few numbers per snapshot)."""

_TRENDS: SharedCache[tuple[str, str], Trend] = SharedCache(ENTRIES)
_RETENTION: SharedCache[str, Retention] = SharedCache(ENTRIES)


def trend_of(table: Table, branch: str) -> Trend:
    """``branch``'s trend (:func:`icecore.trend.trend`), read once per metadata file."""
    return data.shared_with_progress(
        _TRENDS,
        (table.metadata_location, branch),
        partial(trend, table, branch),
        "Reading the history's manifests…",
    )


def retention_ready(table: Table) -> bool:
    """Whether the table's costs are already read (showing them then costs nothing)."""
    return table.metadata_location in _RETENTION


def retention_of(table: Table) -> Retention:
    """Every snapshot's and ref's cost (:func:`icecore.retention.retention`), read once."""
    return data.shared_with_progress(
        _RETENTION,
        table.metadata_location,
        partial(retention, table),
        "Reading every snapshot's manifests…",
    )


def _time(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


TREND_LINES = (
    (1, "data_bytes", "data bytes"),
    (2, "avg_file_bytes", "average data file"),
    (2, "avg_added_file_bytes", "average added file"),
    (3, "data_files", "data files"),
    (3, "delete_files", "delete files"),
    (3, "manifests", "manifests"),
)
"""(panel, TrendPoint attribute, line name) of the trend figure: bytes, sizes, counts."""


def trend_figure(result: Trend) -> go.Figure:
    """The trend as three panels over commit time, each regression marked where it began.

    The figure holds the numbers as given (tests read them back from its JSON).
    """
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=("Data bytes", "Average file size (bytes)", "Files and manifests"),
    )
    x = [_time(p.timestamp_ms) for p in result.points]
    ids = [str(p.snapshot_id) for p in result.points]
    for row, attribute, name in TREND_LINES:
        y = [getattr(p, attribute) for p in result.points]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=name,
                mode="lines+markers",
                customdata=ids,
                hovertemplate=f"{name}: %{{y:,}}<br>snapshot %{{customdata}}<extra></extra>",
                connectgaps=attribute == "avg_added_file_bytes",
            ),
            row=row,
            col=1,
        )
    row_of = {attribute: row for row, attribute, _ in TREND_LINES}
    row_of["avg_added_file_bytes"] = 2
    at = {p.snapshot_id: p for p in result.points}
    for r in result.regressions:
        start = at[r.snapshot_id]
        fig.add_trace(
            go.Scatter(
                x=[_time(start.timestamp_ms)],
                y=[getattr(start, r.what)],
                name=f"regression: {r.what}",
                mode="markers",
                marker={"symbol": "x", "size": 14, "color": "#c0392b"},
                customdata=[str(r.snapshot_id)],
                hovertemplate=f"{r.what} regressed here (snapshot %{{customdata}})<extra></extra>",
            ),
            row=row_of[r.what],
            col=1,
        )
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_layout(height=620, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return fig
