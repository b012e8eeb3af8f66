"""One integer equality key matched by range (icecore.read.deletes.EqualityDeletes).

The range lookup must answer exactly what a lookup in every key answers (spec "Equality
Delete Files": a row is deleted when its value equals some key, NULL equal to NULL), for
batches clustered on the key, unclustered, partly NULL, all NULL, and outside every key.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from icecore.read.deletes import EqualityDeletes


def _deletes(keys: list[int | None], t: pa.DataType) -> EqualityDeletes:
    non_null = np.sort(np.unique(np.array([k for k in keys if k is not None], dtype=np.int64)))
    table = pa.table({"v0": pa.array(keys, t)})
    return EqualityDeletes((1,), (t,), table, non_null, None in keys)


def _expected(values: list[int | None], keys: list[int | None]) -> list[bool]:
    wanted = set(keys)
    return [v in wanted for v in values]


@pytest.mark.parametrize("t", [pa.int32(), pa.int64()])
@pytest.mark.parametrize("null_key", [False, True])
def test_range_lookup_equals_lookup_in_every_key(t: pa.DataType, null_key: bool) -> None:
    rng = np.random.default_rng(7)
    keys: list[int | None] = [int(k) for k in rng.choice(100_000, 3_000, replace=False)]
    if null_key:
        keys.append(None)
    eq = _deletes(keys, t)
    clustered = list(range(40_000, 45_000))
    shuffled = [int(v) for v in rng.integers(-10, 100_010, 5_000)]
    with_nulls: list[int | None] = [None if i % 7 == 0 else v for i, v in enumerate(shuffled)]
    batches: list[list[int | None]] = [
        list(clustered),
        list(shuffled),
        with_nulls,
        [None, None, None],
        [200_000, 200_001],
    ]
    for values in batches:
        got = eq.matches([pa.array(values, t)]).to_pylist()
        assert got == _expected(values, keys)


@pytest.mark.parametrize("t", [pa.int32(), pa.int64()])
def test_sorted_batches_equal_lookup_in_every_key(t: pa.DataType) -> None:
    """Batches sorted on the key take the binary-search path, and give every key's answer.

    Runs of repeats, runs side by side, keys at both ends, one row, and batches that are
    nearly sorted or reversed (which must take the other path).
    """
    rng = np.random.default_rng(11)
    keys: list[int | None] = sorted(int(k) for k in rng.choice(2_000, 300, replace=False))
    eq = _deletes(keys, t)
    repeats = sorted(int(v) for v in rng.integers(0, 2_000, 6_000))
    adjacent = [k for k in keys[:50] for _ in range(3)]  # key runs that touch
    ends = [keys[0], *range(keys[0] + 1, keys[-1]), keys[-1]]
    nearly = list(range(2_000))
    nearly[100], nearly[101] = nearly[101], nearly[100]
    batches: list[list[int | None]] = [
        repeats,
        adjacent,
        ends,
        [keys[5]],
        [keys[5] + 1] if keys[5] + 1 not in keys else [-1],
        nearly,
        list(range(2_000, 0, -1)),
        [-5, -4, -3],
        [3_000, 3_001],
    ]
    for values in batches:
        got = eq.matches([pa.array(values, t)]).to_pylist()
        assert got == _expected(values, keys)
