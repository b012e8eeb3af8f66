"""The planner against Iceberg Java (planned files and deletes) and Spark SQL (rows).

For each table, snapshot selector and filter: Icecore's planned data files and, per data
file, its delete files equal what ``table.newScan().filter(expr).planFiles()`` plans in
Spark's JVM (the filter converted by Iceberg's own SparkExpressionConverter); the rows
Icecore reads equal ``SELECT * FROM t WHERE filter`` in Spark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import FilterError, NotFound
from tests.oracle import arrow_rows, spark_rows

pytestmark = pytest.mark.spark

FILTERS: dict[str, list[str]] = {
    "trips": [
        "",
        "trip_id = 4000123",
        "trip_id < 2000000",
        "trip_id IN (1000005, 5000007, 7000001)",
        "pickup_ts >= '2024-08-05'",
        "pickup_ts < TIMESTAMP '2024-08-03 12:00:00'",
        "pickup_ts >= '2024-08-07 10:00:00' AND pickup_ts < '2024-08-07 11:00:00'",
        "payment_type IN ('cash', 'dispute')",
        "payment_type IS NULL",
        "fare > 50 AND vendor_id = 2",
        "pickup_zone LIKE 'Midtown%'",
        "pickup_zone NOT LIKE 'Midtown%'",
        "NOT (vendor_id = 1)",
        "tip_amount IS NOT NULL OR fare < 5",
        "passenger_count >= 4",
        "pickup_loc.lat > 40.8",
        "congestion_fee > 0",
        "vendor_id != 3 AND trip_distance <= 1.0",
    ],
    "events_v3": [
        "",
        "kind = 'purchase'",
        "amount > 100",
        "event_ts >= '2024-09-03'",
        "country = '日本' AND kind LIKE 'cl%'",
        "amount IS NULL",
    ],
    "accounts": [
        "",
        "account_id = 3000000010",
        "country = 'Italia'",
        "email IS NULL",
        "account_id >= 3000000200",
    ],
    "zones": ["", "borough = 'Queens'", "zone_id > 200"],
}
REFS: dict[str, list[str | None]] = {
    "trips": [None, "month_end", "audit"],
    "events_v3": [None],
    "accounts": [None],
    "zones": [None],
}
CASES = [
    (table, ref, flt)
    for table, filters in FILTERS.items()
    for ref in REFS[table]
    for flt in filters
]


def java_plan(
    spark: Any,
    table: str,
    ref: str | None,
    flt: str,
    *,
    name: str | None = None,
    pushed: bool = False,
) -> dict[str, set[str]]:
    """Iceberg Java's planFiles: data file path -> delete file paths.

    Args:
        spark: the session.
        table: the demo table (``icecore.demo.<table>``), unless ``name`` is given.
        ref: a branch or tag to plan, or None for the current snapshot.
        flt: the SQL filter text ("" for none).
        name: the table's full Spark name, for tables outside the demo warehouse.
        pushed: plan with the filter Spark pushes to Iceberg for ``SELECT * ... WHERE flt``
            (from the physical plan's scan, so with the ``isnotnull`` predicates Spark's
            optimizer infers), instead of the filter text converted as it is.
    """
    jvm = spark.sparkContext._jvm
    name = name or f"icecore.demo.{table}"
    java_table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, name
    )
    scan = java_table.newScan()
    if ref is not None:
        scan = scan.useRef(ref)
    if flt and pushed:
        exprs = _pushed_filters(spark, name, ref, flt)
        if exprs is None:
            return {}  # Spark's optimizer folded the filter to false: it scans nothing
        for expr in exprs:
            scan = scan.filter(expr)
    elif flt:
        converter = jvm.org.apache.spark.sql.execution.datasources.SparkExpressionConverter
        spark_expr = converter.collectResolvedSparkExpression(spark._jsparkSession, name, flt)
        scan = scan.filter(converter.convertToIcebergExpression(spark_expr))
    planned: dict[str, set[str]] = {}
    tasks = scan.planFiles()
    iterator = tasks.iterator()
    while iterator.hasNext():
        task = iterator.next()
        deletes = task.deletes()
        planned[str(task.file().location())] = {
            str(deletes.get(i).location()) for i in range(deletes.size())
        }
    tasks.close()
    return planned


def _pushed_filters(spark: Any, name: str, ref: str | None, flt: str) -> list[Any] | None:
    """The Iceberg expressions Spark pushes into the table's scan for ``WHERE flt``.

    None when the physical plan has no scan of the table (a filter folded to false).

    Read from the physical plan's ``BatchScanExec``: its scan (Iceberg's ``SparkScan``)
    keeps them in ``filterExpressions()``, which is protected, hence the reflection.
    """
    jvm = spark.sparkContext._jvm
    gateway = spark.sparkContext._gateway
    source = name + (f" VERSION AS OF '{ref}'" if ref else "")
    df = spark.sql(f"SELECT * FROM {source} WHERE {flt}")
    leaves = df._jdf.queryExecution().sparkPlan().collectLeaves()
    found: list[Any] | None = None
    for i in range(leaves.size()):
        node = leaves.apply(i)
        if node.getClass().getSimpleName() != "BatchScanExec":
            continue
        java_scan = node.scan()
        cls = java_scan.getClass()
        while cls is not None and cls.getSimpleName() != "SparkScan":
            cls = cls.getSuperclass()
        assert cls is not None, f"not an Iceberg scan: {java_scan}"
        method = cls.getDeclaredMethod(
            "filterExpressions", gateway.new_array(jvm.java.lang.Class, 0)
        )
        method.setAccessible(True)
        exprs = method.invoke(java_scan, gateway.new_array(jvm.java.lang.Object, 0))
        found = [exprs.get(j) for j in range(exprs.size())]
    return found


def _task_fields(task: Any) -> tuple[Any, ...]:
    return (
        task.file_path,
        task.record_count,
        task.data_sequence_number,
        [d.file_path for d in task.delete_files],
        str(task.residual),
    )


@pytest.mark.parametrize(("table", "ref", "flt"), CASES)
def test_planned_files_and_rows_match_java_and_spark(
    spark: Any, demo_warehouse: Path, table: str, ref: str | None, flt: str
) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.{table}")
    source = f"icecore.demo.{table}" + (f" VERSION AS OF '{ref}'" if ref else "")
    sql = f"SELECT * FROM {source}" + (f" WHERE {flt}" if flt else "")
    try:
        columns, expected = spark_rows(spark, sql)
    except Exception as spark_error:  # a column the snapshot's schema lacks: both refuse
        assert "UNRESOLVED_COLUMN" in str(spark_error)
        with pytest.raises(FilterError, match="not in the table's schema"):
            t.scan(filter=flt, ref=ref)
        return
    plan = t.scan(filter=flt or None, ref=ref).plan()
    ours = {task.file_path: {d.file_path for d in task.delete_files} for task in plan.tasks}
    assert ours == java_plan(spark, table, ref, flt)
    # Streamed as Java's planFiles(): the same tasks in the same order, deletes, residuals.
    streamed = list(t.scan(filter=flt or None, ref=ref).plan_files())
    assert [_task_fields(task) for task in streamed] == [_task_fields(task) for task in plan.tasks]
    result = plan.to_arrow()
    assert result.column_names == columns
    assert arrow_rows(result) == expected

    report = plan.report
    assert report.data_files_planned == len(plan.tasks)
    assert report.data_files == (
        report.files_pruned_by_manifest
        + report.files_pruned_by_partition
        + report.files_pruned_by_metrics
        + report.data_files_planned
    )


def test_v1_filesystem_table(spark: Any, demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}/hadoop::demo.customers_v1")
    for flt in ("country = 'Österreich'", "signup_date >= '2022-01-01'", "customer_id < 100"):
        plan = t.scan(filter=flt).plan()
        _, expected = spark_rows(spark, f"SELECT * FROM hadoop.demo.customers_v1 WHERE {flt}")
        assert arrow_rows(plan.to_arrow()) == expected
        assert plan.report.data_files_planned <= plan.report.data_files


def test_limit_and_columns(demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    result = t.scan(filter="fare > 10").plan().to_arrow(columns=["trip_id", "fare"], limit=7)
    assert result.column_names == ["trip_id", "fare"]
    assert result.num_rows == 7
    assert all(f > 10 for f in result.column("fare").to_pylist())


def test_bad_filters_and_selectors(demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    with pytest.raises(FilterError, match="nope"):
        t.scan(filter="nope = 1")
    with pytest.raises(FilterError):
        t.scan(filter="fare >")
    with pytest.raises(NotFound, match="no branch or tag"):
        t.scan(ref="missing")
    with pytest.raises(NotFound):
        t.scan(as_of="1999-01-01T00:00:00Z")


@pytest.mark.spark
def test_a_truncated_or_missing_manifest_among_many_is_named_and_the_others_still_decode(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    """Manifests decoded together on threads: one bad manifest fails the read by name.

    Copies of Spark's manifests of ``demo.accounts`` (two of one spec, decoded as one
    batch), the second cut in half, then gone: the error names it, and the good ones
    decode (and match a decode of the originals) afterwards.
    """
    from dataclasses import replace

    from icecore.errors import InvalidMetadata
    from icecore.scan.planner import TableScan

    table = icecore.load_table(f"{demo_warehouse}::demo.accounts")
    snapshot = table.snapshot()
    assert snapshot is not None
    originals = [m for m in table.manifests(snapshot) if m.content == 0]
    assert len({m.partition_spec_id for m in originals}) < len(originals)  # a shared batch
    copies = []
    for i, m in enumerate(originals):
        copy = tmp_path / f"{i}-{Path(m.manifest_path).name}"
        copy.write_bytes(Path(m.manifest_path).read_bytes())
        copies.append(replace(m, manifest_path=str(copy)))
    bad = Path(copies[1].manifest_path)
    whole = bad.read_bytes()
    bad.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InvalidMetadata, match=str(bad)):
        TableScan(table).load_manifests(copies)
    bad.unlink()
    with pytest.raises(NotFound, match=bad.name):
        TableScan(table).load_manifests(copies)
    good = [c for i, c in enumerate(copies) if i != 1]
    loaded = TableScan(table).load_manifests(good)
    expected = TableScan(table).load_manifests([m for i, m in enumerate(originals) if i != 1])
    for got, want in zip(loaded, expected, strict=True):
        names = ["file_path", "record_count", "file_size_in_bytes"]
        assert got.read(names).equals(want.read(names))
