"""Drive the app's pages with Streamlit's AppTest against the Spark-written fixture warehouse.

Pages run the way a deep link runs them: ``ui/app/Tables.py`` first (as Streamlit's main
script, so ``st.page_link`` and page switches resolve), then the page, with the link's query
parameters. Expected numbers come from Spark or from icecore's API called directly; never
from what the page printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.ui.copies import Copy, copy_sql_table
from tests.ui.helpers import OpenPage, open_app


@pytest.fixture
def open_page(demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> OpenPage:
    """Open a page of the app on the fixture warehouse (``ICECORE_CATALOG`` points at it)."""
    monkeypatch.setenv("ICECORE_CATALOG", str(demo_warehouse))
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)

    def opener(page: str | None = None, **params: str) -> AppTest:
        params.setdefault("catalog", str(demo_warehouse))
        return open_app(page, **params)

    return opener


@pytest.fixture(scope="module")
def evo(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    """Private Spark catalogs (SQL and Hadoop) on a temporary warehouse, for table copies."""
    return register_catalogs(spark, tmp_path_factory.mktemp("ui-evolution"))


@pytest.fixture
def jobs_copy(
    evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Copy:
    """A copy of the fixture's trips table, served writable, with a private jobs folder."""
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    monkeypatch.setenv("ICECORE_JOBS_DIR", str(tmp_path / "jobs"))
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    monkeypatch.setenv("ICECORE_CATALOG", copy.catalog)  # the served catalog
    return copy
