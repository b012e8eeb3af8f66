"""Metadata updates: the tagged values a commit applies to table metadata.

Each change a commit makes is one small immutable value named as in the Iceberg REST
catalog's ``TableUpdate`` (``add-schema``, ``set-current-schema``, ...), so a change can be
recorded, shown in a dry run, and re-applied to a newer base on retry. Only
:class:`icecore.metadata.builder.MetadataBuilder` gives them meaning, in one dispatcher.

Ids that depend on what the table already holds (a new schema id, spec id or sort order id)
are not carried here: the builder assigns them when it applies the update, reusing the id of
an identical existing entry, so a retried update never collides with an id a concurrent
writer took. :data:`LAST_ADDED` (-1) in ``set-current-schema``, ``set-default-spec`` and
``set-default-sort-order`` names whatever the preceding ``add-*`` update resolved to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.sorting import SortOrder

LAST_ADDED = -1
"""An id meaning "the schema, spec or sort order added last in this commit"."""


@dataclass(frozen=True, slots=True)
class AddSchema:
    """Add a schema (its ``schema_id`` is reassigned on apply) and raise ``last-column-id``.

    Attributes:
        schema: the new schema; new fields carry ids above the base's ``last-column-id``.
        last_column_id: the table's ``last-column-id`` after this update.
    """

    action: ClassVar[str] = "add-schema"
    schema: Schema
    last_column_id: int


@dataclass(frozen=True, slots=True)
class SetCurrentSchema:
    """Make a schema current (``LAST_ADDED`` for the one just added)."""

    action: ClassVar[str] = "set-current-schema"
    schema_id: int


@dataclass(frozen=True, slots=True)
class AddPartitionSpec:
    """Add a partition spec (its ``spec_id`` is reassigned on apply; field ids are kept)."""

    action: ClassVar[str] = "add-spec"
    spec: PartitionSpec


@dataclass(frozen=True, slots=True)
class SetDefaultSpec:
    """Make a partition spec the default (``LAST_ADDED`` for the one just added)."""

    action: ClassVar[str] = "set-default-spec"
    spec_id: int


@dataclass(frozen=True, slots=True)
class AddSortOrder:
    """Add a sort order (its ``order_id`` is reassigned on apply)."""

    action: ClassVar[str] = "add-sort-order"
    order: SortOrder


@dataclass(frozen=True, slots=True)
class SetDefaultSortOrder:
    """Make a sort order the default (``LAST_ADDED`` for the one just added)."""

    action: ClassVar[str] = "set-default-sort-order"
    order_id: int


@dataclass(frozen=True, slots=True)
class SetProperties:
    """Set table properties (other keys are left alone)."""

    action: ClassVar[str] = "set-properties"
    updates: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "updates", MappingProxyType(dict(self.updates)))

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.updates.items())))


@dataclass(frozen=True, slots=True)
class RemoveProperties:
    """Remove table properties (keys that are absent are ignored)."""

    action: ClassVar[str] = "remove-properties"
    removals: tuple[str, ...] = ()


MetadataUpdate = (
    AddSchema
    | SetCurrentSchema
    | AddPartitionSpec
    | SetDefaultSpec
    | AddSortOrder
    | SetDefaultSortOrder
    | SetProperties
    | RemoveProperties
)
"""Any update a commit can apply."""

__all__ = [
    "LAST_ADDED",
    "AddPartitionSpec",
    "AddSchema",
    "AddSortOrder",
    "MetadataUpdate",
    "RemoveProperties",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetProperties",
]
