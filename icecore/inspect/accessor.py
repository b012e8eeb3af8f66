"""``t.inspect``: a table's metadata tables, by name or by one typed method per kind.

``t.inspect("files")`` is the contract the CLI, the app and scripts use; PyIceberg's users
know ``tbl.inspect.files()``. :class:`MetadataTables` is both: callable with a kind, and one
method per kind of :data:`icecore.inspect.kinds.METADATA_TABLES` (a test checks the methods
against the registry), each taking the same snapshot selectors as the string form and
passing them through unchanged, so a change of the selectors is made in one place
(:class:`SnapshotSelectors` and :func:`icecore.inspect.inspect_table`).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, TypedDict, Unpack

from icecore.inspect import inspect_table
from icecore.point_in_time import Point, point_of

if TYPE_CHECKING:
    import pyarrow as pa

    from icecore.table_data import TableData


class SnapshotSelectors(TypedDict, total=False):
    """Which snapshot a metadata table describes (at most one; none: the current one).

    ``at`` (:class:`icecore.point_in_time.At`) names the point as one value, instead of
    the others. Only the snapshot-scoped kinds (``files``, ``manifests``, ``partitions``,
    ...) change with it; the others still check it (an unknown ref fails).
    """

    snapshot_id: int | None
    ref: str | None
    as_of: str | int | dt.datetime | None
    at: Point | None


class MetadataTables:
    """A table's metadata tables as Arrow, with Spark's columns and rows.

    ``t.inspect("files", ref="audit")`` and ``t.inspect.files(ref="audit")`` give the same
    table; see :mod:`icecore.inspect` for what each kind holds.
    """

    __slots__ = ("_table",)

    def __init__(self, table: TableData) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"MetadataTables({self._table.identifier})"

    def __call__(self, kind: str, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The metadata table ``kind`` (Spark's name: ``files``, ``partitions``, ...).

        Raises:
            NotFound: an unknown kind (the sentence lists the valid ones), snapshot, ref or
                time, or a missing manifest file.
            InvalidMetadata: a corrupt or truncated manifest list or manifest.
            ValidationError: more than one selector, or an unreadable time.
        """
        return inspect_table(self._table, kind, at=point_of(**selectors))

    def snapshots(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """Every valid snapshot, one row each."""
        return self("snapshots", **selectors)

    def history(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The snapshot log: when each snapshot became current, and whether it still is."""
        return self("history", **selectors)

    def refs(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """Every branch and tag with its snapshot and retention."""
        return self("refs", **selectors)

    def metadata_log_entries(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """Every metadata file of the table's log, the current one included."""
        return self("metadata_log_entries", **selectors)

    def manifests(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The manifests of one snapshot's manifest list."""
        return self("manifests", **selectors)

    def all_manifests(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The manifests of every valid snapshot, a row per snapshot and manifest."""
        return self("all_manifests", **selectors)

    def entries(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """One snapshot's manifest entries, added, existing and deleted."""
        return self("entries", **selectors)

    def files(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """One snapshot's live data and delete files."""
        return self("files", **selectors)

    def data_files(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """One snapshot's live data files."""
        return self("data_files", **selectors)

    def delete_files(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """One snapshot's live delete files (position, equality, deletion vectors)."""
        return self("delete_files", **selectors)

    def partitions(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """One snapshot's partitions with their file and row counts."""
        return self("partitions", **selectors)

    def all_entries(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The entries of every manifest reachable from a valid snapshot, each manifest once."""
        return self("all_entries", **selectors)

    def all_files(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The live files of every manifest reachable from a valid snapshot."""
        return self("all_files", **selectors)

    def all_data_files(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The live data files of every manifest reachable from a valid snapshot."""
        return self("all_data_files", **selectors)

    def all_delete_files(self, **selectors: Unpack[SnapshotSelectors]) -> pa.Table:
        """The live delete files of every manifest reachable from a valid snapshot."""
        return self("all_delete_files", **selectors)


__all__ = ["MetadataTables", "SnapshotSelectors"]
