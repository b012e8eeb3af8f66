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
