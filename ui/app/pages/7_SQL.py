"""SQL: DuckDB over the table's metadata tables and its scan rows, with downloads.

User SQL is locked down by :func:`icecore.sql.run_sql` (one SELECT, no files, no network).
"""

from __future__ import annotations

import os

import streamlit as st

from icecore.errors import IcecoreError
from icecore.inspect import KINDS
from icecore.sql import ROWS_TABLE, SqlLimits, result_cut
from pipeline.query_check import checked_query
from pipeline.spark import PipelineError
from ui import data, jobs, views
from ui.shell import (
    bootstrap,
    download_buttons,
    drive,
    escape_markdown,
    guarded,
    require_point,
    require_table,
    share_link,
    stop,
)

SPARK_JOB_KEY = "sql_spark_job"
SPARK_QUERIES_ENV = "ICECORE_SPARK_QUERIES"
"""``1`` offers "Run on Spark" (``make run`` sets it; a deployment does not: default-deny)."""

DEFAULT_SQL = f"SELECT * FROM {ROWS_TABLE} LIMIT 100"

context = bootstrap("SQL")
table, snapshot = require_table(context)
selection = context.selection

st.title(f"SQL on {escape_markdown(table.identifier)}")
st.caption(
    f"One SELECT over `{ROWS_TABLE}` (the scan at {escape_markdown(selection.describe_time())}"
    + (f", filter {escape_markdown(selection.filter)}" if selection.filter else "")
    + ") and the metadata tables: "
    + ", ".join(f"`{k}`" for k in KINDS)
    + f". `{ROWS_TABLE}` holds every live row of the scan; no files, no network; at most "
    f"{SqlLimits().max_rows:,} rows of the result come back."
)

reads_rows = data.reads_rows(table)
rows_notice = data.rows_caption(table, require_point(context))
if rows_notice:
    st.caption(
        escape_markdown(rows_notice)
        + ("" if reads_rows else " The metadata tables answer; downloads need the reader role.")
    )

# SQL in the link (a shared view, or "Open in SQL") fills the box once; then the box rules.
linked = st.query_params.get("sql")
if linked and linked != st.session_state.get("sql_linked"):
    st.session_state["sql_linked"] = linked
    drive("sql_text", linked)
elif "sql_text" not in st.session_state:
    drive("sql_text", DEFAULT_SQL)
text = st.text_area("SQL (Ctrl+Enter runs it)", key="sql_text", height=140)
st.button("Run", type="primary", key="sql_run")
if not text.strip():
    st.info("Write a SELECT statement.")
    stop()
st.query_params["sql"] = text
st.session_state["sql_linked"] = text
share_link()

# Spark can reach far beyond this table; offered only where the operator says so.
if os.environ.get(SPARK_QUERIES_ENV) == "1" and reads_rows:
    with st.expander("Run on Spark: exact answers over the whole table", expanded=False):
        st.caption(
            f"Runs the query on Spark (master {escape_markdown(jobs.spark_master())}) over "
            f"`{ROWS_TABLE}` as "
            "the whole table at the chosen snapshot (no filter, no row limit before the query), "
            "in the background. Only an allow-listed SELECT runs there: `rows` and its CTEs, the "
            "table's columns, built-in pure functions; no other table, file path, command or hint."
        )
        if st.button("Run on Spark", key="sql_spark"):
            # The job checks again; checking here refuses before any process or JVM starts.
            snapshot_id = snapshot.snapshot_id if snapshot is not None else None
            try:
                checked_query(text, table, snapshot_id)  # the reader role, the masks
            except (PipelineError, IcecoreError) as refusal:
                st.error(escape_markdown(refusal), icon=":material/block:")
            else:
                argv = [f"{context.catalog}::{table.identifier}", text]
                argv += ["--master", jobs.spark_master()]
                for column in data.mask_of(table):  # rows selects the other columns only
                    argv += ["--mask", column]
                if snapshot_id is not None:
                    argv += ["--snapshot", str(snapshot_id)]
                st.session_state[SPARK_JOB_KEY] = jobs.launch(
                    argv, module="pipeline.query", job="query"
                )
        if SPARK_JOB_KEY in st.session_state:

            @st.fragment(run_every=2.0)
            def follow_query() -> None:
                """Show the Spark query's progress, then its answer."""
                status = jobs.status(st.session_state[SPARK_JOB_KEY])
                st.markdown(f"Spark query · {status.state}")
                if status.error is not None:
                    st.error(escape_markdown(status.error), icon=":material/error:")
                elif status.result is None:
                    st.code("\n".join(status.log_tail[-8:]) or "(starting…)", language=None)
                else:
                    answer = status.result
                    st.caption(
                        f"Snapshot {answer['snapshot_id']} · {len(answer['rows']):,} rows"
                        + (" (truncated)" if answer["truncated"] else "")
                        + f" · {answer['seconds']:.1f}s on Spark"
                    )
                    st.dataframe(
                        [dict(zip(answer["columns"], row, strict=True)) for row in answer["rows"]],
                        hide_index=True,
                        width="stretch",
                        key="sql_spark_rows",
                    )

            follow_query()

point = require_point(context)
result = guarded(lambda: data.sql(table.metadata_location, point, selection.filter, text, table))

if result_cut(result):
    st.warning(
        f"First {result.num_rows:,} rows of the result: the query gave more. Aggregate or "
        "add a LIMIT to see the rest; the downloads hold these rows only.",
        icon=":material/content_cut:",
    )
st.caption(
    f"{views.count_of(result.num_rows, 'row')} · {views.count_of(result.num_columns, 'column')}"
)
st.dataframe(result, hide_index=True, width="stretch")
name = str(table.identifier).replace(".", "_")
if reads_rows:  # a viewer's results are metadata, but downloads need the reader role
    download_buttons(result, name, "sql")
