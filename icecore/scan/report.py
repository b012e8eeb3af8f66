"""The pruning report: what a scan planned, what it skipped at each level, and why.

docs/ARCHITECTURE.md "Rules of the house": pruning is explainable. The planner fills a
:class:`ReportBuilder` as it goes; the frozen :class:`PlanReport` keeps counts per level
(always) and the individual pruned items (manifest or file path + reason). Files inside a
pruned manifest are counted from the manifest list's file counts, not read.

At a million files the items are not kept: files pruned in bulk are recorded as segments
that produce their items, reasons included, when someone reads them
(:class:`~icecore.scan.lazy.LazySequence`), so the report stays small (docs/ARCHITECTURE.md
"Performance").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from icecore.scan.lazy import LazySequence, Producer


class PruneLevel(StrEnum):
    """Where something was pruned (spec "Scan Planning", in planning order)."""

    MANIFEST = "manifest"
    """A manifest skipped by its partition field summaries."""
    PARTITION = "partition"
    """A data file skipped by its partition values."""
    METRICS = "metrics"
    """A data file skipped by its column metrics (counts and bounds)."""
    DELETE_MANIFEST = "delete_manifest"
    """A delete manifest skipped by its partition field summaries."""
    DELETE_PARTITION = "delete_partition"
    """A delete file skipped by its partition values."""
    DELETE_METRICS = "delete_metrics"
    """A delete file skipped by its column metrics (as Iceberg Java's DeleteFileIndex does)."""


@dataclass(frozen=True, slots=True)
class PrunedItem:
    """One pruned manifest or file, and the reason in a sentence."""

    level: PruneLevel
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class PlanReport:
    """Counts per level and every pruned item with its reason.

    Attributes:
        snapshot_id: the planned snapshot (None for an empty table).
        filter: the filter as bound (``true`` without one).
        data_manifests, data_manifests_pruned: data manifests in the snapshot / skipped.
        delete_manifests, delete_manifests_pruned: the same for delete manifests.
        data_files: live data files in the snapshot (from manifest counts when pruned).
        files_pruned_by_manifest, files_pruned_by_partition, files_pruned_by_metrics: live
            data files skipped at each level.
        data_files_planned: data files in the plan.
        rows: live rows in the snapshot's data files, before deletes (record counts).
        rows_planned: rows in planned data files, before deletes and the residual filter.
        delete_files: live delete files in surviving delete manifests.
        delete_files_applied: distinct delete files attached to at least one task.
        pruned: every pruned item, in planning order (made on demand: use slices and
            ``len`` on big plans).
        pruning_filter: the filter manifests and files were pruned by, as bound: what Spark
            pushes to Iceberg for ``filter`` (the ``IS NOT NULL`` it infers included). It
            differs from ``filter`` where Spark keeps a condition to itself: ``s LIKE 'ab_%'``
            prunes only by ``s IS NOT NULL``, and its rows are decided when read.
    """

    snapshot_id: int | None
    filter: str
    data_manifests: int = 0
    data_manifests_pruned: int = 0
    delete_manifests: int = 0
    delete_manifests_pruned: int = 0
    data_files: int = 0
    files_pruned_by_manifest: int = 0
    files_pruned_by_partition: int = 0
    files_pruned_by_metrics: int = 0
    data_files_planned: int = 0
    rows: int = 0
    rows_planned: int = 0
    delete_files: int = 0
    delete_files_applied: int = 0
    pruned: Sequence[PrunedItem] = ()
    pruning_filter: str = ""

    def reasons(self, level: PruneLevel | None = None) -> Counter[str]:
        """How often each reason occurs (at one level, or at all); explains every item."""
        return Counter(p.reason for p in self.pruned if level is None or p.level is level)

    def to_dict(self, *, max_items: int | None = 1000) -> dict[str, Any]:
        """JSON-ready form: counts per level and (up to ``max_items``) pruned items."""
        items = self.pruned if max_items is None else self.pruned[:max_items]
        return {
            "snapshot_id": self.snapshot_id,
            "filter": self.filter,
            "manifests": {
                "data": self.data_manifests,
                "data_pruned": self.data_manifests_pruned,
                "delete": self.delete_manifests,
                "delete_pruned": self.delete_manifests_pruned,
            },
            "data_files": {
                "total": self.data_files,
                "pruned_by_manifest": self.files_pruned_by_manifest,
                "pruned_by_partition": self.files_pruned_by_partition,
                "pruned_by_metrics": self.files_pruned_by_metrics,
                "planned": self.data_files_planned,
            },
            "rows": {"total": self.rows, "in_planned_files": self.rows_planned},
            "delete_files": {"live": self.delete_files, "applied": self.delete_files_applied},
            "pruned": [{"level": str(p.level), "path": p.path, "reason": p.reason} for p in items],
            "pruned_items_total": len(self.pruned),
        }


@dataclass(slots=True)
class ReportBuilder:
    """Mutable counters the planner fills; :meth:`build` freezes them."""

    snapshot_id: int | None
    filter: str
    counts: Counter[str] = field(default_factory=Counter)
    pruned: list[PrunedItem] = field(default_factory=list)
    segments: list[tuple[int, Producer[PrunedItem]]] = field(default_factory=list)
    pruning_filter: str = ""

    def prune(self, level: PruneLevel, path: str, reason: str) -> None:
        """Record one pruned manifest or file."""
        self.pruned.append(PrunedItem(level, path, reason))

    def prune_many(self, count: int, produce: Producer[PrunedItem]) -> None:
        """Record ``count`` pruned items that ``produce(start, stop)`` makes when read."""
        self._flush()
        self.segments.append((count, produce))

    def _flush(self) -> None:
        if self.pruned:
            items = tuple(self.pruned)
            self.segments.append((len(items), lambda lo, hi: items[lo:hi]))
            self.pruned = []

    def build(self) -> PlanReport:
        """The frozen report."""
        self._flush()
        c = self.counts
        return PlanReport(
            snapshot_id=self.snapshot_id,
            filter=self.filter,
            data_manifests=c["data_manifests"],
            data_manifests_pruned=c["data_manifests_pruned"],
            delete_manifests=c["delete_manifests"],
            delete_manifests_pruned=c["delete_manifests_pruned"],
            data_files=c["data_files"],
            files_pruned_by_manifest=c["files_pruned_by_manifest"],
            files_pruned_by_partition=c["files_pruned_by_partition"],
            files_pruned_by_metrics=c["files_pruned_by_metrics"],
            data_files_planned=c["data_files_planned"],
            rows=c["rows"],
            rows_planned=c["rows_planned"],
            delete_files=c["delete_files"],
            delete_files_applied=c["delete_files_applied"],
            pruned=LazySequence(list(self.segments)),
            pruning_filter=self.pruning_filter,
        )
