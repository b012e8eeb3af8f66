"""Judge one manifest by its partition field summaries: the Arrow filter on a one-row source.

The rules (Iceberg Java 1.10's ``ManifestEvaluator``) live once, in
:mod:`icecore.expressions.arrow_summaries`; this adapter is for callers holding a single
:class:`~icecore.manifest.ManifestFile` (delete manifests, pruning reasons).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from icecore.expressions.arrow_summaries import ArrowSummaryFilter, arrow_summary_filter
from icecore.expressions.model import Expression
from icecore.manifest import ManifestFile, PartitionFieldSummary
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema

T = TypeVar("T")


class ManifestEvaluator(Protocol):
    """A compiled partition filter: call it for the verdict, ``explain`` for the reason."""

    def __call__(self, manifest: ManifestFile) -> bool:
        """Whether some row of the manifest might match (False: skip the manifest)."""
        ...

    def explain(self, manifest: ManifestFile) -> str | None:
        """Why the manifest cannot match, or None when it might."""
        ...


@dataclass(frozen=True, slots=True)
class _OneSummary:
    present: pa.BooleanArray
    contains_null: pa.BooleanArray
    contains_nan: pa.BooleanArray
    lower: pa.BinaryArray
    upper: pa.BinaryArray


@dataclass(frozen=True, slots=True)
class _OneManifest:
    """One manifest's summaries as a one-row :class:`SummarySource`.

    Summaries and decoded bound keys are kept for the one call that judges the manifest:
    every leaf of a filter on a field reads the same ones, and a filter of thousands of
    conditions (a long OR) decoded them again per leaf, seconds per delete manifest.
    """

    stats: Sequence[PartitionFieldSummary]
    num_rows: int = 1
    _kept: dict[object, Any] = field(default_factory=dict)

    def summaries(self, position: int) -> _OneSummary:
        return self.memo(("summaries", position), lambda: self._summaries(position))

    def _summaries(self, position: int) -> _OneSummary:
        s = self.stats[position] if position < len(self.stats) else None
        return _OneSummary(
            pa.array([s is not None]),
            pa.array([s and s.contains_null], pa.bool_()),
            pa.array([s and s.contains_nan], pa.bool_()),
            pa.array([s and s.lower_bound], pa.binary()),
            pa.array([s and s.upper_bound], pa.binary()),
        )

    def memo(self, key: object, make: Callable[[], T]) -> T:
        if key not in self._kept:
            self._kept[key] = make()
        return self._kept[key]  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class _ManifestEvaluator:
    filter: ArrowSummaryFilter

    def __call__(self, manifest: ManifestFile) -> bool:
        stats = manifest.partitions
        return stats is None or bool(self.filter(_OneManifest(stats))[0].as_py())

    def explain(self, manifest: ManifestFile) -> str | None:
        stats = manifest.partitions
        return None if stats is None else self.filter.explain(_OneManifest(stats), 0)


def manifest_evaluator(
    spec: PartitionSpec, schema: Schema, partition_filter: Expression
) -> ManifestEvaluator:
    """A check of whether a manifest might hold rows matching ``partition_filter``.

    Java ``ManifestEvaluator.forPartitionFilter``. The result is callable (``False``: skip
    the manifest) and has ``explain(manifest)``, e.g. ``"partition day(pickup_ts) bounds
    [2024-08-01, 2024-08-07] exclude pickup_ts_day >= datetime.date(2024, 9, 1)"``.

    Args:
        spec: the manifest's partition spec (summaries are in its field order).
        schema: the table schema, to type and name the partition fields.
        partition_filter: a NOT-free filter over the partition fields of ``spec``, such as
            the inclusive projection of the row filter.
    """
    return _ManifestEvaluator(arrow_summary_filter(spec, schema, partition_filter))


__all__ = ["ManifestEvaluator", "manifest_evaluator"]
