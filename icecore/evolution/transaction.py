"""Transactions: several changes staged on one base and committed as one metadata version.

Each evolution builder (:class:`~icecore.evolution.schema.UpdateSchema`, ``UpdateSpec``,
``UpdateSortOrder``, ``UpdateProperties``) computes ``(updates, requirements)`` against the
transaction's metadata, as iceberg-rust's and PyIceberg's actions do. Staging applies the
updates to that metadata right away, so a change that breaks a rule fails when it is made,
not at commit; the next builder then sees the result (a spec can use a column added by an
earlier schema change in the same transaction). Requirements keep the first of each kind:
they describe the base the whole transaction was computed from.

A builder made from a :class:`~icecore.table.Table` commits on its own (a transaction of
one); made from a :class:`Transaction`, it stages into it. Both are context managers that
commit (or stage) on a clean exit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from icecore.errors import ValidationError
from icecore.evolution.base import CommitsOnExit, Plan
from icecore.evolution.commit import commit_updates
from icecore.evolution.preview import Preview, preview_updates
from icecore.evolution.properties import UpdateProperties
from icecore.evolution.schema import UpdateSchema
from icecore.evolution.sort import UpdateSortOrder
from icecore.evolution.spec import UpdateSpec
from icecore.metadata import TableMetadata
from icecore.metadata.builder import MetadataBuilder
from icecore.metadata.requirements import Requirement, merge_requirements
from icecore.metadata.updates import MetadataUpdate

if TYPE_CHECKING:
    from icecore.table_data import TableData


class Transaction(CommitsOnExit):
    """Changes staged against one version of a table, committed together.

    Args:
        table: the version the changes are computed from.
        autocommit: commit as soon as one builder stages (a builder made from a Table).
    """

    def __init__(self, table: TableData, *, autocommit: bool = False) -> None:
        self.table = table
        self.autocommit = autocommit
        self.metadata: TableMetadata = table.metadata
        self.updates: tuple[MetadataUpdate, ...] = ()
        self.requirements: tuple[Requirement, ...] = ()
        self.result: TableData | None = None

    # Builders ------------------------------------------------------------------------------

    def update_schema(self, *, case_sensitive: bool = True) -> UpdateSchema:
        """A schema change staged into this transaction."""
        return UpdateSchema(self, case_sensitive=case_sensitive)

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """A partition spec change staged into this transaction."""
        return UpdateSpec(self, case_sensitive=case_sensitive)

    def update_sort_order(self, *, case_sensitive: bool = True) -> UpdateSortOrder:
        """A new default sort order staged into this transaction."""
        return UpdateSortOrder(self, case_sensitive=case_sensitive)

    def update_properties(self) -> UpdateProperties:
        """Property changes staged into this transaction."""
        return UpdateProperties(self)

    def set_properties(
        self, properties: Mapping[str, str] | None = None, /, **more: str
    ) -> Transaction:
        """Stage setting table properties (reserved ones are refused)."""
        UpdateProperties(self).set_properties(properties, **more).commit()
        return self

    def remove_properties(self, *keys: str) -> Transaction:
        """Stage removing table properties (absent keys are ignored)."""
        UpdateProperties(self).remove(*keys).commit()
        return self

    # Staging and committing --------------------------------------------------------------

    def stage(
        self, updates: tuple[MetadataUpdate, ...], requirements: tuple[Requirement, ...]
    ) -> None:
        """Apply ``updates`` to the transaction's metadata and keep them for the commit.

        Raises:
            ValidationError: an update breaks a rule of the spec; nothing is staged.
        """
        if self.result is not None:
            raise ValidationError("This transaction was committed; start a new one.")
        builder = MetadataBuilder(self.metadata).apply_all(updates)
        if not builder.changes:
            return
        self.metadata = builder.build(previous_location=None, now_ms=self.metadata.last_updated_ms)
        self.updates += updates
        self.requirements = merge_requirements(self.requirements, requirements)

    def preview(self, plan: Plan | None = None) -> Preview:
        """What committing would write (with ``plan`` staged too); writes nothing."""
        updates, requirements = self.updates, self.requirements
        if plan is not None:
            updates += plan[0]
            requirements = merge_requirements(requirements, plan[1])
        return preview_updates(self.table, updates, requirements)

    def commit(self) -> TableData:
        """Commit every staged change as one new metadata version; returns the new table.

        Raises:
            ValidationError, CommitConflict, CommitStateUnknown: see
                :func:`icecore.evolution.commit.commit_updates`.
        """
        if self.result is not None:
            return self.result
        if not self.updates:
            self.result = self.table
            return self.table
        self.result = commit_updates(self.table, self.updates, self.requirements)
        return self.result

    def __enter__(self) -> Transaction:
        return self


def transaction_of(table: TableData) -> Transaction:
    """A transaction of one change that commits when its builder does."""
    return Transaction(table, autocommit=True)


__all__ = ["Transaction", "transaction_of"]
