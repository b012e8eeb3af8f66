"""Updates and requirements <-> the REST catalog's JSON (``TableUpdate``, ``TableRequirement``).

The Iceberg REST catalog OpenAPI spec (apache/iceberg ``open-api/rest-catalog-open-api.yaml``)
gives each update an ``action`` and each requirement a ``type``, with the same names as
:mod:`icecore.metadata.updates` and :mod:`icecore.metadata.requirements`. This is the one
place that turns them into JSON and back, both directions side by side, so the client
(:mod:`icecore.catalog.rest_messages`) and the server (:mod:`icecore.server.commit`) cannot
drift apart. The nested objects (schema, spec, sort order, snapshot, ref, statistics file,
encryption key) use the same functions as the metadata file (:mod:`icecore.metadata.serde`),
so an update carries an entity exactly as a metadata file would.

Reading is strict and bounded to what the spec names: an unknown action or type, a missing
or mistyped field raises :class:`~icecore.errors.InvalidMetadata` (the server's 400).
``set-statistics`` still writes the deprecated top-level ``snapshot-id`` (older servers
require it) and, when reading, accepts it only if it agrees with the statistics file's.
:class:`~icecore.metadata.requirements.AssertNoLiveFilesInSpecs` has no JSON form: the
client checks it itself and pins the refs instead (see :mod:`icecore.catalog.rest_messages`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from icecore.errors import InvalidMetadata, Unsupported
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
    Requirement,
)
from icecore.metadata.serde import (
    encryption_key_from_json,
    encryption_key_to_json,
    partition_statistics_file_from_json,
    partition_statistics_file_to_json,
    snapshot_from_json,
    snapshot_ref_from_json,
    snapshot_ref_to_json,
    snapshot_to_json,
    statistics_file_from_json,
    statistics_file_to_json,
)
from icecore.metadata.updates import (
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    MetadataUpdate,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    UpgradeFormatVersion,
)
from icecore.partitioning import partition_spec_from_json, partition_spec_to_json
from icecore.schema import schema_from_json, schema_to_json
from icecore.sorting import sort_order_from_json, sort_order_to_json

# Updates to JSON ---------------------------------------------------------------------------


def update_to_json(update: MetadataUpdate) -> dict[str, Any]:
    """One ``TableUpdate`` object of the REST spec."""
    out: dict[str, Any] = {"action": update.action}
    match update:
        case AssignUUID(uuid=uuid):
            out["uuid"] = uuid
        case UpgradeFormatVersion(format_version=version):
            out["format-version"] = version
        case AddSchema(schema=schema, last_column_id=last_column_id):
            out["schema"] = schema_to_json(schema)
            if last_column_id is not None:
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
        case AddSnapshot(snapshot=snapshot):
            out["snapshot"] = snapshot_to_json(snapshot)
        case SetSnapshotRef(ref_name=name, ref=ref):
            out["ref-name"] = name
            out.update(snapshot_ref_to_json(ref))
        case RemoveSnapshotRef(ref_name=name):
            out["ref-name"] = name
        case RemoveSnapshots(snapshot_ids=ids):
            out["snapshot-ids"] = list(ids)
        case SetLocation(location=location):
            out["location"] = location
        case SetProperties(updates=updates):
            out["updates"] = dict(updates)
        case RemoveProperties(removals=removals):
            out["removals"] = list(removals)
        case SetStatistics(statistics=stats):
            out["snapshot-id"] = stats.snapshot_id
            out["statistics"] = statistics_file_to_json(stats)
        case RemoveStatistics(snapshot_id=sid) | RemovePartitionStatistics(snapshot_id=sid):
            out["snapshot-id"] = sid
        case SetPartitionStatistics(partition_statistics=pstats):
            out["partition-statistics"] = partition_statistics_file_to_json(pstats)
        case RemoveSchemas(schema_ids=ids):
            out["schema-ids"] = list(ids)
        case RemovePartitionSpecs(spec_ids=ids):
            out["spec-ids"] = list(ids)
        case AddEncryptionKey(encryption_key=key):
            out["encryption-key"] = encryption_key_to_json(key)
        case RemoveEncryptionKey(key_id=key_id):
            out["key-id"] = key_id
    return out


def updates_to_json(updates: Sequence[MetadataUpdate]) -> list[dict[str, Any]]:
    """The ``updates`` list of a ``CommitTableRequest``."""
    return [update_to_json(u) for u in updates]


# Updates from JSON -------------------------------------------------------------------------


def _where(obj: Mapping[str, Any]) -> str:
    return f"Update {str(obj.get('action'))[:60]!r}"


def required_int(obj: Mapping[str, Any], key: str, where: str) -> int:
    """``obj[key]`` as an integer (not a bool); InvalidMetadata naming ``where`` otherwise."""
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidMetadata(f"{where} needs an integer {key!r}.")
    return value


def required_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    """``obj[key]`` as a string; InvalidMetadata naming ``where`` otherwise."""
    value = obj.get(key)
    if not isinstance(value, str):
        raise InvalidMetadata(f"{where} needs a string {key!r}.")
    return value


def _ints(obj: Mapping[str, Any], key: str, where: str) -> tuple[int, ...]:
    value = obj.get(key)
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    ):
        raise InvalidMetadata(f"{where} needs a list of integers {key!r}.")
    return tuple(value)


def _add_schema(obj: Mapping[str, Any], where: str) -> AddSchema:
    last = obj.get("last-column-id")
    return AddSchema(
        schema_from_json(obj.get("schema")),
        None if last is None else required_int(obj, "last-column-id", where),
    )


def _set_properties(obj: Mapping[str, Any], where: str) -> SetProperties:
    updates = obj.get("updates")
    if not isinstance(updates, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in updates.items()
    ):
        raise InvalidMetadata(f"{where} needs an 'updates' object of strings.")
    return SetProperties(dict(updates))


def _remove_properties(obj: Mapping[str, Any], where: str) -> RemoveProperties:
    removals = obj.get("removals")
    if not isinstance(removals, list) or not all(isinstance(r, str) for r in removals):
        raise InvalidMetadata(f"{where} needs a 'removals' list of strings.")
    return RemoveProperties(tuple(removals))


def _set_ref(obj: Mapping[str, Any], where: str) -> SetSnapshotRef:
    name = required_str(obj, "ref-name", where)
    if not name:
        raise InvalidMetadata(f"{where} needs a non-empty 'ref-name'.")
    body = {k: v for k, v in obj.items() if k not in ("action", "ref-name")}
    return SetSnapshotRef(name, snapshot_ref_from_json(body, where))


def _set_statistics(obj: Mapping[str, Any], where: str) -> SetStatistics:
    stats = statistics_file_from_json(obj.get("statistics"), f"of {where}")
    legacy = obj.get("snapshot-id")
    if legacy is not None and legacy != stats.snapshot_id:
        raise InvalidMetadata(
            f"{where} names snapshot {legacy!r}, but its statistics file belongs to "
            f"snapshot {stats.snapshot_id}."
        )
    return SetStatistics(stats)


_FROM_JSON: dict[str, Callable[[Mapping[str, Any], str], MetadataUpdate]] = {
    "assign-uuid": lambda o, w: AssignUUID(required_str(o, "uuid", w)),
    "upgrade-format-version": lambda o, w: UpgradeFormatVersion(
        required_int(o, "format-version", w)
    ),
    "add-schema": _add_schema,
    "set-current-schema": lambda o, w: SetCurrentSchema(required_int(o, "schema-id", w)),
    "add-spec": lambda o, w: AddPartitionSpec(partition_spec_from_json(o.get("spec"))),
    "set-default-spec": lambda o, w: SetDefaultSpec(required_int(o, "spec-id", w)),
    "add-sort-order": lambda o, w: AddSortOrder(sort_order_from_json(o.get("sort-order"))),
    "set-default-sort-order": lambda o, w: SetDefaultSortOrder(required_int(o, "sort-order-id", w)),
    "add-snapshot": lambda o, w: AddSnapshot(snapshot_from_json(o.get("snapshot"), w)),
    "set-snapshot-ref": _set_ref,
    "remove-snapshot-ref": lambda o, w: RemoveSnapshotRef(required_str(o, "ref-name", w)),
    "remove-snapshots": lambda o, w: RemoveSnapshots(_ints(o, "snapshot-ids", w)),
    "set-location": lambda o, w: SetLocation(required_str(o, "location", w)),
    "set-properties": _set_properties,
    "remove-properties": _remove_properties,
    "set-statistics": _set_statistics,
    "remove-statistics": lambda o, w: RemoveStatistics(required_int(o, "snapshot-id", w)),
    "set-partition-statistics": lambda o, w: SetPartitionStatistics(
        partition_statistics_file_from_json(o.get("partition-statistics"), f"of {w}")
    ),
    "remove-partition-statistics": lambda o, w: RemovePartitionStatistics(
        required_int(o, "snapshot-id", w)
    ),
    "remove-schemas": lambda o, w: RemoveSchemas(_ints(o, "schema-ids", w)),
    "remove-partition-specs": lambda o, w: RemovePartitionSpecs(_ints(o, "spec-ids", w)),
    "add-encryption-key": lambda o, w: AddEncryptionKey(
        encryption_key_from_json(o.get("encryption-key"), f"of {w}")
    ),
    "remove-encryption-key": lambda o, w: RemoveEncryptionKey(required_str(o, "key-id", w)),
}

UPDATE_ACTIONS = frozenset(_FROM_JSON)
"""Every ``TableUpdate`` action of the REST spec, all of which Icecore reads and applies."""


def update_from_json(obj: Any) -> MetadataUpdate:
    """One ``TableUpdate`` object as its tagged value.

    Raises:
        InvalidMetadata: not an object, an unknown action, or a missing or mistyped field.
    """
    if not isinstance(obj, Mapping) or not isinstance(obj.get("action"), str):
        raise InvalidMetadata("Each update must be an object with a string 'action'.")
    parse = _FROM_JSON.get(obj["action"])
    if parse is None:
        raise InvalidMetadata(f"Unknown update action {obj['action'][:100]!r}.")
    return parse(obj, _where(obj))


def updates_from_json(value: Any) -> list[MetadataUpdate]:
    """The ``updates`` list of a ``CommitTableRequest``, in order."""
    if not isinstance(value, list):
        raise InvalidMetadata("'updates' must be a list.")
    return [update_from_json(u) for u in value]


# Requirements ------------------------------------------------------------------------------


def requirement_to_json(requirement: Requirement) -> dict[str, Any]:
    """One ``TableRequirement`` object of the REST spec.

    Raises:
        Unsupported: ``assert-no-live-files-in-specs``, which has no REST form.
    """
    out: dict[str, Any] = {"type": requirement.kind}
    match requirement:
        case AssertCreate():
            pass
        case AssertTableUUID(uuid=uuid):
            out["uuid"] = uuid
        case AssertRefSnapshotId(ref=ref, snapshot_id=sid):
            out["ref"] = ref
            out["snapshot-id"] = sid
        case AssertCurrentSchemaId(current_schema_id=value):
            out["current-schema-id"] = value
        case AssertLastAssignedFieldId(last_assigned_field_id=value):
            out["last-assigned-field-id"] = value
        case AssertDefaultSpecId(default_spec_id=value):
            out["default-spec-id"] = value
        case AssertLastAssignedPartitionId(last_assigned_partition_id=value):
            out["last-assigned-partition-id"] = value
        case AssertDefaultSortOrderId(default_sort_order_id=value):
            out["default-sort-order-id"] = value
        case AssertNoLiveFilesInSpecs():
            raise Unsupported(
                "assert-no-live-files-in-specs has no REST form; pin the refs instead."
            )
    return out


def _ref_requirement(obj: Mapping[str, Any], where: str) -> AssertRefSnapshotId:
    ref, sid = obj.get("ref"), obj.get("snapshot-id")
    if not isinstance(ref, str) or "snapshot-id" not in obj:
        raise InvalidMetadata(f"{where} needs a string 'ref' and a 'snapshot-id'.")
    if sid is not None and (not isinstance(sid, int) or isinstance(sid, bool)):
        raise InvalidMetadata(f"{where} needs an integer or null 'snapshot-id'.")
    return AssertRefSnapshotId(ref, sid)


_REQUIREMENT_FROM_JSON: dict[str, Callable[[Mapping[str, Any], str], Requirement]] = {
    "assert-create": lambda o, w: AssertCreate(),
    "assert-table-uuid": lambda o, w: AssertTableUUID(required_str(o, "uuid", w)),
    "assert-ref-snapshot-id": _ref_requirement,
    "assert-current-schema-id": lambda o, w: AssertCurrentSchemaId(
        required_int(o, "current-schema-id", w)
    ),
    "assert-last-assigned-field-id": lambda o, w: AssertLastAssignedFieldId(
        required_int(o, "last-assigned-field-id", w)
    ),
    "assert-default-spec-id": lambda o, w: AssertDefaultSpecId(
        required_int(o, "default-spec-id", w)
    ),
    "assert-last-assigned-partition-id": lambda o, w: AssertLastAssignedPartitionId(
        required_int(o, "last-assigned-partition-id", w)
    ),
    "assert-default-sort-order-id": lambda o, w: AssertDefaultSortOrderId(
        required_int(o, "default-sort-order-id", w)
    ),
}

REQUIREMENT_TYPES = frozenset(_REQUIREMENT_FROM_JSON)
"""Every ``TableRequirement`` type of the REST spec."""


def requirement_from_json(obj: Any) -> Requirement:
    """One ``TableRequirement`` object as its tagged value.

    Raises:
        InvalidMetadata: not an object, an unknown type, or a missing or mistyped field.
    """
    if not isinstance(obj, Mapping) or not isinstance(obj.get("type"), str):
        raise InvalidMetadata("Each requirement must be an object with a string 'type'.")
    parse = _REQUIREMENT_FROM_JSON.get(obj["type"])
    if parse is None:
        raise InvalidMetadata(f"Unknown requirement type {obj['type'][:100]!r}.")
    return parse(obj, f"Requirement {obj['type']}")


def requirements_from_json(value: Any) -> list[Requirement]:
    """The ``requirements`` list of a ``CommitTableRequest``."""
    if not isinstance(value, list):
        raise InvalidMetadata("'requirements' must be a list.")
    return [requirement_from_json(r) for r in value]


__all__ = [
    "required_int",
    "required_str",
    "REQUIREMENT_TYPES",
    "UPDATE_ACTIONS",
    "requirement_from_json",
    "requirement_to_json",
    "requirements_from_json",
    "update_from_json",
    "update_to_json",
    "updates_from_json",
    "updates_to_json",
]
