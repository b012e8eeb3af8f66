"""Server-side scan planning by Icecore's planner (issue 33 deliver 1, DESIGN.md "Workload").

The REST spec's planTableScan, fetchPlanningResult, cancelPlanning and fetchScanTasks.

``POST .../tables/{table}/plan`` takes a ``PlanTableScanRequest`` (``snapshot-id``,
``select``, ``filter`` in the spec's JSON expressions (:mod:`icecore.expressions.json_expr`),
``case-sensitive``, ``use-snapshot-schema``, ``stats-fields``, ``min-rows-requested``) and plans
it with :class:`icecore.scan.planner.TableScan`: the data files and delete files returned are
exactly the ones Icecore plans (= Iceberg Java's ``planFiles``). Planning happens in the call,
and the answer is always ``completed`` (PyIceberg 0.12 does not poll a ``submitted`` plan):

- a plan of at most :data:`PAGE_FILES` data files carries its ``file-scan-tasks`` and
  ``delete-files`` itself;
- a bigger one carries ``plan-tasks``: opaque tokens, one per page of :data:`PAGE_FILES`
  files, each redeemed once or more with ``POST .../tasks`` for that page's tasks and the
  delete files they reference.

The files are the spec's ``DataFile``/``DeleteFile`` JSON: partition values as JSON single
values (Appendix D) in the spec's field order. A request naming ``stats-fields`` gets complete
files: their metrics for those columns (lower and upper bounds as the uppercase hex of their
single-value binary encoding, as Java's ``ContentFileParser``), split offsets, sort order id,
key metadata and first row id; without it, the spec's required fields only, since decoding
the rest holds every planned file's metrics until the plan is answered (~3.8 KB a file). No
``residual-filter`` is sent: the spec then has the client apply its own filter.

Plans, tokens and what each token returns are kept where every ``serve-rest`` process of the
catalog reads them (:mod:`icecore.catalog.plan_store`), so one process may plan and another
serve the tasks. Bounds (a client cannot make the server hold unbounded state): a plan and
its tokens expire :data:`PLAN_TTL_S` after planning; a principal keeps at most
:data:`PLANS_PER_PRINCIPAL` live plans (planning another forgets their oldest, since
PyIceberg never cancels); a plan holds at most :data:`MAX_PLAN_FILES` data files (400
beyond). Tokens and plan ids are random (``secrets``), bound to the table and the principal
who planned: any other table, principal, an expired or a cancelled one is 404
``NoSuchPlanTaskException`` / ``NoSuchPlanIdException``, the same answer as for a token that
never existed. The roles are ``loadTable``'s: viewer on the table.

``start-snapshot-id``/``end-snapshot-id`` plan an incremental append scan as Iceberg Java's
(:func:`appended_tasks`). Not served yet: filters on transforms. Icecore binds a filter to
the snapshot's own schema whatever ``use-snapshot-schema`` says.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from icecore.catalog.base import TableIdentifier
from icecore.catalog.plan_store import (
    PlanRecord,
    PlanStateUnavailable,
    PlanStore,
    plan_key,
    plan_store_for,
    task_key,
)
from icecore.catalog.report_store import (
    MAX_REPORT_BYTES,
    PLAN_ID_KEY,
    SERVED_PLAN_KEY,
    InvalidReport,
    KeptReport,
    ReportsUnavailable,
    validate_report,
)
from icecore.errors import FilterError, Forbidden, InvalidMetadata, NotFound, Unsupported
from icecore.expressions.json_expr import decode_literals, expression_from_json
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import PartitionSpec
from icecore.row_access import masked_ids
from icecore.scan.task import PlannedDataFile
from icecore.schema import Schema
from icecore.server.errors import RestError, bad_request, no_such_table
from icecore.table_data import access_of
from icecore.values import to_json
from icecore.version import __version__

log = logging.getLogger("icecore.server")

if TYPE_CHECKING:
    from icecore.metadata import Snapshot
    from icecore.scan.planner import Plan
    from icecore.server.app import Call, CatalogService, Endpoint
    from icecore.table import Table


def _env_int(name: str, default: int, *, zero: bool = False) -> int:
    """A positive integer setting (``zero``: 0 allowed too); anything else is the default."""
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 or (zero and value == 0) else default


PAGE_FILES = _env_int("ICECORE_PLAN_PAGE_FILES", 1000)
"""Data files one answer carries; a bigger plan is paged through plan tasks."""

PLAN_TTL_S = _env_int("ICECORE_PLAN_TTL_S", 900)
"""Seconds a plan, its id and its tokens are served after planning."""

PLANS_PER_PRINCIPAL = _env_int("ICECORE_PLANS_PER_PRINCIPAL", 32)
"""Live plans one principal may hold; planning one more forgets the oldest."""

MAX_PLAN_FILES = _env_int("ICECORE_PLAN_MAX_FILES", 2_000_000)
"""Data files one served plan may have (400 beyond: narrow the filter)."""
PLAN_WAIT_S = _env_int("ICECORE_PLAN_WAIT_S", 20, zero=True)
"""How long planTableScan waits for a plan before answering ``submitted`` (it goes on)."""


def keep_alive(store: PlanStore, key: str, made: threading.Event, ttl: float = 0) -> None:
    """Keep a plan's submitted record alive while the plan is made, until ``made`` is set.

    The record's TTL (:data:`PLAN_TTL_S`) is what a client waits within: it must run from
    when the plan is answered, not from submission, or a plan taking longer than the TTL
    (a million files, a slow object store) is found gone when made and answered
    ``cancelled``, and any other record put meanwhile purges it as expired. So its expiry is
    pushed back every third of the TTL. A plan cancelled (or its record gone) meanwhile is
    not brought back (:meth:`PlanStore.touch`), and this stops; a store that cannot be
    reached is tried again at the next beat.
    """
    ttl = ttl or PLAN_TTL_S
    while not made.wait(ttl / 3):
        try:
            if not store.touch(key, time.time() + ttl):
                return
        except PlanStateUnavailable as e:
            log.warning("%s", e)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A checked plan request: what planning it needs."""

    identifier: TableIdentifier
    body: Mapping[str, Any]
    table: Table
    scan: Any
    schema: Schema
    filter_expr: Any
    case_sensitive: bool
    start: int | None
    end: int | None
    stats: frozenset[int]
    hidden: frozenset[int]


_REQUEST_FIELDS = frozenset(
    {
        "snapshot-id",
        "select",
        "filter",
        "case-sensitive",
        "use-snapshot-schema",
        "start-snapshot-id",
        "end-snapshot-id",
        "stats-fields",
        "min-rows-requested",
    }
)
_MAX_NAMES = 10_000
_CONTENT = {
    DataFileContent.DATA: "data",
    DataFileContent.POSITION_DELETES: "position-deletes",
    DataFileContent.EQUALITY_DELETES: "equality-deletes",
}


def no_such_plan_task() -> RestError:
    """The 404 for a plan task that does not exist, expired, or is someone else's."""
    return RestError(404, "NoSuchPlanTaskException", "The plan task does not exist.")


def no_such_plan_id() -> RestError:
    """The 404 for a plan id that does not exist, expired, was cancelled or is someone else's."""
    return RestError(404, "NoSuchPlanIdException", "The plan does not exist.")


def _hex(b: bytes | None) -> str | None:
    return bytes(b).hex().upper() if b is not None else None


def _count_map(values: Mapping[int, int] | None, ids: frozenset[int]) -> dict[str, Any] | None:
    if values is None:
        return None
    keys = sorted(k for k in values if k in ids)
    return {"keys": keys, "values": [int(values[k]) for k in keys]} if keys else None


def _bound_map(values: Mapping[int, bytes] | None, ids: frozenset[int]) -> dict[str, Any] | None:
    if values is None:
        return None
    keys = sorted(k for k in values if k in ids)
    return {"keys": keys, "values": [_hex(values[k]) for k in keys]} if keys else None


def partition_layout(spec: PartitionSpec | None, schema: Schema) -> list[tuple[int, int, Any]]:
    """``(partition field id, source column id, result type)`` of each field of ``spec``."""
    if spec is None:
        return []
    types = {p.field_id: p.field_type for p in spec.partition_type(schema).fields}
    return [(f.field_id, f.source_id, types[f.field_id]) for f in spec.fields]


def content_file_json(
    f: DataFile,
    layout: Sequence[tuple[int, int, Any]],
    stats_ids: frozenset[int],
    hidden: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """The spec's ``ContentFile`` JSON (``DataFile``, ``PositionDeleteFile``, ...) of ``f``.

    ``layout``: :func:`partition_layout` of the file's spec; ``hidden``: masked column ids,
    whose partition values are served as null.
    """
    partition: list[Any] = []
    for field_id, source_id, field_type in layout:
        value = None if source_id in hidden else f.partition.get(field_id)
        partition.append(to_json(field_type, value) if value is not None else None)
    out: dict[str, Any] = {
        "content": _CONTENT[DataFileContent(f.content)],
        "file-path": f.file_path,
        "file-format": str(f.file_format).lower(),
        "spec-id": f.spec_id,
        "partition": partition,
        "file-size-in-bytes": f.file_size_in_bytes,
        "record-count": f.record_count,
    }
    if isinstance(f, PlannedDataFile):
        # A view: its other fields are decoded from the manifest, and decoding them for a
        # whole plan holds every file's metrics until the plan is done (~3.8 KB per file),
        # so a plan that asks for no stats gets the fields the plan keeps (the spec's
        # required ones); ``stats-fields`` gives complete files (:func:`_complete`).
        return out
    optional: dict[str, Any] = {
        "key-metadata": _hex(f.key_metadata),
        "split-offsets": list(f.split_offsets) if f.split_offsets is not None else None,
        "sort-order-id": f.sort_order_id,
    }
    if f.content == DataFileContent.DATA:
        optional["first-row-id"] = f.first_row_id
        if stats_ids:
            optional.update(
                {
                    "column-sizes": _count_map(f.column_sizes, stats_ids),
                    "value-counts": _count_map(f.value_counts, stats_ids),
                    "null-value-counts": _count_map(f.null_value_counts, stats_ids),
                    "nan-value-counts": _count_map(f.nan_value_counts, stats_ids),
                    "lower-bounds": _bound_map(f.lower_bounds, stats_ids),
                    "upper-bounds": _bound_map(f.upper_bounds, stats_ids),
                }
            )
    elif f.content == DataFileContent.POSITION_DELETES:
        optional["referenced-data-file"] = f.referenced_data_file
        optional["content-offset"] = f.content_offset
        optional["content-size-in-bytes"] = f.content_size_in_bytes
    else:
        optional["equality-ids"] = list(f.equality_ids) if f.equality_ids is not None else None
    out.update((k, v) for k, v in optional.items() if v is not None)
    return out


def _complete(task: Any) -> DataFile:
    """The task's data file with every field, built once (for a plan asking for stats).

    A planned task's ``data_file`` is a view that decodes the manifest again for each field
    it does not keep (:class:`icecore.scan.task.PlannedDataFile`); the JSON reads a dozen,
    so the complete file is asked of the task's source once, as the view itself does.
    """
    source = getattr(task, "_source", None)
    if source is not None:
        return source.data_file(task._position)  # type: ignore[no-any-return]
    return task.data_file  # type: ignore[no-any-return]


def scan_tasks_json(
    tasks: Sequence[Any],
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
    stats: frozenset[int],
    hidden: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """The spec's ``ScanTasks`` for ``tasks``: each distinct delete file listed once.

    ``hidden``: ids of columns masked for the principal; partition values derived from them
    are served as null (as :meth:`icecore.scan.planner.Plan.files` shows them).
    """
    deletes: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    layouts: dict[int, list[tuple[int, int, Any]]] = {}

    def layout(spec_id: int) -> list[tuple[int, int, Any]]:
        found = layouts.get(spec_id)
        if found is None:
            found = layouts[spec_id] = partition_layout(specs.get(spec_id), schema)
        return found

    file_tasks: list[dict[str, Any]] = []
    for task in tasks:
        data = _complete(task) if stats else task.data_file
        entry: dict[str, Any] = {
            "data-file": content_file_json(data, layout(data.spec_id), stats, hidden)
        }
        refs = []
        for d in task.delete_files:
            at = index.get(d.file_path)
            if at is None:
                at = index[d.file_path] = len(deletes)
                deletes.append(content_file_json(d, layout(d.spec_id), frozenset(), hidden))
            refs.append(at)
        if refs:
            entry["delete-file-references"] = refs
        file_tasks.append(entry)
    return {"delete-files": deletes, "file-scan-tasks": file_tasks}


MAX_APPEND_SNAPSHOTS = 1000
"""Append snapshots one incremental scan may span (400 beyond: narrow the range)."""


@dataclass(frozen=True)
class _AppendedTask:
    """A file an incremental append scan plans: no deletes, as Iceberg Java's."""

    data_file: DataFile
    delete_files: tuple[DataFile, ...] = ()


def appended_tasks(
    table: Table, start: int | None, end: int, filter_expr: Any, case_sensitive: bool
) -> list[_AppendedTask]:
    """The files an incremental append scan from ``start`` (exclusive) to ``end`` plans.

    As Iceberg Java's ``BaseIncrementalAppendScan``: the ``append`` snapshots after ``start``
    up to ``end`` (``end``'s ancestors; ``start`` must be one, or None for all of them), and
    of each the data files it ADDED that the filter does not prune (partition and metrics,
    as a scan of that snapshot prunes them), without delete files. A file added and later
    removed within the range is still planned, as Java plans it.

    Raises:
        RestError: 400 when a snapshot is unknown, ``start`` is not an ancestor of ``end``,
            or the range spans more than :data:`MAX_APPEND_SNAPSHOTS` appends.
    """
    metadata = table.metadata
    chain = []
    current = metadata.snapshot_by_id(end)
    if current is None:
        raise bad_request(f"Snapshot {end} is not in the table.")
    while current is not None and current.snapshot_id != start:
        chain.append(current)
        parent = current.parent_snapshot_id
        current = metadata.snapshot_by_id(parent) if parent is not None else None
    if start is not None and current is None:
        raise bad_request(f"Snapshot {start} is not an ancestor of snapshot {end}.")
    appends = [
        s
        for s in reversed(chain)
        if s.summary is not None and s.summary.get("operation") == "append"
    ]
    if len(appends) > MAX_APPEND_SNAPSHOTS:
        raise bad_request(
            f"The range spans {len(appends):,} appends, more than the {MAX_APPEND_SNAPSHOTS:,} "
            "an incremental scan may; narrow it."
        )
    found: list[_AppendedTask] = []
    for snapshot in appends:
        added = _added_paths(table, snapshot)
        scan = table.scan(
            filter_expr, snapshot_id=snapshot.snapshot_id, case_sensitive=case_sensitive
        )
        found += [_AppendedTask(t.data_file) for t in scan.plan().tasks if t.file_path in added]
    return found


def _added_paths(table: Table, snapshot: Snapshot) -> frozenset[str]:
    """Data files ``snapshot`` itself ADDED (from the manifests it wrote)."""
    from icecore.manifest import ManifestContent, ManifestEntryStatus
    from icecore.manifest_arrow import read_manifest

    metadata = table.metadata
    schema = metadata.schema_by_id(snapshot.schema_id) if snapshot.schema_id is not None else None
    schema = schema or metadata.current_schema()
    added: set[str] = set()
    for manifest in table.manifests(snapshot):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        if manifest.content is ManifestContent.DELETES:
            continue
        spec = metadata.spec_by_id(manifest.partition_spec_id)
        if spec is None:
            raise NotFound(f"Partition spec {manifest.partition_spec_id} is not defined.")
        for entry in read_manifest(table.io, manifest, schema, spec, metadata.format_version):
            if (
                entry.snapshot_id == snapshot.snapshot_id
                and entry.status is ManifestEntryStatus.ADDED
            ):
                added.add(entry.data_file.file_path)
    return frozenset(added)


class PlanningRoutes:
    """The 4 scan-planning routes over a :class:`~icecore.server.app.CatalogService`."""

    def __init__(self, service: CatalogService) -> None:
        self.service = service
        self._store: PlanStore | None = None

    @property
    def store(self) -> PlanStore:
        """Where plans are kept (:func:`icecore.catalog.plan_store.plan_store_for`), made once."""
        if self._store is None:
            self._store = plan_store_for(self.service.catalog)
        return self._store

    def endpoints(self) -> list[Endpoint]:
        """planTableScan, fetchPlanningResult, cancelPlanning, fetchScanTasks."""
        from icecore.server.app import Endpoint

        table = "/v1/namespaces/{namespace}/tables/{table}"
        return [
            Endpoint("POST", table + "/plan", self.plan_table_scan),
            Endpoint("GET", table + "/plan/{plan_id}", self.fetch_planning_result),
            Endpoint("DELETE", table + "/plan/{plan_id}", self.cancel_planning),
            Endpoint("POST", table + "/tasks", self.fetch_scan_tasks),
        ]

    # Helpers ---------------------------------------------------------------------------------

    def _identifier(self, call: Call) -> TableIdentifier:
        identifier = self.service._table(call)
        self.service._require_viewer(call, identifier)
        return identifier

    @staticmethod
    def _who(call: Call) -> str:
        p = call.principal
        return f"{p.source}:{p.subject}"

    def _record(self, call: Call, identifier: TableIdentifier, key: str) -> PlanRecord | None:
        """The record under ``key`` if it belongs to this table and principal."""
        record = self.store.get(key)
        if record is None or record.table != str(identifier) or record.principal != self._who(call):
            return None
        return record

    # Handlers --------------------------------------------------------------------------------

    def plan_table_scan(self, call: Call) -> Any:
        """``POST .../plan``: ``completed`` (tasks or plan tasks), or ``submitted`` if long.

        The request is checked here (its 400s and 403s answered at once); the plan is then made
        on a thread of its own, waited for up to :data:`PLAN_WAIT_S`. A plan done by then is
        answered ``completed``; a longer one ``submitted`` (the spec's ``AsyncPlanningResult``)
        and goes on: ``fetchPlanningResult`` answers ``submitted`` until it is kept, then the
        completed plan (or ``failed`` with the error). Its record is written first, so another
        ``serve-rest`` process over the same catalog answers the same. A plan cancelled (or
        expired) while it was being made is dropped when it ends. The principal's oldest
        plans beyond :data:`PLANS_PER_PRINCIPAL` are forgotten when a new one is submitted.
        """
        prepared = self._prepare(call)
        who, name = self._who(call), str(prepared.identifier)
        live = self.store.live_plans(who)
        for old, _ in live[: max(0, len(live) - PLANS_PER_PRINCIPAL + 1)]:
            self.store.drop_plan(old)
        plan_id = secrets.token_urlsafe(24)
        submitted = {"status": "submitted", "plan-id": plan_id}
        self.store.put(
            [PlanRecord(plan_key(plan_id), plan_id, name, who, time.time() + PLAN_TTL_S, submitted)]
        )
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            made = threading.Event()
            threading.Thread(
                target=keep_alive,
                args=(self.store, plan_key(plan_id), made),
                name="icecore-plan-alive",
                daemon=True,
            ).start()
            try:
                outcome["result"] = self._make(call, prepared, plan_id)
            except BaseException as e:  # noqa: BLE001 - kept as the plan's failure, below
                outcome["error"] = e
                self._failed(plan_id, name, who, e)
            finally:
                made.set()
                done.set()

        threading.Thread(target=work, name="icecore-plan", daemon=True).start()
        if PLAN_WAIT_S <= 0 or not done.wait(PLAN_WAIT_S):  # 0: every plan is submitted
            return submitted
        if "error" in outcome:
            self.store.drop_plan(plan_id)  # answered now: nothing to fetch later
            raise outcome["error"]
        return outcome["result"]

    def _failed(self, plan_id: str, name: str, who: str, error: BaseException) -> None:
        """Keep a background plan's failure for fetchPlanningResult (``FailedPlanningResult``)."""
        if isinstance(error, RestError):
            code, kind, message = error.code, error.type, error.message
        elif isinstance(error, Forbidden):
            code, kind, message = 403, "ForbiddenException", str(error)
        else:
            log.exception("A served plan failed", exc_info=error)
            code, kind = 500, "InternalServerError"
            message = "The plan failed unexpectedly; the error is in the server's log."
        failed = {"status": "failed", "error": {"message": message, "type": kind, "code": code}}
        # Kept only if the plan is still there (cancelled or expired meanwhile: stays so).
        self.store.replace_live(
            PlanRecord(plan_key(plan_id), plan_id, name, who, time.time() + PLAN_TTL_S, failed)
        )

    def _prepare(self, call: Call) -> _Prepared:
        """A plan request, checked: every 400 and 403 it earns is raised here."""
        identifier = self._identifier(call)
        body = call.body if call.body is not None else {}
        if not isinstance(body, Mapping):
            raise bad_request("A plan request must be a JSON object.")
        unknown = sorted(str(k) for k in body if k not in _REQUEST_FIELDS)
        if unknown:
            raise bad_request(f"A plan request has no field {unknown[0][:80]!r}.")
        snapshot_id = _optional_int(body, "snapshot-id")
        start = _optional_int(body, "start-snapshot-id")
        end = _optional_int(body, "end-snapshot-id")
        if start is not None and end is None:
            raise bad_request("'start-snapshot-id' needs an 'end-snapshot-id'.")
        if end is not None and snapshot_id is not None:
            raise bad_request("Give 'snapshot-id' or an incremental range, not both.")
        _optional_int(body, "min-rows-requested")
        case_sensitive = _flag(body, "case-sensitive", True)
        _flag(body, "use-snapshot-schema", False)
        try:
            # Loaded as the principal sees it: a filter on a column masked for them is
            # refused (403) by the planner, since the files it keeps would reveal values.
            table: Table = self.service._as(call).load_table(identifier)
        except NotFound:
            raise no_such_table(identifier) from None
        try:
            scan = table.scan(snapshot_id=snapshot_id or end, case_sensitive=case_sensitive)
        except NotFound as e:
            raise bad_request(str(e)) from None
        schema = scan.schema
        try:
            filter_expr = expression_from_json(body.get("filter"))
            filter_expr = decode_literals(filter_expr, schema, case_sensitive)
            _columns(schema, body.get("select"), "select", case_sensitive)
            stats = frozenset(
                _columns(schema, body.get("stats-fields"), "stats-fields", case_sensitive)
            )
            scan = table.scan(
                filter_expr,
                snapshot_id=snapshot_id,
                case_sensitive=case_sensitive,
                column_stats=bool(stats),  # every file's maps are served: decoded at once
            )
        except (FilterError, Unsupported) as e:
            raise bad_request(str(e)) from None
        hidden = masked_ids(schema, access_of(table))
        if stats & hidden:
            name = schema.find_column_name(min(stats & hidden))
            raise Forbidden(
                f"Column {name} is masked for you on {identifier}, so its statistics are not "
                "served; ask for the statistics of other columns."
            )
        return _Prepared(
            identifier, body, table, scan, schema, filter_expr, case_sensitive, start, end, stats,
            hidden,
        )  # fmt: skip

    def _make(self, call: Call, p: _Prepared, plan_id: str) -> dict[str, Any]:
        """Plan, keep the plan and its pages under ``plan_id``, and report it (see above)."""
        began = time.perf_counter_ns()
        plan = None
        if p.end is not None:
            tasks: Sequence[Any] = appended_tasks(
                p.table, p.start, p.end, p.filter_expr, p.case_sensitive
            )
        else:
            plan = p.scan.plan()
            tasks = plan.tasks
        if len(tasks) > MAX_PLAN_FILES:
            raise bad_request(
                f"The plan has {len(tasks):,} data files, more than the {MAX_PLAN_FILES:,} a "
                "served plan may have; narrow the filter."
            )
        specs = p.table.metadata.specs_by_id()
        result = self._keep(call, p.identifier, plan_id, tasks, specs, p.schema, p.stats, p.hidden)
        if plan is not None:
            elapsed = time.perf_counter_ns() - began
            self._report(call, p.identifier, p.body, plan, p.schema, elapsed, plan_id)
        return result

    def _report(
        self,
        call: Call,
        identifier: TableIdentifier,
        body: Mapping[str, Any],
        plan: Plan,
        schema: Schema,
        planning_ns: int,
        plan_id: str,
    ) -> None:
        """Keep a served plan as a ScanReport, its filter with the values the client sent.

        Engines' own reports mask their filters' literals (Java's ``(3-digit-int)``); a plan
        this server made knows them, so the workload (DESIGN.md "Workload") and ``icecore
        whatif --since`` can use its filter as it was. Marked by the ``icecore.served-plan``
        metadata key; a store that cannot be written is logged, as for ``/metrics``.
        """
        reports = self.service.reports
        snapshot_id = plan.report.snapshot_id
        if reports is None or snapshot_id is None:
            return
        counted = plan.report
        selected = body.get("select")
        names = (
            [str(n) for n in selected if isinstance(n, str)]
            if isinstance(selected, list)
            else [f.name for f in schema.fields]
        )
        ids = [i for i in (schema.find_id_by_name(n, False) for n in names) if i is not None]

        def counter(value: int) -> dict[str, Any]:
            return {"unit": "count", "value": int(value)}

        report = {
            "report-type": "scan-report",
            "table-name": str(identifier),
            "snapshot-id": snapshot_id,
            "filter": body.get("filter", True),
            "schema-id": int(schema.schema_id),
            "projected-field-ids": ids,
            "projected-field-names": names[: len(ids)],
            "metrics": {
                "total-planning-duration": {
                    "count": 1,
                    "time-unit": "nanoseconds",
                    "total-duration": int(planning_ns),
                },
                "result-data-files": counter(len(plan.tasks)),
                "result-delete-files": counter(len(plan.delete_files)),
                "total-data-manifests": counter(counted.data_manifests),
                "skipped-data-manifests": counter(counted.data_manifests_pruned),
                "skipped-data-files": counter(counted.data_files - counted.data_files_planned),
                "total-file-size-in-bytes": counter(sum(t.file_size_in_bytes for t in plan.tasks)),
            },
            "metadata": {
                "engine-name": "icecore",
                "engine-version": __version__,
                SERVED_PLAN_KEY: "true",
                PLAN_ID_KEY: plan_id,
            },
        }
        principal = call.principal
        try:
            # Kept as /metrics keeps what clients post: a filter deeper or bigger than a
            # report may be (a plan request allows more) is not kept; the plan stands.
            if len(json.dumps(report, separators=(",", ":"))) > MAX_REPORT_BYTES:
                raise InvalidReport(f"the report is over {MAX_REPORT_BYTES:,} bytes")
            kept = KeptReport(
                time_ms=time.time_ns() // 1_000_000,
                table=str(identifier),
                principal=None if principal.source == "anonymous" else principal.display,
                report=validate_report(report),
            )
            reports.append(kept)
        except InvalidReport as e:
            log.info("A served plan of %s is not kept as a report: %s.", identifier, e)
        except ReportsUnavailable as e:
            log.warning("%s", e)

    def _keep(
        self,
        call: Call,
        identifier: TableIdentifier,
        plan_id: str,
        tasks: Sequence[Any],
        specs: Mapping[int, PartitionSpec],
        schema: Schema,
        stats: frozenset[int],
        hidden: frozenset[int],
    ) -> dict[str, Any]:
        """Keep the plan (and its pages) under its submitted record (dropped if cancelled)."""
        who, name = self._who(call), str(identifier)
        expires = time.time() + PLAN_TTL_S
        result: dict[str, Any] = {"status": "completed", "plan-id": plan_id}
        if len(tasks) <= PAGE_FILES:
            result.update(scan_tasks_json(tasks, specs, schema, stats, hidden))
        else:
            tokens = []
            for start in range(0, len(tasks), PAGE_FILES):
                token = secrets.token_urlsafe(32)
                page = scan_tasks_json(
                    tasks[start : start + PAGE_FILES], specs, schema, stats, hidden
                )
                # One page at a time: the server holds one page of JSON, never the plan's.
                self.store.put([PlanRecord(task_key(token), plan_id, name, who, expires, page)])
                tokens.append(token)
            result["plan-tasks"] = tokens
        kept = PlanRecord(plan_key(plan_id), plan_id, name, who, expires, result)
        if not self.store.replace_live(kept):  # cancelled (or expired) meanwhile: stays so
            self.store.drop_plan(plan_id)
            return {"status": "cancelled"}
        return result

    def fetch_planning_result(self, call: Call) -> Any:
        """``GET .../plan/{plan-id}``: ``submitted`` while it is made, then the plan.

        As ``FetchPlanningResult``: ``submitted`` alone (``EmptyPlanningResult``), a failed
        plan with its error, a completed plan as it was answered, while it lives.
        """
        identifier = self._identifier(call)
        record = self._record(call, identifier, plan_key(call.params["plan_id"][:200]))
        if record is None:
            raise no_such_plan_id()
        if record.payload.get("status") == "submitted":
            return {"status": "submitted"}
        return record.payload

    def cancel_planning(self, call: Call) -> Any:
        """``DELETE .../plan/{plan-id}``: forget the plan and its tokens (204)."""
        identifier = self._identifier(call)
        record = self._record(call, identifier, plan_key(call.params["plan_id"][:200]))
        if record is None:
            raise no_such_plan_id()
        self.store.drop_plan(record.plan_id)
        return Response(status_code=204)

    def fetch_scan_tasks(self, call: Call) -> Any:
        """``POST .../tasks`` (``FetchScanTasksRequest``): the page a plan-task token names."""
        identifier = self._identifier(call)
        body = call.body
        token = body.get("plan-task") if isinstance(body, Mapping) else None
        if not isinstance(token, str) or not token or len(token) > 200:
            raise bad_request("A fetch-scan-tasks request needs a 'plan-task' string.")
        record = self._record(call, identifier, task_key(token))
        if record is None:
            raise no_such_plan_task()
        return record.payload


def _optional_int(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"'{key}' must be an integer.")
    return value


def _flag(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if not isinstance(value, bool):
        raise bad_request(f"'{key}' must be true or false.")
    return value


def _columns(schema: Schema, names: Any, what: str, case_sensitive: bool) -> list[int]:
    """The field ids of a request's column list; a 400 (FilterError) for an unknown name."""
    if names is None:
        return []
    if not isinstance(names, list) or len(names) > _MAX_NAMES:
        raise FilterError(f"'{what}' must be a list of at most {_MAX_NAMES:,} column names.")
    ids = []
    for name in names:
        if not isinstance(name, str):
            raise FilterError(f"'{what}' must list column names as strings.")
        try:
            fid = schema.find_id_by_name(name, case_sensitive)
        except InvalidMetadata as e:
            raise FilterError(str(e)) from None
        if fid is None:
            raise FilterError(f"Column {name[:200]!r} of '{what}' is not in the table's schema.")
        ids.append(fid)
    return ids


__all__ = [
    "PlanningRoutes",
    "appended_tasks",
    "content_file_json",
    "partition_layout",
    "scan_tasks_json",
]
