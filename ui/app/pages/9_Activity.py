"""Activity: the catalog's audit log: who changed which table, how, and how it ended.

Every change Icecore made (commits from the app, the REST server and the CLI, maintenance
jobs, refused attempts) as ``icecore audit`` prints it (:mod:`ui.activity`), filtered by
table, person, action, time and result; only the tables the signed-in principal may see. Each
commit links to the snapshot it made current on the History page. Everything the log holds
is shown as text (a dataframe), never as Markdown.
"""

from __future__ import annotations

import streamlit as st

from icecore.audit import RESULTS, select_changes
from icecore.errors import IcecoreError
from ui import activity, data, identity
from ui.shell import bootstrap, escape_markdown, show_error, stop

ALL = "All"

context = bootstrap("Activity")
if context.failed:  # the link named a catalog or table that is not there: said once, above
    stop()
st.title("Activity")
st.caption(
    "Every change Icecore made to this catalog's tables (from the app, the REST server and "
    "the command line), maintenance jobs, and refused attempts: who, what, and how it ended. "
    "A change is written before it is made and its result after, so one interrupted halfway "
    "still shows (result unknown)."
)

try:
    catalog = identity.guarded(data.open_catalog(context.catalog), context.catalog)
    found = activity.visible_activity(catalog)
except IcecoreError as error:
    show_error(error)
    stop()

if not found.kept:
    st.info(
        f"The catalog {escape_markdown(context.catalog)} keeps no audit log Icecore can read "
        "here: a REST catalog's server keeps its own, and a bare metadata file is no catalog.",
        icon=":material/info:",
    )
    stop()
if found.skipped:
    st.warning(
        f"{found.skipped:,} records of the log could not be read and are left out.",
        icon=":material/warning:",
    )

changes = found.changes
tables = sorted({c.table for c in changes if c.table})
people = sorted({c.principal for c in changes})
actions = sorted({c.action for c in changes})
chosen_table = context.selection.table if context.selection.table in tables else ALL
left, middle, right, far, last = st.columns(5)
table = left.selectbox(
    "Table",
    [ALL, *tables],
    index=([ALL, *tables]).index(chosen_table),
    key="act_table",
)
person = middle.selectbox("Person", [ALL, *people], key="act_person")
action = right.selectbox("Action", [ALL, *actions], key="act_action")
since = far.selectbox("Time", list(activity.SINCE_CHOICES), key="act_since")
result = last.selectbox("Result", [ALL, *RESULTS], key="act_result")

selected = select_changes(
    changes,
    table=None if table == ALL else table,
    action=None if action == ALL else action,
    since_ms=activity.since_cutoff_ms(since),
    results=None if result == ALL else [result],
)
if person != ALL:
    selected = [c for c in selected if c.principal == person]
shown = activity.settled(selected[: activity.MAX_SHOWN], catalog)

if not shown:
    st.info("No change matches." if changes else "No change has been recorded yet.")
    stop()
st.subheader(
    f"{len(selected):,} change{'s' if len(selected) != 1 else ''}"
    + (f" (the newest {activity.MAX_SHOWN:,} shown)" if len(selected) > len(shown) else "")
)
rows = []
for change in shown:
    link = None
    if change.table and change.result == "committed" and change.metadata_after:
        snapshot = activity.snapshot_of(catalog, change.metadata_after)
        link = activity.history_link(context.catalog, change.table, snapshot)
    rows.append(
        {
            "time": change.time,
            "who": change.principal,
            "action": change.action,
            "table": change.table,
            "result": change.result,
            "summary": change.summary,
            "history": link,
            "reason": change.reason,
            "from": change.source,
            "metadata before": change.metadata_before,
            "metadata after": change.metadata_after,
        }
    )
st.dataframe(
    rows,
    hide_index=True,
    width="stretch",
    column_config={
        "history": st.column_config.LinkColumn(
            "history", display_text="History →", help="The snapshot this change made current"
        ),
        "result": st.column_config.TextColumn(
            help="committed, conflict (another writer won), refused (no grant), failed, or "
            "unknown (begun, with no result written: interrupted, or still running)"
        ),
    },
)
