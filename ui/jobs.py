"""Maintenance jobs launched from the app and followed while they run.

The web process never imports pyspark: a job is ``python -m pipeline.maintenance ...`` in its
own process group, started through ``sh`` so its exit status lands in a file. Each job has a
folder (``ICECORE_JOBS_DIR``, else a folder in the temp dir) holding what it was asked
(``job.json``), its progress and Spark's log (``log``, stderr), its result (``stdout``, the
last line JSON) and its exit status (``rc``). That folder is the source of truth, so a job
survives page reruns and reloads; the page keeps only job ids in session state.

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
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import uuid
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from ui.shell import CONFIG_ENV, DEFAULT_CONFIG

REPO = Path(__file__).resolve().parent.parent
JOBS_ENV = "ICECORE_JOBS_DIR"
MASTER_ENV = "ICECORE_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"


class State(StrEnum):
    """Where a job is."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    LOST = "lost"
    """The process is gone without an exit status (the machine restarted, or it was killed)."""


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A job's state as its folder tells it.

    Attributes:
        job_id: the folder's name.
        state: running, succeeded, failed or lost.
        request: what was launched (argv, table, catalog, start time, metadata before).
        log_tail: the last lines of the log (progress and Spark's own output).
        result: the JSON result when it succeeded.
        error: the one sentence it ended with when it failed.
    """

    job_id: str
    state: State
    request: dict[str, Any]
    log_tail: tuple[str, ...]
    result: dict[str, Any] | None
    error: str | None


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


def launch(argv: list[str], module: str = "pipeline.maintenance", **request: Any) -> str:
    """Start ``python -m <module> argv...`` in the background; return its job id.

    ``module`` is ``pipeline.maintenance`` (a maintenance job) or ``pipeline.query`` (a
    full-table query from the SQL page); both end with one JSON line on stdout.
    """
    job_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    folder = jobs_dir() / job_id
    folder.mkdir()
    command = [sys.executable, "-m", module, *argv]
    (folder / "job.json").write_text(
        json.dumps({**request, "argv": argv, "started_ms": int(time.time() * 1000)})
    )
    script = (
        f"{shlex.join(command)} >{shlex.quote(str(folder / 'stdout'))} "
        f"2>{shlex.quote(str(folder / 'log'))}; echo $? >{shlex.quote(str(folder / 'rc.tmp'))} "
        f"&& mv {shlex.quote(str(folder / 'rc.tmp'))} {shlex.quote(str(folder / 'rc'))}"
    )
    process = subprocess.Popen(
        ["sh", "-c", script],
        cwd=REPO,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _CHILDREN[process.pid] = process
    threading.Thread(
        target=_reap, args=(process,), name=f"icecore-job-{job_id}", daemon=True
    ).start()
    (folder / "pid").write_text(str(process.pid))
    return job_id


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""The jobs' ``sh`` processes this process started and has not reaped yet, by pid."""


def _reap(process: subprocess.Popen[bytes]) -> None:
    """Wait for a job's ``sh`` to end (so it never lingers as a zombie), then forget it."""
    process.wait()
    _CHILDREN.pop(process.pid, None)


def _alive(pid: int) -> bool:
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


def status(job_id: str, tail: int = 40) -> JobStatus:
    """Read a job's folder."""
    folder = jobs_dir() / job_id
    request = json.loads((folder / "job.json").read_text())
    log = _lines(folder / "log")
    rc_lines = _lines(folder / "rc")
    result: dict[str, Any] | None = None
    error: str | None = None
    if rc_lines:
        out = _lines(folder / "stdout")
        if rc_lines[0].strip() == "0" and out:
            result = json.loads(out[-1])
            state = State.SUCCEEDED
        else:
            state = State.FAILED
            error = log[-1] if log else f"The job exited with status {rc_lines[0]}."
    elif _alive(int((folder / "pid").read_text())):
        state = State.RUNNING
    else:
        state = State.LOST
        error = "The job's process ended without an exit status (it was killed)."
    return JobStatus(job_id, state, request, tuple(log[-tail:]), result, error)


def cancel(job_id: str) -> None:
    """Stop a running job (its whole process group); an uncommitted job changes nothing."""
    pid = int((jobs_dir() / job_id / "pid").read_text())
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
