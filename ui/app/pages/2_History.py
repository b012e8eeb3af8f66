"""History: snapshots over time on branch and tag lanes, the refs, and the metadata log.

Built for long histories (10,000 snapshots is a week of streaming appends): the timeline is
computed once per metadata file, draws counts per time bin when more than
:data:`ui.figures.MAX_MARKERS` snapshots are in view (a window narrows the view; a click on
a bin zooms into it), and the snapshot table shows one page of :data:`PAGE_SIZE` rows, newest
first, with a filter by operation and a box that jumps to a snapshot id, ref or time. The
snapshot picker offers the snapshots of the page shown (never thousands of options).
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

from icecore.errors import IcecoreError
from icecore.health import format_bytes
from icecore.metadata_events import MetadataEvent
from icecore.metadata_log import MAX_FILES_READ, TIME_BOUND_S
from icecore.point_in_time import At
from icecore.row_counts import SnapshotRows
from icecore.table import Table
from icecore.timeline import TimelinePoint, bin_width_ms, in_window
from ui import cost, data, figures, refs, views
from ui.shell import (
    TABLE_COLUMNS,
    TIME_CURRENT,
    bootstrap,
    escape_markdown,
    guarded,
    require_table,
    snapshot_from,
    snapshot_from_chart,
    stop,
)

PAGE_SIZE = 100
"""Snapshots (and metadata events) per page of their tables."""
EVENT_KINDS = {
    "schema": "schema",
    "spec": "partition spec",
    "sort_order": "sort order",
    "properties": "properties",
    "ref": "branch or tag",
    "location": "location",
    "format_version": "format version",
    "snapshots": "snapshots expired",
    "unreadable": "unreadable file",
    "not_read": "not read",
}
"""Event kinds as the page names them."""
WINDOW_STEPS = 200
"""The window slider moves in at most this many steps across the table's history."""
MAX_JUMP = 200
"""Longest text the jump box takes (an id, a ref name or an ISO-8601 time)."""
COSTLIEST = 100
"""The snapshots shown by what they alone keep, costliest first."""
AUTO_COUNT_BYTES = 512 * 2**20
"""Live rows of the snapshots on a page are counted without asking while the snapshots
with delete files hold at most this many bytes of data files (else behind a button)."""


def _window_options(points: tuple[TimelinePoint, ...]) -> list[int]:
    """The slider's stops: nice bin boundaries from the first snapshot to past the last."""
    first, last = points[0].timestamp_ms, points[-1].timestamp_ms
    width = bin_width_ms(first, last, WINDOW_STEPS - 1)
    start = first // width * width
    return [start + k * width for k in range((last // width * width - start) // width + 2)]


def _on_chart() -> None:
    """A click on a bin zooms the window into it; a click on a snapshot sets the time."""
    state = st.session_state.get("history_chart") or {}
    for point in (state.get("selection") or {}).get("points") or []:
        custom = point.get("customdata")
        if custom and custom[0] == figures.BIN:
            options: list[int] = st.session_state.get("history_window_options") or []
            if len(options) < 2:
                return
            start, end = int(custom[1]), int(custom[2])
            lo = max((o for o in options if o <= start), default=options[0])
            hi = min((o for o in options if o >= end), default=options[-1])
            st.session_state["history_window"] = (lo, hi if hi > lo else options[-1])
            return
    snapshot_from_chart("history_chart")


def _on_jump(table: Table, newest_first: list[int], ops: dict[int, str]) -> None:
    """Go to the page of the snapshot an id, a ref or a time names, and pick it."""
    st.session_state.pop("history_jump_error", None)
    text = str(st.session_state.get("history_jump") or "").strip()[:MAX_JUMP]
    if not text:
        return
    try:
        found = At.guess(text, table.refs()).resolve(table).snapshot
    except IcecoreError as error:
        st.session_state["history_jump_error"] = str(error)
        return
    assert found is not None
    chosen = st.session_state.get("history_ops") or []
    if chosen and ops.get(found.snapshot_id) not in chosen:
        st.session_state["history_ops"] = []  # show it, even if the filter hid it
        chosen = []
    rows = [i for i in newest_first if not chosen or ops[i] in chosen]
    st.session_state["history_page"] = rows.index(found.snapshot_id) // PAGE_SIZE + 1
    st.session_state["history_pick"] = found.snapshot_id


def _event_row(e: MetadataEvent) -> dict[str, Any]:
    return {
        "committed at": views.format_ms(e.timestamp_ms),
        "type of change": EVENT_KINDS.get(e.kind, e.kind),
        "what changed": "; ".join(e.changes),
        "in metadata file": views.short_path(e.metadata_file, 40),
        views.FULL_PATH: e.metadata_file,
    }


def _row(p: TimelinePoint, counted: SnapshotRows) -> dict[str, Any]:
    return {
        "snapshot": str(p.snapshot_id),
        "committed at": views.format_ms(p.timestamp_ms),
        "lane": p.lane,
        "operation": p.operation or views.EMPTY,
        "refs": ", ".join(p.refs),
        "data files +": p.added_data_files,
        "data files −": p.removed_data_files,
        "delete files +": p.added_delete_files,
        "delete files −": p.removed_delete_files,
        "rows +": counted.rows_added,
        "rows −": counted.rows_removed,
        "removed by": views.removed_by_text(counted.rows_removed, counted.rows_removed_by),
        "live rows": counted.rows_live,
        "records before deletes": p.total_records,
        "parent": str(p.parent_id or ""),
        "sequence number": p.sequence_number,
        "schema id": p.schema_id,
        "current": p.is_current,
        "note": counted.rows_note,
    }


context = bootstrap("History")
table, snapshot = require_table(context)
metadata = table.metadata
tl = data.timeline_of(table.metadata_location, table)
selected = context.snapshot_id if context.selection.time_kind != TIME_CURRENT else None

st.title(f"History of {escape_markdown(table.identifier)}")
latest = data.latest_events(table)
if latest:
    with st.container(border=True, key="history_latest"):
        st.markdown(
            f"**The latest commit changed the table's metadata** "
            f"({views.format_ms(latest[0].timestamp_ms)}):"
        )
        st.dataframe(
            [_event_row(e) for e in latest],
            hide_index=True,
            width="stretch",
            key="history_latest_events",
        )
        st.caption("Every metadata change is listed under Metadata changes below.")
lanes = f"{len(tl.lanes)} lane{'s' if len(tl.lanes) != 1 else ''}"
if not tl.points:
    st.caption(f"0 snapshots on {lanes}.")
    st.plotly_chart(figures.timeline_figure(tl), key="history_chart", width="stretch")
    st.info("The table has no snapshot yet.")
    stop()

window: tuple[int, int] | None = None
if len(tl.points) > figures.MAX_MARKERS:
    options = _window_options(tl.points)
    st.session_state["history_window_options"] = options
    held = st.session_state.get("history_window")
    if held is not None and not (
        isinstance(held, tuple | list) and len(held) == 2 and all(v in options for v in held)
    ):
        del st.session_state["history_window"]  # another table's window
    lo, hi = st.select_slider(
        "Window",
        options,
        value=(options[0], options[-1]),
        key="history_window",
        format_func=lambda ms: views.format_ms(ms),
        help="Narrow the window (or click a bin) to draw each snapshot: at most "
        f"{figures.MAX_MARKERS:,} snapshots are drawn one by one.",
    )
    window = (lo, hi)
    if window != (options[0], options[-1]):
        st.button(
            "Whole history",
            key="history_window_all",
            on_click=lambda: st.session_state.update(history_window=(options[0], options[-1])),
        )
in_view = tl.points if window is None else in_window(tl.points, *window)
binned = len(in_view) > figures.MAX_MARKERS
if binned:
    width = figures.width_label(
        bin_width_ms(in_view[0].timestamp_ms, in_view[-1].timestamp_ms, figures.MAX_BINS)
    )
    how = (
        f"drawn as counts per {width}: a square's size grows with its snapshots, its color is "
        "its most frequent operation · click a square to zoom in, or narrow the window."
    )
else:
    how = (
        "marker size grows with records added · click a snapshot to read the table there "
        "(it sets the time selector)."
    )
shown_of = f"{len(in_view):,} of {len(tl.points):,}" if window else f"{len(tl.points):,}"
st.caption(f"{shown_of} snapshots on {lanes} · {how}")
st.plotly_chart(
    figures.timeline_figure(tl, selected, window),
    key="history_chart",
    on_select=_on_chart,
    selection_mode="points",
    width="stretch",
)

st.subheader("Snapshots")
newest_first = [p.snapshot_id for p in reversed(tl.points)]
operation_of = {p.snapshot_id: p.operation for p in tl.points}
operations = sorted(set(operation_of.values()))
left, middle, right = st.columns([2, 2, 1], vertical_alignment="bottom")
chosen_ops = left.multiselect(
    "Operations",
    operations,
    key="history_ops",
    placeholder="All operations",
    format_func=lambda o: o or "no operation",
)
middle.text_input(
    "Go to a snapshot id, branch, tag or time",
    key="history_jump",
    max_chars=MAX_JUMP,
    placeholder="6842398851052843, main, 2024-08-09T10:00:00Z",
    on_change=_on_jump,
    args=(table, newest_first, operation_of),
)
rows = [p for p in reversed(tl.points) if not chosen_ops or p.operation in chosen_ops]
pages = max(1, math.ceil(len(rows) / PAGE_SIZE))
held_page = st.session_state.get("history_page")
if not isinstance(held_page, int) or not 1 <= held_page <= pages:
    st.session_state["history_page"] = 1
page = int(
    right.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages, key="history_page")
)
jump_error = st.session_state.get("history_jump_error")
if jump_error:
    st.error(escape_markdown(jump_error), icon=":material/error:")
on_page = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
page_ids = tuple(p.snapshot_id for p in on_page)
pending, pending_bytes = data.rows_reading_needed(table, page_ids)
count_here = (
    pending == 0
    or (pending_bytes is not None and pending_bytes <= AUTO_COUNT_BYTES)
    or bool(st.session_state.get("history_count_rows"))
)
counted = guarded(lambda: data.snapshot_rows(table, page_ids, count_here))
st.dataframe(
    [_row(p, c) for p, c in zip(on_page, counted, strict=True)],
    hide_index=True,
    width="stretch",
    key="history_snapshots",
    placeholder="",
)
first = (page - 1) * PAGE_SIZE + 1
st.caption(
    f"Snapshots {first:,}–{first + len(on_page) - 1:,} of {len(rows):,}, newest first"
    + (f" ({len(tl.points):,} in all)" if chosen_ops else "")
    + ". rows +: records of the data files added; rows −: rows a reader saw before and "
    "not after (removed files and deletes); live rows: what a reader sees, deletes applied "
    "(Spark's count(*)); records before deletes: the summary's total-records. Empty cells: "
    "not recorded by the writer, or not counted (the note says why)."
    if on_page
    else "No snapshot has the chosen operations."
)
if not count_here:
    size = format_bytes(pending_bytes) if pending_bytes is not None else "an unknown size"
    st.button(
        f"Count live rows on this page: reads {pending:,} snapshot{'s' if pending != 1 else ''}"
        f" whose metadata cannot tell ({size} of data files)",
        key="history_count_rows_button",
        on_click=lambda: st.session_state.update(history_count_rows=True),
    )

by_id = {p.snapshot_id: p for p in tl.points}
pick_ids = [p.snapshot_id for p in on_page]
for extra in (st.session_state.get("history_pick"), selected):
    if isinstance(extra, int) and extra in by_id and extra not in pick_ids:
        pick_ids.insert(0, extra)
if not pick_ids:
    pick_ids = newest_first[:1]
labels = {
    i: f"{i} · {views.format_ms(by_id[i].timestamp_ms)} · {by_id[i].operation or 'no operation'}"
    + (f" · {', '.join(by_id[i].refs)}" if by_id[i].refs else "")
    for i in pick_ids
}
if st.session_state.get("history_pick") not in labels:
    st.session_state["history_pick"] = selected if selected in labels else pick_ids[0]
refs.keep_pick("history_pick", labels)
left, right = st.columns([3, 1], vertical_alignment="bottom")
picked = left.selectbox(
    "Snapshot (of this page; go to any other above)",
    pick_ids,
    key="history_pick",
    format_func=lambda i: labels.get(i, str(i)),
)
right.button(
    "Read the table at this snapshot",
    key="history_use",
    on_click=snapshot_from,
    args=("history_pick",),
)
acted_on = picked if picked is not None else pick_ids[0]
linked_ref = context.selection.ref
refs.actions(
    context,
    table,
    acted_on,
    prefix="ref_h_",
    picked_ref=linked_ref
    if linked_ref in metadata.refs and metadata.refs[linked_ref].snapshot_id == acted_on
    else None,
)

st.subheader("Metadata changes")
files = len(metadata.metadata_log) + 1
if not data.events_ready(table) and not st.session_state.get("history_events_read"):
    st.button(
        f"Read the {files:,} metadata files of the log",
        key="history_events_read",
        help=f"Each of this table's metadata files lists {len(metadata.snapshots):,} "
        f"snapshots (megabytes): the log is read when asked, with its progress, at most "
        f"{MAX_FILES_READ:,} files or {TIME_BOUND_S:g} s per request.",
    )
read_log = data.events_ready(table) or bool(st.session_state.get("history_events_read"))
events = data.events_of(table) if read_log else ()
kinds = sorted({e.kind for e in events}, key=list(EVENT_KINDS).index)
left, right = st.columns([4, 1], vertical_alignment="bottom")
chosen_kinds = left.multiselect(
    "Kinds",
    kinds,
    key="history_event_kinds",
    placeholder="All kinds",
    format_func=lambda k: EVENT_KINDS.get(k, k),
)
shown_events = [e for e in reversed(events) if not chosen_kinds or e.kind in chosen_kinds]
event_pages = max(1, math.ceil(len(shown_events) / PAGE_SIZE))
held_event_page = st.session_state.get("history_events_page")
if not isinstance(held_event_page, int) or not 1 <= held_event_page <= event_pages:
    st.session_state["history_events_page"] = 1
event_page = int(
    right.number_input(
        f"Page (of {event_pages:,})", min_value=1, max_value=event_pages, key="history_events_page"
    )
)
on_event_page = shown_events[(event_page - 1) * PAGE_SIZE : event_page * PAGE_SIZE]
st.dataframe(
    [_event_row(e) for e in on_event_page],
    hide_index=True,
    width="stretch",
    key="history_events",
    placeholder="",
)
first_event = (event_page - 1) * PAGE_SIZE + 1
if read_log:
    st.caption(
        (
            f"Events {first_event:,}–{first_event + len(on_event_page) - 1:,} of "
            f"{len(shown_events):,}, newest first"
            if on_event_page
            else "No metadata change" + (" of the chosen kinds" if chosen_kinds else "")
        )
        + f", from the {files:,} metadata files of the log (each compared with the one "
        "before it). Commits that add a snapshot are in the snapshot table above."
    )

left, right = st.columns(2)
with left:
    st.subheader("Branches and tags")
    refs.refs_table(metadata, key="history_refs")
    st.caption("Retention: empty cells mean the table's history.expire.* property applies.")
with right:
    st.subheader("Metadata log")
    st.dataframe(
        [
            {
                "replaced at": views.format_ms(e.timestamp_ms),
                "metadata file": views.short_path(e.metadata_file, 40),
                views.FULL_PATH: e.metadata_file,
            }
            for e in reversed(metadata.metadata_log)
        ],
        hide_index=True,
        width="stretch",
        column_config={"metadata file": TABLE_COLUMNS["file"], **TABLE_COLUMNS},
    )
    st.caption(
        f"{len(metadata.metadata_log):,} earlier metadata files; the current one is "
        f"{escape_markdown(table.metadata_location)} (last updated "
        f"{views.format_ms(metadata.last_updated_ms)})."
    )

st.subheader("What each ref costs")
st.caption(
    "Bytes and files kept alive by a ref alone: the snapshots only it reaches (a branch: its "
    "head and ancestors; a tag: its snapshot) and the manifest lists, manifests, data and "
    "delete files no other snapshot reaches. Dropping the ref and expiring those snapshots "
    "deletes exactly these; counted from the manifests."
)
if not metadata.snapshots:
    st.caption("The table has no snapshot yet.")
elif cost.retention_ready(table) or st.button(
    # The page reads metadata only (long histories); this reads every manifest: on demand.
    "Read what each ref costs",
    key="history_retention",
    help=f"Reads the manifest lists of {len(metadata.snapshots):,} snapshots and their manifests.",
):
    kept = guarded(lambda: cost.retention_of(table))

    def _kinds(by: Any) -> dict[str, str]:
        return {
            f"{kind.replace('_', ' ')}s": f"{by.files[kind]:,} ({format_bytes(by.bytes[kind])})"
            for kind in ("data", "delete", "manifest", "manifest_list")
        }

    st.dataframe(
        [
            {
                "ref": r.name,
                "type": r.kind,
                "snapshots only it keeps": len(r.snapshots),
                "exclusive bytes": r.cost.exclusive_bytes,
                "exclusive files": r.cost.exclusive_files,
                "size": format_bytes(r.cost.exclusive_bytes),
                **_kinds(r.cost),
            }
            for r in kept.refs
        ],
        hide_index=True,
        width="stretch",
        key="history_ref_costs",
    )
    st.caption(
        f"The table's snapshots reach {kept.total.exclusive_files:,} files "
        f"({format_bytes(kept.total.exclusive_bytes)}) in all."
    )
    with st.expander(f"Snapshots by what they alone keep (the {COSTLIEST} costliest)"):
        st.caption(
            "Expiring a snapshot deletes exactly these; a snapshot a ref points at can be "
            "expired only once the ref is dropped."
        )
        costliest = sorted(kept.snapshots, key=lambda c: -c.cost.exclusive_bytes)[:COSTLIEST]
        st.dataframe(
            [
                {
                    "snapshot": str(c.snapshot_id),
                    "committed": views.format_ms(c.timestamp_ms),
                    "operation": c.operation,
                    "refs": ", ".join(c.refs),
                    "kept only by": c.owner,
                    "exclusive bytes": c.cost.exclusive_bytes,
                    "exclusive files": c.cost.exclusive_files,
                    **_kinds(c.cost),
                }
                for c in costliest
            ],
            hide_index=True,
            width="stretch",
            key="history_snapshot_costs",
        )
