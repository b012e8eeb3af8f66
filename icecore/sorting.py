"""Sort orders: how data files are sorted within partitions.

Implements the spec's "Sorting" section and the sort order JSON of Appendix C, including
the v3 ``source-ids`` list form. Order id 0 is reserved for the unsorted order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from icecore.errors import InvalidMetadata
from icecore.partitioning import source_ids_from_json
from icecore.transforms import IdentityTransform, Transform, parse_transform_lenient

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_FIELD_KEYS = frozenset({"transform", "source-id", "source-ids", "direction", "null-order"})
_ORDER_KEYS = frozenset({"order-id", "fields"})

UNSORTED_ORDER_ID = 0
"""Spec "Sorting": order id 0 is reserved for the unsorted order."""


class SortDirection(Enum):
    """A sort field's direction, spelled as in the JSON."""

    ASC = "asc"
    DESC = "desc"


class NullOrder(Enum):
    """Where nulls sort, spelled as in the JSON."""

    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"


@dataclass(frozen=True, slots=True)
class SortField:
    """One field of a sort order.

    Attributes:
        source_id: the (first) source column id.
        transform: the transform whose result is sorted.
        direction: ascending or descending.
        null_order: nulls first or last.
        source_ids: the v3 ``source-ids`` list when the JSON had one, else None.
        source_id_in_json: whether the JSON had ``source-id``; written back only if so.
        extra: keys of the field JSON Icecore does not model, written back as found.
    """

    source_id: int
    transform: Transform = field(default_factory=IdentityTransform)
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST
    source_ids: tuple[int, ...] | None = None
    source_id_in_json: bool = field(default=True, compare=False)
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False, compare=False)

    def __hash__(self) -> int:
        return hash((self.source_id, self.transform, self.direction, self.null_order))

    def __str__(self) -> str:
        order = self.null_order.value.replace("-", " ").upper()
        return f"{self.transform}({self.source_id}) {self.direction.value.upper()} {order}"


@dataclass(frozen=True, slots=True)
class SortOrder:
    """A sort order: an id and the fields sorted on, most significant first."""

    order_id: int = UNSORTED_ORDER_ID
    fields: tuple[SortField, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    def __hash__(self) -> int:
        return hash((self.order_id, self.fields))

    def __iter__(self) -> Iterator[SortField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    @property
    def is_unsorted(self) -> bool:
        """Whether the order has no fields."""
        return not self.fields

    def __str__(self) -> str:
        return "[" + ", ".join(str(f) for f in self.fields) + "]"


UNSORTED_SORT_ORDER = SortOrder(UNSORTED_ORDER_ID, ())
"""The unsorted order (id 0, no fields)."""


def _enum(kind: type[SortDirection] | type[NullOrder], value: Any, where: str) -> Any:
    try:
        return kind(value)
    except ValueError as e:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise InvalidMetadata(f"{where} has {value!r}; expected one of {allowed}.") from e


def sort_field_from_json(obj: Any) -> SortField:
    """Parse one sort field object of Appendix C.

    Raises:
        InvalidMetadata: a required key is missing or has a value outside the spec.
    """
    if not isinstance(obj, Mapping):
        raise InvalidMetadata(f"A sort field must be a JSON object, got {obj!r}.")
    where = "A sort field"
    source_id, source_ids = source_ids_from_json(obj, where)
    extra = {k: v for k, v in obj.items() if k not in _FIELD_KEYS}
    return SortField(
        source_id=source_id,
        transform=parse_transform_lenient(obj.get("transform")),
        direction=_enum(SortDirection, obj.get("direction"), where),
        null_order=_enum(NullOrder, obj.get("null-order"), where),
        source_ids=source_ids,
        source_id_in_json="source-id" in obj,
        extra=MappingProxyType(extra) if extra else _EMPTY,
    )


def sort_field_to_json(f: SortField) -> dict[str, Any]:
    """Serialize one sort field; the source id keys are written as they were read."""
    out: dict[str, Any] = {"transform": str(f.transform)}
    if f.source_id_in_json or f.source_ids is None:
        out["source-id"] = f.source_id
    if f.source_ids is not None:
        out["source-ids"] = list(f.source_ids)
    out["direction"] = f.direction.value
    out["null-order"] = f.null_order.value
    for key, value in f.extra.items():
        out.setdefault(key, value)
    return out


def sort_order_from_json(obj: Any) -> SortOrder:
    """Parse a sort order object of Appendix C.

    Raises:
        InvalidMetadata: the JSON breaks the spec's shape.
    """
    if not isinstance(obj, Mapping):
        raise InvalidMetadata(f"A sort order must be a JSON object, got {obj!r}.")
    order_id = obj.get("order-id")
    if not isinstance(order_id, int) or isinstance(order_id, bool):
        raise InvalidMetadata(f"A sort order needs an integer 'order-id', got {order_id!r}.")
    raw = obj.get("fields")
    if not isinstance(raw, list):
        raise InvalidMetadata(f"Sort order {order_id} needs a 'fields' list.")
    extra = {k: v for k, v in obj.items() if k not in _ORDER_KEYS}
    return SortOrder(
        order_id,
        tuple(sort_field_from_json(f) for f in raw),
        MappingProxyType(extra) if extra else _EMPTY,
    )


def sort_order_to_json(order: SortOrder) -> dict[str, Any]:
    """Serialize a sort order to its Appendix C object form."""
    out: dict[str, Any] = {
        "order-id": order.order_id,
        "fields": [sort_field_to_json(f) for f in order.fields],
    }
    for key, value in order.extra.items():
        out.setdefault(key, value)
    return out


__all__ = [
    "UNSORTED_ORDER_ID",
    "UNSORTED_SORT_ORDER",
    "NullOrder",
    "SortDirection",
    "SortField",
    "SortOrder",
    "sort_field_from_json",
    "sort_field_to_json",
    "sort_order_from_json",
    "sort_order_to_json",
]
