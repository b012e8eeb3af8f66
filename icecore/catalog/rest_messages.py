"""Icecore's commit updates and requirements as the REST catalog's JSON.

The Iceberg REST catalog OpenAPI spec (``TableUpdate``, ``TableRequirement``) names the
same actions Icecore's :mod:`icecore.metadata.updates` and
:mod:`icecore.evolution.requirements` already use, so this is one dispatcher each way,
nothing more. Ids the server assigns are sent as the spec allows: an added schema, spec or
sort order is reassigned an id by the server (Iceberg Java reuses an identical one), and
``-1`` in ``set-current-schema``/``set-default-spec``/``set-default-sort-order`` means "the
one added last in this commit", exactly as :data:`~icecore.metadata.updates.LAST_ADDED`.

:class:`~icecore.evolution.requirements.AssertNoLiveFilesInSpecs` has no REST counterpart:
it is checked by the client on the freshly loaded table, and the commit then asserts that
no branch or tag moved since (``assert-ref-snapshot-id`` for each), so an append that could
have added such files in between makes the server refuse the commit (409) and the client
check again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from icecore.evolution.requirements import (
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertNoLiveFilesInSpecs,
    AssertTableUUID,
    Requirement,
)
from icecore.metadata import TableMetadata
from icecore.metadata.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSortOrder,
    MetadataUpdate,
    RemoveProperties,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetProperties,
)
from icecore.partitioning import partition_spec_to_json
from icecore.schema import schema_to_json
from icecore.sorting import sort_order_to_json


def update_to_json(update: MetadataUpdate) -> dict[str, Any]:
    """One ``TableUpdate`` object of the REST spec."""
    out: dict[str, Any] = {"action": update.action}
    match update:
        case AddSchema(schema=schema, last_column_id=last_column_id):
            out["schema"] = schema_to_json(schema)
            out["last-column-id"] = last_column_id
        case SetCurrentSchema(schema_id=schema_id):
            out["schema-id"] = schema_id
        case AddPartitionSpec(spec=spec):
            out["spec"] = partition_spec_to_json(spec)
        case SetDefaultSpec(spec_id=spec_id):
            out["spec-id"] = spec_id
        case AddSortOrder(order=order):
            out["sort-order"] = sort_order_to_json(order)
        case SetDefaultSortOrder(order_id=order_id):
            out["sort-order-id"] = order_id
        case SetProperties(updates=updates):
            out["updates"] = dict(updates)
        case RemoveProperties(removals=removals):
            out["removals"] = list(removals)
    return out


def requirements_to_json(
    requirements: Iterable[Requirement], fresh: TableMetadata
) -> list[dict[str, Any]]:
    """The ``TableRequirement`` list of a commit computed under ``requirements``.

    Args:
        requirements: what the updates were computed under.
        fresh: the table as loaded right before this attempt (refs pinned, see the module).
    """
    out: list[dict[str, Any]] = []
    pin_refs = False
    for requirement in requirements:
        match requirement:
            case AssertTableUUID(uuid=uuid):
                if uuid is not None:
                    out.append({"type": requirement.kind, "uuid": uuid})
            case AssertCurrentSchemaId(current_schema_id=value):
                out.append({"type": requirement.kind, "current-schema-id": value})
            case AssertLastAssignedFieldId(last_assigned_field_id=value):
                out.append({"type": requirement.kind, "last-assigned-field-id": value})
            case AssertDefaultSpecId(default_spec_id=value):
                out.append({"type": requirement.kind, "default-spec-id": value})
            case AssertLastAssignedPartitionId(last_assigned_partition_id=value):
                out.append({"type": requirement.kind, "last-assigned-partition-id": value})
            case AssertDefaultSortOrderId(default_sort_order_id=value):
                out.append({"type": requirement.kind, "default-sort-order-id": value})
            case AssertNoLiveFilesInSpecs():
                pin_refs = True
    if pin_refs:
        out.extend(_pinned_refs(fresh))
    return out


def _pinned_refs(md: TableMetadata) -> list[dict[str, Any]]:
    refs = {name: ref.snapshot_id for name, ref in md.refs.items()}
    if not refs:
        refs["main"] = md.current_snapshot_id  # type: ignore[assignment]
    return [
        {"type": "assert-ref-snapshot-id", "ref": name, "snapshot-id": snapshot_id}
        for name, snapshot_id in sorted(refs.items())
    ]


def updates_to_json(updates: Sequence[MetadataUpdate]) -> list[dict[str, Any]]:
    """The ``updates`` list of a ``CommitTableRequest``."""
    return [update_to_json(u) for u in updates]


__all__ = ["requirements_to_json", "update_to_json", "updates_to_json"]
