"""Time travel and diff: two points of the table and everything that changed between them.

The two points are in the link (``?from=…&to=…``, each a snapshot id, a branch or tag name,
or an ISO-8601 time): read on load, written back when changed, so a shared comparison opens
on the same points. The changed rows between them (Spark's ``create_changelog_view``) are read
on request, shown up to a stated row limit, and downloadable whole.
"""

from __future__ import annotations

import streamlit as st

from icecore.changelog import CHANGE_ORDINAL, CHANGE_TYPE, COMMIT_SNAPSHOT_ID
from icecore.errors import IcecoreError
from icecore.values import whole_number
from ui import data, figures, refs, views
from ui.shell import (
    TABLE_COLUMNS,
    bootstrap,
    count_metric,
    download_buttons,
    escape_markdown,
    guarded,
    require_table,
    set_time,
    share_link,
    show_error,
    stop,
)

POINT_PARAMS = {"From": "from", "To": "to"}
"""The link's query parameter for each point."""
MAX_POINT = 200
"""Longest point text taken from a link or typed (an id, a ref name or an ISO time)."""
CHANGELOG_LIMIT = 1_000
MAX_CHANGELOG_LIMIT = 100_000
"""Changed rows shown by default and at most (the download holds them all)."""

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
linked = {
    side: (st.query_params.get(param) or "").strip()[:MAX_POINT]
    for side, param in POINT_PARAMS.items()
}
offered = list(ordered[:RECENT])
for default in (to_default, from_default, *linked.values()):
    number = whole_number(default)
    chosen = table.metadata.snapshot_by_id(number) if number is not None else None
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
    key = f"tt_{side.lower()}"
    link = linked[side]
    if link and link != st.session_state.get(f"{key}_linked"):
        # A link's point (new, or edited in the address bar) drives the picker once.
        st.session_state[key] = link if link in choices else OTHER
        if link not in choices:
            st.session_state[f"{key}_time"] = link
    elif st.session_state.get(key) not in choices:
        st.session_state[key] = default
    choice = col.selectbox(
        side,
        choices,
        key=key,
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
    # Written back, and remembered as the link's value so it is not applied again as a new
    # link's point (a time not typed yet leaves the link as it was).
    if choice and st.query_params.get(POINT_PARAMS[side]) != choice:
        st.query_params[POINT_PARAMS[side]] = choice
    st.session_state[f"{key}_linked"] = st.query_params.get(POINT_PARAMS[side]) or ""
share_link()
if not picked["From"] or not picked["To"]:
    st.info("Type a time for the point marked “Another time…”.")
    stop()
before, after = picked["From"], picked["To"]

diff = guarded(lambda: data.diff(table.metadata_location, before, after, table))

rows = guarded(lambda: data.rows_between(table, diff))
live_text = " → ".join(
    f"{n:,}" if n is not None else "unknown" for n in (rows.live_from, rows.live_to)
)
st.caption(
    f"From snapshot {diff.from_snapshot_id} to snapshot {diff.to_snapshot_id}. Live rows "
    f"(what a reader sees, deletes applied): {live_text}. Rows added are the records of the "
    "data files that appeared; rows removed are the rows of the From point no longer read "
    "(removed files, position deletes, deletion vectors, equality deletes) and rows of added "
    f"files deleted since. Records of the data files that disappeared: "
    f"{diff.counts['records removed']:,} (before deletes)."
)
if rows.note:
    st.warning(f"Rows removed unknown: {escape_markdown(rows.note)}.", icon=":material/help:")
counts = {**diff.counts, "rows added": rows.added, "rows removed": rows.removed or 0}
cols = st.columns(6)
count_metric(cols[0], "Data files added", counts["data files added"])
count_metric(cols[1], "Data files removed", counts["data files removed"])
count_metric(cols[2], "Delete files added", counts["delete files added"])
count_metric(cols[3], "Delete files removed", counts["delete files removed"])
count_metric(cols[4], "Rows added", rows.added)
if rows.removed is not None:
    count_metric(cols[5], "Rows removed", rows.removed)
else:
    cols[5].metric("Rows removed", "unknown", help=rows.note)
st.plotly_chart(figures.diff_figure(counts), key="tt_chart", width="stretch")
st.button(
    f"Read the table at snapshot {diff.to_snapshot_id}",
    key="tt_use",
    on_click=set_time,
    kwargs={"snapshot": str(diff.to_snapshot_id)},
)
refs.actions(
    context,
    table,
    diff.to_snapshot_id,
    prefix="ref_t_",
    picked_ref=after if after in table.refs() else None,
)

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

added_tab, removed_tab, rows_tab = st.tabs(
    [
        f"Files added ({counts['files added']:,})",
        f"Files removed ({counts['files removed']:,})",
        "Changed rows",
    ]
)
with added_tab:
    st.dataframe(diff.added, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)
with removed_tab:
    st.dataframe(diff.removed, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)
with rows_tab:
    st.caption(
        f"Rows inserted and deleted after snapshot {diff.from_snapshot_id} up to snapshot "
        f"{diff.to_snapshot_id}, as Spark's create_changelog_view gives them: "
        f"`{CHANGE_TYPE}` (INSERT or DELETE), `{CHANGE_ORDINAL}` (0 for the first snapshot of "
        f"the range) and `{COMMIT_SNAPSHOT_ID}`. From must be in To's history; replace snapshots "
        "(compactions) change no row. Where the range holds delete files, Spark 1.10's view "
        "refuses; these rows are then the rows the deletes remove, read here. Values are shown "
        "as text (NULL for a null). Reading it reads the changed data files."
    )
    # Changed rows are row values: the reader role, masked columns left out (core-enforced).
    rows_notice = data.rows_caption(table, table.resolve(None))
    if rows_notice:
        st.caption(escape_markdown(rows_notice))
    if data.reads_rows(table):
        asked = (table.metadata_location, before, after)
        limit = int(
            st.number_input(
                "Rows shown",
                min_value=1,
                max_value=MAX_CHANGELOG_LIMIT,
                value=CHANGELOG_LIMIT,
                step=100,
                key="tt_changelog_limit",
            )
        )
        if st.button("Read the changed rows", key="tt_changelog") or (
            st.session_state.get("tt_changelog_for") == asked
        ):
            st.session_state["tt_changelog_for"] = asked
            try:
                changed = data.changelog(table.metadata_location, before, after, table)
            except IcecoreError as error:
                show_error(error)
            else:
                shown = min(limit, changed.num_rows)
                st.caption(
                    f"{changed.num_rows:,} changed rows; the first {shown:,} are shown (row limit "
                    f"{limit:,}); the downloads hold all {changed.num_rows:,}."
                )
                st.dataframe(
                    views.text_rows(changed.slice(0, shown)),
                    hide_index=True,
                    width="stretch",
                    key="tt_changelog_rows",
                )
                name = f"{str(table.identifier).replace('.', '_')}_changes"
                download_buttons(
                    changed,
                    name,
                    "tt_changelog",
                    f"Download all {changed.num_rows:,} rows as {{kind}}",
                )

st.subheader("Branches and tags")
refs.refs_table(metadata, key="tt_refs")
