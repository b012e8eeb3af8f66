"""One normalized, immutable table metadata model for format versions 1, 2 and 3.

Implements the spec's "Table Metadata", "Snapshots", "Snapshot Reference", "Table statistics",
"Partition Statistics" and "Encryption Keys" sections. The JSON shapes of each format version
are the business of :mod:`icecore.metadata.serde`, which fills in the Appendix E defaults when
reading v1 files; this module only holds the result and answers lookups on it.

Every entity keeps the JSON keys Icecore does not model in ``extra`` so that a commit writes
back what a newer writer put in the file ("Rules of the house").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import Any

from icecore.errors import InvalidMetadata
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.sorting import SortOrder

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_EMPTY_BY_ID: Mapping[int, Any] = MappingProxyType({})

MAIN_BRANCH = "main"
"""The branch that ``current-snapshot-id`` always points at ("Table Metadata Fields")."""

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3)
"""Table format versions Icecore reads ("Format Versioning")."""


def _frozen(mapping: Mapping[Any, Any] | None) -> Mapping[Any, Any]:
    if not mapping:
        return _EMPTY
    if isinstance(mapping, MappingProxyType):
        return mapping
    return MappingProxyType(dict(mapping))


class Operation(StrEnum):
    """A snapshot summary's ``operation`` ("Snapshots").

    A :class:`StrEnum`, so ``summary.operation == "append"`` holds as well; an operation
    outside the spec's four is kept as a plain string.
    """

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"


class SnapshotRefType(Enum):
    """A snapshot reference's ``type`` ("Snapshot Reference")."""

    BRANCH = "branch"
    TAG = "tag"


@dataclass(frozen=True, slots=True)
class Summary:
    """A snapshot summary: the ``operation`` and the rest of the string map ("Snapshots").

    Attributes:
        operation: the operation, an :class:`Operation` when the spec names it, the raw string
            otherwise, None when the summary had no ``operation`` (only old v1 writers).
        properties: every other summary key (``added-data-files``, ``spark.app.id``, ...).
    """

    operation: Operation | str | None
    properties: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", _frozen(self.properties))

    def __hash__(self) -> int:
        return hash((self.operation, tuple(sorted(self.properties.items()))))

    def get(self, key: str, default: str | None = None) -> str | None:
        """A summary value by key (``operation`` included), or ``default``."""
        if key == "operation":
            return str(self.operation) if self.operation is not None else default
        return self.properties.get(key, default)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot of the table ("Snapshots").

    Attributes:
        snapshot_id: the unique snapshot id.
        parent_snapshot_id: the parent's id, or None for a snapshot without a parent.
        sequence_number: the data sequence number; 0 when the JSON had none (v1, Appendix E).
        timestamp_ms: when the snapshot was created, in ms from the epoch.
        manifest_list: location of the manifest list, or None (v1 inline ``manifests``).
        manifests: the v1 inline list of manifest locations, or None when absent.
        summary: the summary, or None when the (v1) JSON had none.
        schema_id: id of the current schema when the snapshot was created, or None.
        first_row_id: v3 row lineage start ("Row Lineage"), None when absent.
        added_rows: v3 upper bound of rows assigned row ids, None when absent.
        key_id: v3 id of the key that encrypts the manifest list key metadata, or None.
        sequence_number_in_json: whether the JSON had ``sequence-number``; written back only
            if so.
        extra: keys Icecore does not model (or optional keys set to null), written back.
    """

    snapshot_id: int
    timestamp_ms: int
    parent_snapshot_id: int | None = None
    sequence_number: int = 0
    manifest_list: str | None = None
    manifests: tuple[str, ...] | None = None
    summary: Summary | None = None
    schema_id: int | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None
    sequence_number_in_json: bool = field(default=True, compare=False)
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        if self.manifests is not None:
            object.__setattr__(self, "manifests", tuple(self.manifests))
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.snapshot_id, self.timestamp_ms, self.sequence_number))

    @property
    def operation(self) -> Operation | str | None:
        """The summary's operation, or None when there is no summary or no operation."""
        return self.summary.operation if self.summary is not None else None


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """A named branch or tag ("Snapshot Reference", "Snapshot Retention Policy").

    Attributes:
        snapshot_id: the tagged snapshot, or the branch's latest snapshot.
        type: branch or tag.
        min_snapshots_to_keep: branch retention, None when the table property applies.
        max_snapshot_age_ms: branch retention, None when the table property applies.
        max_ref_age_ms: how long the ref itself is kept, None when the table property applies.
        extra: keys Icecore does not model (or optional keys set to null), written back.
    """

    snapshot_id: int
    type: SnapshotRefType = SnapshotRefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.snapshot_id, self.type, self.max_ref_age_ms))

    @property
    def is_branch(self) -> bool:
        """Whether the ref is a branch."""
        return self.type is SnapshotRefType.BRANCH


@dataclass(frozen=True, slots=True)
class SnapshotLogEntry:
    """One ``snapshot-log`` entry: when the current snapshot changed, and to what.

    Attributes:
        timestamp_ms: the table's ``last-updated-ms`` at the change.
        snapshot_id: the new current snapshot id.
        extra: keys Icecore does not model, written back as found.
    """

    timestamp_ms: int
    snapshot_id: int
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.timestamp_ms, self.snapshot_id))


@dataclass(frozen=True, slots=True)
class MetadataLogEntry:
    """One ``metadata-log`` entry: a previous metadata file and when it was replaced.

    Attributes:
        timestamp_ms: the previous file's ``last-updated-ms``.
        metadata_file: the previous metadata file's location.
        extra: keys Icecore does not model, written back as found.
    """

    timestamp_ms: int
    metadata_file: str
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.timestamp_ms, self.metadata_file))


@dataclass(frozen=True, slots=True)
class BlobMetadata:
    """One blob of a statistics file ("Table statistics").

    Attributes:
        type: the blob type, as in the Puffin file (``apache-datasketches-theta-v1``, ...).
        snapshot_id: the snapshot the blob was computed from.
        sequence_number: that snapshot's sequence number.
        fields: ids of the fields the statistic was computed on, in order.
        properties: the blob properties, or None when the JSON had none.
        extra: keys Icecore does not model, written back as found.
    """

    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        if self.properties is not None:
            object.__setattr__(self, "properties", MappingProxyType(dict(self.properties)))
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.type, self.snapshot_id, self.sequence_number, self.fields))


@dataclass(frozen=True, slots=True)
class StatisticsFile:
    """A Puffin table statistics file registered in the metadata ("Table statistics").

    Attributes:
        snapshot_id: the snapshot the statistics belong to.
        statistics_path: the Puffin file's location.
        file_size_in_bytes: the file's size.
        file_footer_size_in_bytes: the size of the Puffin footer.
        blob_metadata: the blobs in the file.
        key_metadata: base64 encryption key metadata, or None.
        extra: keys Icecore does not model, written back as found.
    """

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[BlobMetadata, ...] = ()
    key_metadata: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "blob_metadata", tuple(self.blob_metadata))
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.snapshot_id, self.statistics_path))


@dataclass(frozen=True, slots=True)
class PartitionStatisticsFile:
    """A partition statistics file registered in the metadata ("Partition Statistics").

    Attributes:
        snapshot_id: the snapshot the statistics belong to.
        statistics_path: the file's location.
        file_size_in_bytes: the file's size.
        extra: keys Icecore does not model, written back as found.
    """

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.snapshot_id, self.statistics_path))


@dataclass(frozen=True, slots=True)
class EncryptedKey:
    """A key used for table encryption (v3, "Encryption Keys").

    Attributes:
        key_id: the key's id.
        encrypted_key_metadata: the encrypted key and metadata, base64 encoded.
        encrypted_by_id: id of the key that wraps this one, or None.
        properties: the encryption scheme's string map, or None when absent.
        extra: keys Icecore does not model, written back as found.
    """

    key_id: str
    encrypted_key_metadata: str
    encrypted_by_id: str | None = None
    properties: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)

    def __post_init__(self) -> None:
        if self.properties is not None:
            object.__setattr__(self, "properties", MappingProxyType(dict(self.properties)))
        object.__setattr__(self, "extra", _frozen(self.extra))

    def __hash__(self) -> int:
        return hash((self.key_id, self.encrypted_key_metadata))


@dataclass(frozen=True, slots=True)
class SourceLayout:
    """How a parsed file spelled what the model normalizes, so it can be written back exactly.

    Metadata built by Icecore (not parsed) has no layout and is written in the canonical
    shape of its format version.

    Attributes:
        keys: the file's top-level keys, in file order.
        null_keys: the top-level keys whose value was null (kept in ``extra`` as null).
        schema: the deprecated v1 ``schema`` object as read, or None when absent.
        partition_spec: the deprecated v1 ``partition-spec`` field list as read, or None.
        schemas: each schema's JSON as read, by schema id (type names such as Java's
            ``decimal(10, 2)`` are written back as spelled while the schema is unchanged).
        partition_specs: each partition spec's JSON as read, by spec id.
        sort_orders: each sort order's JSON as read, by order id.
        implied_main: whether the ``main`` ref was implied by ``current-snapshot-id``
            rather than written in ``refs``.
    """

    keys: tuple[str, ...]
    null_keys: frozenset[str] = frozenset()
    schema: Any = None
    partition_spec: Any = None
    schemas: Mapping[int, Any] = field(default_factory=lambda: _EMPTY_BY_ID)
    partition_specs: Mapping[int, Any] = field(default_factory=lambda: _EMPTY_BY_ID)
    sort_orders: Mapping[int, Any] = field(default_factory=lambda: _EMPTY_BY_ID)
    implied_main: bool = False

    def __post_init__(self) -> None:
        for name in ("schemas", "partition_specs", "sort_orders"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    def __hash__(self) -> int:
        return hash((self.keys, self.null_keys, self.implied_main))

    @property
    def present(self) -> frozenset[str]:
        """The top-level keys the file had with a non-null value."""
        return frozenset(self.keys) - self.null_keys


@dataclass(frozen=True, slots=True)
class TableMetadata:
    """A table's metadata, normalized across format versions 1-3 ("Table Metadata Fields").

    Values the v1 format leaves out carry their Appendix E defaults (sequence numbers 0,
    default spec 0, unsorted order 0, ...). Lookups by id are indexed once, at construction.

    Attributes:
        format_version: 1, 2 or 3.
        table_uuid: the table's UUID; None only for v1 files without one.
        location: the table's base location.
        last_sequence_number: the highest assigned sequence number (0 for v1).
        last_updated_ms: when the table was last updated, in ms from the epoch.
        last_column_id: the highest assigned column id.
        schemas: every schema, by position.
        current_schema_id: id of the current schema.
        partition_specs: every partition spec.
        default_spec_id: id of the spec writers use.
        last_partition_id: the highest assigned partition field id.
        sort_orders: every sort order.
        default_sort_order_id: id of the sort order writers use.
        properties: table properties.
        current_snapshot_id: the current snapshot, or None (absent, null or -1 in the JSON).
        snapshots: the valid snapshots, in file order.
        snapshot_log: changes of the current snapshot.
        metadata_log: previous metadata files.
        refs: branches and tags by name, with ``main`` implied when the file had none and
            a current snapshot is set.
        statistics: table statistics files.
        partition_statistics: partition statistics files.
        next_row_id: v3 row lineage: the next snapshot's ``first-row-id``; None before v3.
        encryption_keys: v3 table encryption keys.
        extra: top-level keys Icecore does not model (or optional keys set to null).
        layout: how the parsed file spelled normalized values; None for built metadata.
    """

    format_version: int
    location: str
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...]
    default_sort_order_id: int
    table_uuid: str | None = None
    last_sequence_number: int = 0
    properties: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    refs: Mapping[str, SnapshotRef] = field(default_factory=lambda: _EMPTY)
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    next_row_id: int | None = None
    encryption_keys: tuple[EncryptedKey, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)
    layout: SourceLayout | None = field(default=None, repr=False, compare=False)
    _snapshots_by_id: Mapping[int, Snapshot] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in (
            "schemas",
            "partition_specs",
            "sort_orders",
            "snapshots",
            "snapshot_log",
            "metadata_log",
            "statistics",
            "partition_statistics",
            "encryption_keys",
        ):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "properties", _frozen(self.properties))
        object.__setattr__(self, "refs", _frozen(self.refs))
        object.__setattr__(self, "extra", _frozen(self.extra))
        object.__setattr__(
            self, "_snapshots_by_id", MappingProxyType({s.snapshot_id: s for s in self.snapshots})
        )

    def __hash__(self) -> int:
        return hash(
            (self.table_uuid, self.location, self.last_updated_ms, self.current_snapshot_id)
        )

    # Schemas, specs and sort orders ------------------------------------------------------

    def schema_by_id(self, schema_id: int) -> Schema | None:
        """The schema with this id, or None."""
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    def current_schema(self) -> Schema:
        """The current schema (``current-schema-id``)."""
        schema = self.schema_by_id(self.current_schema_id)
        if schema is None:
            raise InvalidMetadata(
                f"Table metadata names current schema {self.current_schema_id}, "
                "which is not among its schemas."
            )
        return schema

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        """The partition spec with this id, or None."""
        return next((s for s in self.partition_specs if s.spec_id == spec_id), None)

    def default_spec(self) -> PartitionSpec:
        """The partition spec writers use (``default-spec-id``)."""
        spec = self.spec_by_id(self.default_spec_id)
        if spec is None:
            raise InvalidMetadata(
                f"Table metadata names default partition spec {self.default_spec_id}, "
                "which is not among its partition specs."
            )
        return spec

    def specs_by_id(self) -> Mapping[int, PartitionSpec]:
        """Every partition spec by id (manifests name theirs by id)."""
        return MappingProxyType({s.spec_id: s for s in self.partition_specs})

    def sort_order_by_id(self, order_id: int) -> SortOrder | None:
        """The sort order with this id, or None."""
        return next((o for o in self.sort_orders if o.order_id == order_id), None)

    def default_sort_order(self) -> SortOrder:
        """The sort order writers use (``default-sort-order-id``)."""
        order = self.sort_order_by_id(self.default_sort_order_id)
        if order is None:
            raise InvalidMetadata(
                f"Table metadata names default sort order {self.default_sort_order_id}, "
                "which is not among its sort orders."
            )
        return order

    # Snapshots and refs ------------------------------------------------------------------

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        """The valid snapshot with this id, or None (unknown or expired)."""
        return self._snapshots_by_id.get(snapshot_id)

    def current_snapshot(self) -> Snapshot | None:
        """The current snapshot, or None for a table without one."""
        if self.current_snapshot_id is None:
            return None
        return self.snapshot_by_id(self.current_snapshot_id)

    def ref(self, name: str) -> SnapshotRef | None:
        """The branch or tag with this name, or None."""
        return self.refs.get(name)

    def snapshot_for_ref(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points at, or None (no such ref, or expired)."""
        ref = self.refs.get(name)
        return self.snapshot_by_id(ref.snapshot_id) if ref is not None else None

    def ancestors_of(self, snapshot_id: int) -> tuple[Snapshot, ...]:
        """The snapshot and its ancestors, newest first.

        The walk follows ``parent-snapshot-id`` and stops at the first parent that is no
        longer among the valid snapshots (expired), or at a snapshot without a parent.
        An unknown ``snapshot_id`` gives an empty tuple.
        """
        result: list[Snapshot] = []
        seen: set[int] = set()
        current = self.snapshot_by_id(snapshot_id)
        while current is not None and current.snapshot_id not in seen:
            result.append(current)
            seen.add(current.snapshot_id)
            parent = current.parent_snapshot_id
            current = self.snapshot_by_id(parent) if parent is not None else None
        return tuple(result)

    def branches(self) -> Mapping[str, SnapshotRef]:
        """The refs that are branches, by name."""
        return MappingProxyType({n: r for n, r in self.refs.items() if r.is_branch})

    def tags(self) -> Mapping[str, SnapshotRef]:
        """The refs that are tags, by name."""
        return MappingProxyType({n: r for n, r in self.refs.items() if not r.is_branch})


__all__ = [
    "MAIN_BRANCH",
    "SUPPORTED_FORMAT_VERSIONS",
    "BlobMetadata",
    "EncryptedKey",
    "MetadataLogEntry",
    "Operation",
    "PartitionStatisticsFile",
    "Snapshot",
    "SnapshotLogEntry",
    "SnapshotRef",
    "SnapshotRefType",
    "SourceLayout",
    "StatisticsFile",
    "Summary",
    "TableMetadata",
]
