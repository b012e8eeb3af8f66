"""In chromium: the Overview link at a tag shows the tag's columns, not today's.

``demo.trips`` is tagged ``month_end`` before the story adds ``congestion_fee``, renames
``tip`` and drops ``store_and_fwd``. Opened from a link with ``ref=month_end``, the page the
browser renders must list the columns Spark reads at the tag, in order, and none added
later. The schema grid's cells are read from the accessible grid chromium renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.ui.test_browser import _settle, browser, server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_overview_link_at_a_tag_shows_the_tags_columns(
    spark: Any,
    demo_warehouse: Path,
    server: str,  # noqa: F811  (the fixture imported above)
    browser: Any,  # noqa: F811
) -> None:
    tag = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'"
    ).collect()[0][0]
    at_tag = spark.sql(f"SELECT * FROM icecore.demo.trips VERSION AS OF {tag}").columns
    later = set(spark.table("icecore.demo.trips").columns) - set(at_tag)
    assert later  # the story adds a column after the tag

    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    query = {"catalog": str(demo_warehouse), "table": "demo.trips", "ref": "month_end"}
    page.goto(f"{server}/Overview?{urlencode(query)}")
    _settle(page)
    page.get_by_role("heading", name="Schema", exact=True).wait_for()
    # The grid is drawn on a canvas; chromium also gets an accessible table of its cells.
    grid = page.locator("[data-testid=stDataFrame]").filter(
        has=page.locator("th[role=columnheader]", has_text="identifier")
    )
    grid.first.wait_for(state="attached")
    text = "els => els.map(e => e.textContent)"
    headers = grid.first.locator("th[role=columnheader]").evaluate_all(text)
    cells = grid.first.locator("td[role=gridcell]").evaluate_all(text)
    names = cells[:: len(headers)]
    top_level = [n for n in names if not n.startswith("\u2003")]
    assert top_level == at_tag, (headers, names)
    assert not later & set(top_level)
    alerts = " ".join(page.get_by_test_id("stAlert").all_inner_texts()).replace("\u2060", "")
    assert "ref month_end" in alerts
    page.close()
