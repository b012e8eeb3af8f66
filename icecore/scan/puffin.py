"""Puffin files and the v3 deletion vectors they hold (the only pyroaring importer).

Implements the Puffin spec's "File structure", "Footer structure" and "Footer Payload"
(uncompressed footers; an LZ4-compressed footer is :class:`Unsupported`), and its
``deletion-vector-v1`` blob type, which the latest table spec's "Deletion Vectors" uses:

    length (4 bytes, big-endian: magic + vector) | magic D1 D3 39 64 |
    vector (portable 64-bit Roaring bitmap) | CRC-32 of magic + vector (4 bytes, big-endian)

Every read goes through :class:`icecore.io.FileIO`; a deletion vector is read with one
ranged read at the manifest's ``content_offset``/``content_size_in_bytes``, without the
footer.
"""

from __future__ import annotations

import array
import json
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyroaring import BitMap64

from icecore.errors import InvalidMetadata, Unsupported
from icecore.io import FileIO
from icecore.manifest import DataFile

MAGIC = b"PFA1"
"""Puffin magic: 0x50 0x46 0x41 0x31, at the start of the file and around the footer."""

DV_MAGIC = bytes((0xD1, 0xD3, 0x39, 0x64))
"""Magic of a ``deletion-vector-v1`` blob."""

DELETION_VECTOR_V1 = "deletion-vector-v1"

_FOOTER_TAIL = 12  # FooterPayloadSize (4) + Flags (4) + Magic (4)
_FLAG_COMPRESSED = 0x01


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    """One ``BlobMetadata`` of a Puffin footer."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PuffinFooter:
    """A Puffin file's ``FileMetadata``: its blobs and properties."""

    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str] = field(default_factory=dict)


def _int(obj: Mapping[str, Any], key: str, path: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidMetadata(f"Puffin file {path} has a blob without an integer {key!r}.")
    return value


def _blob(obj: Any, path: str) -> BlobMetadata:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("type"), str):
        raise InvalidMetadata(f"Puffin file {path} has a blob without a 'type'.")
    fields = obj.get("fields", [])
    if not isinstance(fields, list):
        raise InvalidMetadata(f"Puffin file {path} has a blob whose 'fields' is not a list.")
    codec = obj.get("compression-codec")
    return BlobMetadata(
        type=obj["type"],
        fields=tuple(int(f) for f in fields),
        snapshot_id=_int(obj, "snapshot-id", path),
        sequence_number=_int(obj, "sequence-number", path),
        offset=_int(obj, "offset", path),
        length=_int(obj, "length", path),
        compression_codec=codec if isinstance(codec, str) else None,
        properties=dict(obj.get("properties") or {}),
    )


def read_footer(io: FileIO, path: str, file_size: int | None = None) -> PuffinFooter:
    """Read a Puffin file's footer (Puffin spec "Footer structure").

    Args:
        io: the table's FileIO.
        path: the Puffin file.
        file_size: its size when known (saves a call to ``io.info``).

    Raises:
        NotFound: the file does not exist.
        InvalidMetadata: a magic is wrong, the file is truncated, or the payload is not
            the JSON ``FileMetadata``.
        Unsupported: the footer payload is compressed.
    """
    size = file_size if file_size is not None else io.info(path).size
    if size < len(MAGIC) + len(MAGIC) + _FOOTER_TAIL:
        raise InvalidMetadata(f"Puffin file {path} is truncated ({size} bytes).")
    tail = io.read(path, size - _FOOTER_TAIL, size)
    if len(tail) != _FOOTER_TAIL:
        raise InvalidMetadata(f"Puffin file {path} is truncated (short footer read).")
    payload_size, flags = struct.unpack("<iI", tail[:8])
    if tail[8:] != MAGIC:
        raise InvalidMetadata(f"Puffin file {path} does not end with the Puffin magic.")
    footer_start = size - _FOOTER_TAIL - payload_size - len(MAGIC)
    if payload_size < 0 or footer_start < len(MAGIC):
        raise InvalidMetadata(
            f"Puffin file {path} has a footer payload size ({payload_size}) that does not fit "
            f"in its {size} bytes."
        )
    if io.read(path, 0, len(MAGIC)) != MAGIC:
        raise InvalidMetadata(f"Puffin file {path} does not start with the Puffin magic.")
    footer = io.read(path, footer_start, size - _FOOTER_TAIL)
    if footer[: len(MAGIC)] != MAGIC:
        raise InvalidMetadata(f"Puffin file {path} has no magic at the start of its footer.")
    if flags & _FLAG_COMPRESSED:
        raise Unsupported(
            f"Puffin file {path} has an LZ4-compressed footer, which Icecore cannot read yet."
        )
    try:
        meta = json.loads(footer[len(MAGIC) :].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidMetadata(f"Puffin file {path} has a footer that is not JSON: {e}.") from e
    if not isinstance(meta, Mapping) or not isinstance(meta.get("blobs"), list):
        raise InvalidMetadata(f"Puffin file {path} has a footer without a 'blobs' list.")
    return PuffinFooter(
        blobs=tuple(_blob(b, path) for b in meta["blobs"]),
        properties=dict(meta.get("properties") or {}),
    )


_SIGN_BIT = 1 << 63
"""Positions at or past this are negative as a signed long (Puffin: the MSB must be 0)."""


def deserialize_deletion_vector(blob: bytes, where: str) -> BitMap64:
    """Decode a ``deletion-vector-v1`` blob (Puffin spec) into a 64-bit Roaring bitmap.

    Args:
        blob: the blob's bytes, length prefix to CRC included.
        where: the file (and offset) the blob came from, for error messages.

    Raises:
        InvalidMetadata: the blob is truncated, its length, magic or CRC-32 is wrong, the
            bitmap cannot be decoded, or it holds a position with the most significant bit set.
    """
    if len(blob) < 12:
        raise InvalidMetadata(f"Deletion vector in {where} is truncated ({len(blob)} bytes).")
    (length,) = struct.unpack(">I", blob[:4])
    if length + 8 != len(blob):
        raise InvalidMetadata(
            f"Deletion vector in {where} declares {length} bytes of magic and vector, but the "
            f"blob has {len(blob) - 8} (truncated or a wrong content_size_in_bytes)."
        )
    body = blob[4 : 4 + length]
    if body[:4] != DV_MAGIC:
        raise InvalidMetadata(
            f"Deletion vector in {where} has magic {body[:4].hex()}, not {DV_MAGIC.hex()}."
        )
    (expected_crc,) = struct.unpack(">I", blob[4 + length :])
    actual_crc = zlib.crc32(body) & 0xFFFFFFFF
    if actual_crc != expected_crc:
        raise InvalidMetadata(
            f"Deletion vector in {where} fails its CRC-32 check "
            f"(stored {expected_crc:08x}, computed {actual_crc:08x})."
        )
    try:
        bitmap = BitMap64.deserialize(body[4:])
    except (ValueError, OverflowError) as e:
        raise InvalidMetadata(f"Deletion vector in {where} is not a Roaring bitmap: {e}.") from e
    if bitmap and bitmap.max() >= _SIGN_BIT:
        # "The vector supports positive 64-bit positions (the most significant bit must be
        # 0)": a row position is a signed long in every engine, so such a vector is corrupt.
        raise InvalidMetadata(
            f"Deletion vector in {where} holds position {bitmap.max()}, which has the most "
            "significant bit set (the Puffin spec allows only positive 64-bit positions)."
        )
    return bitmap


def read_deletion_vector(io: FileIO, delete_file: DataFile) -> BitMap64:
    """Read the deletion vector a manifest entry points at (latest spec "Deletion Vectors").

    Args:
        io: the table's FileIO.
        delete_file: a position delete entry in Puffin format, with ``content_offset`` and
            ``content_size_in_bytes``.

    Raises:
        NotFound: the Puffin file does not exist.
        InvalidMetadata: the entry lacks the blob's place, the file is shorter than that
            place, or the blob is corrupt; its cardinality differs from ``record_count``.
    """
    path = delete_file.file_path
    offset, size = delete_file.content_offset, delete_file.content_size_in_bytes
    if offset is None or size is None:
        raise InvalidMetadata(
            f"Deletion vector in {path} has no content_offset/content_size_in_bytes."
        )
    blob = io.read(path, offset, offset + size)
    where = f"{path} at offset {offset}"
    if len(blob) != size:
        raise InvalidMetadata(
            f"Deletion vector in {where} is truncated: read {len(blob)} of {size} bytes."
        )
    bitmap = deserialize_deletion_vector(blob, where)
    if len(bitmap) != delete_file.record_count:
        raise InvalidMetadata(
            f"Deletion vector in {where} holds {len(bitmap)} positions but its manifest "
            f"entry says {delete_file.record_count}."
        )
    return bitmap


def deletion_vector_positions(io: FileIO, delete_file: DataFile) -> array.array[int]:
    """The deleted positions of a deletion vector, ascending, as unsigned 64-bit integers."""
    bitmap = read_deletion_vector(io, delete_file)
    return array.array("Q", bitmap.to_array())


def serialize_deletion_vector(positions: BitMap64 | list[int]) -> bytes:
    """Encode positions as a ``deletion-vector-v1`` blob (for tests and writers)."""
    bitmap = positions if isinstance(positions, BitMap64) else BitMap64(positions)
    body = DV_MAGIC + bitmap.serialize()
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


__all__ = [
    "DELETION_VECTOR_V1",
    "BlobMetadata",
    "PuffinFooter",
    "deletion_vector_positions",
    "deserialize_deletion_vector",
    "read_deletion_vector",
    "read_footer",
    "serialize_deletion_vector",
]
