"""Puffin footers and deletion-vector-v1 blobs: hand-built files, Spark's DVs, corruption."""

from __future__ import annotations

import json
import struct
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from pyroaring import BitMap64

import icecore
from icecore.errors import InvalidMetadata, NotFound, Unsupported
from icecore.io import FileIO
from icecore.manifest import DataFile, DataFileContent
from icecore.scan.puffin import (
    deletion_vector_positions,
    read_deletion_vector,
    read_footer,
    serialize_deletion_vector,
)
from tests.icecore.scan.helpers import live_entries

MAGIC = b"PFA1"
POSITIONS = [0, 3, 70_000, 2**32 + 5]  # two 32-bit keys, as the spec's 64-bit layout has


def hand_blob(positions: list[int]) -> bytes:
    """A deletion-vector-v1 blob built from the Puffin spec's description, byte by byte."""
    by_key: dict[int, list[int]] = defaultdict(list)
    for p in positions:
        by_key[p >> 32].append(p & 0xFFFFFFFF)
    vector = struct.pack("<Q", len(by_key))
    for key in sorted(by_key):
        # a 32-bit Roaring bitmap in the portable format (RoaringFormatSpec): no run
        # containers, so cookie 12346, the container count, key/cardinality-1 pairs,
        # container offsets, then array containers of sorted uint16 values
        containers: dict[int, list[int]] = defaultdict(list)
        for low in sorted(by_key[key]):
            containers[low >> 16].append(low & 0xFFFF)
        body = struct.pack("<II", 12346, len(containers))
        for high, values in sorted(containers.items()):
            body += struct.pack("<HH", high, len(values) - 1)
        offset = len(body) + 4 * len(containers)
        for values in (v for _, v in sorted(containers.items())):
            body += struct.pack("<I", offset)
            offset += 2 * len(values)
        for _, values in sorted(containers.items()):
            body += struct.pack(f"<{len(values)}H", *values)
        vector += struct.pack("<I", key) + body
    payload = bytes([0xD1, 0xD3, 0x39, 0x64]) + vector
    return struct.pack(">I", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))


def puffin_file(path: Path, blob: bytes, flags: int = 0, footer: bytes | None = None) -> DataFile:
    meta = {
        "blobs": [
            {
                "type": "deletion-vector-v1",
                "fields": [2147483645],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": 4,
                "length": len(blob),
                "properties": {"referenced-data-file": "data.parquet", "cardinality": "4"},
            }
        ],
        "properties": {"created-by": "hand"},
    }
    payload = footer if footer is not None else json.dumps(meta).encode()
    content = MAGIC + blob + MAGIC + payload + struct.pack("<iI", len(payload), flags) + MAGIC
    path.write_bytes(content)
    return DataFile(
        content=DataFileContent.POSITION_DELETES,
        file_path=str(path),
        file_format="PUFFIN",
        spec_id=0,
        partition={},
        record_count=len(POSITIONS),
        file_size_in_bytes=len(content),
        referenced_data_file="data.parquet",
        content_offset=4,
        content_size_in_bytes=len(blob),
    )


def test_hand_built_deletion_vector(tmp_path: Path) -> None:
    blob = hand_blob(POSITIONS)
    assert serialize_deletion_vector(POSITIONS) == blob  # pyroaring writes the same bytes
    f = puffin_file(tmp_path / "dv.puffin", blob)
    footer = read_footer(FileIO(), f.file_path)
    assert footer.properties == {"created-by": "hand"}
    (meta,) = footer.blobs
    assert (meta.type, meta.offset, meta.length) == ("deletion-vector-v1", 4, len(blob))
    assert meta.properties["referenced-data-file"] == "data.parquet"
    assert read_deletion_vector(FileIO(), f) == BitMap64(POSITIONS)
    assert list(deletion_vector_positions(FileIO(), f)) == POSITIONS


@pytest.mark.parametrize(
    ("offset", "message"),
    [(4 + 4 + 8 + 2, "CRC-32"), (4 + 4, "magic"), (4 + 1, "declares")],
)
def test_corrupt_blob(tmp_path: Path, offset: int, message: str) -> None:
    f = puffin_file(tmp_path / "dv.puffin", hand_blob(POSITIONS))
    data = bytearray(Path(f.file_path).read_bytes())
    data[offset] ^= 0x40
    Path(f.file_path).write_bytes(bytes(data))
    with pytest.raises(InvalidMetadata, match=f"dv.puffin.*{message}"):
        read_deletion_vector(FileIO(), f)


def test_position_with_the_sign_bit_is_refused(tmp_path: Path) -> None:
    # Puffin spec: "positive 64-bit positions (the most significant bit must be 0)". Such a
    # vector once reached the reader and failed there with an Arrow overflow; it is corrupt.
    f = puffin_file(tmp_path / "dv.puffin", hand_blob([1, 2**63 + 7]))
    with pytest.raises(InvalidMetadata, match=r"dv.puffin.*9223372036854775815.*most significant"):
        read_deletion_vector(FileIO(), f)
    edge = puffin_file(tmp_path / "edge.puffin", hand_blob([0, 1, 2, 2**63 - 1]))
    assert list(deletion_vector_positions(FileIO(), edge)) == [0, 1, 2, 2**63 - 1]


def test_truncated_and_missing(tmp_path: Path) -> None:
    f = puffin_file(tmp_path / "dv.puffin", hand_blob(POSITIONS))
    Path(f.file_path).write_bytes(Path(f.file_path).read_bytes()[:20])
    with pytest.raises(InvalidMetadata, match="dv.puffin.*truncated"):
        read_deletion_vector(FileIO(), f)
    with pytest.raises(InvalidMetadata, match="dv.puffin"):
        read_footer(FileIO(), f.file_path)
    with pytest.raises(NotFound, match="nothing.puffin"):
        read_footer(FileIO(), str(tmp_path / "nothing.puffin"))


def test_footer_errors(tmp_path: Path) -> None:
    blob = hand_blob(POSITIONS)
    compressed = puffin_file(tmp_path / "lz4.puffin", blob, flags=1)
    with pytest.raises(Unsupported, match="lz4.puffin.*compressed"):
        read_footer(FileIO(), compressed.file_path)
    not_json = puffin_file(tmp_path / "bad.puffin", blob, footer=b"{nope")
    with pytest.raises(InvalidMetadata, match="bad.puffin.*not JSON"):
        read_footer(FileIO(), not_json.file_path)
    wrong = puffin_file(tmp_path / "magic.puffin", blob)
    data = bytearray(Path(wrong.file_path).read_bytes())
    data[-1] ^= 0xFF
    Path(wrong.file_path).write_bytes(bytes(data))
    with pytest.raises(InvalidMetadata, match="magic.puffin.*magic"):
        read_footer(FileIO(), wrong.file_path)


def test_cardinality_must_match_the_manifest(tmp_path: Path) -> None:
    f = puffin_file(tmp_path / "dv.puffin", hand_blob(POSITIONS))
    from dataclasses import replace

    with pytest.raises(InvalidMetadata, match="dv.puffin.*holds 4 positions.*says 5"):
        read_deletion_vector(FileIO(), replace(f, record_count=5))


@pytest.mark.spark
def test_spark_deletion_vectors_match_position_deletes_table(
    spark: Any, demo_warehouse: Path
) -> None:
    table = icecore.load_table(f"{demo_warehouse}::demo.events_v3")
    _, deletes = live_entries(table)
    ours: set[tuple[str, int]] = set()
    for e in deletes:
        d = e.data_file
        assert d.file_format == "PUFFIN" and d.referenced_data_file is not None
        footer = read_footer(table.io, d.file_path)
        assert any(b.offset == d.content_offset for b in footer.blobs)
        ours.update((d.referenced_data_file, p) for p in deletion_vector_positions(table.io, d))
    expected = {
        (r.file_path, r.pos)
        for r in spark.sql(
            "SELECT file_path, pos FROM icecore.demo.events_v3.position_deletes"
        ).collect()
    }
    assert ours == expected
