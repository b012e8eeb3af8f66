"""The two peer failures issue 5 names, reproduced with PyIceberg 0.12 and refused by Icecore.

1. ABA: a writer holding a stale table adds a column after another writer (Spark) added and
   dropped one. The current schema id is back where it was, so a writer that only asserts
   ``current-schema-id`` goes ahead: PyIceberg leaves two schemas with id 1 and gives the new
   column the dropped column's field id 3; Spark can no longer load the table. Icecore also
   asserts ``last-column-id`` and refuses with CommitConflict, writing nothing.
2. A decimal scale change (decimal(12,2) to decimal(12,3)): PyIceberg commits it and Spark
   reads 1.25 as 0.125; Icecore refuses it (the spec fixes a decimal's scale).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from icecore.errors import CommitConflict, ValidationError
from icecore.metadata.requirements import AssertCurrentSchemaId, violations

from .conftest import EvoCatalogs
from .hand_table import tree_state

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def pyiceberg_catalog(evo: EvoCatalogs) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(evo.sql, uri=evo.sql_uri, warehouse=str(evo.warehouse))


def add_and_drop_with_spark(evo: EvoCatalogs, full: str) -> None:
    evo.spark.sql(f"ALTER TABLE {full} ADD COLUMN c string")
    evo.spark.sql(f"ALTER TABLE {full} DROP COLUMN c")


def test_aba_stale_add_corrupts_pyiceberg_tables(evo: EvoCatalogs) -> None:
    from pyiceberg.types import StringType

    full = evo.spark_name("sql", "aba_pyiceberg")
    evo.create("sql", "aba_pyiceberg", "(id bigint, data string) USING iceberg", "(1, 'a')")
    stale = pyiceberg_catalog(evo).load_table("db.aba_pyiceberg")
    add_and_drop_with_spark(evo, full)
    with stale.update_schema() as update:  # PyIceberg asserts only current-schema-id
        update.add_column("x", StringType())
    written = pyiceberg_catalog(evo).load_table("db.aba_pyiceberg")
    after = written.metadata
    schemas = [(s.schema_id, [(f.field_id, f.name) for f in s.fields]) for s in after.schemas]
    assert schemas == [
        (0, [(1, "id"), (2, "data")]),
        (1, [(1, "id"), (2, "data"), (3, "c")]),
        (1, [(1, "id"), (2, "data"), (3, "x")]),  # schema id 1 twice, field id 3 reused
    ]
    # Iceberg Java (Spark's own runtime jar, in Spark's JVM) cannot read the metadata back.
    # Spark's SELECT fails on exactly this parse, but only after its catalog has retried
    # the load 20 times with backoff (~90 s), so the parser is asked directly.
    jvm = evo.spark.sparkContext._jvm  # type: ignore[attr-defined]
    text = Path(written.metadata_location.removeprefix("file:")).read_text()
    with pytest.raises(Exception, match="Multiple entries with same key: 1"):
        jvm.org.apache.iceberg.TableMetadataParser.fromJson(written.metadata_location, text)


def test_aba_stale_add_is_a_conflict_for_icecore(evo: EvoCatalogs) -> None:
    full = evo.spark_name("sql", "aba_icecore")
    stale = evo.create("sql", "aba_icecore", "(id bigint, data string) USING iceberg", "(1, 'a')")
    add_and_drop_with_spark(evo, full)
    fresh = stale.refresh()
    assert (fresh.metadata.current_schema_id, fresh.metadata.last_column_id) == (0, 3)
    # The naive requirement holds in the ABA state: it cannot see the lost field id.
    assert violations([AssertCurrentSchemaId(0)], fresh.metadata, lambda: frozenset()) == []
    folder = evo.warehouse / "db" / "aba_icecore"
    before = tree_state(folder)
    with pytest.raises(CommitConflict, match="column ids up to 3 were assigned") as caught:
        stale.update_schema().add_column("x", "string").commit()
    assert "last was 2" in str(caught.value)
    assert tree_state(folder) == before, "a refused commit writes nothing"
    # On the fresh table the column gets a new id and a new schema id.
    committed = fresh.update_schema().add_column("x", "string").commit()
    assert committed is not None
    schema = committed.metadata.current_schema()
    assert (schema.schema_id, schema.find_id_by_name("x")) == (2, 4)
    evo.spark.sql(f"INSERT INTO {full} VALUES (2, 'b', 'y')")
    rows = {tuple(r) for r in evo.spark.sql(f"SELECT * FROM {full}").collect()}
    assert rows == {(1, "a", None), (2, "b", "y")}


def test_decimal_scale_change_pyiceberg_commits_icecore_refuses(evo: EvoCatalogs) -> None:
    from pyiceberg.types import DecimalType

    ddl = "(id bigint, amount decimal(12,2)) USING iceberg"
    peer_full = evo.spark_name("sql", "scale_pyiceberg")
    evo.create("sql", "scale_pyiceberg", ddl, "(1, 1.25)")
    with pyiceberg_catalog(evo).load_table("db.scale_pyiceberg").update_schema() as update:
        update.update_column("amount", DecimalType(12, 3))
    wrong = evo.spark.sql(f"SELECT amount FROM {peer_full}").collect()
    assert [r.amount for r in wrong] == [Decimal("0.125")], "the peer's bug: 1.25 reads as 0.125"

    ours_full = evo.spark_name("sql", "scale_icecore")
    table = evo.create("sql", "scale_icecore", ddl, "(1, 1.25)")
    folder = evo.warehouse / "db" / "scale_icecore"
    before = tree_state(folder)
    with pytest.raises(ValidationError, match="scale is fixed"):
        table.update_schema().update_column("amount", "decimal(12,3)").commit()
    assert tree_state(folder) == before
    right = evo.spark.sql(f"SELECT amount FROM {ours_full}").collect()
    assert [r.amount for r in right] == [Decimal("1.25")]
