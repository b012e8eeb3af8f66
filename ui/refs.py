"""Ref actions where the user looks (History, Time travel): dry run, confirmation, commit.

Each action is one call of icecore's :class:`~icecore.refs.manage.ManageSnapshots` (PyIceberg's
names: ``rollback_to_snapshot``, ``create_tag``, ``create_branch``, ``fast_forward``,
``publish_wap``), so nothing about Iceberg is decided here: names, snapshots and retention
are checked by the core, which refuses with one sentence, and every line of the dry run
comes from :func:`icecore.refs.dry_run.dry_run`. The dry run is shown as text (ref names are
user input). A commit needs an explicit confirmation, which pins the metadata file the dry
run was computed on: the commit is made from that version, so another writer's commit in
between is refused by the core's requirements (``assert-ref-snapshot-id``), never silently
undone. In read-only mode the actions are not drawn at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from icecore.errors import IcecoreError, ValidationError
from icecore.metadata import MAIN_BRANCH, SnapshotRef, TableMetadata
from icecore.refs.dry_run import RefDryRun
from icecore.refs.manage import ManageSnapshots
from icecore.refs.wap import staged_wap_snapshots
from icecore.table import Table
from ui import data, evolve
from ui.shell import PageContext, escape_markdown

ROLLBACK = "rollback_to_snapshot"
TAG = "create_tag"
BRANCH = "create_branch"
FAST_FORWARD = "fast_forward"
PUBLISH = "publish_wap"
VERBS = (ROLLBACK, TAG, BRANCH, FAST_FORWARD, PUBLISH)
"""The ManageSnapshots methods the app may call (an allow-list)."""

MAX_NAME = 255
"""Longest ref name the form takes (the core bounds names the same way)."""


@dataclass(frozen=True, slots=True)
class RefAction:
    """One call ``verb(*args, **options)`` on a table's ``manage_snapshots()``."""

    verb: str
    args: tuple[Any, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()


def stage(table: Table, action: RefAction) -> ManageSnapshots:
    """The action staged on ``table`` as loaded (checked by the core; nothing written).

    Raises:
        ValidationError: the core refuses the action (one sentence), or the verb is not one
            the app offers.
    """
    if action.verb not in VERBS:
        raise ValidationError(f"The app does not offer the ref operation {action.verb!r}.")
    manage = table.manage_snapshots()
    getattr(manage, action.verb)(*action.args, **dict(action.options))
    return manage


def dry_run(table: Table, action: RefAction) -> RefDryRun:
    """What the action would do (:func:`icecore.refs.dry_run.dry_run`); writes nothing."""
    return stage(table, action).preview()


@dataclass(frozen=True, slots=True)
class Committed:
    """A landed ref commit: the new metadata file and the dry-run lines it was made from."""

    table: str
    metadata_location: str
    previous_location: str
    lines: tuple[str, ...]


def commit(table: Table, action: RefAction) -> Committed:
    """Commit the action computed against ``table`` as loaded (the version the user read).

    Raises:
        ValidationError: the core refuses it.
        CommitConflict: a ref it touches moved since that version; nothing was written.
        CommitStateUnknown: the catalog could not say whether the swap happened.
    """
    manage = stage(table, action)
    lines = tuple(manage.preview().changes)
    landed = manage.commit()
    return Committed(
        str(table.identifier), landed.metadata_location, table.metadata_location, lines
    )


def ref_rows(metadata: TableMetadata) -> list[dict[str, Any]]:
    """The refs with their retention (spec "Snapshot Retention Policy"), ``main`` first.

    Empty cells mean the table's ``history.expire.*`` property applies.
    """
    refs: Mapping[str, SnapshotRef] = metadata.refs
    return [
        {
            "name": name,
            "kind": "branch" if ref.is_branch else "tag",
            "snapshot": str(ref.snapshot_id),
            "max-ref-age-ms": ref.max_ref_age_ms,
            "max-snapshot-age-ms": ref.max_snapshot_age_ms,
            "min-snapshots-to-keep": ref.min_snapshots_to_keep,
        }
        for name, ref in sorted(refs.items(), key=lambda item: (item[0] != MAIN_BRANCH, item[0]))
    ]


# Streamlit ---------------------------------------------------------------------------------


@st.cache_resource(max_entries=16, show_spinner="Computing the dry run")
def _cached_dry_run(location: str, action: RefAction, _table: Table) -> RefDryRun:
    # Keyed by the metadata file (immutable) and the action; a RefDryRun is frozen.
    return dry_run(_table, action)


@dataclass(frozen=True, slots=True)
class _Pin:
    """What a confirmation confirmed: this action on this metadata file of this table."""

    catalog: str
    table: str
    location: str
    action: RefAction


@dataclass(frozen=True, slots=True)
class _Outcome:
    table_key: str
    committed: Committed | None = None
    error: str = ""


ACTIONS = {
    "Roll back main to here": ROLLBACK,
    "Tag this snapshot": TAG,
    "Create a branch here": BRANCH,
    "Fast-forward a branch into main": FAST_FORWARD,
    "Publish a WAP snapshot": PUBLISH,
}
"""The actions as the page offers them, by label."""


def _forget(prefix: str) -> None:
    for key in [k for k in st.session_state if str(k).startswith(prefix)]:
        del st.session_state[key]


def _on_confirm(prefix: str, pin: _Pin) -> None:
    st.session_state.pop(f"{prefix}outcome", None)  # a new confirmation, a new outcome
    if st.session_state.get(f"{prefix}confirm"):
        st.session_state[f"{prefix}pin"] = pin
    else:
        st.session_state.pop(f"{prefix}pin", None)


def _on_commit(prefix: str) -> None:
    """Commit the pinned action from the version its dry run was computed on."""
    pin = st.session_state.get(f"{prefix}pin")
    if not isinstance(pin, _Pin):
        return
    key = f"{pin.catalog}::{pin.table}"
    try:
        base = data.table_at(pin.catalog, pin.table, pin.location)
        committed = commit(base, pin.action)
    except IcecoreError as error:
        st.session_state[f"{prefix}outcome"] = _Outcome(key, error=str(error))
        return
    finally:
        data.forget_table_lists()
    _forget(f"{prefix}f_")
    st.session_state.pop(f"{prefix}pin", None)
    st.session_state[f"{prefix}confirm"] = False
    st.session_state[f"{prefix}outcome"] = _Outcome(key, committed=committed)


def _optional_int(label: str, key: str, help_text: str) -> int | None:
    value = st.number_input(label, min_value=1, value=None, step=1, key=key, help=help_text)
    return int(value) if value is not None else None


RETENTION_HELP = "Empty: the table's history.expire.* property applies."


def _form(table: Table, snapshot_id: int, verb: str, prefix: str) -> RefAction | str:
    """The fields of one action; its RefAction, or a hint while something is missing."""
    f = f"{prefix}f_"
    metadata = table.metadata
    branches = sorted(metadata.branches(), key=lambda n: (n != MAIN_BRANCH, n))
    if verb == ROLLBACK:
        branch = st.selectbox("Branch", branches, key=f"{f}branch")
        return RefAction(ROLLBACK, (snapshot_id,), (("branch", branch or MAIN_BRANCH),))
    if verb in (TAG, BRANCH):
        kind = "tag" if verb == TAG else "branch"
        name = st.text_input(f"Name of the new {kind}", key=f"{f}name", max_chars=MAX_NAME)
        options: list[tuple[str, Any]] = [("snapshot_id", snapshot_id)]
        cols = st.columns(3)
        with cols[0]:
            options.append(
                ("max_ref_age_ms", _optional_int("max-ref-age-ms", f"{f}ref_age", RETENTION_HELP))
            )
        if verb == BRANCH:
            with cols[1]:
                options.append(
                    (
                        "max_snapshot_age_ms",
                        _optional_int("max-snapshot-age-ms", f"{f}snap_age", RETENTION_HELP),
                    )
                )
            with cols[2]:
                options.append(
                    (
                        "min_snapshots_to_keep",
                        _optional_int("min-snapshots-to-keep", f"{f}keep", RETENTION_HELP),
                    )
                )
        if not name:
            return f"Type a name for the new {kind}."
        return RefAction(verb, (name,), tuple(options))
    if verb == FAST_FORWARD:
        others = [b for b in branches if b != MAIN_BRANCH]
        if not others:
            return "The table has no branch other than main."
        branch = st.selectbox("Branch to fast-forward main to", others, key=f"{f}ff")
        return RefAction(FAST_FORWARD, (MAIN_BRANCH,), (("to", branch or others[0]),))
    staged = staged_wap_snapshots(metadata)
    if not staged:
        return "No snapshot staged with a WAP id (spark.wap.id) is waiting to be published."
    labels = {wap_id: f"{wap_id} · snapshot {s.snapshot_id}" for wap_id, s in staged}
    wap_id = st.selectbox(
        "WAP id", list(labels), key=f"{f}wap", format_func=lambda w: labels.get(w, w)
    )
    return RefAction(PUBLISH, (wap_id or next(iter(labels)),))


def show_outcome(context: PageContext, table: Table, prefix: str) -> None:
    """The last ref commit of this page: its new metadata file, or the sentence that refused it."""
    outcome = st.session_state.get(f"{prefix}outcome")
    if not isinstance(outcome, _Outcome) or outcome.table_key != (
        f"{context.catalog}::{table.identifier}"
    ):
        return
    if outcome.error:
        st.error(escape_markdown(outcome.error), icon=":material/error:")
        return
    done = outcome.committed
    if done is None or done.metadata_location != table.metadata_location:
        return  # shown while the commit is the table's current version
    st.success(
        f"Committed to {escape_markdown(done.table)}. New metadata file: "
        f"{escape_markdown(done.metadata_location)}",
        icon=":material/check_circle:",
    )
    st.code("\n".join(done.lines), language=None, wrap_lines=True)


def actions(context: PageContext, table: Table, snapshot_id: int, prefix: str) -> None:
    """Ref actions on one snapshot: pick, fill in, read the dry run, confirm, commit.

    Nothing is drawn in read-only mode; a table without a catalog pointer gets one sentence.

    Args:
        context: the page's context (catalog, read-only mode).
        table: the table as the page shows it.
        snapshot_id: the snapshot the user is looking at.
        prefix: the page's widget key prefix (``ref_h_``, ``ref_t_``).
    """
    if context.read_only:
        return
    st.subheader(f"Act on snapshot {snapshot_id}")
    show_outcome(context, table, prefix)
    refusal = evolve.commit_refusal(table)
    if refusal is not None:
        st.caption(escape_markdown(refusal))
        return
    label = st.radio("Action", list(ACTIONS), key=f"{prefix}action", index=None, horizontal=True)
    if label is None:
        st.caption("Pick an action to see its dry run; nothing is written until you confirm.")
        return
    action = _form(table, snapshot_id, ACTIONS[label], prefix)
    if isinstance(action, str):
        st.info(escape_markdown(action), icon=":material/edit:")
        return
    try:
        dry = _cached_dry_run(table.metadata_location, action, table)
    except IcecoreError as error:
        st.error(escape_markdown(error), icon=":material/error:")
        return
    st.caption("Dry run: what the commit would do (nothing is written yet).")
    st.code(dry.text(), language=None, wrap_lines=True)
    if dry.is_noop:
        return
    pin = _Pin(context.catalog, str(table.identifier), table.metadata_location, action)
    pinned = st.session_state.get(f"{prefix}pin")
    confirmed = st.checkbox(
        "I have read the dry run above and want to commit it to "
        + escape_markdown(table.identifier),
        key=f"{prefix}confirm",
        on_change=_on_confirm,
        args=(prefix, pin),
    )
    st.button(
        "Commit",
        type="primary",
        key=f"{prefix}commit",
        disabled=not confirmed or pinned is None or pinned.action != action,
        on_click=_on_commit,
        args=(prefix,),
    )


def keep_pick(key: str, labels: Mapping[int, str]) -> None:
    """Keep a snapshot picker on its snapshot when a ref commit changes that snapshot's label.

    Pickers label snapshots with their refs, so a rollback or a new tag relabels them; the
    browser then no longer finds the picked label and falls back to the first option, and an
    action would silently apply to another snapshot. Setting the value again makes Streamlit
    send the new label. Call it before the picker is drawn.
    """
    picked = st.session_state.get(key)
    if not isinstance(picked, int) or picked not in labels:
        return
    seen = st.session_state.get(f"{key}_label")
    if seen is not None and seen != labels[picked]:
        st.session_state[key] = picked
    st.session_state[f"{key}_label"] = labels[picked]


def refs_table(metadata: TableMetadata, key: str) -> None:
    """The refs and their retention, as a dataframe (values shown as text, never Markdown)."""
    st.dataframe(ref_rows(metadata), hide_index=True, width="stretch", key=key)


__all__ = [
    "ACTIONS",
    "VERBS",
    "Committed",
    "RefAction",
    "actions",
    "commit",
    "dry_run",
    "keep_pick",
    "ref_rows",
    "refs_table",
    "show_outcome",
    "stage",
]
