"""Scan preview's example filters as a viewer and as a reader get them (:mod:`ui.data`).

DESIGN.md "Identity, roles and audit": a viewer sees no row value anywhere. The examples are
built from a data file's bounds (its smallest and largest values), so a viewer gets them
without values; a reader gets values the table holds (read back with icecore, unguarded).
"""

from __future__ import annotations

from pathlib import Path

from icecore.access import Grant, Policy, Principal, Role
from icecore.catalog import load_catalog
from icecore.catalog.guarded import guard
from tests.ui.rows_table import NAME, write_rows_table
from ui import data

POLICY = Policy(
    (Grant("viewers", Role.VIEWER, ("db.*",)), Grant("readers", Role.READER, ("db.*",)))
)


def _examples(warehouse: Path, group: str) -> list[str]:
    catalog = guard(
        load_catalog(str(warehouse)),
        Principal(group, groups=(group,)),
        POLICY,
        name=str(warehouse),
    )
    table = catalog.load_table(NAME)
    snapshot = table.metadata.current_snapshot_id
    return data.filter_examples(table.metadata_location, snapshot, table)


def test_a_viewers_examples_carry_no_value_a_readers_do(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    write_rows_table(warehouse, tmp_path / "peer")
    rows = load_catalog(str(warehouse)).load_table(NAME).scan().plan().to_arrow()
    values = rows["city"].to_pylist()  # strings: a digit of an id would match anything
    as_reader = _examples(warehouse, "readers")
    assert any(v in e for v in values for e in as_reader), as_reader  # the check can fail
    as_viewer = _examples(warehouse, "viewers")
    assert as_viewer, "a viewer still gets examples"
    assert not [e for e in as_viewer if any(v in e for v in values)], as_viewer
