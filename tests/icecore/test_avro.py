"""Tests for icecore.avro: container files written here with fastavro, read back through FileIO."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from icecore.avro import read_avro_arrow, read_avro_file, read_avro_metadata
from icecore.errors import InvalidMetadata, NotFound
from icecore.io import FileIO

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "id", "type": "long", "field-id": 1},
        {"name": "name", "type": ["null", "string"], "default": None, "field-id": 2},
        {
            "name": "day",
            "type": ["null", {"type": "int", "logicalType": "date"}],
            "default": None,
            "field-id": 3,
        },
        {
            "name": "counts",
            "type": [
                "null",
                {
                    "type": "array",
                    "logicalType": "map",
                    "items": {
                        "type": "record",
                        "name": "k4_v5",
                        "fields": [
                            {"name": "key", "type": "int", "field-id": 4},
                            {"name": "value", "type": "long", "field-id": 5},
                        ],
                    },
                },
            ],
            "default": None,
            "field-id": 6,
        },
        {
            "name": "offsets",
            "type": ["null", {"type": "array", "items": "long", "element-id": 7}],
            "default": None,
            "field-id": 8,
        },
        {
            "name": "amount",
            "type": [
                "null",
                {
                    "type": "fixed",
                    "name": "dec",
                    "size": 5,
                    "logicalType": "decimal",
                    "precision": 10,
                    "scale": 2,
                },
            ],
            "default": None,
            "field-id": 9,
        },
    ],
}


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "name": None if i % 3 == 0 else f"n{i}",
            "day": dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "counts": [{"key": 1, "value": i}, {"key": 2, "value": 0}] if i % 2 else None,
            "offsets": [4, 100 + i] if i % 2 == 0 else None,
            "amount": Decimal("12.34") if i % 4 else None,
        }
        for i in range(n)
    ]


def _write(n: int = 50, codec: str = "deflate", block_records: int = 10) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(
        buf,
        fastavro.parse_schema(SCHEMA),
        _records(n),
        codec=codec,
        sync_interval=1,  # flush often: several blocks
        metadata={"format-version": "2", "content": "data", "partition-spec": "[]"},
    )
    return buf.getvalue()


@pytest.fixture
def file_io() -> FileIO:
    return FileIO()


def read_tables_together(files: list[tuple[bytes, str]]) -> list[pa.Table | Exception]:
    """Each file's table (or what it raised) when decoded together (:func:`read_avro_many`)."""
    from icecore.avro import read_avro_many

    return [d if isinstance(d, Exception) else d.table for d in read_avro_many(files)]


def _put(tmp_path: Path, data: bytes, name: str = "f.avro") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_round_trip_records_and_metadata(tmp_path: Path, file_io: FileIO, codec: str) -> None:
    path = _put(tmp_path, _write(codec=codec))
    avro = read_avro_file(file_io, path)
    assert avro.records == _records(50)
    assert avro.metadata["format-version"] == "2"
    assert avro.metadata["content"] == "data"
    assert avro.metadata["avro.codec"] == codec
    assert avro.schema["fields"][0]["field-id"] == 1
    assert read_avro_metadata(file_io.read(path), path)["partition-spec"] == "[]"


def test_file_uri_path(tmp_path: Path, file_io: FileIO) -> None:
    path = _put(tmp_path, _write(n=3))
    assert len(read_avro_file(file_io, "file://" + path).records) == 3


def test_empty_file_has_header_only(tmp_path: Path, file_io: FileIO) -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SCHEMA), [], metadata={"content": "deletes"})
    path = _put(tmp_path, buf.getvalue())
    avro = read_avro_file(file_io, path)
    assert avro.records == []
    assert avro.metadata["content"] == "deletes"
    table = read_avro_arrow(file_io.read(path), path)
    assert table.num_rows == 0
    assert table.schema.names == ["id", "name", "day", "counts", "offsets", "amount"]


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_every_truncation_raises_or_is_a_valid_prefix(
    tmp_path: Path, file_io: FileIO, codec: str
) -> None:
    data = _write(n=30, codec=codec)
    # A cut inside the header or inside a block must raise; never a partial list silently
    # taken for a whole one, except a cut exactly at a block boundary, which is a valid file.
    raised = 0
    for cut in range(len(data) - 1, 0, -7):
        path = _put(tmp_path, data[:cut], f"cut{cut}.avro")
        try:
            avro = read_avro_file(file_io, path)
        except InvalidMetadata as e:
            assert path in str(e)
            raised += 1
            continue
        # Only a block boundary decodes: what comes back is a prefix of the records.
        assert avro.records == _records(30)[: len(avro.records)]
    assert raised > 0


def test_cut_in_middle_of_block(tmp_path: Path, file_io: FileIO) -> None:
    data = _write(n=30)
    path = _put(tmp_path, data[: len(data) - 20])
    with pytest.raises(InvalidMetadata, match="truncated") as err:
        read_avro_file(file_io, path)
    assert path in str(err.value)


def test_bad_magic(tmp_path: Path, file_io: FileIO) -> None:
    data = b"PAR1" + _write()[4:]
    path = _put(tmp_path, data)
    with pytest.raises(InvalidMetadata, match="bad magic") as err:
        read_avro_file(file_io, path)
    assert path in str(err.value)


def test_too_short(tmp_path: Path, file_io: FileIO) -> None:
    path = _put(tmp_path, b"Obj")
    with pytest.raises(InvalidMetadata, match="too short"):
        read_avro_file(file_io, path)


def test_wrong_sync_marker(tmp_path: Path, file_io: FileIO) -> None:
    data = bytearray(_write(codec="null"))
    data[-1] ^= 0xFF  # the last block's trailing sync marker
    path = _put(tmp_path, bytes(data))
    with pytest.raises(InvalidMetadata, match="sync marker") as err:
        read_avro_file(file_io, path)
    assert path in str(err.value)


def test_trailing_garbage(tmp_path: Path, file_io: FileIO) -> None:
    path = _put(tmp_path, _write() + b"\x02\x04")
    with pytest.raises(InvalidMetadata):
        read_avro_file(file_io, path)


def test_missing_file_is_not_found(tmp_path: Path, file_io: FileIO) -> None:
    path = str(tmp_path / "nope.avro")
    with pytest.raises(NotFound, match="nope.avro"):
        read_avro_file(file_io, path)


def test_arrow_columns_types_and_field_ids(tmp_path: Path, file_io: FileIO) -> None:
    path = _put(tmp_path, _write(n=12))
    table = read_avro_arrow(file_io.read(path), path)
    assert table.num_rows == 12
    schema = table.schema
    assert schema.field("id").type == pa.int64()
    assert not schema.field("id").nullable
    assert schema.field("day").type == pa.date32()
    counts_type = schema.field("counts").type
    assert pa.types.is_map(counts_type)
    assert (counts_type.key_type, counts_type.item_type) == (pa.int32(), pa.int64())
    assert schema.field("offsets").type.value_type == pa.int64()
    assert schema.field("amount").type == pa.decimal128(10, 2)
    assert schema.field("counts").metadata == {b"field_id": b"6"}
    expected = _records(12)
    assert table.column("id").to_pylist() == [r["id"] for r in expected]
    assert table.column("name").to_pylist() == [r["name"] for r in expected]
    assert table.column("day").to_pylist() == [r["day"] for r in expected]
    assert table.column("amount").to_pylist() == [r["amount"] for r in expected]
    assert table.column("offsets").to_pylist() == [r["offsets"] for r in expected]
    counts = table.column("counts").to_pylist()
    assert counts[1] == [(1, 1), (2, 0)]
    assert counts[0] is None


def test_arrow_selected_columns(tmp_path: Path, file_io: FileIO) -> None:
    path = _put(tmp_path, _write(n=5))
    table = read_avro_arrow(file_io.read(path), path, columns=["name", "id"])
    assert table.schema.names == ["name", "id"]
    with pytest.raises(InvalidMetadata, match="no column"):
        read_avro_arrow(file_io.read(path), path, columns=["missing"])


def test_arrow_truncated_raises(tmp_path: Path, file_io: FileIO) -> None:
    data = _write(n=30)
    path = _put(tmp_path, data[:-30])
    with pytest.raises(InvalidMetadata, match="truncated"):
        read_avro_arrow(file_io.read(path), path)


# ---------------------------------------------------------------------------------------
# Issue 29: a block's declared object count is checked against its bytes before decoding


def zigzag(n: int) -> bytes:
    """An Avro ``long`` ("Binary Encoding": zig-zag, then base-128 little-endian)."""
    return _uvarint((n << 1) ^ (n >> 63))


def _read_long(reader: io.BytesIO) -> int:
    """The Avro ``long`` at the reader's position (the inverse of :func:`zigzag`)."""
    shift = n = 0
    while True:
        byte = reader.read(1)[0]
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (n >> 1) ^ -(n & 1)


def split_first_block(data: bytes) -> tuple[bytes, int, bytes, bytes]:
    """(header with sync, object count, the block's objects, the rest) of a container file.

    Parsed here from the bytes, not with the code under test: magic, the metadata map's
    blocks of key/value byte strings, a zero, the 16-byte sync marker; then the block's
    count, its byte size and its bytes.
    """
    reader = io.BytesIO(data)
    assert reader.read(4) == b"Obj\x01"
    while (pairs := _read_long(reader)) != 0:
        if pairs < 0:
            _read_long(reader)  # the block's byte size
        for _ in range(2 * abs(pairs)):
            reader.read(_read_long(reader))
    reader.read(16)
    header = data[: reader.tell()]
    count = _read_long(reader)
    size = _read_long(reader)
    block = reader.read(size)
    return header, count, block, data[reader.tell() :]


def forge_first_count(data: bytes, count: int) -> bytes:
    """``data`` with its first block's object count set to ``count`` (its bytes unchanged)."""
    header, _, block, rest = split_first_block(data)
    return header + zigzag(count) + zigzag(len(block)) + block + rest


def _container(records: list[dict[str, Any]], codec: str = "null") -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SCHEMA), records, codec=codec)
    return buf.getvalue()


_ROWS = [{"id": i, "name": "x", "day": None, "counts": None} for i in range(3)]


@pytest.mark.parametrize("codec", ["null", "deflate"])
@pytest.mark.parametrize("count", [100_000_000, 4_000_000_000])
def test_a_forged_block_count_is_one_sentence(codec: str, count: int) -> None:
    from icecore.avro import read_avro, read_avro_polars_arrow

    forged = forge_first_count(_container(_ROWS, codec), count)
    good = _container(_ROWS, codec)
    for decode in (read_avro, read_avro_arrow, read_avro_polars_arrow):
        with pytest.raises(InvalidMetadata, match=f"block 1 declares {count} objects"):
            decode(forged, "forged.avro")
    # decoded together with files of the same header: the forged one alone is refused
    out = read_tables_together([(good, "a.avro"), (forged, "forged.avro"), (good, "b")])
    assert [t.num_rows if isinstance(t, pa.Table) else "refused" for t in out] == [
        3,
        "refused",
        3,
    ]
    assert isinstance(out[1], InvalidMetadata) and "forged.avro" in str(out[1])


def test_blocks_of_one_byte_objects_still_read() -> None:
    """The floor is the schema's smallest object: 10,000 booleans fill 10,000 bytes exactly."""
    from icecore.avro import read_avro_polars_arrow

    schema = {"type": "record", "name": "b", "fields": [{"name": "flag", "type": "boolean"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{"flag": True}] * 10_000, codec="null")
    assert split_first_block(buf.getvalue())[1] == 10_000
    assert read_avro_polars_arrow(buf.getvalue(), "flags.avro").num_rows == 10_000


def test_a_forged_snappy_length_is_one_sentence() -> None:
    """Snappy's leading length is what its decoder allocates: it must fit the block's bytes."""
    from icecore.avro import read_avro_polars_arrow

    header, count, block, rest = split_first_block(_container(_ROWS))
    header = header.replace(b"\x14avro.codec\x08null", b"\x14avro.codec\x0csnappy")
    assert b"snappy" in header
    literal = bytes([(len(block) - 1) << 2]) + block  # one literal element (< 60 bytes)
    stream = _uvarint(4_000_000_000) + literal + b"\x00\x00\x00\x00"  # CRC never reached
    forged = header + zigzag(count) + zigzag(len(stream)) + stream + rest
    with pytest.raises(InvalidMetadata, match="more than snappy can"):
        read_avro_polars_arrow(forged, "snappy.avro")


def _uvarint(n: int) -> bytes:
    """An unsigned base-128 little-endian varint (Avro's long after zig-zag; snappy's length)."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_an_array_of_values_taking_no_bytes_is_refused() -> None:
    """4e9 nulls decode from five bytes: such a schema is refused before any decoding."""
    from icecore.avro import read_avro_polars_arrow

    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}],
    }
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{"a": [None]}], codec="null")
    header, count, block, rest = split_first_block(buf.getvalue())
    assert block == zigzag(1) + zigzag(0)  # one array block of one null, then the end
    block = zigzag(4_000_000_000) + zigzag(0)
    forged = header + zigzag(count) + zigzag(len(block)) + block + rest
    with pytest.raises(InvalidMetadata, match="take no bytes"):
        read_avro_polars_arrow(forged, "nulls.avro")


def test_blocks_inflating_past_the_bound_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deflate bomb: the decoded size is counted (to the bound) before any decoder runs."""
    import icecore.avro
    from icecore.avro import read_avro_polars_arrow

    schema = {"type": "record", "name": "s", "fields": [{"name": "s", "type": "string"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{"s": "\0" * (4 << 20)}], codec="deflate")
    assert len(buf.getvalue()) < 8 << 10  # 4 MiB of zeros in a few KiB
    monkeypatch.setattr(icecore.avro, "MAX_DECODED_BYTES", 4 << 20)
    with pytest.raises(InvalidMetadata, match="decompress to more than 4 MiB"):
        read_avro_polars_arrow(buf.getvalue(), "bomb.avro")
    # also when the framing breaks right after (the reader of damaged files inflates first)
    header, count, block, _ = split_first_block(buf.getvalue())
    forged = header + zigzag(count) + zigzag(len(block)) + block + b"not the sync marker"
    with pytest.raises(InvalidMetadata, match="decompress to more than 4 MiB"):
        read_avro_polars_arrow(forged, "bomb.avro")
    monkeypatch.setattr(icecore.avro, "MAX_DECODED_BYTES", 5 << 20)
    assert read_avro_polars_arrow(buf.getvalue(), "bomb.avro").num_rows == 1


TIMES_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "t",
    "fields": [
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "clock", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "raw", "type": "bytes"},
        {"name": "tag", "type": {"type": "fixed", "name": "f4", "size": 4}},
        {"name": "ratio", "type": ["null", "double"], "default": None},
    ],
}


@pytest.mark.parametrize("which", ["manifest-like", "times"])
def test_datafusion_decodes_as_polars_does(which: str) -> None:
    """The fast decoder's table, in polars' shapes, is polars' own table, value for value."""
    import polars as pl

    from icecore.avro import _decode_datafusion

    if which == "times":
        buf = io.BytesIO()
        rows = [
            {
                "at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
                "clock": dt.time(10, 0, i % 60),
                "raw": bytes([i % 256]) * (i % 5),
                "tag": b"abcd",
                "ratio": None if i % 3 else float(i) / 7,
            }
            for i in range(40)
        ]
        fastavro.writer(buf, fastavro.parse_schema(TIMES_SCHEMA), rows, codec="deflate")
        data = buf.getvalue()
    else:
        data = _write(200)
    fast = _decode_datafusion(data)
    assert fast is not None
    assert fast.equals(pl.read_avro(io.BytesIO(data)).to_arrow())


def test_datafusion_refusing_a_file_leaves_no_scratch_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scratch files go to a folder of this test's own: /dev/shm is shared with every other
    # process decoding at the same time (the 3.12 and 3.13 runs side by side saw one vanish).
    from icecore import avro

    monkeypatch.setattr(avro, "_SCRATCH", str(tmp_path))
    assert avro._decode_datafusion(b"Obj\x01not an avro file") is None
    assert list(tmp_path.glob("icecore-*.avro")) == []
    assert avro._decode_datafusion(_write(50)) is not None  # a good file: removed as well
    assert list(tmp_path.glob("icecore-*.avro")) == []


_GATE_CHILD = """
import json, sys
from icecore import avro
from tests.icecore.test_avro import _write
calls = []
decode = avro._decode_datafusion
def counted(data, *rest):
    calls.append(len(data))
    return decode(data, *rest)
avro._decode_datafusion = counted
small = _write(200)
big = _write(20000, codec="null")
assert len(small) < avro.DATAFUSION_MIN_BYTES <= len(big)
assert len(small) + len(big) <= avro.DATAFUSION_AFTER_BYTES < 4 * len(big)
first_small = avro.read_avro_polars_arrow(small, "small.avro")
first_big = avro.read_avro_polars_arrow(big, "big.avro")
early = ("datafusion" in sys.modules, len(calls))
while avro._decoded[0] <= avro.DATAFUSION_AFTER_BYTES:
    avro.read_avro_polars_arrow(big, "big.avro")
again_big = avro.read_avro_polars_arrow(big, "big.avro")
big_calls = len(calls)
again_small = avro.read_avro_polars_arrow(small, "small.avro")
print(json.dumps({
    "early": early,
    "after_big": "datafusion" in sys.modules and big_calls > 0,
    "small_by_datafusion": len(calls) > big_calls,
    "equal": first_small.equals(again_small) and first_big.equals(again_big),
}))
"""


def test_datafusion_is_loaded_only_once_it_pays_for_itself() -> None:
    """A small plan decodes with polars, never importing DataFusion (0.2-0.5 s).

    Past DATAFUSION_AFTER_BYTES a process decodes files of DATAFUSION_MIN_BYTES and more with
    DataFusion, to the same table; smaller ones (manifest lists) stay polars'.
    """
    import json
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _GATE_CHILD],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "early": [False, 0],
        "after_big": True,
        "small_by_datafusion": False,
        "equal": True,
    }, done.stderr
