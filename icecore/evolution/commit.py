"""Validate, write and swap: one commit of metadata updates, with bounded retries.

Spec "Optimistic Concurrency" and "Commit Conflict Resolution and Retry": a commit loads the
table as its catalog has it *now*, checks the requirements its updates were computed under
(:mod:`icecore.metadata.requirements`), applies the updates with
:class:`~icecore.metadata.builder.MetadataBuilder` (which checks the result against the
spec), serializes the new metadata and parses it back strictly before anything is written,
and asks the catalog to swap the table's pointer from the loaded file to the new one.

When the swap is lost to another writer, the table is loaded again and the updates are
re-applied only if every requirement still holds; a schema change therefore survives a
concurrent append or spec change, a spec change a concurrent schema change that keeps its
source columns. Retries follow the table's ``commit.retry.*`` properties (Iceberg Java's
names and defaults: 4 retries, 100 ms doubling to at most 60 s, 30 minutes in all).
Otherwise :class:`~icecore.errors.CommitConflict` says what changed.

When the catalog cannot tell whether the swap happened (:class:`CommitStateUnknown`), the
table is loaded again: the commit succeeded if the written file is current or in the
``metadata-log``, failed (and is retried) if the table moved on without it; if that cannot
be learnt either, the error reaches the caller with the file's location, and the file is
never deleted.

A catalog that applies updates itself (:class:`UpdateCommitter`: the REST catalog) gets the
requirements and updates instead of a file, after the same local checks; its 409 goes
through the same re-check-and-retry. A lost answer (5xx, a connection broken after sending)
is settled by the REST catalog itself: it loads the table again and looks (applied: done;
unchanged: one more try; anything else: CommitStateUnknown reaches the caller).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from icecore.config import read_only
from icecore.errors import (
    CommitConflict,
    CommitStateUnknown,
    IcecoreError,
    Unsupported,
    ValidationError,
)
from icecore.evolution.preview import what_changed
from icecore.failpoints import failpoint
from icecore.io import normalize_path
from icecore.manifest import ManifestContent
from icecore.metadata.builder import MetadataBuilder, encode_metadata
from icecore.metadata.requirements import Requirement, violations
from icecore.metadata.updates import MetadataUpdate

if TYPE_CHECKING:
    from icecore.table_data import TableData


@runtime_checkable
class UpdateCommitter(Protocol):
    """A catalog that applies updates itself (the REST catalog's ``CommitTableRequest``).

    It receives the requirements and updates, not a metadata file: the server checks the
    requirements and applies the updates atomically. A requirement it finds broken is a
    retryable :class:`CommitConflict` (the loop here loads the table and checks them
    again); an answer lost after sending is :class:`CommitStateUnknown`.
    """

    def commit_table(
        self,
        fresh: TableData,
        requirements: Sequence[Requirement],
        updates: Sequence[MetadataUpdate],
    ) -> TableData:
        """Commit ``updates`` to the table ``fresh`` is the latest known version of."""
        ...


# Retry settings --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a lost swap is retried (``commit.retry.*`` properties)."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> RetryPolicy:
        """The policy a table's properties ask for (defaults as Iceberg Java's)."""
        values: dict[str, int] = {}
        for field in dataclasses.fields(cls):
            key = "commit.retry." + field.name.replace("_", "-")
            raw = properties.get(key)
            if raw is None:
                continue
            try:
                values[field.name] = max(0, int(raw))
            except ValueError as e:
                raise ValidationError(f"Table property {key}={raw!r} must be an integer.") from e
        return cls(**values)

    def wait_ms(self, attempt: int) -> float:
        """The pause before retry ``attempt`` (1-based): doubling, capped, 10% jitter."""
        base = min(self.min_wait_ms * (2 ** (attempt - 1)), self.max_wait_ms)
        return float(base) * (1.0 + random.random() / 10.0)


# Live files per partition spec -----------------------------------------------------------


def live_spec_ids(table: TableData) -> frozenset[int]:
    """Ids of the partition specs that files live in any branch or tag were written with.

    Reads only manifest lists: a manifest with added or existing files (or unknown counts,
    as v1 writers may leave them) keeps its spec alive.
    """
    md = table.metadata
    snapshot_ids = {ref.snapshot_id for ref in md.refs.values()}
    if md.current_snapshot_id is not None:
        snapshot_ids.add(md.current_snapshot_id)
    live: set[int] = set()
    for snapshot_id in sorted(snapshot_ids):
        snapshot = md.snapshot_by_id(snapshot_id)
        if snapshot is None:
            continue
        for manifest in table.manifests(snapshot):
            if manifest.content in (ManifestContent.DATA, ManifestContent.DELETES) and (
                manifest.has_added_files() or manifest.has_existing_files()
            ):
                live.add(manifest.partition_spec_id)
    return frozenset(live)


# The commit loop --------------------------------------------------------------------------


def _same_file(a: str, b: str) -> bool:
    return normalize_path(a) == normalize_path(b)


def commit_updates(
    table: TableData,
    updates: Sequence[MetadataUpdate],
    requirements: Sequence[Requirement],
) -> TableData:
    """Commit ``updates`` to the table ``table`` was loaded from; returns the new version.

    ``table`` is the version the updates were computed from: the table is loaded again
    through its catalog before each attempt, and ``requirements`` are checked against that.

    Raises:
        Unsupported: the table was not loaded through a catalog that can commit.
        ValidationError: the updates break a rule of the spec, or this process is read-only
            (:func:`icecore.config.read_only`); nothing was written.
        CommitConflict: another writer changed what the updates depend on, or retries ran
            out; nothing of this commit is in the table.
        CommitStateUnknown: the swap's outcome could not be learnt; the written file is kept.
    """
    if table.catalog is None:
        raise Unsupported(
            f"Table {table.identifier} was opened without a catalog to commit through; open "
            "it as CATALOG::ns.table or by its table folder to change it."
        )
    if read_only():
        # Every commit of evolution and ref operations passes here: a read-only deployment
        # refuses them for every catalog kind, not only those opened read-only (SQLite, REST).
        raise ValidationError(
            f"Cannot commit to {table.identifier}: Icecore runs read-only (ICECORE_READ_ONLY "
            "or read_only in icecore.toml); nothing was written."
        )
    policy: RetryPolicy | None = None
    started = time.monotonic()
    attempt = 0
    while True:
        fresh = table.refresh()
        if policy is None:
            policy = RetryPolicy.from_properties(fresh.metadata.properties)
        try:
            result = _attempt(table, fresh, updates, requirements)
        except CommitConflict as e:
            if not e.retryable:
                raise
            result, lost = None, str(e)
        else:
            lost = "a swap whose outcome was unknown had not happened"
        if result is not None:
            return result
        attempt += 1
        elapsed_ms = (time.monotonic() - started) * 1000.0
        if attempt > policy.num_retries or elapsed_ms >= policy.total_timeout_ms:
            raise CommitConflict(
                f"Cannot commit to {table.identifier}: the swap was lost {attempt} time(s), "
                f"last because {lost}; retries ran out (commit.retry.num-retries="
                f"{policy.num_retries}); nothing of this change is in the table."
            )
        time.sleep(policy.wait_ms(attempt) / 1000.0)


def _refused(message: str) -> CommitConflict:
    """A conflict that retrying the same updates cannot fix (a requirement no longer holds)."""
    conflict = CommitConflict(message)
    conflict.retryable = False
    return conflict


def _attempt(
    base: TableData,
    fresh: TableData,
    updates: Sequence[MetadataUpdate],
    requirements: Sequence[Requirement],
) -> TableData | None:
    """One try: the committed table, or None when the swap was lost and may be retried."""
    failed = violations(requirements, fresh.metadata, lambda: live_spec_ids(fresh))
    if failed:
        raise _refused(
            f"Cannot commit to {base.identifier}: {'; '.join(failed)}, because another writer "
            f"committed {what_changed(base.metadata, fresh.metadata)}; reload the table and "
            "make the change again."
        )
    try:
        builder = MetadataBuilder(fresh.metadata).apply_all(updates)
        if not builder.changes:
            return fresh
        new = builder.build(previous_location=fresh.metadata_location)
    except ValidationError as e:
        if _same_file(fresh.metadata_location, base.metadata_location):
            raise
        raise _refused(
            f"Cannot commit to {base.identifier} after another writer's change "
            f"({what_changed(base.metadata, fresh.metadata)}): {e}"
        ) from e
    catalog = fresh.catalog
    assert catalog is not None
    if isinstance(catalog, UpdateCommitter):
        # The server applies the updates; the local build above only validated them.
        try:
            return catalog.commit_table(fresh, requirements, updates)
        except CommitStateUnknown as e:
            return _resolve_unknown(base, e)
    payload = encode_metadata(new)
    try:
        location = catalog.commit_metadata(fresh.identifier, fresh.metadata_location, new, payload)
    except CommitStateUnknown as e:
        return _resolve_unknown(base, e)
    return dataclasses.replace(fresh, metadata=new, metadata_location=location)


def _resolve_unknown(
    table: TableData, error: CommitStateUnknown, tries: int = 3
) -> TableData | None:
    """After an unknown outcome: the table with the commit in it, or None if it did not land.

    The commit landed if the file it wrote is current or in the ``metadata-log`` of the
    current version; it did not if the table can be loaded and neither holds.

    Raises:
        CommitStateUnknown: the table could not be loaded to find out.
    """
    location = error.metadata_location
    if location is None:
        raise error
    last: Exception | None = None
    for attempt in range(tries):
        try:
            failpoint("resolve-load")
            fresh = table.refresh()
        except (IcecoreError, OSError) as e:
            last = e
            time.sleep(0.05 * (attempt + 1))
            continue
        if _same_file(fresh.metadata_location, location) or any(
            _same_file(entry.metadata_file, location) for entry in fresh.metadata.metadata_log
        ):
            return fresh
        return None
    raise CommitStateUnknown(
        f"{error} Loading {table.identifier} again to check failed as well ({last}); the new "
        f"metadata file {location} is kept: load the table later to see whether it is current.",
        location,
    ) from error


__all__ = ["RetryPolicy", "UpdateCommitter", "commit_updates", "live_spec_ids"]
