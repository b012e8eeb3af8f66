"""``partitions`` (and ``files``) on tables whose spec evolved, against Spark's (issue 36).

Files whose partition values are all NULL (or ``'x'`` in one field) under specs of one, two
and three fields (:data:`tests.icecore.scan.null_tables.EVOLVED_STEPS`): Iceberg Java keeps
them apart unless their specs have as many fields, and Icecore's rows must be Spark's.
"""

from __future__ import annotations

import pytest

import icecore
from tests.icecore.test_inspect import _compare

from .null_tables import NullTables

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("table", ["evolved", "evolved_v1"])
@pytest.mark.parametrize("kind", ["partitions", "files"])
def test_metadata_tables_on_evolved_specs_equal_sparks(
    null_tables: NullTables, table: str, kind: str
) -> None:
    ours = icecore.load_table(null_tables.table_arg(table))
    assert len(ours.metadata.partition_specs) == 7
    _compare(null_tables.spark, ours, null_tables.spark_name(table), kind, None)


def test_all_null_partitions_of_specs_with_different_widths_stay_apart(
    null_tables: NullTables,
) -> None:
    """The shape of Spark's answer, stated without Icecore: several all-NULL rows."""
    rows = null_tables.spark.sql(
        f"SELECT partition FROM {null_tables.spark_name('evolved')}.partitions"
    ).collect()
    all_null = [r for r in rows if all(v is None for v in r.partition)]
    assert len(all_null) > 1
