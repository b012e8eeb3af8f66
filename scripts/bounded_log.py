"""Copy standard input to standard output and to a log file that never grows past a bound.

``scripts/serve.sh`` pipes the server's output through this when ``ICECORE_LOG_FILE`` is set:
a server left running for weeks (or one whose log was flooded, 4.1 GB in 26 minutes once)
keeps at most twice the bound on disk. When the file reaches the bound it becomes ``FILE.1``
(replacing the previous one) and a new file is started.

Usage: ``python scripts/bounded_log.py FILE MAX_BYTES``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO


def copy_bounded(source: BinaryIO, echo: BinaryIO | None, path: Path, max_bytes: int) -> None:
    """Copy ``source`` line by line to ``echo`` and to ``path``, rotating at ``max_bytes``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = path.open("ab")
    try:
        for line in source:
            if echo is not None:
                echo.write(line)
                echo.flush()
            if out.tell() + len(line) > max_bytes and out.tell() > 0:
                out.close()
                os.replace(path, path.with_name(path.name + ".1"))
                out = path.open("ab")
            out.write(line[:max_bytes])
            out.flush()
    finally:
        out.close()


def main(argv: list[str]) -> int:
    """Run the copy with the file and bound given on the command line."""
    if len(argv) != 2 or not argv[1].isdigit() or int(argv[1]) <= 0:
        print("usage: python scripts/bounded_log.py FILE MAX_BYTES", file=sys.stderr)
        return 2
    copy_bounded(sys.stdin.buffer, sys.stdout.buffer, Path(argv[0]), int(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
