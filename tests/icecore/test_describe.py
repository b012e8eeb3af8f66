"""Schema rows, spec and sort order rows, schema history, and filter examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.describe import (
    filter_examples,
    partition_spec_rows,
    quote_name,
    schema_history,
    schema_rows,
    sort_order_rows,
)
from icecore.metadata import parse_metadata
from icecore.schema import Schema
from icecore.types import (
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)

GOLDEN = Path(__file__).resolve().parents[1] / "data/metadata/spark/trips-00024.metadata.json"


def test_schema_rows_walk_nested_fields_with_defaults_and_identifiers() -> None:
    schema = Schema(
        (
            NestedField(1, "id", LongType(), required=True, doc="the key"),
            NestedField(
                2,
                "loc",
                StructType((NestedField(3, "lat", IntegerType(), initial_default=0),)),
            ),
            NestedField(4, "tags", ListType(5, StringType(), element_required=False)),
            NestedField(6, "attrs", MapType(7, StringType(), 8, IntegerType())),
            NestedField(9, "note", StringType(), write_default="n/a"),
        ),
        schema_id=3,
        identifier_field_ids=(1,),
    )
    rows = schema_rows(schema)
    assert [(r.depth, r.path, r.field_id, r.type) for r in rows] == [
        (0, "id", 1, "long"),
        (0, "loc", 2, "struct"),
        (1, "loc.lat", 3, "int"),
        (0, "tags", 4, "list"),
        (1, "tags.element", 5, "string"),
        (0, "attrs", 6, "map"),
        (1, "attrs.key", 7, "string"),
        (1, "attrs.value", 8, "int"),
        (0, "note", 9, "string"),
    ]
    assert rows[0].identifier and rows[0].required and rows[0].doc == "the key"
    assert rows[2].initial_default == "0"
    assert rows[-1].write_default == '"n/a"'
    assert not rows[4].required


def test_schema_history_lists_each_change_and_first_use() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    history = schema_history(metadata)
    assert [v.schema_id for v in history] == sorted(s.schema_id for s in metadata.schemas)
    assert [v.is_current for v in history].count(True) == 1
    assert history[0].changes == ()
    # The demo's evolution, as pipeline/demo.py runs it: add, rename, widen, drop.
    changes = [c for v in history[1:] for c in v.changes]
    assert changes == [
        "added congestion_fee double",
        "renamed tip to tip_amount",
        "passenger_count: type int → long",
        "dropped store_and_fwd string",
    ]
    assert history[0].first_snapshot_id is not None


def test_spec_and_sort_rows_name_sources_and_defaults() -> None:
    metadata = parse_metadata(GOLDEN.read_bytes(), location=str(GOLDEN))
    specs = partition_spec_rows(metadata)
    assert {r.spec_id for r in specs} == {s.spec_id for s in metadata.partition_specs}
    assert {r.spec_id for r in specs if r.is_default} == {metadata.default_spec_id}
    first = [(r.name, r.transform, r.source) for r in specs if r.spec_id == 0]
    assert first == [
        ("pickup_ts_day", "day", "pickup_ts"),
        ("trip_id_bucket", "bucket[16]", "trip_id"),
    ]
    orders = sort_order_rows(metadata)
    assert orders[0].name == "(unsorted)"
    assert [r.detail for r in orders if r.spec_id == 1][0] == "asc nulls first"


def test_names_are_quoted_only_when_needed() -> None:
    assert quote_name("fare") == "fare"
    assert quote_name("<b>x</b>") == '"<b>x</b>"'
    assert quote_name('a"b') == '"a""b"'


@pytest.mark.spark
@pytest.mark.parametrize(
    "spec",
    [
        "{w}::demo.trips",
        "{w}::demo.events_v3",
        "{w}::demo.accounts",
        "{w}::demo.zones",
        "{w}/hadoop::demo.customers_v1",
    ],
)
def test_filter_examples_plan_and_match_spark_counts(
    spark: Any, demo_warehouse: Path, spec: str
) -> None:
    table = icecore.load_table(spec.format(w=demo_warehouse))
    examples = filter_examples(table, table.snapshot(), table.resolve().schema)
    assert len(examples) >= 3
    name = spec.split("::")[1]
    catalog = "hadoop" if "/hadoop::" in spec else "icecore"
    for example in examples:
        plan = table.scan(filter=example).plan()
        ours = sum(b.num_rows for b in plan.to_batches())
        theirs = spark.sql(f"SELECT count(*) FROM {catalog}.{name} WHERE {example}").collect()
        assert ours == theirs[0][0], example
