"""The Arrow kernels of the metrics filter give its slow path's verdict on every file.

Files are generated with the metrics that break pruning code (missing maps and keys,
``0`` and ``""`` bounds, NaN and -0.0, bounds of the pre-promotion width, truncated string
bounds, supplementary characters, zero and negative record counts) and checked against
the per-row slow path (what :func:`metrics_evaluator` and ``explain`` use, checked against
Iceberg Java in ``test_metrics_eval`` and the planner's oracle tests) for many predicates:
a verdict the kernels decide must equal the slow path's, the full filter must equal it
everywhere, and the common column types must be decided by the kernels alone.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from icecore.expressions.arrow_metrics import arrow_metrics_filter
from icecore.expressions.bind import bind
from icecore.expressions.metrics_eval import metrics_evaluator
from icecore.expressions.model import Expression
from icecore.expressions.parser import parse_filter
from icecore.expressions.rewrite_not import rewrite_not
from icecore.manifest import DataFile, DataFileContent
from icecore.schema import Schema
from icecore.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)
from icecore.values import to_bytes

SCHEMA = Schema(
    fields=(
        NestedField(1, "i", IntegerType()),
        NestedField(2, "l", LongType()),
        NestedField(3, "d", DoubleType()),
        NestedField(4, "f", FloatType()),
        NestedField(5, "s", StringType()),
        NestedField(6, "day", DateType()),
        NestedField(7, "ts", TimestamptzType()),
        NestedField(8, "dec", DecimalType(9, 2)),
    ),
    schema_id=0,
)

_DOUBLES = [0.0, -0.0, 1.5, -1.5, float("nan"), float("inf"), -float("inf"), 2.0, 1e300]
_STRINGS = ["", "a", "ab", "abc", "b", "zz", "é", "éa", "\U0001f600", "a\U0001f600", "\uffff"]


def _bound(rng: random.Random, fid: int) -> bytes:
    """A bound for column ``fid``; sometimes of another width, as before a promotion."""
    if fid == 1:
        return to_bytes(IntegerType(), rng.randint(-5, 5))
    if fid == 2:
        if rng.random() < 0.15:
            return to_bytes(IntegerType(), rng.randint(-5, 5))  # written when it was an int
        return to_bytes(LongType(), rng.randint(-5, 5))
    if fid == 3:
        if rng.random() < 0.1:
            return struct.pack("<f", rng.choice([0.5, -0.0, 2.0]))  # written as a float
        return struct.pack("<d", rng.choice(_DOUBLES))
    if fid == 4:
        return struct.pack("<f", rng.choice(_DOUBLES[:-1]))
    if fid == 5:
        return rng.choice(_STRINGS).encode()
    if fid == 6:
        return to_bytes(IntegerType(), rng.randint(-3, 3))
    if fid == 7:
        return to_bytes(LongType(), rng.randint(-3, 3) * 1_000_000)
    return rng.randint(-500, 500).to_bytes(4, "big", signed=True)


def _counts(rng: random.Random, records: int) -> tuple[int | None, int | None, int | None]:
    values = rng.choice([records, records, None, 0])
    nulls = rng.choice([0, 0, 1, values, None])
    nans = rng.choice([None, 0, 1, values])
    return values, nulls, nans


def random_files(seed: int, n: int) -> list[DataFile]:
    """Files with every kind of metric the rules distinguish."""
    rng = random.Random(seed)
    files = []
    for i in range(n):
        records = rng.choice([0, -1, 1, 3, 10, 10, 10])
        maps: dict[str, dict[int, Any] | None] = {
            k: {} for k in ("value_counts", "null_value_counts", "nan_value_counts")
        }
        lower: dict[int, bytes] = {}
        upper: dict[int, bytes] = {}
        for fid in range(1, 9):
            values, nulls, nans = _counts(rng, max(records, 0))
            for kind, count in zip(maps, (values, nulls, nans), strict=True):
                if count is not None and rng.random() < 0.9:
                    maps[kind][fid] = count  # type: ignore[index]
            if rng.random() < 0.85:
                a, b = _bound(rng, fid), _bound(rng, fid)
                lower[fid], upper[fid] = (a, b) if rng.random() < 0.8 else (b, a)
                if rng.random() < 0.1:
                    del upper[fid]
        for kind in maps:
            if rng.random() < 0.05:
                maps[kind] = None
        files.append(
            DataFile(
                content=DataFileContent.DATA,
                file_path=f"f{i}.parquet",
                file_format="PARQUET",
                spec_id=0,
                partition={},
                record_count=records,
                file_size_in_bytes=1,
                value_counts=maps["value_counts"],
                null_value_counts=maps["null_value_counts"],
                nan_value_counts=maps["nan_value_counts"],
                lower_bounds=lower if rng.random() > 0.05 else None,
                upper_bounds=upper if rng.random() > 0.05 else None,
            )
        )
    return files


class FileColumns:
    """The metrics of data files as the planner lays them out (one chunk per 50 files)."""

    def __init__(self, files: Sequence[DataFile]) -> None:
        self.files = files
        self.num_rows = len(files)

    def _chunked(self, values: list[Any], t: pa.DataType) -> pa.ChunkedArray:
        return pa.chunked_array(
            [pa.array(values[i : i + 50], t) for i in range(0, len(values), 50)], t
        )

    def record_counts(self) -> pa.ChunkedArray:
        return self._chunked([f.record_count for f in self.files], pa.int64())

    def metric(self, kind: str, field_id: int) -> pa.ChunkedArray | None:
        maps = [getattr(f, kind) for f in self.files]
        values = [m.get(field_id) if m is not None else None for m in maps]
        if all(v is None for v in values):
            return None
        t = pa.binary() if kind.endswith("bounds") else pa.int64()
        return self._chunked(values, t)


FILTERS = [
    "i < 0",
    "i <= -5",
    "i > 4",
    "i >= 0",
    "i = 3",
    "i IN (1, 4)",
    "i NOT IN (1, 4)",
    "i != 2",
    "i IS NULL",
    "i IS NOT NULL",
    "l < 0",
    "l = 4",
    "l >= 5",
    "l IN (-5, 5)",
    "d < 0",
    "d <= -0.0",
    "d > 1.5",
    "d = 0.0",
    "d = -0.0",
    "d >= 1e301",
    "d IN (0.0, 2.0)",
    "isnan(d)",
    "NOT isnan(d)",
    "f < 0",
    "f > 1.5",
    "f = 2.0",
    "isnan(f)",
    "s < 'ab'",
    "s >= 'b'",
    "s = 'a'",
    "s > 'é'",
    "s IN ('a', 'zz', '\U0001f600')",
    "s LIKE 'a%'",
    "s LIKE 'é%'",
    "s LIKE '\U0001f600%'",
    "s NOT LIKE 'a%'",
    "day >= DATE '1970-01-02'",
    "day < DATE '1969-12-30'",
    "ts > TIMESTAMP '1970-01-01 00:00:01+00:00'",
    "dec > 1.00",
    "dec = 0.5",
    "i > 3 AND s < 'b'",
    "i > 3 OR d < 0",
    "(l = 1 OR l = 2) AND NOT (s = 'a')",
    "NOT (i < 0 OR isnan(d))",
    "i IN (" + ", ".join(str(v) for v in range(300)) + ")",
]


def _bound_filter(text: str) -> Expression:
    return rewrite_not(bind(SCHEMA, parse_filter(text)))


@pytest.mark.parametrize("text", FILTERS)
def test_kernel_verdicts_equal_the_slow_path(text: str) -> None:
    files = random_files(seed=len(text), n=600)
    expr = _bound_filter(text)
    row = metrics_evaluator(SCHEMA, expr)
    verdicts = arrow_metrics_filter(expr, fast_only=True)(FileColumns(files)).to_pylist()
    expected = [row(f) for f in files]
    assert arrow_metrics_filter(expr)(FileColumns(files)).to_pylist() == expected
    assert len(verdicts) == len(files)
    mismatches = [
        (f.file_path, got, want)
        for f, got, want in zip(files, verdicts, expected, strict=True)
        if got is not None and got != want
    ]
    assert not mismatches, mismatches[:5]
    # Both verdicts occur, so the comparison says something.
    assert set(expected) == {True, False}


VECTORIZED = [
    f
    for f in FILTERS
    if not any(word in f for word in ("dec", "NOT LIKE", "\U0001f600%", "l "))
    and not f.startswith("(l")
]


@pytest.mark.parametrize("text", VECTORIZED)
def test_common_types_are_decided_by_the_kernels(text: str) -> None:
    files = [f for f in random_files(seed=7, n=600) if "\U0001f600" not in repr(f.lower_bounds)]
    kernels = arrow_metrics_filter(_bound_filter(text), fast_only=True)
    verdicts = kernels(FileColumns(files)).to_pylist()
    undecided = sum(v is None for v in verdicts)
    # Only bounds written at another width (promotions) are left to the row evaluator.
    assert undecided <= len(files) * 0.2, undecided


def test_promoted_bounds_and_other_types_take_the_slow_path() -> None:
    files = random_files(seed=3, n=400)
    long_eq = arrow_metrics_filter(_bound_filter("l = 4"), fast_only=True)(FileColumns(files))
    narrow = [
        i
        for i, f in enumerate(files)
        if f.lower_bounds and len(f.lower_bounds.get(2, b"12345678")) == 4 and f.record_count > 0
    ]
    assert narrow
    # A 4-byte bound of a long column is undecided unless the counts alone decide.
    assert any(long_eq[i].as_py() is None for i in narrow)
    decimal = arrow_metrics_filter(_bound_filter("dec > 1.00"), fast_only=True)
    assert any(v is None for v in decimal(FileColumns(files)).to_pylist())
