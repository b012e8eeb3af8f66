"""Judge one data file by its column metrics: the Arrow filter's per-row path.

The rules (Iceberg Java 1.10's ``InclusiveMetricsEvaluator``) live once, in
:mod:`icecore.expressions.arrow_metrics`; this adapter is for callers holding a single
:class:`~icecore.manifest.DataFile` (delete files, pruning reasons).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from icecore.expressions.arrow_metrics import (
    METRIC_KINDS,
    ArrowMetricsFilter,
    ColumnMetrics,
    arrow_metrics_filter,
)
from icecore.expressions.model import Expression
from icecore.manifest import DataFile, DataFileContent
from icecore.schema import Schema


class MetricsEvaluator(Protocol):
    """A compiled metrics filter: call it for the verdict, ``explain`` for the reason."""

    def __call__(self, data_file: DataFile) -> bool:
        """Whether some row of the file might match (False: the file can be skipped)."""
        ...

    def explain(self, data_file: DataFile) -> str | None:
        """Why the file cannot match, or None when it might."""
        ...


def _metrics(data_file: DataFile) -> Callable[[int], ColumnMetrics]:
    maps = [getattr(data_file, kind) for kind in METRIC_KINDS]
    return lambda fid: ColumnMetrics(*(None if m is None else m.get(fid) for m in maps))


@dataclass(frozen=True, slots=True)
class _InclusiveMetricsEvaluator:
    filter: ArrowMetricsFilter
    include_column_stats: bool
    evaluate_delete_files: bool

    def __call__(self, data_file: DataFile) -> bool:
        if data_file.content is not DataFileContent.DATA and not self.evaluate_delete_files:
            return True
        if data_file.record_count == 0:
            return False
        if data_file.record_count < 0 or not self.include_column_stats:
            return True
        return self.filter.explain(_metrics(data_file)) is None

    def explain(self, data_file: DataFile) -> str | None:
        if self(data_file):
            return None
        if data_file.record_count == 0:
            return "the file has no rows"
        return self.filter.explain(_metrics(data_file))


def metrics_evaluator(
    schema: Schema,
    expr: Expression,
    include_column_stats: bool = True,
    *,
    evaluate_delete_files: bool = False,
) -> MetricsEvaluator:
    """A check of whether a file's rows might match ``expr``, judged by its metrics.

    Java ``InclusiveMetricsEvaluator``. The result is callable (``False``: skip the file)
    and has ``explain(file)`` giving the reason, e.g. ``"id upper bound 4999 < 5000"``. A
    single file is judged on the filter's per-row path: no Arrow kernels for one row.

    Args:
        schema: the table schema ``expr`` is bound to.
        expr: a bound, NOT-free row filter.
        include_column_stats: False to judge by the record count only (manifests read
            without their metrics columns).
        evaluate_delete_files: delete files are never pruned unless this is True. Java's
            ``DeleteFileIndex`` does prune delete files with this evaluator (``filterRows``
            of the data filter); pass True when filtering delete entries to match it.
    """
    del schema  # bound predicates carry field ids and types
    return _InclusiveMetricsEvaluator(
        arrow_metrics_filter(expr), include_column_stats, evaluate_delete_files
    )


__all__ = ["MetricsEvaluator", "metrics_evaluator"]
