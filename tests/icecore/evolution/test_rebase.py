"""A lost swap is retried only where the change's requirements still hold.

Each test prepares a change on a table version that another writer then moves on (Spark
appends, another Icecore writer changes the spec or the schema), and commits it from the
stale version: compatible changes land on top of the other writer's, conflicting ones fail
with CommitConflict and write nothing.
"""

from __future__ import annotations

import pytest

from icecore.errors import CommitConflict

from .conftest import EvoCatalogs
from .hand_table import tree_state

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DDL = "(id bigint, ts timestamp, cat string) USING iceberg TBLPROPERTIES ('format-version' = '2')"
ROW = "(1, timestamp'2024-01-01 00:00:00', 'a')"


@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_schema_change_survives_a_spark_append_and_a_spec_change(
    evo: EvoCatalogs, kind: str
) -> None:
    name = f"rebase_schema_{kind}"
    stale = evo.create(kind, name, DDL, ROW)
    evo.spark.sql(f"INSERT INTO {evo.spark_name(kind, name)} VALUES {ROW}")
    other = evo.load(kind, name).update_spec().add_field("ts", "day").commit()
    assert other is not None
    committed = stale.update_schema().add_column("note", "string").commit()
    assert committed is not None
    md = committed.metadata
    assert [f.name for f in md.current_schema()] == ["id", "ts", "cat", "note"]
    assert [f.name for f in md.default_spec().fields] == ["ts_day"], "the spec change stays"
    assert len(md.snapshots) == 2, "Spark's append stays"
    assert md.metadata_log[-1].metadata_file == other.metadata_location


@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_spec_change_survives_a_schema_add(evo: EvoCatalogs, kind: str) -> None:
    name = f"rebase_spec_{kind}"
    stale = evo.create(kind, name, DDL, ROW)
    added = evo.load(kind, name).update_schema().add_column("note", "string").commit()
    assert added is not None
    committed = stale.update_spec().add_field("cat", "identity").commit()
    assert committed is not None
    assert [f.name for f in committed.metadata.current_schema()][-1] == "note"
    assert [f.name for f in committed.metadata.default_spec().fields] == ["cat"]
    evo.spark.sql(f"INSERT INTO {evo.spark_name(kind, name)} VALUES (2, null, 'b', 'n')")
    spec_ids = {
        r.spec_id
        for r in evo.spark.sql(f"SELECT spec_id FROM {evo.spark_name(kind, name)}.files").collect()
    }
    assert spec_ids == {0, committed.metadata.default_spec_id}


@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_conflicting_changes_fail_and_write_nothing(evo: EvoCatalogs, kind: str) -> None:
    name = f"rebase_conflict_{kind}"
    stale = evo.create(kind, name, DDL, ROW)
    evo.load(kind, name).update_schema().add_column("a", "string").commit()
    evo.load(kind, name).update_spec().add_field("ts", "month").commit()
    evo.load(kind, name).update_sort_order().asc("id").commit()
    folder = evo.warehouse / ("hadoop" if kind == "fs" else "") / "db" / name
    before = tree_state(folder)
    for change, what in [
        (lambda: stale.update_schema().add_column("b", "string").commit(), "schema"),
        (lambda: stale.update_spec().add_field("cat", "identity").commit(), "partition spec"),
        (lambda: stale.update_sort_order().desc("id").commit(), "sort order"),
    ]:
        with pytest.raises(CommitConflict, match=f"the default {what}|the current {what}"):
            change()
    assert tree_state(folder) == before
    # A property change only needs the same table: it lands on top of all three.
    assert stale.set_properties(team="x").metadata.properties["team"] == "x"
