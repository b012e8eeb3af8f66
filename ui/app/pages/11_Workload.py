"""Workload: what engines ask of a table, from the scan and commit reports they sent.

Issue 33 (DESIGN.md "Workload"): ``serve-rest`` keeps the ``ScanReport`` and
``CommitReport`` that Iceberg clients post to ``/metrics``; this page shows them as
``icecore workload`` prints them (:mod:`ui.workload`): scans over time by engine and
principal, the filters seen (masked by the engine, grouped) with files planned and skipped,
bytes and planning time, full-table scans, the columns filtered on most, and commits
(duration, attempts). With no table chosen, a summary per table. Filters and names come
from clients: shown as text (dataframes, ``st.code``), never as Markdown.
"""

from __future__ import annotations

import streamlit as st

from icecore.errors import IcecoreError
from ui import data, identity, workload
from ui.shell import bootstrap, escape_markdown, show_error, stop

ALL = "All tables"

context = bootstrap("Workload")
if context.failed:
    stop()
st.title("Workload")
st.caption(
    "What engines asked of this catalog's tables, from the scan and commit reports they sent "
    "to Icecore's REST server (serve-rest): filters, files planned and skipped, planning "
    "time, commits. Engines mask the values in their filters."
)

try:
    catalog = identity.guarded(data.open_catalog(context.catalog), context.catalog)
    everything = workload.visible_reports(catalog)
except IcecoreError as error:
    show_error(error)
    stop()
if not everything.kept:
    st.info(
        f"The catalog {escape_markdown(context.catalog)} keeps no reports Icecore can read "
        "here: serve-rest keeps them in a SQL catalog's database or beside a local warehouse.",
        icon=":material/info:",
    )
    stop()
if everything.skipped:
    st.warning(
        f"{everything.skipped:,} unreadable reports are left out.", icon=":material/warning:"
    )

tables = sorted({r.table for r in everything.reports})
chosen = context.selection.table if context.selection.table in tables else ALL
left, right = st.columns(2)
table = left.selectbox(
    "Table", [ALL, *tables], index=([ALL, *tables]).index(chosen), key="wl_table"
)
since = right.selectbox("Time", list(workload.SINCE_CHOICES))
cutoff = workload.since_ms(since)
reports = [
    r
    for r in everything.reports
    if (table == ALL or r.table == table) and (cutoff is None or r.time_ms >= cutoff)
]
if not reports:
    st.info("No reports yet: engines send one per scan and per commit through serve-rest.")
    stop()

if table == ALL:
    st.subheader("Tables")
    st.dataframe(workload.summary(reports), hide_index=True)
    stop()

found = workload.table_workload(reports)
scans, commits = found["scans"], found["commits"]
cols = st.columns(4)
cols[0].metric("Scans", len(scans))
cols[1].metric("Full-table scans", len(found["full_scans"]))
cols[2].metric("Commits", len(commits))
cols[3].metric("Filters seen", len(found["filters"]))

st.subheader("Scans over time")
st.dataframe(workload.scans_over_time(scans), hide_index=True)

st.subheader("Filters")
st.dataframe(found["filters"], hide_index=True)
if found["filters"]:
    st.caption("The most frequent filter, as the engine reported it (values masked):")
    st.code(found["filters"][0]["filter"], language=None, wrap_lines=True)

st.subheader("Columns filtered on most")
st.dataframe(found["columns"], hide_index=True)

st.subheader("Full-table scans")
st.dataframe(found["full_scans"], hide_index=True)

served = [s for s in reversed(scans) if s.get("plan_id")]
if served:
    st.subheader("Plans served by Icecore")
    st.caption(
        "Scans planned by this server (REST scan planning): their filters keep their values. "
        "Open one to see what it pruned, and why, in Scan preview."
    )
    st.dataframe(
        [
            {
                "time": s["time"],
                "principal": s["principal"],
                "filter": s["filter"],
                "files planned": s["result_data_files"],
                "files skipped": s["skipped_data_files"],
                "planning ms": s["planning_ms"],
                "open": workload.served_plan_link(context.catalog, table, str(s["plan_id"])),
            }
            for s in served
        ],
        hide_index=True,
        column_config={
            "open": st.column_config.LinkColumn("explain", display_text="pruning →"),
        },
    )

st.subheader("Scans")
st.dataframe(list(reversed(scans)), hide_index=True)

st.subheader("Commits")
st.dataframe(list(reversed(commits)), hide_index=True)
