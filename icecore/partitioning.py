"""Partition specs: how rows map to partition tuples, and the tuple's struct type.

Implements the spec's "Partitioning" section and the partition spec JSON of Appendix C,
including the v3 ``source-ids`` list form and the v1 rule that fields without a
``field-id`` were numbered from 1000 within each spec ("Partition Evolution").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from icecore.errors import InvalidMetadata
from icecore.schema import Schema
from icecore.transforms import Transform, parse_transform_lenient
from icecore.types import NestedField, StructType, UnknownType

PARTITION_DATA_ID_START = 1000
"""First partition field id; v1 specs numbered their fields from here ("Partition Evolution")."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_FIELD_KEYS = frozenset({"source-id", "source-ids", "field-id", "name", "transform"})
_SPEC_KEYS = frozenset({"spec-id", "fields"})


@dataclass(frozen=True, slots=True)
class PartitionField:
    """One field of a partition spec.

    Attributes:
        source_id: the (first) source column id.
        field_id: the partition field id, unique across specs in v2+.
        name: the partition field name.
        transform: the transform applied to the source column.
        source_ids: the ``source-ids`` list when the JSON had one (v3), else None.
        source_id_in_json: whether the JSON had ``source-id``; written back only if so.
        extra: keys of the field JSON Icecore does not model, written back as found.
    """

    source_id: int
    field_id: int
    name: str
    transform: Transform
    source_ids: tuple[int, ...] | None = None
    source_id_in_json: bool = field(default=True, compare=False)
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False, compare=False)

    def __hash__(self) -> int:
        return hash((self.source_id, self.field_id, self.name, self.transform, self.source_ids))

    @property
    def all_source_ids(self) -> tuple[int, ...]:
        """Every source column id (one, unless a v3 multi-argument transform)."""
        return self.source_ids if self.source_ids is not None else (self.source_id,)

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"


def _int(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidMetadata(f"{where} needs an integer {key!r}, got {value!r}.")
    return value


def source_ids_from_json(obj: Mapping[str, Any], where: str) -> tuple[int, tuple[int, ...] | None]:
    """Read ``source-id`` and/or the v3 ``source-ids`` list of a partition or sort field.

    Returns:
        (the first source id, the ``source-ids`` tuple or None when absent).

    Raises:
        InvalidMetadata: neither key is present, or one holds something other than ints.
    """
    ids: tuple[int, ...] | None = None
    if "source-ids" in obj:
        raw = obj["source-ids"]
        if (
            not isinstance(raw, list)
            or not raw
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in raw)
        ):
            raise InvalidMetadata(f"{where} has a bad 'source-ids' list: {raw!r}.")
        ids = tuple(raw)
    if "source-id" in obj:
        return _int(obj, "source-id", where), ids
    if ids is None:
        raise InvalidMetadata(f"{where} has neither 'source-id' nor 'source-ids'.")
    return ids[0], ids


def partition_field_from_json(obj: Any, default_field_id: int | None = None) -> PartitionField:
    """Parse one partition field object of Appendix C.

    Args:
        obj: the field JSON.
        default_field_id: the id to use when ``field-id`` is missing (v1 metadata).

    Raises:
        InvalidMetadata: a required key is missing or has the wrong JSON type.
    """
    if not isinstance(obj, Mapping):
        raise InvalidMetadata(f"A partition field must be a JSON object, got {obj!r}.")
    where = f"Partition field {obj.get('name')!r}"
    source_id, source_ids = source_ids_from_json(obj, where)
    if "field-id" in obj or default_field_id is None:
        field_id = _int(obj, "field-id", where)
    else:
        field_id = default_field_id
    name = obj.get("name")
    if not isinstance(name, str):
        raise InvalidMetadata(f"{where} needs a string 'name'.")
    extra = {k: v for k, v in obj.items() if k not in _FIELD_KEYS}
    return PartitionField(
        source_id=source_id,
        field_id=field_id,
        name=name,
        transform=parse_transform_lenient(obj.get("transform")),
        source_ids=source_ids,
        source_id_in_json="source-id" in obj,
        extra=MappingProxyType(extra) if extra else _EMPTY,
    )


def partition_field_to_json(f: PartitionField) -> dict[str, Any]:
    """Serialize one partition field; the source id keys are written as they were read."""
    out: dict[str, Any] = {}
    if f.source_id_in_json or f.source_ids is None:
        out["source-id"] = f.source_id
    if f.source_ids is not None:
        out["source-ids"] = list(f.source_ids)
    out["field-id"] = f.field_id
    out["name"] = f.name
    out["transform"] = str(f.transform)
    for key, value in f.extra.items():
        out.setdefault(key, value)
    return out


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A partition spec: an id and an ordered list of partition fields.

    Attributes:
        spec_id: the spec id.
        fields: the partition fields, in tuple order.
        extra: keys of the spec JSON Icecore does not model, written back as found.
    """

    spec_id: int = 0
    fields: tuple[PartitionField, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    def __hash__(self) -> int:
        return hash((self.spec_id, self.fields))

    def __iter__(self) -> Iterator[PartitionField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"

    @property
    def is_unpartitioned(self) -> bool:
        """Whether the spec has no fields or only ``void`` ones."""
        return all(f.transform.is_void for f in self.fields)

    @property
    def last_assigned_field_id(self) -> int:
        """The largest partition field id, or 999 for an empty spec."""
        return max((f.field_id for f in self.fields), default=PARTITION_DATA_ID_START - 1)

    def fields_by_source_id(self, source_id: int) -> tuple[PartitionField, ...]:
        """The partition fields computed from this source column."""
        return tuple(f for f in self.fields if source_id in f.all_source_ids)

    def field_by_id(self, field_id: int) -> PartitionField | None:
        """The partition field with this id, or None."""
        return next((f for f in self.fields if f.field_id == field_id), None)

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Spec equivalence ("Partitioning"): same sources, transforms and names, in order."""
        return len(self.fields) == len(other.fields) and all(
            a.all_source_ids == b.all_source_ids
            and str(a.transform) == str(b.transform)
            and a.name == b.name
            for a, b in zip(self.fields, other.fields, strict=True)
        )

    def partition_type(self, schema: Schema) -> StructType:
        """The struct type of this spec's partition tuples against ``schema``.

        Each field is optional, with the transform's result type. A source column missing
        from the schema (dropped after a ``void`` replaced its transform) gives the
        transform's result for ``unknown``; an unknown transform gives ``string``.
        """
        result: list[NestedField] = []
        for f in self.fields:
            source = schema.find_type(f.source_id)
            source_type = source if source is not None else UnknownType()
            result.append(
                NestedField(
                    f.field_id, f.name, f.transform.result_type(source_type), required=False
                )
            )
        return StructType(tuple(result))


UNPARTITIONED_SPEC = PartitionSpec(0, ())
"""The spec with no fields, id 0."""


def partition_spec_from_json(obj: Any) -> PartitionSpec:
    """Parse a partition spec object of Appendix C, or a bare v1 field list (spec id 0).

    Fields without ``field-id`` (v1) get 1000, 1001, ... in order within this spec.

    Raises:
        InvalidMetadata: the JSON breaks the spec's shape.
    """
    if isinstance(obj, list):
        obj = {"spec-id": 0, "fields": obj}
    if not isinstance(obj, Mapping):
        raise InvalidMetadata(f"A partition spec must be a JSON object, got {obj!r}.")
    spec_id = obj.get("spec-id", 0)
    if not isinstance(spec_id, int) or isinstance(spec_id, bool):
        raise InvalidMetadata(f"A partition spec's 'spec-id' must be an integer: {spec_id!r}.")
    raw_fields = obj.get("fields")
    if not isinstance(raw_fields, list):
        raise InvalidMetadata(f"Partition spec {spec_id} needs a 'fields' list.")
    fields = tuple(
        partition_field_from_json(f, PARTITION_DATA_ID_START + i) for i, f in enumerate(raw_fields)
    )
    extra = {k: v for k, v in obj.items() if k not in _SPEC_KEYS}
    return PartitionSpec(spec_id, fields, MappingProxyType(extra) if extra else _EMPTY)


def partition_spec_to_json(spec: PartitionSpec) -> dict[str, Any]:
    """Serialize a partition spec to its Appendix C object form."""
    out: dict[str, Any] = {
        "spec-id": spec.spec_id,
        "fields": [partition_field_to_json(f) for f in spec.fields],
    }
    for key, value in spec.extra.items():
        out.setdefault(key, value)
    return out


__all__ = [
    "PARTITION_DATA_ID_START",
    "UNPARTITIONED_SPEC",
    "PartitionField",
    "PartitionSpec",
    "partition_field_from_json",
    "partition_field_to_json",
    "partition_spec_from_json",
    "partition_spec_to_json",
    "source_ids_from_json",
]
