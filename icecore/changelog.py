"""Row-level changelog between two snapshots, as Spark's ``create_changelog_view`` reports it.

What is compared (Iceberg Java ``BaseIncrementalChangelogScan`` and Spark's
``CreateChangelogViewProcedure``):

* The changelog snapshots are the ancestors of the end snapshot (inclusive) back to the start
  snapshot (exclusive), which must be an ancestor of the end ("Snapshots", one lineage);
  ``replace`` snapshots are skipped, as they change files but not rows. ``_change_ordinal``
  numbers the remaining snapshots from 0, oldest first.
* A snapshot's rows (spec "Scan Planning", deletes applied by data sequence number): rows of
  data files it adds, minus rows its own delete files delete, are INSERT; rows of data files
  it removes, minus rows already deleted before it, are DELETE; rows of data files it keeps
  that its new delete files (position, equality or deletion vectors) delete are DELETE. This
  is the semantics of Java's ``AddedRowsScanTask``, ``DeletedDataFileScanTask`` and
  ``DeletedRowsScanTask``; Iceberg 1.10's scan itself refuses any snapshot that has delete
  manifests ("Delete files are currently not supported in changelog scans").
* Carry-overs (a row deleted and inserted unchanged by one snapshot, as copy-on-write does)
  are removed as Spark's ``RemoveCarryoverIterator`` does; ``net_changes`` collapses the
  whole range as ``RemoveNetCarryoverIterator``; ``compute_updates`` pairs a DELETE and an
  INSERT of one identifier in one snapshot as UPDATE_BEFORE/UPDATE_AFTER
  (``ComputeUpdateIterator``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icecore.arrow_types import arrow_field
from icecore.compute import pc
from icecore.errors import NotFound, Unsupported, ValidationError
from icecore.manifest import DataFileContent, ManifestContent, ManifestEntryStatus
from icecore.manifest_arrow import read_manifest
from icecore.metadata import Snapshot
from icecore.point_in_time import At, Point
from icecore.read import read_tasks
from icecore.row_access import check_columns, readable_schema, require_rows
from icecore.scan.planner import TableScan
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.table_data import access_of
from icecore.types import ListType, MapType, StructType

if TYPE_CHECKING:
    from icecore.table_data import TableData

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
METADATA_COLUMNS = (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID)
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
_POS = "_pos"


class ChangeType(StrEnum):
    """The ``_change_type`` values (Java ``ChangelogOperation``)."""

    INSERT = "INSERT"
    DELETE = "DELETE"
    UPDATE_BEFORE = "UPDATE_BEFORE"
    UPDATE_AFTER = "UPDATE_AFTER"


def changelog_snapshots(
    table: TableData, from_snapshot_id: int | None, to_snapshot_id: int
) -> list[Snapshot]:
    """The snapshots a changelog covers, oldest first, ``replace`` snapshots left out.

    Java ``SnapshotUtil.ancestorsBetween`` then ``orderedChangelogSnapshots``: ancestors of
    ``to_snapshot_id`` (inclusive) down to ``from_snapshot_id`` (exclusive; None: all).

    Raises:
        ValidationError: the start snapshot is not an ancestor of the end snapshot.
    """
    ancestors = table.metadata.ancestors_of(to_snapshot_id)
    if not ancestors:
        raise NotFound(f"Table {table.identifier} has no snapshot {to_snapshot_id}.")
    chosen: list[Snapshot] = []
    found = from_snapshot_id is None
    for snapshot in ancestors:
        if snapshot.snapshot_id == from_snapshot_id:
            found = True
            break
        chosen.append(snapshot)
    if not found:
        raise ValidationError(
            f"Starting snapshot (exclusive) {from_snapshot_id} is not a parent ancestor of end "
            f"snapshot {to_snapshot_id}."
        )
    chosen.reverse()
    return [s for s in chosen if _operation(s) != "replace"]


def _operation(snapshot: Snapshot) -> str | None:
    if snapshot.summary is None or snapshot.summary.operation is None:
        return None
    return str(snapshot.summary.operation)


@dataclass(frozen=True, slots=True)
class _FileChanges:
    """Data files a snapshot added or removed, and whether it added delete files."""

    added: frozenset[str]
    removed: frozenset[str]
    adds_deletes: bool


class _ChangelogReader:
    """Reads one changelog's rows; plans are cached per snapshot for this call only."""

    def __init__(self, table: TableData, schema: Schema) -> None:
        self.table = table
        self.schema = schema
        self.name_mapping = table.metadata.properties.get(NAME_MAPPING_PROPERTY)
        self._plans: dict[int, dict[str, FileScanTask]] = {}

    def tasks(self, snapshot_id: int) -> dict[str, FileScanTask]:
        """Live data files of a snapshot with the deletes that apply there, by path."""
        found = self._plans.get(snapshot_id)
        if found is None:
            plan = TableScan(self.table, at=At(snapshot_id=snapshot_id)).plan()
            found = {t.file_path: t for t in plan.tasks}
            self._plans[snapshot_id] = found
        return found

    def file_changes(self, snapshot: Snapshot) -> _FileChanges:
        """Entries the snapshot itself wrote: ADDED/DELETED data files, ADDED delete files."""
        added: set[str] = set()
        removed: set[str] = set()
        adds_deletes = False
        metadata = self.table.metadata
        for manifest in self.table.manifests(snapshot):
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue
            spec = metadata.spec_by_id(manifest.partition_spec_id)
            if spec is None:
                raise NotFound(f"Partition spec {manifest.partition_spec_id} is not defined.")
            entries = read_manifest(
                self.table.io, manifest, self.schema, spec, metadata.format_version
            )
            for entry in entries:
                if entry.snapshot_id != snapshot.snapshot_id:
                    continue
                path = entry.data_file.file_path
                if manifest.content is ManifestContent.DELETES or (
                    entry.data_file.content is not DataFileContent.DATA
                ):
                    adds_deletes = adds_deletes or entry.status is ManifestEntryStatus.ADDED
                elif entry.status is ManifestEntryStatus.ADDED:
                    added.add(path)
                elif entry.status is ManifestEntryStatus.DELETED:
                    removed.add(path)
        return _FileChanges(frozenset(added), frozenset(removed), adds_deletes)

    def read(self, task: FileScanTask) -> pa.Table:
        """Live rows of one task in ``self.schema``, with ``_pos``."""
        batches = list(
            read_tasks(
                self.table.io,
                [task],
                self.schema,
                metadata_columns=(_POS,),
                name_mapping=self.name_mapping,
            )
        )
        return pa.Table.from_batches(batches, schema=self._read_schema())

    def _read_schema(self) -> pa.Schema:
        fields = [arrow_field(f) for f in self.schema.fields]
        return pa.schema([*fields, pa.field(_POS, pa.int64(), nullable=False)])

    def snapshot_rows(self, snapshot: Snapshot) -> Iterable[tuple[ChangeType, pa.Table]]:
        """The raw INSERT and DELETE rows of one snapshot (before carry-over removal)."""
        changes = self.file_changes(snapshot)
        current = self.tasks(snapshot.snapshot_id)
        for path in sorted(changes.added):
            yield ChangeType.INSERT, self.read(current[path])
        if not changes.removed and not changes.adds_deletes:
            return
        parent = self._parent_tasks(snapshot)
        for path in sorted(changes.removed):
            yield ChangeType.DELETE, self.read(parent[path])
        if not changes.adds_deletes:
            return
        for path, before in parent.items():
            after = current.get(path)
            if after is None or path in changes.added:
                continue
            if {d.file_path for d in before.delete_files} == {
                d.file_path for d in after.delete_files
            }:
                continue
            rows = self.read(before)
            kept = self.read(after).column(_POS)
            gone = pc.invert(pc.is_in(rows.column(_POS), value_set=kept.combine_chunks()))
            yield ChangeType.DELETE, rows.filter(gone)

    def _parent_tasks(self, snapshot: Snapshot) -> dict[str, FileScanTask]:
        parent_id = snapshot.parent_snapshot_id
        if parent_id is None:
            return {}
        if self.table.metadata.snapshot_by_id(parent_id) is None:
            raise Unsupported(
                f"Snapshot {snapshot.snapshot_id} deletes rows, but its parent {parent_id} has "
                "expired, so the deleted rows can no longer be read."
            )
        return self.tasks(parent_id)


def _key(value: Any) -> Any:
    """A hashable form of a row value; NaN equals NaN, as Spark's ``Row.equals`` has it."""
    if isinstance(value, float) and math.isnan(value):
        return ("NaN",)
    if isinstance(value, list):
        return tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _key(v)) for k, v in value.items())
    return value


def _has_map(t: Any) -> bool:
    if isinstance(t, MapType):
        return True
    if isinstance(t, ListType):
        return _has_map(t.element_field.field_type)
    if isinstance(t, StructType):
        return any(_has_map(f.field_type) for f in t.fields)
    return False


def _resolve(table: TableData, point: str | int | Point | Snapshot | None) -> Snapshot | None:
    if point is None or isinstance(point, Snapshot):
        return point
    return table.point(point)


def changelog(
    table: TableData,
    from_point: str | int | Point | Snapshot | None,
    to_point: str | int | Point | Snapshot | None = None,
    *,
    identifier_columns: Sequence[str] | None = None,
    compute_updates: bool | None = None,
    net_changes: bool = False,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Changed rows between two points, as Spark's ``create_changelog_view`` shows them.

    Args:
        table: the table.
        from_point: the start, exclusive (snapshot id, ref or ISO time; None: from the
            first ancestor, inclusive, as Spark without ``start-snapshot-id``).
        to_point: the end, inclusive (default: the current snapshot); the start must be one
            of its ancestors.
        identifier_columns: the columns that identify a row (default: the schema's
            identifier fields).
        compute_updates: pair DELETE and INSERT rows of one identifier in one snapshot as
            UPDATE_BEFORE / UPDATE_AFTER; default, as Spark: only when ``identifier_columns``
            is given.
        net_changes: one net change per row over the whole range (carry-overs across
            snapshots removed too); not with ``compute_updates``.
        columns: table columns to return (the change columns always follow); carry-overs
            are found on all columns first, as Spark's view is computed before a ``SELECT``.

    Returns:
        The table's columns (current schema) then ``_change_type``, ``_change_ordinal`` and
        ``_commit_snapshot_id``.

    Raises:
        ValidationError: the start is not an ancestor of the end; updates with net changes;
            updates without identifier columns; an identifier with two DELETE rows in one
            snapshot (Spark: "Cannot compute updates because there are multiple rows with
            the same identifier fields").
        Unsupported: map columns without identifier columns (Spark cannot sort them), or a
            deleting snapshot whose parent has expired.
    """
    # Changed rows are row values: the reader role, and the masked columns left out before
    # anything is read, so carry-overs and updates are found on what the principal sees
    # (icecore.row_access; DESIGN.md "Identity, roles and audit").
    access, what = access_of(table), str(table.identifier)
    require_rows(access, what)
    full = table.metadata.current_schema()
    check_columns(full, access, columns, what)
    check_columns(full, access, identifier_columns, what)
    schema = readable_schema(full, access)
    start = _resolve(table, from_point)
    end = _resolve(table, to_point) if to_point is not None else table.snapshot()
    if end is None:
        raise NotFound(f"Table {table.identifier} has no snapshot.")
    identifiers = (
        tuple(identifier_columns)
        if identifier_columns is not None
        else schema.identifier_field_names()
    )
    updates = compute_updates if compute_updates is not None else identifier_columns is not None
    if not identifiers and any(_has_map(f.field_type) for f in schema.fields):
        raise Unsupported(
            "Identifier field is required as table contains unorderable (map) columns."
        )
    if updates and net_changes:
        raise ValidationError("Not support net changes with update images.")
    if updates and not identifiers:
        raise ValidationError(
            "Cannot compute the update images because identifier columns are not set."
        )
    names = [f.name for f in schema.fields]
    for name in identifiers:
        if name not in names:
            raise ValidationError(f"Identifier column {name!r} is not a top-level column.")

    snapshots = changelog_snapshots(
        table, start.snapshot_id if start is not None else None, end.snapshot_id
    )
    raw = _raw_rows(_ChangelogReader(table, schema), snapshots, schema)
    if updates:
        result = _compute_updates(raw, names, identifiers)
    elif net_changes:
        result = _remove_net_carryovers(raw, names)
    else:
        result = _remove_carryovers(raw, names)
    if columns is not None:
        result = result.select([*columns, *METADATA_COLUMNS])
    return result


def _output_schema(schema: Schema) -> pa.Schema:
    return pa.schema(
        [arrow_field(f) for f in schema.fields]
        + [
            pa.field(CHANGE_TYPE, pa.string(), nullable=False),
            pa.field(CHANGE_ORDINAL, pa.int32(), nullable=False),
            pa.field(COMMIT_SNAPSHOT_ID, pa.int64(), nullable=False),
        ]
    )


def _raw_rows(reader: _ChangelogReader, snapshots: list[Snapshot], schema: Schema) -> pa.Table:
    """Every INSERT and DELETE row of the range, carry-overs included (Spark's ``changes``)."""
    out_schema = _output_schema(schema)
    parts: list[pa.Table] = []
    for ordinal, snapshot in enumerate(snapshots):
        for change, rows in reader.snapshot_rows(snapshot):
            n = rows.num_rows
            if n == 0:
                continue
            data = rows.drop_columns([_POS])
            arrays = [
                *data.columns,
                pa.array([str(change)] * n, pa.string()),
                pa.array([ordinal] * n, pa.int32()),
                pa.array([snapshot.snapshot_id] * n, pa.int64()),
            ]
            parts.append(pa.Table.from_arrays(arrays, schema=out_schema))
    if not parts:
        return out_schema.empty_table()
    return pa.concat_tables(parts)


def _row_keys(raw: pa.Table, names: Sequence[str]) -> list[tuple[Any, ...]]:
    columns = [raw.column(n).to_pylist() for n in names]
    return [tuple(_key(c[i]) for c in columns) for i in range(raw.num_rows)]


def _with_types(raw: pa.Table, picks: list[tuple[int, str]]) -> pa.Table:
    """Rows ``picks`` of ``raw`` (index, change type), in that order."""
    taken = raw.take(pa.array([i for i, _ in picks], pa.int64()))
    idx = taken.schema.get_field_index(CHANGE_TYPE)
    types = pa.array([t for _, t in picks], pa.string())
    return taken.set_column(idx, taken.schema.field(idx), types)


def _groups(keys: Sequence[tuple[Any, ...]]) -> list[list[int]]:
    """Row numbers grouped by key, groups in order of first appearance."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def _remove_carryovers(raw: pa.Table, names: Sequence[str]) -> pa.Table:
    """Spark's ``RemoveCarryoverIterator``: cancel DELETE/INSERT pairs of identical rows.

    Rows are identical when all table columns and the snapshot agree; of ``d`` DELETE and
    ``i`` INSERT copies, ``|d - i|`` of the larger kind remain.
    """
    keys = _row_keys(raw, [*names, CHANGE_ORDINAL])
    types = raw.column(CHANGE_TYPE).to_pylist()
    picks: list[tuple[int, str]] = []
    for rows in _groups(keys):
        deletes = [i for i in rows if types[i] == ChangeType.DELETE]
        inserts = [i for i in rows if types[i] == ChangeType.INSERT]
        surplus = (
            deletes[len(inserts) :] if len(deletes) > len(inserts) else inserts[len(deletes) :]
        )
        picks.extend((i, types[i]) for i in surplus)
    picks.sort()
    return _with_types(raw, picks)


def _remove_net_carryovers(raw: pa.Table, names: Sequence[str]) -> pa.Table:
    """Spark's ``RemoveNetCarryoverIterator``: net changes over the whole range.

    Copies of one row, sorted by ordinal then change type (DELETE before INSERT), are walked
    keeping a count relative to the first copy of a run (same type +1, opposite -1); a run
    ends when the count reaches 0. What is left is the last run's first copy, count times.
    """
    keys = _row_keys(raw, names)
    types = raw.column(CHANGE_TYPE).to_pylist()
    ordinals = raw.column(CHANGE_ORDINAL).to_pylist()
    picks: list[tuple[int, str]] = []
    for rows in _groups(keys):
        rows.sort(key=lambda i: (ordinals[i], types[i]))
        first = rows[0]
        count = 0
        for i in rows:
            if count == 0:
                first, count = i, 1
            elif types[i] == types[first]:
                count += 1
            else:
                count -= 1
        picks.extend((first, types[first]) for _ in range(count))
    picks.sort()
    return _with_types(raw, picks)


def _compute_updates(raw: pa.Table, names: Sequence[str], identifiers: Sequence[str]) -> pa.Table:
    """Spark's ``ChangelogIterator.computeUpdates``: carry-overs out, then update pairs.

    Per identifier and snapshot: identical DELETE/INSERT pairs cancel; a remaining DELETE
    followed by an INSERT becomes UPDATE_BEFORE and UPDATE_AFTER (``ComputeUpdateIterator``).
    """
    kept = _remove_carryovers(raw, names)
    keys = _row_keys(kept, [*identifiers, CHANGE_ORDINAL])
    types = kept.column(CHANGE_TYPE).to_pylist()
    picks: list[tuple[int, str]] = []
    for rows in _groups(keys):
        deletes = [i for i in rows if types[i] == ChangeType.DELETE]
        inserts = [i for i in rows if types[i] == ChangeType.INSERT]
        if len(deletes) > 1 or (deletes and not inserts and len(rows) > 1):
            raise ValidationError(
                "Cannot compute updates because there are multiple rows with the same "
                f"identifier fields ([{','.join(identifiers)}]). Please make sure the rows "
                "are unique."
            )
        if deletes and inserts:
            picks.append((deletes[0], ChangeType.UPDATE_BEFORE))
            picks.append((inserts[0], ChangeType.UPDATE_AFTER))
            picks.extend((i, ChangeType.INSERT) for i in inserts[1:])
        else:
            picks.extend((i, types[i]) for i in rows)
    picks.sort()
    return _with_types(kept, picks)


__all__ = [
    "CHANGE_ORDINAL",
    "CHANGE_TYPE",
    "COMMIT_SNAPSHOT_ID",
    "METADATA_COLUMNS",
    "ChangeType",
    "changelog",
    "changelog_snapshots",
]
