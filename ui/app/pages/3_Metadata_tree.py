"""Metadata tree: snapshot → manifest list → manifests → data and delete files, to scale."""

from __future__ import annotations

import streamlit as st

from icecore.health import format_bytes
from icecore.layout import MIN_BUDGET
from ui import data, figures, views
from ui.shell import (
    TABLE_COLUMNS,
    bootstrap,
    count_metric,
    escape_markdown,
    guarded,
    require_table,
    stop,
)

DEFAULT_BUDGET = 2_000
MAX_BUDGET = 20_000

context = bootstrap("Metadata tree")
table, snapshot = require_table(context)

st.title(f"Metadata tree of {escape_markdown(table.identifier)}")
if snapshot is None:
    st.info("The table has no snapshot yet: there is no manifest list to draw.")
    stop()

cols = st.columns(4)
kind = cols[0].radio("Chart", ["icicle", "treemap"], key="tree_kind", horizontal=True)
size_by = cols[1].radio("Size by", ["bytes", "rows"], key="tree_size", horizontal=True)
color_by = cols[2].radio(
    "Colour by", ["content", "spec", "partition"], key="tree_color", horizontal=True
)
budget = cols[3].number_input(
    "Node budget",
    min_value=max(MIN_BUDGET, 50),
    max_value=MAX_BUDGET,
    value=DEFAULT_BUDGET,
    step=500,
    key="tree_budget",
    help="The most nodes drawn; beyond it the smallest files and manifests fold together.",
)

manifests, files = guarded(lambda: data.layout(table, snapshot))
tree = data.tree(table.metadata_location, snapshot.snapshot_id, int(budget), str(size_by), table)

cols = st.columns(4)
count_metric(cols[0], "Manifests", tree.total_manifests)
count_metric(cols[1], "Live files", tree.total_files)
cols[2].metric("Bytes", format_bytes(tree.nodes[0].bytes))
count_metric(cols[3], "Nodes drawn", len(tree.nodes))
if tree.folded:
    st.caption(
        f"Showing {tree.shown_files:,} of {tree.total_files:,} files in {tree.shown_manifests:,} "
        f'of {tree.total_manifests:,} manifests; the rest are folded into "more" nodes to stay '
        f"within {tree.budget:,} nodes (totals stay exact). Raise the node budget to see more."
    )
else:
    st.caption(f"Every manifest and file is drawn ({len(tree.nodes):,} nodes). Click to zoom.")
st.plotly_chart(
    figures.tree_figure(tree, kind=str(kind), size_by=str(size_by), color_by=str(color_by)),
    key="tree_chart",
    width="stretch",
)

st.subheader("Manifest list")
st.caption(f"{escape_markdown(snapshot.manifest_list or '(inline manifests)')}")
st.dataframe(
    views.manifest_rows(manifests), hide_index=True, width="stretch", column_config=TABLE_COLUMNS
)

paths = [m.manifest_path for m in manifests]
chosen = st.selectbox(
    "Files of manifest",
    paths,
    key="tree_manifest",
    index=None,
    format_func=views.short_path,
    placeholder="Choose a manifest to list its files",
)
if chosen is not None:
    rows = views.files_in_manifest(files, chosen)
    st.caption(f"{len(rows):,} files shown (at most {views.MAX_ITEMS:,}).")
    st.dataframe(rows, hide_index=True, width="stretch", column_config=TABLE_COLUMNS)
