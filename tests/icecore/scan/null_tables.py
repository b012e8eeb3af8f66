"""Spark-written tables for the NULL/NaN oracle: nullable columns in every layout.

Every value below is written by Spark SQL (``INSERT ... VALUES``, one data file per insert),
so each file's metrics (null counts, NaN counts, bounds) are Iceberg Java's own. The files
are laid out so that pruning matters: one file where each nullable column is all NULL, one
mixed file, one where the float column is NaN only, one mixing NaN with small numbers (its
upper bound, which excludes NaN, is below 1.0), and signed zeros. The partitioned table has
NULL partitions under identity, bucket, truncate and day transforms; its copy without column
metrics leaves NULL partitions to partition values and residuals alone.

History: the tag ``old`` marks the snapshot after the first inserts; the branch ``br`` forks
there and gets its own file; ``main`` gets further files afterwards.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FLAT_DDL = """(
    id INT,
    s STRING,
    i INT,
    l BIGINT,
    b BOOLEAN,
    f DOUBLE,
    dec DECIMAL(9, 2),
    d DATE,
    ts TIMESTAMP,
    st STRUCT<x: STRING, y: INT>
) USING iceberg TBLPROPERTIES ('format-version' = '2', 'write.distribution-mode' = 'none')"""

# (id, s, i, l, b, f, dec, d, ts, st) per row; one INSERT (one data file) per group.
_NULL_ROW = "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
FLAT_BEFORE_OLD = [
    # every nullable column all NULL (struct itself NULL, and a struct with NULL fields)
    f"(1, {_NULL_ROW}, NULL), (2, {_NULL_ROW}, named_struct('x', NULL, 'y', NULL))",
    # mixed: values and NULLs side by side, unicode strings, signed zeros
    "(10, 'a', 1, 10, true, 1.0, 1.50, DATE '2024-01-01', TIMESTAMP '2024-01-01 10:00:00',"
    " named_struct('x', 'a', 'y', 1)),"
    "(11, 'x', 5, 50, false, CAST('-0.0' AS DOUBLE), 2.00, DATE '2024-01-05',"
    " TIMESTAMP '2024-01-05 00:00:00',"
    " named_struct('x', 'x', 'y', NULL)),"
    "(12, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, named_struct('x', NULL, 'y', 2)),"
    "(13, 'Ünïcode ☃', 7, 70, true, 0.0, 3.25, DATE '2024-02-01',"
    " TIMESTAMP '2024-02-01 12:30:00', NULL),"
    "(14, 'pa', 2, 20, false, 2.5, 0.00, DATE '2023-12-31', TIMESTAMP '2023-12-31 23:59:59',"
    " named_struct('x', 'pa', 'y', 3))",
]
FLAT_AFTER_OLD = [
    # the float column NaN only (others set)
    "(20, 'b', 3, 30, true, CAST('NaN' AS DOUBLE), 4.00, DATE '2024-03-01',"
    " TIMESTAMP '2024-03-01 00:00:00', named_struct('x', 'b', 'y', 4)),"
    "(21, 'x', 4, 40, false, CAST('NaN' AS DOUBLE), 5.00, DATE '2024-03-02',"
    " TIMESTAMP '2024-03-02 00:00:00', named_struct('x', 'x', 'y', 5))",
    # NaN beside small numbers: the upper bound (NaN excluded) is 0.5
    "(30, 'pb', NULL, 60, NULL, 0.5, NULL, NULL, NULL, named_struct('x', 'pb', 'y', NULL)),"
    "(31, NULL, 6, NULL, true, CAST('NaN' AS DOUBLE), 6.00, DATE '2024-04-01',"
    " TIMESTAMP '2024-04-01 00:00:00', named_struct('x', NULL, 'y', 6)),"
    "(32, 'c', 8, 80, false, -1.5, NULL, DATE '2024-04-02', NULL, NULL)",
    # -0.0 alone in a file (Spark reads a bare -0.0 as a decimal, which has no sign: cast)
    "(50, 'z', 0, 0, true, CAST('-0.0' AS DOUBLE), 0.00, NULL, NULL, NULL)",
]
FLAT_ON_BRANCH = [
    "(40, NULL, 9, NULL, false, NULL, 9.99, NULL, TIMESTAMP '2024-05-01 00:00:00',"
    " named_struct('x', NULL, 'y', NULL)),"
    "(41, 'a', NULL, 90, NULL, CAST('NaN' AS DOUBLE), NULL, DATE '2024-05-02', NULL,"
    " named_struct('x', 'a', 'y', 9))",
]

PART_DDL = """(
    id INT,
    p STRING,
    k INT,
    t STRING,
    ts TIMESTAMP,
    v STRING
) USING iceberg
PARTITIONED BY (p, bucket(4, k), truncate(2, t), days(ts))
TBLPROPERTIES ('format-version' = '2', 'write.distribution-mode' = 'none')"""

# (id, p, k, t, ts, v): one row per INSERT keeps one file per partition tuple.
PART_BEFORE_OLD = [
    "(1, NULL, NULL, NULL, NULL, NULL)",
    "(2, 'x', 1, 'abc', TIMESTAMP '2024-01-01 10:00:00', 'v1')",
    "(3, 'y', 2, 'abd', TIMESTAMP '2024-01-02 10:00:00', NULL), "
    "(4, 'y', 2, 'abd', TIMESTAMP '2024-01-02 11:00:00', 'v4')",
    "(5, NULL, 3, 'zz', NULL, 'v5')",
]
PART_AFTER_OLD = [
    "(6, 'x', NULL, NULL, TIMESTAMP '2024-01-01 12:00:00', 'v6')",
    "(7, 'ü', 7, 'üx', TIMESTAMP '2024-01-03 00:00:00', NULL)",
    "(8, NULL, NULL, 'ab', NULL, NULL)",
]
PART_ON_BRANCH = ["(9, NULL, 9, NULL, TIMESTAMP '2024-01-09 00:00:00', 'v9')"]


@dataclass(frozen=True)
class NullTables:
    """The private catalog holding the tables and how each engine names them."""

    spark: Any
    catalog: str
    warehouse: Path

    def spark_name(self, table: str) -> str:
        return f"{self.catalog}.db.{table}"

    def table_arg(self, table: str) -> str:
        """What icecore's ``load_table`` takes for the table (its folder)."""
        return str(self.warehouse / "db" / table)


def _write(
    spark: Any, name: str, ddl: str, before: list[str], after: list[str], branch: list[str]
) -> None:
    spark.sql(f"CREATE TABLE {name} {ddl}")
    for values in before:
        _insert(spark, name, values)
    spark.sql(f"ALTER TABLE {name} CREATE TAG old")
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH br")
    for values in branch:
        _insert(spark, f"{name}.branch_br", values)
    for values in after:
        _insert(spark, name, values)


def _insert(spark: Any, name: str, values: str) -> None:
    """One data file per call: the rows go through one task (``COALESCE(1)``)."""
    spark.sql(f"INSERT INTO {name} SELECT /*+ COALESCE(1) */ * FROM VALUES {values}")


def build_null_tables(spark: Any, warehouse: Path) -> NullTables:
    """Register a private Hadoop catalog on ``warehouse`` and write both tables with Spark."""
    catalog = f"nulls_{uuid.uuid4().hex[:8]}"
    warehouse.mkdir(parents=True, exist_ok=True)
    spark.conf.set(f"spark.sql.catalog.{catalog}", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"spark.sql.catalog.{catalog}.type", "hadoop")
    spark.conf.set(f"spark.sql.catalog.{catalog}.warehouse", str(warehouse))
    spark.conf.set(f"spark.sql.catalog.{catalog}.cache-enabled", "false")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.db")
    tables = NullTables(spark, catalog, warehouse)
    _write(
        spark, tables.spark_name("flat"), FLAT_DDL, FLAT_BEFORE_OLD, FLAT_AFTER_OLD, FLAT_ON_BRANCH
    )
    _write(
        spark, tables.spark_name("parts"), PART_DDL, PART_BEFORE_OLD, PART_AFTER_OLD, PART_ON_BRANCH
    )
    # Without column metrics, only partition values and residuals decide NULL partitions.
    bare = PART_DDL.replace("'none')", "'none', 'write.metadata.metrics.default' = 'none')")
    name = tables.spark_name("parts_nometrics")
    _write(spark, name, bare, PART_BEFORE_OLD, PART_AFTER_OLD, PART_ON_BRANCH)
    return tables
