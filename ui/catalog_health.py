"""The Tables page's catalog table: every visible table's health row, cached by metadata file.

:func:`icecore.catalog_health.catalog_health` makes the rows; this module keeps them for every
session of the app, keyed by metadata location (a metadata.json never changes, so a table
whose current file is the same as last time is not read again), and lays them out for
``st.dataframe``. The session's guarded catalog lists only the tables its principal may see
(DESIGN.md "Identity, roles and audit"); a kept row is only ever served for a table that
listing names. A first visit shows every table's name at once and fills the rows in as
they are read (metadata, manifest list and manifests: file sizes, every check), redrawn every
couple of seconds under a progress bar ("Reading tables: 312 of 1,000"); a second visit asks
the catalog for the current metadata files and reuses the rows that still hold
(:func:`icecore.catalog_health.holds`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from icecore.catalog_health import (
    FILES_BOUND,
    Located,
    catalog_health,
    empty_row,
    holds,
    locate,
)
from icecore.health import format_bytes
from icecore.io import MAX_METADATA_BYTES
from icecore.lru import LRU
from icecore.metadata.serde import decode_metadata_json
from icecore.metadata_bloat import bloat
from icecore.table_data import TableData
from ui import data

KNOWN_ROWS = 20_000
"""Health rows kept for every session (a row is a few KiB: tens of MiB at most)."""

_KNOWN: LRU[str, dict[str, Any]] = LRU(KNOWN_ROWS)
"""Rows (manifests read), by metadata location."""

SORTS: dict[str, tuple[str, bool]] = {
    "score (worst first)": ("score", False),
    "data size": ("data bytes", True),
    "rows": ("rows", True),
    "small-file share": ("small-file share", True),
    "delete files": ("delete files", True),
    "snapshots": ("snapshots", True),
    "manifests": ("manifests", True),
    "metadata.json size": ("metadata.json bytes", True),
    "last commit (newest first)": ("last commit", True),
    "table": ("table", False),
}
"""The page's sort choices: label -> (column, descending)."""


def located(catalog: str) -> list[Located]:
    """The tables of ``catalog`` this session may see, with their current metadata files."""
    return locate(data.session_catalog(catalog))


def loads_whole_tables(catalog: str) -> bool:
    """Whether a table's metadata file is known only by loading the table (REST).

    Its health costs one ``loadTable`` per table (the metadata, and credentials vended for
    it): the page lists such a catalog's names and reads their health when asked.
    """
    return data.session_catalog(catalog).loads_whole_tables


def listing_rows(tables: list[Located]) -> list[dict[str, Any]]:
    """Rows of names only (nothing read), for a catalog whose health was not asked for."""
    return [
        {**empty_row(str(ident), location), "error": error} for ident, location, error in tables
    ]


def all_known(tables: list[Located]) -> bool:
    """Whether every table's full row is kept and still true (a second visit: nothing to read)."""
    now = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    return all(
        loc is not None and (row := _KNOWN.get(loc)) is not None and holds(row, now)
        for _, loc, err in tables
        if not err
    )


def health_rows(
    catalog: str,
    tables: list[Located],
    *,
    partial: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """The health rows of ``tables`` (:func:`located`) of ``catalog`` (see the module doc).

    What is not kept yet is read under a progress bar; an unreadable table is a row with its
    error. ``partial``: given every table's row so far (names only for those not read yet)
    as the reading goes (:func:`~icecore.catalog_health.catalog_health`), to draw them.
    """
    guarded = data.session_catalog(catalog)

    def make() -> list[dict[str, Any]]:
        return catalog_health(
            guarded, known=_KNOWN, located=tables, files_bound=FILES_BOUND, partial=partial
        )

    if all_known(tables):
        return make()
    with data.progress_bar("Reading each table's manifests (file sizes, scores)…"):
        return make()


def forget() -> None:
    """Forget every kept row (tests; a commit makes a new metadata file anyway)."""
    _KNOWN.clear()


def _writer(commit: dict[str, Any] | None) -> str:
    if not commit:
        return ""
    writer = commit.get("writer") or {}
    name = " ".join(v for k in ("engine-name", "engine-version") if (v := writer.get(k)))
    app = writer.get("spark.app.id") or writer.get("app-id")
    return f"{name} ({app})" if name and app else name or app or ""


def page_rows(catalog: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dataframe row per health row: numbers kept as numbers (so columns sort)."""
    out: list[dict[str, Any]] = []
    for r in rows:
        commit = r.get("last_commit")
        factors = r.get("factors") or []
        out.append(
            {
                "table": r["table"],
                "open": "Overview?" + urlencode({"catalog": catalog, "table": r["table"]}),
                "score": r["score"],
                "rows": r["rows"],
                "data bytes": r["data_bytes"],
                "data size": format_bytes(r["data_bytes"]) if r["data_bytes"] is not None else "",
                "data files": r["data_files"],
                "avg file bytes": r["avg_file_bytes"],
                "small-file share": r["small_file_share"],
                "delete files": r["delete_files"],
                "deleted rows": r["delete_records"],
                "snapshots": r["snapshots"],
                "manifests": r["manifests"],
                "metadata.json bytes": r["metadata_bytes"],
                "last commit": commit["time"] if commit else None,
                "operation": commit["operation"] if commit else None,
                "writer": _writer(commit),
                "factors": "; ".join(f"{f['title']} (-{f['points']})" for f in factors),
                "estimated": ", ".join(r.get("estimated") or []),
                "error": r.get("error") or "",
                "catalog": catalog,
                "metadata location": r.get("metadata_location"),
            }
        )
    return out


def sort_rows(rows: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """``rows`` sorted by the :data:`SORTS` choice ``sort``; rows without the value go last."""
    column, descending = SORTS[sort]
    present = [r for r in rows if r.get(column) is not None]
    missing = [r for r in rows if r.get(column) is None]
    present.sort(key=lambda r: r[column], reverse=descending)
    return present + missing


def filter_rows(rows: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The rows whose table name, writer, operation or factors contain ``text`` (any case)."""
    needle = text.strip().lower()[:200]
    if not needle:
        return rows
    fields = ("table", "writer", "operation", "factors", "error")
    return [r for r in rows if any(needle in str(r.get(f) or "").lower() for f in fields)]


@st.cache_data(max_entries=32, show_spinner="Measuring the metadata…")
def metadata_bloat(location: str, _table: TableData) -> dict[str, Any]:
    """The Overview's metadata bloat section (:func:`icecore.metadata_bloat.bloat`).

    Keyed by metadata location: the file never changes. Expiry is judged when first asked.
    """
    raw = _table.io.read(location, limit=MAX_METADATA_BYTES)
    now_ms = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    return bloat(_table, decode_metadata_json(raw), len(raw), now_ms)


__all__ = [
    "SORTS",
    "Located",
    "listing_rows",
    "loads_whole_tables",
    "all_known",
    "located",
    "filter_rows",
    "forget",
    "health_rows",
    "page_rows",
    "sort_rows",
]
