"""Scan planning on big metadata-only tables: Icecore against PyIceberg 0.12, in one run.

    python -m bench.plan_bench --table /tmp/benchwh/hadoop/bench/files_100000 [--runs 3]
        [--filters sel,time10,none,point] [--record bench/plan_bench.results.md]

Tables come from ``python -m bench.tables`` (bench/README.md "Benchmark tables"). Each run is a
fresh process that loads the table and plans (cold), then plans the same scan again (warm); the
tools alternate run by run. Planned file counts must agree between the tools.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any

from bench._harness import peak_mib, publish, run_child

TOOLS = ("icecore", "pyiceberg")
ICECORE_FIRST_USE = (
    "fsspec",
    "fastavro",
    "polars",
    "pandas",
    "pyarrow.compute",
    "icecore.expressions.parser",
)
GROUP = 16_384
"""bench.tables gives each group of 16 files (one per bucket) this many ids."""


def filters(group: int = 1234) -> dict[str, str]:
    """The workload's filters, as SQL both tools parse the same way."""
    low = group * GROUP + 4096
    return {
        "sel": f"id >= {low} AND id <= {low + 4096}",
        "time10": "pickup_ts >= '2021-06-01T00:00:00+00:00' "
        "AND pickup_ts < '2021-09-09T00:00:00+00:00'",
        "none": "",
        "point": f"id >= {low} AND id <= {low + 4096} AND pickup_ts >= '{{day}}T00:00:00+00:00' "
        f"AND pickup_ts < '{{next_day}}T00:00:00+00:00'",
    }


def _metadata_file(table: str) -> str:
    from icecore.catalog.filesystem import current_metadata_file
    from icecore.io import FileIO

    return table if table.endswith(".metadata.json") else current_metadata_file(FileIO(), table)


def plan_icecore(metadata: str, flt: str) -> tuple[int, float, float]:
    """Files planned, cold seconds (load + plan), warm seconds (plan again)."""
    import icecore

    start = time.perf_counter()
    table = icecore.load_table(metadata)
    count = len(table.scan(filter=flt or None).plan().tasks)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    again = len(table.scan(filter=flt or None).plan().tasks)
    warm = time.perf_counter() - start
    assert again == count
    return count, cold, warm


def plan_pyiceberg(metadata: str, flt: str) -> tuple[int, float, float]:
    """The same with PyIceberg's StaticTable and plan_files()."""
    from pyiceberg.table import StaticTable

    start = time.perf_counter()
    table = StaticTable.from_metadata(metadata)
    kwargs = {"row_filter": flt} if flt else {}
    count = sum(1 for _ in table.scan(**kwargs).plan_files())
    cold = time.perf_counter() - start
    start = time.perf_counter()
    again = sum(1 for _ in table.scan(**kwargs).plan_files())
    warm = time.perf_counter() - start
    assert again == count
    return count, cold, warm


def _import(tool: str) -> float:
    """Seconds to import the tool's planning modules in this fresh process (not in cold)."""
    start = time.perf_counter()
    if tool == "icecore":
        import icecore  # noqa: F401

        # What icecore loads at its first plan rather than at import (issue 18), loaded here
        # so that cold stays "load + plan", as it was measured before they became lazy.
        for name in ICECORE_FIRST_USE:
            importlib.import_module(name)
    else:
        import pyiceberg.table  # noqa: F401
    return time.perf_counter() - start


def child(tool: str, table: str, flt: str) -> None:
    """One measured run in a fresh process; prints one JSON line.

    Icecore starts with an empty manifest cache of its own (cold means cold), and the peak
    of its decode workers, if it started any, is reported beside the planner's.
    """
    with tempfile.TemporaryDirectory(prefix="plan-bench-cache-") as cache:
        os.environ["ICECORE_CACHE_DIR"] = cache  # before icecore is imported
        import_seconds = _import(tool)
        metadata = _metadata_file(table)
        run = plan_icecore if tool == "icecore" else plan_pyiceberg
        count, cold, warm = run(metadata, flt)
        peak = peak_mib()
        workers = 0.0
        if tool == "icecore":
            from icecore.scan.decode_pool import worker_pids

            workers = max((peak_mib(pid) for pid in worker_pids()), default=0.0)
            from icecore.scan.context import default_context

            # the cache files left to the writer, before the directory goes
            default_context().manifests.flush()
    print(
        json.dumps(
            {
                "files": count,
                "import": import_seconds,
                "cold": cold,
                "warm": warm,
                "peak_mib": peak,
                "workers_mib": workers,
            }
        )
    )


def point_day(table: str, flt: str) -> tuple[str, str]:
    """The day of the files the selective filter keeps (for the ``point`` filter)."""
    import icecore

    plan = icecore.load_table(_metadata_file(table)).scan(filter=flt).plan()
    days = {next(iter(t.data_file.partition.values())) for t in plan.tasks}
    day = min(days)
    return day.isoformat(), (day + dt.timedelta(days=1)).isoformat()


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--filters", default="sel,time10,none,point")
    parser.add_argument("--record", default=None)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.table, args.child[1])
        return 0
    chosen = filters()
    os.environ["ICECORE_CACHE_DIR"] = "off"  # the parent's own plan must not warm a cache
    if "point" in args.filters:
        day, next_day = point_day(args.table, chosen["sel"])
        chosen["point"] = chosen["point"].format(day=day, next_day=next_day)
    lines = [
        f"## plan(), {dt.date.today().isoformat()}: {args.table}",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}; {args.runs} runs per tool and filter, alternating, each "
        "a fresh process (cold = load + plan; warm = the same scan planned again; import = "
        "importing the tool first, which cold leaves out for both).",
        "",
        "| filter | files | Icecore cold s | PyIceberg cold s | cold ratio | Icecore warm s | "
        "PyIceberg warm s | warm ratio | peak MiB Icecore / PyIceberg | Icecore decode worker "
        "peak MiB | import s Icecore / PyIceberg |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in args.filters.split(","):
        flt = chosen[name]
        results: dict[str, list[dict[str, Any]]] = {t: [] for t in TOOLS}
        for round_no in range(args.runs):
            for tool in TOOLS if round_no % 2 == 0 else reversed(TOOLS):
                results[tool].append(
                    run_child("bench.plan_bench", ["--table", args.table, "--child", tool, flt])
                )
                print(f"  {name} {tool}: {results[tool][-1]}", file=sys.stderr)
        counts = {r["files"] for t in TOOLS for r in results[t]}
        med = {
            (t, k): statistics.median(r[k] for r in results[t])
            for t in TOOLS
            for k in ("cold", "warm", "import")
        }
        peak = {t: max(r["peak_mib"] for r in results[t]) for t in TOOLS}
        workers = max(r.get("workers_mib", 0.0) for r in results["icecore"])
        files = counts.pop() if len(counts) == 1 else f"DISAGREE {sorted(counts)}"
        lines.append(
            f"| {name} | {files} | {med['icecore', 'cold']:.2f} | {med['pyiceberg', 'cold']:.2f} | "
            f"{med['pyiceberg', 'cold'] / med['icecore', 'cold']:.1f}x | "
            f"{med['icecore', 'warm']:.3f} | {med['pyiceberg', 'warm']:.2f} | "
            f"{med['pyiceberg', 'warm'] / max(med['icecore', 'warm'], 1e-6):.0f}x | "
            f"{peak['icecore']:.0f} / {peak['pyiceberg']:.0f} | {workers:.0f} | "
            f"{med['icecore', 'import']:.2f} / {med['pyiceberg', 'import']:.2f} |"
        )
    publish("\n".join(lines) + "\n", args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
