"""Table maintenance as Spark jobs: ``python -m pipeline.maintenance JOB TABLE [options]``.

Each job is one call of Spark's Iceberg procedure of the same name (Iceberg 1.10.2), run on
any Spark master (``--master``, else ``ICECORE_SPARK_MASTER``, else ``local[*]``), so a
table is maintained where it lives. TABLE is what icecore's CLI takes: ``CATALOG::ns.table``
(a SQL catalog in SQLite or PostgreSQL, a filesystem warehouse, or an Iceberg REST catalog:
a ``[catalogs.NAME]`` entry of icecore.toml or an ``http(s)://`` URI, reached through Spark's
``type=rest`` catalog with the same credential, set in-process and never printed) or a table
folder (Spark's ``hadoop`` catalog rooted two levels up). Progress lines go to stderr; the
last thing on stdout is one JSON object: the job, the table's metadata location and
snapshot before and after, and the procedure's own result columns. ``--dry-run`` prints
icecore's estimate (from metadata alone, no Spark) and, for ``remove_orphan_files``,
Spark's own dry run too. A ``rewrite_data_files`` whose estimate says it may write more
files than it removes (``data_files_after``) is refused unless ``--force``.

Failures are one sentence on stderr and exit 1; a failed or killed job commits nothing
(Iceberg commits are one atomic swap of the metadata location).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shlex
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from icecore import layout, maintenance
from icecore.access import os_principal
from icecore.catalog import TABLE_SEPARATOR, load_catalog, load_table
from icecore.catalog.audit_store import (
    JOB_AUDIT_ENV,
    audit_sink_for,
    job_audit_env,
    record_job_outcome,
)
from icecore.catalog.guarded import guard
from icecore.cli import jsonable, plain
from icecore.errors import IcecoreError, Unsupported
from icecore.expressions.bind import bind
from icecore.expressions.parser import parse_filter
from icecore.failpoints import failpoint
from icecore.history import parse_timestamp_ms
from icecore.maintenance import Job
from icecore.table import Table
from pipeline.progress import reported
from pipeline.spark import (
    PipelineError,
    build_session,
    check_prerequisites,
    default_master,
    public_conf,
    spark_catalog_conf,
)

Progress = Callable[[str], None]

CONFLICT_MARKERS = (
    "CommitFailedException",
    "ValidationException",
    "Cannot commit",
    "found new",
    "conflict",
    "SQLITE_BUSY",
)
"""Words in Spark's error when a concurrent writer won: Iceberg's optimistic concurrency
refused the commit, or (SQL catalog in SQLite, another process committing at the same
moment) the catalog database refused the compare-and-swap (``SQLITE_BUSY_SNAPSHOT``)."""


DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class SparkTable:
    """How Spark reaches a table: a catalog to register and the name within it."""

    catalog: str
    conf: dict[str, str]
    name: str

    @property
    def qualified(self) -> str:
        """``catalog.ns.table`` for Spark SQL."""
        return f"{self.catalog}.{self.name}"


def _hadoop(root: str, name: str) -> SparkTable:
    """Spark's ``hadoop`` catalog on a warehouse folder (a table folder's grandparent)."""
    return _registered({"type": "hadoop", "warehouse": root}, None, name)


def _registered(properties: dict[str, str], java_name: str | None, name: str) -> SparkTable:
    """Spark's catalog for Iceberg catalog ``properties``, named ``java_name`` if it must be.

    Otherwise the name is ``icecore_<type>_<digest>`` of where the catalog is (never of a
    secret), so two runs on one catalog reuse one Spark catalog name.
    """
    kind = properties.get("type", "catalog")
    if java_name is None:
        where = f"{properties.get('uri', '')}\0{properties.get('warehouse', '')}"
        digest = hashlib.sha1(where.encode()).hexdigest()[:10]
        java_name = f"icecore_{'fs' if kind == 'hadoop' else kind}_{digest}"
    conf = spark_catalog_conf(java_name, properties)
    conf[f"spark.sql.catalog.{java_name}.cache-enabled"] = "false"
    return SparkTable(java_name, conf, name)


def spark_table(text: str) -> tuple[SparkTable, Table]:
    """Resolve TABLE as icecore's CLI does, and say how Spark names the same table.

    The catalog says how Iceberg Java opens it (``Catalog.iceberg_catalog``): a JdbcCatalog
    named as its rows are, a HadoopCatalog, a REST catalog with the same secrets; a
    JdbcCatalog without a warehouse (PostgreSQL) gets the table's grandparent.

    Raises:
        PipelineError: a metadata.json path (Spark maintains tables through a catalog), or a
            catalog Iceberg Java cannot open.
        IcecoreError: the catalog or table does not exist.
    """
    if text.strip().endswith(".metadata.json"):
        raise PipelineError(
            f"{text} is a metadata file: maintenance commits through a catalog, so give "
            "CATALOG::namespace.table or a table folder."
        )
    table = load_table(text)
    if TABLE_SEPARATOR not in text:
        folder = table.metadata.location.rstrip("/")
        parts = folder.split("/")
        return _hadoop("/".join(parts[:-2]), ".".join(parts[-2:])), table
    catalog_uri, name = text.rsplit(TABLE_SEPARATOR, 1)
    catalog = load_catalog(catalog_uri)
    try:
        java_name, properties = catalog.iceberg_catalog()
    except Unsupported as e:
        raise PipelineError(str(e)) from e
    if not properties:
        raise PipelineError(
            f"Maintenance runs on SQL, REST and filesystem catalogs; {catalog_uri} is none of them."
        )
    if properties.get("type") == "jdbc" and "warehouse" not in properties:
        properties["warehouse"] = table.metadata.location.rstrip("/").rsplit("/", 2)[0]
    return _registered(properties, java_name, name), table


def check_master(master: str, timeout: float = 5.0) -> None:
    """Fail fast, in one sentence, when a standalone master (``spark://``) does not answer.

    Spark's own client retries an unreachable master for about a minute before giving up.
    """
    if not master.startswith("spark://"):
        return
    for hostport in master[len("spark://") :].split(","):
        parts = urlsplit(f"//{hostport}")
        try:
            with socket.create_connection((parts.hostname or "", parts.port or 7077), timeout):
                return
        except OSError as e:
            reason = e.strerror or str(e)
    raise PipelineError(
        f"The Spark master {master} is unreachable ({reason}); start it, or pass "
        "--master local[*] to run the job in this process."
    )


def check_filter(table: Table, text: str) -> str:
    """Validate a ``--filter`` with icecore's parser against the table's schema first."""
    bind(table.metadata.current_schema(), parse_filter(text))
    return text


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def procedure_call(target: SparkTable, job: Job, args: argparse.Namespace, table: Table) -> str:
    """The ``CALL`` statement for one job (named arguments, as Iceberg documents them)."""
    named = [f"table => {_sql_string(target.name)}"]
    if job is Job.REWRITE_DATA_FILES:
        strategy = args.strategy or "binpack"
        if strategy == "sort" and table.metadata.default_sort_order_id == 0:
            raise PipelineError(
                f"{target.name} has no sort order, so --strategy sort has nothing to sort by; "
                "set one on the Evolution page or use --strategy binpack."
            )
        named.append(f"strategy => {_sql_string(strategy)}")
        if args.filter:
            named.append(f"where => {_sql_string(check_filter(table, args.filter))}")
        # Position deletes left with no data file to apply to are dropped in the same commit.
        named.append("options => map('remove-dangling-deletes', 'true')")
    elif job is Job.EXPIRE_SNAPSHOTS:
        if args.older_than:
            named.append(f"older_than => TIMESTAMP {_sql_string(_older_than(args))}")
        if args.retain_last is not None:
            named.append(f"retain_last => {int(args.retain_last)}")
    elif job is Job.REMOVE_ORPHAN_FILES:
        if args.older_than and parse_timestamp_ms(args.older_than) > time.time() * 1000 - DAY_MS:
            raise PipelineError(
                f"--older-than {args.older_than} is within the last 24 hours; Spark refuses "
                "that for remove_orphan_files (a write in flight could lose its files), so "
                "give a time at least a day ago."
            )
        if args.older_than:
            named.append(f"older_than => TIMESTAMP {_sql_string(_older_than(args))}")
        named.append(f"dry_run => {'true' if args.dry_run else 'false'}")
    return f"CALL {target.catalog}.system.{job}({', '.join(named)})"


def _older_than(args: argparse.Namespace) -> str:
    ms = parse_timestamp_ms(args.older_than)
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _messages(error: Exception) -> list[str]:
    """The error's message and, for a Java exception, every cause's (outermost first)."""
    found = [str(error)]
    java = getattr(error, "java_exception", None)
    depth = 0
    while java is not None and depth < 10:
        try:
            found.append(f"{java.getClass().getName()}: {java.getMessage()}")
            java = java.getCause()
        except Exception:  # the gateway may be gone: keep what was read
            break
        depth += 1
    return found


def spark_error(error: Exception, job: Job, target: SparkTable) -> PipelineError:
    """One sentence for a failed procedure: a lost commit race is said as such."""
    messages = _messages(error)
    root = next(
        (m for m in reversed(messages) if m.strip() and not m.endswith(": None")), messages[0]
    )
    first = " ".join(root.split())[:300]
    if any(marker in m for m in messages for marker in CONFLICT_MARKERS):
        return PipelineError(
            f"{job} on {target.name} lost a race with another writer: the catalog or Iceberg's "
            f"conflict check refused the commit ({first}), so nothing changed; run the job again."
        )
    return PipelineError(f"{job} on {target.name} failed in Spark ({first}); nothing changed.")


def _state(table: Table) -> dict[str, Any]:
    snapshot = table.metadata.current_snapshot()
    return {
        "metadata_location": table.metadata_location,
        "snapshot_id": snapshot.snapshot_id if snapshot else None,
    }


def recommendation(job: Job, table: Table, args: argparse.Namespace) -> maintenance.Recommendation:
    """Icecore's recommendation for the job with these options: its estimate and warnings."""
    snapshot = table.metadata.current_snapshot()
    manifests = table.manifests(snapshot) if snapshot else []
    files = layout.snapshot_files(table, snapshot)
    if job is Job.REWRITE_DATA_FILES and getattr(args, "filter", None) and snapshot:
        # Spark rewrites only the data files its scan of the filter plans (Java planFiles,
        # which icecore's planner equals); delete files stay in the picture.
        planned = pa.array(table.scan(filter=args.filter).plan().data_files, pa.string())
        is_delete = pc.not_equal(files.column("content"), 0)
        files = files.filter(pc.or_(is_delete, pc.is_in(files.column("file_path"), planned)))
    now = int(time.time() * 1000)
    found = maintenance.recommendation(
        table,
        job,
        manifests,
        files,
        now,
        older_than_ms=parse_timestamp_ms(args.older_than) if args.older_than else None,
        retain_last=args.retain_last,
    )
    return found


def run_job(
    spark: Any,
    job: Job,
    table_text: str,
    args: argparse.Namespace,
    progress: Progress,
) -> dict[str, Any]:
    """Run one job on an existing session; returns the JSON result.

    The session gets the table's catalog registered (settings are per session, so a job
    can run in the tests' session as in its own process).
    """
    target, table = spark_table(table_text)
    call = procedure_call(target, job, args, table)
    for key, value in target.conf.items():
        spark.conf.set(key, value)
    progress(f"running {call}")
    started = time.monotonic()
    try:
        rows = spark.sql(call).collect()
    except Exception as e:  # py4j and pyspark errors share no base class worth naming
        raise spark_error(e, job, target) from e
    took = time.monotonic() - started
    after = table.refresh()
    if job is Job.REMOVE_ORPHAN_FILES:
        result: dict[str, Any] = {
            "orphan_file_location": [str(r[0]) for r in rows],
            "orphan_files_count": len(rows),
        }
    else:
        result = rows[0].asDict() if rows else {}
    progress(f"done in {took:.1f}s: {json.dumps(jsonable(result))[:500]}")
    return {
        "job": str(job),
        "table": table_text,
        "spark_table": target.qualified,
        "dry_run": bool(getattr(args, "dry_run", False)),
        "before": _state(table),
        "after": _state(after),
        "result": jsonable(result),
        "seconds": round(took, 3),
    }


def on_spark(
    target: SparkTable, master: str, app_name: str, work: Callable[[Any], dict[str, Any]]
) -> dict[str, Any]:
    """Start a session with the table's catalog (warehouse in a scratch folder), run, stop."""
    with tempfile.TemporaryDirectory(prefix="icecore-spark-") as scratch:
        # Secrets are set in-process by the work (run_job, run_query), never on the JVM's
        # command line, where PySpark would put every builder setting.
        spark = build_session(
            scratch, master=master, app_name=app_name, extra_conf=public_conf(target.conf)
        )
        try:
            return work(spark)
        finally:
            spark.stop()


class OneSentenceParser(argparse.ArgumentParser):
    """argparse that reports a wrong command line as one sentence and exit 1."""

    def error(self, message: str) -> Any:
        """Print the problem as one sentence and exit 1 (argparse would print usage, exit 2)."""
        print(f"{message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(1)


def parser() -> argparse.ArgumentParser:
    """The command line (docs/ARCHITECTURE.md "Contracts", maintenance jobs)."""
    p = OneSentenceParser(prog="python -m pipeline.maintenance", description=plain(__doc__ or ""))
    p.add_argument("job", choices=[str(j) for j in Job])
    p.add_argument("table", help="CATALOG::ns.table or a table folder")
    p.add_argument("--older-than", help="ISO-8601; expire_snapshots and remove_orphan_files")
    p.add_argument("--retain-last", type=int, help="expire_snapshots: snapshots kept per branch")
    p.add_argument("--filter", help="rewrite_data_files: a SQL boolean expression")
    p.add_argument("--strategy", choices=["binpack", "sort"], help="rewrite_data_files")
    p.add_argument("--dry-run", action="store_true", help="estimate only (orphans: list only)")
    p.add_argument(
        "--force",
        action="store_true",
        help="rewrite_data_files: run even when the estimate says it writes more files "
        "than it removes",
    )
    p.add_argument("--master", help="Spark master URL (default ICECORE_SPARK_MASTER or local[*])")
    return p


def _say(line: str) -> None:
    print(f"[maintenance] {line}", file=sys.stderr, flush=True)


def answer(
    body: Callable[[], dict[str, Any]],
    ended: Callable[[dict[str, Any] | None, Exception | None], None] | None = None,
) -> int:
    """Run a command the way every pipeline CLI ends (docs/ARCHITECTURE.md "Contracts").

    The JSON result is the last line on stdout (exit 0); a :class:`PipelineError` or
    :class:`IcecoreError` is its one sentence on stderr (exit 1). ``ended`` is told the
    result or the error first (the job's audit outcome).
    """
    try:
        result = body()
    except (PipelineError, IcecoreError) as e:
        if ended is not None:
            ended(None, e)
        print(str(e), file=sys.stderr)
        return 1
    if ended is not None:
        ended(result, None)
    print(json.dumps(result))
    return 0


def own_intent(args: argparse.Namespace, argv: Sequence[str]) -> str:
    """Record the start of a job run from the command line (the OS user's); what to hand on.

    A job the app launched was recorded by the app (:data:`JOB_AUDIT_ENV` is set); one run
    by hand is recorded here, as the CLI records its commits: principal the OS user, source
    ``cli``. '' for a dry run (it changes nothing, and stays possible where the catalog is
    read-only), and when the table cannot be opened or its catalog keeps no log (the job
    then fails or runs as before).

    Raises:
        IcecoreError: the log could not be written (the job must then not run).
    """
    if args.dry_run:
        return ""
    try:
        table = load_table(args.table)
    except IcecoreError:
        return ""
    sink = audit_sink_for(table.catalog) if table.catalog is not None else None  # type: ignore[arg-type]
    if sink is None:
        return ""
    catalog = guard(
        table.catalog,  # type: ignore[arg-type]
        os_principal(),
        None,
        name=table.catalog.uri,  # type: ignore[union-attr]
        audit=sink,
        source="cli",
    )
    action = f"job:{args.job}"
    dotted = ".".join((*table.identifier.namespace, table.identifier.name))
    summary = f"python -m pipeline.maintenance {shlex.join(argv)}"
    event_id = catalog.record_intent(action, dotted, table.metadata_location, summary)
    return job_audit_env(catalog, event_id, action, dotted)


def audit_outcome(
    table_text: str, handed: str
) -> Callable[[dict[str, Any] | None, Exception | None], None]:
    """What writes this job's audit outcome, when its start was recorded as an intent.

    The app records the job's start before launching it and hands it over in
    :data:`~icecore.catalog.audit_store.JOB_AUDIT_ENV` (a job run by hand records its own:
    :func:`own_intent`); the job, which outlives the page, writes the end: ``committed``
    with the metadata after it, ``conflict`` when it lost a race with another writer,
    ``failed`` otherwise (DESIGN.md "Identity, roles and audit"). A log that cannot be
    written is said on stderr; the intent then reads as unknown.
    """

    def ended(result: dict[str, Any] | None, error: Exception | None) -> None:
        if not handed:
            return
        failpoint("job-before-outcome")
        try:
            table = load_table(table_text)
            sink = audit_sink_for(table.catalog) if table.catalog is not None else None  # type: ignore[arg-type]
            if sink is None:
                return
            if result is not None:
                before = (result.get("before") or {}).get("metadata_location")
                after = (result.get("after") or result.get("before") or {}).get("metadata_location")
                summary = json.dumps(jsonable(result.get("result", result.get("estimate"))))
                record_job_outcome(handed, sink, "committed", before, after, summary)
            else:
                lost = "lost a race" in str(error)
                record_job_outcome(
                    handed,
                    sink,
                    "conflict" if lost else "failed",
                    None,
                    None,
                    str(error)[:500],
                )
        except IcecoreError as e:
            print(f"The job's end could not be written to the audit log: {e}", file=sys.stderr)

    return ended


def _job(args: argparse.Namespace) -> dict[str, Any]:
    job = Job(args.job)
    if args.retain_last is not None and args.retain_last < 1:
        raise PipelineError("--retain-last must be at least 1 (a branch keeps its head).")
    # Everything that can be refused is refused before any output or JVM: one sentence.
    target, table = spark_table(args.table)
    procedure_call(target, job, args, table)
    dry_only = args.dry_run and job is not Job.REMOVE_ORPHAN_FILES
    master = args.master or default_master()
    found = recommendation(job, table, args)
    if found.force_reason and not args.force and not dry_only:
        raise PipelineError(
            f"{found.force_reason.removesuffix('.')}; coarsen the partition spec first, or "
            "pass --force to rewrite anyway."
        )
    if not dry_only:
        check_prerequisites()
        check_master(master)
    _say(f"resolved {args.table} at {table.metadata_location}")
    guess = jsonable(dict(found.estimate))
    _say(f"estimate from metadata: {json.dumps(guess)}")
    warning = {"warning": found.force_reason} if found.force_reason else {}
    if dry_only:
        return {
            "job": str(job),
            "table": args.table,
            "dry_run": True,
            "estimate": guess,
            **warning,
            "before": _state(table),
        }
    _say(f"starting Spark on {master}")
    # Spark's stage and task progress goes to the job folder's progress file (ui/jobs.py).
    result = on_spark(
        target,
        master,
        f"icecore-{job}",
        lambda s: reported(s, lambda: run_job(s, job, args.table, args, _say)),
    )
    return {**result, "estimate": guess}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one job; exit 0 with the JSON result, or 1 with one sentence on stderr."""
    args = parser().parse_args(argv)
    try:
        handed = os.environ.get(JOB_AUDIT_ENV) or own_intent(
            args, sys.argv[1:] if argv is None else argv
        )
    except IcecoreError as e:
        print(str(e), file=sys.stderr)
        return 1
    return answer(lambda: _job(args), audit_outcome(args.table, handed))


if __name__ == "__main__":
    sys.exit(main())
