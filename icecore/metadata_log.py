"""A table's earlier metadata files, read through its FileIO, and what was in force at a snapshot.

Spec "Table Metadata Fields": ``metadata-log`` lists the previous metadata files, oldest
first, each with the ``last-updated-ms`` of that file; the current file follows them. A
metadata file never changes once written, so what is learnt from one is kept per process by
its location (:data:`FACTS_CACHED`) and each file is read once. Old files may be gone
(``write.metadata.delete-after-commit.enabled``, a manual clean-up) or unreadable: such a
file is reported as such (:class:`LogFile` with a ``problem``), never guessed at.

:func:`state_at` answers "which schema, partition spec and sort order did the table have at
this snapshot": the Overview at a tag must show the tag's columns, not today's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from icecore.errors import IcecoreError, NotFound
from icecore.io import MAX_METADATA_BYTES, normalize_path
from icecore.lru import LRU
from icecore.metadata import Snapshot, TableMetadata, parse_metadata
from icecore.partitioning import PartitionSpec
from icecore.point_in_time import Point
from icecore.progress import report
from icecore.schema import Schema
from icecore.sorting import SortOrder
from icecore.table_data import TableData

MAX_FILES_READ = 1_000
"""Earlier metadata files one request reads at most (Iceberg keeps 100 by default:
``write.metadata.previous-versions-max``); older ones are reported as not read."""
TIME_BOUND_S = 30.0
"""One request stops reading earlier metadata files after this many seconds; the files it
did not reach are reported as not read."""
MAX_FILE_BYTES = MAX_METADATA_BYTES
"""An earlier metadata file larger than this is reported as not read (the cap of every
metadata file read, :data:`icecore.io.MAX_METADATA_BYTES`; a log entry may name anything)."""
STATE_FILES_READ = 16
"""Metadata files :func:`state_at` reads at most to find the one a snapshot was added in."""
FACTS_CACHED = 4_096
"""Metadata files whose :class:`FileFacts` are kept per process (a few hundred bytes each)."""

READING = "Reading earlier metadata files"
"""What the progress listener is told while old metadata files are read."""


@dataclass(frozen=True, slots=True)
class LogFile:
    """One metadata file of the table's log: where it is, when, and its content if readable.

    Attributes:
        location: the metadata file.
        timestamp_ms: its ``last-updated-ms`` as the log records it.
        metadata: the parsed file, or None when it could not be read.
        problem: why it could not be read (one sentence), or "".
    """

    location: str
    timestamp_ms: int
    metadata: TableMetadata | None
    problem: str = ""


def log_locations(table: TableData) -> list[tuple[str, int]]:
    """Every metadata file of the log, oldest first, then the current one, with its time."""
    metadata = table.metadata
    found = [(e.metadata_file, e.timestamp_ms) for e in metadata.metadata_log]
    found.append((table.metadata_location, metadata.last_updated_ms))
    return found


def adds_no_snapshot(metadata: TableMetadata) -> bool:
    """Whether the commit that wrote ``metadata`` added no snapshot (a metadata-only commit).

    A snapshot is made before the commit that adds it, so one added by this file's commit
    is newer than the previous file's ``last-updated-ms``. False for a table's first file.
    """
    if not metadata.metadata_log:
        return False
    previous_ms = metadata.metadata_log[-1].timestamp_ms
    return all(s.timestamp_ms <= previous_ms for s in metadata.snapshots)


def read_log_file(table: TableData, location: str, timestamp_ms: int) -> LogFile:
    """One metadata file of the table's log, read through the table's FileIO.

    The current file is the table's own metadata (not read again). A missing or unreadable
    file comes back with ``metadata`` None and the reason in ``problem``.
    """
    if location == table.metadata_location:
        return LogFile(location, timestamp_ms, table.metadata)
    if not _in_metadata_folders(table, location):
        return LogFile(
            location,
            timestamp_ms,
            None,
            f"Metadata file {location[:300]} is outside the table's metadata folders; "
            "it was not read.",
        )
    try:
        raw = table.io.read(location, limit=MAX_FILE_BYTES)
        return LogFile(location, timestamp_ms, parse_metadata(raw, location=location))
    except NotFound:
        return LogFile(location, timestamp_ms, None, f"Metadata file {location} is missing.")
    except IcecoreError as e:
        return LogFile(location, timestamp_ms, None, str(e))


def _in_metadata_folders(table: TableData, location: str) -> bool:
    """Whether ``location`` is in a folder the table's metadata files are written to.

    The log's entries come from the metadata file, which anyone who can write it chooses:
    an entry naming ``/dev/zero``, another table's folder or an ``http://`` host must not
    make the server read it. Allowed: the current metadata file's folder, the table
    location's ``metadata/`` folder and ``write.metadata.path``, on the same filesystem
    (no ``..`` segments).
    """
    protocol, path = normalize_path(location)
    if "/../" in f"{path}/" or "/./" in f"{path}/":
        return False
    metadata = table.metadata
    folders = [
        table.metadata_location.rsplit("/", 1)[0],
        f"{metadata.location.rstrip('/')}/metadata",
        metadata.properties.get("write.metadata.path", ""),
    ]
    for folder in filter(None, folders):
        folder_protocol, folder_path = normalize_path(folder)
        if folder_protocol == protocol and path.startswith(f"{folder_path.rstrip('/')}/"):
            return True
    return False


def read_newest_first(
    table: TableData,
    locations: list[tuple[str, int]],
    *,
    max_files: int = MAX_FILES_READ,
    time_bound_s: float = TIME_BOUND_S,
) -> Iterator[LogFile]:
    """Read ``locations`` newest first, within ``max_files`` and ``time_bound_s``.

    Tells the progress listener after each file (:mod:`icecore.progress`). Stops quietly at
    a bound: the caller sees which files it did not get.
    """
    started = time.monotonic()
    total = min(len(locations), max_files)
    for done, (location, timestamp_ms) in enumerate(reversed(locations), start=1):
        if done > max_files or time.monotonic() - started > time_bound_s:
            return
        yield read_log_file(table, location, timestamp_ms)
        report(READING, done, total)


# ---------------------------------------------------------------------------------------
# What was in force at a snapshot


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What :func:`state_at` needs of one metadata file, kept per process by its location.

    Attributes:
        snapshot_ids: the snapshots the file lists.
        previous_ms: the ``last-updated-ms`` of the file before it (its own log's last
            entry), or None when its log is empty (the table's first file).
        spec, sort_order: its default partition spec and sort order.
        schema: its current schema.
    """

    snapshot_ids: frozenset[int]
    previous_ms: int | None
    spec: PartitionSpec
    sort_order: SortOrder
    schema: Schema


_FACTS: LRU[str, FileFacts] = LRU(FACTS_CACHED)


def _facts_of(metadata: TableMetadata) -> FileFacts:
    log = metadata.metadata_log
    return FileFacts(
        snapshot_ids=frozenset(s.snapshot_id for s in metadata.snapshots),
        previous_ms=log[-1].timestamp_ms if log else None,
        spec=metadata.default_spec(),
        sort_order=metadata.default_sort_order(),
        schema=metadata.current_schema(),
    )


def _facts(table: TableData, location: str, timestamp_ms: int) -> FileFacts | str:
    """The facts of one log file (cached), or the sentence saying why it cannot be read."""
    found = _FACTS.get(location)
    if found is not None:
        return found
    read = read_log_file(table, location, timestamp_ms)
    if read.metadata is None:
        return read.problem
    return _FACTS.put(location, _facts_of(read.metadata))


@dataclass(frozen=True, slots=True)
class SnapshotState:
    """The schema, partition spec and sort order a snapshot was written under.

    Attributes:
        schema: the schema the snapshot is read with.
        spec: the default partition spec right after the snapshot was committed.
        sort_order: the default sort order then.
        metadata_file: the metadata file ``spec`` and ``sort_order`` come from.
        exact: whether that file is the one the snapshot was committed in (False: today's
            metadata stands in, and ``note`` says why).
        note: one sentence for people: where the spec and sort order come from.
    """

    schema: Schema
    spec: PartitionSpec
    sort_order: SortOrder
    metadata_file: str
    exact: bool
    note: str


def _today(table: TableData, schema: Schema, why: str) -> SnapshotState:
    metadata = table.metadata
    return SnapshotState(
        schema,
        metadata.default_spec(),
        metadata.default_sort_order(),
        table.metadata_location,
        False,
        f"Partition spec and sort order as of today's metadata; {why}",
    )


def state_at(table: TableData, point: Point | None = None) -> SnapshotState:
    """The schema, spec and sort order in force at a point (default: the current snapshot).

    The schema is the one a read of that point uses (:meth:`TableData.resolve`, as
    Iceberg Java's ``SnapshotUtil.schemaFor``): a tag, a snapshot id or a time reads with
    the snapshot's ``schema-id``; a branch and the current table read with today's schema,
    and so do they get today's spec and sort order (their next write uses them).

    The spec and sort order at a snapshot are the default spec and default sort order of
    the metadata file the snapshot was committed in: the oldest file of the log (spec
    "Table Metadata Fields", ``metadata-log``, then the current file) whose ``snapshots``
    list it. Files replaced before the snapshot's ``timestamp-ms`` cannot list it (a
    snapshot is made before the commit that adds it), so the search starts at the first
    file of the log updated at or after that time and reads forward, at most
    :data:`STATE_FILES_READ` files. The file found is the one the snapshot was committed
    in when the file before it was updated before the snapshot's time (from the log, or
    from the found file's own log when it is the oldest one listed), or when it has no
    earlier file at all. When the log does not reach back that far, a file on the way is
    missing or unreadable, or the bound is reached, today's spec and sort order are
    returned with ``exact`` False and a note that says so.
    """
    metadata = table.metadata
    resolved = table.resolve(point)
    snapshot, schema = resolved.snapshot, resolved.schema
    if snapshot is None:
        return _today(table, metadata.current_schema(), "the table has no snapshot.")
    if resolved.reads_branch:
        return SnapshotState(
            schema,
            metadata.default_spec(),
            metadata.default_sort_order(),
            table.metadata_location,
            True,
            "A branch reads and writes with the table's current schema, spec and sort order.",
        )
    located = _committed_in(table, snapshot)
    if isinstance(located, str):
        return _today(table, schema, located)
    location, facts = located
    if snapshot.schema_id is None:
        schema = facts.schema  # a writer that recorded no schema id: the file's current one
    elif metadata.schema_by_id(snapshot.schema_id) is None:
        return _today(table, schema, f"schema {snapshot.schema_id} is gone from the table.")
    return SnapshotState(
        schema,
        facts.spec,
        facts.sort_order,
        location,
        True,
        f"Partition spec and sort order of {location}, the metadata file snapshot "
        f"{snapshot.snapshot_id} was committed in.",
    )


def _committed_in(table: TableData, snapshot: Snapshot) -> tuple[str, FileFacts] | str:
    """The metadata file ``snapshot`` was committed in and its facts, or why it is unknown."""
    files = log_locations(table)
    start = next(
        (i for i, (_, ms) in enumerate(files) if ms >= snapshot.timestamp_ms), len(files) - 1
    )
    gone = "the metadata file of that time is gone"
    for i in range(start, min(start + STATE_FILES_READ, len(files))):
        location, timestamp_ms = files[i]
        facts = _facts(table, location, timestamp_ms)
        if isinstance(facts, str):
            return f"{gone} ({facts.rstrip('.')})."
        if snapshot.snapshot_id not in facts.snapshot_ids:
            continue
        # Files before ``start`` were updated before the snapshot existed; those from
        # ``start`` on were read and do not list it. The oldest listed file has only its own
        # log to tell whether the file before it could list the snapshot.
        if i > 0 or facts.previous_ms is None or facts.previous_ms < snapshot.timestamp_ms:
            return location, facts
        return f"{gone} (the metadata log does not reach back to it)."
    return f"{gone} (it is not in the {STATE_FILES_READ} files after its time)."


__all__ = [
    "FACTS_CACHED",
    "MAX_FILES_READ",
    "MAX_FILE_BYTES",
    "READING",
    "STATE_FILES_READ",
    "TIME_BOUND_S",
    "FileFacts",
    "LogFile",
    "SnapshotState",
    "adds_no_snapshot",
    "log_locations",
    "read_log_file",
    "read_newest_first",
    "state_at",
]
