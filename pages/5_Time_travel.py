"""Time travel and diff: two points of the table and everything that changed between them."""

from __future__ import annotations

import streamlit as st

from ui import data, figures, refs, views
from ui.shell import (
    TABLE_COLUMNS,
    bootstrap,
    count_metric,
    escape_markdown,
    guarded,
    require_table,
    set_time,
    stop,
)

context = bootstrap("Time travel")
table, snapshot = require_table(context)
metadata = table.metadata

st.title(f"Time travel in {escape_markdown(table.identifier)}")
st.caption(
    "Pick two points: a snapshot id, a branch or tag, or type an ISO-8601 time "
    "(2024-08-09T10:00:00Z). Files, rows, partitions, schema and specs are compared."
)
if snapshot is None:
    st.info("The table has no snapshot yet: there is nothing to compare.")
    stop()

RECENT = 50
"""The newest snapshots offered in the pickers; any other is typed (an id or a time)."""
ordered = sorted(table.snapshots(), key=lambda s: s.timestamp_ms, reverse=True)
to_default = str(snapshot.snapshot_id)
from_default = (
    str(snapshot.parent_snapshot_id)
    if snapshot.parent_snapshot_id is not None
    and table.metadata.snapshot_by_id(snapshot.parent_snapshot_id) is not None
    else str(ordered[-1].snapshot_id)
)
offered = list(ordered[:RECENT])
for default in (to_default, from_default):
    chosen = table.metadata.snapshot_by_id(int(default))
    if chosen is not None and chosen not in offered:
        offered.append(chosen)
points = [
    *sorted(table.refs(), key=lambda n: (n != "main", n)),
    *(str(s.snapshot_id) for s in offered),
]
labels = {str(s.snapshot_id): views.snapshot_text(s) for s in offered}
labels.update(
    {name: f"{name} ({'branch' if ref.is_branch else 'tag'})" for name, ref in table.refs().items()}
)
OTHER = "Another time…"
choices = [*points, OTHER]
cols = st.columns(2)
picked = {}
for col, side, default in ((cols[0], "From", from_default), (cols[1], "To", to_default)):
    choice = col.selectbox(
        side,
        choices,
        index=choices.index(default),
        key=f"tt_{side.lower()}",
        format_func=lambda p: labels.get(p, p),
        help=f"Branches and tags, then the {RECENT} newest snapshots; for any other "
        "snapshot choose “Another time…” and type its id or a time.",
    )
    if choice == OTHER:
        choice = col.text_input(
            f"{side}: a snapshot id, or an ISO-8601 time (UTC unless an offset is given)",
            key=f"tt_{side.lower()}_time",
            max_chars=200,
            placeholder="2024-08-09T10:00:00Z",
        ).strip()
    picked[side] = choice
if not picked["From"] or not picked["To"]:
    st.info("Type a time for the point marked “Another time…”.")
    stop()
before, after = picked["From"], picked["To"]

diff = guarded(lambda: data.diff(table.metadata_location, before, after, table))

st.caption(
    f"From snapshot {diff.from_snapshot_id} to snapshot {diff.to_snapshot_id}. Rows are record "
    "counts of the data files that appeared or disappeared (before deletes)."
)
counts = diff.counts
cols = st.columns(6)
count_metric(cols[0], "Data files added", counts["data files added"])
count_metric(cols[1], "Data files removed", counts["data files removed"])
count_metric(cols[2], "Delete files added", counts["delete files added"])
count_metric(cols[3], "Delete files removed", counts["delete files removed"])
count_metric(cols[4], "Rows added", counts["rows added"])
count_metric(cols[5], "Rows removed", counts["rows removed"])
st.plotly_chart(figures.diff_figure(counts), key="tt_chart", width="stretch")
st.button(
    f"Read the table at snapshot {diff.to_snapshot_id}",
    key="tt_use",
    on_click=set_time,
    kwargs={"snapshot": str(diff.to_snapshot_id)},
)
refs.actions(context, table, diff.to_snapshot_id, prefix="ref_t_")

left, right = st.columns(2)
with left:
    st.subheader("Schema changes")
    if diff.schema_changes:
        st.dataframe(diff.schema_changes, hide_index=True, width="stretch")
    else:
        st.caption("The two points read with the same schema.")
with right:
    st.subheader("Partition specs")
    st.dataframe(diff.specs, hide_index=True, width="stretch")
    st.caption("Specs with live data files before and after.")

st.subheader(f"Partitions touched ({diff.partitions_total:,})")
st.dataframe([{"partition": p} for p in diff.partitions], hide_index=True, width="stretch")

added_tab, removed_tab = st.tabs(
    [
        f"Files added ({counts['files added']:,})",
        f"Files removed ({counts['files removed']:,})",
    ]
)
with added_tab:
    st.dataframe(diff.added, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)
with removed_tab:
    st.dataframe(diff.removed, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)

st.subheader("Branches and tags")
refs.refs_table(metadata, key="tt_refs")
