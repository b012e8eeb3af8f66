"""Icecore's landing page: the tables of the selected catalog, and a tour of the pages.

Thin by design: every fact shown comes from ``icecore``; ``ui`` holds the Streamlit helpers.

The repository's ``app.py`` is a link to this file, so ``streamlit run app.py`` runs it as the
main script while the sidebar's page list names it "Tables": Streamlit labels the main page by
the file name its path resolves to, and DESIGN.md keeps the ``pages/`` directory (no
``st.navigation``), which offers no other way to name it. ``icecore app`` runs this file where
the package is installed (:mod:`ui.app` says why it lives here).
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from icecore.errors import IcecoreError
from ui import data, identity, views
from ui.app import PAGES
from ui.served import companions
from ui.shell import bootstrap, show_error, stop

context = bootstrap("Tables")
st.title("Icecore")
st.caption(
    "Explore Apache Iceberg tables: history, metadata tree, pruned scans, time travel, "
    "guarded evolution. "
    "Pick a catalog and a table in the sidebar, or open one below."
)
if context.failed:
    stop()

rows: list[dict[str, str | None]] = []
lazy: list[tuple[str, str]] = []  # (catalog, table) whose location is loaded on demand
for catalog in [context.catalog, *companions(context.catalog)]:
    try:
        found = data.table_rows(catalog)
    except IcecoreError as error:
        show_error(error)
        continue
    for row in found:
        link = "Overview?" + urlencode({"catalog": catalog, "table": str(row["table"])})
        location = row["metadata location"]
        shown = views.short_path(location, 48) if location is not None else "loaded on demand"
        rows.append({**row, "open": link, "metadata file": shown})
        if row["metadata location"] is None:
            lazy.append((catalog, str(row["table"])))

if rows:
    st.subheader(views.count_of(len(rows), "table"))
    st.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        column_order=("table", "open", "catalog", "metadata file", "metadata location"),
        column_config={
            "open": st.column_config.LinkColumn("open", display_text="Overview →"),
            "metadata file": st.column_config.TextColumn(
                help="The current metadata file, shortened from the left so its name shows; "
                "the whole path is in 'metadata location'."
            ),
        },
    )
    if lazy:
        # A REST catalog answers a table's location only with the whole table: one request
        # per table, so the listing leaves it out and loads the one asked for.
        picked = st.selectbox(
            "Metadata location of (REST tables load on demand)",
            options=range(len(lazy)),
            format_func=lambda i: f"{lazy[i][1]} ({lazy[i][0]})",
            index=None,
            key="home_location_of",
        )
        if picked is not None:
            try:
                st.text(data.metadata_location(*lazy[picked]))
            except IcecoreError as error:
                show_error(error)
elif identity.policy() is not None:
    st.info("No table of this catalog is yours to see: your grants name none of them.")
else:
    st.info("No tables found in this catalog.")

view_rows: list[dict[str, str]] = []
for catalog in [context.catalog, *companions(context.catalog)]:
    try:
        for name in data.view_names(catalog):
            link = "Views?" + urlencode({"catalog": catalog, "view": name})
            view_rows.append({"view": name, "open": link, "catalog": catalog})
    except IcecoreError as error:
        show_error(error)
if view_rows:
    st.subheader(views.count_of(len(view_rows), "view"))
    st.dataframe(
        view_rows,
        hide_index=True,
        width="stretch",
        column_config={"open": st.column_config.LinkColumn("open", display_text="View →")},
    )

st.subheader("Pages")
for page in PAGES:
    st.page_link(
        page.file,
        label=f"**{page.title}** — {page.description}",
        query_params=context.selection.to_params(),
    )
