"""Metadata changes as events: what each commit of the table changed besides its snapshots.

A schema, partition spec, sort order, property or ref commit adds no snapshot, so a history
of snapshots does not show it; it shows as a new metadata file. Spec "Table Metadata
Fields": ``metadata-log`` lists the previous metadata files, oldest first, and each file
holds the table's whole state, so two consecutive files compared tell what one commit
changed: schemas (fields matched by id, :func:`icecore.diff.schema_changes`), the default
partition spec ("Partition Specs", fields matched by partition field id), the default sort
order ("Sort Orders"), properties, refs ("Snapshot References"), the location and the
format version, and the snapshots expiry removed.

The files are read through the table's FileIO (:mod:`icecore.metadata_log`), newest first,
within :data:`icecore.metadata_log.MAX_FILES_READ` files and
:data:`icecore.metadata_log.TIME_BOUND_S` seconds per request, with progress told to the
listener. What two files differ by never changes, so it is kept per process by the pair of
locations (:data:`PAIRS_CACHED`): a file is read once, and after a commit only the new pair
is compared. A missing or unreadable file is an event that says so; the next readable file
is then compared with the last readable one before it, and says so.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icecore.describe import change_text, column_names
from icecore.diff import schema_changes
from icecore.lru import LRU
from icecore.metadata import SnapshotRef, TableMetadata
from icecore.metadata_log import (
    MAX_FILES_READ,
    READING,
    TIME_BOUND_S,
    LogFile,
    log_locations,
    read_log_file,
)
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.progress import report
from icecore.sorting import SortOrder
from icecore.table_data import TableData

KINDS = (
    "schema",
    "spec",
    "sort_order",
    "properties",
    "ref",
    "location",
    "format_version",
    "snapshots",
    "unreadable",
    "not_read",
)
"""Event kinds, in the order one file's events are listed. ``snapshots``: snapshots removed
(expiry); ``unreadable``: a metadata file of the log is missing or cannot be read;
``not_read``: older files were left unread by the bounds."""

PAIRS_CACHED = 16_384
"""Pairs of consecutive metadata files whose events are kept per process."""


@dataclass(frozen=True, slots=True)
class MetadataEvent:
    """One kind of change one metadata file made.

    Attributes:
        timestamp_ms: the file's ``last-updated-ms`` (when the change was committed).
        metadata_file: the metadata file that made it.
        previous_file: the file it is compared with (the one before it, or the last
            readable one before it), or None.
        kind: one of :data:`KINDS`.
        changes: what changed, one sentence each.
        details: the same as structured values (JSON-ready).
    """

    timestamp_ms: int
    metadata_file: str
    previous_file: str | None
    kind: str
    changes: tuple[str, ...]
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``time`` as ISO-8601 is added by the caller that prints it)."""
        return {
            "timestamp_ms": self.timestamp_ms,
            "metadata_file": self.metadata_file,
            "previous_file": self.previous_file,
            "kind": self.kind,
            "changes": list(self.changes),
            "details": dict(self.details),
        }


_PAIRS: LRU[tuple[str, str], tuple[MetadataEvent, ...]] = LRU(PAIRS_CACHED)


# ---------------------------------------------------------------------------------------
# One pair of files


def _schema(before: TableMetadata, after: TableMetadata) -> list[str] | None:
    old_ids = {s.schema_id for s in before.schemas}
    new_ids = {s.schema_id for s in after.schemas}
    old_id, new_id = before.current_schema_id, after.current_schema_id
    if old_ids == new_ids and old_id == new_id:
        return None
    lines = []
    if new_id != old_id:
        head = (
            f"Schema {new_id} added and made current (was {old_id})"
            if new_id not in old_ids
            else f"Current schema switched from {old_id} to {new_id}"
        )
        changes = schema_changes(before.current_schema(), after.current_schema())
        lines.append(head + (": " + "; ".join(change_text(c) for c in changes) if changes else ""))
    lines += [f"Schema {i} added (not current)" for i in sorted(new_ids - old_ids - {new_id})]
    lines += [f"Schema {i} removed" for i in sorted(old_ids - new_ids)]
    return lines


def _schema_details(before: TableMetadata, after: TableMetadata) -> dict[str, Any]:
    changes = schema_changes(before.current_schema(), after.current_schema())
    return {
        "schema_id_before": before.current_schema_id,
        "schema_id_after": after.current_schema_id,
        "schemas_added": sorted(
            {s.schema_id for s in after.schemas} - {s.schema_id for s in before.schemas}
        ),
        "schemas_removed": sorted(
            {s.schema_id for s in before.schemas} - {s.schema_id for s in after.schemas}
        ),
        "field_changes": [
            {"kind": c.kind, "field_id": c.field_id, "name": c.name}
            | {"before": c.before, "after": c.after}
            for c in changes
        ],
    }


def _field(metadata: TableMetadata, f: PartitionField) -> dict[str, str]:
    return {
        "name": f.name,
        "transform": str(f.transform),
        "source": column_names(metadata, f.all_source_ids),
    }


def _spec(before: TableMetadata, after: TableMetadata) -> tuple[list[str], dict[str, Any]] | None:
    old, new = before.default_spec(), after.default_spec()
    old_ids = {s.spec_id for s in before.partition_specs}
    new_ids = {s.spec_id for s in after.partition_specs}
    if old.spec_id == new.spec_id and old_ids == new_ids:
        return None
    live_old = {f.field_id: f for f in old.fields if not f.transform.is_void}
    live_new = {f.field_id: f for f in new.fields if not f.transform.is_void}
    added = [_field(after, f) for i, f in live_new.items() if i not in live_old]
    removed = [_field(before, f) for i, f in live_old.items() if i not in live_new]
    renamed = [
        {"before": live_old[i].name, "after": f.name}
        for i, f in live_new.items()
        if i in live_old and live_old[i].name != f.name
    ]
    lines = []
    if old.spec_id != new.spec_id:
        verb = "added and made the default" if new.spec_id not in old_ids else "made the default"
        lines.append(
            f"Partition spec {new.spec_id} {verb} (was {old.spec_id}): {_spec_text(after, new)}"
        )
    lines += [f"added partition field {a['name']}: {a['transform']}({a['source']})" for a in added]
    lines += [
        f"removed partition field {r['name']}: {r['transform']}({r['source']})" for r in removed
    ]
    lines += [f"renamed partition field {r['before']} to {r['after']}" for r in renamed]
    lines += [
        f"Partition spec {i} added (not the default)"
        for i in sorted(new_ids - old_ids - {new.spec_id})
    ]
    lines += [f"Partition spec {i} removed" for i in sorted(old_ids - new_ids)]
    details = {
        "spec_id_before": old.spec_id,
        "spec_id_after": new.spec_id,
        "fields_added": added,
        "fields_removed": removed,
        "fields_renamed": renamed,
    }
    return lines, details


def _spec_text(metadata: TableMetadata, spec: PartitionSpec) -> str:
    if spec.is_unpartitioned:
        return "unpartitioned"
    return ", ".join(
        f"{f.name}: {f.transform}({column_names(metadata, f.all_source_ids)})" for f in spec.fields
    )


def _order_fields(metadata: TableMetadata, order: SortOrder) -> list[dict[str, str]]:
    return [
        {
            "source": column_names(
                metadata, f.source_ids if f.source_ids is not None else (f.source_id,)
            ),
            "transform": str(f.transform),
            "direction": f.direction.value,
            "null_order": f.null_order.value,
        }
        for f in order.fields
    ]


def _order_text(fields: list[dict[str, str]]) -> str:
    if not fields:
        return "unsorted"
    parts = []
    for f in fields:
        column = f["source"] if f["transform"] == "identity" else f"{f['transform']}({f['source']})"
        parts.append(
            f"{column} {f['direction'].upper()} {f['null_order'].replace('-', ' ').upper()}"
        )
    return ", ".join(parts)


def _sort(before: TableMetadata, after: TableMetadata) -> tuple[list[str], dict[str, Any]] | None:
    old, new = before.default_sort_order(), after.default_sort_order()
    old_ids = {o.order_id for o in before.sort_orders}
    new_ids = {o.order_id for o in after.sort_orders}
    if old.order_id == new.order_id and old_ids == new_ids:
        return None
    fields = _order_fields(after, new)
    lines = []
    if old.order_id != new.order_id:
        lines.append(
            f"Sort order {new.order_id} made the default (was {old.order_id}): "
            f"{_order_text(fields)}"
        )
    lines += [
        f"Sort order {i} added (not the default)"
        for i in sorted(new_ids - old_ids - {new.order_id})
    ]
    details = {
        "order_id_before": old.order_id,
        "order_id_after": new.order_id,
        "fields": fields,
    }
    return lines, details


def _literal(value: str) -> str:
    """A property value as a SQL string literal (quotes doubled), so spaces stay visible."""
    return "'" + value.replace("'", "''") + "'"


def _properties(
    before: TableMetadata, after: TableMetadata
) -> tuple[list[str], dict[str, Any]] | None:
    old, new = before.properties, after.properties
    if dict(old) == dict(new):
        return None
    set_ = {k: new[k] for k in sorted(new) if k not in old}
    changed = {k: [old[k], new[k]] for k in sorted(new) if k in old and old[k] != new[k]}
    removed = {k: old[k] for k in sorted(old) if k not in new}
    lines = [f"set {k} = {_literal(v)}" for k, v in set_.items()]
    lines += [f"changed {k} from {_literal(a)} to {_literal(b)}" for k, (a, b) in changed.items()]
    lines += [f"removed {k} (was {_literal(v)})" for k, v in removed.items()]
    return lines, {"set": set_, "changed": changed, "removed": removed}


_RETENTION = (
    ("min_snapshots_to_keep", "minimum snapshots to keep"),
    ("max_snapshot_age_ms", "maximum snapshot age (ms)"),
    ("max_ref_age_ms", "maximum ref age (ms)"),
)


def _kind(ref: SnapshotRef) -> str:
    return "branch" if ref.is_branch else "tag"


def _refs(before: TableMetadata, after: TableMetadata) -> tuple[list[str], dict[str, Any]] | None:
    """Refs created, removed, moved to a snapshot that existed already, or re-kept.

    A branch that moves to a snapshot this same commit added is a write (an append, a
    delete, ...), shown as that snapshot; it is not repeated here.
    """
    old, new = before.refs, after.refs
    added_snapshots = {s.snapshot_id for s in after.snapshots} - {
        s.snapshot_id for s in before.snapshots
    }
    lines: list[str] = []
    details: dict[str, list[dict[str, Any]]] = {
        "created": [],
        "removed": [],
        "moved": [],
        "retention": [],
    }
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None and b is not None:
            lines.append(f"{_kind(b)} {name} created at snapshot {b.snapshot_id}")
            details["created"].append(
                {"name": name, "type": _kind(b), "snapshot_id": b.snapshot_id}
            )
        elif b is None and a is not None:
            lines.append(f"{_kind(a)} {name} removed (was at snapshot {a.snapshot_id})")
            details["removed"].append(
                {"name": name, "type": _kind(a), "snapshot_id": a.snapshot_id}
            )
        elif a is not None and b is not None:
            if a.is_branch != b.is_branch:
                lines.append(f"{name} replaced: now a {_kind(b)} at snapshot {b.snapshot_id}")
            if a.snapshot_id != b.snapshot_id and b.snapshot_id not in added_snapshots:
                lines.append(
                    f"{_kind(b)} {name} moved from snapshot {a.snapshot_id} to {b.snapshot_id}"
                )
                details["moved"].append(
                    {
                        "name": name,
                        "type": _kind(b),
                        "before": a.snapshot_id,
                        "after": b.snapshot_id,
                    }
                )
            for attr, label in _RETENTION:
                was, now = getattr(a, attr), getattr(b, attr)
                if was != now:
                    lines.append(
                        f"{_kind(b)} {name}: {label} "
                        f"{'table default' if was is None else f'{was:,}'} → "
                        f"{'table default' if now is None else f'{now:,}'}"
                    )
                    details["retention"].append(
                        {"name": name, "setting": attr, "before": was, "after": now}
                    )
    if not lines:
        return None
    return lines, details


def compare(
    before: TableMetadata, after: TableMetadata, location: str, previous: str, timestamp_ms: int
) -> list[MetadataEvent]:
    """The events ``after`` (at ``location``) made relative to ``before`` (at ``previous``)."""
    found: list[MetadataEvent] = []

    def add(kind: str, lines: list[str], details: dict[str, Any]) -> None:
        found.append(MetadataEvent(timestamp_ms, location, previous, kind, tuple(lines), details))

    schema = _schema(before, after)
    if schema is not None:
        add("schema", schema, _schema_details(before, after))
    for kind, changed in (
        ("spec", _spec(before, after)),
        ("sort_order", _sort(before, after)),
        ("properties", _properties(before, after)),
        ("ref", _refs(before, after)),
    ):
        if changed is not None:
            add(kind, *changed)
    if before.location != after.location:
        add(
            "location",
            [f"location changed from {before.location} to {after.location}"],
            {"before": before.location, "after": after.location},
        )
    if before.format_version != after.format_version:
        add(
            "format_version",
            [f"format version upgraded from {before.format_version} to {after.format_version}"],
            {"before": before.format_version, "after": after.format_version},
        )
    gone = sorted(
        {s.snapshot_id for s in before.snapshots} - {s.snapshot_id for s in after.snapshots}
    )
    if gone:
        add(
            "snapshots",
            [f"{len(gone):,} snapshot{'s' if len(gone) != 1 else ''} removed (expired)"],
            {"snapshots_removed": gone},
        )
    return found


# ---------------------------------------------------------------------------------------
# The whole log


def metadata_events(
    table: TableData,
    *,
    max_files: int = MAX_FILES_READ,
    time_bound_s: float = TIME_BOUND_S,
) -> list[MetadataEvent]:
    """Every metadata change of the table's log, oldest first (see the module docstring).

    Files are compared newest first, so the bounds leave the oldest unread; what was not
    read is one ``not_read`` event. Never raises for an old file: a missing or unreadable
    one is an ``unreadable`` event.
    """
    files = log_locations(table)
    uncached = {
        j
        for i in range(1, len(files))
        if (files[i - 1][0], files[i][0]) not in _PAIRS
        for j in (i - 1, i)
        if files[j][0] != table.metadata_location  # the current file is in hand
    }
    total = min(len(uncached), max_files)
    started = time.monotonic()
    read: dict[int, LogFile] = {}
    reads = 0
    newest_first: list[MetadataEvent] = []

    def get(i: int) -> LogFile:
        nonlocal reads
        if i not in read:
            read[i] = read_log_file(table, *files[i])
            if files[i][0] != table.metadata_location:
                reads += 1
                report(READING, min(reads, total), total)
        return read[i]

    i = len(files) - 1
    while i > 0:
        location, timestamp_ms = files[i]
        cached = _PAIRS.get((files[i - 1][0], location))
        if cached is not None:
            newest_first += reversed(cached)
            i -= 1
            continue
        if reads >= max_files or time.monotonic() - started > time_bound_s:
            newest_first.append(_not_read(files[:i], max_files, time_bound_s))
            return newest_first[::-1]
        after = get(i)
        if after.metadata is None:
            newest_first.append(_unreadable(after))
            read.pop(i, None)
            i -= 1
            continue
        j = i - 1
        while j >= 0 and get(j).metadata is None:
            j -= 1  # its unreadable event is added when the walk reaches it
            if reads >= max_files:
                break
        if j < 0 or read[j].metadata is None:
            read.pop(i, None)
            i -= 1
            continue
        before = read[j]
        assert before.metadata is not None
        events = compare(before.metadata, after.metadata, location, before.location, timestamp_ms)
        if j < i - 1:
            skipped = i - 1 - j
            events = [
                MetadataEvent(
                    e.timestamp_ms,
                    e.metadata_file,
                    e.previous_file,
                    e.kind,
                    (
                        f"Compared with {before.location}: the {skipped:,} file"
                        f"{'s' if skipped != 1 else ''} between cannot be read",
                        *e.changes,
                    ),
                    e.details,
                )
                for e in events
            ]
        else:
            _PAIRS.put((before.location, location), tuple(events))
        newest_first += reversed(events)
        read.pop(i, None)
        i -= 1
    if len(files) > 1 and (files[0][0], files[1][0]) not in _PAIRS:
        first = get(0)  # the oldest file is never compared with an older one
        if first.metadata is None:
            newest_first.append(_unreadable(first))
    return newest_first[::-1]


def _unreadable(file: LogFile) -> MetadataEvent:
    return MetadataEvent(
        file.timestamp_ms,
        file.location,
        None,
        "unreadable",
        (f"{file.problem.rstrip('.')}; what it changed cannot be told.",),
        {"problem": file.problem},
    )


def _not_read(files: list[tuple[str, int]], max_files: int, time_bound_s: float) -> MetadataEvent:
    location, timestamp_ms = files[-1]
    return MetadataEvent(
        timestamp_ms,
        location,
        None,
        "not_read",
        (
            f"{len(files):,} older metadata file{'s' if len(files) != 1 else ''} (this one and "
            f"before) not read: at most {max_files:,} files or {time_bound_s:g} s per request.",
        ),
        {"files_not_read": len(files)},
    )


__all__ = ["KINDS", "PAIRS_CACHED", "MetadataEvent", "compare", "metadata_events"]
