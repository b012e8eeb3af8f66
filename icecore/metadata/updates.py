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

from icecore.metadata.model import (
    EncryptedKey,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotRef,
    StatisticsFile,
)
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
        last_column_id: the table's ``last-column-id`` after this update; None (the REST
            field is deprecated and optional) for the higher of the table's and the schema's.
    """

    action: ClassVar[str] = "add-schema"
    schema: Schema
    last_column_id: int | None


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


@dataclass(frozen=True, slots=True)
class AssignUUID:
    """Give the table its uuid ("Table Metadata Fields": ``table-uuid``); never change it."""

    action: ClassVar[str] = "assign-uuid"
    uuid: str


@dataclass(frozen=True, slots=True)
class UpgradeFormatVersion:
    """Raise the format version (never lower it: "Format Versioning")."""

    action: ClassVar[str] = "upgrade-format-version"
    format_version: int


@dataclass(frozen=True, slots=True)
class SetLocation:
    """Move the table's base ``location``."""

    action: ClassVar[str] = "set-location"
    location: str


@dataclass(frozen=True, slots=True)
class AddSnapshot:
    """Add a snapshot written by an engine ("Snapshots"); a ref update makes it current."""

    action: ClassVar[str] = "add-snapshot"
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class SetSnapshotRef:
    """Create or move a branch or tag ("Snapshot References"); ``main`` is the current one."""

    action: ClassVar[str] = "set-snapshot-ref"
    ref_name: str
    ref: SnapshotRef


@dataclass(frozen=True, slots=True)
class RemoveSnapshotRef:
    """Drop a branch or tag (dropping ``main`` leaves no current snapshot)."""

    action: ClassVar[str] = "remove-snapshot-ref"
    ref_name: str


@dataclass(frozen=True, slots=True)
class RemoveSnapshots:
    """Expire snapshots, with the refs and statistics that pointed at them."""

    action: ClassVar[str] = "remove-snapshots"
    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SetStatistics:
    """Register a Puffin table statistics file, replacing the snapshot's previous one."""

    action: ClassVar[str] = "set-statistics"
    statistics: StatisticsFile


@dataclass(frozen=True, slots=True)
class RemoveStatistics:
    """Unregister the table statistics file of a snapshot."""

    action: ClassVar[str] = "remove-statistics"
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class SetPartitionStatistics:
    """Register a partition statistics file, replacing the snapshot's previous one."""

    action: ClassVar[str] = "set-partition-statistics"
    partition_statistics: PartitionStatisticsFile


@dataclass(frozen=True, slots=True)
class RemovePartitionStatistics:
    """Unregister the partition statistics file of a snapshot."""

    action: ClassVar[str] = "remove-partition-statistics"
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class RemoveSchemas:
    """Drop schemas no longer used (never the current one, nor one a snapshot names)."""

    action: ClassVar[str] = "remove-schemas"
    schema_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RemovePartitionSpecs:
    """Drop partition specs no longer used (never the default one)."""

    action: ClassVar[str] = "remove-partition-specs"
    spec_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AddEncryptionKey:
    """Track a table encryption key (v3 "Encryption Keys")."""

    action: ClassVar[str] = "add-encryption-key"
    encryption_key: EncryptedKey


@dataclass(frozen=True, slots=True)
class RemoveEncryptionKey:
    """Stop tracking a table encryption key (v3 "Encryption Keys")."""

    action: ClassVar[str] = "remove-encryption-key"
    key_id: str


MetadataUpdate = (
    AssignUUID
    | UpgradeFormatVersion
    | AddSchema
    | SetCurrentSchema
    | AddPartitionSpec
    | SetDefaultSpec
    | AddSortOrder
    | SetDefaultSortOrder
    | AddSnapshot
    | SetSnapshotRef
    | RemoveSnapshots
    | RemoveSnapshotRef
    | SetLocation
    | SetProperties
    | RemoveProperties
    | SetStatistics
    | RemoveStatistics
    | SetPartitionStatistics
    | RemovePartitionStatistics
    | RemoveSchemas
    | RemovePartitionSpecs
    | AddEncryptionKey
    | RemoveEncryptionKey
)
"""Any update a commit can apply: every ``TableUpdate`` of the REST catalog's OpenAPI."""

__all__ = [
    "LAST_ADDED",
    "AddEncryptionKey",
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AssignUUID",
    "MetadataUpdate",
    "RemoveEncryptionKey",
    "RemovePartitionSpecs",
    "RemovePartitionStatistics",
    "RemoveProperties",
    "RemoveSchemas",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "RemoveStatistics",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetLocation",
    "SetPartitionStatistics",
    "SetProperties",
    "SetSnapshotRef",
    "SetStatistics",
    "UpgradeFormatVersion",
]
