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
    page.get_by_role("heading", name="Schema").wait_for()
    grid = page.get_by_test_id("stDataFrame").filter(
        has=page.get_by_role("columnheader", name="identifier")
    )
    grid.first.wait_for()
    cells = grid.first.get_by_role("gridcell").all_inner_texts()
    headers = grid.first.get_by_role("columnheader").all_inner_texts()
    width = len(headers)
    names = [cells[i] for i in range(0, len(cells), width)]
    top_level = [n for n in names if not n.startswith("\u2003")]
    assert top_level == at_tag, (headers, names)
    assert not later & set(top_level)
    assert "ref month_end" in page.get_by_test_id("stAlert").first.inner_text()
    page.close()
