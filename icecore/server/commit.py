"""``POST .../tables/{table}``: a REST ``CommitTableRequest`` checked and applied atomically.

Each attempt loads the table's current metadata from the backing catalog, checks every
requirement against it, applies the updates in order and swaps the catalog's pointer from
exactly the metadata it loaded (the backing catalog's compare-and-swap). A lost swap means
another writer got in between: the attempt is repeated on the new state, where the
requirements are checked again, so an update is only ever applied where its requirements
hold (as Iceberg Java's ``CatalogHandlers.commit``); once the attempts run out, or a
requirement fails, the answer is 409 ``CommitFailedException`` and nothing was applied.

The JSON is read once by :mod:`icecore.metadata.updates_json` (the module the client writes
with) and every update, whatever its action, is applied by
:class:`icecore.metadata.builder.MetadataBuilder`, Icecore's one dispatcher and its spec
checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from icecore.catalog.base import Catalog, TableIdentifier
from icecore.errors import CommitConflict, InvalidMetadata
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder, encode_metadata
from icecore.metadata.requirements import Requirement, violations
from icecore.metadata.updates import (
    AddSchema,
    AddSnapshot,
    MetadataUpdate,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetStatistics,
)
from icecore.metadata.updates_json import (
    requirement_from_json,
    requirements_from_json,
    updates_from_json,
)
from icecore.server.errors import RestError, bad_request, plain_text

COMMIT_ATTEMPTS = 4
"""Attempts on lost swaps before answering 409 (Iceberg Java's server retries too)."""


def parse_requirement(obj: Any) -> Requirement:
    """One ``TableRequirement`` of the spec; 400 for an unknown or malformed one."""
    try:
        return requirement_from_json(obj)
    except InvalidMetadata as e:
        raise bad_request(str(e)) from e


def requirement_failures(requirements: Sequence[Requirement], md: TableMetadata) -> list[str]:
    """Why each requirement fails against ``md`` (empty when all hold)."""
    return violations(requirements, md, lambda: frozenset())


Guard = Callable[[TableMetadata, TableMetadata], None]
"""A check of new metadata against its base that raises ``RestError`` to refuse it
(:meth:`icecore.server.locations.ServedLocations.require_metadata`)."""


def apply_rest_updates(
    base: TableMetadata,
    updates: Sequence[MetadataUpdate],
    previous_location: str | None,
    guard: Guard | None = None,
) -> TableMetadata:
    """``base`` with every update applied in order, checked by the spec's rules and ``guard``.

    An ``add-schema``'s ``last-column-id`` (deprecated in the spec's ``AddSchemaUpdate``) never
    lowers the table's: the largest of it, the table's and the schema's highest field id is
    kept, as Iceberg Java's server does
    (``MetadataUpdate.AddSchema.applyTo`` calls ``TableMetadata.Builder.addSchema(schema)``,
    which keeps ``max(lastColumnId, schema.highestFieldId())``). Java clients send the new
    schema's highest field id there, so dropping the newest column (Spark's ``ALTER TABLE ...
    DROP COLUMN``, a ``REPLACE TABLE`` with fewer columns) would otherwise be refused.
    """
    builder = MetadataBuilder(base)
    for update in updates:
        if isinstance(update, AddSchema) and update.last_column_id is not None:
            kept = max(
                update.last_column_id, builder.last_column_id, update.schema.highest_field_id
            )
            update = dataclasses.replace(update, last_column_id=kept)
        builder.apply(update)
    new = builder.build(previous_location)
    if guard is not None:
        guard(new, base)
    return new


def parse_commit(body: Any) -> tuple[list[Requirement], list[MetadataUpdate]]:
    """The requirements and updates of a ``CommitTableRequest``; 400 if malformed."""
    if not isinstance(body, Mapping):
        raise bad_request("The commit request must be a JSON object.")
    try:
        requirements = requirements_from_json(body.get("requirements", []))
        updates = updates_from_json(body.get("updates", []))
    except InvalidMetadata as e:
        raise bad_request(str(e)) from e
    for update in updates:
        for path, what in paths_named(update):
            plain_text(path, what)
    return requirements, updates


PATH_PROPERTIES = frozenset(
    {
        "write.data.path",
        "write.metadata.path",
        "write.folder-storage.path",
        "write.object-storage.path",
    }
)
"""Table properties whose value is a storage location the server may write to."""


def paths_named(update: MetadataUpdate) -> list[tuple[str, str]]:
    """Every storage location an update names, with what names it (for error messages)."""
    match update:
        case SetLocation(location=location):
            return [(location, "set-location's location")]
        case AddSnapshot(snapshot=snapshot) if snapshot.manifest_list is not None:
            return [(snapshot.manifest_list, "add-snapshot's manifest-list")]
        case SetStatistics(statistics=stats):
            return [(stats.statistics_path, "set-statistics' statistics-path")]
        case SetPartitionStatistics(partition_statistics=stats):
            return [(stats.statistics_path, "set-partition-statistics' statistics-path")]
        case SetProperties(updates=props):
            return [(v, f"property {k!r}") for k, v in props.items() if k in PATH_PROPERTIES]
    return []


def commit_table(
    catalog: Catalog,
    identifier: TableIdentifier,
    requirements: Sequence[Requirement],
    updates: Sequence[MetadataUpdate],
    guard: Guard | None = None,
) -> tuple[str, TableMetadata]:
    """Check and apply a commit against the backing catalog; returns the new location and metadata.

    ``guard`` sees the new metadata and its base before anything is written.

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
            new = apply_rest_updates(base, updates, base_location, guard)
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


@dataclass(frozen=True, slots=True)
class TableChange:
    """One table's part of a ``CommitTransactionRequest``."""

    identifier: TableIdentifier
    requirements: list[Requirement]
    updates: list[MetadataUpdate]


class AtomicCatalog(Protocol):
    """A catalog that can swap several tables' metadata in one transaction."""

    def commit_metadata_all(
        self, commits: Sequence[tuple[TableIdentifier, str, TableMetadata, bytes]]
    ) -> list[str]:
        """Every swap, or none (see :meth:`icecore.catalog.sql.SqlCatalog.commit_metadata_all`)."""
        ...


def supports_transactions(catalog: Catalog) -> bool:
    """Whether ``catalog`` can commit several tables atomically (the SQL catalogs)."""
    return callable(getattr(catalog, "commit_metadata_all", None))


SwapAll = Callable[[Sequence[tuple[TableIdentifier, str, TableMetadata, bytes]]], list[str]]
"""Every swap of a transaction at once, or none (:meth:`AtomicCatalog.commit_metadata_all`)."""


def require_transactions(catalog: Catalog) -> None:
    """Refuse with 406 unless ``catalog`` commits several tables atomically."""
    if not supports_transactions(catalog):
        raise RestError(
            406,
            "UnsupportedOperationException",
            "This catalog cannot commit several tables atomically; commit each table alone.",
        )


def commit_transaction(
    catalog: Catalog,
    changes: Sequence[TableChange],
    guard: Guard | None = None,
    *,
    swap_all: SwapAll | None = None,
) -> None:
    """Check and apply every table's changes, then swap them all at once, or none.

    Each attempt loads every table, checks every requirement (409 on the first that fails:
    nothing is written), applies the updates and hands all swaps to the catalog's one
    transaction; a lost swap repeats the whole attempt on the new state. ``guard`` sees
    each table's new metadata and its base before anything is written. ``swap_all`` makes
    the swaps instead of ``catalog.commit_metadata_all`` (the REST server's
    :func:`icecore.catalog.guarded.commit_all`, which checks and audits each table; the
    caller has checked the backing catalog with :func:`require_transactions`).

    Raises:
        RestError: 406 if the catalog cannot commit atomically, 409 on a failed requirement
            or when every attempt lost a swap.
        IcecoreError: the catalog refused (NotFound, CommitStateUnknown, ...).
    """
    if swap_all is None:
        require_transactions(catalog)
        atomic: AtomicCatalog = catalog  # type: ignore[assignment]
        swap_all = atomic.commit_metadata_all
    last_conflict = ""
    for _ in range(COMMIT_ATTEMPTS):
        commits: list[tuple[TableIdentifier, str, TableMetadata, bytes]] = []
        for change in changes:
            table = catalog.load_table(change.identifier)
            base, base_location = table.metadata, table.metadata_location
            failed = requirement_failures(change.requirements, base)
            if failed:
                raise RestError(
                    409,
                    "CommitFailedException",
                    f"Transaction failed: {change.identifier}: requirement not met: "
                    f"{failed[0]}; no table was changed.",
                )
            try:
                new = apply_rest_updates(base, change.updates, base_location, guard)
                payload = encode_metadata(new)
            except InvalidMetadata as e:
                raise bad_request(f"The change to {change.identifier} is invalid: {e}") from e
            commits.append((change.identifier, base_location, new, payload))
        try:
            swap_all(commits)
        except CommitConflict as e:
            last_conflict = str(e)
            continue
        return
    raise RestError(
        409,
        "CommitFailedException",
        f"Transaction failed: other writers kept committing ({last_conflict}); no table was "
        "changed.",
    )


__all__ = [
    "AtomicCatalog",
    "TableChange",
    "apply_rest_updates",
    "commit_table",
    "commit_transaction",
    "parse_commit",
    "parse_requirement",
    "paths_named",
    "require_transactions",
    "requirement_failures",
    "supports_transactions",
]
