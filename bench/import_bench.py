"""What starting Icecore costs: ``import icecore`` and the CLI's ``history`` on small tables.

    python -m bench.import_bench [--before DIR] [--runs 10] [--record bench/import_bench.results.md]

``--before DIR`` is another checkout to compare against (for example ``git worktree add DIR
<commit>``); the two trees alternate run by run, so drift of a shared machine hits both.
Every run is a fresh interpreter started in the tree it measures; each tree's bytecode is
compiled first and ``PYTHONDONTWRITEBYTECODE`` is unset, so the figures are what an
installed package costs, not the compiler's. The child reports its own peak RSS; the parent
times it from start to exit and prints medians (issue 18 item 5: under 0.3 s and 90 MiB for
the import, under 0.5 s for ``history``). ``history`` runs on two tables: one with delete
files (its manifest lists are read for the live row counts, so pyarrow and numpy load) and
one without (the snapshot summaries answer; issue 32 item 4).
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SMALL_TABLE = "tests/data/metadata/spark/trips-00024.metadata.json"
DELETE_FREE_TABLE = "tests/data/metadata/spark/trips-00004.metadata.json"
PEAK = "import sys; sys.stderr.write(open('/proc/self/status').read())"
WATCHED = ("pandas", "polars", "sqlglot", "duckdb", "fastavro", "fsspec", "pyarrow.parquet")
"""Libraries a first scan's report says it loaded (issue 32 item 3)."""
CASES = {
    "import icecore": f"import icecore\n{PEAK}",
    "history (CLI)": (
        "import contextlib, io\nfrom icecore.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    main(['history', {SMALL_TABLE!r}])\n"
        f"{PEAK}"
    ),
    "history (CLI, no deletes)": (
        "import contextlib, io\nfrom icecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['history', {DELETE_FREE_TABLE!r}])\n{PEAK}"
    ),
    "inspect snapshots (CLI)": (
        "import contextlib, io\nfrom icecore.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['inspect', {SMALL_TABLE!r}, 'snapshots'])\n{PEAK}"
    ),
}


def run_once(tree: Path, code: str) -> tuple[float, float, str]:
    """Wall seconds from start to exit, the child's own peak RSS in MiB, what it loaded.

    The last is what the child wrote before its status (the first scan's library list).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    seconds = time.perf_counter() - start
    hwm = next(line for line in done.stderr.splitlines() if line.startswith("VmHWM:"))
    loaded = done.stderr.split("Name:", 1)[0].strip()
    return seconds, int(hwm.split()[1]) / 1024, loaded


def main() -> None:
    """Measure each case on each tree, alternating, and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to compare against")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--record", help="append the report to this Markdown file")
    parser.add_argument(
        "--scan",
        metavar="TABLE",
        help="also time a first scan of TABLE to Arrow (a small table: CATALOG::ns.table)",
    )
    parser.add_argument("--only", action="append", help="run only this case (repeatable)")
    args = parser.parse_args()
    cases = dict(CASES)
    if args.scan:
        # What issue 32 item 3 asks of a first scan: which libraries it loads, and its time.
        loaded = (
            "import json, sys\n"
            "sys.stderr.write(json.dumps(sorted(m for m in LOADED if m in sys.modules)))\n"
        )
        cases["first scan to Arrow"] = (
            f"import icecore\nicecore.load_table({args.scan!r}).scan().plan().to_arrow()\n"
            f"LOADED = {WATCHED!r}\n{loaded}{PEAK}"
        )
    if args.only:
        cases = {k: v for k, v in cases.items() if k in args.only}
    trees = {"after": REPO} | ({"before": args.before.resolve()} if args.before else {})
    for tree in trees.values():
        compileall.compile_dir(tree / "icecore", quiet=1)
    results: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    for case, code in cases.items():
        for tree in trees.values():
            run_once(tree, code)  # warm the page cache
        for _ in range(args.runs):
            for name, tree in trees.items():
                results.setdefault((case, name), []).append(run_once(tree, code))
    load = os.getloadavg()[0]
    lines = [
        f"\n## {dt.date.today()}: {platform.node()}, {os.cpu_count()} CPUs, "
        f"load {load:.1f}, {args.runs} runs, Python {platform.python_version()}\n",
        "| case | tree | wall s (median) | min | max | peak MiB (median) | loaded |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (case, name), runs in results.items():
        walls = [w for w, _, _ in runs]
        peaks = [p for _, p, _ in runs]
        lines.append(
            f"| {case} | {name} | {statistics.median(walls):.3f} | {min(walls):.3f} | "
            f"{max(walls):.3f} | {statistics.median(peaks):.1f} | {runs[-1][2]} |"
        )
    report = "\n".join(lines)
    print(report)
    if args.record:
        with Path(args.record).open("a", encoding="utf-8") as handle:
            handle.write(report + "\n")


if __name__ == "__main__":
    main()
