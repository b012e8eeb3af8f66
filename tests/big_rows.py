"""A Spark-written table of 504,000 rows with position deletes, for counts past any sample.

The issue that asked for it: SQL over ``rows`` once read only the first 100,000 rows, so
``count(*)`` on a 504,000-row table said 100000. Written by Spark in a private catalog
(:func:`tests.icecore.evolution.conftest.register_catalogs`), never the shared warehouse.
"""

from __future__ import annotations

from tests.icecore.evolution.conftest import EvoCatalogs

ROWS = 504_000
"""Rows Spark writes before the delete."""


def write_big_table(catalogs: EvoCatalogs, name: str) -> str:
    """Write ``db.<name>`` (id, k, v), then delete a tenth of it by position deletes.

    Returns the Spark name of the table.
    """
    spark = catalogs.spark
    full = catalogs.spark_name("sql", name)
    (
        spark.range(ROWS)
        .selectExpr("id", "CAST(id % 7 AS INT) AS k", "concat('v', CAST(id % 1000 AS STRING)) AS v")
        .repartition(3)
        .writeTo(full)
        .tableProperty("format-version", "2")
        .tableProperty("write.delete.mode", "merge-on-read")
        .create()
    )
    spark.sql(f"DELETE FROM {full} WHERE id % 10 = 3")
    return full
