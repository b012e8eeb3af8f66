"""PyIceberg 0.12 as a second, independent implementation to compare against."""

from __future__ import annotations

from pyiceberg import types as pt

from icecore import types as t

_SIMPLE = {
    t.BooleanType(): pt.BooleanType(),
    t.IntegerType(): pt.IntegerType(),
    t.LongType(): pt.LongType(),
    t.FloatType(): pt.FloatType(),
    t.DoubleType(): pt.DoubleType(),
    t.DateType(): pt.DateType(),
    t.TimeType(): pt.TimeType(),
    t.TimestampType(): pt.TimestampType(),
    t.TimestamptzType(): pt.TimestamptzType(),
    t.TimestampNanoType(): pt.TimestampNanoType(),
    t.TimestamptzNanoType(): pt.TimestamptzNanoType(),
    t.StringType(): pt.StringType(),
    t.UUIDType(): pt.UUIDType(),
    t.BinaryType(): pt.BinaryType(),
}


def peer_type(ours: t.IcebergType) -> pt.PrimitiveType:
    """The PyIceberg type equal to one of ours."""
    if isinstance(ours, t.DecimalType):
        return pt.DecimalType(ours.precision, ours.scale)
    if isinstance(ours, t.FixedType):
        return pt.FixedType(ours.length)
    return _SIMPLE[ours]
