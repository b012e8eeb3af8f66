"""Iceberg data types: primitives, structs, lists and maps, and their JSON form.

Implements the spec's "Schemas and Data Types" section (v1-v3, including the v3 types
``unknown``, ``timestamp_ns``, ``timestamptz_ns``, ``variant``, ``geometry`` and
``geography``) and the type table of "Appendix C: JSON serialization".

Types are immutable values: two ``DecimalType(9, 2)`` compare equal and hash alike, so
they can key caches. Field JSON keeps what it does not model (``extra``) so that writing
a parsed schema back never drops what a newer writer put there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from icecore.errors import InvalidMetadata, Unsupported, ValidationError

MAX_DECIMAL_PRECISION = 38
"""Spec, "Primitive Types": decimal precision must be 38 or less."""

MAX_FIXED_LENGTH = 2**31 - 1
"""The longest ``fixed(L)``: Parquet, Avro and Iceberg Java store L as a signed 32-bit int."""

GEOGRAPHY_ALGORITHMS = frozenset({"spherical", "vincenty", "thomas", "andoyer", "karney"})
"""Spec (latest), "Edge-Interpolation Algorithm": the values ``geography(C, A)`` allows."""

MAX_NESTING = 64
"""Deepest nesting of struct, list and map types in one column (``struct<a: list<...>>`` is 2).

A bound of Icecore's, not of the spec: printing, comparing, serializing and converting types
to Arrow recurse once per level (several frames each), so a schema 150 levels deep exhausts
Python's stack in those helpers. Parsing refuses deeper types (:func:`type_from_json`, the
type text parser) and :func:`check_type` refuses them in every schema a change adds, so no
deeper type reaches those helpers. Real schemas stay far below it (Spark's own tests nest a
few levels).
"""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class IcebergType:
    """Base of every Iceberg type.

    Subclasses are frozen, slotted dataclasses; this base only carries the predicates
    that callers use to branch on the kind of a type.
    """

    __slots__ = ()

    @property
    def is_primitive(self) -> bool:
        """Whether the type is a primitive (spec "Primitive Types")."""
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        """Whether the type is a struct, list or map (spec "Nested Types")."""
        return isinstance(self, NestedType)


class PrimitiveType(IcebergType):
    """A primitive type; its JSON form is a single string (Appendix C)."""

    __slots__ = ()

    def json_string(self) -> str:
        """The canonical JSON string of this type, e.g. ``decimal(9,2)``."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.json_string()


class NestedType(IcebergType):
    """A struct, list or map: a type that owns field ids of its own."""

    __slots__ = ()

    def child_fields(self) -> tuple[NestedField, ...]:
        """The fields directly below this type (list element, map key and value included)."""
        raise NotImplementedError


class _FixedName(PrimitiveType):
    """A primitive whose JSON form is just its name."""

    __slots__ = ()
    name: ClassVar[str] = ""

    def json_string(self) -> str:
        """The canonical JSON string of this type."""
        return self.name


@dataclass(frozen=True, slots=True)
class UnknownType(_FixedName):
    """v3 ``unknown``: a null column whose real type is not known yet; never stored."""

    name: ClassVar[str] = "unknown"


@dataclass(frozen=True, slots=True)
class BooleanType(_FixedName):
    """``boolean``: true or false."""

    name: ClassVar[str] = "boolean"


@dataclass(frozen=True, slots=True)
class IntegerType(_FixedName):
    """``int``: 32-bit signed integer; can promote to ``long``."""

    name: ClassVar[str] = "int"


@dataclass(frozen=True, slots=True)
class LongType(_FixedName):
    """``long``: 64-bit signed integer."""

    name: ClassVar[str] = "long"


@dataclass(frozen=True, slots=True)
class FloatType(_FixedName):
    """``float``: 32-bit IEEE 754; can promote to ``double``."""

    name: ClassVar[str] = "float"


@dataclass(frozen=True, slots=True)
class DoubleType(_FixedName):
    """``double``: 64-bit IEEE 754."""

    name: ClassVar[str] = "double"


@dataclass(frozen=True, slots=True)
class DateType(_FixedName):
    """``date``: calendar date, stored as days from 1970-01-01."""

    name: ClassVar[str] = "date"


@dataclass(frozen=True, slots=True)
class TimeType(_FixedName):
    """``time``: time of day, stored as microseconds from midnight."""

    name: ClassVar[str] = "time"


@dataclass(frozen=True, slots=True)
class TimestampType(_FixedName):
    """``timestamp``: microseconds from the epoch, without time zone."""

    name: ClassVar[str] = "timestamp"


@dataclass(frozen=True, slots=True)
class TimestamptzType(_FixedName):
    """``timestamptz``: microseconds from the epoch in UTC."""

    name: ClassVar[str] = "timestamptz"


@dataclass(frozen=True, slots=True)
class TimestampNanoType(_FixedName):
    """v3 ``timestamp_ns``: nanoseconds from the epoch, without time zone."""

    name: ClassVar[str] = "timestamp_ns"


@dataclass(frozen=True, slots=True)
class TimestamptzNanoType(_FixedName):
    """v3 ``timestamptz_ns``: nanoseconds from the epoch in UTC."""

    name: ClassVar[str] = "timestamptz_ns"


@dataclass(frozen=True, slots=True)
class StringType(_FixedName):
    """``string``: Unicode text stored as UTF-8."""

    name: ClassVar[str] = "string"


@dataclass(frozen=True, slots=True)
class UUIDType(_FixedName):
    """``uuid``: 16 bytes, big-endian."""

    name: ClassVar[str] = "uuid"


@dataclass(frozen=True, slots=True)
class BinaryType(_FixedName):
    """``binary``: bytes of any length."""

    name: ClassVar[str] = "binary"


@dataclass(frozen=True, slots=True)
class VariantType(_FixedName):
    """v3 ``variant``: semi-structured data, kept opaque here.

    The spec calls variant neither primitive nor nested; it is modelled as a primitive so
    that schemas holding it parse and print, but no transform or bound accepts it.
    """

    name: ClassVar[str] = "variant"


@dataclass(frozen=True, slots=True)
class DecimalType(PrimitiveType):
    """``decimal(P,S)``: fixed-point decimal, precision at most 38, scale fixed."""

    precision: int
    scale: int

    def json_string(self) -> str:
        """The canonical JSON string, ``decimal(P,S)`` without spaces."""
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True, slots=True)
class FixedType(PrimitiveType):
    """``fixed(L)``: a byte array of exactly L bytes; JSON ``fixed[L]``."""

    length: int

    def json_string(self) -> str:
        """The JSON string ``fixed[L]``."""
        return f"fixed[{self.length}]"

    def __str__(self) -> str:
        return f"fixed({self.length})"


@dataclass(frozen=True, slots=True)
class GeometryType(PrimitiveType):
    """v3 ``geometry(C)``, kept opaque: only its CRS parameter is parsed.

    Attributes:
        crs: the CRS as written, or None when the JSON was plain ``geometry`` (which means
            ``OGC:CRS84``); None is kept so that the string round-trips.
    """

    crs: str | None = None

    def json_string(self) -> str:
        """The JSON string: ``geometry`` or ``geometry(<C>)``."""
        return "geometry" if self.crs is None else f"geometry({self.crs})"


@dataclass(frozen=True, slots=True)
class GeographyType(PrimitiveType):
    """v3 ``geography(C, A)``, kept opaque: only its parameters are parsed.

    Attributes:
        crs: the CRS as written, None when absent (meaning ``OGC:CRS84``).
        algorithm: the edge-interpolation algorithm, None when absent (``spherical``).
    """

    crs: str | None = None
    algorithm: str | None = None

    def json_string(self) -> str:
        """The JSON string: ``geography``, ``geography(<C>)`` or ``geography(<C>, <A>)``."""
        if self.crs is None:
            return "geography"
        if self.algorithm is None:
            return f"geography({self.crs})"
        return f"geography({self.crs}, {self.algorithm})"


@dataclass(frozen=True, slots=True)
class NestedField:
    """A named, numbered field of a struct (and the element/key/value of lists and maps).

    Attributes:
        field_id: the id, unique in the table schema.
        name: the field name (may contain dots; it is a literal name).
        field_type: the field's type.
        required: whether values can be null.
        doc: the optional comment.
        initial_default: raw JSON (Appendix D single value) used for rows written before
            the field existed; None when absent or null.
        write_default: raw JSON single value used when a writer does not supply the field.
        extra: keys of the field JSON that Icecore does not model, written back as found
            (an explicit ``"initial-default": null`` is kept here too).
    """

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __hash__(self) -> int:
        # Defaults and extras may be JSON lists/objects; they take part in == only.
        return hash((self.field_id, self.name, self.field_type, self.required))

    @property
    def optional(self) -> bool:
        """Whether values can be null."""
        return not self.required

    def __str__(self) -> str:
        text = f"{self.field_id}: {self.name}: {'required' if self.required else 'optional'}"
        text += f" {self.field_type}"
        return text if self.doc is None else f"{text} ({self.doc})"


@dataclass(frozen=True, slots=True)
class StructType(NestedType):
    """``struct<...>``: an ordered tuple of named fields."""

    fields: tuple[NestedField, ...] = ()

    def __post_init__(self) -> None:
        # Accept any sequence of fields; store a tuple so the type stays hashable.
        object.__setattr__(self, "fields", tuple(self.fields))

    def child_fields(self) -> tuple[NestedField, ...]:
        """The struct's fields, in order."""
        return self.fields

    def field(self, field_id: int) -> NestedField | None:
        """The direct child with this id, or None."""
        for f in self.fields:
            if f.field_id == field_id:
                return f
        return None

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        """The direct child with this (literal) name, or None."""
        if case_sensitive:
            return next((f for f in self.fields if f.name == name), None)
        lowered = name.lower()
        return next((f for f in self.fields if f.name.lower() == lowered), None)

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __str__(self) -> str:
        return f"struct<{', '.join(str(f) for f in self.fields)}>"


@dataclass(frozen=True, slots=True)
class ListType(NestedType):
    """``list<T>``: values of one element type; the element has its own field id."""

    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        """The element as a field named ``element`` (the spec's column-name convention)."""
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    def child_fields(self) -> tuple[NestedField, ...]:
        """The element field."""
        return (self.element_field,)

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True, slots=True)
class MapType(NestedType):
    """``map<K, V>``: key/value pairs; keys are always required."""

    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        """The key as a required field named ``key``."""
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        """The value as a field named ``value``."""
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    def child_fields(self) -> tuple[NestedField, ...]:
        """The key and value fields."""
        return (self.key_field, self.value_field)

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


_SIMPLE: dict[str, PrimitiveType] = {
    t.name: t
    for t in (
        UnknownType(),
        BooleanType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzType(),
        TimestampNanoType(),
        TimestamptzNanoType(),
        StringType(),
        UUIDType(),
        BinaryType(),
        VariantType(),
    )
}
_DECIMAL = re.compile(r"decimal\s*\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
_FIXED = re.compile(r"fixed\s*\[\s*(\d+)\s*\]")
_GEOMETRY = re.compile(r"geometry\s*(?:\(\s*([^,()]*?)\s*\))?")
_GEOGRAPHY = re.compile(r"geography\s*(?:\(\s*([^,()]*?)\s*(?:,\s*([^,()]*?)\s*)?\))?")

_FIELD_KEYS = frozenset(
    {"id", "name", "required", "type", "doc", "initial-default", "write-default"}
)


def primitive_from_string(text: str, *, check_precision: bool = True) -> PrimitiveType:
    """Parse a primitive type string of Appendix C (whitespace around parameters allowed).

    Args:
        text: the type string.
        check_precision: refuse a decimal precision outside 1-38 here (metadata parsing);
            callers that run :func:`check_type` afterwards pass False.

    Raises:
        Unsupported: the string names no type Icecore knows (a newer spec's type).
        InvalidMetadata: a decimal breaks the precision limit.
    """
    simple = _SIMPLE.get(text.strip())
    if simple is not None:
        return simple
    stripped = text.strip()
    if m := _DECIMAL.fullmatch(stripped):
        precision, scale = int(m.group(1)), int(m.group(2))
        if check_precision and not 0 < precision <= MAX_DECIMAL_PRECISION:
            raise InvalidMetadata(
                f"Type {text!r} has precision {precision}; the spec allows 1 to 38."
            )
        return DecimalType(precision, scale)
    if m := _FIXED.fullmatch(stripped):
        return FixedType(int(m.group(1)))
    if m := _GEOMETRY.fullmatch(stripped):
        return GeometryType(m.group(1))
    if m := _GEOGRAPHY.fullmatch(stripped):
        return GeographyType(m.group(1), m.group(2))
    raise Unsupported(f"Type {text!r} is not a type Icecore knows; it may need a newer Icecore.")


def check_type(t: IcebergType, column: str | None = None) -> None:
    """Refuse a type whose parameters the spec or Spark rejects, before it reaches a schema.

    The one check of type parameters, used by the type text parser, the schema builders
    and every schema a commit or dry run adds. Reading metadata stays lenient (a table
    someone else wrote must still open); a change made here must leave a table every
    engine can read. Rules ("Schemas and Data Types", "Nested Types", "Primitive Types"):

    * ``decimal(P,S)``: 1 <= P <= 38 and 0 <= S <= P (Spark refuses a scale above the
      precision or below 0, and then cannot read the table at all);
    * ``fixed(L)``: 1 <= L <= 2**31 - 1;
    * ``geometry(C)``/``geography(C, A)``: C not empty and not inline PROJJSON, A one of
      the spec's algorithms;
    * ``unknown`` must be optional: never a map key, an element or value only when optional;
    * struct fields have non-empty names; every nested type is checked in turn;
    * structs, lists and maps nest at most :data:`MAX_NESTING` levels (Icecore's bound).

    Args:
        t: the type to check.
        column: the column it belongs to, named in the message.

    Raises:
        ValidationError: one sentence naming the column, the type and the rule broken.
    """
    if nesting_depth(t) > MAX_NESTING:
        where = "" if column is None else f"Column {column!r}: "
        raise ValidationError(f"{where}{_too_deep()}")
    problem = _type_problem(t, column)
    if problem is not None:
        raise ValidationError(problem)


def nesting_depth(t: IcebergType) -> int:
    """How many struct, list and map levels ``t`` has (0 for a primitive).

    Measured without recursion, so a type of any depth is measured (and then refused).
    """
    deepest = 0
    pending: list[tuple[IcebergType, int]] = [(t, 1)]
    while pending:
        current, level = pending.pop()
        if isinstance(current, NestedType):
            deepest = max(deepest, level)
            pending.extend((child.field_type, level + 1) for child in current.child_fields())
    return deepest


def _too_deep() -> str:
    """The refusal of a type nested deeper than :data:`MAX_NESTING` (one sentence)."""
    return (
        f"structs, lists and maps are nested more than {MAX_NESTING} levels deep, more than "
        "Icecore reads; flatten the schema."
    )


def _type_problem(t: IcebergType, column: str | None) -> str | None:
    where = "" if column is None else f" for column {column!r}"

    def inner(name: str) -> str:
        return name if column is None else f"{column}.{name}"

    if isinstance(t, DecimalType):
        p, s = t.precision, t.scale
        if not 1 <= p <= MAX_DECIMAL_PRECISION:
            return (
                f"Cannot use {t}{where}: a decimal's precision must be between 1 and "
                f"{MAX_DECIMAL_PRECISION}."
            )
        if not 0 <= s <= p:
            return (
                f"Cannot use {t}{where}: a decimal's scale must be between 0 and its "
                f"precision ({p})."
            )
        return None
    if isinstance(t, FixedType):
        if not 1 <= t.length <= MAX_FIXED_LENGTH:
            return (
                f"Cannot use {t}{where}: a fixed type's length must be between 1 and "
                f"{MAX_FIXED_LENGTH} bytes."
            )
        return None
    if isinstance(t, GeometryType | GeographyType):
        crs = t.crs
        if crs is not None and (not crs.strip() or "{" in crs):
            return (
                f"Cannot use {t}{where}: the CRS must be a non-empty identifier such "
                "as EPSG:4326 or projjson:<property>, never inline PROJJSON."
            )
        algorithm = t.algorithm if isinstance(t, GeographyType) else None
        if algorithm is not None and algorithm not in GEOGRAPHY_ALGORITHMS:
            return (
                f"Cannot use {t}{where}: the edge algorithm must be one of "
                f"{', '.join(sorted(GEOGRAPHY_ALGORITHMS))}."
            )
        return None
    if isinstance(t, StructType):
        for f in t.fields:
            if not f.name:
                return f"Cannot use {t}{where}: a struct field needs a name."
            if isinstance(f.field_type, UnknownType) and f.required:
                return (
                    f"Cannot make field {inner(f.name)!r} required: unknown columns are always "
                    "optional."
                )
            problem = _type_problem(f.field_type, inner(f.name))
            if problem is not None:
                return problem
        return None
    if isinstance(t, ListType):
        if isinstance(t.element_type, UnknownType) and t.element_required:
            return f"Cannot use {t}{where}: an unknown element must be optional."
        return _type_problem(t.element_type, inner("element"))
    if isinstance(t, MapType):
        if isinstance(t.key_type, UnknownType):
            return (
                f"Cannot use {t}{where}: map keys are required and an unknown value is always null."
            )
        if isinstance(t.value_type, UnknownType) and t.value_required:
            return f"Cannot use {t}{where}: an unknown map value must be optional."
        return _type_problem(t.key_type, inner("key")) or _type_problem(
            t.value_type, inner("value")
        )
    return None


def _get(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if value is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidMetadata(f"{where} needs {key!r} of JSON type {kind}, got {value!r}.")
    return value


def _int(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidMetadata(f"{where} needs an integer {key!r}, got {value!r}.")
    return value


def _bool(obj: Mapping[str, Any], key: str, where: str) -> bool:
    value = obj.get(key)
    if not isinstance(value, bool):
        raise InvalidMetadata(f"{where} needs a boolean {key!r}, got {value!r}.")
    return value


def field_from_json(obj: Any, *, depth: int = 0) -> NestedField:
    """Parse one struct field object of Appendix C, keeping unknown keys in ``extra``.

    Args:
        obj: the field's JSON object.
        depth: how many struct, list and map types enclose the field (its struct's level).

    Raises:
        InvalidMetadata: a required key is missing or has the wrong JSON type, or the
            field's type nests deeper than :data:`MAX_NESTING`.
    """
    if not isinstance(obj, Mapping):
        raise InvalidMetadata(f"A struct field must be a JSON object, got {obj!r}.")
    where = f"Field {obj.get('name')!r}"
    field_id = _int(obj, "id", where)
    name = _get(obj, "name", str, where)
    required = _bool(obj, "required", where)
    if "type" not in obj:
        raise InvalidMetadata(f"{where} has no 'type'.")
    field_type = type_from_json(obj["type"], depth=depth)
    doc = obj.get("doc")
    if doc is not None and not isinstance(doc, str):
        raise InvalidMetadata(f"{where} has a non-string 'doc': {doc!r}.")
    extra = {k: v for k, v in obj.items() if k not in _FIELD_KEYS}
    # Absent and null defaults mean the same; keep an explicit null so it round-trips.
    for key in ("doc", "initial-default", "write-default"):
        if key in obj and obj[key] is None:
            extra[key] = None
    return NestedField(
        field_id=field_id,
        name=name,
        field_type=field_type,
        required=required,
        doc=doc,
        initial_default=obj.get("initial-default"),
        write_default=obj.get("write-default"),
        extra=MappingProxyType(extra) if extra else _EMPTY,
    )


def field_to_json(f: NestedField) -> dict[str, Any]:
    """Serialize one struct field (Appendix C), putting back any unknown keys."""
    out: dict[str, Any] = {
        "id": f.field_id,
        "name": f.name,
        "required": f.required,
        "type": type_to_json(f.field_type),
    }
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = f.initial_default
    if f.write_default is not None:
        out["write-default"] = f.write_default
    for key, value in f.extra.items():
        out.setdefault(key, value)
    return out


def type_from_json(obj: Any, *, depth: int = 0) -> IcebergType:
    """Parse a type from its Appendix C JSON form (a string or a struct/list/map object).

    Args:
        obj: the type's JSON form.
        depth: how many struct, list and map types enclose it (0 for a column's type).

    Raises:
        InvalidMetadata: the JSON breaks the spec's shape, or nests deeper than
            :data:`MAX_NESTING` (refused before recursing further).
        Unsupported: the JSON names a type Icecore does not know.
    """
    if isinstance(obj, str):
        return primitive_from_string(obj)
    if not isinstance(obj, Mapping):
        raise InvalidMetadata(f"A type must be a JSON string or object, got {obj!r}.")
    kind = obj.get("type")
    level = depth + 1
    if kind in ("struct", "list", "map") and level > MAX_NESTING:
        raise InvalidMetadata(f"The schema's {_too_deep()}")
    if kind == "struct":
        fields = obj.get("fields")
        if not isinstance(fields, list):
            raise InvalidMetadata(f"A struct type needs a 'fields' list, got {fields!r}.")
        return StructType(tuple(field_from_json(f, depth=level) for f in fields))
    if kind == "list":
        if "element" not in obj:
            raise InvalidMetadata("A list type has no 'element'.")
        return ListType(
            element_id=_int(obj, "element-id", "A list type"),
            element_type=type_from_json(obj["element"], depth=level),
            element_required=_bool(obj, "element-required", "A list type"),
        )
    if kind == "map":
        if "key" not in obj or "value" not in obj:
            raise InvalidMetadata("A map type needs both 'key' and 'value'.")
        return MapType(
            key_id=_int(obj, "key-id", "A map type"),
            key_type=type_from_json(obj["key"], depth=level),
            value_id=_int(obj, "value-id", "A map type"),
            value_type=type_from_json(obj["value"], depth=level),
            value_required=_bool(obj, "value-required", "A map type"),
        )
    raise Unsupported(f"Nested type {kind!r} is not a type Icecore knows.")


def type_to_json(t: IcebergType) -> Any:
    """Serialize a type to its Appendix C JSON form (a string or a dict)."""
    if isinstance(t, PrimitiveType):
        return t.json_string()
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {
            "type": "list",
            "element-id": t.element_id,
            "element": type_to_json(t.element_type),
            "element-required": t.element_required,
        }
    if isinstance(t, MapType):
        return {
            "type": "map",
            "key-id": t.key_id,
            "key": type_to_json(t.key_type),
            "value-id": t.value_id,
            "value": type_to_json(t.value_type),
            "value-required": t.value_required,
        }
    raise Unsupported(f"Cannot serialize type {t!r}.")


__all__ = [
    "MAX_DECIMAL_PRECISION",
    "MAX_NESTING",
    "GEOGRAPHY_ALGORITHMS",
    "MAX_FIXED_LENGTH",
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "GeographyType",
    "GeometryType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "NestedType",
    "PrimitiveType",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampNanoType",
    "TimestampType",
    "TimestamptzNanoType",
    "TimestamptzType",
    "UUIDType",
    "UnknownType",
    "VariantType",
    "check_type",
    "field_from_json",
    "nesting_depth",
    "field_to_json",
    "primitive_from_string",
    "type_from_json",
    "type_to_json",
]
