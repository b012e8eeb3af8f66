"""``POST .../tables/{table}``: a REST ``CommitTableRequest`` checked and applied atomically.

Each attempt loads the table's current metadata from the backing catalog, checks every
requirement against it, applies the updates in order and swaps the catalog's pointer from
exactly the metadata it loaded (the backing catalog's compare-and-swap). A lost swap means
another writer got in between: the attempt is repeated on the new state, where the
requirements are checked again, so an update is only ever applied where its requirements
hold (as Iceberg Java's ``CatalogHandlers.commit``); once the attempts run out, or a
requirement fails, the answer is 409 ``CommitFailedException`` and nothing was applied.

Schema, partition spec, sort order and property updates go through
:class:`icecore.metadata.builder.MetadataBuilder` (Icecore's one dispatcher and its spec
checks); what only engines that write data send (snapshots and refs, the uuid, the format
version, the location) is applied here, on the immutable metadata, in the order sent.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icecore.catalog.base import Catalog, TableIdentifier
from icecore.errors import CommitConflict, InvalidMetadata, ValidationError
from icecore.evolution.requirements import (
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertTableUUID,
    Requirement,
    violations,
)
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder, encode_metadata
from icecore.metadata.model import SnapshotLogEntry
from icecore.metadata.serde import snapshot_from_json, snapshot_ref_from_json
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
from icecore.partitioning import partition_spec_from_json
from icecore.schema import schema_from_json
from icecore.server.errors import RestError, bad_request
from icecore.sorting import sort_order_from_json

COMMIT_ATTEMPTS = 4
"""Attempts on lost swaps before answering 409 (Iceberg Java's server retries too)."""

MAIN_BRANCH = "main"


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId:
    """The ref points at ``snapshot_id`` (None: the ref must not exist)."""

    ref: str
    snapshot_id: int | None


@dataclass(frozen=True, slots=True)
class AssertCreate:
    """The table must not exist yet (a staged create's commit)."""


RestRequirement = Requirement | AssertRefSnapshotId | AssertCreate


def _int(obj: Mapping[str, Any], key: str, kind: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise bad_request(f"Requirement {kind} needs an integer {key!r}.")
    return value


def parse_requirement(obj: Any) -> RestRequirement:
    """One ``TableRequirement`` of the spec; 400 for an unknown or malformed one."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("type"), str):
        raise bad_request("Each requirement must be an object with a string 'type'.")
    kind = obj["type"]
    match kind:
        case "assert-create":
            return AssertCreate()
        case "assert-table-uuid":
            if not isinstance(obj.get("uuid"), str):
                raise bad_request("Requirement assert-table-uuid needs a string 'uuid'.")
            return AssertTableUUID(obj["uuid"])
        case "assert-ref-snapshot-id":
            ref, sid = obj.get("ref"), obj.get("snapshot-id")
            if not isinstance(ref, str) or not (sid is None or isinstance(sid, int)):
                raise bad_request(
                    "Requirement assert-ref-snapshot-id needs 'ref' and 'snapshot-id'."
                )
            return AssertRefSnapshotId(ref, sid)
        case "assert-current-schema-id":
            return AssertCurrentSchemaId(_int(obj, "current-schema-id", kind))
        case "assert-last-assigned-field-id":
            return AssertLastAssignedFieldId(_int(obj, "last-assigned-field-id", kind))
        case "assert-default-spec-id":
            return AssertDefaultSpecId(_int(obj, "default-spec-id", kind))
        case "assert-last-assigned-partition-id":
            return AssertLastAssignedPartitionId(_int(obj, "last-assigned-partition-id", kind))
        case "assert-default-sort-order-id":
            return AssertDefaultSortOrderId(_int(obj, "default-sort-order-id", kind))
    raise bad_request(f"Unsupported requirement type {kind[:100]!r}.")


def requirement_failures(requirements: Sequence[RestRequirement], md: TableMetadata) -> list[str]:
    """Why each requirement fails against ``md`` (empty when all hold)."""
    failures: list[str] = []
    plain: list[Requirement] = []
    for req in requirements:
        if isinstance(req, AssertCreate):
            failures.append("the table exists already")
        elif isinstance(req, AssertRefSnapshotId):
            ref = md.refs.get(req.ref)
            now = ref.snapshot_id if ref is not None else None
            if now != req.snapshot_id:
                failures.append(f"branch or tag {req.ref} is at {now} instead of {req.snapshot_id}")
        else:
            plain.append(req)
    failures.extend(violations(plain, md, lambda: frozenset()))
    return failures


# Updates ------------------------------------------------------------------------------------

_BUILDER_ACTIONS = frozenset(
    {
        "add-schema",
        "set-current-schema",
        "add-spec",
        "set-default-spec",
        "add-sort-order",
        "set-default-sort-order",
        "set-properties",
        "remove-properties",
    }
)


def _builder_update(obj: Mapping[str, Any], md: TableMetadata) -> MetadataUpdate:
    """A ``TableUpdate`` Icecore's builder applies, as its tagged value."""
    action = obj["action"]
    if action == "add-schema":
        schema = schema_from_json(obj.get("schema"))
        last = obj.get("last-column-id")
        if not isinstance(last, int):
            last = max(md.last_column_id, schema.highest_field_id)
        return AddSchema(schema, last)
    if action == "set-current-schema":
        return SetCurrentSchema(_update_int(obj, "schema-id"))
    if action == "add-spec":
        return AddPartitionSpec(partition_spec_from_json(obj.get("spec")))
    if action == "set-default-spec":
        return SetDefaultSpec(_update_int(obj, "spec-id"))
    if action == "add-sort-order":
        return AddSortOrder(sort_order_from_json(obj.get("sort-order")))
    if action == "set-default-sort-order":
        return SetDefaultSortOrder(_update_int(obj, "sort-order-id"))
    if action == "set-properties":
        updates = obj.get("updates")
        if not isinstance(updates, Mapping):
            raise bad_request("set-properties needs an 'updates' object.")
        return SetProperties({str(k): v for k, v in updates.items()})
    removals = obj.get("removals")
    if not isinstance(removals, list):
        raise bad_request("remove-properties needs a 'removals' list.")
    return RemoveProperties(tuple(str(r) for r in removals))


def _update_int(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise bad_request(f"Update {obj.get('action')} needs an integer {key!r}.")
    return value


class _Applier:
    """Applies one commit's updates to a base, in order (see the module docstring)."""

    def __init__(self, base: TableMetadata) -> None:
        self.md = base
        self.pending: list[MetadataUpdate] = []
        self.added: dict[int, int] = {}  # snapshot id -> timestamp, added in this commit
        self.now = int(time.time() * 1000)

    def flush(self, previous_location: str | None = None) -> None:
        builder = MetadataBuilder(self.md).apply_all(self.pending)
        self.md = builder.build(previous_location, now_ms=self.now)
        self.pending = []

    def apply(self, obj: Any) -> None:
        if not isinstance(obj, Mapping) or not isinstance(obj.get("action"), str):
            raise bad_request("Each update must be an object with a string 'action'.")
        action = obj["action"]
        if action in _BUILDER_ACTIONS:
            self.pending.append(_builder_update(obj, self.md))
            return
        self.flush()
        handler = self._handlers().get(action)
        if handler is None:
            raise bad_request(f"Unsupported update action {action[:100]!r}.")
        handler(obj)

    def _handlers(self) -> dict[str, Callable[[Mapping[str, Any]], None]]:
        return {
            "assign-uuid": self._assign_uuid,
            "upgrade-format-version": self._upgrade,
            "set-location": self._set_location,
            "add-snapshot": self._add_snapshot,
            "set-snapshot-ref": self._set_ref,
            "remove-snapshot-ref": self._remove_ref,
            "remove-snapshots": self._remove_snapshots,
        }

    def _assign_uuid(self, obj: Mapping[str, Any]) -> None:
        value = obj.get("uuid")
        if not isinstance(value, str):
            raise bad_request("assign-uuid needs a string 'uuid'.")
        if self.md.table_uuid is not None and self.md.table_uuid != value:
            raise ValidationError(
                f"Cannot assign uuid {value}: the table's uuid is {self.md.table_uuid}."
            )
        self.md = dataclasses.replace(self.md, table_uuid=value)

    def _upgrade(self, obj: Mapping[str, Any]) -> None:
        version = _update_int(obj, "format-version")
        if version < self.md.format_version or version > 3:
            raise ValidationError(
                f"Cannot change format-version from {self.md.format_version} to {version}."
            )
        next_row_id = self.md.next_row_id
        if version >= 3 and next_row_id is None:
            next_row_id = 0
        self.md = dataclasses.replace(self.md, format_version=version, next_row_id=next_row_id)

    def _set_location(self, obj: Mapping[str, Any]) -> None:
        value = obj.get("location")
        if not isinstance(value, str) or not value:
            raise bad_request("set-location needs a string 'location'.")
        self.md = dataclasses.replace(self.md, location=value.rstrip("/"))

    def _add_snapshot(self, obj: Mapping[str, Any]) -> None:
        snapshot = snapshot_from_json(obj.get("snapshot"))
        md = self.md
        if md.snapshot_by_id(snapshot.snapshot_id) is not None:
            raise ValidationError(f"Snapshot {snapshot.snapshot_id} exists already.")
        if (
            md.format_version > 1
            and snapshot.parent_snapshot_id is not None
            and snapshot.sequence_number <= md.last_sequence_number
        ):
            raise CommitConflict(
                f"snapshot {snapshot.snapshot_id} has sequence number "
                f"{snapshot.sequence_number}, not above the table's {md.last_sequence_number}"
            )
        next_row_id = md.next_row_id
        if md.format_version >= 3:
            if snapshot.first_row_id is None or snapshot.added_rows is None:
                raise ValidationError("A v3 snapshot needs first-row-id and added-rows.")
            if next_row_id is not None and snapshot.first_row_id < next_row_id:
                raise CommitConflict(
                    f"snapshot first-row-id {snapshot.first_row_id} is below the table's "
                    f"next-row-id {next_row_id}"
                )
            next_row_id = snapshot.first_row_id + snapshot.added_rows
        self.added[snapshot.snapshot_id] = snapshot.timestamp_ms
        self.md = dataclasses.replace(
            md,
            snapshots=(*md.snapshots, snapshot),
            last_sequence_number=max(md.last_sequence_number, snapshot.sequence_number),
            next_row_id=next_row_id,
        )

    def _set_ref(self, obj: Mapping[str, Any]) -> None:
        name = obj.get("ref-name")
        if not isinstance(name, str) or not name:
            raise bad_request("set-snapshot-ref needs a 'ref-name'.")
        ref = snapshot_ref_from_json(
            {k: v for k, v in obj.items() if k not in ("action", "ref-name")}
        )
        md = self.md
        if md.snapshot_by_id(ref.snapshot_id) is None:
            raise ValidationError(f"Cannot point {name} at unknown snapshot {ref.snapshot_id}.")
        refs = {**md.refs, name: ref}
        if name != MAIN_BRANCH:
            self.md = dataclasses.replace(md, refs=refs)
            return
        stamp = self.added.get(ref.snapshot_id, self.now)
        log = md.snapshot_log
        if md.current_snapshot_id != ref.snapshot_id:
            log = (*log, SnapshotLogEntry(stamp, ref.snapshot_id))
        self.md = dataclasses.replace(
            md, refs=refs, current_snapshot_id=ref.snapshot_id, snapshot_log=log
        )

    def _remove_ref(self, obj: Mapping[str, Any]) -> None:
        name = obj.get("ref-name")
        if not isinstance(name, str):
            raise bad_request("remove-snapshot-ref needs a 'ref-name'.")
        md = self.md
        refs = {k: v for k, v in md.refs.items() if k != name}
        current = None if name == MAIN_BRANCH else md.current_snapshot_id
        self.md = dataclasses.replace(md, refs=refs, current_snapshot_id=current)

    def _remove_snapshots(self, obj: Mapping[str, Any]) -> None:
        ids = obj.get("snapshot-ids")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise bad_request("remove-snapshots needs a 'snapshot-ids' list of integers.")
        gone = set(ids)
        md = self.md
        refs = {k: v for k, v in md.refs.items() if v.snapshot_id not in gone}
        current = md.current_snapshot_id
        if current in gone:
            current = None
        # Iceberg Java: the snapshot log keeps only what follows the last removed entry.
        log: list[SnapshotLogEntry] = []
        for entry in md.snapshot_log:
            if entry.snapshot_id in gone:
                log.clear()
            else:
                log.append(entry)
        self.md = dataclasses.replace(
            md,
            snapshots=tuple(s for s in md.snapshots if s.snapshot_id not in gone),
            refs=refs,
            current_snapshot_id=current,
            snapshot_log=tuple(log),
            statistics=tuple(s for s in md.statistics if s.snapshot_id not in gone),
            partition_statistics=tuple(
                s for s in md.partition_statistics if s.snapshot_id not in gone
            ),
        )


def apply_rest_updates(
    base: TableMetadata, updates: Sequence[Any], previous_location: str | None
) -> TableMetadata:
    """``base`` with every ``TableUpdate`` applied in order, checked by the spec's rules."""
    applier = _Applier(base)
    for obj in updates:
        applier.apply(obj)
    applier.flush(previous_location)
    return applier.md


def parse_commit(body: Any) -> tuple[list[RestRequirement], list[Any]]:
    """The requirements and updates of a ``CommitTableRequest``; 400 if malformed."""
    if not isinstance(body, Mapping):
        raise bad_request("The commit request must be a JSON object.")
    raw_reqs = body.get("requirements", [])
    updates = body.get("updates", [])
    if not isinstance(raw_reqs, list) or not isinstance(updates, list):
        raise bad_request("'requirements' and 'updates' must be lists.")
    return [parse_requirement(r) for r in raw_reqs], updates


def commit_table(
    catalog: Catalog,
    identifier: TableIdentifier,
    requirements: Sequence[RestRequirement],
    updates: Sequence[Any],
) -> tuple[str, TableMetadata]:
    """Check and apply a commit against the backing catalog; returns the new location and metadata.

    Raises:
        RestError: 409 when a requirement fails or every attempt lost its swap.
        IcecoreError: the catalog refused (NotFound, CommitStateUnknown, ...).
    """
    last_conflict = ""
    for _ in range(COMMIT_ATTEMPTS):
        table = catalog.load_table(identifier)
        base, base_location = table.metadata, table.metadata_location
        failed = requirement_failures(requirements, base)
        if failed:
            raise RestError(
                409,
                "CommitFailedException",
                f"Commit to {identifier} failed: requirement not met: {failed[0]}.",
            )
        try:
            new = apply_rest_updates(base, updates, base_location)
            payload = encode_metadata(new)
        except RestError:
            raise
        except InvalidMetadata as e:
            raise bad_request(f"The commit to {identifier} is invalid: {e}") from e
        try:
            location = catalog.commit_metadata(identifier, base_location, new, payload)
        except CommitConflict as e:
            last_conflict = str(e)
            continue
        return location, new
    raise RestError(
        409,
        "CommitFailedException",
        f"Commit to {identifier} failed: other writers kept committing ({last_conflict}).",
    )


__all__ = [
    "AssertCreate",
    "AssertRefSnapshotId",
    "apply_rest_updates",
    "commit_table",
    "parse_commit",
    "parse_requirement",
    "requirement_failures",
]
