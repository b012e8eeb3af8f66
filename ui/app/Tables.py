"""Icecore's landing page: the tables of the selected catalog, and a tour of the pages.

Thin by design: every fact shown comes from ``icecore``; ``ui`` holds the Streamlit helpers.

The repository's ``app.py`` is a link to this file, so ``streamlit run app.py`` runs it as the
main script while the sidebar's page list names it "Tables": Streamlit labels the main page by
the file name its path resolves to, and DESIGN.md keeps the ``pages/`` directory (no
``st.navigation``), which offers no other way to name it. ``icecore app`` runs this file where
the package is installed (:mod:`ui.app` says why it lives here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from icecore.errors import IcecoreError
from ui import alerts, catalog_health, data, identity, views
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

# The catalog at a glance (DESIGN.md "Catalog health"): one row per table the session may see,
# with its sizes, last commit and score; kept by metadata file, so a second visit reads nothing
# but the catalog's listing (ui.catalog_health).
TABLE_LAYOUT: dict[str, Any] = {
    "column_order": (
        "open",
        "score",
        "rows",
        "data size",
        "data files",
        "avg file bytes",
        "small-file share",
        "delete files",
        "deleted rows",
        "snapshots",
        "manifests",
        "metadata.json bytes",
        "last commit",
        "operation",
        "writer",
        "factors",
        "estimated",
        "error",
        "catalog",
        "metadata file",
        "metadata location",
    ),
    "column_config": {
        "open": st.column_config.LinkColumn(
            "table", display_text=r"[?&]table=([^&]+)", help="Open the table's Overview."
        ),
        "score": st.column_config.ProgressColumn(
            "score",
            min_value=0,
            max_value=100,
            format="%d",
            help="100 less the points of each finding that is not ok (see 'factors'); "
            "the Overview shows each finding.",
        ),
        "small-file share": st.column_config.NumberColumn(format="percent"),
        "metadata.json bytes": st.column_config.NumberColumn(format="compact"),
        "avg file bytes": st.column_config.NumberColumn(format="compact"),
        "estimated": st.column_config.TextColumn(
            help="Numbers taken from snapshot summaries rather than counted from the "
            "manifests (a table past the live-file bound)."
        ),
        "metadata file": st.column_config.TextColumn(
            help="The current metadata file, shortened from the left so its name shows; "
            "the whole path is in 'metadata location'."
        ),
    },
}
"""The catalog table's columns: the name links to the Overview; numbers stay numbers."""

catalogs: list[tuple[str, list[catalog_health.Located]]] = []
for catalog in [context.catalog, *companions(context.catalog)]:
    try:
        catalogs.append((catalog, catalog_health.located(catalog)))
    except IcecoreError as error:
        show_error(error)


# A REST catalog names a table's metadata file only by loading the whole table (one request
# each, with credentials vended for it): its tables are listed by name, and their health and
# locations are read when asked.
lazy = {c for c, _ in catalogs if catalog_health.loads_whole_tables(c)}
if lazy and not st.toggle(
    "Read the health of REST tables (one loadTable request per table)", key="home_rest_health"
):
    skipped = lazy
else:
    skipped = set()


def _named(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Page rows with their shortened metadata file names."""
    for row in rows:
        location = row["metadata location"]
        row["metadata file"] = views.short_path(location, 48) if location is not None else ""
    return rows


def table_rows(
    partial: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every catalog's page rows, each with its shortened metadata file name.

    ``partial`` is given every catalog's rows so far while tables are read (names only for
    those not read yet), to draw the catalog filling in.
    """
    done: list[dict[str, Any]] = []
    for at, (catalog, tables) in enumerate(catalogs):
        if catalog in skipped:
            done.extend(catalog_health.page_rows(catalog, catalog_health.listing_rows(tables)))
            continue
        later = (
            [
                row
                for c, t in catalogs[at + 1 :]
                for row in catalog_health.page_rows(c, catalog_health.listing_rows(t))
            ]
            if partial is not None
            else []
        )

        def so_far(
            rows: list[dict[str, Any]], catalog: str = catalog, later: list[Any] = later
        ) -> None:
            assert partial is not None
            partial(_named([*done, *catalog_health.page_rows(catalog, rows), *later]))

        try:
            found = catalog_health.health_rows(
                catalog, tables, partial=so_far if partial is not None else None
            )
        except IcecoreError as error:
            show_error(error)
            continue
        done.extend(catalog_health.page_rows(catalog, found))
    return _named(done)


listed = sum(len(tables) for _, tables in catalogs)
if listed:
    left, right = st.columns([2, 1])
    needle = left.text_input(
        "Filter tables",
        key="home_filter",
        placeholder="a name, writer, operation or factor",
        max_chars=200,
    )
    sort = right.selectbox("Sort by", options=list(catalog_health.SORTS), key="home_sort")
    slot = st.empty()

    def show(rows: list[dict[str, Any]], note: str | None) -> None:
        """The catalog table in ``slot`` (drawn again as rows fill in, and when all are read)."""
        shown = catalog_health.sort_rows(catalog_health.filter_rows(rows, needle), sort)
        slot.empty()  # the last draw's elements go before the next is drawn
        with slot.container():
            st.subheader(views.count_of(len(rows), "table"))
            # The same elements each time (a caption, a message, the table): a redraw
            # replaces them one for one, and leaves none of an earlier draw behind.
            st.caption(note or "Every table's manifests read: sizes, small files and scores.")
            if needle and not shown:
                st.info("No table matches the filter.")
            else:
                st.empty()
            st.dataframe(shown, hide_index=True, width="stretch", **TABLE_LAYOUT)

    def filling(rows: list[dict[str, Any]]) -> None:
        """The rows read so far, redrawn while the rest are read."""
        read = sum(1 for r in rows if r["score"] is not None or r["error"])
        show(
            rows,
            f"{read:,} of {len(rows):,} tables read so far; the rest fill in as their "
            "metadata and manifests are read (sizes, small files and scores)…",
        )

    show(table_rows(partial=filling), None)
    names = [(c, str(ident)) for c, tables in catalogs if c in skipped for ident, _, _ in tables]
    if names:
        picked = st.selectbox(
            "Metadata location of (REST tables load on demand)",
            options=range(len(names)),
            format_func=lambda i: f"{names[i][1]} ({names[i][0]})",
            index=None,
            key="home_location_of",
        )
        if picked is not None:
            try:
                st.text(data.metadata_location(*names[picked]))
            except IcecoreError as error:
                show_error(error)
    if (hook := alerts.webhook_host()) is not None:
        with st.expander(f"Alerts go to {hook}"):
            sent = [r for c, _ in catalogs for r in alerts.recent_alerts(c)]
            if sent:
                st.dataframe(sent, hide_index=True, width="stretch")
            else:
                st.caption("None sent yet: `icecore alerts CATALOG` sends what is new.")
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
