"""What Spark (the oracle) and PyIceberg (a peer) say about a table after an Icecore commit."""

from __future__ import annotations

from typing import Any

from icecore import types as t
from icecore.schema import Schema
from icecore.table import Table
from tests.oracle import arrow_rows, spark_rows

from .conftest import EvoCatalogs

_SPARK_NAMES = {
    t.BooleanType(): "boolean",
    t.IntegerType(): "int",
    t.LongType(): "bigint",
    t.FloatType(): "float",
    t.DoubleType(): "double",
    t.DateType(): "date",
    t.TimestampType(): "timestamp_ntz",
    t.TimestamptzType(): "timestamp",
    t.StringType(): "string",
    t.BinaryType(): "binary",
}


def spark_type(ours: t.IcebergType) -> str:
    """The type Spark's DESCRIBE prints for one of our types (Iceberg's Spark type mapping)."""
    if isinstance(ours, t.DecimalType):
        return f"decimal({ours.precision},{ours.scale})"
    if isinstance(ours, t.StructType):
        return "struct<" + ",".join(f"{f.name}:{spark_type(f.field_type)}" for f in ours) + ">"
    if isinstance(ours, t.ListType):
        return f"array<{spark_type(ours.element_type)}>"
    if isinstance(ours, t.MapType):
        return f"map<{spark_type(ours.key_type)},{spark_type(ours.value_type)}>"
    return _SPARK_NAMES[ours]


def describe(spark: Any, name: str) -> list[tuple[str, str]]:
    """Spark's DESCRIBE TABLE columns, in order, up to the first blank row."""
    columns = []
    for row in spark.sql(f"DESCRIBE TABLE {name}").collect():
        if not row.col_name or row.col_name.startswith("#"):
            break
        columns.append((row.col_name, row.data_type))
    return columns


def partitioning(spark: Any, name: str) -> list[str]:
    """The ``# Partitioning`` section of Spark's DESCRIBE TABLE (e.g. ``days(ts)``)."""
    rows = spark.sql(f"DESCRIBE TABLE {name}").collect()
    out, inside = [], False
    for row in rows:
        if row.col_name == "# Partitioning":
            inside = True
            continue
        if inside:
            if not row.col_name or row.col_name.startswith("#"):
                break
            out.append(row.data_type)
    return out


def spark_properties(spark: Any, name: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


def assert_spark_sees_schema(spark: Any, name: str, schema: Schema) -> None:
    """Spark's DESCRIBE lists our current schema's columns with the same types, in order."""
    assert describe(spark, name) == [(f.name, spark_type(f.field_type)) for f in schema.fields]


def assert_icecore_reads_like_spark(evo: EvoCatalogs, kind: str, name: str, columns: str) -> None:
    """Icecore's read of the current snapshot equals Spark's, on the given columns."""
    table = evo.load(kind, name)
    wanted = [c.strip() for c in columns.split(",")]
    ours = arrow_rows(table.scan().plan().to_arrow(columns=wanted))
    _, theirs = spark_rows(evo.spark, f"SELECT {columns} FROM {evo.spark_name(kind, name)}")
    assert ours == theirs


def pyiceberg_schema(evo: EvoCatalogs, kind: str, table: Table) -> list[tuple[int, str, str]]:
    """The current schema as PyIceberg 0.12 reads the committed table: (id, name, type)."""
    if kind == "sql":
        from pyiceberg.catalog.sql import SqlCatalog

        catalog = SqlCatalog(evo.sql, uri=evo.sql_uri, warehouse=str(evo.warehouse))
        peer = catalog.load_table(str(table.identifier))
        assert peer.metadata_location == table.metadata_location
    else:
        from pyiceberg.table import StaticTable

        peer = StaticTable.from_metadata(table.metadata_location)
    schema = peer.schema()
    return [(f.field_id, f.name, str(f.field_type)) for f in schema.fields]


def our_schema(table: Table) -> list[tuple[int, str, str]]:
    return [(f.field_id, f.name, str(f.field_type)) for f in table.metadata.current_schema()]


def hadoop_read(spark: Any, path: str) -> str:
    """A small file as Hadoop's local file system (what Spark's Hadoop catalog uses) reads it.

    Hadoop checks the file against its ``.crc`` sidecar, if there is one.
    """
    jvm = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(f"file:{path}")
    fs = hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration())
    stream = fs.open(hadoop_path)
    try:
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream))
        return str(reader.readLine())
    finally:
        stream.close()
