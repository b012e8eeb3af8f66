"""NULL and NaN under negation, against Spark SQL (rows) and Iceberg Java (planned files).

Icecore issue 16: every negation shape (``NOT (c = v)``, ``!=``, ``NOT IN`` with and without
NULL, ``NOT BETWEEN``, ``NOT LIKE``, ``NOT b``, negations inside AND/OR, De Morgan) and every
NaN comparison Spark accepts, on Spark-written tables whose files hold NULLs in some files
and only NULLs in others (:mod:`tests.icecore.scan.null_tables`), at the current snapshot,
an old snapshot (tag) and a branch. For each:

* rows equal what Spark on Iceberg returns, which equals what Spark SQL means (the filter
  evaluated by Spark itself on the table's rows, nothing pushed down) except for the NaN and
  -0.0 shapes in :data:`JAVA_ORDER_PRUNED`; where Spark on Iceberg returns rows that the
  meaning excludes (:data:`SPARK_ICEBERG_DISAGREE`), Icecore's rows equal the meaning;
* planned files equal Iceberg Java's ``planFiles()`` for the filter Spark pushes (with the
  ``isnotnull`` predicates its optimizer infers), except for the shapes in
  :data:`NARROWER_THAN_JAVA`, where Icecore plans a subset; in every case the files Spark's
  answer comes from (``_file``) are planned.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import icecore
from tests.oracle import arrow_rows, canon

from .null_tables import NullTables
from .test_planner import _pushed_filters, java_plan

pytestmark = pytest.mark.spark

NEGATIONS = [
    "NOT (s = 'x')",
    "s != 'x'",
    "s <> 'x'",
    "s NOT IN ('a', 'x')",
    "NOT (s IN ('a', 'x'))",
    "s NOT IN ('a', NULL)",
    "s IN ('a', NULL)",
    "NOT (s IN ('a', NULL))",
    "NOT (i BETWEEN 1 AND 5)",
    "i NOT BETWEEN 2 AND 7",
    "NOT (s LIKE 'p%')",
    "s NOT LIKE 'p%'",
    "NOT b",
    "b",
    "NOT (b = false)",
    "b = false",
    "b != true",
    "NOT (s IS NULL)",
    "NOT (s IS NOT NULL)",
    "NOT (s = 'x' AND i = 5)",
    "NOT (s = 'x' OR i > 4)",
    "NOT (s = 'x') OR id = 1",
    "NOT (s = 'x') OR id = 100",
    "NOT (s = 'x') AND id > 10",
    "NOT (NOT (s = 'x'))",
    "NOT (NOT (s != 'x'))",
    "i < 5",
    "NOT (i < 5)",
    "NOT (i >= 5) OR b",
    "NOT (i <= 5 OR s = 'x')",
    "l != 50",
    "NOT (l IN (10, 20))",
    "dec != 2.00",
    "NOT (dec > 1.5)",
    "d != '2024-01-05'",
    "NOT (d < DATE '2024-02-01')",
    "ts != '2024-01-05 00:00:00'",
    "NOT (ts >= '2024-01-05')",
    "st.x != 'a'",
    "NOT (st.x = 'a')",
    "NOT (st.y IN (1, 2))",
    "st.x IS NULL",
    "st.x IS NOT NULL",
    "st.y IS NULL",
    "NOT (st.y IS NULL) AND NOT (st.x = 'pa')",
]
NANS = [
    "f = 'NaN'",
    "f != 'NaN'",
    "NOT (f = 'NaN')",
    "f = CAST('NaN' AS DOUBLE)",
    "f > 1.0",
    "f >= 0.5",
    "NOT (f > 1.0)",
    "NOT (f <= 0.5)",
    "f < 'NaN'",
    "f <= 'NaN'",
    "f > 'NaN'",
    "f >= 'NaN'",
    "NOT (f < 'NaN')",
    "f IN (1.0, 'NaN')",
    "f NOT IN (1.0, 'NaN')",
    "f = 0.0",
    "f = -0.0",
    "f != 0.0",
    "f IN (0.0, 2.5)",
    "NOT (f < 0.0)",
    "isnan(f)",
    "NOT isnan(f)",
    "f < 1.0 OR isnan(f)",
    "NOT (f = 'NaN' OR s = 'x')",
]
NULL_SAFE = [
    # issue 36 audit: <=> is never NULL
    "s <=> 'x'",
    "NOT (s <=> 'x')",
    "s <=> NULL",
    "NOT (s <=> NULL)",
    "i <=> 5 OR f <=> 'NaN'",
    "NOT (f <=> 'NaN')",
    "st.x <=> 'a'",
    "NOT (st.y <=> 1) AND id > 10",
    "b IS TRUE",
    "b IS NOT TRUE",
    "b IS FALSE",
    "NOT (b IS FALSE) AND id > 10",
]
CROSS_TYPES = [
    "i = 1.0",
    "i < 2.5",
    "NOT (i > 2.5)",
    "l > 1e1",
    "i IN (1, 5.0)",
    "dec = 1.5",
    "dec < 2",
    "d = '2024-01-01'",
    "ts = '2024-01-01 10:00:00'",
    "ts >= '2024-01-05'",
    "NOT (ts < DATE '2024-01-05')",
    "ts > DATE '2024-01-05'",
    "d = '2024-01-01 10:00:00'",
    "d < '2024-01-05T23:00:00'",
    "d < TIMESTAMP '2024-01-05 12:00:00'",
    "NOT (d >= TIMESTAMP '2024-01-05 12:00:00')",
    "d = TIMESTAMP '2024-01-05 00:00:00'",
    "s LIKE 'Ü%'",
    "s LIKE 'pa'",
    "NOT (s LIKE 'pa')",
    "s LIKE 'p\\_%'",
    "s NOT LIKE 'p!%%' ESCAPE '!'",
    "s LIKE '%'",
]
PARTITIONED = [
    "NOT (p = 'x')",
    "p != 'x'",
    "p NOT IN ('x', 'y')",
    "p NOT IN ('x', NULL)",
    "p IN ('x', NULL)",
    "NOT (p IS NULL)",
    "p < 'y'",
    "NOT (p >= 'y')",
    "NOT (k = 2)",
    "k != 1",
    "k NOT IN (1, 2)",
    "NOT (k BETWEEN 1 AND 3)",
    "NOT (t LIKE 'ab%')",
    "t NOT LIKE 'ab%'",
    "t != 'abc'",
    "NOT (t < 'ab')",
    "NOT (ts >= '2024-01-02')",
    "ts != '2024-01-01 10:00:00'",
    "NOT (ts < '2024-01-02' AND p = 'x')",
    "NOT (p = 'x') OR v = 'v5'",
    "NOT (p = 'x' OR k = 2)",
    "NOT (v = 'v1')",
    "NOT (p BETWEEN 'a' AND 'x')",
    "p NOT LIKE 'x%'",
    "NOT (p < 'y' AND k = 2)",
    # LIKE on identity and truncate partition sources: residuals decide by partition values
    "p LIKE '_'",
    "p NOT LIKE '_'",
    "t LIKE 'a_d'",
    "t LIKE '%z'",
    "NOT (t LIKE 'a_%') OR p LIKE 'x'",
    "p <=> 'x'",
    "NOT (p <=> 'x')",
    "NOT (k <=> 2) AND p <=> NULL",
]
STRUCT_NULLS = [
    # issue 36: IS [NOT] NULL on a struct column (Spark pushes is_null(p.q) to Iceberg)
    "p IS NULL",
    "p IS NOT NULL",
    "p.q IS NULL",
    "p.q IS NOT NULL",
    "NOT (p.q IS NULL)",
    "NOT (p.q IS NOT NULL)",
    "p.q IS NULL AND id > 2",
    "p.q IS NULL OR s = 'abc'",
    "NOT (p.q IS NOT NULL OR id = 1)",
    "p.q IS NOT NULL AND p.q.xx IS NULL",
    "n IS NULL",
    "n.b IS NULL",
    "n.b IS NOT NULL AND n.b.c IS NULL",
    "p.q.z IS NULL",
    "p.q.xx = 'u' OR p IS NULL",
    "tags IS NULL",
    "tags IS NOT NULL",
    "NOT (tags IS NULL) OR n IS NULL",
]
LIKES = [
    # issue 36: LIKE with any pattern; rows are Spark's, files Java's for what Spark pushes
    "s LIKE 'ab_%'",
    "s LIKE 'ab_'",
    "s NOT LIKE 'ab_%'",
    "NOT (s LIKE 'ab_%') OR p IS NULL",
    "s LIKE '%b%'",
    "s LIKE '%\\_%'",
    "s LIKE '%!%%' ESCAPE '!'",
    "s LIKE 'a\\\\\\\\b'",
    "s LIKE 'a\\\\%%'",
    "s LIKE '_'",
    "s LIKE '__'",
    "s LIKE '😀_'",
    "s LIKE 'Ü%☃'",
    "s LIKE 'Ünï\\_%'",
    "s LIKE 'x_y'",
    "s LIKE 'ab%c'",
    "NOT (s LIKE 'ab%c')",
    "s LIKE 'ab%d' OR s LIKE '%_'",
    "s LIKE 'ab%%'",
    "s LIKE '%'",
    "s LIKE ''",
    "s NOT LIKE ''",
    "s LIKE 'AB\\_c'",
    "s LIKE '%#_' ESCAPE '#'",
    "s NOT LIKE '%_%' OR p.q IS NULL",
]
NARROWER_THAN_JAVA = {
    # Spark casts the column for these (a long column against a double literal, a date
    # column against a timestamp) and pushes only isnotnull; Java then prunes nothing by
    # them, Icecore prunes by the bound comparison.
    "l > 1e1",
    "d < TIMESTAMP '2024-01-05 12:00:00'",
    "NOT (d >= TIMESTAMP '2024-01-05 12:00:00')",
    "d = TIMESTAMP '2024-01-05 00:00:00'",
}
"""Filters for which Icecore plans a subset of Java's files (never a file Spark returns a
row from: checked on every case with ``_file``)."""

SPARK_ICEBERG_DISAGREE = {
    ("parts", "NOT (ts < '2024-01-02' AND p = 'x')"),
    ("parts_nometrics", "NOT (ts < '2024-01-02' AND p = 'x')"),
}
"""Where Spark on Iceberg returns rows that Spark SQL's own meaning excludes, and Icecore
answers the meaning. Iceberg 1.10's scan builder drops from Spark's post-scan filter the
pushed predicates that partition values decide, and decides them with Iceberg's two-valued
``not_eq`` (true on a NULL partition), so ``NOT (ts < d AND p = 'x')`` returns rows where
``p`` and ``ts`` are NULL: the very rows the issue says a negation never keeps. The test
asserts the difference, so it notices when Iceberg changes."""

JAVA_ORDER_PRUNED = {
    "f > 1.0",
    "f >= 0.5",
    "NOT (f <= 0.5)",
    "NOT (f < 0.0)",
    "f = 0.0",
    "f = -0.0",
    "f IN (0.0, 2.5)",
}
"""Where Spark on Iceberg returns fewer rows than Spark SQL's meaning gives (NaN above every
number, -0.0 = 0.0), because Iceberg Java prunes files by bounds that exclude NaN and order
-0.0 below 0.0 (a NaN-only file, or one of NaN and numbers below 1.0, cannot match
``f > 1.0`` there; a file of -0.0 alone cannot match ``f = 0.0``). Icecore prunes the same
files as Java, and in the rows it reads NaN is above numbers and -0.0 equals 0.0, as in
Spark, so its rows equal what Spark returns: in both engines the answer follows the layout."""

FILTERS = {
    "flat": NEGATIONS + NANS + CROSS_TYPES + NULL_SAFE,
    "parts": PARTITIONED,
    "parts_nometrics": PARTITIONED,
    "nest": STRUCT_NULLS + LIKES,
}
REF_SAMPLE = {
    "flat": [
        "NOT (s = 'x')",  # the all-NULL file (before the tag) against the mixed ones
        "s NOT IN ('a', NULL)",
        "NOT (i BETWEEN 1 AND 5)",
        "NOT b",
        "NOT (st.x = 'a')",
        "st.y IS NULL",
        "f != 'NaN'",  # the branch's own file mixes NaN and NULL; the tag has no NaN
        "isnan(f)",
        "f > 1.0",  # JAVA_ORDER_PRUNED
        "f = 0.0",  # JAVA_ORDER_PRUNED: -0.0 and 0.0 before the tag
        "d < TIMESTAMP '2024-01-05 12:00:00'",  # NARROWER_THAN_JAVA
        "s <=> NULL",
    ],
    "parts": [
        "NOT (p = 'x')",  # NULL partitions before the tag and on the branch
        "p NOT IN ('x', NULL)",
        "NOT (p IS NULL)",
        "NOT (k = 2)",  # bucket: the branch's k = 9
        "t NOT LIKE 'ab%'",  # truncate
        "NOT (ts < '2024-01-02' AND p = 'x')",  # SPARK_ICEBERG_DISAGREE
    ],
    "nest": [
        "p IS NULL",
        "p.q IS NOT NULL AND p.q.xx IS NULL",  # the branch's p.q with every field NULL
        "n.b IS NULL",
        "tags IS NULL",
        "s LIKE '😀_'",  # the branch's own row
        "s NOT LIKE ''",
    ],
}
REF_SAMPLE["parts_nometrics"] = REF_SAMPLE["parts"]
"""The filters also run at the tag ``old`` and on the branch ``br``.

What a ref can get wrong is which snapshot, files and schema a scan reads, not how a
filter shape is judged (the full set runs on ``main``): the sample reads each table's
files that differ between the refs (the branch's own file, the NaN files the tag predates,
NULL partitions) and holds a filter of every assertion kind (Java-order pruned, narrower
than Java, Spark on Iceberg disagreeing). Every other filter at a ref repeated main's
check for the 2 to 3 files the refs share, at about a second of Spark each."""

REFS: list[str | None] = [None, "old", "br"]
CASES = [
    pytest.param(table, ref, flt, id=f"{table}-{ref or 'main'}-{flt}")
    for table, filters in FILTERS.items()
    for ref in REFS
    for flt in (filters if ref is None else REF_SAMPLE[table])
]


def test_the_ref_sample_is_drawn_from_the_filters() -> None:
    """A sampled filter the full set lost would run on refs only (or a typo: on none)."""
    for table, sample in REF_SAMPLE.items():
        assert set(sample) <= set(FILTERS[table]), table


_MEANT: dict[tuple[str, str | None], dict[str, Counter[tuple[Any, ...]]]] = {}


def _meant(tables: NullTables, table: str, ref: str | None, flt: str) -> Counter[tuple[Any, ...]]:
    """The rows ``WHERE flt`` keeps when Spark filters the rows itself: what Spark SQL means.

    The table's rows at the ref are checkpointed (nothing can be pushed to Iceberg any
    more), and every filter the ref runs is evaluated by Spark on them in one pass, one
    boolean column per filter: ``WHERE`` keeps the rows whose condition is TRUE (not
    FALSE, not NULL), so those rows are the filter's meaning. One Spark job per table and
    ref instead of one per case (the same expression parser as ``DataFrame.where``).
    """
    key = (tables.catalog + table, ref)
    if key not in _MEANT:
        from pyspark.sql import functions as F  # noqa: N812 - PySpark's own idiom

        source = tables.spark_name(table) + (f" VERSION AS OF '{ref}'" if ref else "")
        rows = tables.spark.sql(f"SELECT * FROM {source}").localCheckpoint(eager=True)
        filters = list(dict.fromkeys(FILTERS[table] if ref is None else REF_SAMPLE[table]))
        width = len(rows.columns)
        flags = [F.expr(f).alias(f"__meant{i}") for i, f in enumerate(filters)]
        kept: dict[str, Counter[tuple[Any, ...]]] = {f: Counter() for f in filters}
        for row in rows.select("*", *flags).collect():
            values = tuple(canon(v) for v in row[:width])
            for i, f in enumerate(filters):
                if row[width + i] is True:
                    kept[f][values] += 1
        _MEANT[key] = kept
    return _MEANT[key][flt]


@pytest.mark.parametrize(("table", "ref", "flt"), CASES)
def test_rows_equal_spark_and_files_equal_java(
    null_tables: NullTables, table: str, ref: str | None, flt: str
) -> None:
    spark: Any = null_tables.spark
    name = null_tables.spark_name(table)
    source = name + (f" VERSION AS OF '{ref}'" if ref else "")
    # Spark on Iceberg's answer, each row with the file it came from (one scan for both).
    answer = spark.sql(f"SELECT *, _file AS `__file` FROM {source} WHERE {flt}")
    columns = answer.columns[:-1]
    answered = answer.collect()
    returned = Counter(tuple(canon(v) for v in row[:-1]) for row in answered)
    read = {row[-1] for row in answered}
    meant = _meant(null_tables, table, ref, flt)

    plan = icecore.load_table(null_tables.table_arg(table)).scan(filter=flt, ref=ref).plan()
    result = plan.to_arrow()
    assert result.column_names == columns
    if (table, flt) in SPARK_ICEBERG_DISAGREE:
        assert arrow_rows(result) == meant != returned
    else:
        assert arrow_rows(result) == returned
        if flt in JAVA_ORDER_PRUNED:
            assert not returned - meant
        else:
            assert returned == meant

    ours = {task.file_path: {d.file_path for d in task.delete_files} for task in plan.tasks}
    java = java_plan(spark, table, ref, flt, name=name, pushed=True)
    if (table, flt) not in SPARK_ICEBERG_DISAGREE:
        assert read <= set(ours)
    if flt in NARROWER_THAN_JAVA:
        assert set(ours) <= set(java)
        assert all(ours[path] == java[path] for path in ours)
    else:
        assert ours == java


@pytest.mark.parametrize("flt", ["s LIKE 'ab_%'", "s LIKE 'ab%c'", "s NOT LIKE 'a%b_'"])
def test_the_report_says_what_a_like_was_pruned_by(null_tables: NullTables, flt: str) -> None:
    """Issue 36: a LIKE prunes only by what Spark pushes, and the report shows which."""
    plan = icecore.load_table(null_tables.table_arg("nest")).scan(filter=flt).plan()
    pushed = _pushed_filters(null_tables.spark, null_tables.spark_name("nest"), None, flt)
    java = " ".join(str(e) for e in pushed or [])
    assert "LIKE" in plan.report.filter
    assert "not_null" in java and "s IS NOT NULL" in plan.report.pruning_filter
    assert ("startsWith" in java) == ("s LIKE 'ab'%" in plan.report.pruning_filter)
    assert "_" not in plan.report.pruning_filter.replace("NOT NULL", "")
