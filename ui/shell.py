"""Start every page the same way: page config, the selected catalog, and error display.

Streamlit runs a deep-linked page alone (app.py is skipped), so every page calls
:func:`bootstrap` first. The selection lives in session state and in the URL query
parameters (``?catalog=...&table=...``), so any view can be shared as a link.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from icecore.errors import IcecoreError

DEFAULT_WAREHOUSE = "warehouse"
DEMO_FILESYSTEM_SUBDIR = "hadoop"
"""The demo keeps its filesystem-catalog tables in this folder of the warehouse."""


@dataclass(frozen=True, slots=True)
class PageContext:
    """What a page needs to know about the user's selection."""

    catalog: str
    read_only: bool


def default_catalog() -> str:
    """The catalog a fresh visit opens: ``ICECORE_CATALOG`` or ``./warehouse``."""
    return os.environ.get("ICECORE_CATALOG") or DEFAULT_WAREHOUSE


def companion_catalogs(catalog: str) -> list[str]:
    """Other catalogs to show beside ``catalog``: the demo's filesystem warehouse if present."""
    folder = Path(catalog)
    fs_warehouse = folder / DEMO_FILESYSTEM_SUBDIR
    if folder.is_dir() and fs_warehouse.is_dir():
        return [str(fs_warehouse)]
    return []


def read_only() -> bool:
    """Whether commit and maintenance controls are hidden (``ICECORE_READ_ONLY=1``)."""
    return os.environ.get("ICECORE_READ_ONLY", "").strip().lower() in ("1", "true", "yes")


def bootstrap(title: str) -> PageContext:
    """Configure the page and return the current selection (from the URL or the defaults)."""
    st.set_page_config(page_title=f"{title} · Icecore", page_icon="🧊", layout="wide")
    params = st.query_params
    catalog = params.get("catalog") or st.session_state.get("catalog") or default_catalog()
    st.session_state["catalog"] = catalog
    return PageContext(catalog=catalog, read_only=read_only())


def set_catalog(catalog: str) -> None:
    """Remember a newly chosen catalog in session state and in the URL."""
    st.session_state["catalog"] = catalog
    st.query_params["catalog"] = catalog


def show_error(error: IcecoreError) -> None:
    """Show an Icecore error as the one sentence it is, never a traceback."""
    st.error(str(error), icon="⚠️")
