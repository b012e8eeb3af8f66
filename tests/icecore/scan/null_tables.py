"""Spark-written tables for the NULL/NaN oracle: nullable columns in every layout.

Every value below is written by Spark SQL (``INSERT ... VALUES``, one data file per insert),
so each file's metrics (null counts, NaN counts, bounds) are Iceberg Java's own. The files
are laid out so that pruning matters: one file where each nullable column is all NULL, one
mixed file, one where the float column is NaN only, one mixing NaN with small numbers (its
upper bound, which excludes NaN, is below 1.0), and signed zeros. The partitioned table has
NULL partitions under identity, bucket, truncate and day transforms; its copy without column
metrics leaves NULL partitions to partition values and residuals alone.

The nested table (issue 36) holds structs NULL at each level (``p``, ``p.q``, a non-NULL
``p.q`` whose fields are all NULL), a field added to ``p.q`` and one renamed after the first
files, a struct and a list column added later (NULL in older files; an empty list, one
holding NULL), and strings for LIKE: unicode, a
character outside the BMP, ``_``, ``%`` and a backslash as data, a line break, mixed case.
The evolved tables (format 2, and 1 where dropped fields become void) change their
partition spec six times with files whose partition values are all NULL under several
specs (and ``'x'`` under others), for ``partitions``.

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


NEST_DDL = """(
    id INT,
    p STRUCT<q: STRUCT<x: STRING, y: INT>, r INT>,
    s STRING
) USING iceberg TBLPROPERTIES ('format-version' = '2', 'write.distribution-mode' = 'none')"""

_U, _V, _W, _ZZ = "'u'", "'v'", "'w'", "'zz'"
_Q = "named_struct('q', named_struct('x', {x}, 'y', {y}), 'r', {r})"
NEST_BEFORE_EVOLUTION = [
    # p NULL; p.q NULL; p.q set with every field NULL
    "(1, NULL, 'abc'), (2, named_struct('q', NULL, 'r', 1), 'ab_c'),"
    f" (3, {_Q.format(x='NULL', y='NULL', r='NULL')}, 'a%b')",
    # p NULL in every row of the file
    "(4, NULL, NULL), (5, NULL, 'ab')",
    f"(6, {_Q.format(x=_V, y='2', r='3')}, 'Ünï_☃'),"
    f" (7, {_Q.format(x=_W, y='NULL', r='NULL')}, "
    "'a\\\\b')",  # a backslash as data
]
NEST_EVOLUTION = [
    "ADD COLUMN p.q.z STRING",
    "RENAME COLUMN p.q.x TO xx",
    "ADD COLUMN n STRUCT<a: INT, b: STRUCT<c: INT>>",
    "ADD COLUMN tags ARRAY<STRING>",
]
_QZ = "named_struct('q', named_struct('xx', {x}, 'y', {y}, 'z', {z}), 'r', {r})"
NEST_BEFORE_OLD = [
    f"(8, {_QZ.format(x=_U, y='5', z=_ZZ, r='4')}, 'abd',"
    " named_struct('a', 1, 'b', NULL), array('a')),"
    " (9, named_struct('q', NULL, 'r', 5), '%_', NULL, NULL)",
]
NEST_AFTER_OLD = [
    "(11, NULL, 'x\\ny', named_struct('a', 2, 'b', NULL), CAST(array() AS ARRAY<STRING>)),"
    " (12, named_struct('q', NULL, 'r', NULL), 'AB_c', NULL, array(NULL))",
    f"(13, {_QZ.format(x='NULL', y='NULL', z='NULL', r='6')}, '', named_struct('a', NULL,"
    " 'b', named_struct('c', NULL)), NULL)",
]
NEST_ON_BRANCH = [
    f"(10, {_QZ.format(x='NULL', y='NULL', z='NULL', r='NULL')}, '😀x',"
    " named_struct('a', NULL, 'b', named_struct('c', 1)), array('b'))",
]

EVOLVED_DDL = """(id INT, a STRING, b INT, c STRING) USING iceberg PARTITIONED BY (a)
TBLPROPERTIES ('format-version' = '2', 'write.distribution-mode' = 'none')"""
EVOLVED_STEPS = [
    # (spec change before the inserts, the inserts): all-NULL partitions under each spec
    (None, ["(1, 'x', NULL, NULL)", "(2, NULL, NULL, NULL)", "(3, NULL, 7, 'c')"]),
    ("ADD PARTITION FIELD b", ["(4, 'x', NULL, NULL)", "(5, NULL, NULL, NULL)"]),
    ("ADD PARTITION FIELD c", ["(6, NULL, NULL, NULL)", "(7, 'x', NULL, NULL)"]),
    ("DROP PARTITION FIELD a", ["(8, 'x', NULL, NULL)", "(9, NULL, NULL, NULL)"]),
    ("DROP PARTITION FIELD c", ["(10, NULL, NULL, NULL)"]),
    ("DROP PARTITION FIELD b", ["(11, NULL, NULL, NULL)"]),
    ("ADD PARTITION FIELD bucket(2, id)", ["(12, NULL, NULL, NULL)"]),
]


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
    if ddl:
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
    name = tables.spark_name("nest")
    spark.sql(f"CREATE TABLE {name} {NEST_DDL}")
    for values in NEST_BEFORE_EVOLUTION:
        _insert(spark, name, values)
    for change in NEST_EVOLUTION:
        spark.sql(f"ALTER TABLE {name} {change}")
    _write(spark, name, "", NEST_BEFORE_OLD, NEST_AFTER_OLD, NEST_ON_BRANCH)
    for table, version in (("evolved", "2"), ("evolved_v1", "1")):
        name = tables.spark_name(table)
        ddl = EVOLVED_DDL.replace("'format-version' = '2'", f"'format-version' = '{version}'")
        spark.sql(f"CREATE TABLE {name} {ddl}")
        for step, inserts in EVOLVED_STEPS:
            if step is not None:
                spark.sql(f"ALTER TABLE {name} {step}")
            for values in inserts:
                _insert(spark, name, values)
    return tables
