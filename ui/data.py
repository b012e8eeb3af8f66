"""Cached calls into icecore: what the pages show, computed once per immutable key.

A metadata location never changes once written, and neither does a manifest, so results
are cached by them (STYLE.md): ``cache_resource`` for the catalog and the immutable
:class:`~icecore.table.Table` (thread-safe, never mutated), ``cache_data`` with bounded
``max_entries`` for everything else. Unhashable arguments carry a leading underscore and
are never part of the key; the key names the same thing by its location. Which table a
name points at is asked of the catalog on every run (cheap), so a commit shows at once.

A REST catalog answers that question with the whole table (``loadTable`` returns the
metadata, its location and the storage properties vended for that table), so there the one
request a page run makes per table is kept, by its metadata location, as the table itself:
nothing reads the metadata file again, and the table keeps the FileIO its credentials were
vended for. The sidebar's listing asks for names only (``listTables``), never a table each.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar, cast

import pyarrow as pa
import streamlit as st

from icecore import describe, health, maintenance, row_access, row_counts
from icecore.access import Role
from icecore.catalog import Catalog, TableIdentifier, load_catalog
from icecore.catalog.guarded import GuardedCatalog
from icecore.diff import SnapshotDiff
from icecore.errors import IcecoreError
from icecore.layout import MetadataTree, metadata_tree, partition_label, snapshot_files
from icecore.manifest import ManifestFile
from icecore.metadata import Snapshot
from icecore.metadata_events import MetadataEvent, metadata_events
from icecore.metadata_log import SnapshotState, adds_no_snapshot, state_at
from icecore.partitioning import PartitionSpec
from icecore.point_in_time import At, PointKey, Resolved
from icecore.progress import reporting
from icecore.row_access import masked_partition_fields, require_rows
from icecore.scan.count import RowCount
from icecore.scan.planner import Plan
from icecore.sql import ROWS_TABLE, run_sql
from icecore.table import Table, load_table_at
from icecore.table_data import access_of
from icecore.timeline import Timeline, timeline
from ui import identity
from ui.evolve import Change, DryRun, dry_run
from ui.shared_cache import SharedCache
from ui.views import DiffView, PlanView, diff_view, plan_view

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

LIVE_FILES_ENTRIES = 3
"""Snapshots whose live files are kept (a million files take ~180 MiB)."""


def _point_key(point: Any) -> PointKey:
    return cast(Resolved, point).key


BY_POINT: dict[str | type[Any], Callable[[Any], Any]] = {Resolved: _point_key}
"""``hash_funcs`` of the cached calls that take the resolved point: they are keyed by what the
read depends on (:attr:`Resolved.key`), so two names of one read (the ref ``main`` and the
current table) share one entry."""


# --- catalogs and tables ---------------------------------------------------------------
#
# The catalog, the listings and the tables are shared by every session (the caches below),
# so they are kept as the unguarded catalog has them, and the session's principal is applied
# after the cache, on every call (DESIGN.md "Identity, roles and audit"): a listing is
# filtered by the principal's grants, a table is checked (viewer) before it is handed out
# and re-bound to the session's guarded catalog, whose access its row reads ask and through
# which its commits go. Nothing cached for one person is served to another as is.


@st.cache_resource(ttl=300, max_entries=8, show_spinner=False)
def open_catalog(uri: str) -> Catalog:
    """The catalog ``uri`` names (read-only and thread-safe: shared across sessions).

    Unguarded: pages use :func:`session_catalog`; this is the shared object behind it.
    """
    return load_catalog(uri)


def session_catalog(catalog: str) -> GuardedCatalog:
    """The catalog ``catalog`` names as this session's principal may see and change it."""
    return identity.guarded(open_catalog(catalog), catalog)


def _visible(catalog: str, names: list[str]) -> set[str]:
    """The tables of ``names`` this session's principal may see (all without a policy)."""
    guarded = session_catalog(catalog)
    if guarded.policy is None:
        return set(names)
    return {n for n in names if guarded.access(TableIdentifier.parse(n)).role > Role.NONE}


@st.cache_data(ttl=10, max_entries=32, show_spinner=False)
def _table_rows(catalog: str) -> list[dict[str, str | None]]:
    opened = open_catalog(catalog)
    lazy = opened.loads_whole_tables
    return [
        {
            "catalog": catalog,
            "table": str(ident),
            "metadata location": None if lazy else opened.metadata_location(ident),
        }
        for ident in opened.list_tables()
    ]


def table_rows(catalog: str) -> list[dict[str, str | None]]:
    """Rows of (catalog, table, metadata location) of the tables this session may see.

    Cached for a few seconds for every session, then filtered by the session's grants. A
    REST catalog knows a table's metadata location only by loading the whole table
    (``loadTable``: the metadata, and credentials vended for it), one request per table: its
    rows leave the location out (None) and :func:`metadata_location` loads it on demand.
    """
    rows = _table_rows(catalog)
    seen = _visible(catalog, [str(r["table"]) for r in rows])
    return [r for r in rows if r["table"] in seen]


@st.cache_data(ttl=10, max_entries=32, show_spinner=False)
def _metadata_location(catalog: str, name: str) -> str:
    return open_catalog(catalog).metadata_location(TableIdentifier.parse(name))


def metadata_location(catalog: str, name: str) -> str:
    """One table's current metadata location (for a REST catalog, one ``loadTable``).

    Raises:
        Forbidden: the session may not see the table (the sentence is the same whether or
            not it exists).
    """
    session_catalog(catalog).require(TableIdentifier.parse(name), Role.VIEWER, "see its metadata")
    return _metadata_location(catalog, name)


@st.cache_data(ttl=10, max_entries=32, show_spinner=False)
def _table_names(catalog: str) -> list[str]:
    return [str(ident) for ident in open_catalog(catalog).list_tables()]


def table_names(catalog: str) -> list[str]:
    """The tables of a catalog this session may see, as ``namespace.table``.

    A listing only, cached a few seconds for every session and filtered by the session's
    grants: a table without a grant is not listed (the sidebar, every picker, the links).
    """
    names = _table_names(catalog)
    seen = _visible(catalog, names)
    return [n for n in names if n in seen]


def forget_table_names() -> None:
    """Ask the catalog for its listing again (a table created since the cached one)."""
    _table_names.clear()


@st.cache_data(ttl=10, max_entries=32, show_spinner=False)
def _view_names(catalog: str) -> list[str]:
    return [str(ident) for ident in open_catalog(catalog).list_views()]


def view_names(catalog: str) -> list[str]:
    """The views of a catalog this session may see (grants match views as they match tables)."""
    names = _view_names(catalog)
    seen = _visible(catalog, names)
    return [n for n in names if n in seen]


@st.cache_data(ttl=10, max_entries=64, show_spinner="Reading the view…")
def _view_detail(catalog: str, name: str, rights: tuple[str, ...]) -> dict[str, Any]:
    from icecore.view_lineage import view_detail

    guarded = session_catalog(catalog)
    return view_detail(guarded.load_view(TableIdentifier.parse(name)), _Listed(catalog))


class _Listed:
    """The relations a session may list, as :func:`icecore.view_lineage.kind_in` asks them."""

    def __init__(self, catalog: str) -> None:
        self.catalog = catalog
        self.catalog_name = getattr(open_catalog(catalog), "catalog_name", None)

    def list_tables(self) -> list[TableIdentifier]:
        return [TableIdentifier.parse(n) for n in table_names(self.catalog)]

    def list_views(self) -> list[TableIdentifier]:
        return [TableIdentifier.parse(n) for n in view_names(self.catalog)]


def view_detail(catalog: str, name: str) -> dict[str, Any]:
    """``icecore view``'s answer for a view this session may see (kinds by its listings).

    Raises:
        Forbidden: the session may not see the view.
        NotFound: no such view.
    """
    session_catalog(catalog).require(TableIdentifier.parse(name), Role.VIEWER, "see its metadata")
    return _view_detail(catalog, name, tuple(view_names(catalog)) + tuple(table_names(catalog)))


@st.cache_data(ttl=10, max_entries=32, show_spinner="Finding the views that read it…")
def _views_reading(catalog: str, name: str, visible: tuple[str, ...]) -> tuple[str, ...]:
    from icecore.view_lineage import views_reading

    listed = [TableIdentifier.parse(v) for v in visible]
    found = views_reading(open_catalog(catalog), TableIdentifier.parse(name), listed)
    return found.views


def views_reading(catalog: str, name: str) -> list[str]:
    """The views this session may see whose current SQL reads ``name`` (lineage)."""
    try:
        visible = tuple(view_names(catalog))
    except IcecoreError:
        return []
    return list(_views_reading(catalog, name, visible)) if visible else []


@st.cache_resource(max_entries=32, show_spinner=False)
def _table_at(
    catalog: str, name: str, metadata_location: str, _loaded: Table | None = None
) -> Table:
    opened = open_catalog(catalog)
    identifier = TableIdentifier.parse(name)
    if _loaded is not None and _loaded.metadata_location == metadata_location:
        return _loaded
    if opened.loads_whole_tables:
        current = opened.load_table(identifier)
        if current.metadata_location == metadata_location:
            return current
        return load_table_at(identifier, metadata_location, current.io, opened)
    return load_table_at(identifier, metadata_location, opened.io, opened)


def table_at(
    catalog: str, name: str, metadata_location: str, _loaded: Table | None = None
) -> Table:
    """The table as one metadata file has it (a version that never changes).

    Shared by every session by its location, and handed to this one only if its principal
    may see the table, bound to its guarded catalog. ``_loaded`` is that version as the
    catalog just returned it (a REST ``loadTable``): it is kept as is. Otherwise a REST
    table's older version is read with the FileIO of its current one, the only FileIO that
    holds the credentials the server vends for this table.

    Raises:
        Forbidden: the session may not see the table.
    """
    guarded = session_catalog(catalog)
    guarded.require(TableIdentifier.parse(name), Role.VIEWER, "see its metadata")
    return guarded.bind(_table_at(catalog, name, metadata_location, _loaded))


def open_table(catalog: str, name: str) -> Table:
    """The table's current version: its location asked of the catalog, its metadata cached.

    A REST catalog's answer is the table itself: one ``loadTable``, kept by its location.

    Raises:
        Forbidden: the session may not see the table (asked before the catalog is).
    """
    guarded = session_catalog(catalog)
    identifier = TableIdentifier.parse(name)
    guarded.require(identifier, Role.VIEWER, "see its metadata")
    opened = guarded.inner
    if opened.loads_whole_tables:
        loaded = opened.load_table(identifier)
        shared = _table_at(catalog, name, loaded.metadata_location, _loaded=loaded)
    else:
        shared = _table_at(catalog, name, opened.metadata_location(identifier))
    return guarded.bind(shared)


def forget_table_lists() -> None:
    """After a commit: every page asks the catalog for the tables' metadata files again."""
    _table_rows.clear()
    _table_names.clear()
    _metadata_location.clear()


# --- files, manifests ------------------------------------------------------------------


@st.cache_resource(max_entries=32, show_spinner=False)
def _manifest_list(location: str, snapshot_id: int, _table: Table) -> list[ManifestFile]:
    snapshot = _table.metadata.snapshot_by_id(snapshot_id)
    return _table.manifests(snapshot) if snapshot is not None else []


def manifest_list(table: Table, snapshot: Snapshot | None) -> list[ManifestFile]:
    """The snapshot's manifest list (none for an empty table); shared, never to be changed."""
    if snapshot is None:
        return []
    return _manifest_list(table.metadata_location, snapshot.snapshot_id, table)


LiveKey = tuple[str, int]
"""``(metadata location, snapshot id)``: what a snapshot's live files depend on."""

_LIVE_FILES: SharedCache[LiveKey, pa.Table] = SharedCache(LIVE_FILES_ENTRIES)
"""Every session's live files of a snapshot: a million files are ~180 MiB of columns, which
``st.cache_data`` would copy (pickle) on every hit; made outside ``st.cache_resource`` so the
progress bar the first session draws is never replayed into later runs."""


def shared_with_progress(cache: SharedCache[K, V], key: K, make: Callable[[], V], text: str) -> V:
    """``cache``'s entry for ``key``; made under a progress bar (``text`` first) if missing.

    A shared answer draws nothing; making one shows what is read and how far it is
    (:func:`progress_bar`).
    """
    if key in cache:
        return cache.get_or_make(key, make)
    with progress_bar(text):
        return cache.get_or_make(key, make)


def live_files(table: Table, snapshot: Snapshot) -> pa.Table:
    """Every live file of the snapshot, shared by every session (never to be changed).

    Draws nothing: when the manifests must be read, the caller's progress listener hears it.
    """
    return _LIVE_FILES.get_or_make(*_live_entry(table, snapshot))


def files_of(table: Table, snapshot: Snapshot | None) -> pa.Table:
    """Every live file of the snapshot (shared, never to be changed).

    When the manifests must be read, a progress bar says what is read and how far it is
    (:mod:`icecore.progress`: "Reading manifests: 812 of 2,000"); a shared answer draws
    nothing.
    """
    if snapshot is None:
        return snapshot_files(table, None)
    key, make = _live_entry(table, snapshot)
    return shared_with_progress(_LIVE_FILES, key, make, "Reading the snapshot's manifests…")


def _live_entry(table: Table, snapshot: Snapshot) -> tuple[LiveKey, Callable[[], pa.Table]]:
    """The live files' key in :data:`_LIVE_FILES` and how to make them."""
    return (table.metadata_location, snapshot.snapshot_id), partial(snapshot_files, table, snapshot)


def layout(table: Table, snapshot: Snapshot | None) -> tuple[list[ManifestFile], pa.Table]:
    """The snapshot's manifest list and its live files (read with a progress bar)."""
    return manifest_list(table, snapshot), files_of(table, snapshot)


@st.cache_data(max_entries=64, show_spinner=False)
def tree(location: str, snapshot_id: int, budget: int, size_by: str, _table: Table) -> MetadataTree:
    """The metadata tree of one snapshot within ``budget`` nodes (a few thousand nodes)."""
    snapshot = _table.metadata.snapshot_by_id(snapshot_id)
    assert snapshot is not None  # the page passes a snapshot of this table
    manifests, files = _live(_table, snapshot)
    return metadata_tree(snapshot, manifests, files, budget=budget, size_by=size_by)


# --- scans -----------------------------------------------------------------------------


def filter_examples(location: str, snapshot_id: int | None, table: Table) -> list[str]:
    """Filters that fit the table, with values from one of its data files.

    Only columns this session may read are used: a masked column's bounds are its values
    (and a filter on it would be refused). Without the reader role the examples carry no
    value at all: a data file's bounds are its smallest and largest row values, and a viewer
    sees no row value anywhere (DESIGN.md "Identity, roles and audit").
    """
    if not reads_rows(table):
        snapshot_id = None  # describe.filter_examples then gives the examples without values
    return _filter_examples(location, snapshot_id, access_key(table), table)


@st.cache_data(max_entries=64, show_spinner=False)
def _filter_examples(
    location: str, snapshot_id: int | None, rights: AccessKey, _table: Table
) -> list[str]:
    snapshot = _table.metadata.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
    schema = row_access.readable_schema(_table.read_schema(snapshot), access_of(_table))
    return describe.filter_examples(_table, snapshot, schema)


PROGRESS_EVERY_S = 0.1
"""The shortest time between two redraws of a progress bar (each redraw is a message)."""


@contextmanager
def progress_bar(text: str) -> Iterator[None]:
    """Show the long reads made inside the block (:mod:`icecore.progress`) as a progress bar.

    A cold plan of a million files reads thousands of manifests for seconds: the bar says
    what is read and how far it is ("Reading manifests: 812 of 2,000") where a spinner
    would look like a hang. ``text`` is shown until the first report; the bar goes away
    when the block ends. Call it only around work that is not cached yet (a cached answer
    needs no bar), and never inside an ``st.cache_*`` function: Streamlit would record the
    bar's updates and replay them on every later hit.
    """
    slot = st.empty()
    slot.progress(0.0, text=text)
    last = 0.0

    def listener(what: str, done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done < total and now - last < PROGRESS_EVERY_S:
            return
        last = now
        fraction = min(done / total, 1.0) if total else 1.0
        slot.progress(fraction, text=f"{what}: {done:,} of {total:,}")

    try:
        with reporting(listener):
            yield
    finally:
        slot.empty()


AccessKey = tuple[int, tuple[str, ...]]
"""``(role, sorted mask)``: what a cached row result depends on besides the table."""

PlanKey = tuple[str, PointKey, str | None]
"""``(metadata location, point, filter)``: what a plan depends on (all immutable)."""

PLAN_ENTRIES = 8
"""Plans kept at once. A plan holds the decoded manifests' columns it was made from (about
200 MiB at a million files, shared by every plan of the same snapshot), so few are kept."""

_PLANS: SharedCache[PlanKey, Plan] = SharedCache(PLAN_ENTRIES)
_PLAN_VIEWS: SharedCache[tuple[PlanKey, AccessKey], PlanView] = SharedCache(32)


def planned(location: str, point: Resolved, filter: str | None, table: Table) -> Plan:
    """The plan of a filtered scan, made once per (table version, point, filter).

    The report, the preview rows, the row count and SQL's ``rows`` all read this one plan.
    A plan is immutable and holds arrays, not a task per file, so it is shared like a table.
    While a cold plan reads its manifests, a progress bar says how far it is.
    """
    return _plan_of(location, point, filter, table, show_progress=True)


def _plan_of(
    location: str,
    point: Resolved,
    filter: str | None,
    table: Table,
    *,
    show_progress: bool = False,
) -> Plan:
    """The kept plan; ``show_progress`` draws a bar when it is made (never inside a cache).

    A plan is shared by every session, so it is handed out read as this session's
    principal may read it (:meth:`icecore.scan.planner.Plan.with_access`: the reader role
    for rows, masks, a filter on a masked column refused), whoever made it.
    """

    def make() -> Plan:
        scan = table.scan(filter=filter, at=point)
        if not show_progress:
            return scan.plan()
        with progress_bar("Planning the scan…"):
            return scan.plan()

    found = _PLANS.get_or_make((location, point.key, filter), make)
    return found.with_access(access_of(table), str(table.identifier))


def plan(location: str, point: Resolved, filter: str | None, table: Table) -> PlanView:
    """Plan a filtered scan and keep what the page shows (counts, first items).

    The view is made once per (table version, point, filter) and is the same object for
    every session that asks again: a visit reads no manifest and pickles nothing.
    """
    key: PlanKey = (location, point.key, filter)
    metadata = table.metadata
    found = planned(location, point, filter, table)  # refuses a filter on a masked column
    hidden = masked_partition_fields(metadata.partition_specs, point.schema, found.access)

    def label(spec: PartitionSpec, values: Mapping[int, Any]) -> str:
        shown = {k: (None if k in hidden else v) for k, v in values.items()}
        return partition_label(metadata, spec, shown)

    def make() -> PlanView:
        return plan_view(found, label)

    return _PLAN_VIEWS.get_or_make((key, access_key(table)), make)


def forget_plans() -> None:
    """Drop every kept plan, plan view and diff (tests; memory is bounded without it)."""
    _PLANS.clear()
    _PLAN_VIEWS.clear()
    _DIFFS.clear()
    _CHANGELOGS.clear()


def preview(
    location: str,
    point: Resolved,
    filter: str | None,
    columns: tuple[str, ...] | None,
    limit: int,
    table: Table,
) -> pa.Table:
    """The first ``limit`` rows of the scan (deletes and filter applied).

    Kept per principal's access as well (:func:`access_key`): a reader's rows are never
    handed to a viewer or a masked reader from the cache.
    """
    return _preview(location, point, filter, columns, limit, access_key(table), table)


@st.cache_data(max_entries=32, show_spinner="Reading the first rows…", hash_funcs=BY_POINT)
def _preview(
    location: str,
    point: Resolved,
    filter: str | None,
    columns: tuple[str, ...] | None,
    limit: int,
    rights: AccessKey,
    _table: Table,
) -> pa.Table:
    found = _plan_of(location, point, filter, _table)
    return found.to_arrow(columns=list(columns) if columns is not None else None, limit=limit)


def matching_rows(location: str, point: Resolved, filter: str | None, table: Table) -> RowCount:
    """How many rows the scan returns, deletes and filter applied (the plan's count).

    Read only where metadata cannot decide it (:mod:`icecore.scan.count`); the count says
    how many files were counted from manifests, from delete files, and read.

    Without a filter a viewer may have it (positions, not values); with one it needs the
    reader role (:mod:`icecore.row_access`).
    """
    return _matching_rows(location, point, filter, access_key(table), table)


@st.cache_data(max_entries=32, show_spinner="Counting the rows…", hash_funcs=BY_POINT)
def _matching_rows(
    location: str, point: Resolved, filter: str | None, rights: AccessKey, _table: Table
) -> RowCount:
    return _plan_of(location, point, filter, _table).count()


@st.cache_data(max_entries=32, show_spinner="Reading data files with deletes applied…")
def live_rows(location: str, snapshot_id: int, _table: Table) -> int:
    """Rows a reader sees at the snapshot, deletes applied (reads every data file).

    The read is :func:`icecore.row_counts.read_live_rows`'s, shared with History's and Time
    travel's live rows of the same snapshot.
    """
    snapshot = _table.metadata.snapshot_by_id(snapshot_id)
    assert snapshot is not None  # the page passes a snapshot of this table
    return row_counts.read_live_rows(_table, snapshot)


# --- diff and SQL ----------------------------------------------------------------------


DiffKey = tuple[str, str | None, str | None]
"""``(metadata location, from point, to point)``: what a diff depends on."""

_DIFFS: SharedCache[tuple[DiffKey, AccessKey], DiffView] = SharedCache(32)


def diff(location: str, before: str | None, after: str | None, table: Table) -> DiffView:
    """What changed between two points of the table (progress shown while it is read).

    Kept once per (table version, points) and shared by every session, like the plans.
    A point named by a time or a branch names another snapshot after a commit, but a commit
    gives the table a new metadata location, so the key changes with it.
    """

    def make() -> DiffView:
        with progress_bar("Comparing the two points' manifests…"):
            result: SnapshotDiff = table.diff(before, after)
        return diff_view(result)

    # Per access too: partition values of a masked source column are labelled masked.
    return _DIFFS.get_or_make(((location, before, after), access_key(table)), make)


# --- rows as a reader sees them (icecore.row_counts) --------------------------------------

RowsKey = tuple[str, int | None, int]
"""``(metadata location, from snapshot id, to snapshot id)``."""

_ROWS_BETWEEN: SharedCache[RowsKey, row_counts.RowsBetween] = SharedCache(32)
_SNAPSHOT_ROWS: SharedCache[tuple[str, tuple[int, ...]], list[row_counts.SnapshotRows]] = (
    SharedCache(32)
)


def rows_between(table: Table, diff: DiffView) -> row_counts.RowsBetween:
    """Live rows at a diff's two points and the rows added and removed between them.

    Reads the data files of a point with live delete files (once per snapshot and process,
    :mod:`icecore.row_counts`), under a progress bar; shared by every session.
    """
    metadata = table.metadata
    before = (
        metadata.snapshot_by_id(diff.from_snapshot_id)
        if diff.from_snapshot_id is not None
        else None
    )
    after = metadata.snapshot_by_id(diff.to_snapshot_id)
    assert after is not None  # the diff was made from this table's metadata

    def make() -> row_counts.RowsBetween:
        return row_counts.rows_between(table, before, after, diff.counts["records added"])

    key = (table.metadata_location, diff.from_snapshot_id, diff.to_snapshot_id)
    return shared_with_progress(_ROWS_BETWEEN, key, make, "Counting live rows at both points…")


def rows_reading_needed(table: Table, snapshot_ids: tuple[int, ...]) -> tuple[int, int | None]:
    """Snapshots :func:`snapshot_rows` would still read, and their data bytes (None: unknown)."""
    snapshots = [s for i in snapshot_ids if (s := table.metadata.snapshot_by_id(i)) is not None]
    return row_counts.reading_needed(table, snapshots)


def snapshot_rows(
    table: Table, snapshot_ids: tuple[int, ...], read: bool
) -> list[row_counts.SnapshotRows]:
    """Row numbers of the snapshots (:func:`icecore.row_counts.snapshot_rows`).

    Without ``read`` only metadata is used (instant for any number of snapshots); with it
    the counts that need reading are read under a progress bar and shared by every session.
    """
    snapshots = [s for i in snapshot_ids if (s := table.metadata.snapshot_by_id(i)) is not None]
    if not read:
        return row_counts.snapshot_rows(table, snapshots, read=False)

    def make() -> list[row_counts.SnapshotRows]:
        return row_counts.snapshot_rows(table, snapshots)

    key = (table.metadata_location, snapshot_ids)
    return shared_with_progress(_SNAPSHOT_ROWS, key, make, "Counting live rows…")


CHANGELOG_ENTRIES = 2
"""Row changelogs kept at once (each holds every changed row of its range)."""

_CHANGELOGS: SharedCache[tuple[DiffKey, AccessKey], pa.Table] = SharedCache(CHANGELOG_ENTRIES)


def changelog(location: str, before: str | None, after: str | None, table: Table) -> pa.Table:
    """The changed rows between two points (:func:`icecore.changelog.changelog`).

    ``before`` is exclusive and must be an ancestor of ``after``, as Spark's
    ``create_changelog_view`` has it. Kept once per (table version, points, access), like
    diffs: changed rows need the reader role and leave out masked columns.
    """
    require_rows(access_of(table), str(table.identifier))

    def make() -> pa.Table:
        with st.spinner("Reading the changed data files…"):
            return table.changelog(before, after)

    return _CHANGELOGS.get_or_make(((location, before, after), access_key(table)), make)


def sql(location: str, point: Resolved, filter: str | None, text: str, table: Table) -> pa.Table:
    """User SQL over the metadata tables and the scan's rows (locked down DuckDB).

    ``rows`` reads the kept plan of the same scan (the one Scan preview shows): made with a
    progress bar when cold, before the cached query runs (a bar drawn inside a cached
    function would be replayed on every hit), and only when the SQL may name ``rows``.
    """
    if re.search(rf"\b{ROWS_TABLE}\b", text, re.IGNORECASE):
        planned(location, point, filter, table)
    return _sql(location, point, filter, text, access_key(table), table)


@st.cache_data(max_entries=16, show_spinner="Running the query…", hash_funcs=BY_POINT)
def _sql(
    location: str,
    point: Resolved,
    filter: str | None,
    text: str,
    rights: AccessKey,
    _table: Table,
) -> pa.Table:
    def plan() -> Plan:
        return _plan_of(location, point, filter, _table)

    return run_sql(_table, text, filter=filter, plan=plan, at=point)


# --- evolution -------------------------------------------------------------------------


@st.cache_data(max_entries=32, show_spinner="Checking the change…")
def evolution_dry_run(location: str, changes: tuple[Change, ...], _table: Table) -> DryRun:
    """The dry run of ``changes`` against the table at ``location`` (errors are not cached)."""
    return dry_run(_table, changes)


MAINTENANCE_ENTRIES = 16
_RECOMMENDATIONS: SharedCache[str, list[maintenance.Recommendation]] = SharedCache(
    MAINTENANCE_ENTRIES
)
"""Recommendations per table version, for every session. Not ``st.cache_data``: expiry reads
every snapshot's manifest list (35 s at 10,000 snapshots) with a progress bar, which a cached
function would record and replay."""
EstimateKey = tuple[str, maintenance.Job, int | None, int | None]
_ESTIMATES: SharedCache[EstimateKey, maintenance.Recommendation] = SharedCache(
    2 * MAINTENANCE_ENTRIES
)


def recommendations(location: str, table: Table) -> list[maintenance.Recommendation]:
    """Every maintenance recommendation for the table's current version (``location``).

    Made under a progress bar (live files, then the history's manifest lists), a shared
    answer reads nothing. Orphan candidates need a listing of the table location, which
    changes without a commit: they are judged when this version is first shown (a new
    commit gives a new key).
    """
    snapshot = table.metadata.current_snapshot()

    def make() -> list[maintenance.Recommendation]:
        manifests, files = _live(table, snapshot)
        return maintenance.recommendations(table, manifests, files)

    return shared_with_progress(
        _RECOMMENDATIONS, location, make, "Estimating maintenance from metadata…"
    )


def maintenance_estimate(
    location: str,
    job: maintenance.Job,
    older_than_ms: int | None,
    retain_last: int | None,
    table: Table,
) -> maintenance.Recommendation:
    """The dry-run estimate of one job with the options the user chose (shared, with progress)."""

    def make() -> maintenance.Recommendation:
        manifests, files = _live(table, table.metadata.current_snapshot())
        return maintenance.recommendation(
            table,
            job,
            manifests,
            files,
            _now_ms(),
            older_than_ms=older_than_ms,
            retain_last=retain_last,
        )

    key = (location, job, older_than_ms, retain_last)
    return shared_with_progress(_ESTIMATES, key, make, "Estimating the job from metadata…")


def _live(table: Table, snapshot: Snapshot | None) -> tuple[list[ManifestFile], pa.Table]:
    """Manifests and live files, shared with every page (for use inside cached functions)."""
    if snapshot is None:
        return [], snapshot_files(table, None)
    return manifest_list(table, snapshot), live_files(table, snapshot)


def _now_ms() -> int:
    return int(time.time() * 1000)


@st.cache_data(max_entries=16, show_spinner="Comparing before and after…")
def comparison(
    before: str, after: str, sample_filter: str | None, _before: Table, _after: Table
) -> list[dict[str, Any]]:
    """Files, bytes, delete files, manifests and a sample filter's planning time, both sides."""
    rows: dict[str, dict[str, Any]] = {}
    for side, table in (("before", _before), ("after", _after)):
        snapshot = table.metadata.current_snapshot()
        manifests, files = _live(table, snapshot)
        t = health.totals(snapshot, manifests, files)
        measures: dict[str, Any] = {
            "snapshot": str(t.snapshot_id or ""),
            "snapshots": len(table.metadata.snapshots),
            "data files": t.data_files,
            "data bytes": health.format_bytes(t.data_bytes),
            "delete files": t.delete_files,
            "manifests": t.data_manifests + t.delete_manifests,
        }
        if sample_filter is not None and snapshot is not None:
            started = time.perf_counter()
            plan = table.scan(filter=sample_filter, at=At(snapshot_id=snapshot.snapshot_id)).plan()
            measures[f"planning `{sample_filter}` (ms)"] = round(
                (time.perf_counter() - started) * 1000, 1
            )
            measures["files planned"] = len(plan.tasks)
        for measure, value in measures.items():
            rows.setdefault(measure, {"measure": measure})[side] = str(value)
    return list(rows.values())


# --- History at scale (s8-history) -----------------------------------------------------


@st.cache_resource(max_entries=16, show_spinner="Laying out the snapshots on their lanes…")
def timeline_of(location: str, _table: Table) -> Timeline:
    """The table's timeline, once per metadata file (immutable, and a Timeline is frozen).

    A resource, not data: 10,000 points would otherwise be unpickled on every run.
    """
    return timeline(_table.metadata)


# --- Metadata events and the state at a snapshot (s10-events) ------------------------------

_EVENTS: SharedCache[str, tuple[MetadataEvent, ...]] = SharedCache(16)
"""Every session's metadata events of a table version, by its metadata location."""

StateKey = tuple[str, PointKey]
"""``(metadata location, point)``: what the state at a point depends on."""

_STATES: SharedCache[StateKey, SnapshotState] = SharedCache(64)


_LATEST: SharedCache[str, tuple[MetadataEvent, ...]] = SharedCache(64)

AUTO_EVENTS_SNAPSHOTS = 2_000
"""Above this many snapshots a metadata file is megabytes (10,000 snapshots: 4.4 MB, ~4 s
to parse on a busy machine), so History reads the whole log only when asked."""


def events_ready(table: Table) -> bool:
    """Whether the table's events can be shown at once: known already, or the files small."""
    return (
        table.metadata_location in _EVENTS or len(table.metadata.snapshots) <= AUTO_EVENTS_SNAPSHOTS
    )


def latest_events(table: Table) -> tuple[MetadataEvent, ...]:
    """What the table's latest commit changed when it added no snapshot (else nothing).

    Reads one earlier metadata file at most (the one before the current), so History can
    show an Evolution or ref commit at once, whatever the length of the log.
    """
    if not adds_no_snapshot(table.metadata):
        return ()
    location = table.metadata_location

    def make() -> tuple[MetadataEvent, ...]:
        found = metadata_events(table, max_files=1)
        return tuple(e for e in found if e.metadata_file == location)

    return shared_with_progress(_LATEST, location, make, "Reading the previous metadata file…")


def events_of(table: Table) -> tuple[MetadataEvent, ...]:
    """The table's metadata events, oldest first (old metadata files read under a bar)."""
    return shared_with_progress(
        _EVENTS,
        table.metadata_location,
        lambda: tuple(metadata_events(table)),
        "Reading earlier metadata files…",
    )


def state_of(table: Table, point: Resolved) -> SnapshotState:
    """The schema, spec and sort order at the selected point (:func:`state_at`), shared."""
    if point.reads_branch:
        return state_at(table, point)  # reads no file
    key = (table.metadata_location, point.key)
    return shared_with_progress(
        _STATES,
        key,
        lambda: state_at(table, point),
        "Finding the metadata file of that snapshot…",
    )


# --- maintenance jobs (s10-jobs) -------------------------------------------------------


@st.cache_data(ttl=30, max_entries=16, show_spinner="Listing the files the job left…")
def job_leftovers(location: str, job_id: str, since_ms: int, _table: Table) -> maintenance.Orphans:
    """Files under the table's location that no metadata reaches, split at ``since_ms``.

    ``young`` holds those written at or after ``since_ms`` (a job's start): what a cancelled
    or failed job left. The listing changes without a commit (another writer), hence the
    short ``ttl``; ``job_id`` keys it per job.
    """
    return maintenance.orphan_files(_table, since_ms)


# --- rows as this session's principal may read them (icecore.row_access) -----------------


def access_key(table: Table) -> AccessKey:
    """This session's access to ``table`` as a cache key (role and masked columns)."""
    access = access_of(table)
    return (int(access.role), tuple(sorted(access.mask)))


def reads_rows(table: Table) -> bool:
    """Whether this session may see row values of ``table`` (the reader role)."""
    return access_of(table).allows(Role.READER)


def mask_of(table: Table) -> tuple[str, ...]:
    """The column names this session's grant masks on ``table`` (for "Run on Spark")."""
    return tuple(sorted(access_of(table).mask))


def masked_columns(table: Table, point: Resolved) -> list[str]:
    """The columns of the scan's schema this session may not see (empty: none)."""
    return row_access.masked_columns(point.schema, access_of(table))


def readable_columns(table: Table, point: Resolved) -> list[str]:
    """The top-level columns of the scan's schema this session may read."""
    return [f.name for f in row_access.readable_schema(point.schema, access_of(table)).fields]


def rows_caption(table: Table, point: Resolved) -> str | None:
    """One sentence for a page that shows rows: why there are none, or which are masked.

    None when this session reads every column (no caption needed).
    """
    access = access_of(table)
    if not access.allows(Role.READER):
        held = "no grant" if access.role is Role.NONE else f"the {access.role.label} role"
        return (
            f"Rows need the reader role: you have {held} on {table.identifier}, so this page "
            "shows the plan and the numbers but no row value."
        )
    hidden = masked_columns(table, point)
    if hidden:
        return (
            "Masked for you (your grant hides them; they are never read): "
            + ", ".join(hidden)
            + "."
        )
    return None
