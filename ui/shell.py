"""Start every page the same way: page config, the shared selection, the sidebar, errors.

Streamlit runs a deep-linked page alone (app.py is skipped), so every page calls
:func:`bootstrap` first. The selection (catalog, table, one time selector, filter) lives in
session state and in the URL query parameters (``?catalog=...&table=...&snapshot=...`` or
``&ref=``/``&as_of=``, and ``&filter=``), so any view can be shared as a link: a link's
parameters win over what the session remembers, and every change is written back to both.

Every catalog the selection names passes :func:`ui.served.admit` first (the deployment
boundary), and a table must be one the catalog lists before it is opened. With ``[auth]`` in
icecore.toml a page first requires a signed-in user (:func:`ui.identity.require_sign_in`);
the listings and tables it then gets are the signed-in principal's (:mod:`ui.data`), and
:attr:`PageContext.role` is their role on the selected table, by which pages hide what the
role cannot do and say why (:func:`allowed`). Whatever a link or
a user supplied is shown as text: errors and captions go through :func:`escape_markdown`.

Widgets are driven by key: before each sidebar widget is drawn its session-state value is
set from the selection, and its ``on_change`` callback writes the user's choice back into
the selection. A page never reads a widget to learn the selection; it reads
:class:`PageContext`.
"""

from __future__ import annotations

import datetime as dt
import heapq
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, NoReturn, TypeVar

import pyarrow as pa
import streamlit as st

from icecore.access import Role
from icecore.catalog import TableIdentifier
from icecore.config import read_only as config_read_only
from icecore.errors import IcecoreError, NotFound
from icecore.export import csv_bytes, parquet_bytes
from icecore.metadata import Snapshot
from icecore.point_in_time import At, Resolved
from icecore.table import Table
from icecore.values import whole_number
from ui import data, identity, views
from ui.served import (
    NotServed,
    admit,
    default_catalog,
    open_catalogs_allowed,
    public_catalog,
    served_keys,
)

CONFIG_ENV = "ICECORE_CONFIG"
DEFAULT_CONFIG = "icecore.toml"
"""The app's config file (``read_only = true``); ``ICECORE_CONFIG`` names another."""

T = TypeVar("T")

SELECTION_KEY = "selection"
KNOWN_CATALOGS_KEY = "known_catalogs"
PENDING_KIND_KEY = "sb_pending_kind"
"""The time-selector kind the user chose before giving it a value (a time not yet typed)."""
PARAMS = ("catalog", "table", "snapshot", "ref", "as_of", "filter")
"""The query parameters of a shared link (docs/ARCHITECTURE.md "Contracts", App)."""
TABLE_PARAMS = ("from", "to")
"""A page's own parameters that name points of one table (Time travel's ``from``/``to``):
dropped from the link when the catalog or table changes, where they would name nothing."""
LINK_SLOT_KEY = "link_slot"

TIME_CURRENT = "Current"
TIME_SNAPSHOT = "Snapshot"
TIME_REF = "Branch or tag"
TIME_AS_OF = "Time"
TIME_KINDS = (TIME_CURRENT, TIME_SNAPSHOT, TIME_REF, TIME_AS_OF)


@dataclass(frozen=True, slots=True)
class Selection:
    """What the user is looking at: a catalog, a table, one point in time, a filter.

    At most one of ``snapshot``, ``ref`` and ``as_of`` is set; all are the text of the link.
    """

    catalog: str
    table: str | None = None
    snapshot: str | None = None
    ref: str | None = None
    as_of: str | None = None
    filter: str | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, str], catalog: str) -> Selection:
        """The selection a link names (``catalog`` when the link has none)."""

        def get(name: str) -> str | None:
            value = params.get(name)
            return value if value else None

        return cls(
            catalog=get("catalog") or catalog,
            table=get("table"),
            snapshot=get("snapshot"),
            ref=get("ref") if not get("snapshot") else None,
            as_of=get("as_of") if not (get("snapshot") or get("ref")) else None,
            filter=get("filter"),
        )

    def to_params(self) -> dict[str, str]:
        """The query parameters of this selection (unset values left out)."""
        values = {name: getattr(self, name) for name in PARAMS}
        return {k: v for k, v in values.items() if v}

    @property
    def time_kind(self) -> str:
        """Which time selector is set (one of :data:`TIME_KINDS`)."""
        if self.snapshot is not None:
            return TIME_SNAPSHOT
        if self.ref is not None:
            return TIME_REF
        if self.as_of is not None:
            return TIME_AS_OF
        return TIME_CURRENT

    def at(
        self, snapshot: str | None = None, ref: str | None = None, as_of: str | None = None
    ) -> Selection:
        """This selection at another point in time (the selectors not given are cleared)."""
        return replace(self, snapshot=snapshot, ref=ref, as_of=as_of)

    def point(self) -> At:
        """The point in time the link names, built once (:class:`icecore.point_in_time.At`).

        Raises:
            NotFound: the snapshot id in the link is not a number.
            ValidationError: a negative snapshot id, or a time that is not ISO-8601.
        """
        snapshot_id = None
        if self.snapshot is not None:
            try:
                snapshot_id = int(self.snapshot)
            except ValueError as e:
                raise NotFound(
                    f"Snapshot {self.snapshot!r} is not a snapshot id; ids are whole numbers."
                ) from e
        return At.of(snapshot_id=snapshot_id, ref=self.ref, as_of=self.as_of)

    def describe_time(self) -> str:
        """The point in time in words, for captions."""
        if self.snapshot is not None:
            return f"snapshot {self.snapshot}"
        if self.ref is not None:
            return f"ref {self.ref}"
        if self.as_of is not None:
            return f"as of {self.as_of}"
        return "the current snapshot"


@dataclass(frozen=True, slots=True)
class PageContext:
    """What a page needs: the selection, and the table and snapshot it resolves to.

    Attributes:
        catalog: the selected catalog.
        read_only: whether commit controls are hidden.
        selection: the full selection.
        table: the selected table, or None (none chosen, or it failed to load).
        snapshot: the selected snapshot (None for an empty table, or on an error).
        failed: whether an error was already shown on the page.
        point: the selected point resolved in ``table`` (the snapshot and the schema it is
            read with): what a page passes down, so nothing resolves it again.
        role: the session's role on the selected table (admin where the deployment has no
            grants; none when no table is selected under a policy).
    """

    catalog: str
    read_only: bool
    selection: Selection
    table: Table | None = None
    snapshot: Snapshot | None = None
    failed: bool = False
    point: Resolved | None = None
    role: Role = Role.ADMIN

    @property
    def snapshot_id(self) -> int | None:
        """The resolved snapshot's id (None for an empty table)."""
        return self.snapshot.snapshot_id if self.snapshot is not None else None


def allowed(context: PageContext, role: Role, what: str) -> bool:
    """Whether the session's role on the table includes ``role``; if not, one caption says so.

    The pages hide the controls of what the role cannot do (the core refuses them anyway,
    where the action happens) and say why in one sentence naming the role needed, e.g.
    "Committing changes needs the owner role on demo.trips; you have the reader role."
    """
    if context.role >= role:
        return True
    held = "no grant" if context.role is Role.NONE else f"the {context.role.label} role"
    where = f" on {context.selection.table}" if context.selection.table else ""
    st.caption(
        escape_markdown(f"{what} needs the {role.label} role{where}; you have {held}."),
        help="Roles come from the [[grants]] of this deployment's icecore.toml; ask an "
        "admin of this deployment for a grant.",
    )
    return False


def read_only() -> bool:
    """Whether commit and maintenance controls are hidden (:func:`icecore.config.read_only`)."""
    return config_read_only()


def filesystem_warning(table: Table) -> str | None:
    """The spec's caution for commits to a file-system table, or None for other catalogs.

    Spec "File System Tables": commits rename ``v<V+1>.metadata.json`` into place, which is
    atomic only on file systems that support atomic rename (HDFS, most local file
    systems); object stores do not, so two writers can both believe they committed.
    """
    if table.catalog is None or not table.catalog.hadoop_layout:
        return None
    return (
        f"{table.identifier} is a file-system table: a commit renames the next "
        "v<N>.metadata.json into place, which the Iceberg spec calls safe only where renames "
        "are atomic (HDFS, most local file systems) — not on object stores. Make sure no "
        "other writer commits to it at the same time."
    )


_ASCII_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
"""Every ASCII punctuation character: CommonMark lets a backslash escape each of them."""
WORD_JOINER = "\u2060"
"""An invisible character that breaks an autolink literal without changing what is shown."""
_AUTOLINK_LITERAL = re.compile(r"(?i)(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)")


def escape_markdown(text: object) -> str:
    """``text`` as Streamlit markdown that shows these characters and nothing else.

    Every ASCII punctuation character is backslash-escaped, which is what CommonMark defines
    escapes for. That breaks every construct of the parser: links and images (``[``, ``!``),
    ``<...>`` autolinks and HTML tags, emphasis, code, headings and lists, and Streamlit's
    directives (``:red[...]``, ``:material/...:`` icons) and ``$math$``. GFM's autolink
    literals (``https://...``, ``www.``, ``a@b.c``) are found later, in the parsed text where
    escapes are already gone, so a word joiner (invisible) is put into each trigger too.
    """
    joined = _AUTOLINK_LITERAL.sub(WORD_JOINER, str(text))
    return _ASCII_PUNCTUATION.sub(r"\\\1", joined)


def code_label(text: str) -> str:
    """Text shown verbatim as inline code in a label (no typography: ``>=`` stays ``>=``)."""
    return "`" + text.replace("`", "'") + "`"


def show_error(error: IcecoreError) -> None:
    """Show an Icecore error as the one sentence it is, never a traceback.

    Error sentences quote what a link or a user supplied (a ref, a filter, a table name),
    so the sentence is escaped: it shows as text, never as a link or an image.
    """
    st.error(escape_markdown(error), icon=":material/error:")


def count_metric(
    where: Any, label: str, n: int, of: int | None = None, help: str | None = None
) -> None:
    """A metric tile showing a count short enough to fit, the exact value on hover.

    ``where`` is ``st`` or a column; ``of`` makes it a part of a whole: the part is the
    value and the whole goes under it, in the tile's grey delta line (``2,831`` over
    ``of 2,831``), which has the room that "2,831 of 2,831" lacks in a column of four at a
    laptop's width (Streamlit cuts it to "2,831 of 2,…").
    """
    value, exact = views.count_tile(n, of)
    hover = "\n\n".join(t for t in (exact, help) if t) or None
    if of is None:
        where.metric(label, value, help=hover)
        return
    where.metric(
        label,
        views.short_count(n),
        delta=f"of {views.short_count(of)}",
        delta_color="off",
        delta_arrow="off",
        help=hover,
    )


_SHORTENED = (
    "Shortened from the left so that the file name shows; the whole path is in the "
    f"'{views.FULL_PATH}' column (click a cell to see all of it)."
)
_COUNT = st.column_config.NumberColumn(format="localized")
TABLE_COLUMNS: dict[str, Any] = {
    "file": st.column_config.TextColumn(help=_SHORTENED),
    "path": st.column_config.TextColumn(help=_SHORTENED),
    "manifest": st.column_config.TextColumn(help=_SHORTENED),
    views.FULL_PATH: st.column_config.TextColumn(help="The whole path."),
    "bytes": st.column_config.NumberColumn(format="bytes"),
    "records": _COUNT,
    "added rows": _COUNT,
    "existing rows": _COUNT,
    "items": _COUNT,
}
"""How the tables of files, manifests and pruned items show their columns, by column name
(``st.dataframe(..., column_config=TABLE_COLUMNS)``; names a table lacks are ignored): paths
shortened from the left with the whole path beside them, bytes in units, counts with
separators (numbers stay numbers, so the columns still sort by value)."""


def guarded(call: Callable[[], T]) -> T:
    """The result of ``call``, or its Icecore error shown as one sentence and the page stopped."""
    try:
        return call()
    except IcecoreError as error:
        show_error(error)
        stop()


# ---------------------------------------------------------------------------------------
# The selection: from the link, in the session, back to the link


def current_selection() -> Selection:
    """The selection of this run: the link's when it names one, else the session's."""
    params = {name: st.query_params.get(name) or "" for name in PARAMS}
    remembered = st.session_state.get(SELECTION_KEY)
    if any(params.values()) or not isinstance(remembered, Selection):
        fallback = remembered.catalog if isinstance(remembered, Selection) else default_catalog()
        return Selection.from_params(params, fallback)
    return remembered


def set_selection(selection: Selection) -> None:
    """Remember ``selection`` in session state and write it to the URL."""
    before = st.session_state.get(SELECTION_KEY)
    if isinstance(before, Selection) and (before.catalog, before.table) != (
        selection.catalog,
        selection.table,
    ):
        for name in TABLE_PARAMS:
            if name in st.query_params:
                del st.query_params[name]
    st.session_state[SELECTION_KEY] = selection
    wanted = selection.to_params()
    current = {name: st.query_params.get(name) for name in PARAMS if st.query_params.get(name)}
    if current != wanted:
        for name in PARAMS:
            if name in st.query_params and name not in wanted:
                del st.query_params[name]
        st.query_params.update(wanted)


def set_catalog(catalog: str) -> None:
    """Choose another catalog (the table and time are cleared).

    ``catalog`` is admitted as :func:`bootstrap` admits a link's (a catalog outside the
    boundary is refused there, with its sentence, before anything opens it).
    """
    st.session_state.pop(PENDING_KIND_KEY, None)
    catalog = catalog.strip()
    if open_catalogs_allowed():
        catalog = public_catalog(catalog)
    known = st.session_state.setdefault(KNOWN_CATALOGS_KEY, [])
    if catalog and catalog not in known:
        known.append(catalog)
    set_selection(Selection(catalog=catalog))


def set_time(snapshot: str | None = None, ref: str | None = None, as_of: str | None = None) -> None:
    """Point the shared time selector somewhere else (at most one of the three)."""
    set_selection(current_selection().at(snapshot=snapshot, ref=ref, as_of=as_of))


def set_filter(text: str | None) -> None:
    """Remember the scan filter in the selection (and so in the link)."""
    set_selection(replace(current_selection(), filter=(text or "").strip() or None))


def filter_from(key: str) -> None:
    """``on_change`` of a filter box: the box's text becomes the selection's filter."""
    set_filter(st.session_state.get(key))


def snapshot_from(key: str) -> None:
    """``on_click``/``on_change``: the snapshot id held by widget ``key`` becomes the time."""
    value = st.session_state.get(key)
    if value is not None and str(value).strip():
        set_time(snapshot=str(value).strip())


def snapshot_from_chart(key: str) -> None:
    """``on_select`` of a chart whose points carry a snapshot id as ``customdata[0]``."""
    state = st.session_state.get(key) or {}
    points = (state.get("selection") or {}).get("points") or []
    for point in points:
        custom = point.get("customdata")
        if custom:
            set_time(snapshot=str(custom[0]))
            return


# ---------------------------------------------------------------------------------------
# The sidebar


def _known_catalogs(selection: Selection) -> list[str]:
    """The served catalogs, then (only when open catalogs are allowed) those opened since."""
    known = served_keys()
    extras = st.session_state.get(KNOWN_CATALOGS_KEY, []) if open_catalogs_allowed() else []
    for extra in [*extras, selection.catalog]:
        if extra not in known:
            known.append(extra)
    return known


def _on_catalog() -> None:
    chosen = st.session_state.get("sb_catalog")
    if chosen:
        set_catalog(chosen)


def _on_other_catalog() -> None:
    text = (st.session_state.get("sb_catalog_other") or "").strip()
    st.session_state["sb_catalog_other"] = ""
    if text:
        set_catalog(text)


def _on_namespace() -> None:
    selection = current_selection()
    set_selection(Selection(catalog=selection.catalog))
    st.session_state["sb_pending_namespace"] = st.session_state["sb_namespace"]


def _on_table() -> None:
    chosen = st.session_state.get("sb_table")
    st.session_state.pop(PENDING_KIND_KEY, None)
    selection = current_selection()
    set_selection(Selection(catalog=selection.catalog, table=chosen or None))


def _on_time_kind() -> None:
    """Switch the kind of time selector, choosing a sensible value at once.

    Snapshot starts at the current snapshot and branch or tag at ``main``, so the page
    and the link agree with the sidebar immediately; a time waits to be typed (the page
    reads the current snapshot meanwhile).
    """
    kind = st.session_state["sb_time_kind"]
    st.session_state[PENDING_KIND_KEY] = kind
    selection = current_selection()
    if kind in (TIME_CURRENT, TIME_AS_OF) or selection.table is None:
        set_time()
        return
    try:
        table = data.open_table(selection.catalog, selection.table)
    except IcecoreError:
        set_time()
        return
    if kind == TIME_SNAPSHOT:
        current = table.metadata.current_snapshot_id
        set_time(snapshot=str(current) if current is not None else None)
    else:
        names = sorted(table.refs(), key=lambda n: (n != "main", n))
        set_time(ref=names[0] if names else None)


def _on_snapshot() -> None:
    value = st.session_state.get("sb_snapshot")
    if value is not None:
        set_time(snapshot=str(value))


def _on_ref() -> None:
    value = st.session_state.get("sb_ref")
    if value:
        set_time(ref=value)


def _on_as_of() -> None:
    value = (st.session_state.get("sb_as_of") or "").strip()
    set_time(as_of=value or None)


def drive(key: str, value: Any) -> None:
    """Set a widget's value before it is drawn, so the selection drives it (not a default)."""
    if st.session_state.get(key) != value:
        st.session_state[key] = value


def _sidebar_catalog(selection: Selection, refused: bool = False) -> None:
    """The catalog picker; after a refused link, the served catalogs with none chosen."""
    known = served_keys() if refused else _known_catalogs(selection)
    drive("sb_catalog", None if refused else selection.catalog)
    st.sidebar.selectbox(
        "Catalog",
        known,
        key="sb_catalog",
        index=None,
        placeholder="Choose a catalog",
        on_change=_on_catalog,
        help="The catalogs this app serves: a name from icecore.toml, a warehouse folder, a "
        "sqlite:///, postgresql:// or http(s):// (REST) URI, or a metadata.json path.",
    )
    if not open_catalogs_allowed():
        return
    st.sidebar.text_input(
        "Open another catalog",
        key="sb_catalog_other",
        on_change=_on_other_catalog,
        placeholder="folder, sqlite:///…, postgresql://…, http(s)://… (REST) or …metadata.json",
    )


def _sidebar_table(selection: Selection, tables: list[str]) -> None:
    namespaces = sorted({t.rsplit(".", 1)[0] for t in tables})
    if not namespaces:
        st.sidebar.caption("This catalog has no tables.")
        return
    pending = st.session_state.pop("sb_pending_namespace", None)
    if selection.table is not None and "." in selection.table:
        namespace = selection.table.rsplit(".", 1)[0]
    elif pending in namespaces:
        namespace = pending
    else:
        namespace = namespaces[0]
    if namespace not in namespaces:
        namespaces.append(namespace)
    drive("sb_namespace", namespace)
    st.sidebar.selectbox("Namespace", namespaces, key="sb_namespace", on_change=_on_namespace)
    in_namespace = [t for t in tables if t.rsplit(".", 1)[0] == namespace]
    if selection.table is not None and selection.table not in in_namespace:
        in_namespace.append(selection.table)
    drive("sb_table", selection.table)
    st.sidebar.selectbox(
        "Table",
        in_namespace,
        key="sb_table",
        index=None,
        placeholder="Choose a table",
        format_func=lambda t: t.rsplit(".", 1)[-1],
        on_change=_on_table,
    )


RECENT_SNAPSHOTS = 50
"""The newest snapshots the sidebar's picker offers; any other is typed (10,000 options
would be sent to the browser on every run)."""


def _snapshot_label(table: Table, chosen: int | None) -> dict[int, str]:
    """Labels of the newest snapshots, newest first, and of the chosen one."""
    labels = {}
    current = table.metadata.current_snapshot_id
    newest = heapq.nlargest(RECENT_SNAPSHOTS, table.snapshots(), key=lambda s: s.timestamp_ms)
    picked = table.metadata.snapshot_by_id(chosen) if chosen is not None else None
    if picked is not None and all(s.snapshot_id != chosen for s in newest):
        newest.append(picked)
    for s in newest:
        when = dt.datetime.fromtimestamp(s.timestamp_ms / 1000, tz=dt.UTC)
        mark = " (current)" if s.snapshot_id == current else ""
        op = f" · {s.operation}" if s.operation is not None else ""
        labels[s.snapshot_id] = f"{s.snapshot_id} · {when:%Y-%m-%d %H:%M:%S}{op}{mark}"
    return labels


def _on_snapshot_id() -> None:
    value = (st.session_state.get("sb_snapshot_id") or "").strip()
    if value:  # checked where every selection is: an unknown id is one sentence on the page
        set_time(snapshot=value)


def _sidebar_time(selection: Selection, table: Table) -> None:
    st.sidebar.markdown("**Point in time**")
    kind = selection.time_kind
    if kind == TIME_CURRENT and st.session_state.get(PENDING_KIND_KEY) == TIME_AS_OF:
        kind = TIME_AS_OF
    drive("sb_time_kind", kind)
    st.sidebar.radio(
        "Read the table at",
        TIME_KINDS,
        key="sb_time_kind",
        on_change=_on_time_kind,
        label_visibility="collapsed",
    )
    if kind == TIME_SNAPSHOT:
        chosen: int | None = None
        if selection.snapshot is not None:
            chosen = whole_number(selection.snapshot)
        labels = _snapshot_label(table, chosen)
        drive("sb_snapshot", chosen if chosen in labels else None)
        total = len(table.metadata.snapshots)
        st.sidebar.selectbox(
            "Snapshot",
            list(labels),
            key="sb_snapshot",
            index=None,
            placeholder="Choose a snapshot",
            format_func=lambda i: labels.get(i, str(i)),
            on_change=_on_snapshot,
            help=None
            if total <= RECENT_SNAPSHOTS
            else f"The {RECENT_SNAPSHOTS} newest of {total:,} snapshots; type any other below.",
        )
        if total > RECENT_SNAPSHOTS:
            st.sidebar.text_input(
                "Another snapshot id",
                key="sb_snapshot_id",
                max_chars=20,
                placeholder="a snapshot id",
                on_change=_on_snapshot_id,
            )
    elif kind == TIME_REF:
        refs = table.refs()
        names = sorted(refs, key=lambda n: (n != "main", n))
        drive("sb_ref", selection.ref if selection.ref in refs else None)
        st.sidebar.selectbox(
            "Branch or tag",
            names,
            key="sb_ref",
            index=None,
            placeholder="Choose a branch or tag",
            format_func=lambda n: f"{n} ({'branch' if refs[n].is_branch else 'tag'})",
            on_change=_on_ref,
        )
    elif kind == TIME_AS_OF:
        drive("sb_as_of", selection.as_of or "")
        st.sidebar.text_input(
            "As of (ISO-8601, UTC unless an offset is given)",
            key="sb_as_of",
            placeholder="2024-08-09T10:00:00Z",
            on_change=_on_as_of,
        )


# ---------------------------------------------------------------------------------------
# Bootstrap


def bootstrap(title: str) -> PageContext:
    """Configure the page, draw the sidebar, and resolve the selection to a table.

    An error (unknown catalog, table, snapshot or ref) is shown once, as one sentence, on
    the page; the context then has no table and ``failed`` set. The sidebar ends with the
    link to the view (:func:`share_link`).
    """
    context, served = _bootstrap(title)
    # A link naming a catalog that is not served is never repeated on the page.
    st.session_state[LINK_SLOT_KEY] = st.sidebar.empty() if served else None
    share_link()
    identity.show_signed_in()
    return context


def _bootstrap(title: str) -> tuple[PageContext, bool]:
    """:func:`bootstrap`'s work; also whether the link's catalog is served."""
    st.set_page_config(page_title=f"{title} · Icecore", page_icon="🧊", layout="wide")
    identity.require_sign_in()
    selection = current_selection()
    try:
        selection = replace(selection, catalog=admit(selection.catalog))
    except NotServed as refused:
        # The link stays as given (every run says no) until a served catalog is chosen.
        st.sidebar.title("Icecore")
        _sidebar_catalog(selection, refused=True)
        show_error(refused)
        selection = Selection(catalog=default_catalog())
        context = PageContext(
            catalog=selection.catalog, read_only=read_only(), selection=selection, role=Role.NONE
        )
        return replace(context, failed=True), False
    set_selection(selection)
    st.sidebar.title("Icecore")
    _sidebar_catalog(selection)
    context = PageContext(
        catalog=selection.catalog,
        read_only=read_only(),
        selection=selection,
        role=Role.ADMIN if identity.policy() is None else Role.NONE,
    )
    try:
        tables = data.table_names(selection.catalog)
    except IcecoreError as error:
        show_error(error)
        return replace(context, failed=True), True
    if selection.table is not None and selection.table not in tables:
        # The listing is cached for seconds: a table created since then is asked for once.
        data.forget_table_names()
        try:
            tables = data.table_names(selection.catalog)
        except IcecoreError as error:
            show_error(error)
            return replace(context, failed=True), True
    if selection.table is not None:
        try:
            check_listed(selection.table, tables)
        except NotFound as error:
            _sidebar_table(replace(selection, table=None), tables)
            show_error(error)
            return replace(context, failed=True), True
    _sidebar_table(selection, tables)
    if selection.table is None:
        return context, True
    try:
        table = data.open_table(selection.catalog, selection.table)
    except IcecoreError as error:
        show_error(error)
        return replace(context, failed=True), True
    _sidebar_time(selection, table)
    try:
        point = table.resolve(selection.point())
    except IcecoreError as error:
        show_error(error)
        return replace(context, table=table, failed=True), True
    if context.read_only:
        st.sidebar.caption("Read-only mode: commit controls are hidden.")
    role = table.catalog.access(table.identifier).role if table.catalog is not None else Role.ADMIN
    return replace(context, table=table, snapshot=point.snapshot, point=point, role=role), True


def link_to_view() -> str:
    """The link of the view shown: this page's URL and every query parameter it holds.

    ``st.context.url`` is the page's address in the browser without its query; where no
    browser is attached (a script run without one), the link is the query alone.
    """
    base = st.context.url or ""
    params = {k: v for k, v in st.query_params.to_dict().items() if v}
    query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    return f"{base}?{query}" if query else base


def share_link() -> None:
    """Show the link of this view in the sidebar, copyable (``st.code`` has a copy button).

    :func:`bootstrap` draws it first; a page that writes its own parameters later in its
    run (Time travel's points, SQL's query) calls it again, and the one slot is redrawn.
    The link is shown as text (a code block), never as Markdown or HTML.
    """
    slot = st.session_state.get(LINK_SLOT_KEY)
    if slot is None:
        return
    with slot.container():
        st.caption("Link to this view (copy it with the button on its right):")
        st.code(link_to_view(), language=None, wrap_lines=True)


def check_listed(name: str, tables: list[str]) -> None:
    """Refuse a table name the catalog does not list, before anything opens it.

    A name from a link is untrusted: a filesystem catalog would turn ``../../x`` or
    ``/etc.x`` into a path outside its warehouse. Only the catalog's own listing is opened.
    Under grants the listing is the session's (:func:`ui.data.table_names`), and the sentence
    is the same whether the table does not exist or exists without a grant: it reveals
    nothing.

    Raises:
        NotFound: ``name`` is not ``namespace.table``, or not a table of the catalog.
    """
    if name in tables:
        return
    TableIdentifier.parse(name)  # the sentence for a name of the wrong shape
    if identity.policy() is not None:
        raise NotFound(
            f"There is no table {name!r} here, or you have no grant on it; choose a table in "
            "the sidebar."
        )
    raise NotFound(f"Table {name!r} is not in this catalog; choose a table in the sidebar.")


def require_table(context: PageContext) -> tuple[Table, Snapshot | None]:
    """The page's table and snapshot, or stop the page with a hint (or the error shown)."""
    if context.table is None or context.failed:
        if not context.failed:
            st.info("Choose a table in the sidebar.", icon=":material/arrow_back:")
        stop()
    assert context.table is not None
    return context.table, context.snapshot


def require_point(context: PageContext) -> Resolved:
    """The page's point resolved in its table, or stop the page as :func:`require_table` does."""
    require_table(context)
    assert context.point is not None  # bootstrap resolves it with the table
    return context.point


def stop() -> NoReturn:
    """End this run of the page (typed for mypy: ``st.stop`` never returns)."""
    st.stop()
    raise AssertionError("st.stop() returned")  # pragma: no cover


def download_buttons(rows: pa.Table, name: str, key: str, label: str = "Download {kind}") -> None:
    """CSV and Parquet download buttons for ``rows``, side by side.

    The bytes are encoded when a button is clicked, not on every run (100,000 rows as CSV and
    Parquet cost seconds). ``label`` may name ``{kind}`` (CSV or Parquet); ``name`` is the
    file name without its suffix; ``key`` prefixes the widgets' keys.
    """
    downloads = (
        ("CSV", csv_bytes, "csv", "text/csv"),
        ("Parquet", parquet_bytes, "parquet", "application/vnd.apache.parquet"),
    )
    for col, (kind, encode, suffix, mime) in zip(st.columns(2), downloads, strict=True):
        col.download_button(
            label.format(kind=kind),
            data=partial(encode, rows),
            file_name=f"{name}.{suffix}",
            mime=mime,
            key=f"{key}_{suffix}",
        )
