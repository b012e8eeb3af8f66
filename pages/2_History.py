"""History: snapshots over time on branch and tag lanes, the refs, and the metadata log."""

from __future__ import annotations

import streamlit as st

from icecore.timeline import timeline
from ui import figures, refs, views
from ui.shell import (
    TIME_CURRENT,
    bootstrap,
    escape_markdown,
    require_table,
    snapshot_from,
    snapshot_from_chart,
    stop,
)

context = bootstrap("History")
table, snapshot = require_table(context)
metadata = table.metadata
tl = timeline(metadata)
selected = context.snapshot_id if context.selection.time_kind != TIME_CURRENT else None

st.title(f"History of {escape_markdown(table.identifier)}")
st.caption(
    f"{len(tl.points):,} snapshots on {len(tl.lanes)} lane{'s' if len(tl.lanes) != 1 else ''} · "
    "marker size grows with rows "
    "added · click a snapshot to read the table there (it sets the time selector)."
)
st.plotly_chart(
    figures.timeline_figure(tl, selected),
    key="history_chart",
    on_select=lambda: snapshot_from_chart("history_chart"),
    selection_mode="points",
    width="stretch",
)

if not tl.points:
    st.info("The table has no snapshot yet.")
    stop()
ids = [p.snapshot_id for p in reversed(tl.points)]
labels = {
    p.snapshot_id: f"{p.snapshot_id} · {views.format_ms(p.timestamp_ms)} · {p.operation}"
    + (f" · {', '.join(p.refs)}" if p.refs else "")
    for p in tl.points
}
refs.keep_pick("history_pick", labels)
left, right = st.columns([3, 1], vertical_alignment="bottom")
picked = left.selectbox(
    "Snapshot",
    ids,
    key="history_pick",
    index=ids.index(selected) if selected in ids else 0,
    format_func=lambda i: labels[i],
)
right.button(
    "Read the table at this snapshot",
    key="history_use",
    on_click=snapshot_from,
    args=("history_pick",),
)
refs.actions(context, table, picked if picked is not None else ids[0], prefix="ref_h_")

st.subheader("Snapshots")
st.dataframe(
    [
        {
            "snapshot": str(p.snapshot_id),
            "committed at": views.format_ms(p.timestamp_ms),
            "lane": p.lane,
            "operation": p.operation,
            "refs": ", ".join(p.refs),
            "data files +": p.added_data_files,
            "data files −": p.removed_data_files,
            "delete files +": p.added_delete_files,
            "delete files −": p.removed_delete_files,
            "rows +": p.added_records,
            "rows −": p.removed_records,
            "total rows": p.total_records,
            "parent": str(p.parent_id or ""),
            "sequence number": p.sequence_number,
            "schema id": p.schema_id,
            "current": p.is_current,
        }
        for p in reversed(tl.points)
    ],
    hide_index=True,
    width="stretch",
    key="history_snapshots",
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
            {"replaced at": views.format_ms(e.timestamp_ms), "metadata file": e.metadata_file}
            for e in reversed(metadata.metadata_log)
        ],
        hide_index=True,
        width="stretch",
    )
    st.caption(
        f"{len(metadata.metadata_log):,} earlier metadata files; the current one is "
        f"{escape_markdown(table.metadata_location)} (last updated "
        f"{views.format_ms(metadata.last_updated_ms)})."
    )
