"""History + inspect('files') on a big table: Icecore against PyIceberg 0.12, in the same run.

    python -m bench.metadata_bench --table /tmp/benchwh/hadoop/bench/history_100k [--runs 3]
        [--record bench/metadata_bench.results.md]

Each run is a fresh process (cold: from reading the metadata to the last Arrow row), the
two tools alternate run by run so machine drift hits both, and each child reports its own
wall time and peak RSS. The parent prints medians, the ratio PyIceberg / Icecore, and checks
that both saw the same number of snapshots and files (a faster wrong answer is no answer).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

from bench._harness import peak_mib, publish, run_child

TOOLS = ("icecore", "pyiceberg")


def _metadata_file(table: str) -> str:
    """The current metadata.json of a Hadoop-layout table folder (or the file itself)."""
    if table.endswith(".metadata.json"):
        return table
    from icecore.catalog.filesystem import current_metadata_file
    from icecore.io import FileIO

    return current_metadata_file(FileIO(), table)


def run_icecore(metadata: str) -> dict[str, Any]:
    """Icecore: load, history, inspect('files')."""
    import icecore

    table = icecore.load_table(metadata)
    history = table.history()
    files = table.inspect("files")
    return {"snapshots": len(history), "files": files.num_rows}


def run_pyiceberg(metadata: str) -> dict[str, Any]:
    """PyIceberg 0.12: StaticTable, inspect.history(), inspect.files()."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata)
    history = table.inspect.history()
    files = table.inspect.files()
    return {"snapshots": history.num_rows, "files": files.num_rows}


def child(tool: str, table: str) -> None:
    """One measured run in this (fresh) process; prints one JSON line."""
    metadata = _metadata_file(table)
    start = time.perf_counter()
    counts = run_icecore(metadata) if tool == "icecore" else run_pyiceberg(metadata)
    seconds = time.perf_counter() - start
    peak = peak_mib()
    print(json.dumps({"tool": tool, "seconds": seconds, "peak_mib": peak, **counts}))


def measure(table: str, runs: int) -> dict[str, list[dict[str, Any]]]:
    """Alternate the tools for ``runs`` rounds, each run in a fresh interpreter."""
    results: dict[str, list[dict[str, Any]]] = {tool: [] for tool in TOOLS}
    for round_no in range(runs):
        for tool in TOOLS if round_no % 2 == 0 else reversed(TOOLS):
            results[tool].append(
                run_child("bench.metadata_bench", ["--child", tool, "--table", table])
            )
            print(f"  {tool}: {results[tool][-1]}", file=sys.stderr)
    return results


def summarize(table: str, results: dict[str, list[dict[str, Any]]]) -> str:
    """A Markdown report: medians, ratio, peak memory, agreement."""
    med = {t: statistics.median(r["seconds"] for r in results[t]) for t in TOOLS}
    mem = {t: max(r["peak_mib"] for r in results[t]) for t in TOOLS}
    counts = {t: {(r["snapshots"], r["files"]) for r in results[t]} for t in TOOLS}
    agree = counts["icecore"] == counts["pyiceberg"] and len(counts["icecore"]) == 1
    snapshots, files = next(iter(counts["icecore"]))
    lines = [
        f"## history + inspect('files'), cold, {dt.date.today().isoformat()}",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}; table {table} ({snapshots} snapshots, {files} files).",
        f"Runs: {len(results['icecore'])} per tool, alternating, each a fresh process.",
        "",
        "| tool | median s | min s | max s | peak MiB |",
        "| --- | --- | --- | --- | --- |",
    ]
    for t in TOOLS:
        secs = [r["seconds"] for r in results[t]]
        lines.append(f"| {t} | {med[t]:.2f} | {min(secs):.2f} | {max(secs):.2f} | {mem[t]:.0f} |")
    lines += [
        "",
        f"Ratio PyIceberg / Icecore (median time): **{med['pyiceberg'] / med['icecore']:.2f}x**; "
        f"peak memory Icecore / PyIceberg: {mem['icecore'] / mem['pyiceberg']:.2f}.",
        f"Both saw the same snapshots and files: {'yes' if agree else 'NO: ' + str(counts)}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", required=True, help="table folder or metadata.json")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--record", default=None, help="append the report to this file")
    parser.add_argument("--child", choices=TOOLS, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.table)
        return 0
    publish(summarize(args.table, measure(args.table, args.runs)), args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
