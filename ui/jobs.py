"""Maintenance jobs launched from the app and followed while they run.

The web process never imports pyspark: a job is ``python -m pipeline.maintenance ...`` in its
own process group, started through ``sh`` so its exit status lands in a file. Each job has a
folder (``ICECORE_JOBS_DIR``, else a folder in the temp dir) holding what it was asked
(``job.json``), its progress and Spark's log (``log``, stderr), its result (``stdout``, the
last line JSON), its exit status (``rc``), Spark's stage and task progress
(``progress.json``, written by the job while it runs) and, once cancelled, who asked and when
(``cancelled``). That folder is the source of truth: a job belongs to the server, not to the
browser session that started it, so every session, tab and colleague sees the jobs of the
table it looks at (:func:`table_jobs`) and can cancel them (:func:`cancel`).

One maintenance job runs per table at a time, across every process that shares the jobs
folder: :func:`launch` with ``one_per_table`` checks and takes the table's lock
(``locks/<digest>.lock``, holding the job id) while it holds an exclusive ``fcntl.flock`` on
the table's guard file, so two starts cannot both see the table free. The lock is held for
as long as the job it names is running; once that job has ended (finished, cancelled, or its
process gone without a status) the lock is stale and the next start takes it over.
:func:`launch_maintenance` also takes ``icecore maintain``'s lock on the table
(:func:`icecore.maintenance_policies.table_lock`) and hands it to the job process, which holds
it until it ends: ``maintain`` skips the table meanwhile, and the app refuses a job while a
``maintain`` job runs on it.

The ``sh`` is this process's child, and a finished child stays a zombie until its parent
waits for it. Each job therefore gets a daemon thread that waits for its ``sh`` (the pattern
of asyncio's ``ThreadedChildWatcher``): it is reaped the moment it ends, whether or not a
page is open, and the page never blocks. A double fork (``init`` adopting the job) is not
enough: in the Docker image the app is PID 1 (``exec streamlit``), so orphans come back to
it, with no ``Popen`` left to wait for them. The waiting thread holds no state a status
needs (that is the folder's ``rc``), only blocks in ``waitpid`` (no C++ on its stack, so
nothing for the interpreter's exit to abort), and ends with the job.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from icecore.access import Role
from icecore.catalog import TableIdentifier
from icecore.catalog.audit_store import JOB_AUDIT_ENV, job_audit_env
from icecore.catalog.guarded import GuardedCatalog
from icecore.errors import IcecoreError
from icecore.maintenance_policies import table_lock
from pipeline.progress import PROGRESS_ENV
from ui.shell import CONFIG_ENV, DEFAULT_CONFIG

REPO = Path(__file__).resolve().parent.parent
JOBS_ENV = "ICECORE_JOBS_DIR"
MASTER_ENV = "ICECORE_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"
PROGRESS_FILE = "progress.json"
CANCELLED_FILE = "cancelled"
RECENT = 5
"""Finished jobs of a table listed after its running one."""


class JobRunning(IcecoreError):
    """A job is already running on the table (one maintenance job per table at a time)."""


class State(StrEnum):
    """Where a job is."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    """Someone cancelled it (from any session) and it stopped without finishing."""
    LOST = "lost"
    """The process is gone without an exit status (the machine restarted, or it was killed)."""


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A job's state as its folder tells it.

    Attributes:
        job_id: the folder's name.
        state: running, succeeded, failed, cancelled or lost.
        request: what was launched (argv, table, catalog, start time, metadata before).
        log_tail: the last lines of the log (progress and Spark's own output).
        result: the JSON result when it succeeded.
        error: the one sentence it ended with when it failed, was cancelled or lost.
        progress: Spark's stage and task progress as the job last wrote it (``line`` is
            its one-line summary), None before Spark starts or for a job that writes none.
    """

    job_id: str
    state: State
    request: dict[str, Any]
    log_tail: tuple[str, ...]
    result: dict[str, Any] | None
    error: str | None
    progress: dict[str, Any] | None = None
    cancelling: bool = False
    """Running, with a cancel asked for: its processes are stopping."""

    @property
    def started_ms(self) -> int:
        """When it was launched (ms since the epoch)."""
        return int(self.request.get("started_ms") or 0)

    @property
    def over(self) -> bool:
        """Whether it has ended (any state but running)."""
        return self.state is not State.RUNNING


def jobs_dir() -> Path:
    """Where job folders live."""
    root = Path(os.environ.get(JOBS_ENV) or Path(tempfile.gettempdir()) / "icecore-jobs")
    root.mkdir(parents=True, exist_ok=True)
    return root


def spark_master() -> str:
    """The Spark master jobs run on.

    ``ICECORE_SPARK_MASTER``, else ``spark_master`` in the config file (``ICECORE_CONFIG``,
    default ``./icecore.toml``), else ``local[*]``.
    """
    env = os.environ.get(MASTER_ENV, "").strip()
    if env:
        return env
    try:
        path = Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)
        value = tomllib.loads(path.read_text(encoding="utf-8")).get("spark_master")
    except (OSError, tomllib.TOMLDecodeError):
        value = None
    return value.strip() if isinstance(value, str) and value.strip() else DEFAULT_MASTER


def launch(
    argv: list[str],
    module: str = "pipeline.maintenance",
    *,
    one_per_table: bool = False,
    env: Mapping[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    **request: Any,
) -> str:
    """Start ``python -m <module> argv...`` in the background; return its job id.

    ``module`` is ``pipeline.maintenance`` (a maintenance job) or ``pipeline.query`` (a
    full-table query from the SQL page); both end with one JSON line on stdout.

    Args:
        argv: the module's command line.
        module: the module to run.
        one_per_table: refuse the start while another job runs on ``request["table"]``
            (checked and taken atomically across processes; see the module docstring).
        env: more environment variables for the job (never a secret: job.json does not
            hold them, but ``/proc`` shows a process's environment to its user).
        pass_fds: file descriptors the job inherits (a lock it holds while it runs).
        **request: what the job folder's ``job.json`` records (``job``, ``table``...).

    Raises:
        JobRunning: ``one_per_table`` and a job is running on the table.
    """
    if not one_per_table:
        return _start(argv, module, request, env, pass_fds)
    table = str(request.get("table") or "")
    if not table:
        raise ValueError("one_per_table needs the table the job runs on")
    with _guard(table):
        holder = running_job(table)
        if holder is not None:
            raise JobRunning(_refusal(holder, table))
        job_id = _start(argv, module, request, env, pass_fds)
        _write_atomic(_lock_path(table), job_id)
    return job_id


def _refusal(holder: JobStatus, table: str) -> str:
    started = dt.datetime.fromtimestamp(holder.started_ms / 1000, tz=dt.UTC)
    return (
        f"{holder.request.get('job') or 'A job'} (job {holder.job_id}, started "
        f"{started:%Y-%m-%d %H:%M:%S} UTC) is already running on {table}; wait for it to end "
        "or cancel it before starting another."
    )


def launch_maintenance(
    catalog: GuardedCatalog,
    identifier: TableIdentifier,
    argv: list[str],
    *,
    job: str,
    table: str,
    before: str | None,
    **request: Any,
) -> str:
    """Start a maintenance job for ``catalog``'s principal, if they own the table; audited.

    Enforced here, where the job starts, whatever a page shows: the job needs the owner role
    on the table (DESIGN.md "Identity, roles and audit"; a refusal is recorded). Its start is
    written to the catalog's audit log as an intent (action ``job:<kind>``, who launched it)
    before the process exists, and the job process writes the outcome when it ends
    (``pipeline.maintenance``, handed the intent through
    :data:`~icecore.catalog.audit_store.JOB_AUDIT_ENV`): a job killed before that stays an
    intent, which reads as ``unknown``.

    Raises:
        Forbidden: the principal does not own the table.
        JobRunning: a job is running on the table (recorded as failed to start).
        IcecoreError: the audit log could not be written (nothing was started).
    """
    catalog.require(identifier, Role.OWNER, "run a maintenance job")
    holder = running_job(table)
    if holder is not None:
        raise JobRunning(_refusal(holder, table))
    action = f"job:{job}"
    dotted = ".".join((*identifier.namespace, identifier.name))
    event_id = catalog.record_intent(
        action, dotted, before, f"python -m pipeline.maintenance {shlex.join(argv)}"
    )
    handed = {JOB_AUDIT_ENV: job_audit_env(catalog, event_id, action, dotted)}
    try:
        # ``icecore maintain``'s lock on the table too: taken here, inherited by the job.
        with table_lock(catalog.uri, dotted) as held:
            if held is None:
                raise JobRunning(
                    f"icecore maintain is running a job on {table}; wait for it to end "
                    "before starting another."
                )
            return launch(
                argv,
                one_per_table=True,
                env=handed if catalog.audit is not None else None,
                pass_fds=(held,),
                job=job,
                table=table,
                before=before,
                audit_event=event_id,
                **request,
            )
    except (JobRunning, OSError) as e:
        catalog.record_outcome(event_id, action, dotted, "failed", before, None, str(e))
        raise


def _start(
    argv: list[str],
    module: str,
    request: dict[str, Any],
    env: Mapping[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> str:
    job_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    folder = jobs_dir() / job_id
    folder.mkdir()
    command = [sys.executable, "-m", module, *argv]
    started_ms = int(time.time() * 1000)
    script = (
        f"{shlex.join(command)} >{shlex.quote(str(folder / 'stdout'))} "
        f"2>{shlex.quote(str(folder / 'log'))}; echo $? >{shlex.quote(str(folder / 'rc.tmp'))} "
        f"&& mv {shlex.quote(str(folder / 'rc.tmp'))} {shlex.quote(str(folder / 'rc'))}"
    )
    process = subprocess.Popen(
        ["sh", "-c", script],
        cwd=REPO,
        env={**os.environ, **(env or {}), PROGRESS_ENV: str(folder / PROGRESS_FILE)},
        start_new_session=True,
        pass_fds=pass_fds,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _CHILDREN[process.pid] = process
    threading.Thread(
        target=_reap, args=(process,), name=f"icecore-job-{job_id}", daemon=True
    ).start()
    # The pid first, job.json last: a folder other sessions list (it has job.json) can
    # always be followed and cancelled.
    _write_atomic(folder / "pid", str(process.pid))
    _write_atomic(
        folder / "job.json", json.dumps({**request, "argv": argv, "started_ms": started_ms})
    )
    return job_id


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so a reader sees the whole old file or the whole new one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(text)
    os.replace(partial, path)


def _lock_path(table: str) -> Path:
    folder = jobs_dir() / "locks"
    folder.mkdir(exist_ok=True)
    return folder / f"{hashlib.sha1(table.encode()).hexdigest()[:16]}.lock"


@contextlib.contextmanager
def _guard(table: str) -> Iterator[None]:
    """Hold the table's exclusive ``flock`` (released when the block ends or the process dies)."""
    guard = _lock_path(table).with_suffix(".guard")
    with guard.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def running_job(table: str) -> JobStatus | None:
    """The job holding the table's lock while it runs; None when the table is free.

    A lock whose job has ended, whose folder is gone or unreadable, is stale: None.
    """
    try:
        job_id = _lock_path(table).read_text().strip()
    except OSError:
        return None
    try:
        found = status(job_id)
    except (OSError, ValueError):
        return None
    return found if found.state is State.RUNNING else None


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""The jobs' ``sh`` processes this process started and has not reaped yet, by pid."""


def _reap(process: subprocess.Popen[bytes]) -> None:
    """Wait for a job's ``sh`` to end (so it never lingers as a zombie), then forget it."""
    process.wait()
    _CHILDREN.pop(process.pid, None)


def _alive(pid: int) -> bool:
    """Whether the job whose ``sh`` is ``pid`` still runs: the ``sh``, or anything of its group.

    After a cancel the ``sh`` ends at once but Spark's JVM (same process group) runs its
    shutdown for a moment, its tasks still writing files; the job ends when the last of its
    processes does, so its lock holds and the files it left are listed only then.
    """
    return _sh_alive(pid) or _group_alive(pid)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (a zombie is not).

    A zombie counts as gone: in the Docker image the app is PID 1 and adopts the job's
    orphans, which Python never reaps. Without ``/proc``, any member counts.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        state, _, group = stat[stat.rindex(")") + 2 :].split()[:3]
        if int(group) == pgid and state != "Z":
            return True
    return False


def _sh_alive(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:  # ours: its waiting thread sets the return code when it ends
        return child.returncode is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A finished child not yet reaped by us is a zombie: reap it so it reads as gone.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == 0


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return []


_JOB_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{8}")
"""What :func:`_start` names a job folder; any other id is refused before a path is made."""


def _folder(job_id: str) -> Path:
    """The folder of job ``job_id``; an id that is not one :func:`_start` makes is refused.

    Ids come back from lock files and callers: ``../x`` or ``/abs`` must never name a
    folder outside the jobs folder (a cancel writes a file there and signals its pid).

    Raises:
        ValueError: not a job id.
    """
    if not _JOB_ID.fullmatch(job_id):
        raise ValueError(f"{job_id[:80]!r} is not a job id.")
    return jobs_dir() / job_id


def status(job_id: str, tail: int = 40) -> JobStatus:
    """Read a job's folder (ValueError: not a job id; OSError: no such job)."""
    folder = _folder(job_id)
    request = json.loads((folder / "job.json").read_text())
    log = _lines(folder / "log")
    rc_lines = _lines(folder / "rc")
    cancelled = _lines(folder / CANCELLED_FILE)
    result: dict[str, Any] | None = None
    error: str | None = None
    out = _lines(folder / "stdout") if rc_lines else []
    if rc_lines and rc_lines[0].strip() == "0" and out:
        result = json.loads(out[-1])
        state = State.SUCCEEDED
    elif not rc_lines and _alive(int((folder / "pid").read_text())):
        state = State.RUNNING
    elif cancelled:
        state = State.CANCELLED
        error = cancelled[0]
    elif rc_lines:
        state = State.FAILED
        error = log[-1] if log else f"The job exited with status {rc_lines[0]}."
    else:
        state = State.LOST
        error = "The job's process ended without an exit status (it was killed)."
    return JobStatus(
        job_id,
        state,
        request,
        tuple(log[-tail:]),
        result,
        error,
        _progress(folder),
        cancelling=state is State.RUNNING and bool(cancelled),
    )


def _progress(folder: Path) -> dict[str, Any] | None:
    try:
        found = json.loads((folder / PROGRESS_FILE).read_text())
    except (OSError, ValueError):  # none yet, or (never, it is replaced whole) half written
        return None
    return found if isinstance(found, dict) else None


def table_jobs(table: str, recent: int = RECENT) -> list[JobStatus]:
    """The jobs launched on ``table`` from any session: running first, then the latest ended.

    Args:
        table: the table key jobs were launched with (``catalog::ns.table``).
        recent: how many ended jobs to list after the running ones.
    """
    found: list[JobStatus] = []
    for folder in jobs_dir().iterdir():
        try:
            request = json.loads((folder / "job.json").read_text())
            if request.get("table") == table:
                found.append(status(folder.name))
        except (OSError, ValueError):  # not a job folder, or one being written
            continue
    found.sort(key=lambda j: (j.started_ms, j.job_id), reverse=True)
    running = [j for j in found if j.state is State.RUNNING]
    ended = [j for j in found if j.state is not State.RUNNING][:recent]
    return running + ended


def cancel(job_id: str, by: str = "", table: str | None = None) -> None:
    """Stop a running job (its whole process group), from any session or process.

    The ``cancelled`` file is written first, so the job reads as cancelled (not lost) once
    its process is gone. An uncommitted job changes nothing: an Iceberg commit is one atomic
    swap of the metadata location, but the files it wrote before stay (see the page).
    A job that has ended is left alone.

    Args:
        job_id: the job, as :func:`launch` named it.
        by: who cancels, for the job's record.
        table: when given, the table the job must have been launched on.

    Raises:
        IcecoreError: no such job, or a job of another table.
    """
    try:
        found = status(job_id)
    except (OSError, ValueError) as e:
        raise IcecoreError(f"There is no job {job_id[:80]!r} to cancel.") from e
    if table is not None and found.request.get("table") != table:
        raise IcecoreError(f"Job {job_id} is not a job of table {table[:200]}.")
    if found.state is not State.RUNNING:
        return  # ended meanwhile; its pid may be another process's by now: never signalled
    folder = _folder(job_id)
    when = dt.datetime.now(dt.UTC)
    who = f" from {by}" if by else ""
    _write_atomic(folder / CANCELLED_FILE, f"Cancelled{who} at {when:%Y-%m-%d %H:%M:%S} UTC.")
    pid = int((folder / "pid").read_text())
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
