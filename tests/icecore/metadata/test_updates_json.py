"""Updates and requirements <-> REST JSON, against the OpenAPI shapes and PyIceberg's models.

Every expected object below is written by hand from apache/iceberg's
``open-api/rest-catalog-open-api.yaml`` (``TableUpdate``, ``TableRequirement``), not taken
from Icecore's output; PyIceberg's pydantic models (``pyiceberg.table.update``) are a second,
independent reader and writer of the same shapes.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import TypeAdapter
from pyiceberg.table.update import TableRequirement, TableUpdate

from icecore.errors import InvalidMetadata, Unsupported
from icecore.metadata.requirements import AssertNoLiveFilesInSpecs
from icecore.metadata.updates import AddSchema, SetStatistics
from icecore.metadata.updates_json import (
    REQUIREMENT_TYPES,
    UPDATE_ACTIONS,
    requirement_from_json,
    requirement_to_json,
    update_from_json,
    update_to_json,
)

SNAP = 3055729675574597004

OPENAPI_UPDATE_ACTIONS = {
    "assign-uuid",
    "upgrade-format-version",
    "add-schema",
    "set-current-schema",
    "add-spec",
    "set-default-spec",
    "add-sort-order",
    "set-default-sort-order",
    "add-snapshot",
    "set-snapshot-ref",
    "remove-snapshots",
    "remove-snapshot-ref",
    "set-location",
    "set-properties",
    "remove-properties",
    "set-statistics",
    "remove-statistics",
    "set-partition-statistics",
    "remove-partition-statistics",
    "remove-partition-specs",
    "remove-schemas",
    "add-encryption-key",
    "remove-encryption-key",
}
"""The ``action`` enum of every ``TableUpdate`` subtype in the OpenAPI spec (Iceberg 1.10)."""

OPENAPI_REQUIREMENT_TYPES = {
    "assert-create",
    "assert-table-uuid",
    "assert-ref-snapshot-id",
    "assert-current-schema-id",
    "assert-last-assigned-field-id",
    "assert-default-spec-id",
    "assert-last-assigned-partition-id",
    "assert-default-sort-order-id",
}

STATISTICS = {
    "snapshot-id": SNAP,
    "statistics-path": "s3://bucket/t/metadata/stats-1.puffin",
    "file-size-in-bytes": 413,
    "file-footer-size-in-bytes": 42,
    "blob-metadata": [
        {
            "type": "apache-datasketches-theta-v1",
            "snapshot-id": SNAP,
            "sequence-number": 34,
            "fields": [1, 2],
            "properties": {"ndv": "150"},
        }
    ],
}

UPDATES: list[dict[str, Any]] = [
    {"action": "assign-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
    {"action": "upgrade-format-version", "format-version": 3},
    {
        "action": "add-schema",
        "schema": {
            "type": "struct",
            "schema-id": 1,
            "identifier-field-ids": [1],
            "fields": [
                {"id": 1, "name": "id", "required": True, "type": "long"},
                {"id": 2, "name": "city", "required": False, "type": "string", "doc": "where"},
            ],
        },
        "last-column-id": 2,
    },
    {"action": "set-current-schema", "schema-id": -1},
    {
        "action": "add-spec",
        "spec": {
            "spec-id": 1,
            "fields": [
                {"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000}
            ],
        },
    },
    {"action": "set-default-spec", "spec-id": -1},
    {
        "action": "add-sort-order",
        "sort-order": {
            "order-id": 1,
            "fields": [
                {
                    "transform": "identity",
                    "source-id": 2,
                    "direction": "desc",
                    "null-order": "nulls-last",
                }
            ],
        },
    },
    {"action": "set-default-sort-order", "sort-order-id": -1},
    {
        "action": "add-snapshot",
        "snapshot": {
            "snapshot-id": SNAP,
            "parent-snapshot-id": 3051729675574597004,
            "sequence-number": 34,
            "timestamp-ms": 1730000000000,
            "manifest-list": "s3://bucket/t/metadata/snap-1.avro",
            "summary": {"operation": "append", "added-data-files": "1"},
            "schema-id": 1,
        },
    },
    {
        "action": "set-snapshot-ref",
        "ref-name": "audit",
        "type": "branch",
        "snapshot-id": SNAP,
        "max-ref-age-ms": 604800000,
        "max-snapshot-age-ms": 86400000,
        "min-snapshots-to-keep": 3,
    },
    {"action": "remove-snapshots", "snapshot-ids": [1, 2]},
    {"action": "remove-snapshot-ref", "ref-name": "audit"},
    {"action": "set-location", "location": "s3://bucket/moved"},
    {"action": "set-properties", "updates": {"owner": "ana", "comment": ""}},
    {"action": "remove-properties", "removals": ["owner"]},
    {"action": "set-statistics", "snapshot-id": SNAP, "statistics": STATISTICS},
    {"action": "remove-statistics", "snapshot-id": SNAP},
    {
        "action": "set-partition-statistics",
        "partition-statistics": {
            "snapshot-id": SNAP,
            "statistics-path": "s3://bucket/t/metadata/partition-stats-1.parquet",
            "file-size-in-bytes": 43,
        },
    },
    {"action": "remove-partition-statistics", "snapshot-id": SNAP},
    {"action": "remove-partition-specs", "spec-ids": [0, 2]},
    {"action": "remove-schemas", "schema-ids": [0]},
    {
        "action": "add-encryption-key",
        "encryption-key": {
            "key-id": "snap-key-1",
            "encrypted-key-metadata": "c25hcAo=",
            "encrypted-by-id": "table-key",
            "properties": {"kms": "local"},
        },
    },
    {"action": "remove-encryption-key", "key-id": "snap-key-1"},
]

REQUIREMENTS: list[dict[str, Any]] = [
    {"type": "assert-create"},
    {"type": "assert-table-uuid", "uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
    {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": SNAP},
    {"type": "assert-ref-snapshot-id", "ref": "new-branch", "snapshot-id": None},
    {"type": "assert-current-schema-id", "current-schema-id": 0},
    {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 0},
    {"type": "assert-default-spec-id", "default-spec-id": 0},
    {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
    {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
]

PYICEBERG_UNKNOWN = {"add-encryption-key", "remove-encryption-key"}
"""Actions PyIceberg 0.12's ``TableUpdate`` union does not model (newer than its models)."""

_update_model: TypeAdapter[Any] = TypeAdapter(TableUpdate)
_requirement_model: TypeAdapter[Any] = TypeAdapter(TableRequirement)


def _pyiceberg(adapter: TypeAdapter[Any], obj: dict[str, Any]) -> dict[str, Any]:
    """What PyIceberg reads from ``obj`` and writes back (unset optional fields left out)."""
    dumped: dict[str, Any] = adapter.dump_python(
        adapter.validate_python(copy.deepcopy(obj)),
        by_alias=True,
        mode="json",
        exclude_none=adapter is _update_model,
    )
    return dumped


def _ids(cases: list[dict[str, Any]], key: str) -> list[str]:
    return [f"{c[key]}-{i}" for i, c in enumerate(cases)]


def test_every_openapi_action_and_type_is_read_and_covered_here() -> None:
    assert UPDATE_ACTIONS == OPENAPI_UPDATE_ACTIONS
    assert REQUIREMENT_TYPES == OPENAPI_REQUIREMENT_TYPES
    assert {u["action"] for u in UPDATES} == OPENAPI_UPDATE_ACTIONS
    assert {r["type"] for r in REQUIREMENTS} == OPENAPI_REQUIREMENT_TYPES


@pytest.mark.parametrize("obj", UPDATES, ids=_ids(UPDATES, "action"))
def test_update_round_trips_to_the_openapi_shape(obj: dict[str, Any]) -> None:
    assert update_to_json(update_from_json(copy.deepcopy(obj))) == obj


@pytest.mark.parametrize(
    "obj",
    [u for u in UPDATES if u["action"] not in PYICEBERG_UNKNOWN],
    ids=_ids([u for u in UPDATES if u["action"] not in PYICEBERG_UNKNOWN], "action"),
)
def test_update_json_reads_the_same_in_pyiceberg(obj: dict[str, Any]) -> None:
    ours = update_to_json(update_from_json(copy.deepcopy(obj)))
    assert _pyiceberg(_update_model, ours) == _pyiceberg(_update_model, obj)
    # and what PyIceberg writes, Icecore reads as the same update
    theirs = _pyiceberg(_update_model, obj)
    parsed = update_from_json(theirs)
    expected = update_from_json(copy.deepcopy(obj))
    if isinstance(expected, AddSchema):  # PyIceberg drops the deprecated last-column-id
        expected = AddSchema(expected.schema, None)
    assert parsed == expected


@pytest.mark.parametrize("obj", REQUIREMENTS, ids=_ids(REQUIREMENTS, "type"))
def test_requirement_round_trips_and_reads_the_same_in_pyiceberg(obj: dict[str, Any]) -> None:
    ours = requirement_to_json(requirement_from_json(copy.deepcopy(obj)))
    assert ours == obj
    assert _pyiceberg(_requirement_model, ours) == _pyiceberg(_requirement_model, obj)
    assert requirement_from_json(_pyiceberg(_requirement_model, obj)) == requirement_from_json(obj)


def test_set_statistics_deprecated_snapshot_id_must_agree() -> None:
    update = update_from_json({"action": "set-statistics", "statistics": STATISTICS})
    assert isinstance(update, SetStatistics)
    assert update.statistics.snapshot_id == SNAP
    with pytest.raises(InvalidMetadata, match="belongs to snapshot"):
        update_from_json({"action": "set-statistics", "snapshot-id": 7, "statistics": STATISTICS})


@pytest.mark.parametrize(
    "obj",
    [
        {"action": "no-such-action"},
        {"action": "remove-schemas", "schema-ids": ["0"]},
        {"action": "remove-schemas", "schema-ids": [True]},
        {"action": "remove-statistics"},
        {"action": "set-properties", "updates": {"a": 1}},
        {"action": "remove-encryption-key", "key-id": 5},
        {"action": "set-snapshot-ref", "ref-name": "", "type": "branch", "snapshot-id": 1},
        {"updates": []},
        [],
    ],
)
def test_malformed_updates_are_refused(obj: Any) -> None:
    with pytest.raises(InvalidMetadata):
        update_from_json(obj)


@pytest.mark.parametrize(
    "obj",
    [
        {"type": "assert-nothing"},
        {"type": "assert-ref-snapshot-id", "ref": "main"},
        {"type": "assert-current-schema-id", "current-schema-id": "0"},
        {"type": "assert-table-uuid"},
    ],
)
def test_malformed_requirements_are_refused(obj: Any) -> None:
    with pytest.raises(InvalidMetadata):
        requirement_from_json(obj)


def test_no_live_files_requirement_has_no_rest_form() -> None:
    with pytest.raises(Unsupported):
        requirement_to_json(AssertNoLiveFilesInSpecs(frozenset({0})))
