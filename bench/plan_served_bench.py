"""Server-side scan planning (issue 33) vs planning locally, and the memory a served plan holds.

    python -m bench.plan_served_bench --table /tmp/benchwh/hadoop/bench/files_100000
        [--runs 3] [--filters none,sel] [--record bench/plan_served_bench.results.md]

The table (from ``python -m bench.tables``) is registered in a fresh SQLite catalog and
served by ``python -m icecore serve-rest`` (read-write: plans are kept in the catalog's
``icecore_scan_plans`` table, as in production). Two tools plan it, alternating, each run a
fresh process:

- ``local``: Icecore's planner straight from the SQLite catalog (the baseline);
- ``served``: ``POST .../plan`` to the server and every plan task fetched through
  ``/tasks`` (plain HTTP and ``json``; what any client must at least do), the files counted.

The protocol's overhead is served / local. The server's resident memory is read from
``/proc`` before the first plan and after the last (its peak, ``VmHWM``): what serving plans
made it hold at most.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench._harness import peak_mib, publish, run_child
from bench.plan_bench import filters
from bench.rest_bench import REPO, _free_port, register

TOOLS = ("local", "served")


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=3600) as answer:
        return json.loads(answer.read())


def measure(tool: str, db: str, url: str, identifier: str, flt: str) -> dict[str, Any]:
    """One run: the files planned, seconds, and for ``served`` the requests made."""
    start = time.perf_counter()
    if tool == "local":
        import icecore

        table = icecore.load_catalog(f"sqlite:///{db}").load_table(identifier)
        files = len(table.scan(filter=flt or None).plan().tasks)
        return {"files": files, "seconds": time.perf_counter() - start, "requests": 0}
    from icecore.expressions.json_expr import expression_to_json
    from icecore.expressions.parser import parse_filter

    namespace, name = identifier.rsplit(".", 1)
    base = f"{url}/v1/namespaces/{namespace}/tables/{name}"
    body = {"filter": expression_to_json(parse_filter(flt))} if flt else {}
    result = _post(base + "/plan", body)
    requests_made = 1
    while result.get("status") == "submitted":  # a long plan: polled, as Java's client does
        time.sleep(0.2)
        with urllib.request.urlopen(f"{base}/plan/{result['plan-id']}", timeout=60) as answer:
            result = {**json.loads(answer.read()), "plan-id": result["plan-id"]}
        requests_made += 1
    if result.get("status") != "completed":
        raise RuntimeError(f"the served plan ended {result.get('status')}: {result}")
    files = len(result.get("file-scan-tasks", []))
    pending = list(result.get("plan-tasks", []))
    while pending:
        page = _post(base + "/tasks", {"plan-task": pending.pop()})
        requests_made += 1
        files += len(page.get("file-scan-tasks", []))
        pending += page.get("plan-tasks", [])
    return {"files": files, "seconds": time.perf_counter() - start, "requests": requests_made}


def child(tool: str, db: str, url: str, identifier: str, flt: str) -> None:
    """One measured run in a fresh process with an empty manifest cache; one JSON line."""
    with tempfile.TemporaryDirectory(prefix="plan-served-cache-") as cache:
        os.environ["ICECORE_CACHE_DIR"] = cache
        result = measure(tool, db, url, identifier, flt)
        result["peak_mib"] = peak_mib()
    print(json.dumps(result))


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", help="table folder or metadata.json")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--filters", default="none", help="of bench.plan_bench: none,sel,...")
    parser.add_argument("--record", default=None, help="append the report to this file")
    parser.add_argument("--child", nargs=5, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    if not args.table:
        parser.error("--table is required")
    chosen = {n: f for n, f in filters().items() if n in args.filters.split(",")}
    with tempfile.TemporaryDirectory(prefix="plan-served-bench-") as work:
        db, identifier = register(args.table, Path(work))
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "icecore", "serve-rest", f"sqlite:///{db}", "--port", str(port)],
            cwd=REPO,
            env={**os.environ, "ICECORE_CACHE_DIR": "off"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(url + "/v1/config", timeout=2).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise RuntimeError("serve-rest did not start") from None
                    time.sleep(0.2)
            before = _rss_mib(server.pid)
            results: dict[str, dict[str, list[dict[str, Any]]]] = {}
            for name, flt in chosen.items():
                results[name] = {t: [] for t in TOOLS}
                for _ in range(args.runs):
                    for tool in TOOLS:
                        run = run_child(
                            "bench.plan_served_bench",
                            ["--child", tool, str(db), url, identifier, flt],
                        )
                        results[name][tool].append(run)
            server_peak = peak_mib(server.pid)
            server_now = _rss_mib(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
    lines = [
        f"## served scan planning, {dt.date.today().isoformat()}: {args.table}",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}; {args.runs} runs "
        "per tool and filter, alternating, each a fresh process. local = Icecore's planner "
        "from the SQLite catalog; served = POST /plan + every /tasks page over HTTP from the "
        "same server process (pages of 1000 files). Seconds are medians.",
        "",
        "| filter | files | tool | s | requests | client peak MiB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    ratios = []
    for name, by_tool in results.items():
        counts = {r["files"] for t in TOOLS for r in by_tool[t]}
        files = counts.pop() if len(counts) == 1 else f"DISAGREE {sorted(counts)}"
        med = {t: statistics.median(r["seconds"] for r in by_tool[t]) for t in TOOLS}
        for tool in TOOLS:
            rs = by_tool[tool]
            lines.append(
                f"| {name} | {files} | {tool} | {med[tool]:.2f} | {rs[0]['requests']} | "
                f"{max(r['peak_mib'] for r in rs):.0f} |"
            )
        ratios.append(f"- {name}: served / local **{med['served'] / med['local']:.2f}x**.")
    lines += [
        "",
        *ratios,
        f"- server resident memory: {before:.0f} MiB before the first plan, peak "
        f"{server_peak:.0f} MiB, {server_now:.0f} MiB after the last.",
        "",
    ]
    publish("\n".join(lines), args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
