"""A table as a user holds it: :class:`~icecore.table_data.TableData` and every feature's door.

``Table`` adds no state to ``TableData``; it is where the feature entry points users know
(``scan``, ``inspect``, ``diff``, ``changelog``, ``update_schema``, ...) meet, so it sits above
the features, and the features take the plain ``TableData`` below them (docs/ARCHITECTURE.md).
``refresh()`` returns a new ``Table`` for whatever the catalog now says is current, and so
does every commit (``update_schema()``, ``update_spec()``, ``update_sort_order()``,
``set_properties()``, ``remove_properties()``, ``transaction()``; see :mod:`icecore.evolution`;
``manage_snapshots()``, see :mod:`icecore.refs`).

Each feature is imported by the method that opens it, not by this module: loading a table
(``import icecore``, the CLI's metadata commands) must not load the planner, the readers, or
pyarrow and numpy under them (issue 32 item 4; PERFORMANCE.md "Targets": ``import icecore``
under 0.3 s and 90 MiB). The imports cost nothing after the first call.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from icecore.errors import NotFound
from icecore.identifier import TableIdentifier
from icecore.io import FileIO
from icecore.point_in_time import Point, point_of
from icecore.table_data import TableData, TableSource, read_table_metadata

if TYPE_CHECKING:
    import pyarrow as pa

    from icecore.diff import SnapshotDiff
    from icecore.evolution import Transaction, UpdateSchema, UpdateSortOrder, UpdateSpec
    from icecore.expressions.model import Expression
    from icecore.inspect.accessor import MetadataTables
    from icecore.refs.manage import ManageSnapshots
    from icecore.scan.context import PlanContext
    from icecore.scan.planner import TableScan

__all__ = ["Table", "load_table_at"]


class Table(TableData):
    """One version of an Iceberg table, with every feature a user reaches from it.

    Its fields are :class:`TableData`'s; catalogs and :func:`load_table_at` return it, and a
    commit's result (a ``dataclasses.replace`` of a refreshed ``Table``) keeps the class.
    """

    __slots__ = ()

    def refresh(self) -> Table:
        """The table as its catalog has it now (itself when it has no catalog)."""
        return cast(Table, TableData.refresh(self))

    @property
    def inspect(self) -> MetadataTables:
        """The metadata tables as Arrow, with Spark's columns (see :mod:`icecore.inspect`).

        Call it with a kind, ``t.inspect("files", ref="audit")``, or use the kind's method,
        ``t.inspect.files(ref="audit")`` (PyIceberg's names); both give the same table.
        """
        from icecore.inspect.accessor import MetadataTables

        return MetadataTables(self)

    def diff(
        self, from_point: str | int | Point | None, to_point: str | int | Point | None = None
    ) -> SnapshotDiff:
        """What changed between two points (ids, refs, ISO times or ``At``; None = current).

        ``from_point`` None compares against an empty table.
        """
        from icecore.diff import diff_snapshots

        before = self.point(from_point) if from_point is not None else None
        after = self.point(to_point) if to_point is not None else self.snapshot()
        if after is None:
            raise NotFound(f"Table {self.identifier} has no snapshot to compare.")
        return diff_snapshots(self, before, after)

    def changelog(
        self,
        from_point: str | int | Point | None,
        to_point: str | int | Point | None = None,
        *,
        identifier_columns: list[str] | None = None,
        compute_updates: bool | None = None,
        net_changes: bool = False,
        columns: list[str] | None = None,
    ) -> pa.Table:
        """Rows inserted and deleted between two points, as Spark's create_changelog_view.

        See :func:`icecore.changelog.changelog`; ``from_point`` is exclusive (None: from the
        first snapshot), ``to_point`` inclusive (None: the current snapshot).
        """
        from icecore.changelog import changelog

        return changelog(
            self,
            from_point,
            to_point,
            identifier_columns=identifier_columns,
            compute_updates=compute_updates,
            net_changes=net_changes,
            columns=columns,
        )

    def scan(
        self,
        filter: str | Expression | None = None,
        *,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of: str | int | dt.datetime | None = None,
        at: Point | None = None,
        case_sensitive: bool = False,
        context: PlanContext | None = None,
        column_stats: bool = False,
    ) -> TableScan:
        """A filtered read of one snapshot; ``.plan()`` plans it (spec "Scan Planning").

        The point is ``at`` (:class:`icecore.point_in_time.At`, or a point :meth:`resolve` gave) or
        one of the others, not both. ``context`` holds the caches plans share (default: the
        process's own). ``column_stats``: the caller will read every task's metrics maps, so
        the plan decodes them even when it needs none itself (see :class:`TableScan`).
        """
        from icecore.scan.planner import TableScan

        at = point_of(at, snapshot_id=snapshot_id, ref=ref, as_of=as_of)
        return TableScan(
            self,
            filter,
            at=at,
            case_sensitive=case_sensitive,
            context=context,
            column_stats=column_stats,
        )

    # Evolution (spec "Schema Evolution", "Partition Evolution"; icecore.evolution) ---------

    def update_schema(self, *, case_sensitive: bool = True) -> UpdateSchema:
        """A schema change that commits on ``commit()`` or on leaving its ``with`` block.

        ``preview()`` instead returns the new metadata and a readable diff, writing nothing.
        """
        from icecore.evolution import transaction_of

        return transaction_of(self).update_schema(case_sensitive=case_sensitive)

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """A partition spec change (new data only), committed like :meth:`update_schema`."""
        from icecore.evolution import transaction_of

        return transaction_of(self).update_spec(case_sensitive=case_sensitive)

    def update_sort_order(self, *, case_sensitive: bool = True) -> UpdateSortOrder:
        """A new default sort order, committed like :meth:`update_schema`."""
        from icecore.evolution import transaction_of

        return transaction_of(self).update_sort_order(case_sensitive=case_sensitive)

    def set_properties(self, properties: Mapping[str, str] | None = None, /, **more: str) -> Table:
        """Set table properties now; returns the committed table."""
        from icecore.evolution import transaction_of

        transaction = transaction_of(self).set_properties(properties, **more)
        return self._committed(transaction)

    def remove_properties(self, *keys: str) -> Table:
        """Remove table properties now; returns the committed table."""
        from icecore.evolution import transaction_of

        return self._committed(transaction_of(self).remove_properties(*keys))

    def manage_snapshots(self) -> ManageSnapshots:
        """Guarded ref operations (rollback, branches, tags, cherry-pick, WAP) as one commit.

        Commits on ``commit()`` or on leaving its ``with`` block; ``preview()`` writes nothing
        (see :mod:`icecore.refs.manage`).
        """
        from icecore.refs.manage import ManageSnapshots

        return ManageSnapshots(self)

    def transaction(self) -> Transaction:
        """Several changes committed as one metadata version (``commit()`` or ``with``)."""
        from icecore.evolution import Transaction

        return Transaction(self)

    def _committed(self, transaction: Transaction) -> Table:
        # A commit's result is a replace() of this Table refreshed through its catalog, whose
        # load_table returns a Table: the class survives, only the type checker cannot see it.
        return self if transaction.result is None else cast(Table, transaction.result)


def load_table_at(
    identifier: TableIdentifier,
    metadata_location: str,
    io: FileIO,
    catalog: TableSource | None = None,
) -> Table:
    """Build a :class:`Table` by reading the metadata file at ``metadata_location``."""
    return Table(
        identifier, read_table_metadata(io, metadata_location), metadata_location, io, catalog
    )
