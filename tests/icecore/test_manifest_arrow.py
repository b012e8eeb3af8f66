"""The one manifest decoder, by columns ("Manifests", inheritance sections, Appendix A)."""

from __future__ import annotations

import datetime as dt
import io
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import icecore
from icecore.avro import HEADER_METADATA_PREFIX, read_avro_polars_arrow
from icecore.errors import InvalidMetadata, NotFound
from icecore.io import FileIO
from icecore.manifest_arrow import read_manifest, read_manifest_arrow
from tests.icecore.test_manifest import SCHEMA, SPEC, _entry, _manifest_file, _write_manifest

# ---------------------------------------------------------------------------------------
# read_avro_polars_arrow

_LOGICAL = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "d", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "t", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {
            "name": "ts",
            "type": [
                "null",
                {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True},
            ],
        },
        {
            "name": "dec",
            "type": [
                "null",
                {
                    "type": "fixed",
                    "name": "f9",
                    "size": 9,
                    "logicalType": "decimal",
                    "precision": 20,
                    "scale": 2,
                },
            ],
        },
        {
            "name": "u",
            "type": ["null", {"type": "fixed", "name": "u16", "size": 16, "logicalType": "uuid"}],
        },
        {"name": "b", "type": ["null", "bytes"]},
    ],
}


def _avro(records: list[dict[str, Any]]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, _LOGICAL, records, codec="deflate", metadata={"k": "v"})
    return buf.getvalue()


def test_polars_logical_types_and_header() -> None:
    u = uuid.UUID(int=7)
    data = _avro(
        [
            {
                "d": dt.date(1960, 1, 1),
                "t": dt.time(0, 0, 1),
                "ts": dt.datetime(1970, 1, 1, 0, 0, 0, 5, tzinfo=dt.UTC),
                "dec": Decimal("-12.34"),
                "u": u.bytes,
                "b": b"",
            },
            {"d": None, "t": None, "ts": None, "dec": None, "u": None, "b": None},
        ]
    )
    table = read_avro_polars_arrow(data, "mem://x.avro")
    types = {f.name: f.type for f in table.schema}
    assert types["d"] == pa.date32()
    assert types["t"] == pa.time64("ns")  # polars: time-micros reads as nanoseconds
    assert types["ts"] == pa.timestamp("us", tz="UTC")
    assert types["dec"] == pa.decimal128(20, 2)
    assert types["u"] == pa.large_binary()  # uuid logical type dropped
    assert table.column("ts").cast(pa.int64()).to_pylist() == [5, None]
    assert table.column("u").to_pylist() == [u.bytes, None]
    assert table.column("b").to_pylist() == [b"", None]
    metadata = table.schema.metadata or {}
    assert metadata[HEADER_METADATA_PREFIX + b"k"] == b"v"
    assert HEADER_METADATA_PREFIX + b"avro.schema" in metadata


def test_polars_reader_empty_file_falls_back() -> None:
    table = read_avro_polars_arrow(_avro([]), "mem://empty.avro")
    assert table.num_rows == 0
    assert table.column_names == ["d", "t", "ts", "dec", "u", "b"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) - 10],
        lambda b: b[: len(b) // 2],
        lambda b: b[:30],
        lambda b: b"",
        lambda b: b"XXXX" + b[4:],
        lambda b: b + b"junk",
    ],
    ids=["cut-sync", "half", "header", "empty", "magic", "trailing"],
)
def test_polars_reader_refuses_damage(damage: Any) -> None:
    data = _avro([{"d": None, "t": None, "ts": None, "dec": None, "u": None, "b": b"x"}] * 50)
    with pytest.raises(InvalidMetadata, match="mem://bad.avro"):
        read_avro_polars_arrow(damage(data), "mem://bad.avro")


# ---------------------------------------------------------------------------------------
# read_manifest_arrow on hand-written manifests


def test_inheritance_by_columns(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(
        path,
        [
            _entry(1, "a", 100),
            _entry(0, "b", 10, snapshot_id=5, seq=2, file_seq=2, first_row_id=3),
            _entry(2, "c", 8, snapshot_id=6, seq=3, file_seq=4),
            _entry(1, "d", 25, seq=4, city=None),
            _entry(0, "e", 5, snapshot_id=5, seq=3, file_seq=3),
        ],
    )
    manifest = _manifest_file(path, length)
    table = read_manifest_arrow(FileIO(), manifest, SCHEMA, SPEC, 3)
    assert table.column("first_row_id").to_pylist() == [1000, 3, None, 1100, 1125]
    assert table.column("sequence_number").to_pylist() == [7, 2, 3, 4, 3]
    assert table.column("snapshot_id").to_pylist() == [42, 5, 6, 42, 5]
    partition = table.schema.field("partition").type
    assert [(f.name, (f.metadata or {})[b"field_id"]) for f in partition] == [("city", b"1000")]


def test_truncated_bad_magic_and_missing_manifest(tmp_path: Path) -> None:
    path = tmp_path / "m.avro"
    length = _write_manifest(path, [_entry(1, f"f{i}", i) for i in range(50)])
    data = path.read_bytes()
    path.write_bytes(data[: length // 2])
    for claimed in (length, length // 2):
        with pytest.raises(InvalidMetadata) as err:
            read_manifest_arrow(FileIO(), _manifest_file(path, claimed), SCHEMA, SPEC, 3)
        assert str(path) in str(err.value)
    path.write_bytes(b"XXXX" + data[4:])
    with pytest.raises(InvalidMetadata, match="magic"):
        read_manifest_arrow(FileIO(), _manifest_file(path, length), SCHEMA, SPEC, 3)
    with pytest.raises(NotFound):
        read_manifest_arrow(FileIO(), _manifest_file(tmp_path / "no.avro", 10), SCHEMA, SPEC, 3)


_BENCH = Path("/tmp/benchwh/hadoop/bench/files_100000")


@pytest.mark.skipif(not _BENCH.exists(), reason="the 100k-file bench table is not built")
def test_bench_timing() -> None:
    """Prints decode times of every manifest (not an assertion: machines are noisy)."""
    table = icecore.load_table(str(_BENCH))
    metadata = table.metadata
    snapshot = metadata.current_snapshot()
    assert snapshot is not None
    schema = metadata.current_schema()
    manifests = table.manifests(snapshot)
    specs = {m.partition_spec_id: metadata.spec_by_id(m.partition_spec_id) for m in manifests}
    version = metadata.format_version

    start = time.perf_counter()
    rows = 0
    for m in manifests:
        spec = specs[m.partition_spec_id]
        assert spec is not None
        rows += len(read_manifest(table.io, m, schema, spec, version))
    middle = time.perf_counter()
    arrow_rows = 0
    for m in manifests:
        spec = specs[m.partition_spec_id]
        assert spec is not None
        arrow_rows += read_manifest_arrow(table.io, m, schema, spec, version).num_rows
    end = time.perf_counter()
    assert rows == arrow_rows
    print(
        f"\n{len(manifests)} manifests, {rows} entries: views {middle - start:.2f} s, "
        f"read_manifest_arrow {end - middle:.2f} s"
    )
