"""Manifests laid out for planning together: each exactly as it is laid out alone.

A batch of manifests is converted and laid out at once, then sliced; a manifest must not
see its neighbours: not their metric columns, partition tuples, or deleted rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from icecore.io import FileIO
from icecore.manifest_arrow import manifest_table, read_manifest_avro
from icecore.scan.planning_manifest import (
    CODE_COLUMN,
    PlanningManifest,
    build_planning_manifest,
    planning_manifests,
)
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
