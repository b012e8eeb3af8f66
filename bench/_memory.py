"""Peak memory of the current process, measured so a benchmark child reports only its own."""

from __future__ import annotations

import resource
from pathlib import Path


def peak_mib() -> float:
    """This process's peak resident memory in MiB.

    ``VmHWM`` from ``/proc/self/status`` belongs to the current address space, so a child
    started by fork + exec reports its own peak; ``ru_maxrss`` survives ``execve`` on Linux and
    would include the parent's peak at fork time (the fallback where /proc is missing).
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
