"""Maintenance by policy: which jobs each table is due, why, and running them (issue 34, 5).

DESIGN.md "Catalog health": ``[[policies]]`` entries of ``icecore.toml`` say when a table's
maintenance jobs are due::

    [[policies]]
    tables = ["*"]                       # globs over ns.table (fnmatch: * ? [..])
    compact_small_file_share = 0.3       # rewrite_data_files when the small-file share passes it
    expire_older_than = "7d"             # expire_snapshots older than this ...
    expire_retain_last = 10              # ... keeping at least this many
    rewrite_manifests_per_snapshot = 100 # rewrite_manifests past this many manifests
    orphans_older_than = "3d"            # remove_orphan_files of files older than this

Which value a table gets, per key (so one entry may set a default and another refine one key):

1. the table property ``icecore.policy.<key>`` when the table sets it;
2. else the most specific ``[[policies]]`` entry that matches the table and sets the key: an
   entry with a glob that is the table's exact name beats any pattern, and among patterns the
   one with more literal characters (not ``*``, ``?``, ``[...]``) wins (``sales.*`` beats
   ``*``); on a tie, the later entry in the file wins;
3. else the key is unset and its job is never due.

Durations are a whole number and a unit: ``s``, ``m``, ``h``, ``d`` or ``w`` (``"7d"``).
``orphans_older_than`` is never below :data:`ORPHAN_FLOOR_MS` (one day): a younger file may
belong to a write in flight, and Spark refuses it too; a smaller value is refused, not raised.

A job is due when its key is set and icecore's estimate (:mod:`icecore.maintenance`, from
metadata alone) says it would act: a compaction that would leave more files than it removes
is not due (it needs ``--force``, a person's decision). :func:`evaluate` says, per table, the
jobs due with their estimate and command, and why each other job is not.

:func:`run_due` runs them: each job is ``python -m pipeline.maintenance JOB TABLE ...`` (the
app's job, which records its intent and outcome in the catalog's audit log as the CLI's user),
at most ``concurrency`` tables at once and one job per table at a time. A table's jobs run in
its own worker while that worker holds the table's lock: an exclusive ``flock`` on a file in
:func:`lock_dir` named by the catalog and table, which every ``icecore maintain`` process on
the host shares; a table whose lock is held is skipped (``"skipped": "running"``). The job
process inherits the lock, so it stays held until the job ends even if ``maintain`` is
killed, and the kernel drops it when both are gone (no stale locks).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icecore import maintenance
from icecore.catalog_health import WORKERS, table_health
from icecore.config import config_path
from icecore.errors import IcecoreError, ValidationError
from icecore.failpoints import failpoint
from icecore.health import Status
from icecore.identifier import TableIdentifier
from icecore.layout import snapshot_files
from icecore.maintenance import Job

if TYPE_CHECKING:
    from icecore.catalog import Catalog
    from icecore.table_data import TableData

POLICIES = "policies"
PROPERTY_PREFIX = "icecore.policy."
"""Table properties ``icecore.policy.<key>`` override the file's value for that table."""

COMPACT = "compact_small_file_share"
EXPIRE_OLDER = "expire_older_than"
EXPIRE_RETAIN = "expire_retain_last"
MANIFESTS = "rewrite_manifests_per_snapshot"
ORPHANS = "orphans_older_than"
KEYS = (COMPACT, EXPIRE_OLDER, EXPIRE_RETAIN, MANIFESTS, ORPHANS)
"""The policy keys (DESIGN.md "Catalog health"), in the order their jobs run."""

DAY_MS = 24 * 3600 * 1000
ORPHAN_FLOOR_MS = DAY_MS
"""``orphans_older_than`` may not be less: a younger unreached file may be a write in flight."""

LOCK_ENV = "ICECORE_MAINTAIN_LOCKS"
"""The folder of the per-table lock files (default ``icecore-maintain-locks`` in the temp dir)."""

_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": DAY_MS, "w": 7 * DAY_MS}
_DURATION = re.compile(r"^\s*(\d{1,9})\s*([smhdw])\s*$")
_GLOB_CHARS = re.compile(r"\*|\?|\[[^\]]*\]")
MAX_TABLE_GLOBS = 1000


def parse_duration(text: object, what: str) -> int:
    """Milliseconds of a duration such as ``"7d"`` (s, m, h, d or w).

    Raises:
        ValidationError: not a whole number and a unit.
    """
    found = _DURATION.match(text) if isinstance(text, str) else None
    if found is None:
        raise ValidationError(
            f'{what} must be a duration such as "7d" (a whole number and s, m, h, d or w), '
            f"not {str(text)[:40]!r}."
        )
    return int(found.group(1)) * _UNITS[found.group(2)]


def _value(key: str, raw: object, where: str) -> float | int:
    """A policy value checked and normalized (ms for durations)."""
    what = f"In {where}, {key}"
    if key == COMPACT:
        if isinstance(raw, str):
            with contextlib.suppress(ValueError):
                raw = float(raw)
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 1:
            raise ValidationError(f"{what} must be a share between 0 and 1, not {str(raw)[:40]!r}.")
        return float(raw)
    if key in (EXPIRE_RETAIN, MANIFESTS):
        number = int(raw) if isinstance(raw, str) and raw.strip().isdigit() else raw
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValidationError(
                f"{what} must be a whole number of at least 1, not {str(raw)[:40]!r}."
            )
        return number
    ms = parse_duration(raw, what)
    if key == ORPHANS and ms < ORPHAN_FLOOR_MS:
        raise ValidationError(
            f"{what} is {raw!r}, below the safety floor of 1d: a younger unreached file may "
            "belong to a write in flight."
        )
    return ms


@dataclass(frozen=True, slots=True)
class MaintenancePolicy:
    """One ``[[policies]]`` entry: the tables it names and the keys it sets.

    Attributes:
        tables: globs over ``ns.table``.
        values: the keys it sets, checked (durations in ms).
        index: its place in the file (0-based; later wins a tie).
    """

    tables: tuple[str, ...]
    values: Mapping[str, float | int]
    index: int

    def specificity(self, table: str) -> tuple[int, int, int] | None:
        """How closely the entry names ``table`` (higher wins), or None when it does not."""
        best: tuple[int, int, int] | None = None
        for glob in self.tables:
            if fnmatch.fnmatchcase(table, glob):
                exact = int(_GLOB_CHARS.search(glob) is None)
                found = (exact, len(_GLOB_CHARS.sub("", glob)), self.index)
                best = found if best is None or found > best else best
        return best


def parse_policies(raw: object, where: str) -> tuple[MaintenancePolicy, ...]:
    """The ``[[policies]]`` entries of a parsed config file (see the module doc).

    Raises:
        ValidationError: an entry is malformed or a value is invalid (one sentence naming the
            file and the key).
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValidationError(f"In {where}, policies must be [[policies]] entries.")
    found = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise ValidationError(f"In {where}, [[policies]] entry {index + 1} is not a table.")
        globs = entry.get("tables", ["*"])
        if (
            not isinstance(globs, list)
            or not globs
            or len(globs) > MAX_TABLE_GLOBS
            or not all(isinstance(g, str) and g.strip() for g in globs)
        ):
            raise ValidationError(
                f"In {where}, tables of [[policies]] entry {index + 1} must be a list of "
                'globs over ns.table, such as ["sales.*"].'
            )
        unknown = sorted(set(entry) - {"tables", *KEYS})
        if unknown:
            raise ValidationError(
                f"In {where}, [[policies]] entry {index + 1} has an unknown key "
                f"{unknown[0][:60]!r}; the keys are tables, {', '.join(KEYS)}."
            )
        values = {k: _value(k, entry[k], where) for k in KEYS if k in entry}
        found.append(MaintenancePolicy(tuple(g.strip() for g in globs), values, index))
    return tuple(found)


def load_policies(path: Path | None = None) -> tuple[MaintenancePolicy, ...]:
    """The ``[[policies]]`` of the config file (``ICECORE_CONFIG`` or ``./icecore.toml``).

    Raises:
        ValidationError: the file cannot be read or parsed, or a policy is invalid.
    """
    where = path if path is not None else config_path()
    try:
        raw = tomllib.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except OSError as e:
        raise ValidationError(f"Cannot read the config file {where}: {e.strerror}.") from e
    except tomllib.TOMLDecodeError as e:
        raise ValidationError(f"The config file {where} is not valid TOML: {e}.") from e
    return parse_policies(raw.get(POLICIES), str(where))


@dataclass(frozen=True, slots=True)
class Effective:
    """One key's value for a table and where it came from."""

    value: float | int
    source: str

    def to_dict(self, key: str) -> dict[str, Any]:
        """JSON: the value as written (durations again as ``"7d"``-style text) and its source."""
        shown: Any = self.value
        if key in (EXPIRE_OLDER, ORPHANS):
            shown = format_duration(int(self.value))
        return {"value": shown, "source": self.source}


def format_duration(ms: int) -> str:
    """``ms`` in the largest unit that divides it (``604800000`` -> ``"7d"``)."""
    for unit in ("w", "d", "h", "m", "s"):
        if ms % _UNITS[unit] == 0:
            return f"{ms // _UNITS[unit]}{unit}"
    return f"{ms}ms"  # pragma: no cover - values are whole seconds


def effective(
    table: str,
    policies: Sequence[MaintenancePolicy],
    properties: Mapping[str, str],
    where: str,
) -> dict[str, Effective]:
    """Each key's value for ``table`` (``ns.table``) and its source (see the module doc).

    Raises:
        ValidationError: a table property ``icecore.policy.<key>`` is invalid.
    """
    out: dict[str, Effective] = {}
    for key in KEYS:
        prop = f"{PROPERTY_PREFIX}{key}"
        if prop in properties:
            value = _value(key, properties[prop], f"table {table}'s property {prop}")
            out[key] = Effective(value, f"table property {prop}")
            continue
        best: tuple[tuple[int, int, int], MaintenancePolicy] | None = None
        for policy in policies:
            if key not in policy.values:
                continue
            rank = policy.specificity(table)
            if rank is not None and (best is None or rank > best[0]):
                best = (rank, policy)
        if best is not None:
            policy = best[1]
            out[key] = Effective(
                policy.values[key],
                f"{where} [[policies]] entry {policy.index + 1} (tables = {list(policy.tables)})",
            )
    return out


@dataclass(slots=True)
class TablePlan:
    """What a table is due, per :func:`evaluate`.

    Attributes:
        table: ``ns.table``.
        policies: the effective values and their sources.
        due: the jobs due: ``{job, reason, estimate, command}`` (command: after
            ``python -m pipeline.maintenance``, without ``--master``).
        not_due: why each job with a policy is not due: ``{job, reason}``.
        before: the table's health numbers now.
        error: one sentence when the table could not be judged.
    """

    table: str
    policies: dict[str, Effective] = field(default_factory=dict)
    due: list[dict[str, Any]] = field(default_factory=list)
    not_due: list[dict[str, Any]] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``icecore maintain --dry-run`` prints for the table."""
        return {
            "table": self.table,
            "policies": {k: v.to_dict(k) for k, v in self.policies.items()},
            "due": self.due,
            "not_due": self.not_due,
            "before": self.before,
            **({"error": self.error} if self.error else {}),
        }


HEALTH_KEYS = ("rows", "data_files", "small_file_share", "manifests", "snapshots", "data_bytes")
"""The health numbers shown before and after a run (:mod:`icecore.catalog_health`)."""


def _numbers(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in (*HEALTH_KEYS, "metadata_location")}


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


def plan_table(
    catalog: Catalog,
    ident: TableIdentifier,
    policies: Sequence[MaintenancePolicy],
    where: str,
    now_ms: int,
) -> TablePlan:
    """One table's due jobs (see the module doc); a table that cannot be read carries its error."""
    name = str(ident)
    plan = TablePlan(name)
    try:
        table = catalog.load_table(ident)
        plan.policies = effective(name, policies, table.metadata.properties, where)
        if not plan.policies:
            return plan
        row = table_health(catalog, ident, now_ms=now_ms, location=table.metadata_location)
        if row.get("error"):
            raise IcecoreError(str(row["error"]))
        plan.before = _numbers(row)
        _judge(plan, table, row, now_ms)
    except (IcecoreError, OSError) as e:
        plan.error = str(e) or type(e).__name__
    return plan


def _judge(plan: TablePlan, table: TableData, row: Mapping[str, Any], now_ms: int) -> None:
    """Fill ``plan.due`` and ``plan.not_due`` from the policies and icecore's estimates."""
    values = {k: v.value for k, v in plan.policies.items()}
    snapshot = table.metadata.current_snapshot()

    def due(rec: maintenance.Recommendation, reason: str) -> None:
        plan.due.append(
            {
                "job": str(rec.job),
                "reason": reason,
                "estimate": {
                    k: list(v) if isinstance(v, tuple) else v for k, v in rec.estimate.items()
                },
                "command": rec.command(plan.table),
            }
        )

    def not_due(job: Job, reason: str) -> None:
        plan.not_due.append({"job": str(job), "reason": reason})

    manifests = table.manifests(snapshot) if snapshot is not None else []
    files = None
    if COMPACT in values:
        share = row.get("small_file_share")
        limit = values[COMPACT]
        if share is None:
            not_due(
                Job.REWRITE_DATA_FILES,
                "The small-file share is not known (no snapshot, or "
                "more live files than icecore reads for it).",
            )
        elif share <= limit:
            not_due(
                Job.REWRITE_DATA_FILES, f"The small-file share {share:.2f} is not past {limit:g}."
            )
        else:
            files = snapshot_files(table, snapshot)
            rec = maintenance.recommendation(
                table, Job.REWRITE_DATA_FILES, manifests, files, now_ms
            )
            if rec.status is Status.WARN:
                due(rec, f"The small-file share {share:.2f} is past {limit:g}.")
            else:
                not_due(
                    Job.REWRITE_DATA_FILES,
                    f"The small-file share {share:.2f} is past "
                    f"{limit:g}, but {rec.title.lower()}: {rec.force_reason or rec.reason}",
                )
    if EXPIRE_OLDER in values or EXPIRE_RETAIN in values:
        older = int(now_ms - values[EXPIRE_OLDER]) if EXPIRE_OLDER in values else None
        retain = int(values[EXPIRE_RETAIN]) if EXPIRE_RETAIN in values else None
        rec = maintenance.expire_snapshots(table, now_ms, older_than_ms=older, retain_last=retain)
        count = int(rec.estimate.get("expired_snapshots_count", 0))  # type: ignore[arg-type]
        if count:
            due(rec, f"{count:,} snapshots are older than the policy keeps.")
        else:
            not_due(Job.EXPIRE_SNAPSHOTS, "No snapshot is past the policy's retention.")
    if MANIFESTS in values:
        limit = int(values[MANIFESTS])
        count = len(manifests)
        if count <= limit:
            not_due(
                Job.REWRITE_MANIFESTS,
                f"The current snapshot has {count:,} manifests, not more than {limit:,}.",
            )
        else:
            files = files if files is not None else snapshot_files(table, snapshot)
            rec = maintenance.recommendation(table, Job.REWRITE_MANIFESTS, manifests, files, now_ms)
            # The policy's limit decides, not the health check's own: due when the rewrite
            # leaves fewer manifests than it takes.
            taken = int(rec.estimate.get("rewritten_manifests_count", 0))  # type: ignore[arg-type]
            written = int(rec.estimate.get("added_manifests_count", 0))  # type: ignore[arg-type]
            if written < taken:
                due(rec, f"The current snapshot has {count:,} manifests, more than {limit:,}.")
            else:
                not_due(
                    Job.REWRITE_MANIFESTS,
                    f"{count:,} manifests, but rewriting the default spec's {taken:,} data "
                    f"manifests would write {written:,}.",
                )
    if ORPHANS in values:
        cutoff = now_ms - max(int(values[ORPHANS]), ORPHAN_FLOOR_MS)
        rec = maintenance.remove_orphan_files(table, now_ms, cutoff)
        count = int(rec.estimate.get("orphan_files_count", 0))  # type: ignore[arg-type]
        if count:
            due(
                rec,
                f"{count:,} files under the table location are reached by no metadata and "
                f"older than {_iso(cutoff)}.",
            )
        else:
            not_due(Job.REMOVE_ORPHAN_FILES, f"No orphan file older than {_iso(cutoff)}.")


def evaluate(
    catalog: Catalog,
    policies: Sequence[MaintenancePolicy] | None = None,
    *,
    where: str | None = None,
    now_ms: int | None = None,
) -> list[TablePlan]:
    """Per table of ``catalog`` (listing order): the jobs due, their estimates, and why.

    Policies are resolved before anything is read: a table no policy names costs one
    metadata read (its properties may set ``icecore.policy.<key>``), no manifest.
    """
    found = load_policies() if policies is None else policies
    source = where if where is not None else str(config_path())
    when = now_ms if now_ms is not None else int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    idents = catalog.list_tables()
    # Tables are read at once as the catalog page reads them (reads wait on storage).
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(lambda i: plan_table(catalog, i, found, source, when), idents))


def lock_dir() -> Path:
    """Where the per-table lock files live (``ICECORE_MAINTAIN_LOCKS`` or the temp dir)."""
    root = Path(os.environ.get(LOCK_ENV) or Path(tempfile.gettempdir()) / "icecore-maintain-locks")
    root.mkdir(parents=True, exist_ok=True)
    return root


def lock_path(catalog_uri: str, table: str) -> Path:
    """The lock file of one table of one catalog (named by a digest: nothing from a user)."""
    digest = hashlib.sha1(f"{catalog_uri}\0{table}".encode()).hexdigest()[:20]
    return lock_dir() / f"{digest}.lock"


@contextlib.contextmanager
def table_lock(catalog_uri: str, table: str) -> Iterator[int | None]:
    """Hold the table's lock: yields its file descriptor, or None when another holds it.

    Never waits: a table whose job is running is skipped, not queued. A process given the
    descriptor (``pass_fds``) holds the lock with this one, until both have closed it.
    """
    fd = os.open(lock_path(catalog_uri, table), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield fd
    finally:
        # Closed, never unlocked: an unlock would free the lock for a job process that
        # inherited the descriptor too; the lock ends when the last holder closes it.
        os.close(fd)


REPO = Path(__file__).resolve().parent.parent
"""The folder holding ``pipeline/`` (the job's module), where job processes start."""

JobRunner = Callable[[list[str], int], dict[str, Any]]
"""Runs one job's argv (after ``python -m pipeline.maintenance``) holding the lock fd."""


def run_job(argv: list[str], lock_fd: int) -> dict[str, Any]:
    """Run ``python -m pipeline.maintenance argv...``; its JSON result or its one-sentence error.

    The job process inherits ``lock_fd`` (so the table stays locked until it ends).
    """
    process = subprocess.run(
        [sys.executable, "-m", "pipeline.maintenance", *argv],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        pass_fds=(lock_fd,),
        check=False,
    )
    if process.returncode == 0:
        last = process.stdout.strip().splitlines()[-1:] or ["{}"]
        try:
            return {"ok": True, "result": json.loads(last[0])}
        except json.JSONDecodeError:
            return {"ok": False, "error": "The job ended without its JSON result."}
    lines = [line for line in process.stderr.strip().splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if not line.startswith("[")), None)
    error = (said or f"The job exited with status {process.returncode}.")[:500]
    return {"ok": False, "error": error, "exit_code": process.returncode}


def on_job_failed(table: str, job: str, error: str, catalog: str | None = None) -> None:
    """A failed policy job alerts ``[alerts]``'s webhook (DESIGN.md "Catalog health").

    Queued only (:func:`icecore.alerts.send_alert` never raises or blocks); ``maintain``
    waits a bounded time for it before it exits. Nothing is sent without a webhook.
    """
    from icecore.alerts import send_alert

    send_alert(
        {"event": "job_failed", "table": table, "catalog": catalog, "job": job, "error": error}
    )


def run_due(
    catalog: Catalog,
    catalog_text: str,
    plans: Sequence[TablePlan],
    *,
    master: str | None = None,
    concurrency: int = 2,
    runner: JobRunner = run_job,
    now_ms: Callable[[], int] | None = None,
) -> list[dict[str, Any]]:
    """Run every plan's due jobs (see the module doc); one JSON object per table.

    ``catalog_text`` is the CATALOG the jobs' ``CATALOG::ns.table`` names. Each object is the
    plan's, with ``runs`` (per job: its estimate, ``result`` or ``error``) and ``after`` (the
    table's health numbers after), or ``skipped: "running"`` when the table's lock was held.
    """
    clock = now_ms or (lambda: int(dt.datetime.now(dt.UTC).timestamp() * 1000))

    def one(plan: TablePlan) -> dict[str, Any]:
        out = plan.to_dict()
        if plan.error or not plan.due:
            return out
        with table_lock(catalog.uri, plan.table) as fd:
            if fd is None:
                out["skipped"] = "running"
                return out
            failpoint("maintain-locked")
            runs = []
            for job in plan.due:
                table_text = f"{catalog_text}::{plan.table}"
                argv = [job["command"][0], table_text, *job["command"][2:]]
                if master:
                    argv += ["--master", master]
                ended = runner(argv, fd)
                runs.append({"job": job["job"], "estimate": job["estimate"], **ended})
                if not ended["ok"]:
                    on_job_failed(plan.table, job["job"], str(ended.get("error")), catalog_text)
                    break  # the table's state is not what the next job was judged on
            out["runs"] = runs
        row = table_health(catalog, TableIdentifier.parse(plan.table), now_ms=clock())
        out["after"] = _numbers(row) if not row.get("error") else {"error": row["error"]}
        return out

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, plans))


def failed(results: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any table could not be judged or any job failed (``maintain`` exits 1)."""
    return any(
        r.get("error") or any(not run.get("ok") for run in r.get("runs", [])) for r in results
    )


__all__ = [
    "KEYS",
    "LOCK_ENV",
    "ORPHAN_FLOOR_MS",
    "PROPERTY_PREFIX",
    "Effective",
    "MaintenancePolicy",
    "TablePlan",
    "effective",
    "evaluate",
    "failed",
    "format_duration",
    "load_policies",
    "lock_path",
    "on_job_failed",
    "parse_duration",
    "parse_policies",
    "plan_table",
    "run_due",
    "run_job",
    "table_lock",
]
