"""Every table of a catalog at a glance: sizes, last commit and a health score (issue 34, 1).

DESIGN.md "Catalog health": ``icecore health CATALOG`` and the Tables page show one row per
table the caller may see (the catalog given is filtered already: a
:class:`~icecore.catalog.guarded.GuardedCatalog` lists only granted tables). A row holds:

* ``rows``, ``data_files``, ``data_bytes``, ``avg_file_bytes``, ``small_file_share``,
  ``delete_files``, ``delete_records`` (the rows the delete files cover: positions, keys,
  deletion vector cardinalities) of the current snapshot; rows are record counts before
  deletes, as Spark's ``files`` table sums them;
* ``snapshots``, ``manifests`` (of the current snapshot), ``manifest_list_bytes``,
  ``metadata_bytes`` (the metadata.json file) and ``metadata_parts``
  (:func:`icecore.metadata_bloat.metadata_parts`);
* ``last_commit``: the newest snapshot's time, operation and writer (:func:`icecore.health.
  writer_of`);
* ``score`` and ``factors`` (below); ``error`` when the table could not be read: that row
  keeps its name and the one-sentence error, every number None, and the others go on;
* ``holds_until_ms``: the last time the row is true (epoch ms; None: always): only expiry
  depends on the time (:func:`icecore.health.expiry_holds_until`), so a kept row is reused
  until then and read again after (:func:`holds`).

Cost and exactness, for 1,000 tables: one metadata.json read and one manifest list read per
table (the manifest list's ``added/existing_files_count`` and ``_rows_count`` give exact file
and record counts). Data bytes and the small-file share need each file's size, which only the
manifests hold: they are read (as planning reads them, decoded once and cached on disk; in
worker processes, decoded there and kept nowhere, see :func:`_rows_of`) when
the current snapshot has at most ``files_bound`` live files, and then every number is exact.
Above the bound the counts stay exact, ``data_bytes`` is the summary's ``total-files-size``
(the writer's claim, data and delete files together), ``small_file_share`` is None, the
file-level checks are skipped, and ``estimated`` names the numbers that are estimates.

The score starts at 100 and loses the points of each finding of :func:`icecore.health.findings`
that is not ok (:data:`POINTS`: a warning its full weight, an info the lesser weight), plus
:data:`METADATA_POINTS` when metadata.json is past
:data:`~icecore.metadata_bloat.LARGE_METADATA_BYTES`; it never goes below 0. Each lost point
is a factor: ``{check, status, points, title, detail}``, the finding's own words, so the score
says why it is what it is and what fixes it (the Maintenance page runs the fix).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import (
    ThreadPoolExecutor,
)
from typing import TYPE_CHECKING, Any

from icecore import health
from icecore.errors import IcecoreError, InvalidMetadata
from icecore.identifier import TableIdentifier
from icecore.io import MAX_METADATA_BYTES, FileIO
from icecore.layout import snapshot_files
from icecore.lru import LRU
from icecore.manifest import ManifestContent, ManifestFile
from icecore.metadata.serde import decode_metadata_json, parse_metadata_dict
from icecore.metadata_bloat import LARGE_METADATA_BYTES, metadata_parts, part_json
from icecore.progress import report
from icecore.scan.context import default_context
from icecore.scan.decode_pool import _Worker, pool_size, serve
from icecore.table_data import TableData

if TYPE_CHECKING:
    from icecore.catalog import Catalog

FILES_BOUND = 100_000
"""Live files up to which a table's manifests are read for exact bytes and file sizes."""

WORKERS = 4
"""Tables read at once: reads wait on storage, and manifest decoding releases the GIL."""

PROCESS_MIN_TABLES = 64
"""Tables to read, at least, before the full rows are read in worker processes.

Reading a row holds the GIL most of the time (Avro decoding of small manifests, findings), so
threads use one core: measured over 150 bench tables, 4 threads took 4.5 s of wall time for
5.8 s of CPU against 4.0 s for 4.3 s with one thread. Processes use every core; starting them
costs ~1-3 s on a busy 2-core machine (each imports Arrow, polars and Icecore), worth it
from a few dozen tables on.
"""

PARTIAL_EVERY_S = 2.0
"""Seconds at least between two partial tables (``catalog_health(partial=...)``): each is a
redraw of the whole catalog on the page."""

CHUNK_TABLES = 8
"""Tables per worker task at most: few enough that progress moves and both workers stay busy."""

POINTS: dict[str, tuple[int, int]] = {
    "small_files": (25, 0),
    "deletes": (20, 5),
    "over_partitioning": (15, 0),
    "manifests": (15, 0),
    "partition_skew": (10, 0),
    "snapshots_to_expire": (10, 0),
}
"""Points a finding costs: (as a warning, as an info), by :attr:`icecore.health.Finding.check`."""

METADATA_POINTS = 10
"""Points a metadata.json past :data:`~icecore.metadata_bloat.LARGE_METADATA_BYTES` costs."""

NUMBERS = (
    "rows",
    "data_bytes",
    "data_files",
    "avg_file_bytes",
    "small_file_share",
    "delete_files",
    "delete_records",
    "snapshots",
    "manifests",
    "manifest_list_bytes",
    "metadata_bytes",
)
"""A row's numbers, in the order the page shows them."""

Row = dict[str, Any]


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


def score(findings: list[health.Finding], metadata_bytes: int) -> tuple[int, list[Row]]:
    """The score and the factors that lowered it, from the findings (see the module doc)."""
    factors: list[Row] = []
    for f in findings:
        warn, info = POINTS.get(f.check, (0, 0))
        points = (
            warn
            if f.status is health.Status.WARN
            else info
            if f.status is health.Status.INFO
            else 0
        )
        if points:
            factors.append(
                {
                    "check": f.check,
                    "status": str(f.status),
                    "points": points,
                    "title": f.title,
                    "detail": f.detail,
                }
            )
    if metadata_bytes >= LARGE_METADATA_BYTES:
        factors.append(
            {
                "check": "metadata_size",
                "status": str(health.Status.WARN),
                "points": METADATA_POINTS,
                "title": "Large metadata.json",
                "detail": f"metadata.json is {health.format_bytes(metadata_bytes)}: every reader "
                "loads it whole and every commit rewrites it (see its parts).",
            }
        )
    factors.sort(key=lambda f: -int(f["points"]))
    return max(0, 100 - sum(int(f["points"]) for f in factors)), factors


def _list_counts(manifests: list[ManifestFile]) -> tuple[int, int, int, int] | None:
    """(data files, rows, delete files, delete records) from the manifest list, if complete."""
    out = [0, 0, 0, 0]
    for m in manifests:
        counts = (m.added_files_count, m.existing_files_count)
        rows = (m.added_rows_count, m.existing_rows_count)
        if None in counts or None in rows:
            return None
        at = 0 if m.content is ManifestContent.DATA else 2
        out[at] += sum(c for c in counts if c is not None)
        out[at + 1] += sum(r for r in rows if r is not None)
    return out[0], out[1], out[2], out[3]


def holds(row: Row, now_ms: int) -> bool:
    """Whether a row made earlier is still true at ``now_ms`` (see ``holds_until_ms``).

    A table nobody commits to keeps its metadata file, but its snapshots age: once one passes
    an expiry age, the row's expiry finding, score and metadata parts change.
    """
    until = row.get("holds_until_ms")
    return until is None or now_ms <= int(until)


def empty_row(name: str, location: str | None) -> Row:
    """A row with the table's name and location and nothing measured (not read yet)."""
    return {
        "table": name,
        "metadata_location": location,
        **dict.fromkeys(NUMBERS),
        "last_commit": None,
        "score": None,
        "factors": [],
        "estimated": [],
        "metadata_parts": [],
        "error": None,
        "holds_until_ms": None,
    }


def _open(catalog: Catalog, ident: TableIdentifier) -> tuple[str, Any]:
    """(metadata location, FileIO) of a table: a REST catalog answers both with the table."""
    if catalog.loads_whole_tables:
        loaded = catalog.load_table(ident)
        return loaded.metadata_location, loaded.io
    return catalog.metadata_location(ident), catalog.io


def table_health(
    catalog: Catalog,
    ident: TableIdentifier,
    *,
    now_ms: int,
    files_bound: int = FILES_BOUND,
    location: str | None = None,
) -> Row:
    """One table's row (see the module doc); an unreadable table's row carries its error.

    ``location``: its current metadata file when the caller already asked the catalog.
    """
    return _table_health(catalog, ident, now_ms, files_bound, location)[0]


def _table_health(
    catalog: Catalog | None,
    ident: TableIdentifier,
    now_ms: int,
    files_bound: int,
    location: str | None,
    io: FileIO | None = None,
    cached: bool = True,
) -> tuple[Row, bool]:
    """:func:`table_health`'s row, and whether it may be kept by its metadata location.

    ``catalog`` may be None (a worker process) when ``location`` and ``io`` are given;
    ``cached``: manifests read through the planner's caches (False: decoded and kept nowhere,
    :func:`icecore.layout.snapshot_files`; a worker reads each table once). A row
    is kept when read, or when the metadata it read is corrupt (InvalidMetadata): the
    file never changes, so reading it again gives the same error. A missing file or a failed
    read may be passing (storage, network), and is tried again on the next call.
    """
    row = empty_row(str(ident), location)
    try:
        if location is None:
            assert catalog is not None
            location, io = _open(catalog, ident)
            row["metadata_location"] = location
        elif io is None:
            assert catalog is not None
            io = catalog.io
        raw = io.read(location, limit=MAX_METADATA_BYTES)
        try:
            obj = decode_metadata_json(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise InvalidMetadata(f"Table metadata file {location} is not valid JSON: {e}.") from e
        metadata = parse_metadata_dict(obj, location)
        table = TableData(ident, metadata, location, io, catalog)
        _fill(row, table, obj, len(raw), now_ms, files_bound, cached)
    except InvalidMetadata as e:
        row["error"] = str(e)
        return row, True
    except (IcecoreError, OSError) as e:
        row["error"] = str(e) or type(e).__name__
        return row, False
    return row, True


def _fill(
    row: Row,
    table: TableData,
    obj: Any,
    metadata_bytes: int,
    now_ms: int,
    files_bound: int,
    cached: bool = True,
) -> None:
    metadata = table.metadata
    current = metadata.current_snapshot()
    newest = max(metadata.snapshots, key=lambda s: s.timestamp_ms, default=None)
    manifests = table.manifests(current) if current is not None else []
    row["snapshots"] = len(metadata.snapshots)
    row["manifests"] = len(manifests)
    row["manifest_list_bytes"] = (
        table.io.info(current.manifest_list).size
        if current is not None and current.manifest_list
        else 0
    )
    row["metadata_bytes"] = metadata_bytes
    row["metadata_parts"] = [part_json(p) for p in metadata_parts(obj, metadata, now_ms)]
    row["holds_until_ms"] = health.expiry_holds_until(metadata, now_ms)
    if newest is not None:
        row["last_commit"] = {
            "time": _iso(newest.timestamp_ms),
            "snapshot_id": newest.snapshot_id,
            "operation": newest.summary.get("operation") if newest.summary else None,
            "writer": health.writer_of(newest),
        }
    counts = _list_counts(manifests)
    live = (counts[0] + counts[2]) if counts is not None else None
    if live is None or live <= files_bound:
        files = snapshot_files(table, current, cached=cached)
        t = health.totals(current, manifests, files)
        found = health.findings(metadata, manifests, files, t, now_ms, propose_spec=False)
        data_bytes: int | None = t.data_bytes
        row.update(
            rows=t.rows,
            data_files=t.data_files,
            delete_files=t.delete_files,
            delete_records=t.delete_records,
        )
        small = next(f for f in found if f.check == "small_files")
        share = dict(small.evidence).get("share of data files")
        row["small_file_share"] = float(share) if share is not None else None
    else:
        assert counts is not None
        data_files, rows, delete_files, delete_records = counts
        summary = current.summary.properties if current and current.summary else {}
        claimed = summary.get("total-files-size")
        data_bytes = int(claimed) if claimed is not None and claimed.isdigit() else None
        row.update(
            rows=rows,
            data_files=data_files,
            delete_files=delete_files,
            delete_records=delete_records,
        )
        # The file-level checks (small files, partitions, skew) need the files: not judged.
        row["estimated"] = ["data_bytes", "avg_file_bytes", "small_file_share", "score"]
        t = health.Totals(
            current.snapshot_id if current else None,
            data_files,
            data_bytes or 0,
            rows,
            0,
            0,
            delete_files,
            0,
            delete_records,
            sum(1 for m in manifests if m.content is ManifestContent.DATA),
            sum(1 for m in manifests if m.content is ManifestContent.DELETES),
            sum(m.manifest_length for m in manifests),
            {},
        )
        found = [
            health.deletes(t),
            health.manifests(metadata, manifests),
            health.expiry(metadata, now_ms),
        ]
    row["data_bytes"] = data_bytes
    data_files_n = int(row["data_files"] or 0)
    row["avg_file_bytes"] = (
        round(data_bytes / data_files_n) if data_bytes is not None and data_files_n else 0
    )
    row["score"], row["factors"] = score(found, metadata_bytes)


Located = tuple[TableIdentifier, str | None, str | None]
"""A listed table: its identifier, its current metadata file (None for a catalog that answers
it only with the whole table, REST), and the error asking for it raised (None if none)."""


def locate(catalog: Catalog, *, workers: int = WORKERS) -> list[Located]:
    """Every table ``catalog`` lists with its current metadata file, in listing order.

    Asked once per visit: what is kept by metadata file (``known``) is found from it.
    """
    idents = catalog.list_tables()

    def one(ident: TableIdentifier) -> Located:
        if catalog.loads_whole_tables:
            return ident, None, None
        try:
            return ident, catalog.metadata_location(ident), None
        except (IcecoreError, OSError) as e:
            return ident, None, str(e) or type(e).__name__

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, idents))


def _rows_of(
    properties: dict[str, str],
    tables: list[tuple[TableIdentifier, str]],
    now_ms: int,
    files_bound: int,
) -> list[tuple[Row, bool]]:
    """A worker process's task: the rows of ``tables`` (identifier, metadata file).

    Manifests are decoded and kept nowhere: each table is read once here, and building the
    planner's layout and cache for it cost ~a fifth of its row (see :func:`_serve`).
    """
    io = FileIO(dict(properties))
    return [
        _table_health(None, ident, now_ms, files_bound, location, io, cached=False)
        for ident, location in tables
    ]


def _in_processes(
    catalog: Catalog,
    todo: list[tuple[int, TableIdentifier, str]],
    now_ms: int,
    files_bound: int,
    processes: int,
    started: Callable[[], None] = lambda: None,
) -> Iterator[tuple[int, Row, bool]]:
    """(index, row, keep) of each table of ``todo``, read by ``processes`` worker processes.

    Yields as tasks finish (any order). The workers are ``python -m icecore.catalog_health``
    children started as the decode pool starts its own (:mod:`icecore.scan.decode_pool`:
    not ``multiprocessing``, whose spawn re-runs the caller's main module), for this call
    only, and get only plain values: identifiers, metadata files and the FileIO's
    properties. A task whose worker fails is read here: the workers can only save time,
    never change a row. ``started`` is called on this thread once the workers are reading.
    """
    chunk = max(1, min(CHUNK_TABLES, len(todo) // (processes * 4)))
    tasks: queue.SimpleQueue[list[tuple[int, TableIdentifier, str]]] = queue.SimpleQueue()
    for at in range(0, len(todo), chunk):
        tasks.put(todo[at : at + chunk])
    answers: queue.SimpleQueue[tuple[list[tuple[int, TableIdentifier, str]], Any]] = (
        queue.SimpleQueue()
    )
    properties = dict(catalog.io.properties)

    def feed() -> None:
        worker: _Worker | None = None
        try:
            worker = _Worker("icecore.catalog_health")
            while True:
                try:
                    task = tasks.get_nowait()
                except queue.Empty:
                    return
                try:
                    work = [(ident, location) for _, ident, location in task]
                    answers.put((task, worker.run((properties, work, now_ms, files_bound))))
                except Exception as e:  # noqa: BLE001 - a broken worker: this task is read here
                    answers.put((task, e))
                    return
        except OSError as e:  # the worker could not start: its tasks are read here
            answers.put(([], e))
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=feed, daemon=True) for _ in range(processes)]
    for thread in threads:
        thread.start()
    started()
    answered = 0
    try:
        while answered < len(todo):
            if all(not t.is_alive() for t in threads) and answers.empty():
                break  # every worker gone: the rest is read below
            try:
                task, answer = answers.get(timeout=0.5)
            except queue.Empty:
                continue
            if isinstance(answer, Exception):
                answer = [_table_health(catalog, i, now_ms, files_bound, loc) for _, i, loc in task]
            for (i, _, _), (row, keep) in zip(task, answer, strict=True):
                answered += 1
                yield i, row, keep
        while not tasks.empty():
            for i, ident, location in tasks.get_nowait():
                row, keep = _table_health(catalog, ident, now_ms, files_bound, location)
                yield i, row, keep
    finally:
        while True:  # a caller that stops early: the workers take no further task
            try:
                tasks.get_nowait()
            except queue.Empty:
                break
        for thread in threads:
            thread.join()


def _serve() -> None:
    """A worker's loop (``python -m icecore.catalog_health``): tasks from stdin, rows out."""
    # The health workers are the parallelism: no decode processes or threads of their own
    # (threads cost a worker ~15% more CPU a table: 25 against 21 ms, /tmp/prof/hrow.py).
    os.environ["ICECORE_PLAN_PROCESSES"] = "0"
    os.environ["ICECORE_PLAN_THREADS"] = "1"
    # Each table is read once here and its manifests kept nowhere (_rows_of): what the
    # planner's memory caches still gather (bound filters, small verdicts) goes after each task.
    serve(_rows_of, after_each=lambda: default_context().clear())


def catalog_health(
    catalog: Catalog,
    *,
    now_ms: int | None = None,
    files_bound: int = FILES_BOUND,
    workers: int = WORKERS,
    processes: int | None = None,
    known: LRU[str, Row] | None = None,
    located: list[Located] | None = None,
    progress: Callable[[int, int], None] | None = None,
    partial: Callable[[list[Row]], None] | None = None,
) -> list[Row]:
    """A row per table ``catalog`` lists, in listing order (see the module doc).

    Args:
        catalog: the catalog, as the caller may see it (guarded for a principal).
        now_ms: when expiry is judged (default: now).
        files_bound: live files up to which manifests are read (exact bytes and sizes).
        workers: tables read at once on threads (metadata and manifest lists only, or too
            few tables for worker processes).
        processes: worker processes reading full rows (``files_bound`` > 0) when at least
            :data:`PROCESS_MIN_TABLES` tables are to be read, the catalog's FileIO is a plain
            :class:`~icecore.io.FileIO` and each table's metadata file is known (not REST);
            default: the decode pool's size (:func:`icecore.scan.decode_pool.pool_size`,
            ``ICECORE_PLAN_PROCESSES``; 0 or 1: threads only).
        known: rows kept by metadata location, reused and filled in: a metadata file never
            changes, so a table whose location is unchanged is not read again (the page's
            cache), a corrupt one included; a table that could not be read for another
            reason (missing, storage) is tried again; so is a row no longer true at
            ``now_ms`` (:func:`holds`: a snapshot aged past an expiry age since). A kept
            row is reused as it is (its expiry evidence says when it was judged).
        located: :func:`locate`'s answer when the caller has it (default: asked here).
        progress: called as ``progress(done, total)`` on the calling thread after each
            table; the same is reported to :mod:`icecore.progress` ("Reading tables").
        partial: when there are tables to read, called on the calling thread with a row
            per table in listing order, those made so far and, for the rest, rows of names
            only (:func:`empty_row`): once as the reading starts (with worker processes,
            once they are reading), then as rows come in, at most every
            :data:`PARTIAL_EVERY_S` seconds (not at the end: the answer is the whole). The
            Tables page draws the catalog filling in with it.
    """
    when = now_ms if now_ms is not None else int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    tables = located if located is not None else locate(catalog, workers=workers)
    total = len(tables)
    rows: list[Row | None] = [None] * total
    done = 0

    def tell() -> None:
        if progress is not None:
            progress(done, total)
        report("Reading tables", done, total)

    def keep(row: Row, kept: bool) -> Row:
        if known is not None and kept and row["metadata_location"]:
            known.put(str(row["metadata_location"]), row)
        return row

    shown = -math.inf

    def show(first: bool = False) -> None:
        nonlocal shown
        if partial is None or (not first and time.monotonic() - shown < PARTIAL_EVERY_S):
            return
        partial(
            [
                row if row is not None else empty_row(str(ident), location)
                for row, (ident, location, _) in zip(rows, tables, strict=True)
            ]
        )
        shown = time.monotonic()

    todo: list[tuple[int, TableIdentifier, str | None]] = []
    for i, (ident, location, error) in enumerate(tables):
        if error is not None:
            rows[i] = {**empty_row(str(ident), None), "error": error}
        elif (
            known is not None
            and location is not None
            and (kept := known.get(location))
            and holds(kept, when)
        ):
            rows[i] = {**kept, "table": str(ident)}
        else:
            todo.append((i, ident, location))
            continue
        done += 1
        tell()

    size = pool_size() if processes is None else processes
    located_all = [(i, ident, loc) for i, ident, loc in todo if loc is not None]
    if (
        size >= 2
        and files_bound > 0
        and len(todo) >= PROCESS_MIN_TABLES
        and len(located_all) == len(todo)
        and type(catalog.io) is FileIO
    ):
        reading = _in_processes(
            catalog, located_all, when, files_bound, size, lambda: show(first=True)
        )
        for i, row, keeps in reading:
            rows[i] = keep(row, keeps)
            done += 1
            tell()
            show()
    elif todo:
        show(first=True)

        def one(item: tuple[int, TableIdentifier, str | None]) -> Row:
            _, ident, location = item
            return keep(*_table_health(catalog, ident, when, files_bound, location))

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for (i, _, _), row in zip(todo, pool.map(one, todo), strict=True):
                rows[i] = row
                done += 1
                tell()
                show()
    return [row for row in rows if row is not None]


__all__ = [
    "FILES_BOUND",
    "METADATA_POINTS",
    "NUMBERS",
    "PARTIAL_EVERY_S",
    "POINTS",
    "PROCESS_MIN_TABLES",
    "Located",
    "catalog_health",
    "empty_row",
    "holds",
    "locate",
    "score",
    "table_health",
]


if __name__ == "__main__":
    _serve()
