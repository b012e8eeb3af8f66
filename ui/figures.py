"""Plotly figures as pure functions: icecore data in, a figure out, nothing read or cached.

Each builder copies the numbers it is given into the figure (tests check that the figure's
data equals its input). Snapshot ids travel as strings in ``customdata``: they are 64-bit
and JavaScript numbers would round them.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from icecore.health import format_bytes
from icecore.layout import MetadataTree
from icecore.timeline import (
    LaneKind,
    TimeBin,
    Timeline,
    TimelinePoint,
    bin_points,
    bin_width_ms,
    in_window,
)

OPERATION_COLORS: Mapping[str, str] = {
    "append": "#2e8b57",
    "overwrite": "#e07b00",
    "delete": "#c0392b",
    "replace": "#7d3c98",
}
OTHER_COLOR = "#7f8c8d"
RECORDS_ADDED = "records in added data files"
"""The timeline's bar of a snapshot summary's ``added-records``: rows before any delete."""
RECORDS_REMOVED = "records in removed data files"
"""The bar of ``deleted-records``: rows of data files the commit removed (rows removed by
delete files are not in it; History's table gives rows removed by every means)."""
CONTENT_COLORS: Mapping[str, str] = {
    "data": "#1f77b4",
    "position deletes": "#d62728",
    "deletion vector": "#ff7f0e",
    "equality deletes": "#9467bd",
    "data manifest": "#aec7e8",
    "delete manifest": "#f7b6d2",
    "mixed": "#c7c7c7",
}
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#7f7f7f",
)
NEUTRAL = "#dfe6ec"


def _time(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _hover(p: TimelinePoint) -> str:
    refs = f"<br>refs: {', '.join(p.refs)}" if p.refs else ""
    current = " (current)" if p.is_current else ""
    return (
        f"<b>{p.snapshot_id}</b>{current}<br>{p.operation or 'no operation'} · "
        f"{_time(p.timestamp_ms):%Y-%m-%d %H:%M:%S} UTC<br>"
        f"data files +{_count(p.added_data_files)} −{_count(p.removed_data_files)}<br>"
        f"delete files +{_count(p.added_delete_files)} −{_count(p.removed_delete_files)}<br>"
        f"rows +{_count(p.added_records)} −{_count(p.removed_records)}{refs}"
    )


def marker_size(added_records: int | None) -> float:
    """Marker diameter in px: grows with the square root of the rows a snapshot added."""
    return 9.0 + min(17.0, math.sqrt(max(added_records or 0, 0)) / 4.0)


MAX_MARKERS = 500
"""Above this many snapshots in view the timeline draws counts per time bin, not markers:
thousands of markers (each with its hover text) are megabytes the browser lays out on every
run, and overlap into a smear no one can click."""
MAX_BINS = 150
"""At most this many time bins across the view."""
BIN = "bin"
"""``customdata[0]`` of a bin's marker: ``[BIN, start_ms, end_ms]`` (a snapshot's is its id)."""


def width_label(width_ms: int) -> str:
    """A bin width in words: ``1 s``, ``15 min``, ``6 h``, ``1 day``, ``7 days``."""
    seconds = width_ms // 1000
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if unit == 'day' and count != 1 else ''}"
    return f"{width_ms / 1000:g} s"


def _add_edges(fig: go.Figure, x: list[dt.datetime | None], y: list[str | None], name: str) -> None:
    """Grey lines between snapshots (``None`` between segments) on the timeline's lanes."""
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="lines",
            line={"color": "#b0bec5", "width": 1.5},
            hoverinfo="skip",
            showlegend=False,
            name=name,
        ),
        row=1,
        col=1,
    )


def timeline_figure(
    tl: Timeline,
    selected: int | None = None,
    window: tuple[int, int] | None = None,
    max_markers: int = MAX_MARKERS,
) -> go.Figure:
    """Snapshots on branch and tag lanes over time, with rows added and removed beneath.

    Up to ``max_markers`` snapshots in view are drawn one marker each; more are drawn as
    counts per time bin (:func:`binned_figure`), so 10,000 snapshots stay readable and light.

    Args:
        tl: :func:`icecore.timeline.timeline` of the table.
        selected: a snapshot id to ring (the time selector's), if any.
        window: ``(start_ms, end_ms)``, both included: only snapshots committed then.
        max_markers: the most snapshots drawn one by one.
    """
    points = tl.points if window is None else in_window(tl.points, *window)
    if len(points) > max_markers:
        return binned_figure(tl, points, selected)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.68, 0.32],
        vertical_spacing=0.06,
    )
    where = {p.snapshot_id: (_time(p.timestamp_ms), p.lane) for p in points}
    tags = [m for m in tl.markers if m.snapshot_id in where]
    edge_x: list[dt.datetime | None] = []
    edge_y: list[str | None] = []
    for p in points:
        if p.parent_id is not None and p.parent_id in where:
            px, py = where[p.parent_id]
            edge_x += [px, _time(p.timestamp_ms), None]
            edge_y += [py, p.lane, None]
    heads = _moved_heads(tl, {p.snapshot_id: p for p in points})
    for lane, m in [*((m.lane, m) for m in tags), *heads]:
        tx, ty = where[m.snapshot_id]
        edge_x += [tx, _time(m.timestamp_ms), None]
        edge_y += [ty, lane, None]
    _add_edges(fig, edge_x, edge_y, "parent")
    operations = sorted({p.operation for p in points}, key=lambda o: (o not in OPERATION_COLORS, o))
    for op in operations:
        of_op = [p for p in points if p.operation == op]
        fig.add_trace(
            go.Scatter(
                x=[_time(p.timestamp_ms) for p in of_op],
                y=[p.lane for p in of_op],
                mode="markers",
                name=op or "no operation",
                marker={
                    "size": [marker_size(p.added_records) for p in of_op],
                    "color": OPERATION_COLORS.get(op, OTHER_COLOR),
                    "line": {"color": "white", "width": 1},
                },
                customdata=[[str(p.snapshot_id)] for p in of_op],
                hovertext=[_hover(p) for p in of_op],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
    _heads_trace(fig, heads)
    _tags_and_rings(
        fig, tags, [p for p in points if p.is_current or p.snapshot_id == selected], selected
    )
    x = [_time(p.timestamp_ms) for p in points]
    ids = [[str(p.snapshot_id)] for p in points]
    for name, values, color, sign in (
        (RECORDS_ADDED, [p.added_records or 0 for p in points], "#2e8b57", "+"),
        (RECORDS_REMOVED, [-(p.removed_records or 0) for p in points], "#c0392b", ""),
    ):
        fig.add_trace(
            go.Bar(
                x=x,
                y=values,
                name=name,
                marker_color=color,
                customdata=ids,
                hovertemplate=f"{sign}%{{y:,}} rows<extra></extra>",
            ),
            row=2,
            col=1,
        )
    _lanes_layout(fig, tl)
    return fig


def _moved_heads(
    tl: Timeline, by_id: Mapping[int, TimelinePoint]
) -> list[tuple[str, TimelinePoint]]:
    """Branches whose head sits on another lane, with that head.

    A branch made at a main snapshot (or merged back) has no snapshot of its own lane: its
    lane would be empty, so its head is marked there.
    """
    return [
        (lane.name, by_id[lane.head])
        for lane in tl.lanes
        if lane.kind == LaneKind.BRANCH
        and lane.head is not None
        and lane.head in by_id
        and by_id[lane.head].lane != lane.name
    ]


def _heads_trace(fig: go.Figure, heads: Sequence[tuple[str, TimelinePoint]]) -> None:
    if not heads:
        return
    fig.add_trace(
        go.Scatter(
            x=[_time(p.timestamp_ms) for _, p in heads],
            y=[name for name, _ in heads],
            mode="markers+text",
            name="branch head",
            marker={"symbol": "triangle-right", "size": 13, "color": "#0b6fa4"},
            text=[name for name, _ in heads],
            textposition="middle right",
            customdata=[[str(p.snapshot_id)] for _, p in heads],
            hovertext=[_hover(p) for _, p in heads],
            hoverinfo="text",
        ),
        row=1,
        col=1,
    )


def _tags_and_rings(
    fig: go.Figure,
    tags: Sequence[TimelinePoint],
    rings: Sequence[TimelinePoint],
    selected: int | None,
) -> None:
    """Tag diamonds (named) and rings around the current and the selected snapshot."""
    if tags:
        fig.add_trace(
            go.Scatter(
                x=[_time(m.timestamp_ms) for m in tags],
                y=[m.lane for m in tags],
                mode="markers+text",
                name="tag",
                marker={"symbol": "diamond", "size": 13, "color": "#34495e"},
                text=[m.lane for m in tags],
                textposition="middle right",
                customdata=[[str(m.snapshot_id)] for m in tags],
                hovertext=[_hover(m) for m in tags],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
    if rings:
        fig.add_trace(
            go.Scatter(
                x=[_time(p.timestamp_ms) for p in rings],
                y=[p.lane for p in rings],
                mode="markers",
                name="selected" if selected is not None else "current",
                marker={
                    "symbol": "circle-open",
                    "size": [marker_size(p.added_records) + 10 for p in rings],
                    "color": ["#0b6fa4" if p.snapshot_id == selected else "#17212b" for p in rings],
                    "line": {"width": 2.5},
                },
                customdata=[[str(p.snapshot_id)] for p in rings],
                hovertext=[_hover(p) for p in rings],
                hoverinfo="text",
                showlegend=False,
            ),
            row=1,
            col=1,
        )


def _lanes_layout(fig: go.Figure, tl: Timeline) -> None:
    lanes = [lane.name for lane in tl.lanes]
    fig.update_yaxes(
        type="category",
        categoryorder="array",
        categoryarray=list(reversed(lanes)),
        row=1,
        col=1,
    )
    fig.update_yaxes(title_text="rows", row=2, col=1, zeroline=True, zerolinecolor="#90a4ae")
    fig.update_layout(
        barmode="relative",
        height=260 + 38 * len(lanes),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "y": 1.08, "x": 0},
        hovermode="closest",
    )


def bin_size(snapshots: int) -> float:
    """Marker diameter in px of a bin: grows with the square root of its snapshots."""
    return 8.0 + min(24.0, 2.0 * math.sqrt(snapshots))


def _bin_hover(b: TimeBin, width: str) -> str:
    ops = " · ".join(f"{op} {n:,}" for op, n in b.operations)
    return (
        f"<b>{b.snapshots:,} snapshot{'s' if b.snapshots != 1 else ''}</b> on {b.lane}<br>"
        f"{_time(b.start_ms):%Y-%m-%d %H:%M:%S} UTC + {width}<br>{ops}<br>"
        f"rows +{b.added_records:,} −{b.removed_records:,}<br>click to zoom in"
    )


def binned_figure(
    tl: Timeline, points: Sequence[TimelinePoint], selected: int | None = None
) -> go.Figure:
    """``points`` as counts per time bin and lane, rows added and removed per bin beneath.

    Each bin is one marker on its lane, sized by its snapshots and colored by its most
    frequent operation; its ``customdata`` is ``[BIN, start_ms, end_ms]`` (a click zooms in).
    Tags, branch forks, and the current and selected snapshots stay exact.
    """
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.06
    )
    if not points:
        _lanes_layout(fig, tl)
        return fig
    width_ms = bin_width_ms(points[0].timestamp_ms, points[-1].timestamp_ms, MAX_BINS)
    width = width_label(width_ms)
    bins = bin_points(points, width_ms)
    center = width_ms // 2
    lane_of = {p.snapshot_id: p.lane for p in points}
    edge_x: list[dt.datetime | None] = []
    edge_y: list[str | None] = []
    forks = [
        p for p in points if p.parent_id is not None and lane_of.get(p.parent_id, p.lane) != p.lane
    ]
    by_id = {p.snapshot_id: p for p in points}
    for p in forks:
        parent = by_id[p.parent_id]  # type: ignore[index]
        edge_x += [
            _time(parent.timestamp_ms // width_ms * width_ms + center),
            _time(p.timestamp_ms // width_ms * width_ms + center),
            None,
        ]
        edge_y += [parent.lane, p.lane, None]
    tags = [m for m in tl.markers if m.snapshot_id in by_id]
    heads = _moved_heads(tl, by_id)
    for lane, m in [*((m.lane, m) for m in tags), *heads]:
        edge_x += [
            _time(m.timestamp_ms // width_ms * width_ms + center),
            _time(m.timestamp_ms),
            None,
        ]
        edge_y += [by_id[m.snapshot_id].lane, lane, None]
    _add_edges(fig, edge_x, edge_y, "fork")
    dominant = sorted(
        {b.operations[0][0] for b in bins}, key=lambda o: (o not in OPERATION_COLORS, o)
    )
    for op in dominant:
        of_op = [b for b in bins if b.operations[0][0] == op]
        fig.add_trace(
            go.Scatter(
                x=[_time(b.start_ms + center) for b in of_op],
                y=[b.lane for b in of_op],
                mode="markers",
                name=f"mostly {op}",
                marker={
                    "size": [bin_size(b.snapshots) for b in of_op],
                    "color": OPERATION_COLORS.get(op, OTHER_COLOR),
                    "symbol": "square",
                    "line": {"color": "white", "width": 1},
                },
                customdata=[[BIN, str(b.start_ms), str(b.end_ms)] for b in of_op],
                hovertext=[_bin_hover(b, width) for b in of_op],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
    rings = [p for p in points if p.is_current or p.snapshot_id == selected]
    _heads_trace(fig, heads)
    _tags_and_rings(fig, tags, rings, selected)
    totals: dict[int, list[int]] = {}
    for b in bins:
        total = totals.setdefault(b.start_ms, [0, 0, 0, b.end_ms])
        total[0] += b.snapshots
        total[1] += b.added_records
        total[2] += b.removed_records
    starts = sorted(totals)
    x = [_time(s + center) for s in starts]
    custom = [[BIN, str(s), str(totals[s][3])] for s in starts]
    counts = [totals[s][0] for s in starts]
    for name, values, color, sign in (
        (RECORDS_ADDED, [totals[s][1] for s in starts], "#2e8b57", "+"),
        (RECORDS_REMOVED, [-totals[s][2] for s in starts], "#c0392b", ""),
    ):
        fig.add_trace(
            go.Bar(
                x=x,
                y=values,
                width=width_ms * 0.9,
                name=name,
                marker_color=color,
                customdata=custom,
                hovertext=[f"{n:,} snapshots" for n in counts],
                hovertemplate=f"{sign}%{{y:,}} rows in %{{hovertext}}<extra></extra>",
            ),
            row=2,
            col=1,
        )
    _lanes_layout(fig, tl)
    return fig


def _category(level: str, content: str, spec: str, partition: str, color_by: str) -> str:
    if color_by == "content" or level in ("snapshot", "manifest list"):
        return content
    if color_by == "spec":
        return f"spec {spec}" if spec else "mixed"
    return partition or ("mixed" if level != "manifest" else content)


TEXT_BUDGET = 300
"""Above this many nodes, file tiles carry no printed label (hover still names them): laying
out thousands of labels is most of a big tree's drawing time in the browser."""


def _tile_text(level: str, label: str, nodes: int) -> str:
    return "" if nodes > TEXT_BUDGET and level == "file" else label


def tree_figure(
    tree: MetadataTree, kind: str = "icicle", size_by: str = "bytes", color_by: str = "content"
) -> go.Figure:
    """The metadata tree as an icicle or treemap.

    Args:
        tree: :func:`icecore.layout.metadata_tree`.
        kind: ``icicle`` or ``treemap``.
        size_by: ``bytes`` or ``rows`` (record counts; delete records for delete files).
        color_by: ``content``, ``spec`` or ``partition``.
    """
    nodes = tree.nodes
    values = [n.bytes if size_by == "bytes" else n.rows for n in nodes]
    categories = [_category(n.level, n.content, n.spec, n.partition, color_by) for n in nodes]
    palette: dict[str, str] = dict(CONTENT_COLORS) if color_by == "content" else {"mixed": NEUTRAL}
    for name in categories:
        if name not in palette:
            palette[name] = PALETTE[(len(palette) - 1) % len(PALETTE)]
    hover = [
        f"{n.level} · {n.content}"
        + (f" · spec {n.spec}" if n.spec else "")
        + (f"<br>{n.partition}" if n.partition else "")
        + f"<br>{n.files:,} files · {n.rows:,} rows · {format_bytes(n.bytes)}"
        for n in nodes
    ]
    # Short ids keep the figure small (paths are long and every file repeats its parent's);
    # the label and the hover say which file or manifest a tile is.
    short = {n.id: f"n{i}" for i, n in enumerate(nodes)}
    common = {
        "ids": [short[n.id] for n in nodes],
        "labels": [n.label for n in nodes],
        "parents": [short.get(n.parent, "") for n in nodes],
        "values": values,
        "branchvalues": "total",
        "marker": {
            "colors": [palette[c] for c in categories],
            # Thousands of thin file tiles would be all border: draw borders above files only.
            "line": {
                "color": "white",
                "width": [0 if n.level in ("file", "folded") else 1 for n in nodes],
            },
        },
        "customdata": [
            [h, _tile_text(n.level, n.label, len(nodes))] for h, n in zip(hover, nodes, strict=True)
        ],
        "hovertemplate": "<b>%{label}</b><br>%{customdata[0]}<extra></extra>",
        "texttemplate": "%{customdata[1]}",
        "maxdepth": 4,
    }
    trace = (
        go.Icicle(**common, tiling={"orientation": "h"})
        if kind == "icicle"
        else go.Treemap(**common)
    )
    fig = go.Figure(trace)
    fig.update_layout(height=620, margin={"l": 0, "r": 0, "t": 10, "b": 0})
    return fig


FUNNEL_GROUPS = ("Manifests", "Data files", "Rows")


def funnel_stages(
    counts: Mapping[str, int], matching_rows: int | None = None
) -> dict[str, list[tuple[str, int]]]:
    """The stages of each funnel, from the planner's report counts.

    Manifests: in the snapshot, then kept by partition summaries. Data files: in the
    snapshot, after manifest pruning, after partition values, after column metrics
    (planned). Rows: in the snapshot's data files, in planned files, and (when counted)
    returned after deletes and the residual filter.
    """
    files = counts["data_files"]
    after_manifests = files - counts["files_pruned_by_manifest"]
    after_partitions = after_manifests - counts["files_pruned_by_partition"]
    rows = [("in snapshot", counts["rows"]), ("in planned files", counts["rows_planned"])]
    if matching_rows is not None:
        rows.append(("returned", matching_rows))
    return {
        "Manifests": [
            ("data manifests", counts["data_manifests"]),
            ("kept", counts["data_manifests"] - counts["data_manifests_pruned"]),
        ],
        "Data files": [
            ("in snapshot", files),
            ("after manifests", after_manifests),
            ("after partitions", after_partitions),
            ("after metrics", counts["data_files_planned"]),
        ],
        "Rows": rows,
    }


def funnel_figure(stages: Mapping[str, Sequence[tuple[str, int]]]) -> go.Figure:
    """Three funnels side by side (each on its own scale): manifests, files, rows."""
    groups = [g for g in FUNNEL_GROUPS if g in stages]
    fig = make_subplots(rows=1, cols=len(groups), subplot_titles=groups, horizontal_spacing=0.12)
    colors = {"Manifests": "#5b8db8", "Data files": "#0b6fa4", "Rows": "#2e8b57"}
    for i, group in enumerate(groups, start=1):
        names = [name for name, _ in stages[group]]
        values = [value for _, value in stages[group]]
        fig.add_trace(
            go.Funnel(
                y=names,
                x=values,
                name=group,
                textinfo="value+percent initial",
                marker={"color": colors[group]},
                connector={"line": {"color": "#cfd8dc"}},
            ),
            row=1,
            col=i,
        )
    fig.update_layout(height=300, showlegend=False, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def diff_figure(counts: Mapping[str, int]) -> go.Figure:
    """Files and rows added (right) and removed (left), files and rows on their own scales."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Files", "Rows"), horizontal_spacing=0.15)
    groups = ((1, ("data files", "delete files"), ""), (2, ("rows",), "rows "))
    for col, kinds, prefix in groups:
        for change, sign, color in (("added", 1, "#2e8b57"), ("removed", -1, "#c0392b")):
            fig.add_trace(
                go.Bar(
                    y=list(kinds),
                    x=[sign * counts[f"{k} {change}"] for k in kinds],
                    name=f"{prefix}{change}",
                    orientation="h",
                    marker_color=color,
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
    fig.update_layout(
        barmode="relative",
        height=220,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
