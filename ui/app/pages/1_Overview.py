"""Overview: what the table is, what it holds at the selected point, and how healthy it is."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from icecore import describe, health
from icecore.errors import IcecoreError
from icecore.metadata import MAIN_BRANCH
from ui import catalog_health, cost, data, views
from ui.shell import (
    TIME_CURRENT,
    bootstrap,
    count_metric,
    escape_markdown,
    guarded,
    require_point,
    require_table,
    show_error,
)

# Live rows after deletes are counted at once up to this many data files, else on demand.
AUTO_COUNT_FILES = 2_000

AUTO_TREND_SNAPSHOTS = 200
"""A branch history up to this many snapshots is read for the trend at once, else on demand."""

LIVE_HELP = "Rows a reader sees: every delete applied."
"""The live-rows tile's help (its label stays short enough for the tile: a long one is cut)."""

context = bootstrap("Overview")
table, snapshot = require_table(context)
metadata = table.metadata

st.title(f"{escape_markdown(table.identifier)}")
when = context.selection.describe_time()
st.caption(
    f"{escape_markdown(context.catalog)} · at {escape_markdown(when)} · "
    f"metadata file {escape_markdown(table.metadata_location)}"
)
selection = context.selection
point = require_point(context)
state = guarded(lambda: data.state_of(table, point))
if selection.time_kind != TIME_CURRENT:
    shown = views.snapshot_text(snapshot)
    current = metadata.current_snapshot_id
    st.info(
        f"Shown at {escape_markdown(when)}: snapshot {escape_markdown(shown)}"
        + ("" if snapshot is None or snapshot.snapshot_id != current else " (the current one)")
        + f". Schema {state.schema.schema_id}, partition spec {state.spec.spec_id} and sort "
        f"order {state.sort_order.order_id} are those of that point. "
        f"{escape_markdown(state.note)}",
        icon=":material/history:",
    )
cols = st.columns(5)
cols[0].metric("Format version", metadata.format_version)
count_metric(cols[1], "Snapshots", len(metadata.snapshots))
cols[2].metric("Schema id", state.schema.schema_id)
cols[3].metric("Partition spec id", state.spec.spec_id)
cols[4].metric("Sort order id", state.sort_order.order_id)
st.dataframe(
    [
        {"": "snapshot", "value": views.snapshot_text(snapshot)},
        {"": "last updated", "value": views.format_ms(metadata.last_updated_ms)},
        {"": "location", "value": metadata.location},
        {"": "table uuid", "value": metadata.table_uuid or "(none: a v1 table without one)"},
        # Shortened from the left so the file's name shows; the caption above has all of it.
        {"": "metadata file", "value": views.short_path(table.metadata_location, 72)},
    ],
    hide_index=True,
    width="stretch",
)

manifests, files = guarded(lambda: data.layout(table, snapshot))
totals = health.totals(snapshot, manifests, files)

st.subheader("Totals")
st.caption(
    "Counted from the live files of the snapshot's manifests. Rows in data files are record "
    "counts before deletes; live rows have every delete applied."
)
cols = st.columns(5)
count_metric(cols[0], "Data files", totals.data_files)
count_metric(cols[1], "Delete files", totals.delete_files)
count_metric(cols[2], "Rows in data files", totals.rows)
cols[3].metric("Data size", health.format_bytes(totals.data_bytes))
cols[4].metric("Delete size", health.format_bytes(totals.delete_bytes))
cols = st.columns(5)
count_metric(cols[0], "Position delete files", totals.position_delete_files)
count_metric(cols[1], "Deletion vectors", totals.deletion_vectors)
count_metric(cols[2], "Equality delete files", totals.equality_delete_files)
count_metric(cols[3], "Delete records", totals.delete_records)
with cols[4]:
    if snapshot is None:
        st.metric("Live rows", "0", help=LIVE_HELP)
    elif totals.delete_files == 0:
        count_metric(
            st,
            "Live rows",
            totals.rows,
            help=f"{LIVE_HELP} No delete files are live, so every row of the data files is live.",
        )
    elif totals.data_files <= AUTO_COUNT_FILES or st.button(
        "Count live rows",
        key="overview_count",
        help=f"Reads the {totals.data_files:,} data files with their deletes applied.",
    ):
        try:
            live = data.live_rows(table.metadata_location, snapshot.snapshot_id, table)
            count_metric(st, "Live rows", live, help=f"{LIVE_HELP} Read with deletes applied.")
        except IcecoreError as error:
            show_error(error)

if totals.summary:
    with st.expander("Snapshot summary totals (as the writer recorded them)"):
        st.caption(
            "The writer's own running totals from the snapshot summary; kept apart from the "
            "counts above, which come from the manifests."
        )
        st.dataframe(
            [{"summary key": k, "value": v} for k, v in sorted(totals.summary.items())],
            hide_index=True,
        )

st.subheader("Health")
for finding in health.findings(metadata, manifests, files, totals, spec=state.spec):
    with st.container(border=True):
        st.markdown(
            f"{views.STATUS_ICONS[finding.status]} **{escape_markdown(finding.title)}** — "
            f"{escape_markdown(finding.detail)}"
        )
        with st.expander("Evidence"):
            st.dataframe(
                views.key_value_rows(finding.evidence, "measure"),
                hide_index=True,
                width="stretch",
            )

st.subheader("Metadata size")
try:
    bloat = catalog_health.metadata_bloat(table.metadata_location, table)
except IcecoreError as error:
    show_error(error)
else:
    lists = bloat["manifest_lists"]
    st.caption(
        f"metadata.json: {health.format_bytes(bloat['file_bytes'])} (every reader loads it whole, "
        "every commit rewrites it)"
        + (
            f" · current manifest list: {health.format_bytes(lists[0]['list_bytes'])}, "
            f"{lists[0]['manifests']:,} manifests"
            if lists
            else ""
        )
    )
    for fix in bloat["fixes"]:
        st.markdown(f"- {escape_markdown(fix)}")
    with st.expander("metadata.json by part, manifests per snapshot"):
        total_json = bloat["json_bytes"] or 1
        st.dataframe(
            [
                {
                    "part": p["part"],
                    "size": health.format_bytes(p["bytes"]),
                    "share": p["bytes"] / total_json,
                    "entries": p["count"],
                    "unused": p["unused"],
                    "fix": p["fix"],
                }
                for p in bloat["parts"]
            ],
            hide_index=True,
            width="stretch",
            column_config={"share": st.column_config.NumberColumn(format="percent")},
        )
        st.dataframe(
            [
                {
                    "snapshot": str(m["snapshot_id"]),
                    "committed": views.format_ms(m["timestamp_ms"]),
                    "operation": m["operation"],
                    "manifests": m["manifests"],
                    "delete manifests": m["delete_manifests"],
                    "manifest list": health.format_bytes(m["list_bytes"]),
                    "manifests' size": health.format_bytes(m["manifest_bytes"]),
                }
                for m in lists
            ],
            hide_index=True,
            width="stretch",
        )

st.subheader("Trend")
st.caption(
    "Each snapshot of the branch, from its own manifests: data bytes and files, average file "
    "size (all live files, and the files the snapshot added), delete files and manifests. A "
    "regression is marked at the snapshot where it began, with the writer from its summary."
)
branches = sorted(metadata.branches(), key=lambda name: (name != MAIN_BRANCH, name))
if branches:
    branch = (
        st.selectbox("Branch", branches, key="overview_trend_branch")
        if len(branches) > 1
        else branches[0]
    )
    head = metadata.refs[branch].snapshot_id
    length = len(metadata.ancestors_of(head))
    if length <= AUTO_TREND_SNAPSHOTS or st.button(
        "Read the trend",
        key="overview_trend",
        help=f"Reads the manifest lists of {length:,} snapshots and their manifests.",
    ):
        try:
            result = cost.trend_of(table, branch)
        except IcecoreError as error:  # an old snapshot's files gone: the rest still shows
            show_error(error)
            result = None
        if result is not None:
            st.plotly_chart(cost.trend_figure(result), key="overview_trend_chart")
        if result is not None and result.regressions:
            st.markdown(f"**Regressions ({len(result.regressions):,})**")
            st.dataframe(
                [
                    {
                        "began at snapshot": str(r.snapshot_id),
                        "committed": r.time,
                        "what": r.what,
                        "before": r.before,
                        "after": r.after,
                        "operation": r.operation,
                        "writer": ", ".join(f"{k}={v}" for k, v in r.writer.items()),
                        "snapshots": r.snapshots,
                        "last snapshot": str(r.last_snapshot_id),
                    }
                    for r in result.regressions
                ],
                hide_index=True,
                width="stretch",
                key="overview_regressions",
            )
        elif result is not None:
            st.caption("No regression in this branch's history.")
else:
    st.caption("The table has no snapshot yet.")

st.subheader("Schema")
schema = state.schema
identifiers = ", ".join(schema.identifier_field_names()) or "none"
st.caption(
    f"Schema {schema.schema_id} (read at {escape_markdown(when)}) · identifier fields: "
    f"{escape_markdown(identifiers)}"
)
schema_rows = describe.schema_rows(schema)
st.dataframe(
    [views.field_row(row) for row in schema_rows],
    hide_index=True,
    width="stretch",
    height=views.fit_height(len(schema_rows)),
)
with st.expander("Schema history"):
    st.dataframe(
        [
            {
                "schema id": v.schema_id,
                "current": v.is_current,
                "at this point": v.schema_id == schema.schema_id,
                "fields": v.fields,
                "first used by snapshot": str(v.first_snapshot_id or ""),
                "first used at": views.format_ms(v.first_used_ms),
                "changes from the previous schema": "; ".join(v.changes),
            }
            for v in describe.schema_history(metadata)
        ],
        hide_index=True,
        width="stretch",
    )

left, right = st.columns(2)
with left:
    st.subheader("Partition specs")
    st.dataframe(
        [
            {
                "spec": r.spec_id,
                "at this point": r.is_default,
                "field": r.name,
                "transform": r.transform,
                "source": r.source,
                "": r.detail,
            }
            for r in describe.partition_spec_rows(metadata, state.spec.spec_id)
        ],
        hide_index=True,
        width="stretch",
    )
with right:
    st.subheader("Sort orders")
    st.dataframe(
        [
            {
                "order": r.spec_id,
                "at this point": r.is_default,
                "source": r.source or r.name,
                "transform": r.transform,
                "direction": r.detail,
            }
            for r in describe.sort_order_rows(metadata, state.sort_order.order_id)
        ],
        hide_index=True,
        width="stretch",
    )

st.subheader("Properties")
st.dataframe(
    [{"property": k, "value": v} for k, v in sorted(metadata.properties.items())],
    hide_index=True,
    width="stretch",
)

readers = data.views_reading(context.catalog, str(table.identifier))
if readers:
    st.subheader(f"Views that read it ({len(readers):,})")
    st.dataframe(
        [
            {
                "view": name,
                "open": "Views?" + urlencode({"catalog": context.catalog, "view": name}),
            }
            for name in readers
        ],
        hide_index=True,
        width="stretch",
        column_config={"open": st.column_config.LinkColumn("open", display_text="open →")},
    )
