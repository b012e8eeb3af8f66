"""What maintenance's estimates read: every snapshot's manifest list, told as it goes.

Expiry at 10,000 snapshots reads 10,000 manifest lists (~35 s with their manifests), so the
reach reports "Reading manifest lists: done of total" to the progress listener, as plans
report their manifests (the app draws both as a progress bar).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import icecore
from icecore import maintenance
from icecore.progress import reporting

pytestmark = pytest.mark.spark


def test_the_reach_of_a_history_reports_each_manifest_list(demo_warehouse: Path) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    snapshots = table.metadata.snapshots
    assert len(snapshots) > 1
    maintenance._REACHED.clear()  # noqa: SLF001 - a reach already made reads nothing
    told: list[tuple[str, int, int]] = []
    with reporting(lambda what, done, total: told.append((what, done, total))):
        reached = maintenance.reach(table, snapshots)
    lists = [t for t in told if t[0] == "Reading manifest lists"]
    assert lists == [
        ("Reading manifest lists", i, len(snapshots)) for i in range(1, len(snapshots) + 1)
    ]
    assert len(reached.manifest_lists) == len(snapshots)
    told.clear()
    with reporting(lambda what, done, total: told.append((what, done, total))):
        assert maintenance.reach(table, snapshots) is reached  # kept: nothing read, nothing told
    assert told == []
