"""Single values <-> bytes and JSON, per "Appendix D: Single-value serialization".

Binary single values are the lower/upper bounds of manifests; JSON single values are
field defaults and partition values in JSON. Python values per Iceberg type:

========================  =============================================================
Iceberg type              Python value
========================  =============================================================
boolean                   ``bool``
int, long                 ``int``
float, double             ``float``
decimal(P,S)              ``decimal.Decimal`` (exponent ``-S``)
date                      ``datetime.date`` (``int`` days accepted on input)
time                      ``int`` microseconds from midnight
timestamp, timestamptz    ``int`` microseconds from the epoch (the spec's physical form)
timestamp(tz)_ns          ``int`` nanoseconds from the epoch
string                    ``str``
uuid                      ``uuid.UUID`` (16 ``bytes`` accepted on input)
fixed(L), binary          ``bytes``
geometry, geography       ``bytes`` (WKB; bounds are x:y[:z[:m]] points)
========================  =============================================================

Time values stay integers so that nothing is lost to ``datetime``'s range or microsecond
limit; the helpers below turn them into ``datetime`` objects or ISO strings for display.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
import struct
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from icecore.errors import InvalidMetadata, Unsupported, ValidationError
from icecore.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
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

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = EPOCH_DATE.toordinal()
MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
NANOS_PER_MICRO = 1_000
NANOS_PER_DAY = MICROS_PER_DAY * NANOS_PER_MICRO

_INT = struct.Struct("<i")
_LONG = struct.Struct("<q")
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")

_MICRO_TYPES = (TimestampType, TimestamptzType)
_NANO_TYPES = (TimestampNanoType, TimestamptzNanoType)
_ZONED_TYPES = (TimestamptzType, TimestamptzNanoType)
_LONG_TYPES = (TimeType, *_MICRO_TYPES, *_NANO_TYPES)


# ---------------------------------------------------------------------------------------
# Time helpers: integers are the physical values, these convert for people.
# ---------------------------------------------------------------------------------------


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def whole_number(text: str, *, negative: bool = True) -> int | None:
    """The integer ``text`` spells in ASCII digits (a leading ``-`` when ``negative``), or None.

    ``str.isdigit`` is no test for ``int()``: it accepts ``²`` (which ``int`` refuses) and
    other scripts' digits; ids, sizes and counts from links, requests and files are ASCII.
    Surrounding whitespace is ignored.
    """
    text = text.strip()
    if not _WHOLE_NUMBER.fullmatch(text) or (not negative and text.startswith("-")):
        return None
    return int(text)


def days_to_date(days: int) -> dt.date:
    """The calendar date ``days`` after 1970-01-01.

    Raises:
        Unsupported: the date falls outside years 1-9999, which Python cannot hold.
    """
    try:
        return dt.date.fromordinal(_EPOCH_ORDINAL + days)
    except (ValueError, OverflowError) as e:
        raise Unsupported(f"Day {days} from 1970-01-01 is outside years 1-9999.") from e


def date_to_days(value: dt.date | int) -> int:
    """Days from 1970-01-01 (an ``int`` is taken to be days already)."""
    if isinstance(value, dt.datetime):
        raise ValidationError(f"Expected a date, got the datetime {value!r}.")
    if isinstance(value, dt.date):
        return value.toordinal() - _EPOCH_ORDINAL
    return int(value)


def time_to_micros(value: dt.time | int) -> int:
    """Microseconds from midnight (an ``int`` is taken to be micros already)."""
    if isinstance(value, dt.time):
        return (
            (value.hour * 60 + value.minute) * 60 + value.second
        ) * MICROS_PER_SECOND + value.microsecond
    return int(value)


def micros_to_time(micros: int) -> dt.time:
    """The time of day ``micros`` after midnight."""
    if not 0 <= micros < MICROS_PER_DAY:
        raise ValidationError(f"Time {micros} micros is not within one day.")
    seconds, us = divmod(micros, MICROS_PER_SECOND)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    return dt.time(h, m, s, us)


def datetime_to_micros(value: dt.datetime) -> int:
    """Microseconds from the epoch; an aware datetime is converted to UTC first."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds


def micros_to_datetime(micros: int, with_zone: bool = False) -> dt.datetime:
    """The datetime ``micros`` after the epoch, aware (UTC) when ``with_zone`` is True."""
    days, rest = divmod(micros, MICROS_PER_DAY)
    result = dt.datetime.combine(days_to_date(days), micros_to_time(rest))
    return result.replace(tzinfo=dt.UTC) if with_zone else result


def _fraction(units: int, digits: int) -> str:
    return f".{units:0{digits}d}"


def micros_to_iso(micros: int, with_zone: bool = False) -> str:
    """ISO-8601 text with six fraction digits, e.g. ``2017-11-16T22:31:08.123456``.

    This is the Appendix D JSON form of ``timestamp`` (and of ``timestamptz`` with the
    ``+00:00`` suffix when ``with_zone`` is True).
    """
    days, rest = divmod(micros, MICROS_PER_DAY)
    text = f"{days_to_date(days).isoformat()}T{_time_text(rest, 6)}"
    return text + "+00:00" if with_zone else text


def nanos_to_iso(nanos: int, with_zone: bool = False) -> str:
    """ISO-8601 text with nine fraction digits (``timestamp_ns`` JSON form)."""
    days, rest = divmod(nanos, NANOS_PER_DAY)
    micros, ns = divmod(rest, NANOS_PER_MICRO)
    text = f"{days_to_date(days).isoformat()}T{_time_text(micros, 6)}{ns:03d}"
    return text + "+00:00" if with_zone else text


def _time_text(micros: int, digits: int) -> str:
    seconds, us = divmod(micros, MICROS_PER_SECOND)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    return f"{h:02d}:{m:02d}:{s:02d}" + _fraction(us, digits)


def micros_to_time_iso(micros: int) -> str:
    """``HH:MM:SS.ffffff``, the Appendix D JSON form of ``time``."""
    if not 0 <= micros < MICROS_PER_DAY:
        raise ValidationError(f"Time {micros} micros is not within one day.")
    return _time_text(micros, 6)


_ISO = re.compile(
    r"(?P<date>[+-]?\d{4,}-\d{2}-\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?)?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2})?"
)
_TIME = re.compile(r"(?P<h>\d{2}):(?P<m>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?")


def _clock_nanos(h: str, m: str, s: str | None, f: str | None) -> int:
    hours, minutes, seconds = int(h), int(m), int(s or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        raise ValueError("clock out of range")
    frac = int((f or "").ljust(9, "0") or 0)
    return ((hours * 60 + minutes) * 60 + seconds) * 1_000_000_000 + frac


def iso_to_nanos(text: str, with_zone: bool | None = None) -> int:
    """Parse an ISO-8601 date-time into nanoseconds from the epoch (UTC when zoned).

    Args:
        text: e.g. ``2017-11-16T22:31:08.123456789+00:00``; fractions up to 9 digits.
        with_zone: True requires an offset, False forbids one, None accepts either.

    Raises:
        ValidationError: the text is not such a timestamp, or its zone breaks ``with_zone``.
    """
    m = _ISO.fullmatch(text.strip())
    if m is None:
        raise ValidationError(f"{text!r} is not an ISO-8601 timestamp.")
    zone = m.group("zone")
    if with_zone is True and zone is None:
        raise ValidationError(f"Timestamp {text!r} needs a zone offset such as +00:00.")
    if with_zone is False and zone is not None:
        raise ValidationError(f"Timestamp {text!r} must not carry a zone offset.")
    try:
        days = dt.date.fromisoformat(m.group("date")).toordinal() - _EPOCH_ORDINAL
        clock = 0
        if m.group("h") is not None:
            clock = _clock_nanos(m.group("h"), m.group("m"), m.group("s"), m.group("f"))
    except ValueError as e:
        raise ValidationError(f"{text!r} is not a valid ISO-8601 timestamp.") from e
    offset = 0
    if zone is not None and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * (int(digits[:2]) * 60 + int(digits[2:])) * 60 * 1_000_000_000
    return days * NANOS_PER_DAY + clock - offset


def iso_to_micros(text: str, with_zone: bool | None = None) -> int:
    """Like :func:`iso_to_nanos`, in microseconds (extra digits are floored)."""
    return iso_to_nanos(text, with_zone) // NANOS_PER_MICRO


def iso_to_time_micros(text: str) -> int:
    """Parse ``HH:MM[:SS[.ffffff]]`` into microseconds from midnight."""
    m = _TIME.fullmatch(text.strip())
    if m is None:
        raise ValidationError(f"{text!r} is not an ISO-8601 time.")
    try:
        return _clock_nanos(m.group("h"), m.group("m"), m.group("s"), m.group("f")) // 1_000
    except ValueError as e:
        raise ValidationError(f"{text!r} is not a valid ISO-8601 time.") from e


# ---------------------------------------------------------------------------------------
# Decimals
# ---------------------------------------------------------------------------------------


def decimal_to_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (``14.20`` at scale 2 is 1420).

    Raises:
        ValidationError: the value is not finite or has more fraction digits than ``scale``.
    """
    if not value.is_finite():
        raise ValidationError(f"Decimal {value} is not a finite number.")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        unscaled *= 10**shift
    else:
        unscaled, rest = divmod(unscaled, 10**-shift)
        if rest:
            raise ValidationError(f"Decimal {value} does not fit scale {scale} exactly.")
    return -unscaled if sign else unscaled


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """The decimal with this unscaled value and scale, exactly (no context rounding)."""
    sign = 1 if unscaled < 0 else 0
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((sign, digits, -scale))


def min_bytes_signed(value: int) -> bytes:
    """Two's-complement big-endian bytes, as few as hold ``value`` (Appendix B/D)."""
    magnitude = value if value >= 0 else ~value
    return value.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def _check_decimal_precision(t: DecimalType, unscaled: int, value: Any) -> None:
    if len(str(abs(unscaled))) > t.precision:
        raise ValidationError(f"Decimal {value} has more than {t.precision} digits for {t}.")


# ---------------------------------------------------------------------------------------
# Binary single values (Appendix D)
# ---------------------------------------------------------------------------------------


def _need(t: IcebergType, b: bytes, sizes: tuple[int, ...]) -> None:
    if len(b) not in sizes:
        want = " or ".join(str(s) for s in sizes)
        raise InvalidMetadata(
            f"A {t} value must be {want} bytes, got {len(b)} bytes ({bytes(b).hex()!r})."
        )


def from_bytes(t: IcebergType, b: bytes) -> Any:
    """Decode an Appendix D binary single value (a manifest bound) of type ``t``.

    A ``long`` bound of 4 bytes and a ``double`` bound of 4 bytes are read as ``int`` and
    ``float`` values: they were written before the column was promoted.

    Raises:
        InvalidMetadata: the bytes are too short, too long or not valid for the type.
        Unsupported: the type has no binary single value (unknown, variant, nested).
    """
    b = bytes(b)
    if isinstance(t, BooleanType):
        _need(t, b, (1,))
        return b != b"\x00"
    if isinstance(t, IntegerType):
        _need(t, b, (4,))
        return _INT.unpack(b)[0]
    if isinstance(t, LongType):
        _need(t, b, (8, 4))
        return (_LONG if len(b) == 8 else _INT).unpack(b)[0]
    if isinstance(t, FloatType):
        _need(t, b, (4,))
        return _FLOAT.unpack(b)[0]
    if isinstance(t, DoubleType):
        _need(t, b, (8, 4))
        return (_DOUBLE if len(b) == 8 else _FLOAT).unpack(b)[0]
    if isinstance(t, DateType):
        _need(t, b, (4,))
        return days_to_date(_INT.unpack(b)[0])
    if isinstance(t, _LONG_TYPES):
        _need(t, b, (8,))
        return _LONG.unpack(b)[0]
    if isinstance(t, StringType):
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidMetadata(f"A string value is not valid UTF-8: {b.hex()!r}.") from e
    if isinstance(t, UUIDType):
        _need(t, b, (16,))
        return uuid.UUID(bytes=b)
    if isinstance(t, BinaryType | FixedType | GeometryType | GeographyType):
        return b
    if isinstance(t, DecimalType):
        if not b:
            raise InvalidMetadata(f"A {t} value must be at least 1 byte, got 0 bytes.")
        return unscaled_to_decimal(int.from_bytes(b, "big", signed=True), t.scale)
    raise Unsupported(f"Type {t} has no binary single-value form.")


def to_bytes(t: IcebergType, value: Any) -> bytes:
    """Encode a Python value of type ``t`` as an Appendix D binary single value.

    Raises:
        ValidationError: the value does not fit the type (range, scale, length).
        Unsupported: the type has no binary single value (unknown, variant, nested).
    """
    if value is None:
        raise ValidationError(f"A null {t} has no binary single value.")
    try:
        if isinstance(t, BooleanType):
            return b"\x01" if value else b"\x00"
        if isinstance(t, IntegerType):
            return _INT.pack(value)
        if isinstance(t, LongType):
            return _LONG.pack(value)
        if isinstance(t, FloatType):
            return _FLOAT.pack(value)
        if isinstance(t, DoubleType):
            return _DOUBLE.pack(value)
        if isinstance(t, DateType):
            return _INT.pack(date_to_days(value))
        if isinstance(t, TimeType):
            return _LONG.pack(time_to_micros(value))
        if isinstance(t, _MICRO_TYPES + _NANO_TYPES):
            return _LONG.pack(value)
    except (struct.error, OverflowError, TypeError) as e:
        raise ValidationError(f"Value {value!r} does not fit type {t}.") from e
    if isinstance(t, StringType):
        return str(value).encode("utf-8")
    if isinstance(t, UUIDType):
        return _uuid_bytes(value)
    if isinstance(t, FixedType):
        if len(value) != t.length:
            raise ValidationError(f"A {t} value must be {t.length} bytes, got {len(value)}.")
        return bytes(value)
    if isinstance(t, BinaryType | GeometryType | GeographyType):
        return bytes(value)
    if isinstance(t, DecimalType):
        unscaled = decimal_to_unscaled(Decimal(value), t.scale)
        _check_decimal_precision(t, unscaled, value)
        return min_bytes_signed(unscaled)
    raise Unsupported(f"Type {t} has no binary single-value form.")


def _uuid_bytes(value: Any) -> bytes:
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, bytes | bytearray) and len(value) == 16:
        return bytes(value)
    if isinstance(value, str):
        return uuid.UUID(value).bytes
    raise ValidationError(f"{value!r} is not a UUID.")


def geo_bound_from_bytes(b: bytes) -> tuple[float, ...]:
    """Decode a geometry/geography bound point (``x:y``, ``x:y:z`` or ``x:y:z:m`` doubles).

    Raises:
        InvalidMetadata: the length is not 16, 24 or 32 bytes.
    """
    if len(b) not in (16, 24, 32):
        raise InvalidMetadata(f"A geospatial bound must be 16, 24 or 32 bytes, got {len(b)}.")
    return struct.unpack(f"<{len(b) // 8}d", b)


# ---------------------------------------------------------------------------------------
# JSON single values (Appendix D)
# ---------------------------------------------------------------------------------------

_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def to_json(t: IcebergType, value: Any) -> Any:
    """Encode a Python value of type ``t`` as an Appendix D JSON single value.

    Structs are ``{field_id: value}`` mappings (keys as strings in JSON), lists are
    sequences and maps are mappings. NaN and infinities become the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"`` because JSON has no literal for them.

    Raises:
        ValidationError: the value does not fit the type.
        Unsupported: the type has no JSON single value Icecore can write.
    """
    if value is None:
        return None
    if isinstance(t, BooleanType):
        return bool(value)
    if isinstance(t, IntegerType | LongType):
        return int(value)
    if isinstance(t, FloatType | DoubleType):
        f = float(value)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if isinstance(t, DecimalType):
        unscaled = decimal_to_unscaled(Decimal(value), t.scale)
        d = unscaled_to_decimal(unscaled, t.scale)
        return format(d, "f") if t.scale >= 0 else str(d)
    if isinstance(t, DateType):
        return days_to_date(date_to_days(value)).isoformat()
    if isinstance(t, TimeType):
        return micros_to_time_iso(time_to_micros(value))
    if isinstance(t, _MICRO_TYPES):
        return micros_to_iso(int(value), isinstance(t, TimestamptzType))
    if isinstance(t, _NANO_TYPES):
        return nanos_to_iso(int(value), isinstance(t, TimestamptzNanoType))
    if isinstance(t, StringType):
        return str(value)
    if isinstance(t, UUIDType):
        return str(uuid.UUID(bytes=_uuid_bytes(value)))
    if isinstance(t, FixedType | BinaryType):
        return bytes(value).hex()
    if isinstance(t, StructType):
        return {
            str(f.field_id): to_json(f.field_type, value[f.field_id])
            for f in t.fields
            if f.field_id in value
        }
    if isinstance(t, ListType):
        return [to_json(t.element_type, v) for v in value]
    if isinstance(t, MapType):
        return {
            "keys": [to_json(t.key_type, k) for k in value],
            "values": [to_json(t.value_type, v) for v in value.values()],
        }
    raise Unsupported(f"Type {t} has no JSON single-value form Icecore can write.")


def _bad(t: IcebergType, obj: Any) -> InvalidMetadata:
    return InvalidMetadata(f"JSON value {obj!r} is not a valid {t} single value.")


def from_json(t: IcebergType, obj: Any) -> Any:
    """Decode an Appendix D JSON single value into the Python value of type ``t``.

    Raises:
        InvalidMetadata: the JSON does not encode a value of the type.
        Unsupported: the type has no JSON single value Icecore can read.
    """
    if obj is None:
        return None
    if isinstance(t, UnknownType):
        raise _bad(t, obj)
    try:
        return _from_json(t, obj)
    except (ValidationError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise _bad(t, obj) from e


def _from_json(t: IcebergType, obj: Any) -> Any:
    if isinstance(t, BooleanType):
        if not isinstance(obj, bool):
            raise _bad(t, obj)
        return obj
    if isinstance(t, IntegerType | LongType):
        if isinstance(obj, bool) or not isinstance(obj, int):
            raise _bad(t, obj)
        limit = 2**31 if isinstance(t, IntegerType) else 2**63
        if not -limit <= obj < limit:
            raise _bad(t, obj)
        return obj
    if isinstance(t, FloatType | DoubleType):
        if isinstance(obj, str) and obj in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[obj]
        if isinstance(obj, bool) or not isinstance(obj, int | float):
            raise _bad(t, obj)
        return float(obj)
    if isinstance(t, DecimalType):
        if not isinstance(obj, str):
            raise _bad(t, obj)
        unscaled = decimal_to_unscaled(Decimal(obj), t.scale)
        return unscaled_to_decimal(unscaled, t.scale)
    if isinstance(t, DateType):
        return dt.date.fromisoformat(obj)
    if isinstance(t, TimeType):
        return iso_to_time_micros(obj)
    if isinstance(t, _MICRO_TYPES):
        return iso_to_micros(obj, isinstance(t, TimestamptzType))
    if isinstance(t, _NANO_TYPES):
        return iso_to_nanos(obj, isinstance(t, TimestamptzNanoType))
    if isinstance(t, StringType):
        if not isinstance(obj, str):
            raise _bad(t, obj)
        return obj
    if isinstance(t, UUIDType):
        return uuid.UUID(obj)
    if isinstance(t, FixedType | BinaryType):
        value = bytes.fromhex(obj)
        if isinstance(t, FixedType) and len(value) != t.length:
            raise _bad(t, obj)
        return value
    if isinstance(t, StructType):
        if not isinstance(obj, Mapping):
            raise _bad(t, obj)
        return {
            f.field_id: from_json(f.field_type, obj[str(f.field_id)])
            for f in t.fields
            if str(f.field_id) in obj
        }
    if isinstance(t, ListType):
        if not isinstance(obj, list):
            raise _bad(t, obj)
        return [from_json(t.element_type, v) for v in obj]
    if isinstance(t, MapType):
        keys, values = obj["keys"], obj["values"]
        if len(keys) != len(values):
            raise _bad(t, obj)
        return {
            from_json(t.key_type, k): from_json(t.value_type, v)
            for k, v in zip(keys, values, strict=True)
        }
    raise Unsupported(f"Type {t} has no JSON single-value form Icecore can read.")


# ---------------------------------------------------------------------------------------
# Human-readable values (as the reference implementation prints partition values)
# ---------------------------------------------------------------------------------------


def _java_time(micros_of_day: int, nanos: int = 0) -> str:
    # java.time.LocalTime#toString: HH:mm, then :ss and a 3/6/9-digit fraction if non-zero.
    seconds, us = divmod(micros_of_day, MICROS_PER_SECOND)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    text = f"{h:02d}:{m:02d}"
    frac = us * 1_000 + nanos
    if s or frac:
        text += f":{s:02d}"
    if frac:
        if frac % 1_000_000 == 0:
            text += f".{frac // 1_000_000:03d}"
        elif frac % 1_000 == 0:
            text += f".{frac // 1_000:06d}"
        else:
            text += f".{frac:09d}"
    return text


def to_human_string(t: IcebergType, value: Any) -> str:
    """Print a value the way Iceberg's reference implementation prints partition values.

    Dates are ``2024-08-09``, timestamps ``2024-08-09T10:15:30`` (``Z`` appended with a
    zone), times ``10:15:30``, binary and fixed values base64, null ``null``.
    """
    if value is None:
        return "null"
    if isinstance(t, BooleanType):
        return "true" if value else "false"
    if isinstance(t, DateType):
        return days_to_date(date_to_days(value)).isoformat()
    if isinstance(t, TimeType):
        return _java_time(time_to_micros(value))
    if isinstance(t, _MICRO_TYPES + _NANO_TYPES):
        nanos = int(value) * (1 if isinstance(t, _NANO_TYPES) else NANOS_PER_MICRO)
        days, rest = divmod(nanos, NANOS_PER_DAY)
        micros, ns = divmod(rest, NANOS_PER_MICRO)
        text = f"{days_to_date(days).isoformat()}T{_java_time(micros, ns)}"
        return text + "Z" if isinstance(t, _ZONED_TYPES) else text
    if isinstance(t, FixedType | BinaryType | GeometryType | GeographyType):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(t, DecimalType):
        return str(to_json(t, value))
    if isinstance(t, UUIDType):
        return str(uuid.UUID(bytes=_uuid_bytes(value)))
    if isinstance(t, FloatType | DoubleType):
        f = float(value)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return repr(f)
    return str(value)


def _float_text(f: float, single: bool) -> str:
    """The shortest decimal text that reads back as ``f`` (as a float32 when ``single``)."""
    if not single:
        return repr(f)
    for digits in range(1, 10):  # 9 significant digits always round-trip a float32
        text = f"{f:.{digits}g}"
        if _FLOAT.unpack(_FLOAT.pack(float(text)))[0] == f:
            break
    if "e" not in text and "." not in text and text not in ("inf", "-inf"):
        text += ".0"
    return text


def _sql_fraction(micros_of_second: int, nanos: int | None) -> str:
    if nanos is not None:
        frac, digits = micros_of_second * NANOS_PER_MICRO + nanos, 9
    else:
        frac, digits = micros_of_second, 6
    return f".{frac:0{digits}d}".rstrip("0") if frac else ""


def _sql_time(micros_of_day: int, nanos: int | None = None) -> str:
    seconds, us = divmod(micros_of_day, MICROS_PER_SECOND)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    return f"{h:02d}:{m:02d}:{s:02d}{_sql_fraction(us, nanos)}"


def sql_string(text: str) -> str:
    """``text`` as a quoted SQL string literal that Spark SQL and Icecore's filters read back.

    Spark escapes with a backslash (two quotes in a row are two adjacent literals there,
    which Spark concatenates), so the quote and the backslash are backslash-escaped.
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_literal(t: IcebergType, value: Any) -> str:
    """A value of type ``t`` as the SQL literal a user would type in a filter.

    One spelling for every value a pruning reason, a bound, a partition label or a plan
    report shows, so that it can be copied into a filter (Icecore's or Spark SQL's WHERE)
    and means the same value: ``DATE '2024-09-20'``, ``TIMESTAMP '2024-09-20 10:00:00'``
    (``+00:00`` appended for the types with a zone, which store UTC), ``TIME '10:15:30'``,
    ``'text'`` (quotes escaped), ``X'0A0B'`` for binary and fixed, decimals exact
    (``12.30``), floats by their shortest exact text (``0.1F`` for a ``float``, whose values
    Spark would otherwise widen and compare as doubles), ``CAST('NaN' AS DOUBLE)`` and the
    infinities as casts, ``-0.0D`` keeping its sign, ``NULL``, ``TRUE``/``FALSE``. Values
    are in the representation :mod:`icecore.values` decodes (spec Appendix D: days, micros
    or nanos as ints, or ``datetime`` objects; ``Decimal``; ``uuid.UUID``; ``bytes``).
    A UUID is a string literal, as Spark (which has no UUID type) reads the column.

    Raises:
        Unsupported: a date or timestamp outside years 1-9999.
    """
    if value is None:
        return "NULL"
    if isinstance(t, BooleanType):
        return "TRUE" if value else "FALSE"
    if isinstance(t, DateType):
        return f"DATE '{days_to_date(date_to_days(value)).isoformat()}'"
    if isinstance(t, TimeType):
        return f"TIME '{_sql_time(time_to_micros(value))}'"
    if isinstance(t, _MICRO_TYPES + _NANO_TYPES):
        nano = isinstance(t, _NANO_TYPES)
        if isinstance(value, dt.datetime):
            value = datetime_to_micros(value) * (NANOS_PER_MICRO if nano else 1)
        per_day = NANOS_PER_DAY if nano else MICROS_PER_DAY
        days, rest = divmod(int(value), per_day)
        micros, ns = divmod(rest, NANOS_PER_MICRO) if nano else (rest, None)
        zone = "+00:00" if isinstance(t, _ZONED_TYPES) else ""
        return f"TIMESTAMP '{days_to_date(days).isoformat()} {_sql_time(micros, ns)}{zone}'"
    if isinstance(t, FixedType | BinaryType | GeometryType | GeographyType):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(t, DecimalType):
        return format(Decimal(value), "f")
    if isinstance(t, UUIDType):
        return f"'{uuid.UUID(bytes=_uuid_bytes(value))}'"
    if isinstance(t, FloatType | DoubleType):
        f, kind = float(value), "FLOAT" if isinstance(t, FloatType) else "DOUBLE"
        if math.isnan(f) or math.isinf(f):
            word = "NaN" if math.isnan(f) else ("Infinity" if f > 0 else "-Infinity")
            return f"CAST('{word}' AS {kind})"
        single = kind == "FLOAT" and _FLOAT.unpack(_FLOAT.pack(f))[0] == f
        text = _float_text(f, single=single)
        if single:
            return text + "F"
        if kind == "FLOAT":  # not a float32 value: its exact double, so no two values share
            return text + "D"  # a text (the text of a bound filter is a cache key)
        return text + "D" if f == 0 and math.copysign(1.0, f) < 0 else text
    if isinstance(t, StringType):
        return sql_string(str(value))
    if isinstance(t, IntegerType | LongType):
        return str(int(value))
    return sql_string(str(value))


def json_object(line: bytes | str) -> dict[str, Any] | None:
    """A JSON object read from one kept line; None when the line is not one.

    Icecore's stores beside a warehouse keep one object a line; a line cut short by a crash,
    edited by hand or nested past Python's recursion limit is skipped, not raised.
    """
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return value if isinstance(value, dict) else None


__all__ = [
    "json_object",
    "whole_number",
    "EPOCH",
    "EPOCH_DATE",
    "MICROS_PER_DAY",
    "MICROS_PER_HOUR",
    "MICROS_PER_SECOND",
    "NANOS_PER_DAY",
    "NANOS_PER_MICRO",
    "date_to_days",
    "datetime_to_micros",
    "days_to_date",
    "decimal_to_unscaled",
    "from_bytes",
    "from_json",
    "geo_bound_from_bytes",
    "iso_to_micros",
    "iso_to_nanos",
    "iso_to_time_micros",
    "micros_to_datetime",
    "micros_to_iso",
    "micros_to_time",
    "micros_to_time_iso",
    "min_bytes_signed",
    "nanos_to_iso",
    "time_to_micros",
    "to_bytes",
    "sql_literal",
    "sql_string",
    "to_human_string",
    "to_json",
    "unscaled_to_decimal",
]
