"""Dropping a column that an older partition spec uses, checked against Spark.

While files written with that spec are live, Iceberg 1.10.2 can no longer build the table's
``partitions`` metadata table ("Cannot find source column for partition field"), so the drop
is refused unless explicitly allowed (with a warning). Once no live file uses the spec, the
drop is safe, and it stays refused if such files come back before the commit (a rollback).
"""

from __future__ import annotations

import pytest

from icecore.errors import CommitConflict, ValidationError

from .conftest import EvoCatalogs
from .hand_table import tree_state

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DDL = (
    "(id bigint, cat string) USING iceberg PARTITIONED BY (cat) "
    "TBLPROPERTIES ('format-version' = '2')"
)


def test_drop_of_a_live_older_partition_source(evo: EvoCatalogs) -> None:
    table = evo.create("sql", "live_src", DDL, "(1, 'a'), (2, 'b')")
    full = evo.spark_name("sql", "live_src")
    table = table.update_spec().remove_field("cat").add_field("id", "bucket[2]").commit()
    assert table is not None
    before = tree_state(evo.warehouse / "db" / "live_src")
    with pytest.raises(ValidationError, match="files written with that spec are still live"):
        table.update_schema().delete_column("cat").commit()
    assert tree_state(evo.warehouse / "db" / "live_src") == before
    with pytest.warns(UserWarning, match="readers of those files lose that partition value"):
        forced = table.update_schema().delete_column("cat", allow_live_partition_source=True)
        forced.commit()
    assert [tuple(r) for r in evo.spark.sql(f"SELECT id FROM {full} ORDER BY id").collect()] == [
        (1,),
        (2,),
    ]
    # What the rule protects: Spark's partitions table breaks on the live spec-0 files.
    with pytest.raises(Exception, match="Cannot find source column for partition field"):
        evo.spark.sql(f"SELECT * FROM {full}.partitions").collect()


def test_drop_once_no_file_uses_the_spec_and_not_after_a_rollback(evo: EvoCatalogs) -> None:
    table = evo.create("sql", "dead_src", DDL, "(1, 'a'), (2, 'b')")
    full = evo.spark_name("sql", "dead_src")
    table = table.update_spec().remove_field("cat").add_field("id", "bucket[2]").commit()
    assert table is not None
    with_live_files = table.metadata.current_snapshot_id
    evo.spark.sql(f"INSERT OVERWRITE {full} SELECT * FROM {full}")  # rewrites into spec 1
    table = table.refresh()
    staged = table.transaction()
    staged.update_schema().delete_column("cat").commit()
    evo.spark.sql(f"CALL {evo.sql}.system.rollback_to_snapshot('db.dead_src', {with_live_files})")
    with pytest.raises(CommitConflict, match="files written with partition spec 0 are live again"):
        staged.commit()
    evo.spark.sql(f"INSERT OVERWRITE {full} SELECT * FROM {full}")
    dropped = table.refresh().update_schema().delete_column("cat").commit()
    assert dropped is not None
    evo.spark.sql(f"INSERT INTO {full} VALUES (3)")
    assert [tuple(r) for r in evo.spark.sql(f"SELECT * FROM {full} ORDER BY id").collect()] == [
        (1,),
        (2,),
        (3,),
    ]
    partitions = evo.spark.sql(f"SELECT partition.id_bucket_2, record_count FROM {full}.partitions")
    assert sum(r.record_count for r in partitions.collect()) == 3
