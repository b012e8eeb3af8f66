"""Scan preview: a filter, what planning prunes (and why), what is left, and the rows."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from icecore.describe import quote_name
from icecore.errors import FilterError, IcecoreError
from ui import data, figures, identity, workload
from ui.app import SQL
from ui.shell import (
    TABLE_COLUMNS,
    bootstrap,
    code_label,
    count_metric,
    drive,
    escape_markdown,
    filter_from,
    require_point,
    require_table,
    set_filter,
    set_selection,
    show_error,
    stop,
)
from ui.views import MAX_TEXT, clip, count_sources

DEFAULT_LIMIT = 100
MAX_LIMIT = 100_000

context = bootstrap("Scan preview")
table, snapshot = require_table(context)
selection = context.selection
served = st.query_params.get("plan")
if served:  # a plan serve-rest served (a Workload page link): its filter and snapshot
    del st.query_params["plan"]
    try:
        catalog = identity.guarded(data.open_catalog(context.catalog), context.catalog)
        found = workload.served_plan(catalog, table, served)
    except IcecoreError as error:
        show_error(error)
        found = None
    if found is None:
        st.warning(
            "No plan served by Icecore's REST server with that id is kept for this table "
            "(served plans are kept with the table's scan reports).",
            icon=":material/search_off:",
        )
    else:
        text, snapshot_id = found
        set_selection(
            replace(selection, filter=text or None, snapshot=str(snapshot_id), ref=None, as_of=None)
        )
        st.rerun()
location = table.metadata_location
point = require_point(context)

st.title(f"Scan preview of {escape_markdown(table.identifier)}")
st.caption(f"At {escape_markdown(selection.describe_time())}.")
reads_rows = data.reads_rows(table)
rows_notice = data.rows_caption(table, point)  # a viewer: no row value; a mask: which
if rows_notice:
    st.caption(escape_markdown(rows_notice))

drive("scan_filter", selection.filter or "")
st.text_input(
    "Filter (a SQL boolean expression)",
    key="scan_filter",
    on_change=filter_from,
    args=("scan_filter",),
    placeholder="pickup_ts >= '2024-08-09' AND fare > 20",
)
view = None
try:
    view = data.plan(location, point, selection.filter, table)
except FilterError as error:
    show_error(error)  # inline, right under the filter box
except IcecoreError as error:
    show_error(error)
    stop()

try:
    examples = data.filter_examples(location, snapshot.snapshot_id if snapshot else None, table)
except IcecoreError:
    examples = []
if examples:
    st.caption("Examples — click one to use it:")
    with st.container(horizontal=True):
        for i, example in enumerate(examples):
            st.button(
                code_label(example),
                key=f"scan_example_{i}",
                on_click=set_filter,
                args=(example,),
                type="tertiary",
            )

if view is None:
    stop()

columns: list[str] = []
limit = DEFAULT_LIMIT
if reads_rows:
    readable = [c for c in view.columns if c in set(data.readable_columns(table, point))]
    cols = st.columns([3, 1])
    columns = cols[0].multiselect(
        "Columns", readable, default=readable, key="scan_columns", placeholder="All columns"
    )
    limit = cols[1].number_input(
        "Row limit", min_value=1, max_value=MAX_LIMIT, value=DEFAULT_LIMIT, key="scan_limit"
    )

counts = view.counts
st.subheader("What planning keeps")
st.caption("Bound filter:")
st.code(clip(view.filter, 20 * MAX_TEXT), language="sql", wrap_lines=True)
cols = st.columns(4)
count_metric(cols[0], "Data manifests kept", view.data_manifests_kept, counts["data_manifests"])
count_metric(cols[1], "Data files planned", counts["data_files_planned"], counts["data_files"])
count_metric(
    cols[2],
    "Records before deletes",
    counts["rows_planned"],
    counts["rows"],
    help="Records in the planned data files, before delete files and the residual filter "
    "apply (what the manifests say); the rows a reader gets are counted below.",
)
count_metric(
    cols[3], "Delete files applied", counts["delete_files_applied"], counts["delete_files"]
)

counted = st.session_state.get("scan_counted") == (location, point.key, selection.filter)
may_count = reads_rows or not selection.filter  # a filtered count depends on values
if not may_count:
    st.caption("Counting the rows a filter keeps reads their values: it needs the reader role.")
if may_count and (
    st.button(
        "Count rows returned",
        key="scan_count",
        help=(
            "Spark's count(*) for this snapshot and filter. Files without deletes under a "
            "filter their partition decides are counted from the manifests, files with only "
            "position deletes or deletion vectors from those; only files under equality "
            "deletes or a filter on values are read."
        ),
    )
    or counted
):
    st.session_state["scan_counted"] = (location, point.key, selection.filter)
    try:
        matching = data.matching_rows(location, point, selection.filter, table)
    except IcecoreError as error:
        show_error(error)
        matching = None
else:
    matching = None
if matching is not None:
    count_metric(st, "Rows returned (deletes and filter applied)", matching.rows)
    st.caption(count_sources(matching))
st.plotly_chart(
    figures.funnel_figure(
        figures.funnel_stages(counts, matching.rows if matching is not None else None)
    ),
    key="scan_funnel",
    width="stretch",
)

reasons = view.reasons
if reasons:
    st.caption(
        f"Pruned manifests and files: {view.pruned_total:,}, by reason"
        + (
            f" (reasons among the first {len(view.pruned):,})"
            if len(view.pruned) < view.pruned_total
            else ""
        )
    )
    st.dataframe(reasons, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)

kept_tab, pruned_tab, deletes_tab, rows_tab = st.tabs(
    [
        f"Planned files ({view.kept_total:,})",
        f"Pruned ({view.pruned_total:,})",
        f"Delete files applied ({counts['delete_files_applied']:,})",
        "Preview rows",
    ]
)
with kept_tab:
    if view.kept_total > len(view.kept):
        st.caption(f"The first {len(view.kept):,} of {view.kept_total:,} planned files.")
    st.dataframe(view.kept, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)
with pruned_tab:
    if view.pruned_total > len(view.pruned):
        st.caption(f"The first {len(view.pruned):,} of {view.pruned_total:,} pruned items.")
    st.dataframe(view.pruned, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)
with deletes_tab:
    if view.kept_total > len(view.kept):
        st.caption(f"Delete files of the first {len(view.kept):,} planned files.")
    st.dataframe(view.deletes, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)
with rows_tab:
    if not reads_rows:
        st.caption(escape_markdown(rows_notice or ""))
    else:
        try:
            rows = data.preview(
                location, point, selection.filter, tuple(columns) or None, int(limit), table
            )
        except IcecoreError as error:
            show_error(error)
        else:
            st.caption(
                f"{rows.num_rows:,} rows (limit {int(limit):,}; deletes and filter applied)."
            )
            st.dataframe(rows, hide_index=True, width="stretch")
        picked = (
            ", ".join(quote_name(c) for c in columns)
            if columns and (len(columns) < len(view.columns) or data.masked_columns(table, point))
            else "*"
        )
        st.page_link(
            SQL.file,
            label="Open in SQL",
            icon=":material/terminal:",
            query_params={
                **selection.to_params(),
                "sql": f"SELECT {picked} FROM rows LIMIT {int(limit)}",
            },
        )
