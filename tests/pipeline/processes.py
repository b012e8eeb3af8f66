"""Watching the machine's process list for a secret while a Spark job runs.

PySpark hands every ``SparkSession.builder`` setting to ``spark-submit`` as ``--conf
key=value``, which any user sees in ``ps``; these helpers read every process's
``/proc/PID/cmdline`` several times a second for as long as the job runs.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path


def command_lines() -> list[str]:
    """Every process's command line on this machine (the readable ones)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return found


def run_watching(
    args: Sequence[str],
    secret: str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = 900,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``args`` to its end; returns its result and every command line that held ``secret``.

    Raises:
        subprocess.TimeoutExpired: the process ran longer than ``timeout`` (it is killed).
    """
    # Files, not pipes: nobody reads while polling, and a full pipe would stall the job.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(list(args), cwd=cwd, env=env, stdout=out, stderr=err)
        exposed: list[str] = []
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(list(args), timeout)
                exposed += [line[:300] for line in command_lines() if secret in line]
                time.sleep(0.2)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(list(args), proc.returncode, out.read(), err.read())
    return result, exposed
