"""Evolution: guided schema, partition spec, sort order and property changes, dry run first.

Every change is checked by icecore's evolution builders on each rerun and shown as a dry run
(the lines, the new schema, the metadata diff); a commit needs an explicit confirmation, and
read-only mode hides every commit control, as does a role below owner on the table (one
caption says which role committing needs).
"""

from __future__ import annotations

import streamlit as st

from icecore.access import Role
from ui import evolve_form as form
from ui.shell import (
    TIME_CURRENT,
    allowed,
    bootstrap,
    escape_markdown,
    filesystem_warning,
    require_table,
    stop,
)

context = bootstrap("Evolution")
table, _ = require_table(context)
key = form.start(context, table)

st.title(f"Evolve {escape_markdown(table.identifier)}")
st.caption(
    "Change the schema, the partition spec, the sort order or the properties. Icecore checks "
    "each change against the Iceberg spec as you type and shows a dry run; nothing is written "
    "until you confirm it and commit. Spark and other engines keep reading the table after."
)
may_commit = allowed(context, Role.OWNER, "Committing changes")
warning = filesystem_warning(table)
if warning is not None:
    st.warning(escape_markdown(warning), icon=":material/warning:")
if context.selection.time_kind != TIME_CURRENT:
    st.caption(
        f"Changes apply to the table's current metadata, not to "
        f"{escape_markdown(context.selection.describe_time())} chosen in the sidebar."
    )
form.show_committed(context, key, table)

current = form.change_form(table)
staged = form.staged_changes()
form.show_staged(staged)
changes = [*staged, *(current if isinstance(current, list) else [])]
if isinstance(current, str):
    st.info(current, icon=":material/edit:")
if not changes:
    stop()

base = form.base_table(context, table, key, changes)
dry = form.checked(base, changes)
form.show_dry_run(dry, table, base)
form.show_what_if(base, changes, dry)
form.stage_button(current)

if not may_commit:
    stop()
form.stop_unless_writable(
    context.read_only, table, "this page shows dry runs only; commit controls are hidden."
)
if not dry.is_noop:
    form.commit_controls(context, table, dry, changes)
