"""``icecore``: JSON on stdout; on error one sentence on stderr and exit 1.

Commands (docs/ARCHITECTURE.md "Contracts"): ``tables CATALOG``, ``history TABLE``, ``inspect TABLE
KIND``, ``plan TABLE``, ``scan TABLE --output F``, ``diff TABLE FROM TO``, ``changelog TABLE FROM
[TO]``, ``sql TABLE QUERY``, ``evolve TABLE --schema-change ... | --spec-change ...
[--dry-run]``, ``ref TABLE rollback|set-current|cherry-pick|fast-forward|create-branch|create-tag|
rename|drop|publish ... [--dry-run]``, ``audit CATALOG [--table ns.t] [--principal P]
[--since ISO8601]`` (evolve and ref record their commits in the catalog's audit log as the OS
user), ``views CATALOG``, ``view CATALOG::ns.view``, ``whatif TABLE --spec-change ... |
--sort-change ... --filter SQL``. TABLE is ``CATALOG::ns.table``, a table directory, or a
metadata.json path. ``python -m icecore`` is the same command; ``icecore app`` serves the
explorer (:mod:`icecore.launch`).

Each command imports the features it runs (planner, readers, SQL, exports, audit, evolution)
when it runs, so a metadata command on a small table loads neither them nor pyarrow and numpy
under them (issue 32 item 4; PERFORMANCE.md "Targets": a CLI call on a small table < 0.5 s).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from icecore.access import os_principal
from icecore.catalog import load_catalog, load_table
from icecore.config import read_only
from icecore.errors import IcecoreError, NotFound, ValidationError
from icecore.history import parse_timestamp_ms
from icecore.launch import (
    CATALOG_ENV,
    DEFAULT_ADDRESS,
    DEFAULT_PORT,
    app_command,
    require_extra,
    serve_app,
)
from icecore.point_in_time import At
from icecore.row_counts import rows_between, snapshot_rows
from icecore.table import Table, load_table_at
from icecore.table_data import TableData
from icecore.version import __version__

if TYPE_CHECKING:
    from icecore.catalog.report_store import KeptReport
    from icecore.inspect.kinds import MetadataTable
    from icecore.refs.manage import ManageSnapshots
    from icecore.scan.planner import Plan
    from icecore.server.limits import HttpLimits

Command = Callable[[argparse.Namespace], Any]


def cmd_tables(args: argparse.Namespace) -> list[dict[str, str]]:
    """Every table of a catalog with its current metadata location."""
    catalog = load_catalog(args.catalog)
    return [
        {
            "namespace": ".".join(ident.namespace),
            "table": ident.name,
            "identifier": str(ident),
            "metadata_location": catalog.metadata_location(ident),
        }
        for ident in catalog.list_tables()
    ]


def cmd_alerts(args: argparse.Namespace) -> dict[str, Any]:
    """Send ``[alerts]``'s webhook what is new in a catalog (:mod:`icecore.alert_rules`).

    Exit :data:`ALERTS_UNDELIVERED_EXIT` (3) when an alert could not be delivered after its
    retries (the JSON, ``failed`` included, is still printed; it is sent again next run).
    """
    from icecore.alert_rules import run_alerts
    from icecore.alerts import alert_config

    result = run_alerts(
        load_catalog(args.catalog),
        alert_config(),
        catalog_name=args.catalog,
        dry_run=args.dry_run,
    )
    if result.get("failed"):
        raise AlertsUndelivered(result)
    return result


def cmd_maintain(args: argparse.Namespace) -> Any:
    """Run the jobs the policies say are due (DESIGN.md "Catalog health", maintenance).

    One round: the JSON list (one object per table) is the answer, exit 1 when a job failed
    or a table could not be judged. ``--every``: a round, then a wait, again and again; each
    round's list is printed as one line as it ends, and Ctrl-C (between rounds or during one:
    the jobs' processes get it too, and a stopped job commits nothing) ends the command with
    ``{"rounds", "failed_rounds"}``, exit 1 when a round failed.
    """
    from icecore import maintenance_policies as mp

    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1.")
    every_ms = mp.parse_duration(args.every, "--every") if args.every else None
    policies = mp.load_policies()
    catalog = load_catalog(args.catalog)

    def one_round() -> list[dict[str, Any]]:
        plans = mp.evaluate(catalog, policies)
        if args.dry_run:
            return [p.to_dict() for p in plans]
        return mp.run_due(
            catalog, args.catalog, plans, master=args.master, concurrency=args.concurrency
        )

    if every_ms is None:
        results = one_round()
        if mp.failed(results):
            from icecore.alerts import flush

            flush(30.0)  # a failed job's alert goes out before the command ends (bounded)
            raise MaintainFailed(results)
        return results
    rounds = failed_rounds = 0
    try:
        while True:
            results = one_round()
            rounds += 1
            failed_rounds += int(mp.failed(results))
            json.dump(results, sys.stdout, default=str, ensure_ascii=False)
            sys.stdout.write("\n")
            sys.stdout.flush()
            time.sleep(every_ms / 1000)
    except KeyboardInterrupt:
        summary = {"rounds": rounds, "failed_rounds": failed_rounds}
        if failed_rounds:
            raise MaintainFailed(summary) from None
        return summary


class ResultsFailed(IcecoreError):
    """A command ran but part of it failed: its JSON is printed, then exit :attr:`exit_code`."""

    exit_code = 1

    def __init__(self, message: str, results: Any) -> None:
        super().__init__(message)
        self.results = results


class MaintainFailed(ResultsFailed):
    """A policy job failed or a table could not be judged: the JSON is printed, then exit 1."""

    def __init__(self, results: Any) -> None:
        super().__init__(
            "A maintenance job failed or a table could not be judged; see the JSON.", results
        )


ALERTS_UNDELIVERED_EXIT = 3
"""``icecore alerts``'s exit code when an alert was not delivered (1 stays "could not run")."""


class AlertsUndelivered(ResultsFailed):
    """An alert was not delivered after its retries: the JSON (its ``failed``) is printed, exit 3.

    The alert is not remembered as sent, so the next run sends it again.
    """

    exit_code = ALERTS_UNDELIVERED_EXIT

    def __init__(self, results: dict[str, Any]) -> None:
        super().__init__(
            f"{len(results['failed'])} alert(s) could not be delivered to the webhook; "
            "they are sent again on the next run.",
            results,
        )


def cmd_views(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every view of a catalog: its current version id and SQL dialects (DESIGN.md "Views")."""
    from icecore.view_lineage import view_summary

    catalog = load_catalog(args.catalog)
    out: list[dict[str, Any]] = []
    for ident in catalog.list_views():
        try:
            out.append(view_summary(catalog.load_view(ident)))
        except IcecoreError as e:  # one unreadable view does not hide the others
            out.append({"view": str(ident), "error": str(e)})
    return out


def cmd_view(args: argparse.Namespace) -> dict[str, Any]:
    """One view (``CATALOG::ns.view``): versions, SQL per dialect, schema, what it reads."""
    from icecore.catalog import TABLE_SEPARATOR
    from icecore.view_lineage import view_detail

    if TABLE_SEPARATOR not in args.view:
        raise ValidationError(f"Name a view as CATALOG::namespace.view, not {args.view[:200]!r}.")
    uri, name = args.view.rsplit(TABLE_SEPARATOR, 1)
    catalog = load_catalog(uri)
    return view_detail(catalog.load_view(name), catalog)


def cmd_health(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every table of a catalog at a glance, with a score (DESIGN.md "Catalog health")."""
    from icecore.catalog_health import catalog_health

    return catalog_health(load_catalog(args.catalog), files_bound=args.files_bound)


class UsageError(Exception):
    """The command line itself is wrong (unknown command, missing argument)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one sentence instead of usage text and exit 2.

    ``epilog_maker``, when set, makes the epilog when help is first shown (the ``inspect``
    kinds come from a registry that loads pyarrow: see the module's docstring).
    """

    epilog_maker: Callable[[], str] | None = None

    def error(self, message: str) -> Any:
        raise UsageError(f"{message} (see icecore --help)")

    def format_help(self) -> str:
        """The help text, with the epilog made first when ``epilog_maker`` is set."""
        if self.epilog_maker is not None:
            self.epilog, self.epilog_maker = self.epilog_maker(), None
        return super().format_help()


def _metadata_tables() -> Mapping[str, MetadataTable]:
    """The registry of metadata tables (:mod:`icecore.inspect.kinds`), imported when asked."""
    from icecore.inspect.kinds import METADATA_TABLES

    return METADATA_TABLES


class _MetadataKinds:
    """The ``inspect`` command's choices: the registry's kinds, read only when checked.

    argparse asks a choice container only ``in`` (checking a value) and iteration (naming
    the choices in its error), so other commands never import the registry.
    """

    def __contains__(self, kind: object) -> bool:
        return kind in _metadata_tables()

    def __iter__(self) -> Iterator[str]:
        return iter(_metadata_tables())


def _inspect_epilog() -> str:
    """The ``inspect`` help's list of kinds, each with what one row of it is."""
    return "KIND, and what one row is:\n" + "\n".join(
        f"  {k:<22}{r.summary}" for k, r in _metadata_tables().items()
    )


_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(~?)([^`<]*?)\s*(?:<[^`>]*>)?`")
_LITERAL = re.compile(r"``(.+?)``|`([^`]+)`")


def _role_text(found: re.Match[str]) -> str:
    tilde, target = found.group(1), found.group(2)
    return target.rsplit(".", 1)[-1] if tilde else target


def plain(text: str) -> str:
    """Docstring text as plain text for ``--help``: no reStructuredText markup.

    ``:class:`~icecore.errors.CommitConflict``` becomes ``CommitConflict`` (the last part,
    as Sphinx shows a ``~`` reference), ``:func:`x``` becomes ``x``, and double or single
    backquotes around literals are dropped: a terminal shows them as noise.
    """
    return _LITERAL.sub(lambda m: m.group(1) or m.group(2), _ROLE.sub(_role_text, text))


SUMMARY_ITEMS = 5
"""Items of each long list that ``--summary`` keeps."""
_TOTALLED = re.compile(r"(count|bytes|size|rows|records|files|length)")


def summarize(value: Any, items: int = SUMMARY_ITEMS, top: bool = True) -> Any:
    """A command's JSON output made small: counts, totals and the first items of lists.

    One shape for every command (``--summary``): the output itself, when a list, and any
    list inside it longer than ``items`` become ``{"count": n, "totals": {...}, "first":
    [...]}``; ``totals`` sums, over all the list's objects, each numeric field whose name
    says it is an amount (``record_count``, ``file_size_in_bytes``, ``rows_added``...), and
    ``first`` holds the first ``items`` items, summarized the same way. Objects keep every
    key. A shorter list inside an object stays as it is.
    """
    if isinstance(value, dict):
        return {k: summarize(v, items, top=False) for k, v in value.items()}
    if not isinstance(value, list) or (not top and len(value) <= items):
        return value
    summary: dict[str, Any] = {"count": len(value)}
    objects = [v for v in value if isinstance(v, dict)]
    if objects:
        totals: dict[str, int | float] = {}
        for key in objects[0]:
            numbers = [o.get(key) for o in objects]
            if _TOTALLED.search(key) and all(
                isinstance(n, int | float) and not isinstance(n, bool) for n in numbers
            ):
                totals[key] = sum(numbers)  # type: ignore[arg-type]
        summary["totals"] = totals
    summary["first"] = [summarize(v, items, top=False) for v in value[:items]]
    return summary


def jsonable(value: Any) -> Any:
    """Arrow/Python values as JSON: bytes as hex, times as ISO-8601, containers recursively."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # Arrow maps arrive as lists of (key, value) pairs.
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): jsonable(v) for k, v in value}
        return [jsonable(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value


def cmd_history(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The table's snapshots in commit order, with lineage and the refs pointing at each.

    With each, its rows as a reader sees them (:mod:`icecore.row_counts`): ``rows_added``,
    ``rows_removed`` and ``rows_removed_by``, ``rows_live`` (Spark's ``count(*)`` there),
    ``rows_note`` and ``delete_files_added``; snapshots with live delete files are read.
    """
    table = load_table(args.table)
    refs_by_snapshot: dict[int, list[str]] = {}
    for name, ref in table.refs().items():
        refs_by_snapshot.setdefault(ref.snapshot_id, []).append(name)
    made_current = {h.snapshot_id: h for h in table.history()}
    ordered = sorted(table.snapshots(), key=lambda s: (s.timestamp_ms, s.sequence_number))
    counts = {c.snapshot_id: c for c in snapshot_rows(table, ordered)}
    rows = []
    for snapshot in ordered:
        entry = made_current.get(snapshot.snapshot_id)
        rows.append(
            {
                "snapshot_id": snapshot.snapshot_id,
                "parent_id": snapshot.parent_snapshot_id,
                "sequence_number": snapshot.sequence_number,
                "committed_at": dt.datetime.fromtimestamp(snapshot.timestamp_ms / 1000, dt.UTC),
                "operation": snapshot.operation,
                "is_current_ancestor": entry.is_current_ancestor if entry else False,
                "refs": sorted(refs_by_snapshot.get(snapshot.snapshot_id, [])),
                "schema_id": snapshot.schema_id,
                "summary": dict(snapshot.summary.properties) if snapshot.summary else {},
                **counts[snapshot.snapshot_id].to_dict(),
            }
        )
    if getattr(args, "metadata", False):
        rows = _with_metadata_events(table, rows)
    return [jsonable(r) for r in rows]


def _with_metadata_events(table: TableData, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The snapshot rows with the metadata log's events among them, in time order.

    An event row has ``time`` (ISO-8601), ``metadata_file``, ``kind`` (schema, spec,
    sort_order, properties, ref, location, format_version, snapshots, unreadable,
    not_read), ``changes`` (sentences) and ``details``; snapshot rows have no ``kind``.
    An event sorts after the snapshots committed at the same millisecond.
    """
    from icecore.metadata_events import metadata_events

    keyed: list[tuple[int, int, dict[str, Any]]] = [
        (int(r["committed_at"].timestamp() * 1000), 0, r) for r in rows
    ]
    for event in metadata_events(table):
        row = {"time": dt.datetime.fromtimestamp(event.timestamp_ms / 1000, dt.UTC)}
        keyed.append((event.timestamp_ms, 1, row | event.to_dict()))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [r for _, _, r in keyed]


def cmd_trend(args: argparse.Namespace) -> dict[str, Any]:
    """A branch's history as numbers per snapshot, and its regressions (:mod:`icecore.trend`)."""
    from icecore.trend import trend

    return jsonable(trend(load_table(args.table), args.branch).to_dict())


def cmd_retention(args: argparse.Namespace) -> dict[str, Any]:
    """Bytes and files each snapshot and ref alone keeps alive (:mod:`icecore.retention`)."""
    from icecore.retention import retention

    return jsonable(retention(load_table(args.table)).to_dict())


def cmd_inspect(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One metadata table (files, manifests, partitions, ...) as a JSON list of objects."""
    table = load_table(args.table)
    result = table.inspect(args.kind, at=_at(args))
    return [jsonable(row) for row in result.to_pylist()]


def cmd_diff(args: argparse.Namespace) -> dict[str, Any]:
    """Files, rows, partitions, schema and specs changed between two points.

    ``rows_added``/``rows_removed`` are rows as a reader sees them (deletes included, so
    ``rows_live_from + rows_added - rows_removed = rows_live_to``, Spark's counts);
    ``data_file_records_*`` are the record counts of the data files that appeared or went.
    """
    table = load_table(args.table)
    diff = table.diff(args.from_point, args.to_point)
    before = table.point(args.from_point) if args.from_point is not None else None
    rows = rows_between(table, before, table.point(diff.to_snapshot_id), diff.rows_added)
    answer = diff.to_dict() | {
        "rows_added": rows.added,
        "rows_removed": rows.removed,
        "rows_live_from": rows.live_from,
        "rows_live_to": rows.live_to,
        "rows_note": rows.note,
    }
    return jsonable(answer)  # type: ignore[no-any-return]


def _plan(args: argparse.Namespace) -> Plan:
    table = load_table(args.table)
    return table.scan(filter=args.filter, at=_at(args)).plan()


def cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    """What a filtered scan reads, with every pruned manifest and file and why."""
    plan = _plan(args)
    # Read from the plan's columns (plan.files()): no task or data file object per file.
    files = plan.files()
    paths = files.column("file_path").to_pylist()
    deletes = files.column("delete_files").combine_chunks()
    delete_paths = deletes.flatten().field("file_path").to_pylist()
    offsets = deletes.value_lengths().fill_null(0).to_pylist()
    tasks: list[dict[str, Any]] = []
    start = 0
    for path, count, n, residual in zip(
        paths,
        files.column("record_count").to_pylist(),
        offsets,
        files.column("residual").to_pylist(),
        strict=True,
    ):
        tasks.append(
            {
                "data_file": path,
                "record_count": count,
                "delete_files": delete_paths[start : start + n],
                "residual": residual,
            }
        )
        start += n
    return {
        "snapshot_id": plan.report.snapshot_id,
        "data_files": paths,
        "delete_files": plan.delete_files,
        "tasks": tasks,
        "report": plan.report.to_dict(max_items=None),
    }


def cmd_count(args: argparse.Namespace) -> dict[str, Any]:
    """Spark's ``count(*)`` for a snapshot and filter, from metadata where it decides it.

    Prints the count and how the data files were counted (:mod:`icecore.scan.count`):
    ``from_metadata_files`` (manifest entries alone), ``from_delete_files`` (their position
    deletes or deletion vectors read, not the file), ``read_files`` (read).
    """
    plan = _plan(args)
    return {"snapshot_id": plan.report.snapshot_id, **plan.count().to_dict()}


def cmd_scan(args: argparse.Namespace) -> dict[str, Any]:
    """Read the rows a filtered scan returns (deletes applied) into a Parquet file.

    The output is checked first: never inside a table location, never over an existing
    file without ``--force`` (:func:`icecore.export.check_output`).
    """
    from icecore.export import check_output, protected_paths, write_parquet

    table = load_table(args.table)
    dirs, files = protected_paths(table)
    check_output(args.output, dirs, files, force=args.force)
    plan = table.scan(filter=args.filter, at=_at(args)).plan()
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    rows = write_parquet(
        plan.to_batches(columns=columns, limit=args.limit), plan, columns, args.output
    )
    return {
        "snapshot_id": plan.report.snapshot_id,
        "output": args.output,
        "rows": rows,
        "data_files": len(plan.data_files),
        "delete_files": len(plan.delete_files),
    }


def cmd_sql(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One SELECT over the table's metadata tables and its rows (``rows``), locked down."""
    from icecore.sql import result_cut, run_sql

    table = load_table(args.table)
    result = run_sql(table, args.query, filter=args.filter, at=_at(args))
    if result_cut(result):
        print(
            f"note: first {result.num_rows:,} rows of the result; the query gave more "
            "(aggregate, or add a LIMIT).",
            file=sys.stderr,
        )
    return [jsonable(row) for row in result.to_pylist()]


def cmd_changelog(args: argparse.Namespace) -> Any:
    """Rows inserted and deleted between two points (Spark's create_changelog_view)."""
    from icecore.export import check_output, protected_paths, write_table

    table = load_table(args.table)
    if args.output:
        dirs, files = protected_paths(table)
        check_output(args.output, dirs, files, force=args.force)
    ids = (
        [c.strip() for c in args.identifier_columns.split(",")] if args.identifier_columns else None
    )
    rows = table.changelog(
        None if args.from_point == "start" else args.from_point,
        args.to_point,
        identifier_columns=ids,
        net_changes=args.net_changes,
    )
    if args.output:
        written = write_table(rows, args.output)
        return {"output": args.output, "rows": written}
    return [jsonable(row) for row in rows.slice(0, args.limit).to_pylist()]


def _property(text: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key:
        raise ValidationError(f"--set-property takes KEY=VALUE, not {text!r}.")
    return key, value


def audited(table: Table) -> Table:
    """``table`` whose commits are recorded in its catalog's audit log as the OS user's.

    The CLI enforces no grants (policy None) but records every change it makes, with the OS
    user as principal and source ``cli`` (DESIGN.md "Identity, roles and audit"). A catalog
    that keeps no log here (a REST catalog, whose server records; a metadata.json) is used
    as it is.
    """
    from icecore.catalog.audit_store import audit_sink_for
    from icecore.catalog.guarded import guard

    catalog = table.catalog
    if catalog is None:
        return table
    sink = audit_sink_for(catalog)  # type: ignore[arg-type]
    if sink is None:
        return table
    wrapped = guard(
        catalog,  # type: ignore[arg-type]
        os_principal(),
        None,
        name=catalog.uri,  # type: ignore[attr-defined]
        audit=sink,
        source="cli",
    )
    return load_table_at(table.identifier, table.metadata_location, table.io, catalog=wrapped)


def cmd_audit(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The catalog's audit log, newest first: one entry per change (DESIGN.md).

    Each intent is joined with its outcome; an intent without one is ``unknown`` unless the
    table's metadata shows the commit landed (:func:`icecore.catalog.audit_store.reconcile`).
    """
    from icecore.audit import audit_changes, select_changes
    from icecore.catalog.audit_store import audit_sink_for, reconcile, skipped_records

    catalog = load_catalog(args.catalog)
    sink = audit_sink_for(catalog)
    if sink is None:
        raise ValidationError(
            f"The catalog {args.catalog} keeps no audit log Icecore can read: a REST catalog's "
            "server keeps its own, and a bare metadata file is no catalog."
        )
    since = parse_timestamp_ms(args.since) if args.since else None
    changes = select_changes(
        audit_changes(sink.read()), table=args.table, principal=args.principal, since_ms=since
    )
    skipped = skipped_records(sink)
    if skipped:
        print(f"note: {skipped:,} unreadable records of the log were skipped.", file=sys.stderr)
    return [c.to_dict() for c in reconcile(changes, catalog)]


def cmd_workload(args: argparse.Namespace) -> dict[str, Any]:
    """What engines asked of a table, from the reports they sent its REST server (DESIGN.md).

    Reads the table's catalog's report store (:mod:`icecore.catalog.report_store`), where
    ``serve-rest`` keeps every ``ScanReport`` and ``CommitReport`` posted to ``/metrics``.
    """
    from icecore.workload import workload

    table = load_table(args.table)
    return workload(_kept_reports(table, args.table, args.since))


def _kept_reports(table: Table, name: str, since: str | None) -> list[KeptReport]:
    """The reports serve-rest kept for ``table`` (since ``since``), read from its catalog."""
    from icecore.catalog.report_store import report_store_for

    store = report_store_for(table.catalog) if table.catalog is not None else None  # type: ignore[arg-type]
    if store is None:
        raise ValidationError(
            f"The catalog of {name} keeps no metrics reports Icecore can read: they are "
            "kept by serve-rest in a SQL catalog's database or beside a local warehouse folder."
        )
    found = store.read(str(table.identifier), parse_timestamp_ms(since) if since else None)
    skipped = getattr(store, "skipped", 0)
    if skipped:
        print(f"note: {skipped:,} unreadable reports were skipped.", file=sys.stderr)
    return found


def cmd_evolve(args: argparse.Namespace) -> dict[str, Any]:
    """Schema, partition spec, sort order and property changes committed as one version."""
    from icecore.evolution.change_text import apply_schema_change, stage_layout_changes

    if not (
        args.schema_change
        or args.spec_change
        or args.sort_change
        or args.set_property
        or args.remove_property
    ):
        raise ValidationError(
            "Nothing to change: give --schema-change, --spec-change, --sort-change, "
            "--set-property or --remove-property."
        )
    table = audited(load_table(args.table))
    transaction = table.transaction()
    if args.schema_change:
        schema = transaction.update_schema()
        for text in args.schema_change:
            apply_schema_change(schema, text)
        schema.commit()
    stage_layout_changes(transaction, args.spec_change, args.sort_change)
    if args.set_property or args.remove_property:
        props = transaction.update_properties()
        props.set_properties(dict(_property(p) for p in args.set_property))
        props.remove(*args.remove_property)
        props.commit()
    preview = transaction.preview()
    if args.dry_run:
        return preview.to_dict()
    committed = transaction.commit()
    md = committed.metadata
    return {
        **_committed_json(table, committed, preview.is_noop, preview.changes),
        "current_schema_id": md.current_schema_id,
        "default_spec_id": md.default_spec_id,
        "default_sort_order_id": md.default_sort_order_id,
    }


def cmd_whatif(args: argparse.Namespace) -> dict[str, Any]:
    """Files and bytes each filter would read after a rewrite into a proposed layout."""
    from icecore.whatif import proposed_layout, recorded_filters, what_if

    if not (args.spec_change or args.sort_change):
        raise ValidationError("Nothing proposed: give --spec-change or --sort-change.")
    table = load_table(args.table)
    layout = proposed_layout(table, args.spec_change, args.sort_change)
    filters: list[Any] = list(args.filter)
    masked = 0
    if args.since is not None or not filters:
        recorded, masked = recorded_filters(
            _kept_reports(table, args.table, args.since), layout.schema
        )
        filters.extend(recorded)
    if not filters:
        raise ValidationError(
            "No filter to estimate: give --filter SQL (repeatable), or plan scans through "
            "serve-rest first (engines' own reports mask their filters' values; "
            f"{masked:,} such scans were seen)."
        )
    return {**what_if(table, layout, filters).to_dict(), "masked_scans_not_estimated": masked}


def _committed_json(
    table: TableData, committed: TableData, is_noop: bool, changes: Sequence[str]
) -> dict[str, Any]:
    """What every committing command prints first: whether, where, and what changed."""
    return {
        "committed": not is_noop,
        "table": str(committed.identifier),
        "metadata_location": committed.metadata_location,
        "previous_metadata_location": table.metadata_location,
        "changes": list(changes),
    }


def _ref_operation(args: argparse.Namespace, manage: ManageSnapshots) -> None:
    """Stage the one operation ``args`` names on ``manage``."""
    md = manage.metadata
    action = args.action
    if action == "rollback":
        if args.to is not None:
            manage.rollback_to_snapshot(args.to, args.branch)
        else:
            manage.rollback_to_timestamp(args.as_of, args.branch)
    elif action == "set-current":
        manage.set_current_snapshot(args.to, args.branch)
    elif action == "cherry-pick":
        manage.cherrypick_snapshot(args.snapshot_id, args.branch)
    elif action == "fast-forward":
        manage.fast_forward(args.name, args.to)
    elif action == "create-branch":
        manage.create_branch(
            args.name,
            args.at,
            max_ref_age_ms=args.max_ref_age_ms,
            max_snapshot_age_ms=args.max_snapshot_age_ms,
            min_snapshots_to_keep=args.min_snapshots_to_keep,
        )
    elif action == "create-tag":
        if args.max_snapshot_age_ms is not None or args.min_snapshots_to_keep is not None:
            raise ValidationError(
                "A tag keeps one snapshot: --max-snapshot-age-ms and --min-snapshots-to-keep "
                "apply to branches only."
            )
        manage.create_tag(args.name, args.at, max_ref_age_ms=args.max_ref_age_ms)
    elif action == "rename":
        ref = md.refs.get(args.name)
        if ref is not None and not ref.is_branch:
            manage.rename_tag(args.name, args.new_name)
        else:
            manage.rename_branch(args.name, args.new_name)
    elif action == "drop":
        ref = md.refs.get(args.name)
        if ref is not None and not ref.is_branch:
            manage.remove_tag(args.name)
        else:
            manage.remove_branch(args.name)
    else:  # publish (argparse allows no other action)
        manage.publish_wap(args.wap_id, args.branch)


def _refs_json(table: TableData) -> dict[str, Any]:
    """The table's branches and tags with their retention, by name."""
    return {
        name: {
            "snapshot_id": ref.snapshot_id,
            "type": ref.type.value,
            "max_ref_age_ms": ref.max_ref_age_ms,
            "max_snapshot_age_ms": ref.max_snapshot_age_ms,
            "min_snapshots_to_keep": ref.min_snapshots_to_keep,
        }
        for name, ref in sorted(table.metadata.refs.items())
    }


def cmd_ref(args: argparse.Namespace) -> dict[str, Any]:
    """One guarded ref operation (rollback, branches, tags, cherry-pick, WAP publish)."""
    if not args.dry_run and read_only():
        raise ValidationError(
            f"Cannot change the refs of {args.table}: Icecore runs read-only "
            "(ICECORE_READ_ONLY or read_only in icecore.toml); use --dry-run to see the change."
        )
    table = audited(load_table(args.table))
    manage = table.manage_snapshots()
    _ref_operation(args, manage)
    moves = [
        {
            "ref": m.ref,
            "type": m.kind,
            "from_snapshot_id": m.from_snapshot_id,
            "to_snapshot_id": m.to_snapshot_id,
            "operation": m.note,
        }
        for m in manage.moves
    ]
    preview = manage.preview()
    if args.dry_run:
        return {**preview.to_json(), "moves": moves}
    committed = manage.commit()
    return {
        **_committed_json(table, committed, preview.is_noop, preview.changes),
        "moves": moves,
        "current_snapshot_id": committed.metadata.current_snapshot_id,
        "refs": _refs_json(committed),
    }


def cmd_serve_rest(args: argparse.Namespace) -> dict[str, Any]:
    """Serve a catalog over the Iceberg REST protocol until interrupted (Ctrl-C)."""
    require_extra("server", "The REST server", "starlette", "uvicorn")
    from icecore.server import serve

    credential = args.credential or os.environ.get("ICECORE_SERVE_CREDENTIAL") or None
    if args.port < 0 or args.port > 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (0 to 65535).")
    try:
        serve(
            args.catalog,
            host=args.host,
            port=args.port,
            read_only=args.read_only,
            credential=credential,
            token_ttl_s=args.token_ttl,
            vend=args.vend,
            vend_read_only=args.vend_read_only,
            vend_to_anonymous=args.vend_to_anonymous,
            token_max_lifetime_s=args.token_max_lifetime,
            token_secret_file=args.token_secret_file,
            limits=_http_limits(args),
            allow_locations=args.allow_location,
            name=args.name,
        )
    except ValueError as e:  # a malformed option or secret; its text never holds the secret
        raise UsageError(str(e)) from None
    return {"served": args.catalog, "stopped": True}


def cmd_app(args: argparse.Namespace) -> NoReturn:
    """Serve the explorer (Streamlit) on a catalog until interrupted; builds no warehouse.

    The catalog is opened once first, so a mistyped folder, URI or name is one sentence here
    and exit 1, not a server whose every page says it; a catalog whose server is down for
    now (a REST catalog, PostgreSQL) is served anyway: the pages say so, and recover with it.
    """
    command = app_command(args.catalog, port=args.port, address=args.address)
    try:
        load_catalog(command.env[CATALOG_ENV])
    except (NotFound, ValidationError):
        raise
    except IcecoreError as e:
        print(f"warning: {e}", file=sys.stderr)
    serve_app(command)


def _http_limits(args: argparse.Namespace) -> HttpLimits:
    """``serve-rest``'s connection and time limits (:class:`icecore.server.limits.HttpLimits`)."""
    from icecore.server.limits import HttpLimits

    for name in ("header_timeout", "keep_alive", "request_timeout", "max_connections"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive.")
    return HttpLimits(
        header_timeout_s=args.header_timeout,
        keep_alive_s=args.keep_alive,
        request_timeout_s=args.request_timeout,
        max_connections=args.max_connections,
    )


def _at(args: argparse.Namespace) -> At:
    """The point in time the selectors name, built once for the whole command."""
    return At.of(snapshot_id=args.snapshot, ref=args.ref, as_of=args.as_of)


def _add_selectors(parser: argparse.ArgumentParser) -> None:
    """``--snapshot ID | --ref NAME | --as-of ISO8601``: one point in time (:func:`_at`)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--snapshot", type=int, default=None, help="a snapshot id")
    group.add_argument("--ref", default=None, help="a branch or tag")
    group.add_argument("--as-of", dest="as_of", default=None, help="an ISO-8601 time")


def _add_layout_changes(parser: argparse.ArgumentParser) -> None:
    """``--spec-change`` and ``--sort-change``, read by ``evolve`` and ``whatif`` alike."""
    parser.add_argument(
        "--spec-change",
        action="append",
        default=[],
        metavar="CHANGE",
        help='e.g. "add_field ts day", "add_field id bucket[16]", "remove_field f", '
        '"rename_field f g" (repeatable)',
    )
    parser.add_argument(
        "--sort-change",
        action="append",
        default=[],
        metavar="FIELD",
        help='the new sort order, one field each: "asc ts", "desc fare month nulls-first", '
        'or "unsorted"',
    )


def _add_ref_parser(sub: Any, table_help: str) -> None:
    """``ref TABLE ACTION ...``: one guarded ref operation per call (DESIGN.md "Contracts")."""
    ref = sub.add_parser(
        "ref", help="guarded ref operations: rollback, branches, tags, cherry-pick, WAP publish"
    )
    ref.add_argument("table", help=table_help)
    actions = ref.add_subparsers(dest="action", required=True, parser_class=_Parser)
    dry_run = _Parser(add_help=False)
    dry_run.add_argument(
        "--dry-run", action="store_true", help="print the ref moves and new metadata; write nothing"
    )
    branch = _Parser(add_help=False)
    branch.add_argument("--branch", default="main", help="the branch to move (main)")
    roll = actions.add_parser(
        "rollback", parents=[dry_run, branch], help="move a branch back to an ancestor"
    )
    target = roll.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", type=int, default=None, metavar="SNAPSHOT_ID")
    target.add_argument(
        "--as-of", dest="as_of", default=None, metavar="ISO8601", help="last ancestor before this"
    )
    cur = actions.add_parser(
        "set-current", parents=[dry_run, branch], help="point a branch at any snapshot"
    )
    cur.add_argument("--to", type=int, required=True, metavar="SNAPSHOT_ID")
    pick = actions.add_parser(
        "cherry-pick", parents=[dry_run, branch], help="apply a snapshot's changes to a branch"
    )
    pick.add_argument("snapshot_id", type=int, metavar="SNAPSHOT_ID")
    ff = actions.add_parser(
        "fast-forward", parents=[dry_run], help="move a branch to a ref ahead of it"
    )
    ff.add_argument("name", metavar="BRANCH")
    ff.add_argument("--to", required=True, metavar="OTHER_BRANCH")
    for kind in ("branch", "tag"):
        create = actions.add_parser(
            f"create-{kind}", parents=[dry_run], help=f"create a {kind} at a snapshot"
        )
        create.add_argument("name", metavar="NAME")
        create.add_argument(
            "--at", type=int, default=None, metavar="SNAPSHOT_ID", help="default: current"
        )
        create.add_argument("--max-ref-age-ms", type=int, default=None, metavar="N")
        create.add_argument("--max-snapshot-age-ms", type=int, default=None, metavar="N")
        create.add_argument("--min-snapshots-to-keep", type=int, default=None, metavar="N")
    ren = actions.add_parser("rename", parents=[dry_run], help="rename a branch or tag")
    ren.add_argument("name", metavar="OLD")
    ren.add_argument("new_name", metavar="NEW")
    drop = actions.add_parser("drop", parents=[dry_run], help="drop a branch or tag (not main)")
    drop.add_argument("name", metavar="NAME")
    pub = actions.add_parser(
        "publish", parents=[dry_run, branch], help="publish a snapshot staged with spark.wap.id"
    )
    pub.add_argument("wap_id", metavar="WAP_ID")
    ref.set_defaults(run=cmd_ref)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per verb."""
    parser = _Parser(prog="icecore", description=plain(__doc__.split("\n")[0]))
    parser.add_argument("--version", action="version", version=f"icecore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    tables = sub.add_parser("tables", help="list a catalog's tables")
    tables.add_argument("catalog", help="warehouse folder, sqlite:///file.db or metadata.json")
    tables.set_defaults(run=cmd_tables)
    health_cmd = sub.add_parser(
        "health", help="every table of a catalog: sizes, last commit, score and its factors"
    )
    health_cmd.add_argument("catalog", help="warehouse folder, sqlite:///file.db, a REST URI")
    health_cmd.add_argument(
        "--files-bound",
        type=int,
        default=100_000,
        metavar="N",
        help="read the manifests (exact bytes, small-file share) of tables with at most N live "
        "files; above it those are estimates from the snapshot summary (100000)",
    )
    health_cmd.set_defaults(run=cmd_health)
    alerts_cmd = sub.add_parser(
        "alerts",
        help="send the webhook of [alerts] in icecore.toml each new low score and regression "
        f"(exit {ALERTS_UNDELIVERED_EXIT} when one could not be delivered; the JSON is printed)",
    )
    alerts_cmd.add_argument("catalog", help="warehouse folder, sqlite:///file.db, a REST URI")
    alerts_cmd.add_argument(
        "--dry-run", action="store_true", help="print what would be sent; send nothing"
    )
    alerts_cmd.set_defaults(run=cmd_alerts)

    mnt = sub.add_parser(
        "maintain", help="run the maintenance jobs the [[policies]] of icecore.toml say are due"
    )
    mnt.add_argument("catalog", help="warehouse folder, sqlite:///file.db, a REST URI or a name")
    mnt.add_argument("--dry-run", action="store_true", help="print what is due; run nothing")
    mnt.add_argument("--every", metavar="DURATION", help="repeat every DURATION (1h, 30m ...)")
    mnt.add_argument("--master", help="Spark master URL (default ICECORE_SPARK_MASTER or local[*])")
    mnt.add_argument(
        "--concurrency", type=int, default=2, metavar="N", help="tables maintained at once (2)"
    )
    mnt.set_defaults(run=cmd_maintain)
    views = sub.add_parser("views", help="list a catalog's views")
    views.add_argument("catalog", help="warehouse folder, sqlite:///file.db, a REST URI or a name")
    views.set_defaults(run=cmd_views)
    view = sub.add_parser("view", help="a view's versions, SQL per dialect and the tables it reads")
    view.add_argument("view", help="CATALOG::ns.view")
    view.set_defaults(run=cmd_view)
    table_help = "CATALOG::ns.table, a table folder, or a metadata.json path"
    hist = sub.add_parser("history", help="a table's snapshots, lineage and refs")
    hist.add_argument("table", help=table_help)
    hist.add_argument(
        "--metadata",
        action="store_true",
        help="add the metadata-only changes (schema, spec, sort order, properties, refs, "
        "location, format version) from the metadata log, as events among the snapshots",
    )
    hist.set_defaults(run=cmd_history)
    trd = sub.add_parser(
        "trend", help="a branch's size, files, deletes and manifests per snapshot, and regressions"
    )
    trd.add_argument("table", help=table_help)
    trd.add_argument("--branch", default="main", help="the branch whose history to follow (main)")
    trd.set_defaults(run=cmd_trend)
    ret = sub.add_parser(
        "retention", help="bytes and files each snapshot, tag and branch alone keeps alive"
    )
    ret.add_argument("table", help=table_help)
    ret.set_defaults(run=cmd_retention)
    insp = sub.add_parser(
        "inspect",
        help="a metadata table (files, manifests, partitions, ...)",
        description="A metadata table as Spark shows it, one JSON object per row.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    insp.epilog_maker = _inspect_epilog
    insp.add_argument("table", help=table_help)
    insp.add_argument(
        "kind",
        choices=_MetadataKinds(),
        metavar="KIND",
        help="the metadata table (below)",
    )
    _add_selectors(insp)
    insp.set_defaults(run=cmd_inspect)
    pln = sub.add_parser("plan", help="the files a filtered scan reads, and why not the rest")
    pln.add_argument("table", help=table_help)
    _add_selectors(pln)
    pln.add_argument("--filter", default=None, help="SQL boolean expression")
    pln.set_defaults(run=cmd_plan)
    cnt = sub.add_parser("count", help="the rows a filtered scan returns, as Spark's count(*)")
    cnt.add_argument("table", help=table_help)
    _add_selectors(cnt)
    cnt.add_argument("--filter", default=None, help="SQL boolean expression")
    cnt.set_defaults(run=cmd_count)
    scn = sub.add_parser("scan", help="read a filtered scan's rows into a Parquet file")
    scn.add_argument("table", help=table_help)
    _add_selectors(scn)
    scn.add_argument("--filter", default=None, help="SQL boolean expression")
    scn.add_argument("--columns", default=None, help="comma-separated column names")
    scn.add_argument("--limit", type=int, default=None, help="stop after this many rows")
    scn.add_argument("--output", required=True, help="the Parquet file to write")
    scn.add_argument("--force", action="store_true", help="replace an existing output file")
    scn.set_defaults(run=cmd_scan)
    sql = sub.add_parser("sql", help="a SELECT over metadata tables (files, ...) and rows")
    sql.add_argument("table", help=table_help)
    sql.add_argument("query", help="one SELECT; tables: files, manifests, snapshots, rows, ...")
    _add_selectors(sql)
    sql.add_argument("--filter", default=None, help="SQL filter pushed into the rows scan")
    sql.set_defaults(run=cmd_sql)
    chg = sub.add_parser("changelog", help="rows inserted and deleted between two points")
    chg.add_argument("table", help=table_help)
    chg.add_argument(
        "from_point", metavar="FROM", help="exclusive: snapshot id, ref, time or 'start'"
    )
    chg.add_argument("to_point", metavar="TO", nargs="?", default=None, help="inclusive (current)")
    chg.add_argument("--identifier-columns", default=None, help="pair DELETE/INSERT as updates")
    chg.add_argument("--net-changes", action="store_true", help="net changes over the range")
    chg.add_argument("--limit", type=int, default=1000, help="rows printed as JSON (1000)")
    chg.add_argument("--output", default=None, help="write all rows to this Parquet file")
    chg.add_argument("--force", action="store_true", help="replace an existing output file")
    chg.set_defaults(run=cmd_changelog)
    dif = sub.add_parser("diff", help="what changed between two snapshots, refs or times")
    dif.add_argument("table", help=table_help)
    dif.add_argument("from_point", metavar="FROM", help="snapshot id, ref or ISO-8601 time")
    dif.add_argument("to_point", metavar="TO", help="snapshot id, ref or ISO-8601 time")
    dif.set_defaults(run=cmd_diff)
    evo = sub.add_parser(
        "evolve", help="guarded schema, partition spec, sort order and property changes"
    )
    evo.add_argument("table", help=table_help)
    evo.add_argument(
        "--schema-change",
        action="append",
        default=[],
        metavar="CHANGE",
        help='e.g. "add_column note string doc=\'free text\'", "rename_column a b", '
        '"update_column n long", "delete_column c", "move_first c" (repeatable)',
    )
    _add_layout_changes(evo)
    evo.add_argument("--set-property", action="append", default=[], metavar="KEY=VALUE")
    evo.add_argument("--remove-property", action="append", default=[], metavar="KEY")
    evo.add_argument(
        "--dry-run", action="store_true", help="print the new metadata and a diff; write nothing"
    )
    evo.set_defaults(run=cmd_evolve)
    wif = sub.add_parser(
        "whatif", help="files and bytes each filter would read after a rewrite into a new layout"
    )
    wif.add_argument("table", help=table_help)
    _add_layout_changes(wif)
    wif.add_argument(
        "--filter", action="append", default=[], metavar="SQL", help="a scan filter (repeatable)"
    )
    wif.add_argument(
        "--since",
        metavar="ISO8601",
        help="also the filters of the plans serve-rest served since then (without --filter: "
        "all it kept)",
    )
    wif.set_defaults(run=cmd_whatif)
    _add_ref_parser(sub, table_help)
    aud = sub.add_parser(
        "audit", help="a catalog's audit log: who changed which table, how, and how it ended"
    )
    aud.add_argument("catalog", help="the catalog, as load_catalog takes it")
    aud.add_argument("--table", default=None, metavar="NS.TABLE", help="one table's changes")
    aud.add_argument("--principal", default=None, metavar="P", help="one person's (name or id)")
    aud.add_argument("--since", default=None, metavar="ISO8601", help="changes from this time on")
    aud.set_defaults(run=cmd_audit)
    wl = sub.add_parser(
        "workload", help="what engines asked of a table: the scan and commit reports they sent"
    )
    wl.add_argument("table", help=table_help)
    wl.add_argument("--since", default=None, metavar="ISO8601", help="reports from this time on")
    wl.set_defaults(run=cmd_workload)
    srv = sub.add_parser("serve-rest", help="serve a catalog over the Iceberg REST protocol")
    srv.add_argument("catalog", help="the catalog to serve, as load_catalog takes it")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    srv.add_argument("--port", type=int, default=8181, help="TCP port (8181)")
    srv.add_argument("--read-only", action="store_true", help="refuse every write with 403")
    srv.add_argument(
        "--credential",
        default=None,
        metavar="ID:SECRET",
        help="require OAuth2 client credentials (or set ICECORE_SERVE_CREDENTIAL)",
    )
    srv.add_argument(
        "--token-ttl", type=float, default=3600.0, help="seconds a token stays valid (3600)"
    )
    srv.add_argument(
        "--token-max-lifetime",
        type=float,
        default=86_400.0,
        help="seconds after its first issue a refreshed token still lives (86400)",
    )
    srv.add_argument(
        "--token-secret-file",
        default=None,
        metavar="PATH",
        help="file holding the secret tokens are signed with (or set "
        "ICECORE_SERVE_TOKEN_SECRET; default: random at start); change it to revoke every token",
    )
    srv.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds a connection may take to send a complete request head (10)",
    )
    srv.add_argument(
        "--keep-alive", type=int, default=5, help="seconds an idle connection stays open (5)"
    )
    srv.add_argument(
        "--request-timeout",
        type=float,
        default=120.0,
        help="seconds a request may take before it is answered 503 (120)",
    )
    srv.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="open connections at most (default: the file-descriptor limit minus 384)",
    )
    srv.add_argument(
        "--vend",
        action="append",
        default=[],
        metavar="KEY=ENV_VAR",
        help="vend the storage property KEY (s3.endpoint, s3.access-key-id, ...) read from "
        "the environment variable ENV_VAR to clients asking for vended credentials "
        "(needs --credential; refused with --read-only)",
    )
    srv.add_argument(
        "--vend-read-only",
        action="append",
        default=[],
        metavar="KEY=ENV_VAR",
        help="like --vend, for keys that can only read (the only keys a --read-only server vends)",
    )
    srv.add_argument(
        "--vend-to-anonymous",
        action="store_true",
        help="vend even without --credential, to anyone who reaches the port (warns)",
    )
    srv.add_argument(
        "--allow-location",
        action="append",
        default=[],
        metavar="PREFIX",
        help="let tables live below PREFIX too (a folder or s3://bucket/path; repeatable); "
        "by default only the served warehouse",
    )
    srv.add_argument(
        "--name",
        default=None,
        metavar="NAME",
        help="the catalog's name in icecore.toml's grants (CATALOG::ns.table); default: the "
        "catalog argument (a [catalogs.NAME] entry's name, or the string as given)",
    )
    srv.set_defaults(run=cmd_serve_rest)
    app = sub.add_parser("app", help="serve the explorer app (needs the app extra)")
    app.add_argument(
        "--catalog",
        default=None,
        help="the catalog it opens first, as load_catalog takes it (default: ICECORE_CATALOG, "
        "else ./warehouse)",
    )
    app.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port ({DEFAULT_PORT})")
    app.add_argument(
        "--address", default=DEFAULT_ADDRESS, help=f"address to listen on ({DEFAULT_ADDRESS})"
    )
    app.set_defaults(run=cmd_app)
    for name in SUMMARIZED:
        sub.choices[name].add_argument(
            "--summary",
            action="store_true",
            help=f"counts, totals and the first {SUMMARY_ITEMS} items of each long list "
            "instead of everything",
        )
    return parser


SUMMARIZED = ("tables", "views", "history", "inspect", "plan", "sql", "changelog", "diff")
"""The commands whose output can be large, and so take ``--summary``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        run: Command = args.run
        result = run(args)
        if getattr(args, "summary", False):
            result = summarize(result)
    except ResultsFailed as e:
        json.dump(e.results, sys.stdout, indent=2, default=str, ensure_ascii=False)
        sys.stdout.write("\n")
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except (UsageError, IcecoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except MemoryError:
        # Whatever ran out (a huge table, a file that should not have been read), one line
        # says so; a traceback would say nothing more to the user.
        print("error: the command ran out of memory and was stopped.", file=sys.stderr)
        return 1
    try:
        json.dump(result, sys.stdout, indent=2, default=str, ensure_ascii=False)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # A reader such as `head` went away; that is not our failure.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter exit quiet
    return 0
