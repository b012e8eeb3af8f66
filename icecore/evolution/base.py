"""The shape every evolution builder shares: compute a plan, preview it, stage or commit it.

A builder computes ``(updates, requirements)`` against the metadata of the transaction it
belongs to (:mod:`icecore.evolution.transaction`): the updates are tagged values of
:mod:`icecore.metadata.updates`, the requirements those of
:mod:`icecore.metadata.requirements` ("Commit Conflict Resolution and Retry").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from icecore.evolution.preview import Preview
from icecore.metadata import TableMetadata
from icecore.metadata.requirements import Requirement
from icecore.metadata.updates import MetadataUpdate

if TYPE_CHECKING:
    from icecore.table_data import TableData

Plan = tuple[tuple[MetadataUpdate, ...], tuple[Requirement, ...]]
"""What a builder computes: the updates to apply and what must hold to apply them."""

_U = TypeVar("_U", bound="PendingUpdate")


class Stage(Protocol):
    """Where a builder's plan goes: a transaction (see :mod:`icecore.evolution.transaction`)."""

    table: TableData
    metadata: TableMetadata
    autocommit: bool

    def stage(
        self, updates: tuple[MetadataUpdate, ...], requirements: tuple[Requirement, ...]
    ) -> None:
        """Apply and keep the plan."""
        ...

    def preview(self, plan: Plan | None = None) -> Preview:
        """What committing would write."""
        ...

    def commit(self) -> TableData:
        """Commit what was staged."""
        ...


class CommitsOnExit:
    """A context manager that commits on a clean exit and does nothing after an error."""

    def commit(self) -> Any:
        """Commit (or stage) what was built."""
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()


class PendingUpdate(CommitsOnExit, ABC):
    """A change being built; :meth:`commit` stages it (and commits a transaction of one).

    Attributes:
        result: the committed table, once a builder made from a Table has committed.
    """

    def __init__(self, transaction: Stage) -> None:
        self._transaction = transaction
        self._base: TableMetadata = transaction.metadata
        self._done = False
        self.result: TableData | None = None

    @abstractmethod
    def plan(self) -> Plan:
        """The updates and requirements this change amounts to against its base.

        Raises:
            ValidationError: the change breaks a rule.
        """

    def preview(self) -> Preview:
        """The metadata this change would commit and a readable diff; writes nothing."""
        return self._transaction.preview(self.plan())

    def commit(self) -> TableData | None:
        """Stage the change; returns the new table when made from a Table.

        In a transaction it returns None: the transaction commits later.

        Raises:
            ValidationError, CommitConflict, CommitStateUnknown: see
                :func:`icecore.evolution.commit.commit_updates`.
        """
        if self._done:
            return self.result
        self._transaction.stage(*self.plan())
        self._done = True
        if self._transaction.autocommit:
            self.result = self._transaction.commit()
        return self.result

    def __enter__(self: _U) -> _U:
        return self


__all__ = ["CommitsOnExit", "PendingUpdate", "Plan", "Stage"]
