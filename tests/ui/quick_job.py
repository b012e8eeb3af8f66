"""A quick job for the jobs tests: ``python -m tests.ui.quick_job [STATUS [SECONDS]]``.

Like a maintenance job it ends with one JSON line on stdout; a non-zero STATUS makes it fail
with one sentence on stderr. SECONDS makes it sleep first (a job that runs long enough to be
seen, refused a second start and cancelled from another session); a third argument, SECONDS
too, first starts a process in the job's group that ignores SIGTERM and lives that long (as
Spark's JVM outlives a cancelled job's Python for its shutdown).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    """Print the result line (or the error sentence) and return the exit status asked for."""
    status = int(argv[0]) if argv else 0
    if len(argv) > 2:
        subprocess.Popen(["sh", "-c", f"trap '' TERM; sleep {float(argv[2])}"])
    if len(argv) > 1:
        print("[quick job] sleeping", file=sys.stderr, flush=True)
        time.sleep(float(argv[1]))
    if status:
        print(f"The quick job failed with status {status} as asked.", file=sys.stderr)
        return status
    print(json.dumps({"done": True, "argv": argv}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
