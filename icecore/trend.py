"""A table's trend over its history, and the regressions in it, traced to the commit.

Issue 34 deliver 2, DESIGN.md "Catalog health" (``icecore trend TABLE``). No collector is
needed: every snapshot of a branch still holds its manifest list, so the walk
(:func:`icecore.snapshot_walk.walk`, each manifest read once) gives, per snapshot:

* ``data_bytes``, ``data_files``, ``rows`` (before deletes), ``avg_file_bytes``,
  ``delete_files``, ``delete_bytes``: its live files, counted from manifests (exact);
  ``delete_files`` counts entries (each deletion vector once, as Spark's ``delete_files``
  table and the Overview's totals do), ``delete_bytes`` each file once (a Puffin file holds
  many deletion vectors);
* ``manifests``: the entries of its manifest list (exact);
* ``added_data_files``, ``added_data_bytes``, ``avg_added_file_bytes``: the data files it
  added (ADDED entries of the manifests it wrote, spec "Manifest Entry Fields"; exact);
* ``time``, ``operation`` and ``writer`` from the snapshot and its summary: the summary is
  the only record of who wrote a commit, so only these come from it. ``writer`` holds the
  summary keys of :data:`WRITER_KEYS` that are set.

Regressions (:func:`regressions`), each flagged at the snapshot where it started, with
that snapshot's operation and writer:

* ``avg_added_file_bytes``: a snapshot adds data files averaging at most a tenth
  (:data:`SMALL_FILE_FALL`) of the healthy baseline: the median average of the last
  :data:`BASELINE_SNAPSHOTS` earlier snapshots that added data files and were not regressed
  themselves. The regression lasts while later adding snapshots stay that small; ``after``
  is the median average over them.
* ``delete_files``: live delete files pile up: along a run of snapshots in which they never
  fall (nothing compacted them away), they reach at least :data:`DELETE_PILE_UP` more than,
  and at least twice, the level before the run; flagged at the run's first rise.
* ``manifests``: manifests per snapshot climb: along a run in which the count never falls,
  it grows by at least the table's ``commit.manifest.min-count-to-merge`` over the level
  before the run: more than Iceberg's merging appends let it grow before they merge (fast
  appends, such as Spark's streaming writes, never merge); flagged at the run's first rise.

``before`` is the healthy value the regression is measured against, ``after`` the
regressed one.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from icecore.errors import NotFound
from icecore.health import MANIFEST_MIN_COUNT_TO_MERGE, table_property
from icecore.metadata import MAIN_BRANCH, Snapshot
from icecore.snapshot_walk import ManifestFiles, Walk, walk

if TYPE_CHECKING:
    from icecore.table_data import TableData

WRITER_KEYS = (
    "engine-name",
    "engine-version",
    "spark.app.id",
    "spark.sql.streaming.queryId",
    "flink.job-id",
    "wap.id",
    "published-wap-id",
)
"""Summary keys naming who wrote a snapshot (Iceberg's Spark, Flink and WAP writers), kept in
this order when set."""

SMALL_FILE_FALL = 10
"""Added files averaging this many times smaller than the baseline are a regression."""
BASELINE_SNAPSHOTS = 5
"""Healthy adding snapshots the small-file baseline is the median of."""
DELETE_PILE_UP = 3
"""Live delete files must grow at least this much (and double) to pile up."""


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One snapshot's numbers (see the module docstring for where each comes from)."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    operation: str
    writer: Mapping[str, str]
    data_bytes: int
    data_files: int
    rows: int
    avg_file_bytes: int | None
    delete_files: int
    delete_bytes: int
    manifests: int
    added_data_files: int
    added_data_bytes: int
    avg_added_file_bytes: int | None

    @property
    def time(self) -> str:
        """The commit time, ISO-8601 UTC."""
        return _iso(self.timestamp_ms)

    def to_dict(self) -> dict[str, Any]:
        """As ``icecore trend`` prints it."""
        return {"time": self.time, **asdict(self), "writer": dict(self.writer)}


@dataclass(frozen=True, slots=True)
class Regression:
    """A metric that turned bad, at the snapshot where it started.

    Attributes:
        snapshot_id, operation, writer: the snapshot that started it, its operation and
            writer (:data:`WRITER_KEYS`).
        what: the metric (``avg_added_file_bytes``, ``delete_files``, ``manifests``).
        before: its healthy value before; after: its regressed value.
        time: when the snapshot was committed (ISO-8601).
        last_snapshot_id: the last snapshot of the regressed run.
        snapshots: how many snapshots the run spans.
    """

    snapshot_id: int
    what: str
    before: int
    after: int
    operation: str
    writer: Mapping[str, str]
    time: str
    last_snapshot_id: int
    snapshots: int

    def to_dict(self) -> dict[str, Any]:
        """As ``icecore trend`` prints it."""
        return {**asdict(self), "writer": dict(self.writer)}


@dataclass(frozen=True, slots=True)
class Trend:
    """A branch's history, oldest first, and its regressions in order of start."""

    branch: str
    points: tuple[TrendPoint, ...]
    regressions: tuple[Regression, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """DESIGN.md's JSON: ``branch``, ``snapshots`` and ``regressions``."""
        return {
            "branch": self.branch,
            "snapshots": [p.to_dict() for p in self.points],
            "regressions": [r.to_dict() for r in self.regressions],
        }


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


def writer(snapshot: Snapshot) -> dict[str, str]:
    """The summary keys of :data:`WRITER_KEYS` the snapshot has."""
    summary = snapshot.summary
    if summary is None:
        return {}
    return {k: v for k in WRITER_KEYS if (v := summary.get(k)) is not None}


@dataclass(frozen=True, slots=True)
class _Sums:
    """One manifest's live files summed once (a long history lists it in many snapshots)."""

    data_files: int
    data_bytes: int
    rows: int
    added_files: int
    added_bytes: int
    delete_entries: int
    deletes: Mapping[str, int]
    """Delete files by path -> size (a Puffin file holds many deletion vectors: one file)."""


def _sums(m: ManifestFiles) -> _Sums:
    is_data = m.is_data
    added = is_data & m.added
    deletes = {m.paths[i]: int(m.sizes[i]) for i in np.flatnonzero(~is_data)}
    return _Sums(
        data_files=int(is_data.sum()),
        data_bytes=int(m.sizes[is_data].sum()),
        rows=int(m.records[is_data].sum()),
        added_files=int(added.sum()),
        added_bytes=int(m.sizes[added].sum()),
        delete_entries=int((~is_data).sum()),
        deletes=deletes,
    )


def _point(snapshot: Snapshot, walked: Walk, sums: Mapping[str, _Sums]) -> TrendPoint:
    data_files = data_bytes = rows = added_files = added_bytes = delete_files = 0
    deletes: dict[str, int] = {}
    keys = walked.listed[snapshot.snapshot_id]
    for key in keys:
        m = sums[key]
        data_files += m.data_files
        data_bytes += m.data_bytes
        rows += m.rows
        if m.deletes:
            delete_files += m.delete_entries
            deletes.update(m.deletes)
        if walked.manifests[key].manifest.added_snapshot_id == snapshot.snapshot_id:
            added_files += m.added_files
            added_bytes += m.added_bytes
    delete_bytes = sum(deletes.values())
    return TrendPoint(
        snapshot_id=snapshot.snapshot_id,
        parent_id=snapshot.parent_snapshot_id,
        timestamp_ms=snapshot.timestamp_ms,
        operation=str(snapshot.operation) if snapshot.operation is not None else "",
        writer=writer(snapshot),
        data_bytes=data_bytes,
        data_files=data_files,
        rows=rows,
        avg_file_bytes=data_bytes // data_files if data_files else None,
        delete_files=delete_files,
        delete_bytes=delete_bytes,
        manifests=len(keys),
        added_data_files=added_files,
        added_data_bytes=added_bytes,
        avg_added_file_bytes=added_bytes // added_files if added_files else None,
    )


def _regression(
    what: str, start: TrendPoint, last: TrendPoint, span: int, before: int, after: int
) -> Regression:
    return Regression(
        snapshot_id=start.snapshot_id,
        what=what,
        before=before,
        after=after,
        operation=start.operation,
        writer=start.writer,
        time=start.time,
        last_snapshot_id=last.snapshot_id,
        snapshots=span,
    )


def _small_added_files(points: Sequence[TrendPoint]) -> list[Regression]:
    found: list[Regression] = []
    healthy: list[int] = []
    run: list[TrendPoint] = []
    baseline = 0

    def close() -> None:
        if run:
            values = [p.avg_added_file_bytes or 0 for p in run]
            found.append(
                _regression(
                    "avg_added_file_bytes",
                    run[0],
                    run[-1],
                    len(run),
                    baseline,
                    int(statistics.median(values)),
                )
            )
            run.clear()

    for p in points:
        size = p.avg_added_file_bytes
        if size is None:
            continue
        if not run and healthy:
            baseline = int(statistics.median(healthy[-BASELINE_SNAPSHOTS:]))
        if healthy and size * SMALL_FILE_FALL <= baseline:
            run.append(p)
            continue
        close()
        healthy.append(size)
    close()
    return found


def _pile_up(points: Sequence[TrendPoint], what: str, grows_enough: Any) -> list[Regression]:
    """Runs in which ``what`` never falls and ``grows_enough(level, value)`` comes true."""
    found: list[Regression] = []
    level: int | None = None  # the value before the current run's first rise
    start: int | None = None  # index of that rise
    flagged = False
    previous: int | None = None
    for i, p in enumerate(points):
        value = int(getattr(p, what))
        if previous is None or value < previous:
            level, start, flagged = value, None, False
        elif value > previous and start is None:
            start = i
        previous = value
        if start is not None and level is not None and grows_enough(level, value):
            if not flagged:
                flagged = True
                found.append(_regression(what, points[start], p, i - start + 1, level, value))
            else:
                last = found[-1]
                found[-1] = _regression(
                    what, points[start], p, i - start + 1, last.before, max(last.after, value)
                )
    return found


def regressions(
    points: Sequence[TrendPoint], *, min_count_to_merge: int = MANIFEST_MIN_COUNT_TO_MERGE[1]
) -> list[Regression]:
    """The regressions of a branch's points, oldest first (rules in the module docstring)."""
    found = _small_added_files(points)
    found += _pile_up(
        points,
        "delete_files",
        lambda level, value: value >= level + DELETE_PILE_UP and value >= 2 * level,
    )
    found += _pile_up(
        points,
        "manifests",
        lambda level, value: value >= level + min_count_to_merge,
    )
    order = {p.snapshot_id: i for i, p in enumerate(points)}
    return sorted(found, key=lambda r: (order[r.snapshot_id], r.what))


def trend(table: TableData, branch: str = MAIN_BRANCH) -> Trend:
    """The trend of ``branch``'s history (its head and every unexpired ancestor), oldest first.

    Raises:
        NotFound: the table has no branch of that name.
    """
    metadata = table.metadata
    ref = metadata.refs.get(branch)
    if ref is None or not ref.is_branch:
        if branch == MAIN_BRANCH and metadata.current_snapshot_id is None:
            return Trend(branch, ())
        names = ", ".join(sorted(metadata.branches())) or "none"
        raise NotFound(f"The table has no branch {branch!r}; its branches: {names}.")
    lineage = tuple(reversed(metadata.ancestors_of(ref.snapshot_id)))
    walked = walk(table, lineage)
    sums = {key: _sums(m) for key, m in walked.manifests.items()}
    points = tuple(_point(s, walked, sums) for s in lineage)
    merge = table_property(metadata, MANIFEST_MIN_COUNT_TO_MERGE)
    assert merge is not None
    return Trend(branch, points, tuple(regressions(points, min_count_to_merge=merge)))
