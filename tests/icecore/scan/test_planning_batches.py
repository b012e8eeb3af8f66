"""Manifests laid out for planning together: each exactly as it is laid out alone.

A batch of manifests is converted and laid out at once, then sliced; a manifest must not
see its neighbours: not their metric columns, partition tuples, or deleted rows.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icecore.io import FileIO
from icecore.manifest_arrow import (
    manifest_table,
    output_schema,
    read_manifest,
    read_manifest_avro,
)
from icecore.partitioning import partition_spec_to_json
from icecore.scan import decode_worker
from icecore.scan.decode_pool import DecodeJob
from icecore.scan.manifest_cache import ManifestCache, ManifestKey
from icecore.scan.planning_manifest import (
    CODE_COLUMN,
    PlanningManifest,
    batch_distinct_partitions,
    build_planning_manifest,
    planning_manifests,
)
from icecore.schema import schema_to_json
from tests.icecore.test_manifest import SCHEMA, SPEC, _entry, _manifest_file, _write_manifest


def _with_bounds(entry: dict[str, Any], *keys: int) -> dict[str, Any]:
    entry["data_file"]["lower_bounds"] = [{"key": k, "value": bytes([k])} for k in keys]
    return entry


def _manifests(tmp_path: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        ("plain", [_entry(1, "a", 1), _entry(1, "b", 2, city="Rome"), _entry(1, "c", 3)]),
        (  # a bound on column 1 that no other manifest has; a deleted file in the middle
            "extra",
            [
                _with_bounds(_entry(1, "d", 4, city="Oslo"), 1, 2),
                _entry(2, "gone", 5, snapshot_id=1, seq=1, file_seq=1),
                _with_bounds(_entry(1, "e", 6, city=None), 2),
            ],
        ),
        ("deleted", [_entry(2, "x", 7, snapshot_id=1, seq=1, file_seq=1)]),  # no live file
        ("empty", []),
        ("last", [_entry(1, "f", 8, city="Milan"), _entry(1, "g", 9, city="Milan")]),
    ]


def _layout(pm: PlanningManifest) -> tuple[pa.Table, list[int]]:
    table = pm.read(pm.source.schema.names)
    return table, pm.codes.tolist()


_Counts = list[tuple[int, int]] | None


@pytest.mark.parametrize(
    "counts",
    [
        # every map with the same keys in the same order (read by strides)
        [[(1, 10), (2, 20)], [(1, 11), (2, 21)], [(1, 12), (2, 0)]],
        # keys in another order, one missing, a null map, an empty one, a key twice
        [[(1, 10), (2, 20)], [(2, 21), (1, 11)], [(1, 12)], None, [], [(3, 1), (3, 2)]],
    ],
    ids=["same-keys", "scattered"],
)
def test_count_maps_read_back_from_the_layout_as_written(
    tmp_path: Path, counts: list[_Counts]
) -> None:
    """A metrics map pivoted into columns gives back each file's map, as the manifest has it."""
    entries = []
    for i, pairs in enumerate(counts):
        entry = _entry(1, f"f{i}", i + 1)
        maps = None if pairs is None else [{"key": k, "value": v} for k, v in pairs]
        entry["data_file"]["null_value_counts"] = maps
        entries.append(entry)
    path = tmp_path / "m.avro"
    manifest = _manifest_file(path, _write_manifest(path, entries))
    (pm,) = planning_manifests([read_manifest_avro(FileIO(), manifest)], SCHEMA, SPEC, 3)
    got = [e.data_file.null_value_counts for e in pm.entries(range(pm.num_rows))]
    assert got == [None if pairs is None else dict(pairs) for pairs in counts]
    want = read_manifest(FileIO(), manifest, SCHEMA, SPEC, 3)
    assert got == [e.data_file.null_value_counts for e in want]


def test_manifests_laid_out_together_are_laid_out_as_each_alone(tmp_path: Path) -> None:
    raws = []
    for name, entries in _manifests(tmp_path):
        path = tmp_path / f"{name}.avro"
        raws.append(
            read_manifest_avro(FileIO(), _manifest_file(path, _write_manifest(path, entries)))
        )
    together = planning_manifests(raws, SCHEMA, SPEC, 3)
    assert [pm.path for pm in together] == [r.manifest_file.manifest_path for r in raws]
    # Known by construction: live rows, bound columns, partition codes per manifest.
    assert [pm.num_rows for pm in together] == [3, 2, 0, 0, 2]
    bounds = [
        [n for n in pm.source.schema.names if n.startswith("lower_bounds:")] for pm in together
    ]
    assert bounds == [
        ["lower_bounds:2"],
        ["lower_bounds:1", "lower_bounds:2"],
        [],
        [],
        ["lower_bounds:2"],
    ]
    for pm in together:
        assert {"has:lower_bounds", "has:column_sizes", "partition"} <= set(pm.source.schema.names)
    assert [pm.codes.tolist() for pm in together] == [[0, 1, 0], [0, 1], [], [], [0, 0]]
    assert together[1].required("file_path").to_pylist() == ["d", "e"]
    assert together[1].required("lower_bounds:1").to_pylist() == [b"\x01", None]
    for raw, pm in zip(raws, together, strict=True):
        alone = build_planning_manifest(
            manifest_table(raw, SCHEMA, SPEC, 3), raw.manifest_file.manifest_path, SPEC.spec_id
        )
        (table, codes), (want, want_codes) = _layout(pm), _layout(alone)
        assert table.schema.equals(want.schema, check_metadata=True)
        assert table.equals(want)
        assert codes == want_codes
        assert table.column(CODE_COLUMN).to_pylist() == codes
        rows = list(range(pm.num_rows))
        assert pm.entries(rows) == alone.entries(rows)
        partition = pm.read(["partition"]).column(0).combine_chunks()
        assert pm.distinct_partitions(partition) == alone.distinct_partitions(partition)


def _float_manifest(name: str, values: list[tuple[float | None, int | None]]) -> PlanningManifest:
    fields = [
        pa.field("f", pa.float64(), metadata={b"field_id": b"1000", b"iceberg_type": b"double"}),
        pa.field("n", pa.int32(), metadata={b"field_id": b"1001", b"iceberg_type": b"int"}),
    ]
    rows = [
        {
            "status": 1,
            "content": 0,
            "file_path": f"{name}-{i}",
            "file_format": "PARQUET",
            "spec_id": 0,
            "record_count": 1,
            "file_size_in_bytes": 1,
            "partition": {"f": f, "n": n},
        }
        for i, (f, n) in enumerate(values)
    ]
    schema = output_schema(pa.struct(fields))
    return build_planning_manifest(pa.Table.from_pylist(rows, schema=schema), f"{name}.avro", 0)


def test_distinct_partition_keys_tell_float_bits_and_types_apart() -> None:
    """-0.0 and 0.0 are two tuples, NaNs one, a null another (spec "Scan Planning" note 3)."""
    nan = float("nan")
    values = [(0.0, 1), (-0.0, 1), (nan, 1), (nan, 1), (None, 1), (0.0, None), (0.0, 1)]
    pm = _float_manifest("m", values)
    assert pm.codes.tolist() == [0, 1, 2, 2, 3, 4, 0]
    partitions, keys = pm.distinct_partitions(pm.required("partition"))
    assert len(set(keys)) == len(keys) == 5
    assert [p[1001] for p in partitions] == [1, 1, 1, 1, None]
    assert [math.copysign(1, p[1000]) for p in partitions[:2]] == [1, -1]
    assert keys[4] == ((1000, "float", ("float", struct.pack(">d", 0.0))), (1001, "NoneType", None))


def test_tuples_of_a_batch_coded_together_are_each_manifests_own() -> None:
    """Coded across manifests, each manifest's distinct tuples map to its own values and keys.

    Tuples shared between manifests are converted once; -0.0, 0.0, NaN and null stay apart
    across manifests as within one.
    """
    nan = float("nan")
    manifests = [
        _float_manifest("a", [(0.0, 1), (-0.0, 1), (nan, 1), (None, 1), (0.0, None)]),
        _float_manifest("b", [(nan, 1), (2.5, 7), (0.0, 1), (0.0, 1)]),
        _float_manifest("c", []),
        _float_manifest("d", [(-0.0, 1), (None, None), (2.5, 7)]),
    ]
    items = [(pm, pm.required("partition")) for pm in manifests]
    (partitions, keys), where = batch_distinct_partitions(items)
    assert len(set(keys)) == len(keys) == 7  # 0.0, -0.0, NaN, null, (0.0, null), 2.5, nulls
    for (pm, partition), positions in zip(items, where, strict=True):
        own_partitions, own_keys = pm.distinct_partitions(partition)
        assert [keys[i] for i in positions] == own_keys
        got = [partitions[i] for i in positions]
        assert [repr(p) for p in got] == [repr(p) for p in own_partitions]  # NaN != NaN


def test_a_decode_worker_batch_reads_back_as_each_manifest_alone(tmp_path: Path) -> None:
    """A worker decodes manifests of one header at once and stores them as one file.

    Read back (as the planner adopts them, and as the next process finds them on disk),
    each is its manifest laid out alone; a truncated manifest among them is left out (the
    planner decodes it and reports it) without taking its neighbours with it.
    """
    files = []
    for name, entries in _manifests(tmp_path):
        path = tmp_path / f"{name}.avro"
        files.append(_manifest_file(path, _write_manifest(path, entries)))
    cut = tmp_path / "cut.avro"
    data = Path(files[0].manifest_path).read_bytes()
    cut.write_bytes(data[: len(data) - 20])
    files.insert(2, _manifest_file(cut, len(data)))
    jobs = [
        DecodeJob(
            ManifestKey("t", f.manifest_path, f.manifest_length, 0, 3, "p", 1, 7), f, SPEC.spec_id
        )
        for f in files
    ]
    cache_dir = tmp_path / "cache"
    written = decode_worker._decode_batch(
        str(cache_dir), {}, schema_to_json(SCHEMA), [partition_spec_to_json(SPEC)], 3, jobs
    )
    assert [index for index, _ in written] == [0, 1, 3, 4, 5]  # not the cut one
    assert len({p.stat().st_ino for p in cache_dir.glob("*/*.arrow")}) < len(written)
    adopted, on_disk = ManifestCache(cache_dir), ManifestCache(cache_dir)
    for index, handover in written:
        adopted.adopt(jobs[index].key, handover)
    for index, _ in written:
        raw = read_manifest_avro(FileIO(), files[index])
        alone = build_planning_manifest(
            manifest_table(raw, SCHEMA, SPEC, 3), files[index].manifest_path, SPEC.spec_id
        )
        for cache in (adopted, on_disk):
            got = cache.lookup(jobs[index].key)
            assert got is not None
            (table, codes), (want, want_codes) = _layout(got), _layout(alone)
            assert table.schema.equals(want.schema)
            assert table.equals(want)
            assert codes == want_codes
            rows = list(range(got.num_rows))
            assert got.entries(rows) == alone.entries(rows)
    assert adopted.hits == on_disk.disk_hits == len(written)
