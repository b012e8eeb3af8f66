"""A job that ends at once: ``python -m tests.ui.quick_job [STATUS]`` (the jobs tests launch it).

Like a maintenance job it ends with one JSON line on stdout; a non-zero STATUS makes it fail
with one sentence on stderr.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    """Print the result line (or the error sentence) and return the exit status asked for."""
    status = int(argv[0]) if argv else 0
    if status:
        print(f"The quick job failed with status {status} as asked.", file=sys.stderr)
        return status
    print(json.dumps({"done": True, "argv": argv}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
