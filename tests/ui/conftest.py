"""Drive the app's pages with Streamlit's AppTest against the Spark-written fixture warehouse.

Pages run the way a deep link runs them: ``app.py`` first (as Streamlit's main script, so
``st.page_link`` and page switches resolve), then the page, with the link's query
parameters. Expected numbers come from Spark or from icecore's API called directly; never
from what the page printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

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
