"""Loading and planning a big table through Icecore's REST server vs straight from SQL.

    python -m bench.rest_bench --table /tmp/benchwh/hadoop/bench/files_100000 [--runs 3]
        [--filters none,sel] [--record bench/rest_bench.results.md]

The table (from ``python -m bench.tables``) is registered in a fresh SQLite catalog (the
JdbcCatalog schema) under ``bench.<name>``; ``python -m icecore serve-rest`` serves that
catalog on 127.0.0.1. Three tools then open the same table and plan it, each run a fresh
process with an empty manifest cache (cold: open the catalog, ``loadTable``, plan), then,
in the same process, load and plan again (warm):

- ``sql``: Icecore straight from the SQLite catalog (no protocol: the baseline);
- ``rest``: Icecore's REST client through the server (the protocol's overhead is rest / sql);
- ``pyiceberg``: PyIceberg 0.12's ``RestCatalog`` through the same server (the peer).

Every HTTP request a child makes is counted where both clients send it (``requests``'
``HTTPAdapter.send``), per step, so a client that loads a table twice or lists what it
need not shows up. The server is one process for the whole run, started before the first
measurement and asked for the table once (its own first parse is not in anyone's cold time).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench._harness import peak_mib, publish, run_child
from bench.plan_bench import filters

TOOLS = ("sql", "rest", "pyiceberg")
NAMESPACE = ("bench",)
SERVER_START_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Served:
    """A benchmark table registered in a SQLite catalog and served over REST.

    Attributes:
        db: the SQLite catalog file.
        identifier: the table's name in it (``bench.<name>``).
        url: the server's base URL.
        process: the ``serve-rest`` process (stopped by :func:`stop`).
    """

    db: Path
    identifier: str
    url: str
    process: subprocess.Popen[bytes] = field(repr=False, compare=False)


def current_metadata(table: str) -> str:
    """The current metadata.json of a Hadoop-layout table folder (or the file itself)."""
    if table.endswith(".metadata.json"):
        return table
    from icecore.catalog.filesystem import current_metadata_file
    from icecore.io import FileIO

    return current_metadata_file(FileIO(), table)


def register(table: str, workdir: Path) -> tuple[Path, str]:
    """Register ``table``'s current metadata file in a new SQLite catalog under ``workdir``.

    Returns:
        The catalog file and the table's identifier in it.
    """
    from icecore.catalog.sql import SqlCatalog, SqlCatalogAdmin, create_sqlite_catalog
    from icecore.identifier import TableIdentifier

    db = create_sqlite_catalog(workdir / "catalog.db")
    name = Path(table).parent.parent.name if table.endswith(".json") else Path(table).name
    identifier = TableIdentifier(namespace=NAMESPACE, name=name)
    admin = SqlCatalogAdmin(SqlCatalog(db))
    if not admin.namespace_exists(NAMESPACE):
        admin.create_namespace(NAMESPACE, {})
    admin.register_table(identifier, current_metadata(table))
    return db, str(identifier)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (our own server)
        response.read()
        return int(response.status)


def serve(db: Path, identifier: str, workdir: Path) -> Served:
    """Start ``serve-rest`` on the catalog (read-only) and wait until it serves the table."""
    port = _free_port()
    log = (workdir / "server.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "icecore",
            "serve-rest",
            f"sqlite:///{db}",
            "--port",
            str(port),
            "--read-only",
        ],
        cwd=REPO,
        env={**os.environ, "ICECORE_CACHE_DIR": "off"},
        stdout=log,
        stderr=log,
    )
    log.close()
    url = f"http://127.0.0.1:{port}"
    served = Served(db, identifier, url, process)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve-rest exited; see {workdir / 'server.log'}")
        try:
            _get(f"{url}/v1/config")
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
            continue
        namespace, name = identifier.rsplit(".", 1)
        _get(f"{url}/v1/namespaces/{namespace}/tables/{name}")  # the server's own first load
        return served
    stop(served)
    raise RuntimeError("serve-rest did not answer in time")


def stop(served: Served) -> None:
    """Stop the server this module started (by its own pid)."""
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGINT)
        try:
            served.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait()


@contextlib.contextmanager
def counted_requests() -> Iterator[list[str]]:
    """Record ``METHOD /path`` of every request ``requests`` sends meanwhile (both clients)."""
    from requests.adapters import HTTPAdapter

    seen: list[str] = []
    original = HTTPAdapter.send

    def send(self: HTTPAdapter, request: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(f"{request.method} {urlsplit(request.url).path}")
        return original(self, request, *args, **kwargs)

    HTTPAdapter.send = send  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        HTTPAdapter.send = original  # type: ignore[method-assign]


@dataclass
class Steps:
    """Seconds and HTTP requests per step of one run."""

    seconds: dict[str, float] = field(default_factory=dict)
    requests: dict[str, list[str]] = field(default_factory=dict)

    def timed(self, step: str, seen: list[str], work: Callable[[], Any]) -> Any:
        """Run ``work``, keeping its wall time and the requests it sent under ``step``."""
        before = len(seen)
        start = time.perf_counter()
        result = work()
        self.seconds[step] = time.perf_counter() - start
        self.requests[step] = seen[before:]
        return result


def measure(tool: str, served_db: str, url: str, identifier: str, flt: str) -> dict[str, Any]:
    """One run of ``tool``: open, load, plan (cold), then load and plan again (warm).

    Returns:
        ``files`` planned, ``seconds`` and ``requests`` per step (``open``, ``load``,
        ``plan``, ``load2``, ``plan2``), and ``cold``/``warm`` totals.
    """
    steps = Steps()
    with counted_requests() as seen:
        if tool == "pyiceberg":
            from pyiceberg.catalog.rest import RestCatalog

            kwargs = {"row_filter": flt} if flt else {}
            catalog: Any = steps.timed("open", seen, lambda: RestCatalog("bench", uri=url))
            ident = tuple(identifier.split("."))

            def plan(table: Any) -> int:
                return sum(1 for _ in table.scan(**kwargs).plan_files())
        else:
            import icecore

            where = f"sqlite:///{served_db}" if tool == "sql" else url
            catalog = steps.timed("open", seen, lambda: icecore.load_catalog(where))
            ident = identifier  # type: ignore[assignment]

            def plan(table: Any) -> int:
                return len(table.scan(filter=flt or None).plan().tasks)

        table = steps.timed("load", seen, lambda: catalog.load_table(ident))
        files = steps.timed("plan", seen, lambda: plan(table))
        table = steps.timed("load2", seen, lambda: catalog.load_table(ident))
        again = steps.timed("plan2", seen, lambda: plan(table))
    if again != files:
        raise RuntimeError(f"{tool} planned {files} files cold but {again} warm")
    s = steps.seconds
    return {
        "files": files,
        "seconds": s,
        "requests": steps.requests,
        "cold": s["open"] + s["load"] + s["plan"],
        "warm": s["load2"] + s["plan2"],
    }


def child(tool: str, db: str, url: str, identifier: str, flt: str) -> None:
    """One measured run in a fresh process, empty manifest cache; prints one JSON line."""
    with tempfile.TemporaryDirectory(prefix="rest-bench-cache-") as cache:
        os.environ["ICECORE_CACHE_DIR"] = cache  # before icecore is imported
        result = measure(tool, db, url, identifier, flt)
        result["peak_mib"] = peak_mib()
        if tool != "pyiceberg":
            from icecore.scan.context import default_context

            # the cache files left to the writer, before the directory goes
            default_context().manifests.flush()
    print(json.dumps(result))


def _requests_cell(runs: list[dict[str, Any]], steps: tuple[str, ...]) -> str:
    """Requests per step as ``n / n / ...``; every distinct count when the runs disagree."""
    counts = {tuple(len(r["requests"][s]) for s in steps) for r in runs}
    if len(counts) == 1:
        return " / ".join(str(n) for n in counts.pop())
    return "DISAGREE " + ", ".join(str(c) for c in sorted(counts))


def report(table: str, runs: int, results: dict[str, Any]) -> str:
    """A Markdown report: medians per tool and filter, ratios, requests per step."""
    lines = [
        f"## load + plan through REST, {dt.date.today().isoformat()}: {table}",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}; {runs} runs per tool and filter, alternating, each a "
        "fresh process with an empty manifest cache (cold = open the catalog + loadTable + "
        "plan; warm = loadTable + plan again in the same process). sql = Icecore from the "
        "SQLite catalog; rest = Icecore through `serve-rest` on that catalog; pyiceberg = "
        "PyIceberg 0.12's RestCatalog through the same server. Seconds are medians.",
        "",
        "| filter | files | tool | cold s | load s (cold) | plan s (cold) | warm s | "
        "load s (warm) | requests open / load / plan / load / plan | peak MiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    ratios: list[str] = []
    for name, by_tool in results.items():
        counts = {r["files"] for t in TOOLS for r in by_tool[t]}
        files = counts.pop() if len(counts) == 1 else f"DISAGREE {sorted(counts)}"
        med: dict[tuple[str, str], float] = {}
        for tool in TOOLS:
            rs = by_tool[tool]
            for key in ("cold", "warm"):
                med[tool, key] = statistics.median(r[key] for r in rs)
            for key in ("load", "plan", "load2"):
                med[tool, key] = statistics.median(r["seconds"][key] for r in rs)
            reqs = _requests_cell(rs, ("open", "load", "plan", "load2", "plan2"))
            peak = max(r["peak_mib"] for r in rs)
            lines.append(
                f"| {name} | {files} | {tool} | {med[tool, 'cold']:.2f} | "
                f"{med[tool, 'load']:.3f} | {med[tool, 'plan']:.2f} | {med[tool, 'warm']:.3f} | "
                f"{med[tool, 'load2']:.3f} | {reqs} | {peak:.0f} |"
            )
        overhead = {k: med["rest", k] / med["sql", k] for k in ("cold", "warm", "load", "load2")}
        peer = {k: med["pyiceberg", k] / med["rest", k] for k in ("cold", "warm")}
        extra_ms = (med["rest", "load2"] - med["sql", "load2"]) * 1000
        ratios.append(
            f"- {name}: REST overhead (rest / sql) cold **{overhead['cold']:.2f}x**, warm "
            f"**{overhead['warm']:.2f}x**, loadTable alone cold {overhead['load']:.1f}x / warm "
            f"{overhead['load2']:.1f}x (+{extra_ms:.0f} ms); PyIceberg / Icecore through the "
            f"same server: cold {peer['cold']:.1f}x, warm {peer['warm']:.1f}x."
        )
    example = next(iter(results.values()))["rest"][0]["requests"]
    lines += [
        "",
        *ratios,
        "",
        "Requests Icecore's REST client sent in one run: "
        + "; ".join(f"{step}: {', '.join(paths) or 'none'}" for step, paths in example.items())
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", required=True, help="table folder or metadata.json")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--filters", default="none", help="of bench.plan_bench: none,sel,...")
    parser.add_argument("--record", default=None, help="append the report to this file")
    parser.add_argument("--child", nargs=5, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    chosen = {k: v for k, v in filters().items() if "{" not in v}  # not point: it needs a day
    unknown = sorted(set(args.filters.split(",")) - set(chosen))
    if unknown:
        parser.error(f"unknown filter {', '.join(unknown)}; choose from {', '.join(chosen)}.")
    with tempfile.TemporaryDirectory(prefix="rest-bench-") as work:
        db, identifier = register(args.table, Path(work))
        served = serve(db, identifier, Path(work))
        try:
            results: dict[str, Any] = {}
            for name in args.filters.split(","):
                flt = chosen[name]
                by_tool: dict[str, list[dict[str, Any]]] = {t: [] for t in TOOLS}
                for round_no in range(args.runs):
                    order = TOOLS if round_no % 2 == 0 else tuple(reversed(TOOLS))
                    for tool in order:
                        by_tool[tool].append(
                            run_child(
                                "bench.rest_bench",
                                [
                                    "--table",
                                    args.table,
                                    "--child",
                                    tool,
                                    str(db),
                                    served.url,
                                    identifier,
                                    flt,
                                ],
                            )
                        )
                        r = by_tool[tool][-1]
                        print(
                            f"  {name} {tool}: files {r['files']} cold {r['cold']:.2f} "
                            f"warm {r['warm']:.3f}",
                            file=sys.stderr,
                        )
                results[name] = by_tool
        finally:
            stop(served)
    publish(report(args.table, args.runs, results), args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
