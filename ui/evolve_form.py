"""The Evolution page's parts: a guided form per change kind, the dry run, confirm, commit.

The forms only gather the arguments of icecore's evolution builders (:class:`ui.evolve.Change`);
whether a change is valid is the builders' call, made again on every rerun, so a mistake
shows as their one sentence while the user types. A commit needs an explicit confirmation
of the dry run shown: confirming pins the metadata file that dry run was computed against,
so the commit is made from the version the user read, and another writer's commit in
between surfaces as the builders' :class:`~icecore.errors.CommitConflict` (or is rebased
when it does not touch what the change depends on), never as a silent change of base.

Widgets are driven by key. Every form field's key starts with ``evo_f_``, so staging a
change, committing, or choosing another table clears the form at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from icecore.errors import CommitConflict, IcecoreError
from icecore.evolution.preview import what_changed
from icecore.health import format_bytes
from icecore.table import Table
from ui import data, evolve
from ui.app import HISTORY, OVERVIEW
from ui.evolve import (
    ORDER,
    PROPERTIES,
    SCHEMA,
    SORT,
    SPEC,
    TRANSFORMS,
    Change,
    Column,
    Committed,
    DryRun,
    SortTerm,
    columns,
    partition_name,
    widenings,
)
from ui.shell import PageContext, drive, escape_markdown, show_error, stop
from ui.views import fit_height

KEY_PREFIX = "evo_"
FORM_PREFIX = "evo_f_"
TABLE_KEY = "evo_table"
STAGED_KEY = "evo_staged"
PIN_KEY = "evo_pin"
OUTCOME_KEY = "evo_outcome"
CONFIRM_KEY = "evo_confirm"

TOP_LEVEL = "(top level)"
TYPES_HELP = (
    "boolean, int, long, float, double, decimal(P,S), date, time, timestamp, timestamptz, "
    "string, uuid, fixed[L], binary, or nested: list<string>, map<string, int>, "
    "struct<lat: double, lon: double>"
)

Form = list[Change] | str
"""What a form gives: the changes it describes, or a hint saying what is still missing."""


@dataclass(frozen=True, slots=True)
class Pin:
    """A confirmed dry run: the table, the metadata file it was computed on, the changes."""

    catalog: str
    table: str
    location: str
    changes: tuple[Change, ...]

    @property
    def table_key(self) -> str:
        """The key :func:`start` gives the table."""
        return table_key(self.catalog, self.table)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the last commit click did: a landed commit, or the error that stopped it."""

    table_key: str
    committed: Committed | None = None
    error: str | None = None
    conflict: bool = False


# Session state ------------------------------------------------------------------------------


def _forget(prefix: str) -> None:
    for key in [k for k in st.session_state if str(k).startswith(prefix)]:
        del st.session_state[key]


def _field(name: str, default: object, options: Sequence[object] | None = None) -> str:
    """A form field's key; its value starts at ``default`` (computed from the table now).

    The value is set through session state, never by a widget's ``value=``: a key set that
    way is sent to the browser, so a form cleared by dropping its keys shows empty there too
    (a widget keeps what the browser last showed unless its value is set this way). With
    ``options``, a value the table no longer offers (a column since dropped) is dropped.
    """
    key = FORM_PREFIX + name
    value = st.session_state.get(key, default)
    if options is not None and isinstance(value, list):
        value = [v for v in value if v in options]
    elif options is not None and value is not None and value not in options:
        value = default
    if key not in st.session_state or value != st.session_state[key]:
        st.session_state[key] = list(value) if isinstance(value, list) else value
    return key


def table_key(catalog: str, table: str) -> str:
    """What the form's state belongs to: one table of one catalog."""
    return f"{catalog}::{table}"


def start(context: PageContext, table: Table) -> str:
    """This table's key; the form, staged changes and confirmation of another are dropped."""
    key = table_key(context.catalog, str(table.identifier))
    if st.session_state.get(TABLE_KEY) != key:
        _forget(KEY_PREFIX)
        st.session_state[TABLE_KEY] = key
    return key


def staged_changes() -> list[Change]:
    """The changes staged for the next commit (before the one in the form)."""
    return list(st.session_state.get(STAGED_KEY, ()))


def _stage(changes: tuple[Change, ...]) -> None:
    st.session_state[STAGED_KEY] = (*st.session_state.get(STAGED_KEY, ()), *changes)
    _forget(FORM_PREFIX)


def _clear_staged() -> None:
    st.session_state.pop(STAGED_KEY, None)


def _unconfirm() -> None:
    st.session_state.pop(PIN_KEY, None)
    st.session_state.pop(OUTCOME_KEY, None)
    st.session_state[CONFIRM_KEY] = False


def _on_confirm(pin: Pin) -> None:
    if st.session_state.get(CONFIRM_KEY):
        st.session_state[PIN_KEY] = pin
    else:
        _unconfirm()


def _on_commit(pin: Pin) -> None:
    """Commit the pinned dry run's changes from the version it was computed on."""
    try:
        base = data.table_at(pin.catalog, pin.table, pin.location)
        committed = evolve.commit(base, pin.changes)
    except IcecoreError as error:
        outcome = Outcome(
            pin.table_key, error=str(error), conflict=isinstance(error, CommitConflict)
        )
        st.session_state[OUTCOME_KEY] = outcome
        return
    finally:
        data.forget_table_lists()
    _forget(FORM_PREFIX)
    _clear_staged()
    _unconfirm()
    st.session_state[OUTCOME_KEY] = Outcome(pin.table_key, committed=committed)


# The forms ----------------------------------------------------------------------------------


KINDS = {"Schema": SCHEMA, "Partition spec": SPEC, "Sort order": SORT, "Properties": PROPERTIES}


def change_form(table: Table) -> Form:
    """Draw the form of the change kind the user picks; returns its changes or a hint."""
    label = st.radio("What to change", list(KINDS), key="evo_kind", horizontal=True)
    kind = KINDS[label or "Schema"]
    cols = columns(table.metadata.current_schema())
    if kind == SCHEMA:
        action = st.selectbox("Schema change", list(SCHEMA_FORMS), key="evo_schema_action")
        return SCHEMA_FORMS[action](table, cols)
    if kind == SPEC:
        action = st.selectbox("Partition spec change", list(SPEC_FORMS), key="evo_spec_action")
        return SPEC_FORMS[action](table, cols)
    if kind == SORT:
        return _sort_order(table, cols)
    return _properties(table)


def _pick(label: str, name: str, choices: Sequence[Column]) -> Column | None:
    by_path = {c.path: c for c in choices}
    path = st.selectbox(
        label,
        list(by_path),
        key=_field(name, None, list(by_path)),
        index=None,
        placeholder="Choose a column",
        format_func=lambda p: f"{p} · {by_path[p].field_type}" if p in by_path else p,
    )
    return by_path.get(path) if path is not None else None


def _named(cols: Sequence[Column]) -> list[Column]:
    """Columns whose name can change (not a list's element, a map's key or value)."""
    return [c for c in cols if not c.fixed]


def _sources(cols: Sequence[Column]) -> list[Column]:
    """Columns a partition field, sort field or identifier can use."""
    return [c for c in cols if c.is_primitive and not c.in_collection]


def _path(c: Column) -> tuple[str, ...]:
    return c.parts


def _add_column(table: Table, cols: Sequence[Column]) -> Form:
    parents = {c.path: c for c in cols if c.is_struct}
    left, right = st.columns(2)
    parent = left.selectbox(
        "Inside",
        [TOP_LEVEL, *parents],
        key=_field("add_parent", TOP_LEVEL, [TOP_LEVEL, *parents]),
        help="Top level, or a struct column (for a list of structs: its element).",
    )
    name = right.text_input("Column name", key=_field("add_name", ""), placeholder="note")
    field_type = left.text_input("Type", key=_field("add_type", "string"), help=TYPES_HELP)
    doc = right.text_input("Doc (optional)", key=_field("add_doc", ""))
    options: list[tuple[str, object]] = []
    version = table.metadata.format_version
    if version >= 3:
        required = left.checkbox(
            "Required (needs a default)",
            key=_field("add_required", False),
            help="Rows written before the column existed read the default.",
        )
        default = right.text_input(
            "Default for existing and new rows (optional)",
            key=_field("add_default", ""),
            help="A value of the column's type as text: 0, 2.5, true, 2024-01-01, basic.",
        )
        if required:
            options.append(("required", True))
        if default:
            options.append(("default", default))
    else:
        st.caption(
            f"Required columns and default values need format version 3; this table is "
            f"v{version}, so the new column is optional and reads as null in existing rows."
        )
    if doc:
        options.append(("doc", doc))
    if not name:
        return "Type the new column's name."
    where = parents[parent].parts if parent in parents else ()
    return [Change(SCHEMA, "add_column", ((*where, name), field_type.strip()), tuple(options))]


def _rename_column(table: Table, cols: Sequence[Column]) -> Form:
    column = _pick("Column", "rename_column", _named(cols))
    new_name = st.text_input(
        "New name",
        key=_field("rename_to", ""),
        help="The column keeps its id, so data files written before still read as this column.",
    )
    if column is None:
        return "Choose the column to rename."
    if not new_name:
        return "Type the column's new name."
    return [Change(SCHEMA, "rename_column", (_path(column), new_name))]


def _drop_column(table: Table, cols: Sequence[Column]) -> Form:
    column = _pick("Column", "drop_column", _named(cols))
    allow = st.checkbox(
        "Drop it even though live files were partitioned by it under an older partition spec "
        "(readers of those files lose that partition value)",
        key=_field("drop_allow", False),
    )
    st.caption(
        "Data files keep the values; readers stop seeing the column, and its id is never "
        "used again."
    )
    if column is None:
        return "Choose the column to drop."
    options = (("allow_live_partition_source", True),) if allow else ()
    return [Change(SCHEMA, "delete_column", (_path(column),), options)]


def _widen_column(table: Table, cols: Sequence[Column]) -> Form:
    wider = {c.path: widenings(c.field_type) for c in _named(cols) if c.is_primitive}
    choices = [c for c in _named(cols) if wider.get(c.path)]
    if not choices:
        return (
            "No column of this table has a wider type to take (int → long, float → double, "
            "a decimal's precision)."
        )
    column = _pick("Column", "widen_column", choices)
    if column is None:
        return "Choose the column to widen."
    to = st.selectbox(
        f"New type (now {column.field_type})",
        wider[column.path],
        key=_field(f"widen_to_{column.field_id}", wider[column.path][0]),
    )
    return [Change(SCHEMA, "update_column", (_path(column),), (("field_type", to),))]


OPTIONAL = "optional (nulls allowed)"
REQUIRED = "required (no nulls)"


def _nullability(table: Table, cols: Sequence[Column]) -> Form:
    column = _pick("Column", "null_column", _named(cols))
    if column is None:
        return "Choose the column."
    choice = st.radio(
        f"Values (now {'required' if column.required else 'optional'})",
        [OPTIONAL, REQUIRED],
        key=_field(f"null_{column.field_id}", OPTIONAL if column.required else REQUIRED),
        horizontal=True,
    )
    verb = "make_column_optional" if choice == OPTIONAL else "make_column_required"
    return [Change(SCHEMA, verb, (_path(column),))]


def _move_column(table: Table, cols: Sequence[Column]) -> Form:
    movable = _named(cols)
    column = _pick("Column", "move_column", movable)
    where = st.radio(
        "Move it", ["first", "before", "after"], key=_field("move_where", "first"), horizontal=True
    )
    if column is None:
        return "Choose the column to move."
    if where == "first":
        return [Change(SCHEMA, "move_first", (_path(column),))]
    siblings = [c for c in movable if c.parent == column.parent and c.path != column.path]
    other = _pick(f"{where.capitalize()} column", "move_other", siblings)
    if other is None:
        return f"Choose the column to move it {where}."
    return [Change(SCHEMA, f"move_{where}", (_path(column), _path(other)))]


def _column_doc(table: Table, cols: Sequence[Column]) -> Form:
    column = _pick("Column", "doc_column", _named(cols))
    if column is None:
        return "Choose the column to document."
    doc = st.text_input("Doc (empty removes it)", key=_field(f"doc_{column.field_id}", column.doc))
    return [Change(SCHEMA, "update_column_doc", (_path(column), doc or None))]


def _write_default(table: Table, cols: Sequence[Column]) -> Form:
    version = table.metadata.format_version
    if version < 3:
        return f"Default values need format version 3; this table is v{version}."
    column = _pick("Column", "default_column", _named(cols))
    if column is None:
        return "Choose the column."
    current = column.field.write_default
    text = current if isinstance(current, str) or current is None else json.dumps(current)
    value = st.text_input(
        "Write default (what writers store when they leave the column out; empty: none)",
        key=_field(f"default_{column.field_id}", text or ""),
    )
    return [Change(SCHEMA, "set_default_value", (_path(column), value or None))]


def _identifier_fields(table: Table, cols: Sequence[Column]) -> Form:
    current = list(table.metadata.current_schema().identifier_field_names())
    choices = [c.path for c in _sources(cols)]
    chosen = st.multiselect(
        "Identifier fields (the columns that identify a row; required, not floating point)",
        choices,
        key=_field("identifier", [p for p in current if p in choices], choices),
    )
    return [Change(SCHEMA, "set_identifier_fields", tuple(chosen))]


SCHEMA_FORMS: dict[str, Callable[[Table, Sequence[Column]], Form]] = {
    "Add a column": _add_column,
    "Rename a column": _rename_column,
    "Drop a column": _drop_column,
    "Widen a column's type": _widen_column,
    "Make a column optional or required": _nullability,
    "Move a column": _move_column,
    "Change a column's doc": _column_doc,
    "Change a column's write default (v3)": _write_default,
    "Set the identifier fields": _identifier_fields,
}


def _transform(name: str, label: str = "Transform") -> str:
    """A transform picker; bucket and truncate ask for their parameter."""
    picked = st.selectbox(
        label,
        TRANSFORMS,
        key=_field(f"{name}_transform", "identity"),
        help="identity: the value itself; bucket[N]: a hash of it into N buckets; "
        "truncate[W]: strings and binary cut to W, numbers rounded down to a multiple of W; "
        "year, month, day, hour: of a date or timestamp; void: always null.",
    )
    if picked == "bucket[N]":
        n = st.number_input("Buckets (N)", min_value=1, step=1, key=_field(f"{name}_n", 16))
        return f"bucket[{int(n)}]"
    if picked == "truncate[W]":
        w = st.number_input("Width (W)", min_value=1, step=1, key=_field(f"{name}_w", 4))
        return f"truncate[{int(w)}]"
    return str(picked)


def _add_partition_field(table: Table, cols: Sequence[Column]) -> Form:
    source = _pick("Source column", "part_source", _sources(cols))
    transform = _transform("part")
    generated = partition_name(source.path, transform) if source is not None else None
    name = st.text_input(
        "Partition field name (optional)",
        key=_field("part_name", ""),
        placeholder=f"generated: {generated}" if generated else "generated from the column",
    )
    st.caption(
        "Only data written from now on is partitioned this way; files already written "
        "keep their spec."
    )
    if source is None:
        return "Choose the source column."
    options = (("name", name),) if name else ()
    return [Change(SPEC, "add_field", (source.path, transform), options)]


def _spec_fields(table: Table) -> dict[str, str]:
    """The default spec's fields by name, with ``transform(source)`` to show."""
    md = table.metadata
    schema = md.current_schema()
    out = {}
    for f in md.default_spec().fields:
        source = schema.find_column_name(f.source_id) or f"column {f.source_id}"
        out[f.name] = f"{f.name} = {f.transform}({source})"
    return out


def _pick_partition_field(fields: dict[str, str], name: str) -> str | None:
    return st.selectbox(
        "Partition field",
        list(fields),
        key=_field(name, None, list(fields)),
        index=None,
        placeholder="Choose a partition field",
        format_func=lambda n: fields.get(n, n),
    )


def _remove_partition_field(table: Table, cols: Sequence[Column]) -> Form:
    fields = _spec_fields(table)
    if not fields:
        return "The table is unpartitioned: there is no partition field to remove."
    name = _pick_partition_field(fields, "part_remove")
    if table.metadata.format_version == 1:
        st.caption("In a v1 table a removed field stays in the spec with the void transform.")
    if name is None:
        return "Choose the partition field to remove."
    return [Change(SPEC, "remove_field", (name,))]


def _rename_partition_field(table: Table, cols: Sequence[Column]) -> Form:
    fields = _spec_fields(table)
    if not fields:
        return "The table is unpartitioned: there is no partition field to rename."
    name = _pick_partition_field(fields, "part_rename")
    new_name = st.text_input("New name", key=_field("part_rename_to", ""))
    if name is None:
        return "Choose the partition field to rename."
    if not new_name:
        return "Type the partition field's new name."
    return [Change(SPEC, "rename_field", (name, new_name))]


SPEC_FORMS: dict[str, Callable[[Table, Sequence[Column]], Form]] = {
    "Add a partition field": _add_partition_field,
    "Remove a partition field": _remove_partition_field,
    "Rename a partition field": _rename_partition_field,
}


def _sort_order(table: Table, cols: Sequence[Column]) -> Form:
    md = table.metadata
    schema = md.current_schema()
    current: dict[str, SortTerm] = {}
    for f in md.default_sort_order().fields:
        source = schema.find_column_name(f.source_id)
        if source is not None:
            current[source] = (source, str(f.transform), f.direction.value, f.null_order.value)
    choices = [c.path for c in _sources(cols)]
    chosen = st.multiselect(
        "Sort by (most significant first; none: unsorted)",
        choices,
        key=_field("sort_columns", [p for p in current if p in choices], choices),
    )
    terms: list[SortTerm] = []
    for path in chosen:
        _, transform, was, nulls = current.get(path, (path, "identity", "asc", ""))
        name, t, d, n = st.columns([2, 2, 2, 2], vertical_alignment="center")
        name.markdown(f"`{path.replace('`', '')}`")
        transform = t.text_input("Transform", key=_field(f"sort_transform_{path}", transform))
        direction = d.radio(
            "Direction",
            ["asc", "desc"],
            key=_field(f"sort_dir_{path}", was),
            horizontal=True,
        )
        # Nulls follow the direction (first when ascending, as Spark) until the user picks.
        if not nulls or direction != was:
            nulls = "nulls-first" if direction == "asc" else "nulls-last"
        nulls = n.radio(
            "Nulls",
            ["nulls-first", "nulls-last"],
            key=_field(f"sort_nulls_{path}_{direction}", nulls),
            horizontal=True,
        )
        terms.append((path, transform.strip(), direction, nulls))
    st.caption(
        "The order replaces the table's default sort order; data already written stays as it is."
    )
    return [Change(SORT, ORDER, tuple(terms))]


def _properties(table: Table) -> Form:
    properties = table.metadata.properties
    left, right = st.columns(2)
    key = left.text_input(
        "Set property", key=_field("prop_key", ""), placeholder="write.target-file-size-bytes"
    ).strip()
    value = right.text_input(
        "to value",
        key=_field("prop_value", ""),
        placeholder=f"now {properties[key]}" if key in properties else "",
    )
    names = sorted(properties)
    removed = st.multiselect("Remove properties", names, key=_field("prop_remove", [], names))
    changes = []
    if key:
        changes.append(Change(PROPERTIES, "set", (key, value)))
    if removed:
        changes.append(Change(PROPERTIES, "remove", tuple(removed)))
    return changes or "Type a property to set, or choose properties to remove."


# Staged changes, the dry run, the commit ------------------------------------------------------


def show_staged(staged: Sequence[Change]) -> None:
    """The changes staged so far, with a way to drop them."""
    if not staged:
        return
    st.markdown(f"**Staged for this commit ({len(staged)})**")
    st.code("\n".join(c.text() for c in staged), language=None)
    st.button("Clear staged changes", key="evo_clear", on_click=_clear_staged)


def base_table(context: PageContext, table: Table, key: str, changes: Sequence[Change]) -> Table:
    """The version the dry run is computed on: the confirmed one, else the current one.

    A confirmation holds for exactly the changes confirmed: any edit drops it.
    """
    pin = st.session_state.get(PIN_KEY)
    if isinstance(pin, Pin) and pin.table_key == key and pin.changes == tuple(changes):
        if pin.location == table.metadata_location:
            return table
        try:
            return data.table_at(context.catalog, str(table.identifier), pin.location)
        except IcecoreError as error:
            show_error(error)
            _unconfirm()
            stop()
    if pin is not None or st.session_state.get(CONFIRM_KEY):
        st.session_state.pop(PIN_KEY, None)
        st.session_state.pop(OUTCOME_KEY, None)
        drive(CONFIRM_KEY, False)
    return table


def checked(base: Table, changes: Sequence[Change]) -> DryRun:
    """The dry run, or the builders' sentence shown in its place and the page stopped."""
    try:
        return data.evolution_dry_run(base.metadata_location, tuple(changes), base)
    except IcecoreError as error:
        show_error(error)
        stop()


def show_dry_run(dry: DryRun, table: Table, base: Table) -> None:
    """What the commit would write: its lines, the ids, the new schema, the JSON diff."""
    st.subheader("Dry run")
    st.caption(
        f"Computed exactly as the commit computes it, against metadata file "
        f"{escape_markdown(dry.base_location)}. Nothing was written."
    )
    if base.metadata_location != table.metadata_location:
        st.warning(
            "The table has moved on since you confirmed this dry run: another writer "
            f"committed {escape_markdown(what_changed(base.metadata, table.metadata))}. Committing "
            "checks the change against the new version first.",
            icon=":material/sync_problem:",
        )
    if dry.is_noop:
        st.info("These changes leave the table as it is: there is nothing to commit.")
        return
    left, right = st.columns([3, 1])
    with left:
        st.markdown("**What the commit changes**")
        st.code("\n".join(dry.changes), language=None)
    with right:
        st.markdown("**Ids**")
        st.dataframe(dry.ids, hide_index=True, width="stretch")
    st.markdown("**Schema after the commit**")
    st.dataframe(
        _highlighted(dry.schema),
        hide_index=True,
        width="stretch",
        height=fit_height(len(dry.schema)),
        column_config={"change": st.column_config.TextColumn("change", width="medium")},
    )
    lines = dry.diff.count("\n") + 1
    with st.expander(f"Metadata JSON diff ({lines:,} lines)"):
        st.code(dry.diff, language="diff")


MAX_WHATIF_FILTERS = 20
"""Filters estimated per click (each is planned, and the estimate reads the table's rows)."""


def show_what_if(base: Table, changes: Sequence[Change], dry: DryRun) -> None:
    """What each typed filter would read after a rewrite into the new spec or sort order.

    Next to what it reads today (:mod:`icecore.whatif`). Run on a click: the estimate reads
    the table's rows (the columns the layout and filters name). Filters are shown back as
    data, never as Markdown.
    """
    if dry.is_noop or not any(c.kind in (SPEC, SORT) for c in changes):
        return
    with st.expander("What this layout would save", icon=":material/query_stats:"):
        st.caption(
            "Estimated as Spark's rewrite_data_files would write the table into the new spec "
            "and sort order (binpack, or sort with a sort order), each filter judged on the "
            "rewritten files by the planner's own rules. The estimate reads the table's rows "
            "(a sample of whole files past 2,000,000 rows); measured against Spark's real "
            "rewrites it lands within half of the files and bytes (or two files)."
        )
        text = st.text_area(
            "Filters, one per line (SQL, as in Scan preview)",
            key="evo_whatif_filters",
            max_chars=20_000,
        )
        filters = [line.strip() for line in text.splitlines() if line.strip()]
        if len(filters) > MAX_WHATIF_FILTERS:
            st.info(f"The first {MAX_WHATIF_FILTERS} filters are estimated.")
            filters = filters[:MAX_WHATIF_FILTERS]
        if not st.button("Estimate", key="evo_whatif_run", disabled=not filters):
            return
        try:
            with st.spinner("Reading the rows and simulating the rewrite..."):
                result = evolve.what_if(base, changes, filters)
        except IcecoreError as error:
            show_error(error)
            return
        st.dataframe(
            [
                {
                    "filter": e.filter,
                    "files now": e.files_now,
                    "files after": e.files_after,
                    "bytes now": format_bytes(e.bytes_now),
                    "bytes after": format_bytes(e.bytes_after),
                    "bytes saved": f"{1 - e.bytes_after / e.bytes_now:.0%}" if e.bytes_now else "",
                }
                for e in result.estimates
            ],
            hide_index=True,
            width="stretch",
            column_config={"filter": st.column_config.TextColumn("filter", width="large")},
        )
        st.caption(
            f"After the rewrite: {result.files_after:,} data files. Estimated from "
            f"{result.sampled_rows:,} of {result.rows:,} rows ({result.sampled_files:,} files)."
        )


ROW_COLOURS = {"added": "#e3f4e8", "removed": "#fde7e5"}
CHANGED_COLOUR = "#fff4d6"
SCHEMA_COLUMNS = (
    "change",
    "field",
    "id",
    "type",
    "required",
    "doc",
    "initial default",
    "write default",
    "identifier",
)


def _highlighted(rows: list[dict[str, object]]) -> Styler:
    """Schema rows with added fields green, dropped ones red, changed ones amber."""

    def colour(row: pd.Series) -> list[str]:
        change = str(row["change"])
        background = ROW_COLOURS.get(change, CHANGED_COLOUR if change else "")
        style = f"background-color: {background}" if background else ""
        return [style] * len(row)

    # Defaults exist only in v3 tables: their columns are left out when no field has one.
    shown = [c for c in SCHEMA_COLUMNS if not c.endswith(" default") or any(row[c] for row in rows)]
    return pd.DataFrame(rows, columns=shown).style.apply(colour, axis=1)


def stage_button(current: Form) -> None:
    """Stage the form's change and start another, to commit several as one version."""
    if isinstance(current, list) and current:
        st.button(
            "Stage this change and add another",
            key="evo_stage",
            on_click=_stage,
            args=(tuple(current),),
            help="Several changes commit together as one new metadata version.",
        )


def commit_controls(
    context: PageContext, table: Table, dry: DryRun, changes: Sequence[Change]
) -> None:
    """Confirm the dry run, commit it, and show what stopped a commit."""
    st.subheader("Commit")
    pin = Pin(context.catalog, str(table.identifier), dry.base_location, tuple(changes))
    confirmed = st.checkbox(
        "I have read the dry run above and want to commit it to "
        + escape_markdown(table.identifier),
        key=CONFIRM_KEY,
        on_change=_on_confirm,
        kwargs={"pin": pin},
    )
    st.button(
        "Commit",
        type="primary",
        key="evo_commit",
        disabled=not confirmed or dry.is_noop,
        on_click=_on_commit,
        kwargs={"pin": pin},
    )
    outcome = st.session_state.get(OUTCOME_KEY)
    if isinstance(outcome, Outcome) and outcome.table_key == pin.table_key and outcome.error:
        st.error(escape_markdown(outcome.error), icon=":material/error:")
        if outcome.conflict:
            st.button(
                "Reload the table and check the change again",
                key="evo_retry",
                on_click=_unconfirm,
                help="The dry run is computed again on the table as it is now; confirm it "
                "again to commit.",
            )


def show_committed(context: PageContext, key: str, table: Table) -> None:
    """The last commit's result (while it is the table's current version)."""
    outcome = st.session_state.get(OUTCOME_KEY)
    if not isinstance(outcome, Outcome) or outcome.table_key != key:
        return
    done = outcome.committed
    if done is None or done.metadata_location != table.metadata_location:
        return
    with st.container(border=True):
        st.success(
            f"Committed to {escape_markdown(done.table)}. "
            f"New metadata file: {escape_markdown(done.metadata_location)}",
            icon=":material/check_circle:",
        )
        cols = st.columns(3)
        cols[0].metric("Schema id", done.schema_id)
        cols[1].metric("Partition spec id", done.spec_id)
        cols[2].metric("Sort order id", done.sort_order_id)
        st.code("\n".join(done.changes), language=None)
        st.caption(f"It replaced {escape_markdown(done.previous_location)}.")
        params = context.selection.to_params()
        links = st.columns(3)
        links[0].page_link(OVERVIEW.file, label="See it on Overview", query_params=params)
        links[1].page_link(HISTORY.file, label="See it in History", query_params=params)


def stop_unless_writable(read_only: bool, table: Table, hidden: str) -> None:
    """End the page with a note when it may not write: read-only mode or no catalog pointer.

    Args:
        read_only: the app's read-only mode.
        table: the table the page would write to.
        hidden: what read-only mode hides on this page, said after the mode's name.
    """
    if read_only:
        st.info(
            f"Read-only mode (ICECORE_READ_ONLY or read_only in icecore.toml): {hidden}",
            icon=":material/lock:",
        )
        stop()
    refusal = evolve.commit_refusal(table)
    if refusal is not None:
        st.info(escape_markdown(refusal), icon=":material/lock:")
        stop()


__all__ = [
    "SCHEMA_FORMS",
    "SPEC_FORMS",
    "Form",
    "Outcome",
    "Pin",
    "base_table",
    "change_form",
    "checked",
    "commit_controls",
    "show_committed",
    "show_dry_run",
    "show_staged",
    "stage_button",
    "staged_changes",
    "start",
    "stop_unless_writable",
]
