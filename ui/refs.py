"""Ref actions where the user looks (History, Time travel): dry run, confirmation, commit.

Each action is one call of icecore's :class:`~icecore.refs.manage.ManageSnapshots` (PyIceberg's
names: ``rollback_to_snapshot``, ``set_current_snapshot``, ``cherrypick_snapshot``,
``create_tag``, ``create_branch``, ``fast_forward``, ``publish_wap``, ``rename_branch``/
``rename_tag``, ``remove_branch``/``remove_tag``; spec "Snapshot References"), so nothing
about Iceberg is decided here: names, snapshots and retention are checked by the core, which
refuses with one sentence (``main`` cannot be dropped or renamed: its sentence is shown), and
every line of the dry run comes from :func:`icecore.refs.dry_run.dry_run`.

The forms start from what the user picked (the snapshot, and on Time travel the ref named
as the "To" point): a fast-forward preselects the ref at that snapshot, or else the branch
whose history holds it, and says which branch moves from where to where. A commit that moved
one branch (a rollback, a set-current, a fast-forward, a cherry-pick) offers its undo right
there: ``set_current_snapshot`` back to the branch's old head, with its own dry run and
confirmation. The dry run is shown as text (ref names are
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

from icecore.access import Role
from icecore.errors import IcecoreError, ValidationError
from icecore.metadata import MAIN_BRANCH, SnapshotRef, TableMetadata
from icecore.refs.dry_run import RefDryRun
from icecore.refs.manage import ManageSnapshots
from icecore.refs.wap import staged_wap_snapshots
from icecore.table import Table
from ui import data, evolve, views
from ui.shell import PageContext, allowed, escape_markdown

ROLLBACK = "rollback_to_snapshot"
SET_CURRENT = "set_current_snapshot"
CHERRY_PICK = "cherrypick_snapshot"
TAG = "create_tag"
BRANCH = "create_branch"
FAST_FORWARD = "fast_forward"
PUBLISH = "publish_wap"
RENAME_BRANCH = "rename_branch"
RENAME_TAG = "rename_tag"
DROP_BRANCH = "remove_branch"
DROP_TAG = "remove_tag"
VERBS = (
    ROLLBACK,
    SET_CURRENT,
    CHERRY_PICK,
    TAG,
    BRANCH,
    FAST_FORWARD,
    PUBLISH,
    RENAME_BRANCH,
    RENAME_TAG,
    DROP_BRANCH,
    DROP_TAG,
)
"""The ManageSnapshots methods the app may call (an allow-list)."""

RENAME = "rename"
DROP = "drop"
"""Form kinds whose verb follows the kind of ref chosen (branch or tag)."""

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
    """A landed ref commit: the new metadata file and the dry-run lines it was made from.

    Attributes:
        undo: the action that puts back the one branch the commit moved (None when it
            created, removed or renamed a ref, or moved several).
    """

    table: str
    metadata_location: str
    previous_location: str
    lines: tuple[str, ...]
    undo: RefAction | None = None


def undo_of(before: TableMetadata, after: TableMetadata) -> RefAction | None:
    """``set_current_snapshot`` of the one branch that moved from ``before`` to ``after``.

    Set-current, not rollback: after a rollback the old head is no longer in the branch's
    history, and only set-current may point a branch at any snapshot (Java's
    ``setCurrentSnapshot``). None when refs were created, removed or renamed, or when not
    exactly one branch moved.
    """
    if set(before.refs) != set(after.refs):
        return None
    moved = [
        (name, ref.snapshot_id)
        for name, ref in before.refs.items()
        if ref.is_branch and after.refs[name].snapshot_id != ref.snapshot_id
    ]
    if len(moved) != 1:
        return None
    name, old = moved[0]
    return RefAction(SET_CURRENT, (old,), (("branch", name),))


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
        str(table.identifier),
        landed.metadata_location,
        table.metadata_location,
        lines,
        undo_of(table.metadata, landed.metadata),
    )


def refs_at(metadata: TableMetadata, snapshot_id: int) -> list[str]:
    """Names of the refs whose head is ``snapshot_id``: branches other than main, tags, main."""
    found = [n for n, r in metadata.refs.items() if r.snapshot_id == snapshot_id]
    return sorted(found, key=lambda n: (n == MAIN_BRANCH, not metadata.refs[n].is_branch, n))


def branches_holding(metadata: TableMetadata, snapshot_id: int) -> list[str]:
    """Branches whose history (spec "Snapshots": parent links) holds ``snapshot_id``, main last."""
    found = [
        name
        for name, ref in metadata.refs.items()
        if ref.is_branch
        and any(s.snapshot_id == snapshot_id for s in metadata.ancestors_of(ref.snapshot_id))
    ]
    return sorted(found, key=lambda n: (n == MAIN_BRANCH, n))


def fast_forward_source(
    metadata: TableMetadata, snapshot_id: int, picked_ref: str | None = None
) -> str | None:
    """The ref a fast-forward of main should go to, from what the user picked.

    The ref picked (Time travel's "To" point), else a ref other than main whose head is the
    picked snapshot, else a branch other than main whose history holds it; None when the
    snapshot is on main alone.
    """
    if picked_ref is not None and picked_ref in metadata.refs and picked_ref != MAIN_BRANCH:
        return picked_ref
    for name in [*refs_at(metadata, snapshot_id), *branches_holding(metadata, snapshot_id)]:
        if name != MAIN_BRANCH:
            return name
    return None


TABLE_DEFAULT = "table default"
"""A ref retention left to the table's ``history.expire.*`` properties."""


def ref_rows(metadata: TableMetadata) -> list[dict[str, Any]]:
    """The refs with their retention (spec "Snapshot Retention Policy"), ``main`` first.

    :data:`TABLE_DEFAULT` marks a retention the table's ``history.expire.*`` property decides.
    """
    refs: Mapping[str, SnapshotRef] = metadata.refs
    return [
        {
            "name": name,
            "kind": "branch" if ref.is_branch else "tag",
            "snapshot": str(ref.snapshot_id),
            "max ref age": views.duration_text(ref.max_ref_age_ms, TABLE_DEFAULT),
            "max snapshot age": views.duration_text(ref.max_snapshot_age_ms, TABLE_DEFAULT),
            "min snapshots to keep": (
                f"{ref.min_snapshots_to_keep:,}"
                if ref.min_snapshots_to_keep is not None
                else TABLE_DEFAULT
            ),
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


@dataclass(frozen=True, slots=True)
class _Undo:
    """An undo the user asked for: this action, on this table."""

    table_key: str
    action: RefAction


ACTIONS = {
    "Roll back main to here": ROLLBACK,
    "Set current here": SET_CURRENT,
    "Cherry-pick onto a branch": CHERRY_PICK,
    "Fast-forward a branch": FAST_FORWARD,
    "Tag this snapshot": TAG,
    "Create a branch here": BRANCH,
    "Rename a branch or tag": RENAME,
    "Drop a branch or tag": DROP,
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
    st.session_state.pop(f"{prefix}action", None)  # the outcome shows, not a stale form
    st.session_state.pop(f"{prefix}pin", None)
    st.session_state.pop(f"{prefix}undoing", None)
    st.session_state[f"{prefix}confirm"] = False
    st.session_state[f"{prefix}outcome"] = _Outcome(key, committed=committed)


def _on_undo(prefix: str, table_key: str, action: RefAction) -> None:
    """Show the undo's dry run in place of the action picker (nothing is written yet)."""
    st.session_state[f"{prefix}undoing"] = _Undo(table_key, action)
    st.session_state.pop(f"{prefix}pin", None)
    st.session_state[f"{prefix}confirm"] = False


def _on_cancel_undo(prefix: str) -> None:
    st.session_state.pop(f"{prefix}undoing", None)
    st.session_state.pop(f"{prefix}pin", None)
    st.session_state[f"{prefix}confirm"] = False


def _optional_int(label: str, key: str, help_text: str) -> int | None:
    value = st.number_input(label, min_value=1, value=None, step=1, key=key, help=help_text)
    return int(value) if value is not None else None


RETENTION_HELP = "Empty: the table's history.expire.* property applies."


def _branch_pick(label: str, branches: list[str], key: str, default: str = MAIN_BRANCH) -> str:
    """A branch selectbox starting on ``default`` (main unless told)."""
    index = branches.index(default) if default in branches else 0
    return st.selectbox(label, branches, index=index, key=key) or branches[index]


def _ref_label(metadata: TableMetadata) -> Any:
    refs = metadata.refs

    def label(name: str) -> str:
        ref = refs.get(name)
        if ref is None:
            return name
        return f"{name} ({'branch' if ref.is_branch else 'tag'}, snapshot {ref.snapshot_id})"

    return label


def _say(text: str) -> None:
    """A caption naming refs (user input): shown as text."""
    st.caption(escape_markdown(text))


def _form(
    table: Table, snapshot_id: int, verb: str, prefix: str, picked_ref: str | None = None
) -> RefAction | str:
    """The fields of one action; its RefAction, or a hint while something is missing."""
    f = f"{prefix}f_"
    metadata = table.metadata
    branches = sorted(metadata.branches(), key=lambda n: (n != MAIN_BRANCH, n))
    if verb == ROLLBACK:
        branch = st.selectbox("Branch", branches, key=f"{f}branch")
        return RefAction(ROLLBACK, (snapshot_id,), (("branch", branch or MAIN_BRANCH),))
    if verb == SET_CURRENT:
        branch = _branch_pick("Branch to point at this snapshot", branches, f"{f}sc_branch")
        head = metadata.refs.get(branch)
        _say(
            f"Points {branch} (now at snapshot {head.snapshot_id if head else 'none'}) at "
            f"snapshot {snapshot_id}, whether or not it is in {branch}'s history: this is "
            "how a rollback is undone."
        )
        return RefAction(SET_CURRENT, (snapshot_id,), (("branch", branch),))
    if verb == CHERRY_PICK:
        branch = _branch_pick("Branch to apply this snapshot's changes to", branches, f"{f}cp")
        _say(
            f"Applies the changes snapshot {snapshot_id} made to {branch}: a snapshot whose "
            f"parent is {branch}'s head fast-forwards it; another is written anew on top of it."
        )
        return RefAction(CHERRY_PICK, (snapshot_id,), (("branch", branch),))
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
        return _fast_forward_form(metadata, snapshot_id, branches, f, picked_ref)
    if verb in (RENAME, DROP):
        return _rename_or_drop_form(metadata, snapshot_id, verb, f, picked_ref)
    staged = staged_wap_snapshots(metadata)
    if not staged:
        return "No snapshot staged with a WAP id (spark.wap.id) is waiting to be published."
    labels = {wap_id: f"{wap_id} · snapshot {s.snapshot_id}" for wap_id, s in staged}
    wap_id = st.selectbox(
        "WAP id", list(labels), key=f"{f}wap", format_func=lambda w: labels.get(w, w)
    )
    return RefAction(PUBLISH, (wap_id or next(iter(labels)),))


def _fast_forward_form(
    metadata: TableMetadata,
    snapshot_id: int,
    branches: list[str],
    f: str,
    picked_ref: str | None,
) -> RefAction | str:
    """Move a branch (main by default) to the head of the ref the user's selection names."""
    branch = _branch_pick("Branch to move forward", branches, f"{f}ff_branch")
    refs = metadata.refs
    others = sorted((n for n in refs if n != branch), key=lambda n: (n != MAIN_BRANCH, n))
    if not others:
        return f"The table has no branch or tag other than {branch}."
    source = fast_forward_source(metadata, snapshot_id, picked_ref)
    if source == branch:
        source = None
    to = st.selectbox(
        f"Move {escape_markdown(branch)} forward to the head of",
        others,
        index=others.index(source) if source in others else None,
        key=f"{f}ff",
        format_func=_ref_label(metadata),
        placeholder="Choose a branch or tag",
    )
    if to is None:
        return (
            f"Snapshot {snapshot_id} is on no branch or tag other than {branch}: choose the ref "
            f"to move {branch} forward to."
        )
    head, target = refs[branch].snapshot_id, refs[to].snapshot_id
    said = f"{branch} moves from snapshot {head} to snapshot {target}, the head of {to}."
    if target != snapshot_id:
        said += (
            f" That is not snapshot {snapshot_id}, the one picked: to point {branch} at "
            f"{snapshot_id} itself, use “Set current here”."
        )
    _say(said)
    return RefAction(FAST_FORWARD, (branch,), (("to", to),))


def _rename_or_drop_form(
    metadata: TableMetadata, snapshot_id: int, verb: str, f: str, picked_ref: str | None
) -> RefAction | str:
    """Pick a branch or tag (the one at the picked snapshot first) to rename or drop."""
    refs = metadata.refs
    names = sorted(refs, key=lambda n: (n != MAIN_BRANCH, n))
    if picked_ref in refs:
        default: str | None = picked_ref
    else:
        at = [n for n in refs_at(metadata, snapshot_id) if n != MAIN_BRANCH]
        default = at[0] if at else None
    doing = "rename" if verb == RENAME else "drop"
    name = st.selectbox(
        f"Branch or tag to {doing}",
        names,
        index=names.index(default) if default is not None else None,
        key=f"{f}ref",
        format_func=_ref_label(metadata),
        placeholder="Choose a branch or tag",
    )
    if name is None:
        return f"Choose the branch or tag to {doing}."
    is_branch = refs[name].is_branch
    if verb == DROP:
        return RefAction(DROP_BRANCH if is_branch else DROP_TAG, (name,))
    new_name = st.text_input("New name", key=f"{f}new_name", max_chars=MAX_NAME)
    if not new_name:
        return f"Type the new name of {'branch' if is_branch else 'tag'} {name}."
    return RefAction(RENAME_BRANCH if is_branch else RENAME_TAG, (name, new_name))


def show_outcome(context: PageContext, table: Table, prefix: str) -> None:
    """The last ref commit of this page: its new metadata file, or the sentence that refused it.

    A commit that moved one branch offers its undo (see :func:`undo_of`).
    """
    outcome = st.session_state.get(f"{prefix}outcome")
    key = f"{context.catalog}::{table.identifier}"
    if not isinstance(outcome, _Outcome) or outcome.table_key != key:
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
    undo = done.undo
    if undo is not None and not isinstance(st.session_state.get(f"{prefix}undoing"), _Undo):
        branch = dict(undo.options)["branch"]
        st.button(
            f"Undo: set {escape_markdown(branch)} back to snapshot {undo.args[0]}",
            key=f"{prefix}undo",
            icon=":material/undo:",
            on_click=_on_undo,
            args=(prefix, key, undo),
        )


def actions(
    context: PageContext,
    table: Table,
    snapshot_id: int,
    prefix: str,
    picked_ref: str | None = None,
) -> None:
    """Ref actions on one snapshot: pick, fill in, read the dry run, confirm, commit.

    Nothing is drawn in read-only mode; a table without a catalog pointer gets one sentence,
    and so does a session without the owner role on the table (DESIGN.md "Identity, roles
    and audit": ref operations need owner).

    Args:
        context: the page's context (catalog, read-only mode).
        table: the table as the page shows it.
        snapshot_id: the snapshot the user is looking at.
        prefix: the page's widget key prefix (``ref_h_``, ``ref_t_``).
        picked_ref: the branch or tag the user picked to get there, if any (the forms
            start from it).
    """
    if context.read_only:
        return
    if not allowed(
        context,
        Role.OWNER,
        "Acting on branches and tags (rollback, tag, branch, cherry-pick, publish)",
    ):
        return
    st.subheader(f"Act on snapshot {snapshot_id}")
    show_outcome(context, table, prefix)
    refusal = evolve.commit_refusal(table)
    if refusal is not None:
        st.caption(escape_markdown(refusal))
        return
    anchor = (snapshot_id, picked_ref)
    if st.session_state.get(f"{prefix}form_for") != anchor:
        _forget(f"{prefix}f_")  # the forms start again from the new selection
        st.session_state[f"{prefix}form_for"] = anchor
    key = f"{context.catalog}::{table.identifier}"
    undoing = st.session_state.get(f"{prefix}undoing")
    if isinstance(undoing, _Undo) and undoing.table_key == key:
        branch = dict(undoing.action.options)["branch"]
        st.markdown(
            f"**Undo: set {escape_markdown(branch)} back to snapshot {undoing.action.args[0]}**"
        )
        st.button(
            "Cancel the undo", key=f"{prefix}undo_cancel", on_click=_on_cancel_undo, args=(prefix,)
        )
        action: RefAction | str = undoing.action
    else:
        label = st.radio(
            "Action", list(ACTIONS), key=f"{prefix}action", index=None, horizontal=True
        )
        if label is None:
            st.caption("Pick an action to see its dry run; nothing is written until you confirm.")
            return
        action = _form(table, snapshot_id, ACTIONS[label], prefix, picked_ref)
    if isinstance(action, str):
        st.info(escape_markdown(action), icon=":material/edit:")
        return
    _review(context, table, action, prefix)


def _review(context: PageContext, table: Table, action: RefAction, prefix: str) -> None:
    """The action's dry run, the confirmation that pins it, and the commit button."""
    try:
        dry = _cached_dry_run(table.metadata_location, action, table)
    except IcecoreError as error:
        st.error(escape_markdown(error), icon=":material/error:")
        if action.verb == ROLLBACK:
            st.caption(
                "To point a branch at any snapshot, in its history or not: “Set current here”."
            )
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
    "branches_holding",
    "commit",
    "dry_run",
    "fast_forward_source",
    "keep_pick",
    "ref_rows",
    "refs_at",
    "refs_table",
    "show_outcome",
    "stage",
    "undo_of",
]
