"""What makes planning the same scan again fast, in one object passed to the planner.

Iceberg's files never change once written (spec "File System Operations"), and neither does
a metadata file at a location, so what planning derives from them can serve every later plan.
A :class:`PlanContext` holds all of it: bounded least-recently-used maps (:class:`LRU`) and
the decoded-manifest cache. Every key names what it was derived from, never the ``id()`` of
an object (an address is reused once its object is gone):

- ``bound`` (:data:`BOUND_FILTERS` entries): a filter bound to a schema, keyed by
  :class:`ScanKey` (table uuid, metadata location, schema id, filter, case sensitivity).
- ``compiled`` (:data:`COMPILED` entries): evaluators compiled for a scan (projections,
  manifest, metrics and residual evaluators), keyed by (table uuid, metadata location, schema
  id, bound filter text, case sensitivity) and what was compiled (``("spec", spec id)``, ...).
- ``summary_verdicts`` (:data:`SUMMARY_VERDICTS` entries): which manifests of a manifest
  list a filter keeps, by (table uuid, list path, spec id, spec fields, bound filter text).
- ``file_verdicts`` (``ICECORE_VERDICT_CACHE_BYTES``, default 64 MiB): which files of a
  manifest a filter keeps, by (:class:`~icecore.scan.manifest_cache.ManifestKey`, spec
  fields, bound filter text): shared by every snapshot that lists the manifest.
- ``planned_columns`` (``ICECORE_PLANNED_CACHE_BYTES``, default 256 MiB): what tasks and
  ``Plan.files()`` read of the files a filter keeps of a manifest (their paths, counts and
  partitions, and the residual per partition tuple), under the file verdicts' key: planning
  and iterating a big result again reads no manifest column (issue 19).
- ``manifests``: decoded manifests in memory and on disk (:mod:`icecore.scan.manifest_cache`).

:func:`default_context` is the process's own, used when a caller passes none; a test or a
server that wants its caches apart makes a ``PlanContext()`` and passes it to ``scan``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from icecore.expressions.bind import bind
from icecore.expressions.model import AlwaysTrue, Expression
from icecore.expressions.rewrite_not import rewrite_not
from icecore.lru import LRU
from icecore.scan.decode_pool import env_count
from icecore.scan.manifest_cache import ManifestCache, ManifestKey
from icecore.scan.planned import BlockColumns
from icecore.schema import Schema

BOUND_FILTERS = 1024
"""Bound filters kept (binding a filter is cheap; a million-value IN list is not)."""
COMPILED = 1024
"""Compiled evaluators kept (a few per scan: one per partition spec, metrics, deletes)."""
SUMMARY_VERDICTS = 4096
"""Manifest-list verdicts kept (one array per manifest list, spec and filter)."""


def _verdict_cache_bytes() -> int:
    """``ICECORE_VERDICT_CACHE_BYTES`` (default 64 MiB): memory kept for file verdicts."""
    return env_count("ICECORE_VERDICT_CACHE_BYTES", 64 << 20)


def _planned_cache_bytes() -> int:
    """``ICECORE_PLANNED_CACHE_BYTES`` (default 256 MiB): memory kept for planned columns."""
    return env_count("ICECORE_PLANNED_CACHE_BYTES", 256 << 20)


@dataclass(frozen=True, slots=True)
class ScanKey:
    """What a bound filter and the evaluators compiled from it depend on.

    A metadata file never changes at its location, so the location and a schema id name
    one schema; the table uuid keeps two tables apart should they share a location.
    """

    table_uuid: str
    metadata_location: str
    schema_id: int
    filter: str | Expression | None
    case_sensitive: bool


@dataclass(frozen=True, slots=True)
class BoundFilter:
    """A filter bound to a schema: as bound, with NOT rewritten away, and as text.

    ``rows`` is what rows are kept by (residuals); ``pruning`` what manifests and files are
    pruned by: for SQL text, what Spark pushes to Iceberg (``parse_scan_filter``), so the
    plan is Iceberg Java's; for an expression built through the API, the same expression.
    ``key`` is the bound text verdicts and evaluators are cached under.
    """

    filter: Expression
    rows: Expression
    pruning: Expression
    key: str


def bind_filter(
    schema: Schema, filter: str | Expression | None, case_sensitive: bool
) -> BoundFilter:
    """Bind ``filter`` (SQL text, an expression, or None for every row) to ``schema``."""
    if filter is None:
        unbound: Expression = AlwaysTrue()
        pushed: Expression = unbound
    elif isinstance(filter, str):
        # The parser holds sqlglot (~70 ms, ~25 MiB): loaded by the first filter, not by import.
        from icecore.expressions.parser import parse_scan_filter

        unbound, pushed = parse_scan_filter(filter)
    else:
        unbound = pushed = filter
    bound = bind(schema, unbound, case_sensitive=case_sensitive)
    rows = rewrite_not(bound)
    pruning = (
        rows
        if pushed is unbound
        else rewrite_not(bind(schema, pushed, case_sensitive, as_pushed=True))
    )
    key = repr(rows) if pruning is rows else f"{rows!r} | pruning {pruning!r}"
    return BoundFilter(bound, rows, pruning, key)


@dataclass(frozen=True, slots=True)
class FileVerdicts:
    """What one filter keeps of one data manifest's live entries.

    A pure function of the manifest (immutable), its partition spec and the bound filter:
    planning the same filter again, at this snapshot or any later one sharing the manifest,
    reads no column of it.

    Attributes:
        kept: rows planned.
        pruned: rows pruned, by partition or by metrics.
        by_partition: per pruned row, whether its partition values pruned it.
        data_files, rows: live data files and their records.
        rows_planned: records of the planned rows.
    """

    kept: np.ndarray
    pruned: np.ndarray
    by_partition: np.ndarray
    data_files: int
    rows: int
    rows_planned: int

    @property
    def nbytes(self) -> int:
        """Bytes held (what the verdict cache is bounded by)."""
        return int(self.kept.nbytes + self.pruned.nbytes + self.by_partition.nbytes) + 200


class PlanContext:
    """The caches one or many plans share (see the module docstring for every key).

    Args:
        manifests: the decoded-manifest cache (default: the one ``ICECORE_CACHE_DIR`` and
            ``ICECORE_CACHE_MAX_BYTES`` describe).
        verdict_bytes: memory kept for file verdicts (default ``ICECORE_VERDICT_CACHE_BYTES``).
        planned_bytes: memory kept for planned columns (default
            ``ICECORE_PLANNED_CACHE_BYTES``).
    """

    def __init__(
        self,
        manifests: ManifestCache | None = None,
        *,
        verdict_bytes: int | None = None,
        planned_bytes: int | None = None,
    ) -> None:
        self.manifests = manifests if manifests is not None else ManifestCache.from_environment()
        self.bound: LRU[ScanKey, BoundFilter] = LRU(BOUND_FILTERS)
        self.compiled: LRU[tuple[Any, ...], Any] = LRU(COMPILED)
        self.summary_verdicts: LRU[tuple[str, str, int, str, str], np.ndarray] = LRU(
            SUMMARY_VERDICTS
        )
        self.file_verdicts: LRU[tuple[ManifestKey, str, str], FileVerdicts] = LRU(
            1 << 20,
            max_bytes=verdict_bytes if verdict_bytes is not None else _verdict_cache_bytes(),
            size=lambda v: v.nbytes,
        )
        self.planned_columns: LRU[tuple[ManifestKey, str, str], BlockColumns] = LRU(
            1 << 20,
            max_bytes=planned_bytes if planned_bytes is not None else _planned_cache_bytes(),
            size=lambda v: v.nbytes,
        )

    def clear(self) -> None:
        """Forget everything held in memory (cache files on disk stay)."""
        self.bound.clear()
        self.compiled.clear()
        self.summary_verdicts.clear()
        self.file_verdicts.clear()
        self.planned_columns.clear()
        self.manifests.clear()


_DEFAULT: PlanContext | None = None
_DEFAULT_LOCK = threading.Lock()


def default_context() -> PlanContext:
    """The process's context, made on first use (``ICECORE_CACHE_DIR`` is read then)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = PlanContext()
        return _DEFAULT


__all__ = [
    "BOUND_FILTERS",
    "COMPILED",
    "SUMMARY_VERDICTS",
    "BoundFilter",
    "FileVerdicts",
    "PlanContext",
    "ScanKey",
    "bind_filter",
    "default_context",
]
