"""The app resolves a link's point once and keys what it keeps by the read it names.

``ref=main`` and no time at all are one read of trips (its current snapshot with its current
schema): the Scan preview plans it once and shows the same numbers; a tag of an older
snapshot is another read, planned on its own. Overview shows the schema the point reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import icecore
from tests.ui.helpers import OpenPage, as_shown, metrics, no_problems

SCAN = "pages/4_Scan_preview.py"
OVERVIEW = "pages/1_Overview.py"

pytestmark = pytest.mark.spark


def test_two_names_of_one_read_share_one_plan(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icecore.scan.planner import TableScan

    plans: list[str] = []
    planning = TableScan.plan

    def counting(self: TableScan) -> Any:
        plans.append(str(self.point.at))
        return planning(self)

    monkeypatch.setattr(TableScan, "plan", counting)
    shared = "fare > 17.75 AND trip_id > 3"  # no other test plans it
    current = open_page(SCAN, table="demo.trips", filter=shared)
    main = open_page(SCAN, table="demo.trips", filter=shared, ref="main")
    no_problems(current)
    no_problems(main)
    assert plans == ["the current snapshot"], plans
    assert metrics(main) == metrics(current)
    tagged = open_page(SCAN, table="demo.trips", filter=shared, ref="month_end")
    no_problems(tagged)
    assert plans == ["the current snapshot", "ref month_end"], plans
    assert metrics(tagged) != metrics(current)


def test_overview_shows_the_schema_each_point_reads(
    demo_warehouse: Path, open_page: OpenPage
) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    refs = table.refs()
    tagged = table.metadata.snapshot_by_id(refs["month_end"].snapshot_id)
    assert tagged is not None and tagged.schema_id != table.metadata.current_schema_id
    for params, schema_id in [
        ({"ref": "month_end"}, tagged.schema_id),  # a tag: its snapshot's schema
        ({"snapshot": str(tagged.snapshot_id)}, tagged.schema_id),
        ({"ref": "audit"}, table.metadata.current_schema_id),  # a branch: today's
        ({}, table.metadata.current_schema_id),
    ]:
        at = open_page(OVERVIEW, table="demo.trips", **params)
        no_problems(at)
        assert metrics(at)["Schema id"] == str(schema_id), params


def test_a_bad_point_in_a_link_is_one_sentence_on_the_page(open_page: OpenPage) -> None:
    for params, sentence in [
        ({"snapshot": "-5"}, "Snapshot id -5 is negative; snapshot ids are positive."),
        ({"as_of": "soon"}, "'soon' is not an ISO-8601 time"),
        ({"ref": "nope"}, "no branch or tag named 'nope'"),
    ]:
        at = open_page(OVERVIEW, table="demo.trips", **params)
        assert not at.exception
        assert len(at.error) == 1 and sentence in as_shown(at.error[0].value), params
