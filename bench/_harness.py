"""What every benchmark shares: fresh child processes, their own peak memory, the report."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any


def peak_mib(pid: int | str = "self") -> float:
    """A process's peak resident memory in MiB (this one by default).

    ``VmHWM`` from ``/proc/self/status`` belongs to the current address space, so a child
    started by fork + exec reports its own peak; ``ru_maxrss`` survives ``execve`` on Linux and
    would include the parent's peak at fork time (the fallback where /proc is missing).
    """
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    if pid != "self":
        return 0.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(module: str, args: list[str]) -> dict[str, Any]:
    """Run ``python -m module args`` from the repository root; its last stdout line is JSON."""
    out = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def publish(report: str, record: str | None) -> None:
    """Print a Markdown report and, when asked, append it to the results file."""
    print(report)
    if record:
        with Path(record).open("a", encoding="utf-8") as handle:
            handle.write(report + "\n")
