"""Commit requirements, as evolution builders produce them.

The values live in :mod:`icecore.metadata.requirements` (beside the updates they guard, so
the REST JSON form in :mod:`icecore.metadata.updates_json` sits in one layer); this
module keeps the name the evolution builders and the commit loop import.
"""

from __future__ import annotations

from icecore.metadata.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertNoLiveFilesInSpecs,
    AssertRefSnapshotId,
    AssertTableUUID,
    LiveSpecIds,
    Requirement,
    merge_requirements,
    violation,
    violations,
)

__all__ = [
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertNoLiveFilesInSpecs",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "LiveSpecIds",
    "Requirement",
    "merge_requirements",
    "violation",
    "violations",
]
