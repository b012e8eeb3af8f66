"""The ``bucket[N]`` transform and the spec's 32-bit hash (the only mmh3 importer).

Implements "Bucket Transform Details" and "Appendix B: 32-bit Hash Requirements": Murmur3
x86 32-bit, seed 0, over a per-type byte form; then ``(hash & Integer.MAX_VALUE) % N``.
Integers of every width hash as 8-byte little-endian longs so that promoting ``int`` to
``long`` keeps bucket values; nanosecond timestamps are floored to micros first so that
both precisions bucket alike.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import mmh3

from icecore.errors import InvalidMetadata, ValidationError
from icecore.transforms.base import Transform
from icecore.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from icecore.values import (
    date_to_days,
    decimal_to_unscaled,
    min_bytes_signed,
    time_to_micros,
)

if TYPE_CHECKING:
    import pyarrow as pa

_LONG = struct.Struct("<q")
_INT_MAX = 0x7FFFFFFF
_CANONICAL_NAN_BITS = 0x7FF8000000000000

BUCKETABLE = (
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    TimestampNanoType,
    TimestamptzNanoType,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)
"""Source types of ``bucket[N]`` (spec "Partition Transforms")."""


def hash_bytes(data: bytes) -> int:
    """Murmur3 x86 32-bit of ``data`` with seed 0, as a signed 32-bit int."""
    return int(mmh3.hash(data, 0, signed=True))


def hash_long(value: int) -> int:
    """Appendix B ``hashLong``: the hash of the 8-byte little-endian two's complement."""
    return hash_bytes(_LONG.pack(value))


def hash_string(value: str) -> int:
    """Appendix B: the hash of the UTF-8 bytes.

    A string holding a surrogate pair as two code points is joined first and a lone
    surrogate becomes ``?``, which is what Java's UTF-8 encoder does with such text.
    """
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError:
        joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        data = joined.encode("utf-8", "replace")
    return hash_bytes(data)


def hash_double(value: float) -> int:
    """Appendix B ``hashLong(doubleToLongBits(v))`` with NaN and -0.0 canonicalized."""
    if math.isnan(value):
        return hash_long(_CANONICAL_NAN_BITS)
    bits = struct.unpack("<q", struct.pack("<d", value + 0.0))[0]  # -0.0 + 0.0 == 0.0
    return hash_long(bits)


def _physical_hash(value: Any) -> int:
    """Hash a value already in physical form: int, str, bytes, Decimal, UUID or date."""
    if isinstance(value, bool):
        return hash_long(int(value))
    if isinstance(value, int):
        return hash_long(value)
    if isinstance(value, str):
        return hash_string(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return hash_bytes(bytes(value))
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        assert isinstance(exponent, int)
        return hash_bytes(min_bytes_signed(decimal_to_unscaled(value, -exponent)))
    if isinstance(value, uuid.UUID):
        return hash_bytes(value.bytes)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return hash_long(date_to_days(value))
    if isinstance(value, float):
        return hash_double(value)
    raise ValidationError(f"Cannot hash {value!r} of Python type {type(value).__name__}.")


def hash_function(source: IcebergType) -> Callable[[Any], int]:
    """The Appendix B hash for values of ``source`` (boolean, float, double included).

    Raises:
        ValidationError: the spec defines no hash for the type.
    """
    if isinstance(source, IntegerType | LongType | TimestampType | TimestamptzType):
        return hash_long
    if isinstance(source, BooleanType):
        return lambda v: hash_long(1 if v else 0)
    if isinstance(source, DateType):
        return lambda v: hash_long(date_to_days(v))
    if isinstance(source, TimeType):
        return lambda v: hash_long(time_to_micros(v))
    if isinstance(source, TimestampNanoType | TimestamptzNanoType):
        return lambda v: hash_long(v // 1_000)
    if isinstance(source, DecimalType):
        scale = source.scale
        return lambda v: hash_bytes(min_bytes_signed(decimal_to_unscaled(Decimal(v), scale)))
    if isinstance(source, StringType):
        return hash_string
    if isinstance(source, UUIDType):
        return lambda v: hash_bytes(v.bytes if isinstance(v, uuid.UUID) else bytes(v))
    if isinstance(source, FixedType | BinaryType):
        return lambda v: hash_bytes(bytes(v))
    if isinstance(source, FloatType | DoubleType):
        return lambda v: hash_double(float(v))
    raise ValidationError(f"Appendix B defines no 32-bit hash for type {source}.")


@dataclass(frozen=True, slots=True)
class BucketTransform(Transform):
    """``bucket[N]``: hash the value and keep the non-negative remainder modulo N.

    Attributes:
        num_buckets: N, a positive number of buckets.
    """

    num_buckets: int

    def __post_init__(self) -> None:
        if isinstance(self.num_buckets, bool) or self.num_buckets <= 0:
            raise InvalidMetadata(f"bucket[{self.num_buckets}] needs a positive bucket count.")

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def can_transform(self, source: IcebergType) -> bool:
        """int, long, decimal, date, time, timestamps, string, uuid, fixed, binary."""
        return isinstance(source, BUCKETABLE)

    def result_type(self, source: IcebergType) -> IcebergType:
        """Always ``int``."""
        return IntegerType()

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        hasher = hash_function(source)
        n = self.num_buckets
        return lambda v: (hasher(v) & _INT_MAX) % n

    def bucket_of_hash(self, hash_value: int) -> int:
        """The bucket of an already computed 32-bit hash."""
        return (hash_value & _INT_MAX) % self.num_buckets

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Bucket numbers as an ``int32`` array (hashed one value at a time)."""
        from icecore.transforms import _arrow

        n = self.num_buckets
        out = [
            None if v is None else (_physical_hash(v) & _INT_MAX) % n
            for v in _arrow.physical_pylist(values, source)
        ]
        return _arrow.int32_array(out)

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """The bucket number, or ``null``."""
        return "null" if value is None else str(value)
