"""How Icecore represents Iceberg types in Arrow, for every reader (data files, manifests).

Timestamps are microseconds (``timestamp('us')``; ``timestamptz`` with zone ``UTC``), ``_ns``
types nanoseconds, ``uuid`` 16-byte fixed binary, ``unknown`` null; nested types keep their
fields' names and nullability (spec "Schemas and Data Types").
"""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa

from icecore.errors import Unsupported
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
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

_PRIMITIVES: dict[type, pa.DataType] = {
    BooleanType: pa.bool_(),
    IntegerType: pa.int32(),
    LongType: pa.int64(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    DateType: pa.date32(),
    TimeType: pa.time64("us"),
    TimestampType: pa.timestamp("us"),
    TimestamptzType: pa.timestamp("us", tz="UTC"),
    TimestampNanoType: pa.timestamp("ns"),
    TimestamptzNanoType: pa.timestamp("ns", tz="UTC"),
    StringType: pa.string(),
    UUIDType: pa.binary(16),
    BinaryType: pa.binary(),
    UnknownType: pa.null(),
}


def arrow_type(t: IcebergType) -> pa.DataType:
    """The Arrow type Icecore reads an Iceberg type as.

    Timestamps are microseconds (``timestamp('us')``; ``timestamptz`` with zone ``UTC``),
    ``_ns`` types nanoseconds, ``uuid`` 16-byte fixed binary, ``unknown`` null.

    Raises:
        Unsupported: variant, geometry and geography.
    """
    found = _PRIMITIVES.get(type(t))
    if found is not None:
        return found
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, StructType):
        return pa.struct([arrow_field(f) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(arrow_field(t.element_field))
    if isinstance(t, MapType):
        return pa.map_(arrow_field(t.key_field), arrow_field(t.value_field))
    raise Unsupported(f"Icecore cannot read columns of type {t} yet.")


def arrow_field(f: NestedField) -> pa.Field:
    """The Arrow field of an Iceberg field (named as the schema names it)."""
    return pa.field(f.name, arrow_type(f.field_type), nullable=not f.required)


def bool_scalar(value: bool | None) -> pa.BooleanScalar:
    """A boolean Arrow scalar built from its bit, for constants made at import.

    ``pa.scalar`` converts a Python object, and pyarrow's first conversion imports pandas
    (~40 MiB, ~0.2 s) to look for its types; a module constant made that way would make
    every ``import icecore`` pay for pandas.
    """
    if value is None:
        return pa.nulls(1, pa.bool_())[0]
    bit = pa.py_buffer(b"\x01" if value else b"\x00")
    return pa.Array.from_buffers(pa.bool_(), 1, [None, bit])[0]


def arrow_value(t: IcebergType, value: Any) -> Any:
    """A value of :mod:`icecore.values`' Python form as ``pa.scalar`` accepts it."""
    if value is None:
        return None
    if isinstance(t, UUIDType) and isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(t, StructType):
        return {f.name: arrow_value(f.field_type, value.get(f.field_id)) for f in t.fields}
    if isinstance(t, ListType):
        return [arrow_value(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        return [
            (arrow_value(t.key_type, k), arrow_value(t.value_type, v)) for k, v in value.items()
        ]
    return value
