"""Table metadata: one normalized model (``model``) and its v1-v3 JSON form (``serde``)."""

from __future__ import annotations

from icecore.metadata.model import (
    MAIN_BRANCH,
    SUPPORTED_FORMAT_VERSIONS,
    BlobMetadata,
    EncryptedKey,
    MetadataLogEntry,
    Operation,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    SnapshotRefType,
    SourceLayout,
    StatisticsFile,
    Summary,
    TableMetadata,
)
from icecore.metadata.serde import (
    parse_metadata,
    parse_metadata_dict,
    serialize_metadata,
    serialize_metadata_json,
)

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
    "parse_metadata",
    "parse_metadata_dict",
    "serialize_metadata",
    "serialize_metadata_json",
]
