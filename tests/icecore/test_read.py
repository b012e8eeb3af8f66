"""Reading tasks: rows, metadata columns and filters against Spark; evolution by hand; bad files."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icecore
from icecore.errors import InvalidMetadata, NotFound, Unsupported
from icecore.expressions.model import (
    And,
    BoundPredicate,
    BoundReference,
    Expression,
    Not,
    Operation,
    Or,
)
from icecore.io import FileIO
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import UNPARTITIONED_SPEC
from icecore.point_in_time import At
from icecore.read import (
    arrow_schema_for,
    filter_mask,
    read_arrow,
    read_tasks,
    unified_partition_type,
)
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.table import Table
from icecore.types import (
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from tests.icecore.scan.helpers import manual_tasks, snapshot_schema
from tests.oracle import arrow_rows, spark_rows

TABLES = [
    ("demo.trips", "icecore.demo.trips", None),
    ("demo.trips", "icecore.demo.trips", "month_end"),
    ("demo.trips", "icecore.demo.trips", "audit"),
    ("demo.events_v3", "icecore.demo.events_v3", None),
    ("demo.accounts", "icecore.demo.accounts", None),
    ("demo.zones", "icecore.demo.zones", None),
    ("hadoop::demo.customers_v1", "hadoop.demo.customers_v1", None),
]


def load(warehouse: Path, name: str) -> Table:
    if name.startswith("hadoop::"):
        return icecore.load_table(f"{warehouse}/hadoop::{name.removeprefix('hadoop::')}")
    return icecore.load_table(f"{warehouse}::{name}")


def spark_source(spark_name: str, ref: str | None) -> str:
    return spark_name if ref is None else f"{spark_name} VERSION AS OF '{ref}'"


@pytest.mark.spark
@pytest.mark.parametrize(("name", "spark_name", "ref"), TABLES)
def test_rows_match_spark(
    spark: Any, demo_warehouse: Path, name: str, spark_name: str, ref: str | None
) -> None:
    table = load(demo_warehouse, name)
    tasks = manual_tasks(table, ref)
    ours = read_arrow(table.io, tasks)
    columns, expected = spark_rows(spark, f"SELECT * FROM {spark_source(spark_name, ref)}")
    assert ours.column_names == columns
    assert ours.num_rows == sum(expected.values())
    assert arrow_rows(ours) == expected


@pytest.mark.spark
@pytest.mark.parametrize(("name", "spark_name", "ref"), TABLES)
@pytest.mark.parametrize("filtered", [False, True])
def test_counting_without_columns_matches_spark(
    spark: Any,
    demo_warehouse: Path,
    name: str,
    spark_name: str,
    ref: str | None,
    filtered: bool,
) -> None:
    """No columns asked for (a count): every live row still comes back, deletes applied."""
    table = load(demo_warehouse, name)
    first = table.resolve(At(ref=ref)).schema.fields[0].name  # each table's id column
    where = f"{first} < 10 OR {first} > 40" if filtered else None
    plan = table.scan(filter=where, ref=ref).plan()
    counted = plan.to_arrow(columns=[])
    clause = f" WHERE {where}" if where else ""
    expected = spark.sql(f"SELECT count(*) FROM {spark_source(spark_name, ref)}{clause}")
    assert counted.num_columns == 0
    assert counted.num_rows == expected.collect()[0][0]
    assert plan.to_arrow(columns=[], limit=2).num_rows == min(2, counted.num_rows)


@pytest.mark.spark
def test_deletes_change_what_is_read(spark: Any, demo_warehouse: Path) -> None:
    """The Spark comparison above must not pass by accident: deletes really remove rows."""
    for name in ("demo.trips", "demo.events_v3", "demo.accounts"):
        table = load(demo_warehouse, name)
        tasks = manual_tasks(table)
        assert any(t.delete_files for t in tasks)
        bare = [replace(t, delete_files=()) for t in tasks]
        assert read_arrow(table.io, bare).num_rows > read_arrow(table.io, tasks).num_rows


@pytest.mark.spark
@pytest.mark.parametrize(("name", "spark_name", "ref"), TABLES)
def test_metadata_columns_match_spark(
    spark: Any, demo_warehouse: Path, name: str, spark_name: str, ref: str | None
) -> None:
    table = load(demo_warehouse, name)
    tasks = manual_tasks(table, ref)
    key = snapshot_schema(table, ref).fields[0].name
    ptype = unified_partition_type(table.metadata.specs_by_id().values(), tasks[0].schema)
    meta = ["_file", "_pos", "_spec_id", "_partition"]
    ours = read_arrow(table.io, tasks, columns=[key], metadata_columns=meta, partition_type=ptype)
    source = spark_source(spark_name, ref)
    columns, expected = spark_rows(spark, f"SELECT {key}, {', '.join(meta)} FROM {source}")
    assert ours.column_names == columns
    assert arrow_rows(ours) == expected


def pred(schema: Schema, op: Operation, column: str, *values: Any) -> BoundPredicate:
    f = schema.find_field_by_name(column)
    assert f is not None
    return BoundPredicate(op, BoundReference(f, column), tuple(values))


def with_residual(tasks: list[FileScanTask], expr: Expression) -> list[FileScanTask]:
    return [replace(t, residual=expr) for t in tasks]


FILTERS: list[tuple[str, str, Any]] = [
    (
        "demo.trips",
        "fare > 30 AND payment_type = 'card'",
        lambda s: And(
            pred(s, Operation.GT, "fare", 30.0),
            pred(s, Operation.EQ, "payment_type", "card"),
        ),
    ),
    (
        "demo.trips",
        "payment_type NOT LIKE 'ca%'",
        lambda s: pred(s, Operation.NOT_STARTS_WITH, "payment_type", "ca"),
    ),
    (
        "demo.trips",
        "payment_type != 'cash'",
        lambda s: pred(s, Operation.NOT_EQ, "payment_type", "cash"),
    ),
    (
        "demo.trips",
        "NOT (payment_type = 'cash' OR passenger_count IN (1, 2))",
        lambda s: Not(
            Or(
                pred(s, Operation.EQ, "payment_type", "cash"),
                pred(s, Operation.IN, "passenger_count", 1, 2),
            )
        ),
    ),
    (
        "demo.trips",
        "payment_type NOT IN ('cash', 'card') OR congestion_fee IS NULL",
        lambda s: Or(
            pred(s, Operation.NOT_IN, "payment_type", "cash", "card"),
            pred(s, Operation.IS_NULL, "congestion_fee"),
        ),
    ),
    (
        "demo.trips",
        "pickup_loc.lat >= 40.75 AND tip_amount <= 2.5",
        lambda s: And(
            pred(s, Operation.GT_EQ, "pickup_loc.lat", 40.75),
            pred(s, Operation.LT_EQ, "tip_amount", 2.5),
        ),
    ),
    (
        "demo.events_v3",
        "amount IS NULL",
        lambda s: pred(s, Operation.IS_NULL, "amount"),
    ),
    (
        "demo.events_v3",
        "amount < 10.5 AND kind LIKE 'pu%'",
        lambda s: And(
            pred(s, Operation.LT, "amount", Decimal("10.50")),
            pred(s, Operation.STARTS_WITH, "kind", "pu"),
        ),
    ),
    (
        "demo.accounts",
        "email NOT LIKE 'user1%'",
        lambda s: pred(s, Operation.NOT_STARTS_WITH, "email", "user1"),
    ),
    (
        "demo.accounts",
        "NOT (email LIKE 'user1%')",
        lambda s: Not(pred(s, Operation.STARTS_WITH, "email", "user1")),
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize(("name", "sql", "build"), FILTERS)
def test_residual_filter_matches_spark(
    spark: Any, demo_warehouse: Path, name: str, sql: str, build: Any
) -> None:
    table = load(demo_warehouse, name)
    tasks = manual_tasks(table)
    expr = build(tasks[0].schema)
    ours = read_arrow(table.io, with_residual(tasks, expr))
    columns, expected = spark_rows(spark, f"SELECT * FROM icecore.{name} WHERE {sql}")
    assert ours.column_names == columns
    assert 0 < ours.num_rows < read_arrow(table.io, tasks).num_rows
    assert arrow_rows(ours) == expected


@pytest.mark.spark
def test_filter_on_unselected_column_and_limit(spark: Any, demo_warehouse: Path) -> None:
    table = load(demo_warehouse, "demo.trips")
    tasks = manual_tasks(table)
    expr = pred(tasks[0].schema, Operation.GT, "fare", 30.0)
    ours = read_arrow(table.io, with_residual(tasks, expr), columns=["trip_id", "pickup_loc.lat"])
    assert ours.column_names == ["trip_id", "pickup_loc"]
    assert ours.schema.field("pickup_loc").type == pa.struct([("lat", pa.float64())])
    _, expected = spark_rows(
        spark,
        "SELECT trip_id, named_struct('lat', pickup_loc.lat) FROM icecore.demo.trips "
        "WHERE fare > 30",
    )
    assert arrow_rows(ours) == expected
    batches = list(read_tasks(table.io, tasks, columns=["trip_id"], limit=7, batch_size=3))
    assert sum(b.num_rows for b in batches) == 7
    assert all(b.schema == arrow_schema_for(tasks[0].schema, ["trip_id"]) for b in batches)


@pytest.mark.spark
def test_evolved_trips_read_old_files_by_id(demo_warehouse: Path) -> None:
    """Old files named the tip column ``tip`` and stored passenger_count as int32."""
    table = load(demo_warehouse, "demo.trips")
    tasks = manual_tasks(table)
    old = [t for t in tasks if t.data_file.spec_id == 0]
    assert old
    raw = pq.read_schema(old[0].data_file.file_path)
    assert "tip" in raw.names and raw.field("passenger_count").type == pa.int32()
    ours = read_arrow(table.io, old[:1])
    assert "tip_amount" in ours.column_names and "store_and_fwd" not in ours.column_names
    assert ours.schema.field("passenger_count").type == pa.int64()
    assert ours.column("tip_amount").null_count < ours.num_rows
    assert ours.column("congestion_fee").null_count == ours.num_rows


# ---------------------------------------------------------------------------------------
# Bad input (on copies in tmp_path)


@pytest.mark.spark
def test_truncated_data_file(demo_warehouse: Path, tmp_path: Path) -> None:
    table = load(demo_warehouse, "demo.zones")
    task = manual_tasks(table)[0]
    source = Path(task.data_file.file_path)
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    broken = replace(task, data_file=replace(task.data_file, file_path=str(copy)))
    with pytest.raises(InvalidMetadata, match=f"{copy}.*truncated"):
        read_arrow(table.io, [broken])
    # even when the manifest agrees with the short size, the footer is gone
    resized = replace(
        broken, data_file=replace(broken.data_file, file_size_in_bytes=copy.stat().st_size)
    )
    with pytest.raises(InvalidMetadata, match=str(copy)):
        read_arrow(table.io, [resized])


@pytest.mark.spark
def test_missing_files(demo_warehouse: Path, tmp_path: Path) -> None:
    table = load(demo_warehouse, "demo.trips")
    task = next(t for t in manual_tasks(table) if t.delete_files)
    gone = str(tmp_path / "gone-deletes.parquet")
    deletes = tuple(replace(d, file_path=gone) for d in task.delete_files)
    with pytest.raises(NotFound, match="gone-deletes.parquet"):
        read_arrow(table.io, [replace(task, delete_files=deletes)])
    missing_data = replace(task.data_file, file_path=str(tmp_path / "gone-data.parquet"))
    with pytest.raises(NotFound, match="gone-data.parquet"):
        read_arrow(table.io, [replace(task, data_file=missing_data)])


@pytest.mark.spark
@pytest.mark.parametrize("damage", ["crc", "magic", "truncated"])
def test_corrupt_deletion_vector(demo_warehouse: Path, tmp_path: Path, damage: str) -> None:
    table = load(demo_warehouse, "demo.events_v3")
    task = next(t for t in manual_tasks(table) if t.delete_files)
    dv = task.delete_files[-1]
    assert dv.file_format == "PUFFIN" and dv.content_offset is not None
    data = bytearray(Path(dv.file_path).read_bytes())
    copy = tmp_path / "dv.puffin"
    if damage == "crc":
        data[dv.content_offset + 9] ^= 0xFF  # a byte of the bitmap
        expected = "CRC"
    elif damage == "magic":
        data[dv.content_offset + 4] ^= 0xFF
        expected = "magic"
    else:
        data = data[: dv.content_offset + 10]
        expected = "truncated"
    copy.write_bytes(bytes(data))
    broken = replace(task, delete_files=(replace(dv, file_path=str(copy)),))
    with pytest.raises(InvalidMetadata, match=f"{copy}.*{expected}"):
        read_arrow(table.io, [broken])


@pytest.mark.spark
def test_orc_is_unsupported(demo_warehouse: Path) -> None:
    table = load(demo_warehouse, "demo.zones")
    task = manual_tasks(table)[0]
    orc = replace(task, data_file=replace(task.data_file, file_format="ORC"))
    with pytest.raises(Unsupported, match="ORC"):
        read_arrow(table.io, [orc])


# ---------------------------------------------------------------------------------------
# Evolution, defaults, nested projection and name mapping, on hand-written files


def write_parquet(
    path: Path,
    table: pa.Table,
    content: DataFileContent = DataFileContent.DATA,
    **options: object,
) -> DataFile:
    """``table`` written to ``path`` (``options``: pyarrow's), as an unpartitioned file."""
    pq.write_table(table, path, **options)  # type: ignore[arg-type]
    return DataFile(
        content=content,
        file_path=str(path),
        file_format="PARQUET",
        spec_id=0,
        partition={},
        record_count=table.num_rows,
        file_size_in_bytes=path.stat().st_size,
    )


def fid(name: str, t: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable=nullable, metadata={b"PARQUET:field_id": str(field_id)})


def test_evolution_by_field_id(tmp_path: Path) -> None:
    file_schema = pa.schema(
        [
            fid("id", pa.int32(), 1),
            fid("old", pa.string(), 2),  # dropped; id 5 re-adds the name
            fid("ratio", pa.float32(), 3),
            fid("price", pa.decimal128(5, 2), 4),
            fid(
                "loc",
                pa.struct([fid("x", pa.float64(), 7), fid("gone", pa.int32(), 8)]),
                6,
            ),
            fid("tags", pa.list_(fid("element", pa.int32(), 10)), 9),
            fid(
                "props",
                pa.map_(fid("key", pa.string(), 12, False), fid("value", pa.int32(), 13)),
                11,
            ),
        ]
    )
    rows = pa.Table.from_pylist(
        [
            {
                "id": 1,
                "old": "stale",
                "ratio": 0.5,
                "price": Decimal("1.25"),
                "loc": {"x": 1.0, "gone": 3},
                "tags": [1, 2],
                "props": [("a", 1)],
            },
            {
                "id": 2,
                "old": None,
                "ratio": None,
                "price": None,
                "loc": None,
                "tags": None,
                "props": None,
            },
        ],
        schema=file_schema,
    )
    data_file = write_parquet(tmp_path / "f.parquet", rows)
    schema = Schema(
        (
            NestedField(4, "amount", DecimalType(9, 2)),
            NestedField(1, "key", LongType(), required=True),
            NestedField(5, "old", StringType(), initial_default="fresh"),
            NestedField(3, "ratio", DoubleType()),
            NestedField(
                6,
                "where",
                StructType(
                    (NestedField(14, "y", IntegerType()), NestedField(7, "x", DoubleType()))
                ),
            ),
            NestedField(9, "tags", ListType(10, LongType(), element_required=False)),
            NestedField(
                11, "props", MapType(12, StringType(), 13, LongType(), value_required=False)
            ),
            NestedField(15, "added", IntegerType()),
        )
    )
    task = FileScanTask(data_file, 1, UNPARTITIONED_SPEC, schema)
    got = read_arrow(FileIO(), [task], metadata_columns=["_pos"])
    assert got.schema.field("amount").type == pa.decimal128(9, 2)
    assert got.schema.field("ratio").type == pa.float64()
    assert got.to_pylist() == [
        {
            "amount": Decimal("1.25"),
            "key": 1,
            "old": "fresh",
            "ratio": 0.5,
            "where": {"y": None, "x": 1.0},
            "tags": [1, 2],
            "props": [("a", 1)],
            "added": None,
            "_pos": 0,
        },
        {
            "amount": None,
            "key": 2,
            "old": "fresh",
            "ratio": None,
            "where": None,
            "tags": None,
            "props": None,
            "added": None,
            "_pos": 1,
        },
    ]


def test_name_mapping_for_files_without_ids(tmp_path: Path) -> None:
    rows = pa.table({"ident": [1, 2], "label": ["a", None], "extra": [9, 9]})
    data_file = write_parquet(tmp_path / "imported.parquet", rows)
    schema = Schema((NestedField(1, "id", LongType()), NestedField(2, "name", StringType())))
    task = FileScanTask(data_file, 0, UNPARTITIONED_SPEC, schema)
    with pytest.raises(Unsupported, match="imported.parquet.*name-mapping"):
        read_arrow(FileIO(), [task])
    mapping = (
        '[{"field-id": 1, "names": ["id", "ident"]}, {"field-id": 2, "names": ["label"]},'
        ' {"names": ["extra"]}]'
    )
    got = read_arrow(FileIO(), [task], name_mapping=mapping)
    assert got.to_pylist() == [{"id": 1, "name": "a"}, {"id": 2, "name": None}]


def test_equality_deletes_on_dropped_and_null_columns(tmp_path: Path) -> None:
    """A delete column dropped from the table is still read from the data file; NULL = NULL."""
    rows = pa.Table.from_pylist(
        [
            {"id": 1, "code": "a", "grp": 1},
            {"id": 2, "code": None, "grp": 1},
            {"id": 3, "code": None, "grp": 2},
            {"id": 4, "code": "b", "grp": None},
        ],
        schema=pa.schema(
            [fid("id", pa.int64(), 1), fid("code", pa.string(), 2), fid("grp", pa.int32(), 3)]
        ),
    )
    data_file = write_parquet(tmp_path / "data.parquet", rows)
    deletes = pa.Table.from_pylist(
        [{"code": None, "grp": 1}, {"code": "b", "grp": None}, {"code": "z", "grp": 2}],
        schema=pa.schema([fid("code", pa.string(), 2), fid("grp", pa.int64(), 3)]),
    )
    eq = replace(
        write_parquet(tmp_path / "eq.parquet", deletes),
        content=DataFileContent.EQUALITY_DELETES,
        equality_ids=(2, 3),
    )
    single = replace(
        write_parquet(
            tmp_path / "eq1.parquet",
            pa.Table.from_pylist([{"code": None}], schema=pa.schema([fid("code", pa.string(), 2)])),
        ),
        content=DataFileContent.EQUALITY_DELETES,
        equality_ids=(2,),
    )
    # the table dropped ``code`` (2) and widened grp to long
    schema = Schema((NestedField(1, "id", LongType()), NestedField(3, "grp", LongType())))
    task = FileScanTask(data_file, 1, UNPARTITIONED_SPEC, schema, delete_files=(eq,))
    assert read_arrow(FileIO(), [task]).column("id").to_pylist() == [1, 3]
    both = replace(task, delete_files=(eq, single))
    assert read_arrow(FileIO(), [both]).column("id").to_pylist() == [1]


def test_filter_null_semantics_are_sql() -> None:
    """A row is kept only when the filter is TRUE: NULL never passes, NOT NULL is NULL."""
    schema = Schema((NestedField(1, "s", StringType()), NestedField(2, "f", FloatType())))
    s = pa.array(["abc", "xyz", None])
    f = pa.array([1.0, float("nan"), None], pa.float32())
    cols = {1: s, 2: f}

    def mask(expr: Expression) -> list[bool]:
        return filter_mask(expr, cols, 3).to_pylist()

    assert mask(pred(schema, Operation.NOT_STARTS_WITH, "s", "ab")) == [False, True, False]
    assert mask(Not(pred(schema, Operation.STARTS_WITH, "s", "ab"))) == [False, True, False]
    assert mask(pred(schema, Operation.NOT_EQ, "s", "abc")) == [False, True, False]
    assert mask(pred(schema, Operation.NOT_IN, "s", "abc")) == [False, True, False]
    assert mask(Not(pred(schema, Operation.IN, "s", "abc"))) == [False, True, False]
    assert mask(pred(schema, Operation.IS_NULL, "s")) == [False, False, True]
    assert mask(pred(schema, Operation.IS_NAN, "f")) == [False, True, False]
    assert mask(pred(schema, Operation.NOT_NAN, "f")) == [True, False, True]
    # Spark orders NaN above every number
    assert mask(pred(schema, Operation.GT, "f", 0.5)) == [True, True, False]
    assert mask(pred(schema, Operation.LT, "f", 5.0)) == [True, False, False]
    assert mask(Or(pred(schema, Operation.IS_NULL, "s"), pred(schema, Operation.EQ, "s", "x"))) == [
        False,
        False,
        True,
    ]
