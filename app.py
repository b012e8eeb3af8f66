"""Icecore's landing page: the tables of the selected catalog.

Thin by design: every fact shown comes from ``icecore``; ``ui`` holds the Streamlit helpers.
"""

from __future__ import annotations

import streamlit as st

from icecore.catalog import load_catalog
from icecore.errors import IcecoreError
from ui.shell import bootstrap, companion_catalogs, set_catalog, show_error


@st.cache_data(ttl=10, max_entries=32, show_spinner=False)
def list_tables(catalog: str) -> list[dict[str, str]]:
    """Rows of (catalog, table, metadata location) for one catalog; cached for a few seconds."""
    opened = load_catalog(catalog)
    return [
        {
            "catalog": catalog,
            "table": str(ident),
            "metadata location": opened.metadata_location(ident),
        }
        for ident in opened.list_tables()
    ]


context = bootstrap("Tables")
st.title("Icecore")
st.caption("Explore Apache Iceberg tables: history, metadata tree, pruned scans, time travel.")

chosen = st.text_input(
    "Catalog",
    value=context.catalog,
    help="A warehouse folder, sqlite:///catalog.db, or the path of a metadata.json.",
    key="catalog_input",
)
if chosen != context.catalog:
    set_catalog(chosen)

rows: list[dict[str, str]] = []
for catalog in [chosen, *companion_catalogs(chosen)]:
    try:
        rows.extend(list_tables(catalog))
    except IcecoreError as error:
        show_error(error)

if rows:
    st.subheader(f"{len(rows)} tables")
    st.dataframe(rows, hide_index=True, width="stretch")
else:
    st.info("No tables found in this catalog.")
