"""Retry settings from commit.retry.* and how requirements of staged changes combine."""

from __future__ import annotations

import pytest

from icecore.errors import ValidationError
from icecore.evolution.commit import RetryPolicy
from icecore.metadata.requirements import (
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertNoLiveFilesInSpecs,
    AssertRefSnapshotId,
    AssertTableUUID,
    merge_requirements,
)


def test_retry_policy_reads_iceberg_java_properties() -> None:
    assert RetryPolicy.from_properties({}) == RetryPolicy(4, 100, 60_000, 1_800_000)
    policy = RetryPolicy.from_properties(
        {
            "commit.retry.num-retries": "7",
            "commit.retry.min-wait-ms": "10",
            "commit.retry.max-wait-ms": "50",
            "commit.retry.total-timeout-ms": "1000",
        }
    )
    assert policy == RetryPolicy(7, 10, 50, 1000)
    # 10, 20, 40, then capped at 50 ms; up to 10% jitter on top.
    for attempt, base in [(1, 10), (2, 20), (3, 40), (4, 50), (9, 50)]:
        assert base <= policy.wait_ms(attempt) <= base * 1.1
    with pytest.raises(ValidationError, match="commit.retry.num-retries='many'"):
        RetryPolicy.from_properties({"commit.retry.num-retries": "many"})


def test_first_requirement_of_each_kind_wins_and_spec_ids_accumulate() -> None:
    first = (
        AssertTableUUID("u"),
        AssertCurrentSchemaId(0),
        AssertNoLiveFilesInSpecs(frozenset({1})),
    )
    later = (
        AssertCurrentSchemaId(5),
        AssertDefaultSpecId(2),
        AssertNoLiveFilesInSpecs(frozenset({3})),
    )
    assert merge_requirements(first, later) == (
        AssertTableUUID("u"),
        AssertCurrentSchemaId(0),
        AssertNoLiveFilesInSpecs(frozenset({1, 3})),
        AssertDefaultSpecId(2),
    )


def test_ref_assertions_are_kept_per_ref() -> None:
    """Two refs moved in one transaction are both guarded; the first guard of each ref wins."""
    first = (AssertRefSnapshotId("main", 10), AssertRefSnapshotId("audit", 20))
    later = (AssertRefSnapshotId("main", 11), AssertRefSnapshotId("new", None))
    assert merge_requirements(first, later) == (
        AssertRefSnapshotId("main", 10),
        AssertRefSnapshotId("audit", 20),
        AssertRefSnapshotId("new", None),
    )
