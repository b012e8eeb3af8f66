"""In chromium: a link's values shown in the app's error box stay text, never a link or HTML.

``&ref=[Session expired - sign in](https://evil.example)`` once showed a clickable phishing
link inside the app's own red error box. The page the browser renders must show the value
literally, with no ``<a href>`` to the injected host and no injected element. Only a tiny
served warehouse is needed (no Spark).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.ui.helpers import tiny_warehouse
from tests.ui.test_browser import _settle, _streamlit, browser  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.slow]

INJECTED = [
    "[Session expired - sign in](https://evil.example)",
    "https://evil.example/login",
    "www.evil.example",
    "admin@evil.example",
    "<b id=injected>bold</b><img id=injected-img src=x>",
    ":red[alarm] :material/warning: $x^2$ ![p](https://evil.example/p.png)",
]


def test_link_values_in_errors_render_as_text(
    tmp_path: Path,
    browser: Any,  # noqa: F811  (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served = tiny_warehouse(tmp_path / "served")
    monkeypatch.setenv("ICECORE_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("ICECORE_OPEN_CATALOGS", raising=False)
    with _streamlit(str(served), "streamlit-text.log") as base:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        for value in INJECTED:
            for param in ("ref", "as_of", "table"):
                query = {"catalog": str(served), "table": "db.zones", param: value}
                page.goto(f"{base}/Overview?{urlencode(query)}")
                _settle(page)
                alert = page.get_by_test_id("stAlert").first
                alert.wait_for()
                shown = alert.inner_text().replace("\u2060", "")  # the word joiner is invisible
                assert value in shown, (param, value, shown)
                hrefs = page.locator("a[href*='evil.example']").evaluate_all(
                    "els => els.map(e => [e.outerHTML, e.closest('[data-testid]')?.dataset.testid])"
                )
                assert not hrefs, (param, value, hrefs)
                assert page.locator("img[src*='evil.example']").count() == 0, (param, value)
                assert page.get_by_test_id("stAlert").locator("a, b, img, .katex").count() == 0
                assert page.locator("#injected, #injected-img").count() == 0
        # A catalog not served is one sentence, whatever the link carried.
        page.goto(f"{base}/Overview?{urlencode({'catalog': INJECTED[0]})}")
        _settle(page)
        text = page.get_by_test_id("stAlert").first.inner_text()
        assert "This catalog is not served here" in text
        assert page.locator("a[href*='evil.example']").count() == 0


TILE_PAGES = {  # the pages that draw metric tiles
    "Overview": {},
    "Metadata_tree": {},
    "Scan_preview": {"filter": "fare > 30 AND pickup_ts >= '2024-08-05'"},
    "Time_travel": {},
}


@pytest.mark.spark
def test_no_metric_tile_is_cut_in_chromium(
    demo_warehouse: Path,
    browser: Any,  # noqa: F811  (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every metric tile of the pages shows its whole value and label (no "…" by overflow).

    The window is 1280 px wide, a laptop's; a tile is cut when any element in it is wider
    than its box.
    """
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    overflowing = """els => els.filter(
        e => [e, ...e.querySelectorAll('*')].some(x => x.scrollWidth > x.clientWidth + 1)
    ).map(e => e.innerText)"""
    with _streamlit(str(demo_warehouse), "streamlit-tiles.log") as base:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        cut: dict[str, list[str]] = {}
        seen = 0
        for name, extra in TILE_PAGES.items():
            query = {"catalog": str(demo_warehouse), "table": "demo.trips", **extra}
            page.goto(f"{base}/{name}?{urlencode(query)}")
            tiles = page.get_by_test_id("stMetric")
            tiles.first.wait_for(timeout=180_000)
            _settle(page)
            seen += tiles.count()
            found = tiles.evaluate_all(overflowing)
            if found:
                cut[name] = found
        assert seen >= 4 * len(TILE_PAGES)  # the pages were drawn with their tiles
        assert not cut
