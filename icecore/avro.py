"""Avro object container files -> records or Arrow columns (the only fastavro importer).

Manifest lists and manifests are Avro object container files ("Manifests", "Manifest
Lists", "Appendix A: Avro"). Two readers share one header parse:

- :func:`read_avro` decodes every record as a Python dict (small files, per-entry logic).
- :func:`read_avro_arrow` decodes to a :class:`pyarrow.Table` for bulk planning (see
  docs/ARCHITECTURE.md "Performance"). Today it goes through fastavro; the signature is what a
  faster columnar decoder will keep.
- :func:`read_avro_polars_arrow` decodes to Arrow through polars' native Avro reader, about
  6x faster than fastavro on manifests; it falls back to :func:`read_avro_arrow` for files
  polars refuses (an empty file, or a damaged one, which that path then reports).

Both raise :class:`~icecore.errors.InvalidMetadata` naming the file for anything that is not
a complete, well-formed container file: a bad magic, a header that does not parse, a block
cut short, a wrong sync marker. They never return part of a file.

A block's object count is checked against its bytes before any decoder sees it
(:func:`_check_blocks`): polars sizes its columns by the declared count, so a ~1 KB file
declaring 4e9 objects would make it allocate gigabytes and abort the process (a Rust
allocation failure is not an exception). Every object takes at least as many bytes as the
smallest value of the writer's schema (at least one), so a block declaring more objects than
its decoded bytes can hold is refused with one sentence; a file whose blocks cannot be checked
(an irregular framing, a codec other than null, deflate or snappy) is decoded record by record.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import sys
import tempfile
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icecore.errors import InvalidMetadata
from icecore.io import FileIO, shown

MAGIC = b"Obj\x01"
"""The first four bytes of every Avro object container file."""

_SYNC_SIZE = 16
_UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class AvroFile:
    """A decoded Avro object container file.

    Attributes:
        path: where the bytes came from (used in error messages).
        metadata: the header key/values as text, ``avro.*`` keys included (for manifests:
            ``schema``, ``partition-spec``, ``partition-spec-id``, ``format-version``,
            ``content``; for manifest lists: ``snapshot-id``, ``sequence-number``, ...).
        schema: the writer's Avro schema, parsed from ``avro.schema``.
        records: every record, in file order, as dicts keyed by Avro field name.
    """

    path: str
    metadata: Mapping[str, str]
    schema: Mapping[str, Any]
    records: list[dict[str, Any]]


def _bad(path: str, what: str) -> InvalidMetadata:
    return InvalidMetadata(f"Avro file {shown(path)} is corrupt or truncated: {what}.")


def _check_magic(data: bytes, path: str) -> None:
    if len(data) < len(MAGIC) + _SYNC_SIZE:
        raise _bad(path, f"only {len(data)} bytes, too short for an Avro header")
    if data[: len(MAGIC)] != MAGIC:
        raise _bad(path, f"bad magic {data[:4]!r} (expected {MAGIC!r}); not an Avro file")


def _text_metadata(raw: Mapping[str, Any], path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError as e:
                raise _bad(path, f"header value {key!r} is not UTF-8") from e
        out[str(key)] = str(value)
    return out


def _open(data: bytes, path: str) -> tuple[Any, dict[str, str], dict[str, Any]]:
    import fastavro  # ~7 MiB: loaded by the first Avro file read, not by import

    _check_magic(data, path)
    try:
        reader = fastavro.reader(io.BytesIO(data))
    except Exception as e:  # fastavro raises ValueError, EOFError, KeyError, ... on bad headers
        raise _bad(path, f"unreadable header ({type(e).__name__}: {e})") from e
    metadata = _text_metadata(reader.metadata, path)
    schema = reader.writer_schema
    if not isinstance(schema, dict):
        raise _bad(path, "the header's schema is not a record")
    return reader, metadata, schema


def read_avro(data: bytes, path: str) -> AvroFile:
    """Decode a whole Avro object container file into dicts ("Appendix A: Avro").

    Logical types come back as fastavro maps them (``date`` as :class:`datetime.date`,
    ``timestamp-micros`` as :class:`datetime.datetime`, decimals as :class:`~decimal.Decimal`);
    maps stored as arrays of key/value records stay lists of ``{"key", "value"}`` dicts.

    Args:
        data: the file's bytes.
        path: the file's location, for error messages.

    Raises:
        InvalidMetadata: the bytes are not one complete, well-formed container file.
    """
    reader, metadata, schema = _open(data, path)
    _counts_checked(data, path, metadata, schema)
    try:
        records = list(reader)
    except Exception as e:  # EOFError, zlib.error, ValueError (sync marker), struct errors
        raise _bad(path, f"{type(e).__name__}: {e}") from e
    _check_complete(reader, data, path)
    return AvroFile(path=path, metadata=metadata, schema=schema, records=records)


def _check_complete(reader: Any, data: bytes, path: str) -> None:
    """Fail when fastavro stopped before the end of the bytes (trailing garbage)."""
    fo = getattr(reader, "fo", None)
    if fo is None or not hasattr(fo, "tell"):
        return
    consumed = fo.tell()
    if consumed != len(data):
        raise _bad(path, f"decoding stopped at byte {consumed} of {len(data)}")


def write_avro(
    schema: Mapping[str, Any], records: Sequence[Mapping[str, Any]], metadata: Mapping[str, str]
) -> bytes:
    """Encode ``records`` as one Avro object container file, deflate-compressed ("Appendix A").

    Iceberg Java writes manifests and manifest lists with the deflate codec; extra schema
    attributes (``field-id``, ``element-id``, ...) are kept in the written ``avro.schema``.

    Args:
        schema: the writer's Avro record schema.
        records: dicts keyed by Avro field name, values as :func:`read_avro` returns them.
        metadata: header key/values (``format-version``, ``snapshot-id``, ...).

    Raises:
        InvalidMetadata: a record does not fit the schema.
    """
    import fastavro  # loaded by the first write only

    out = io.BytesIO()
    try:
        fastavro.writer(
            out,
            fastavro.parse_schema(dict(schema)),
            records,
            codec="deflate",
            metadata=dict(metadata),
        )
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise InvalidMetadata(f"Cannot encode an Avro file: {type(e).__name__}: {e}.") from e
    return out.getvalue()


def read_avro_file(file_io: FileIO, path: str) -> AvroFile:
    """Read ``path`` through ``file_io`` and decode it with :func:`read_avro`.

    Raises:
        NotFound: the file does not exist.
        InvalidMetadata: the file is corrupt or truncated.
    """
    return read_avro(file_io.read(path), path)


def read_avro_metadata(data: bytes, path: str) -> dict[str, str]:
    """Only the header key/values of an Avro container file, without decoding blocks.

    Raises:
        InvalidMetadata: the header is not well formed.
    """
    return _open(data, path)[1]


# ---------------------------------------------------------------------------------------
# Columnar


def _union_branch(avro_type: Any) -> tuple[Any, bool]:
    """The non-null branch of an optional union, and whether it was nullable."""
    if isinstance(avro_type, list):
        branches = [b for b in avro_type if b != "null"]
        if len(branches) != 1:
            raise InvalidMetadata(f"union {avro_type!r} is not an optional type")
        return branches[0], len(branches) != len(avro_type)
    return avro_type, False


def _is_kv_map(avro_type: Any) -> bool:
    return (
        isinstance(avro_type, dict)
        and avro_type.get("type") == "array"
        and avro_type.get("logicalType") == "map"
        and isinstance(avro_type.get("items"), dict)
        and [f["name"] for f in avro_type["items"].get("fields", [])] == ["key", "value"]
    )


def _field(name: str, avro_type: Any, field_id: int | None) -> pa.Field:
    inner, nullable = _union_branch(avro_type)
    metadata = {b"field_id": str(field_id).encode()} if field_id is not None else None
    return pa.field(name, _arrow_type(inner), nullable=nullable, metadata=metadata)


def _arrow_type(avro_type: Any) -> pa.DataType:
    if isinstance(avro_type, str):
        primitive = {
            "null": pa.null(),
            "boolean": pa.bool_(),
            "int": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "bytes": pa.binary(),
            "string": pa.string(),
        }.get(avro_type)
        if primitive is None:
            raise InvalidMetadata(f"named Avro type reference {avro_type!r} is not supported")
        return primitive
    if isinstance(avro_type, list):
        inner, _ = _union_branch(avro_type)
        return _arrow_type(inner)
    kind = avro_type.get("type")
    logical = avro_type.get("logicalType")
    if kind == "record":
        return pa.struct(
            [_field(f["name"], f["type"], f.get("field-id")) for f in avro_type["fields"]]
        )
    if kind == "array":
        if _is_kv_map(avro_type):
            key_f, value_f = avro_type["items"]["fields"]
            key_t, _ = _union_branch(key_f["type"])
            return pa.map_(
                _field("key", key_t, key_f.get("field-id")).with_nullable(False),
                _field("value", value_f["type"], value_f.get("field-id")),
            )
        return pa.list_(_field("element", avro_type["items"], avro_type.get("element-id")))
    if kind == "map":
        return pa.map_(pa.string(), _field("value", avro_type["values"], avro_type.get("value-id")))
    if logical == "decimal":
        return pa.decimal128(int(avro_type["precision"]), int(avro_type.get("scale", 0)))
    if logical == "date" and kind == "int":
        return pa.date32()
    if logical == "time-micros" and kind == "long":
        return pa.time64("us")
    if logical == "timestamp-micros" and kind == "long":
        return pa.timestamp("us", tz="UTC")
    if logical == "local-timestamp-micros" and kind == "long":
        return pa.timestamp("us")
    if kind == "fixed":
        return pa.binary(int(avro_type["size"]))
    return _arrow_type(kind)


def _to_arrow_value(value: Any, arrow_type: pa.DataType) -> Any:
    """Reshape one decoded value for ``pa.array`` (maps become key/value tuples)."""
    if value is None:
        return None
    if pa.types.is_map(arrow_type):
        if isinstance(value, dict):
            items = list(value.items())
        else:
            items = [(kv["key"], kv["value"]) for kv in value]
        item_t = arrow_type.item_type
        return [(k, _to_arrow_value(v, item_t)) for k, v in items]
    if pa.types.is_struct(arrow_type):
        return {f.name: _to_arrow_value(value.get(f.name), f.type) for f in arrow_type}
    if pa.types.is_list(arrow_type):
        element_t = arrow_type.value_type
        return [_to_arrow_value(v, element_t) for v in value]
    return value


def arrow_schema(avro_schema: Mapping[str, Any]) -> pa.Schema:
    """The Arrow schema for an Avro record schema; field ids kept as ``field_id`` metadata."""
    struct = _arrow_type(dict(avro_schema))
    return pa.schema(list(struct))


def read_avro_arrow(data: bytes, path: str, columns: Sequence[str] | None = None) -> pa.Table:
    """Decode an Avro container file to an Arrow table, one column per top-level field.

    Records become struct columns, arrays lists, key/value arrays with logical type ``map``
    Arrow maps; field ids are kept as ``field_id`` field metadata. An empty file gives an
    empty table with the full schema.

    Args:
        data: the file's bytes.
        path: the file's location, for error messages.
        columns: top-level field names to keep (all when None).

    Raises:
        InvalidMetadata: the bytes are not one complete, well-formed container file, or the
            schema uses a union other than ``[null, T]``.
    """
    avro = read_avro(data, path)
    try:
        schema = arrow_schema(avro.schema)
    except (InvalidMetadata, ValueError, TypeError, KeyError, pa.ArrowException) as e:
        raise InvalidMetadata(f"Avro file {shown(path)} has an unsupported schema: {e}") from e
    if columns is not None:
        missing = [c for c in columns if schema.get_field_index(c) < 0]
        if missing:
            raise InvalidMetadata(f"Avro file {shown(path)} has no column(s) {missing}.")
        schema = pa.schema([schema.field(c) for c in columns])
    arrays = []
    for f in schema:
        values = [_to_arrow_value(r.get(f.name), f.type) for r in avro.records]
        try:
            arrays.append(pa.array(values, type=f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise InvalidMetadata(
                f"Avro file {shown(path)}: column {f.name!r} does not fit its schema: {e}"
            ) from e
    return pa.Table.from_arrays(arrays, schema=schema)


HEADER_METADATA_PREFIX = b"avro.header."
"""Prefix of the header keys :func:`read_avro_polars_arrow` copies into the schema metadata."""


_DATAFUSION = threading.local()
_SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _polars_shape(t: pa.DataType) -> pa.DataType:
    """DataFusion's Arrow type for an Avro type, as polars gives it (large, nullable)."""
    if pa.types.is_string(t):
        return pa.large_string()
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.large_binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.large_list(pa.field("item", _polars_shape(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _polars_shape(f.type)) for f in t])
    if pa.types.is_time64(t):
        return pa.time64("ns")
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC") if t.unit == "us" else pa.int64()
    return t


LeaveOut = Mapping[str, Collection[str]]
"""Children of top-level struct columns a caller does not want decoded, by column name:
``{"data_file": ("lower_bounds", ...)}`` (see :func:`read_avro_many`)."""


def _left_out(schema: pa.Schema, leave_out: LeaveOut) -> pa.Schema:
    """``schema`` without the struct children ``leave_out`` names (schema metadata kept)."""
    fields: list[pa.Field] = []
    for f in schema:
        drop = leave_out.get(f.name)
        if drop and pa.types.is_struct(f.type):
            f = f.with_type(pa.struct([c for c in f.type if c.name not in drop]))
        fields.append(f)
    return pa.schema(fields, metadata=schema.metadata)


def _leave_out(table: pa.Table, leave_out: LeaveOut | None) -> pa.Table:
    """A decoded table without the struct children ``leave_out`` names (cast: no copy)."""
    if not leave_out:
        return table
    schema = _left_out(table.schema, leave_out)
    return table if schema.equals(table.schema) else table.cast(schema)


def _decode_datafusion(data: bytes, leave_out: LeaveOut | None = None) -> pa.Table | None:
    """A container file decoded by DataFusion's Avro reader, in polars' shapes; None: refused.

    DataFusion (the ``datafusion`` package) decodes Iceberg manifests 4-5x faster than
    polars: merged manifests of the 1,000,000-file bench table, 0.9-1.3 ms against 4.9 ms
    per manifest on this machine (bench/plan_bench.results.md, 2026-11-28). Over every
    manifest and manifest list of the demo warehouse and the test data, its tables cast to
    polars' types are equal to polars' own, value for value; it refuses an empty partition
    struct (unpartitioned manifests) and anything it cannot read, and then polars decodes.
    It reads files, not buffers: the bytes go to a scratch file (``/dev/shm`` when there is
    one) that is removed at once. Its Rust panics arrive as ``BaseException``: caught here.
    Children in ``leave_out`` are skipped by the reader, not decoded (a manifest's metrics
    maps are most of its bytes: a plan without a filter decodes ~20% faster without them).
    """
    try:
        import datafusion
    except ImportError:  # an install without it: polars decodes
        return None
    ctx = getattr(_DATAFUSION, "ctx", None)
    if ctx is None:
        ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))
        _DATAFUSION.ctx = ctx
    fd, scratch = tempfile.mkstemp(prefix="icecore-", suffix=".avro", dir=_SCRATCH)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if leave_out:
            schema = _left_out(ctx.read_avro(scratch).schema(), leave_out)
            table = ctx.read_avro(scratch, schema=schema).to_arrow_table()
        else:
            table = ctx.read_avro(scratch).to_arrow_table()
        shaped = pa.schema([pa.field(f.name, _polars_shape(f.type)) for f in table.schema])
        return table.cast(shaped)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 - DataFusion's errors and panics: polars decodes
        return None
    finally:
        os.unlink(scratch)


DATAFUSION_AFTER_BYTES = 2 << 20
"""Avro bytes a process decodes with polars before DataFusion is worth loading.

Importing ``datafusion`` costs 0.22-0.46 s here (it loads a 120 MB library and pandas), and
it saves ~4 ms per 44 KB manifest: about what 2 MiB of manifests save. A small table's plan
(the read bench's: a few manifests) never pays it; a big plan pays it once it has decoded
that much; decode workers, made only for big plans, load it at once (:func:`prefer_datafusion`).
"""

DATAFUSION_MIN_BYTES = 24 << 10
"""Smaller files are decoded by polars: DataFusion's ~2 ms per call (a scratch file, a plan)
is more than polars takes for them. Measured here, per call: a 4.7 KB manifest list, polars
0.29 ms against 1.31 ms; an 11.7 KB manifest of 50 files, 0.73 against 2.61 ms; a 38.5 KB
manifest of 500 files, 3.33 against 2.41 ms; a 172 KB one, 11.7 against 9.4 ms. Merged
manifests (:func:`read_avro_many`) are one call, so big plans stay DataFusion's.
"""

_decoded = [0]
"""Avro bytes :func:`_decode_blocks` was given in this process (approximate across threads)."""


def prefer_datafusion() -> None:
    """Decode with DataFusion from the first file on (a process that decodes many)."""
    _decoded[0] = max(_decoded[0], DATAFUSION_AFTER_BYTES)


def _datafusion_worth_it(size: int) -> bool:
    """Whether to decode ``size`` bytes with DataFusion.

    Only a file big enough (:data:`DATAFUSION_MIN_BYTES`), in a process where DataFusion is
    loaded already or has decoded enough to pay for loading it (:data:`DATAFUSION_AFTER_BYTES`).
    """
    _decoded[0] += size
    if size < DATAFUSION_MIN_BYTES:
        return False
    return "datafusion" in sys.modules or _decoded[0] > DATAFUSION_AFTER_BYTES


def _decode_blocks(data: bytes, leave_out: LeaveOut | None = None) -> pa.Table | None:
    """The rows of a checked container file in polars' shapes: DataFusion, else polars.

    DataFusion where it pays (:func:`_datafusion_worth_it`). None when
    both refuse (the caller decodes record by record, or refuses the file). Without the
    children ``leave_out`` names (DataFusion skips them; polars decodes and drops them).
    """
    if _datafusion_worth_it(len(data)):
        table = _decode_datafusion(data, leave_out)
        if table is not None:
            return table
    # ~0.1 s and ~25 MiB: paid by the first file polars decodes (a decode worker, which
    # prefers DataFusion, never loads it).
    import polars as pl

    try:
        return _leave_out(pl.read_avro(io.BytesIO(data)).to_arrow(), leave_out)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError):
        return None


def read_avro_polars_arrow(data: bytes, path: str, leave_out: LeaveOut | None = None) -> pa.Table:
    """Decode an Avro container file to Arrow in polars' shapes ("Appendix A: Avro").

    The blocks are decoded by DataFusion when it is installed (:func:`_decode_datafusion`,
    several times faster on manifests), else by polars' native reader. The header is parsed
    (and checked) with fastavro first: neither reader validates header values, and neither
    keeps the header nor Avro ``field-id`` attributes. Every header key is copied into the
    table's schema metadata as ``avro.header.<key>`` (``avro.schema`` included), so callers
    can match columns to field ids by name.

    Polars' shapes differ from :func:`read_avro_arrow`: strings and binaries are large, maps
    stored as key/value arrays are ``large_list<struct<key, value>>``, ``time-micros`` is
    ``time64[ns]``, ``uuid`` and ``fixed`` are plain (large) binary, ``timestamp-nanos`` is
    ``int64``, ``date`` is ``date32``, ``timestamp-micros`` is ``timestamp[us, UTC]`` (also
    when ``adjust-to-utc`` is false; the stored microseconds are the same), decimals are
    ``decimal128``.

    When polars refuses the blocks (it errors on a file without blocks, and raises or panics
    on damaged data), the file is decoded again with :func:`read_avro_arrow`, which either
    returns the table (same schema metadata) or raises :class:`InvalidMetadata`.

    Args:
        data: the file's bytes.
        path: the file's location, for error messages.
        leave_out: struct children not to decode (:data:`LeaveOut`): absent from the table.

    Raises:
        InvalidMetadata: the bytes are not one complete, well-formed container file.
    """
    _, metadata, schema = _open(data, path)
    # Unchecked counts are decoded record by record: nothing is sized by a count.
    checked = _counts_checked(data, path, metadata, schema)
    table = _decode_blocks(data, leave_out) if checked else None
    if table is None:
        table = _leave_out(read_avro_arrow(data, path), leave_out)
    header = {HEADER_METADATA_PREFIX + k.encode(): v.encode() for k, v in metadata.items()}
    return table.replace_schema_metadata(header)


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro ``long`` (zig-zag varint) at ``pos``, and the position after it."""
    shift = result = 0
    for _ in range(10):
        byte = data[pos]  # IndexError past the end: the caller treats the file as unframed
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise ValueError("an Avro long longer than 10 bytes")


@dataclass(frozen=True, slots=True)
class _Framing:
    """Where an Avro container file's header ends and its blocks are, as written.

    Attributes:
        header: the header's bytes, sync marker excluded (equal headers: same schema,
            codec and metadata).
        blocks: each block's bytes, its object count and size prefix included, sync excluded.
        rows: objects in all blocks.
        spans: each block's object count, and where its (compressed) objects start and end
            in the file; for a file that is not :attr:`complete`, also the block where its
            framing breaks (cut at the file's end), which a decoder would still inflate.
        complete: whether the file is framed exactly as written; otherwise :attr:`blocks`
            and :attr:`rows` hold the blocks before the break.
    """

    header: bytes
    blocks: list[bytes]
    rows: int
    spans: list[tuple[int, int, int]]
    complete: bool = True


def _framing(data: bytes) -> _Framing | None:
    """The header and blocks of a container file; None when its header is irregular.

    Only the framing is read (no block is decompressed or decoded). A file whose blocks are
    not exactly as the format writes them (a block cut short, a wrong sync marker, bytes
    after the last block, an empty block) is not :attr:`~_Framing.complete`: it is left to
    the reader of single files, which says what is wrong with it.
    """
    try:
        if data[: len(MAGIC)] != MAGIC:
            return None
        pos = len(MAGIC)
        while True:  # the header's metadata map, in blocks of pairs
            count, pos = _long(data, pos)
            if count == 0:
                break
            if count < 0:
                count = -count
                _, pos = _long(data, pos)
            for _ in range(2 * count):
                size, pos = _long(data, pos)
                if size < 0:
                    return None
                pos += size
        header, sync = data[:pos], data[pos : pos + _SYNC_SIZE]
        if len(sync) != _SYNC_SIZE:
            return None
        pos += _SYNC_SIZE
        blocks: list[bytes] = []
        spans: list[tuple[int, int, int]] = []
        rows = 0
        while pos < len(data):
            start = pos
            try:
                count, pos = _long(data, pos)
                size, pos = _long(data, pos)
            except (IndexError, ValueError):
                return _Framing(header, blocks, rows, spans, complete=False)
            end = pos + size
            if count <= 0 or size <= 0 or data[end : end + _SYNC_SIZE] != sync:
                if count > 0 and size > 0:
                    spans.append((count, pos, min(end, len(data))))
                return _Framing(header, blocks, rows, spans, complete=False)
            blocks.append(data[start:end])
            spans.append((count, pos, end))
            rows += count
            pos = end + _SYNC_SIZE
        return _Framing(header, blocks, rows, spans)
    except (IndexError, ValueError):
        return None


_MERGED_SYNC = b"icecore-merged!!"
"""The sync marker of container files put together from several (any 16 bytes do)."""


@dataclass(frozen=True, slots=True)
class Decoded:
    """One file's table from :func:`read_avro_many`, and where it came from.

    Attributes:
        table: the file's rows (:func:`read_avro_polars_arrow`'s answer).
        merged: the table of every file decoded together with it, when it was (its rows
            are ``merged.slice(start, table.num_rows)``): consecutive files of one merge are
            consecutive rows of it, which a caller can use whole instead of concatenating
            (and then copying) the slices.
        start: where :attr:`table`'s rows start in :attr:`merged`.
    """

    table: pa.Table
    merged: pa.Table | None = None
    start: int = 0


def read_avro_many(
    files: Sequence[tuple[bytes, str]], leave_out: LeaveOut | None = None
) -> list[Decoded | Exception]:
    """:func:`read_avro_polars_arrow` of each ``(bytes, path)``, decoded together where alike.

    Polars' reader has a fixed cost per file (a manifest of a few hundred entries spends
    about a tenth of its decode on it), so files whose headers are equal (the same
    writer's schema, codec and metadata: the manifests of one table and spec) are decoded
    as one: their blocks, still compressed, are put one after another behind the shared
    header, and the decoded rows cut back into each file's. The answer for each file is
    exactly :func:`read_avro_polars_arrow`'s: a file whose framing is not exactly as
    written, or a group polars refuses, is read alone by it, which raises what it raises.
    ``leave_out``: struct children not to decode, as there.
    """
    out: list[Decoded | Exception | None] = [None] * len(files)
    groups: dict[bytes, list[tuple[int, _Framing]]] = {}
    for i, (data, _) in enumerate(files):
        framing = _framing(data)
        if framing is not None and framing.complete and framing.blocks:
            groups.setdefault(framing.header, []).append((i, framing))
    for header, members in groups.items():
        if len(members) < 2:
            continue
        try:  # the header every file of the group shares
            _, metadata, schema = _open(*files[members[0][0]])
        except InvalidMetadata:
            continue
        try:
            floor = _object_floor(metadata, schema, files[members[0][0]][1])
        except InvalidMetadata:
            continue  # each is read alone, and refused alone
        checked = []
        for i, framing in members:
            try:
                if _check_blocks(files[i][0], files[i][1], framing, *floor):
                    checked.append((i, framing))
            except InvalidMetadata as e:
                out[i] = e
        if len(checked) < 2 or len(checked) < len(members):
            continue  # read alone: what each raises, or a record-by-record decode
        members = checked
        merged = _decode_merged(header, [f for _, f in members], files[members[0][0]], leave_out)
        if merged is not None:
            start = 0
            for i, framing in members:
                out[i] = Decoded(merged.slice(start, framing.rows), merged, start)
                start += framing.rows
    for i, (data, path) in enumerate(files):
        if out[i] is None:
            try:
                out[i] = Decoded(read_avro_polars_arrow(data, path, leave_out))
            except Exception as e:  # noqa: BLE001 - the caller's to raise, for this file
                out[i] = e
    return [t for t in out if t is not None]


def _decode_merged(
    header: bytes,
    framings: Sequence[_Framing],
    first: tuple[bytes, str],
    leave_out: LeaveOut | None = None,
) -> pa.Table | None:
    """The rows of several files with this header, decoded at once (None: refused).

    The rows are one file's after another's, in the order of ``framings``.
    """
    try:
        _, metadata, _ = _open(*first)  # the header every file of the group shares
    except InvalidMetadata:
        return None
    parts = [header, _MERGED_SYNC]
    for framing in framings:
        for block in framing.blocks:
            parts.append(block)
            parts.append(_MERGED_SYNC)
    table = _decode_blocks(b"".join(parts), leave_out)
    if table is None:
        return None
    if table.num_rows != sum(f.rows for f in framings):
        return None
    header_metadata = {HEADER_METADATA_PREFIX + k.encode(): v.encode() for k, v in metadata.items()}
    return table.replace_schema_metadata(header_metadata)


_PRIMITIVE_BYTES = {
    "null": 0,
    "boolean": 1,
    "int": 1,
    "long": 1,
    "float": 4,
    "double": 8,
    "bytes": 1,
    "string": 1,
}
"""Fewest bytes a value of each primitive type is encoded in ("Binary Encoding": a varint
takes one byte at least, a string or bytes its length's varint)."""

_SCHEMA_DEPTH = 64
"""Below this nesting a schema's types count zero bytes (still a lower bound)."""

_SNAPPY_RATIO = 32
"""Snappy expands a block at most ~21 times (a 3-byte copy of 64 bytes); a snappy block
declaring more than this many times its bytes, plus :data:`_SNAPPY_SLACK`, is forged."""
_SNAPPY_SLACK = 64

MAX_DECODED_BYTES = 2**30
"""Most bytes one Avro file's blocks may decompress to (1 GiB): a manifest of Iceberg's 8 MiB
target decodes to tens of MiB, while a deflate bomb of a few MiB would make the decoders
allocate gigabytes and abort."""

_DEFLATE_RATIO = 1032
"""Deflate expands a stream at most ~1032 times (258-byte matches in a few bits each)."""

_INFLATE_STEP = 16 << 20
"""Bytes inflated at a time while counting a deflate block's decoded size."""


def _smallest(avro_type: Any, named: dict[str, int], depth: int = 0) -> int:
    """Fewest bytes any value of ``avro_type`` takes in Avro's binary encoding."""
    if depth > _SCHEMA_DEPTH:
        return 0
    if isinstance(avro_type, str):
        return _PRIMITIVE_BYTES.get(avro_type, named.get(avro_type, 0))
    if isinstance(avro_type, list):  # a union: the branch index, then the branch's value
        return 1 + min((_smallest(b, named, depth + 1) for b in avro_type), default=0)
    if not isinstance(avro_type, dict):
        return 0
    kind = avro_type.get("type")
    if kind == "record" or kind == "error":
        name = str(avro_type.get("name", ""))
        named.setdefault(name, 0)  # a record that holds itself counts it as zero inside
        size = sum(
            _smallest(f.get("type"), named, depth + 1)
            for f in avro_type.get("fields", [])
            if isinstance(f, dict)
        )
        named[name] = size
        return size
    if kind == "fixed":
        fixed = avro_type.get("size")
        return fixed if isinstance(fixed, int) and fixed > 0 else 0
    if kind in ("enum", "array", "map"):  # an index, or a block count (0 ends it)
        return 1
    return _smallest(kind, named, depth + 1)


def _object_floor(
    metadata: Mapping[str, str], schema: Mapping[str, Any], path: str
) -> tuple[str, int]:
    """The file's codec, and the fewest bytes one of its objects takes (one at least).

    Schemas whose objects may take no bytes (a record of nulls) do not hold Iceberg's
    manifests, manifest lists or data files; one byte is the floor for every file read.

    Raises:
        InvalidMetadata: an array's items or a map's values may take no bytes; the count of
            such a collection is bounded by nothing (4e9 nulls decode from five bytes).
    """
    named: dict[str, int] = {}
    floor = max(1, _smallest(dict(schema), named))
    if _empty_items(dict(schema), named):
        raise _bad(path, "an array or map in its schema holds values that take no bytes")
    return metadata.get("avro.codec", "null"), floor


def _empty_items(avro_type: Any, named: dict[str, int], depth: int = 0) -> bool:
    """Whether some array or map of ``avro_type`` has items that may take no bytes."""
    if depth > _SCHEMA_DEPTH or isinstance(avro_type, str):
        return False
    if isinstance(avro_type, list):
        return any(_empty_items(b, named, depth + 1) for b in avro_type)
    if not isinstance(avro_type, dict):
        return False
    kind = avro_type.get("type")
    if kind in ("array", "map"):
        items = avro_type.get("items" if kind == "array" else "values")
        return _smallest(items, dict(named)) == 0 or _empty_items(items, named, depth + 1)
    if kind in ("record", "error"):
        return any(
            _empty_items(f.get("type"), named, depth + 1)
            for f in avro_type.get("fields", [])
            if isinstance(f, dict)
        )
    return _empty_items(kind, named, depth + 1)


def _decoded_size(codec: str, block: memoryview, need: int) -> int | None:
    """A block's decoded size, counted up to ``need`` bytes; None: this codec is not counted.

    Only what answers the question is decompressed: a deflate block is inflated until
    ``need`` bytes came out (for a real block a small part of it).
    """
    if codec == "null":
        return len(block)
    if codec == "deflate":
        import zlib

        inflate = zlib.decompressobj(-15)  # raw deflate, as Avro writes it
        size, rest = 0, bytes(block)
        try:
            while size < need and not inflate.eof:
                out = len(inflate.decompress(rest, min(need - size, _INFLATE_STEP)))
                if not out and not inflate.unconsumed_tail:
                    break  # all input in, nothing more comes out: the block ends here
                size += out
                rest = inflate.unconsumed_tail
        except zlib.error:
            return None  # damaged: the decoder says so
        return size
    if codec == "snappy":  # the uncompressed length leads the stream (then 4 bytes of CRC)
        try:
            length, _ = _varint(block, 0)
        except (IndexError, ValueError):
            return None
        return length if length <= _SNAPPY_RATIO * len(block) + _SNAPPY_SLACK else -length
    return None


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned little-endian base-128 varint at ``pos`` (snappy's lengths)."""
    shift = result = 0
    for _ in range(10):
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise ValueError("a varint longer than 10 bytes")


def _check_blocks(data: bytes, path: str, framing: _Framing, codec: str, floor: int) -> bool:
    """Whether every block's object count fits its bytes (False: cannot be told).

    Raises:
        InvalidMetadata: a block declares more objects than its decoded bytes can hold.
    """
    view = memoryview(data)
    # Inflating everything costs about what decoding does: only a file whose blocks could
    # hold more than the bound is counted to its end (a manifest of up to ~1 MiB is not).
    whole = (
        codec == "deflate"
        and sum(end - start for _, start, end in framing.spans) * _DEFLATE_RATIO > MAX_DECODED_BYTES
    )
    total = 0
    for number, (count, start, end) in enumerate(framing.spans, 1):
        need = max(count * floor, MAX_DECODED_BYTES - total + 1) if whole else count * floor
        size = _decoded_size(codec, view[start:end], need)
        if size is None:
            return False
        if size < 0:
            raise _bad(
                path,
                f"block {number} claims to decompress {end - start} bytes to {-size}, more "
                "than snappy can",
            )
        total += size
        if total > MAX_DECODED_BYTES:
            raise _bad(
                path,
                f"its blocks decompress to more than {MAX_DECODED_BYTES // 2**20} MiB, the "
                "most decoded of one file",
            )
        if size < count * floor:
            raise _bad(
                path,
                f"block {number} declares {count} objects in {size} bytes, and each takes "
                f"{floor} or more",
            )
    return True


def _counts_checked(
    data: bytes, path: str, metadata: Mapping[str, str], schema: Mapping[str, Any]
) -> bool:
    """:func:`_check_blocks` of a whole file (False: irregular framing or codec unknown).

    The blocks of an irregular file are checked up to the break (and the broken one): the
    reader that then reports the damage still inflates them first.
    """
    floor = _object_floor(metadata, schema, path)
    framing = _framing(data)
    if framing is None:
        return False
    return _check_blocks(data, path, framing, *floor) and framing.complete


def datetime_to_micros(value: dt.datetime) -> int:
    """Microseconds from the epoch of a fastavro-decoded ``timestamp-micros`` value."""
    epoch = _UTC_EPOCH if value.tzinfo is not None else _NAIVE_EPOCH
    return (value - epoch) // _MICRO


def time_to_micros(value: dt.time) -> int:
    """Microseconds from midnight of a fastavro-decoded ``time-micros`` value."""
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
