"""Planning before and after a change to the core: two source trees, paired, in one run.

    python -m bench.core_bench --before /tmp/core_before --after /tmp/core_after
        --table /tmp/benchwh/hadoop/bench/files_1000000 [--runs 3]
        [--filters sel,time10,none,point] [--record bench/core_bench.results.md]

Issue 18's constraint is that plan_bench's cold, warm and peak figures do not get worse; on a
machine shared with CI only a paired comparison can say so. The trees are ``git archive``
extracts (``git archive 18f065c | tar -x -C /tmp/core_before``). Every run is a fresh
process started in its tree with ``PYTHONPATH`` set to it (so the decode workers it starts
import the same tree), an empty manifest cache in a fresh ``ICECORE_CACHE_DIR``, and the
trees alternate run by run (before, after, after, before, ...). A run measures:

- ``import``: ``import icecore`` alone, then ``first use``: the libraries the after tree
  loads at the first plan rather than at import (plan_bench's ``ICECORE_FIRST_USE``), so
  that cold compares like with like;
- ``cold``: load the table, plan, and iterate every task touching what a reader uses (path,
  size, records, deletes, residual), as a user consumes a plan; ``warm``: the same again in
  the same process;
- ``cpu``: CPU seconds of cold and warm, the process's own plus its decode workers';
- ``peak``: the process's peak RSS, and its decode workers' largest.

Planned file counts must agree between the trees. Reported: medians per tree, the ratio of
medians, and the median and range of the per-pair ratios (after / before).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._harness import peak_mib, publish
from bench.plan_bench import ICECORE_FIRST_USE, filters, point_day

TREES = ("before", "after")
FIRST_USE = (
    *ICECORE_FIRST_USE,
    "pyarrow.pandas_compat",
    "pyarrow.vendored.version",
)
"""What ``import icecore`` no longer loads since issue 18: plan_bench's ``ICECORE_FIRST_USE``,
and the two modules pyarrow itself loads at the after tree's first ``pc.fill_null`` (found
by profiling ``point``: ~1-4 ms that would otherwise count as planning)."""

FIGURES = (
    ("import", "import s", 3),
    ("import_all", "import + first use s", 3),
    ("cold", "cold s", 3),
    ("cold_plan", "cold load + plan() s", 3),
    ("cold_cpu", "cold cpu s", 3),
    ("warm", "warm s", 3),
    ("warm_plan", "warm plan() s", 3),
    ("warm_cpu", "warm cpu s", 3),
    ("peak_mib", "peak MiB", 0),
    ("workers_mib", "worker peak MiB", 0),
)
"""(key, column, decimals) of what is reported per filter."""


def _worker_cpu(pids: list[int]) -> float:
    """CPU seconds the decode workers have used so far (``utime + stime`` in /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _consume(table: Any, flt: str) -> tuple[int, float, float]:
    """Plan and iterate every task as a reader would: (files, seconds to plan(), total s)."""
    start = time.perf_counter()
    plan = table.scan(filter=flt or None).plan()
    planned = time.perf_counter() - start
    files = 0
    for task in plan.tasks:
        data_file = task.data_file
        _ = (data_file.file_path, data_file.file_size_in_bytes, data_file.record_count)
        _ = (task.delete_files, task.residual)
        files += 1
    assert files == len(plan.tasks)
    return files, planned, time.perf_counter() - start


def child(table: str, flt: str) -> dict[str, Any]:
    """One measured run in this fresh process, in the tree ``PYTHONPATH`` names."""
    with tempfile.TemporaryDirectory(prefix="core-bench-cache-") as cache:
        os.environ["ICECORE_CACHE_DIR"] = cache  # before icecore is imported
        start = time.perf_counter()
        import icecore

        imported = time.perf_counter() - start
        for name in FIRST_USE:
            importlib.import_module(name)
        first_use = time.perf_counter() - start - imported
        from icecore.catalog.filesystem import current_metadata_file
        from icecore.io import FileIO
        from icecore.scan.decode_pool import worker_pids

        metadata = current_metadata_file(FileIO(), table)
        cpu0 = time.process_time()
        start = time.perf_counter()
        loaded = icecore.load_table(metadata)
        load = time.perf_counter() - start
        files, planned, consumed = _consume(loaded, flt)
        cold_plan, cold = load + planned, load + consumed
        cpu1 = time.process_time()
        workers_cold = _worker_cpu(worker_pids())
        again, warm_plan, warm = _consume(loaded, flt)
        cpu2 = time.process_time()
        workers_warm = _worker_cpu(worker_pids())
        assert again == files
        result = {
            "icecore": str(Path(icecore.__file__).resolve().parent.parent),
            "files": files,
            "import": imported,
            "import_all": imported + first_use,
            "cold": cold,
            "cold_plan": cold_plan,
            "cold_cpu": cpu1 - cpu0 + workers_cold,
            "warm": warm,
            "warm_plan": warm_plan,
            "warm_cpu": cpu2 - cpu1 + workers_warm - workers_cold,
            "peak_mib": peak_mib(),
            "workers_mib": max((peak_mib(pid) for pid in worker_pids()), default=0.0),
        }
        _flush()
    return result


def _flush() -> None:
    """Hand the cache files left to the writer over before the directory goes (both trees)."""
    try:
        from icecore.scan.context import default_context
    except ImportError:  # before issue 18: the module-level cache
        from icecore.scan.manifest_cache import MANIFESTS  # type: ignore[attr-defined]

        MANIFESTS.flush()
    else:
        default_context().manifests.flush()


def run_tree(tree: Path, table: str, flt: str) -> dict[str, Any]:
    """One fresh process in ``tree``: its ``icecore`` and its decode workers' come from it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", table, flt],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(result["icecore"]) == tree.resolve(), (result["icecore"], tree)
    return result


def _row(name: str, results: dict[str, list[dict[str, Any]]], loads: str) -> list[str]:
    counts = {r["files"] for t in TREES for r in results[t]}
    files = f"{counts.pop():,}" if len(counts) == 1 else f"DISAGREE {sorted(counts)}"
    rows = []
    for key, column, decimals in FIGURES:
        before = [r[key] for r in results["before"]]
        after = [r[key] for r in results["after"]]
        pairs = sorted(a / b for a, b in zip(after, before, strict=True) if b > 0)
        med_b, med_a = statistics.median(before), statistics.median(after)
        ratio = f"{med_a / med_b:.2f}" if med_b > 0 else "-"
        paired = (
            f"{statistics.median(pairs):.2f} ({pairs[0]:.2f}-{pairs[-1]:.2f})" if pairs else "-"
        )
        rows.append(
            f"| {name} | {files} | {column} | {med_b:.{decimals}f} | {med_a:.{decimals}f} | "
            f"{ratio} | {paired} | {loads} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path)
    parser.add_argument("--table")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--filters", default="sel,time10,none,point")
    parser.add_argument("--record", default=None)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    if not (args.before and args.after and args.table):
        parser.error("--before, --after and --table are required")
    table = str(Path(args.table).resolve())
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    chosen = filters()
    os.environ["ICECORE_CACHE_DIR"] = "off"  # the parent's own plan must not warm a cache
    if "point" in args.filters:
        day, next_day = point_day(table, chosen["sel"])
        chosen["point"] = chosen["point"].format(day=day, next_day=next_day)
    started = dt.datetime.now(dt.UTC)
    rows: list[str] = []
    for name in args.filters.split(","):
        results: dict[str, list[dict[str, Any]]] = {t: [] for t in TREES}
        load_start = os.getloadavg()[0]
        for round_no in range(args.runs):
            for tree in TREES if round_no % 2 == 0 else reversed(TREES):
                results[tree].append(run_tree(trees[tree], table, chosen[name]))
                shown = {k: round(v, 3) for k, v in results[tree][-1].items() if k != "icecore"}
                print(f"  {name} {tree}: {shown}", file=sys.stderr)
        loads = f"{load_start:.1f}-{os.getloadavg()[0]:.1f}"
        rows.extend(_row(name, results, loads))
    lines = [
        f"## {started:%Y-%m-%d %H:%M} UTC: {table}",
        "",
        f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}. Before: `{trees['before']}`, after: `{trees['after']}`. "
        f"{args.runs} runs per tree and filter, alternating, each a fresh process with an empty "
        "manifest cache. Cold = load + plan() + iterate every task; warm = the same again in "
        "the same process; cpu includes the decode workers'. Ratio = after / before (below 1 "
        "is better, for every figure); paired = median (range) of the per-run-pair ratios. "
        "Load = 1-minute load average at the filter's start and end.",
        "",
        "| filter | files | figure | before | after | ratio of medians | paired ratio | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
    ]
    publish("\n".join(lines) + "\n", args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
