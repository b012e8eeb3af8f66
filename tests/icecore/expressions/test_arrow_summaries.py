"""The vectorized manifest filter gives the row evaluator's verdict on every manifest.

Manifest lists are written as real Avro files (the spec's ``manifest_file`` schema with its
field ids) holding summaries that break pruning code: manifests without summaries or with
fewer than the spec has fields, all-null and all-NaN fields, missing ``contains_nan``, empty
and supplementary-character strings, bounds of another width, floats, decimals. They are
read through :mod:`icecore.manifest_list_columns` and judged for many filters, projected
onto the spec as the planner does; every verdict the Arrow kernels decide must equal the
slow path's (the per-row rules behind ``explain`` and :func:`manifest_evaluator`, checked
against Iceberg Java in ``test_manifest_eval`` and the planner's oracle tests), and the
common partition types must be decided by the kernels alone.
"""

from __future__ import annotations

import datetime as dt
import random
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow.compute as pc
import pytest

from icecore.expressions.arrow_summaries import arrow_summary_filter
from icecore.expressions.bind import bind
from icecore.expressions.manifest_eval import manifest_evaluator
from icecore.expressions.model import And
from icecore.expressions.parser import parse_filter
from icecore.expressions.projection import inclusive_projection
from icecore.expressions.rewrite_not import rewrite_not
from icecore.io import FileIO
from icecore.manifest import ManifestContent
from icecore.manifest_list_columns import read_manifest_list_columns
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.schema import Schema
from icecore.transforms import parse_transform
from icecore.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)
from icecore.values import to_bytes

SCHEMA = Schema(
    fields=(
        NestedField(1, "id", LongType()),
        NestedField(2, "ts", TimestamptzType()),
        NestedField(3, "zone", StringType()),
        NestedField(4, "fare", DoubleType()),
        NestedField(5, "amount", DecimalType(9, 2)),
        NestedField(6, "n", LongType()),
    ),
    schema_id=0,
)

SPEC = PartitionSpec(
    spec_id=0,
    fields=(
        PartitionField(2, 1000, "ts_day", parse_transform("day")),
        PartitionField(1, 1001, "id_bucket", parse_transform("bucket[8]")),
        PartitionField(3, 1002, "zone", parse_transform("identity")),
        PartitionField(3, 1003, "zone_trunc", parse_transform("truncate[2]")),
        PartitionField(4, 1004, "fare", parse_transform("identity")),
        PartitionField(5, 1005, "amount", parse_transform("identity")),
        PartitionField(6, 1006, "n", parse_transform("identity")),
        PartitionField(2, 1007, "ts_hour", parse_transform("hour")),
    ),
)

_SUMMARY = {
    "type": "record",
    "name": "r508",
    "fields": [
        {"name": "contains_null", "type": "boolean", "field-id": 509},
        {"name": "contains_nan", "type": ["null", "boolean"], "default": None, "field-id": 518},
        {"name": "lower_bound", "type": ["null", "bytes"], "default": None, "field-id": 510},
        {"name": "upper_bound", "type": ["null", "bytes"], "default": None, "field-id": 511},
    ],
}
MANIFEST_FILE = {
    "type": "record",
    "name": "manifest_file",
    "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "content", "type": "int", "field-id": 517},
        {"name": "sequence_number", "type": "long", "field-id": 515},
        {"name": "min_sequence_number", "type": "long", "field-id": 516},
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": "added_files_count", "type": "int", "field-id": 504},
        {"name": "existing_files_count", "type": "int", "field-id": 505},
        {"name": "deleted_files_count", "type": "int", "field-id": 506},
        {"name": "added_rows_count", "type": "long", "field-id": 512},
        {"name": "existing_rows_count", "type": "long", "field-id": 513},
        {"name": "deleted_rows_count", "type": "long", "field-id": 514},
        {
            "name": "partitions",
            "type": ["null", {"type": "array", "items": _SUMMARY, "element-id": 508}],
            "default": None,
            "field-id": 507,
        },
    ],
}

_DAY = dt.date(2024, 8, 1)
_ZONES = ["", "a", "ab", "abc", "b", "zz", "é", "éa", "\U0001f600", "a\U0001f600", "\uffff"]
_FARES = [0.0, -0.0, 1.5, -1.5, float("nan"), float("inf"), 2.0]


def _value(rng: random.Random, position: int) -> bytes:
    """A bound for partition ``position``; sometimes of another width."""
    if position == 0:
        return to_bytes(DateType(), _DAY + dt.timedelta(days=rng.randint(-3, 3)))
    if position == 1:
        return to_bytes(IntegerType(), rng.randint(0, 7))
    if position in (2, 3):
        return rng.choice(_ZONES).encode()
    if position == 4:
        return struct.pack("<d", rng.choice(_FARES))
    if position == 5:
        return to_bytes(DecimalType(9, 2), Decimal(rng.randint(-500, 500)) / 100)
    if position == 6:
        if rng.random() < 0.1:  # written while the column was an int: not decoded here
            return to_bytes(IntegerType(), rng.randint(-3, 3))
        return to_bytes(LongType(), rng.randint(-3, 3))
    return to_bytes(IntegerType(), 478_000 + rng.randint(0, 100))


def _summary(rng: random.Random, position: int) -> dict[str, Any]:
    kind = rng.random()
    contains_null = rng.random() < 0.3
    contains_nan = rng.choice([None, False, True]) if position == 4 else None
    if kind < 0.12:  # only nulls (or NaN): no bounds
        return {"contains_null": contains_null, "contains_nan": contains_nan}
    a, b = sorted((_value(rng, position), _value(rng, position)), key=_order(position))
    lower, upper = (a, b) if rng.random() < 0.9 else (a, None)
    return {
        "contains_null": contains_null,
        "contains_nan": contains_nan,
        "lower_bound": lower,
        "upper_bound": upper,
    }


def _order(position: int) -> Any:
    if position in (2, 3):
        return lambda raw: raw
    if position == 4:
        return lambda raw: struct.unpack("<d", raw)[0] if raw == raw else 0
    return lambda raw: int.from_bytes(raw, "little", signed=True) if len(raw) in (4, 8) else 0


def write_list(path: Path, seed: int, n: int) -> None:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        if rng.random() < 0.05:
            partitions = None
        else:
            count = len(SPEC.fields) if rng.random() < 0.9 else rng.randint(0, 3)
            partitions = [_summary(rng, p) for p in range(count)]
        records.append(
            {
                "manifest_path": f"m{i}.avro",
                "manifest_length": 100,
                "partition_spec_id": 0,
                "content": 0,
                "sequence_number": 1,
                "min_sequence_number": 1,
                "added_snapshot_id": 1,
                "added_files_count": 1,
                "existing_files_count": 0,
                "deleted_files_count": 0,
                "added_rows_count": 1,
                "existing_rows_count": 0,
                "deleted_rows_count": 0,
                "partitions": partitions,
            }
        )
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(MANIFEST_FILE), records)


FILTERS = [
    "ts >= '2024-08-02T00:00:00+00:00'",
    "ts < '2024-08-01T00:00:00+00:00'",
    "ts = '2024-07-30T05:00:00+00:00'",
    "ts > '2024-08-03T23:59:59.999999+00:00'",
    "ts IS NULL",
    "ts IS NOT NULL",
    "id = 12",
    "id IN (1, 2, 3)",
    "id != 5",
    "zone = 'ab'",
    "zone < 'b'",
    "zone >= 'é'",
    "zone IN ('a', 'zz', '\U0001f600')",
    "zone LIKE 'a%'",
    "zone LIKE 'é%'",
    "zone LIKE '\U0001f600%'",
    "zone NOT LIKE 'a%'",
    "zone NOT IN ('a', 'b')",
    "zone IS NULL",
    "fare > 1.0",
    "fare = -0.0",
    "isnan(fare)",
    "NOT isnan(fare)",
    "fare IS NOT NULL",
    "amount > 1.5",
    "n <= 0",
    "n IN (-3, 3)",
    "n > 1 OR zone = 'b'",
    "NOT (n > 1 AND zone = 'b')",
    "ts >= '2024-08-01T00:00:00+00:00' AND ts < '2024-08-02T00:00:00+00:00' AND id = 3",
    "id IN (" + ", ".join(str(i) for i in range(250)) + ")",
]
NEVER_PRUNE: set[str] = set()
"""Filters that prune no manifest. None since negations take SQL's meaning: ``id != 5`` is
``id IS NOT NULL AND id != 5``, so a manifest whose ``id`` values are all NULL is pruned."""
VECTORIZED = [f for f in FILTERS if "fare" not in f and "amount" not in f and "NOT" not in f]


@pytest.fixture(scope="module")
def manifest_list(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("lists") / "snap-1.avro"
    write_list(path, seed=7, n=800)
    return read_manifest_list_columns(FileIO(), str(path), format_version=2)


def _projected(text: str) -> Any:
    expr = rewrite_not(bind(SCHEMA, parse_filter(text)))
    return inclusive_projection(SCHEMA, SPEC)(expr)


@pytest.mark.parametrize("text", FILTERS)
def test_vectorized_verdicts_equal_the_slow_path(manifest_list: Any, text: str) -> None:
    projected = _projected(text)
    group = manifest_list.spec_manifests(ManifestContent.DATA, 0)
    fast = arrow_summary_filter(SPEC, SCHEMA, projected, fast_only=True)(group).to_pylist()
    full = arrow_summary_filter(SPEC, SCHEMA, projected)
    expected = [full.explain(group, j) is None for j in range(group.num_rows)]
    decided = [(v, e) for v, e in zip(fast, expected, strict=True) if v is not None]
    assert [v for v, _ in decided] == [e for _, e in decided]
    assert full(group).to_pylist() == expected
    row = manifest_evaluator(SPEC, SCHEMA, projected)
    assert [row(manifest_list.manifest(i)) for i in group.rows.tolist()] == expected
    assert len(expected) == 800
    assert any(not e for e in expected) == (text not in NEVER_PRUNE)


@pytest.mark.parametrize("text", VECTORIZED)
def test_common_partition_types_are_decided_here(manifest_list: Any, text: str) -> None:
    group = manifest_list.spec_manifests(ManifestContent.DATA, 0)
    verdicts = arrow_summary_filter(SPEC, SCHEMA, _projected(text), fast_only=True)(group)
    undecided = pc.sum(pc.is_null(verdicts)).as_py() or 0
    if text.startswith("n "):
        assert 0 < undecided < 0.3 * len(verdicts)  # only the 4-byte bounds
    else:
        assert undecided == 0


def test_floats_and_decimals_take_the_slow_path(manifest_list: Any) -> None:
    group = manifest_list.spec_manifests(ManifestContent.DATA, 0)
    for text in ("fare > 1.0", "amount > 1.5", "zone NOT LIKE 'a%'"):
        expr = parse_filter(text)
        if isinstance(expr, And):  # NOT LIKE's IS NOT NULL guard is decided here; drop it
            expr = expr.right
        projected = inclusive_projection(SCHEMA, SPEC)(rewrite_not(bind(SCHEMA, expr)))
        verdicts = arrow_summary_filter(SPEC, SCHEMA, projected, fast_only=True)(group)
        present = [v for v in verdicts.to_pylist() if v is not True]
        assert present and all(v is None for v in present), text


def test_missing_required_fields_of_a_manifest_list_are_named(tmp_path: Path) -> None:
    schema = dict(MANIFEST_FILE)
    schema["fields"] = [
        dict(f, type=["null", f["type"]]) if f["name"] == "partition_spec_id" else f
        for f in MANIFEST_FILE["fields"]  # type: ignore[union-attr]
    ]
    path = tmp_path / "snap-2.avro"
    write_list(path, seed=1, n=3)
    with open(path, "rb") as src:
        records = list(fastavro.reader(src))
    records[1]["partition_spec_id"] = None
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(schema), records)
    from icecore.errors import InvalidMetadata

    with pytest.raises(InvalidMetadata, match="partition_spec_id"):
        read_manifest_list_columns(FileIO(), str(path), format_version=2)


def test_manifests_built_together_equal_one_at_a_time(manifest_list: Any) -> None:
    """A plan builds its kept manifests in one pass; each must be the row's own entry."""
    import numpy as np

    from icecore.manifest import read_manifest_list

    every = read_manifest_list(FileIO(), manifest_list.records.path)
    rows = np.array([7, 3, 3, 0, len(every) - 1, 11], dtype=np.int64)
    fresh = read_manifest_list_columns(FileIO(), manifest_list.records.path)
    assert fresh.manifest(11) == every[11]  # one made before: kept, not made again
    assert fresh.manifests(rows) == [every[i] for i in rows.tolist()]
    assert [fresh.manifest(i) for i in rows.tolist()] == [every[i] for i in rows.tolist()]
