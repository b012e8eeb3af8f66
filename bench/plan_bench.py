"""Plans consumed as users consume them: Icecore, Iceberg Java and PyIceberg 0.12, in one run.

    python -m bench.plan_bench --table /tmp/benchwh/hadoop/bench/files_1000000 [--runs 3]
        [--filters sel,time10,none,point] [--tools icecore,java,pyiceberg] [--tree DIR]
        [--record bench/plan_bench.results.md]

Tables come from ``python -m bench.tables`` (bench/README.md "Benchmark tables"). Counting a
plan is cheap; using one is not, so every tool consumes its plan the same way, as a reader,
``icecore plan`` or a user's loop does: iterate every task and touch the data file's path,
record count and size, the delete files that apply, and the residual filter.

- **icecore** (``tasks``): ``load_table(metadata)``, ``scan(filter=...).plan()``, every task of
  ``plan.tasks``. When the tree's ``Plan`` has ``files()`` (issue 19's columnar plan; feature
  detected), **icecore columns** runs too: ``plan.files()``, the Arrow table of the planned data
  files, with the path lengths, record counts, sizes and delete files summed by Arrow kernels
  and every column's buffers reached (no Python object per file: that is its point). When the
  tree's ``TableScan`` has ``plan_files()`` (issue 32), **icecore stream** runs too: every task
  of ``scan(filter=...).plan_files()``, yielded as each manifest is judged, consumed as
  ``plan.tasks`` is: the same streaming contract as Java's ``planFiles()`` below.
- **java**: Iceberg Java's ``table.newScan().filter(expr).planFiles()`` through the pinned
  runtime jar (``pipeline.spark.find_iceberg_jar``), in a JVM started with py4j (no Spark),
  the table loaded by ``StaticTableOperations`` from the metadata file, and every
  ``FileScanTask`` consumed inside the JVM by ``bench/java/PlanConsumer.java`` (one py4j call
  per plan: per-task calls would time py4j). The filter is built with ``Expressions.*`` from the
  same SQL text by a small fixed grammar (conjunctions of ``column op literal``, which is all
  the bench's four filters use; anything else is refused), timestamps given as ISO strings that
  Iceberg's own literal conversion parses.
- **pyiceberg**: ``StaticTable.from_metadata`` and ``scan(row_filter=...).plan_files()``.

Each run is a fresh process per tool; the tools take turns, in an order rotated run by run.
In each process: **import** (the tool's modules, and Icecore's first-use libraries) or **JVM
start** (py4j's gateway up and Iceberg's expression classes loaded) is measured apart and
left out of everything else; **cold** = load the table + plan + consume, with empty caches
(Icecore's ``ICECORE_CACHE_DIR`` is a fresh empty folder; Java and PyIceberg keep no disk
cache; the OS page cache cannot be dropped without root, so the metadata files are in it after
the first run, for every tool alike); **warm** = the same scan planned and consumed again in
the same process. **restart** (Icecore only) = a new process, load + plan + consume, with the
disk cache the cold process left (for Java and PyIceberg a restart is a cold run). Peak RSS is
each process's ``VmHWM`` (the JVM's own for Java), read after warm; for Icecore also its decode
workers' largest, and the peak after one more plan's tasks are all held in a list (``held``;
for Java the same list of ``FileScanTask``, in a JVM with its default heap limit, so its RSS
is what the garbage collector chose to keep, not what it needed). File counts, record and size
sums, delete files and path lengths must agree between the tools and runs (asserted).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._harness import peak_mib, publish

REPO = Path(__file__).resolve().parent.parent
TOOLS = ("icecore", "java", "pyiceberg")
COLUMNS = "icecore-columns"
"""Icecore consuming ``plan.files()`` instead of ``plan.tasks`` (when the tree has it)."""
STREAM = "icecore-stream"
"""Icecore consuming ``scan.plan_files()`` instead of ``plan().tasks`` (when the tree has it)."""
ICECORE_KINDS = ("icecore", COLUMNS, STREAM)
ICECORE_FIRST_USE = (
    "fsspec",
    "fastavro",
    "polars",
    "pandas",
    "pyarrow.compute",
    "icecore.expressions.parser",
    # Since issue 32 item 4 `import icecore` loads neither pyarrow and numpy nor the planner
    # (TableScan is imported on first access): loaded here, so cold stays "load + plan".
    "pyarrow",
    "numpy",
    "icecore.scan.planner",
)
GROUP = 16_384
"""bench.tables gives each group of 16 files (one per bucket) this many ids."""
CONSUMER_SOURCE = Path(__file__).resolve().parent / "java" / "PlanConsumer.java"
SUMS = ("files", "records", "bytes", "deletes", "path_chars")
"""What each consumer adds up over the planned files; must agree between tools."""
JAVA_OPERATORS = {
    ">=": "greaterThanOrEqual",
    "<=": "lessThanOrEqual",
    ">": "greaterThan",
    "<": "lessThan",
    "=": "equal",
}
_TERM = re.compile(r"(\w+)\s*(>=|<=|=|<|>)\s*('[^']*'|-?\d+)")


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


def java_terms(sql: str) -> list[tuple[str, str, int | str]]:
    """The filter as ``(column, operator, literal)`` conjuncts for Iceberg's ``Expressions``.

    A fixed grammar, not a SQL parser: the bench's filters are conjunctions of comparisons of
    a column with an integer or a quoted string, and anything else is refused rather than
    translated wrongly (the file counts, compared with the other tools, check the rest).
    """
    if not sql.strip():
        return []
    terms: list[tuple[str, str, int | str]] = []
    for part in re.split(r"\s+AND\s+", sql.strip(), flags=re.IGNORECASE):
        match = _TERM.fullmatch(part.strip())
        if match is None:
            raise ValueError(f"plan_bench's Java filter takes `column op literal`, not {part!r}")
        column, operator, literal = match.groups()
        value: int | str = literal[1:-1] if literal.startswith("'") else int(literal)
        terms.append((column, operator, value))
    return terms


def _metadata_file(table: str) -> str:
    from icecore.catalog.filesystem import current_metadata_file
    from icecore.io import FileIO

    return table if table.endswith(".metadata.json") else current_metadata_file(FileIO(), table)


def _agreed(sums: dict[str, int], again: dict[str, int]) -> dict[str, int]:
    assert sums == again, (sums, again)
    return sums


# --- Icecore -------------------------------------------------------------------------------


def _sums(files: int, records: int, size: int, deletes: int, chars: int) -> dict[str, int]:
    """What every tool's consumption adds up (compared between tools and runs)."""
    return {
        "files": files,
        "records": records,
        "bytes": size,
        "deletes": deletes,
        "path_chars": chars,
    }


def walk_tasks(tasks: Any, file_attribute: str) -> dict[str, int]:
    """Every task, touched as a reader touches it (its data file is ``task.<file_attribute>``)."""
    files = records = size = deletes = chars = 0
    for task in tasks:
        data_file = getattr(task, file_attribute)
        chars += len(data_file.file_path)
        records += data_file.record_count
        size += data_file.file_size_in_bytes
        deletes += len(task.delete_files)
        _ = task.residual
        files += 1
    return _sums(files, records, size, deletes, chars)


def _consume_tasks(plan: Any) -> dict[str, int]:
    """Every task of an Icecore plan."""
    return walk_tasks(plan.tasks, "data_file")


def _column(table: Any, *names: str) -> Any:
    for name in names:
        if name in table.column_names:
            return table.column(name)
    return None


def _consume_columns(plan: Any) -> dict[str, int]:
    """``plan.files()``: sums by Arrow kernels, every column's buffers reached."""
    import pyarrow.compute as pc

    files = plan.files()
    for column in files.columns:
        for chunk in column.chunks:
            chunk.buffers()
    sums = {"files": files.num_rows}
    path = _column(files, "file_path", "path", "location")
    records = _column(files, "record_count")
    size = _column(files, "file_size_in_bytes", "size")
    deletes = _column(files, "delete_files", "deletes")
    if path is not None:
        sums["path_chars"] = int(pc.sum(pc.utf8_length(path)).as_py() or 0)
    if records is not None:
        sums["records"] = int(pc.sum(records).as_py() or 0)
    if size is not None:
        sums["bytes"] = int(pc.sum(size).as_py() or 0)
    if deletes is not None:
        sums["deletes"] = int(pc.sum(pc.list_value_length(deletes)).as_py() or 0)
    return sums


def _flush_cache() -> None:
    """Hand the cache files left to the writer over, so a restart finds them (any tree)."""
    try:
        from icecore.scan.context import default_context
    except ImportError:
        return
    default_context().manifests.flush()


def _worker_peak() -> float:
    try:
        from icecore.scan.decode_pool import worker_pids
    except ImportError:
        return 0.0
    return max((peak_mib(pid) for pid in worker_pids()), default=0.0)


def child_icecore(metadata: str, flt: str, kind: str, restart: bool) -> dict[str, Any]:
    """One Icecore process; ``ICECORE_CACHE_DIR`` is set by the parent (empty, or warm)."""
    start = time.perf_counter()
    import icecore

    for name in ICECORE_FIRST_USE:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            if not name.startswith("icecore."):
                raise
    imported = time.perf_counter() - start
    columns = kind == COLUMNS
    consume: Callable[[Any], dict[str, int]] = _consume_columns if columns else _consume_tasks

    def plan_and_consume(table: Any) -> tuple[dict[str, int], float | None, float]:
        begin = time.perf_counter()
        if kind == STREAM:  # planning and consuming are one loop: no plan time apart
            sums = walk_tasks(table.scan(filter=flt or None).plan_files(), "data_file")
            return sums, None, time.perf_counter() - begin
        plan = table.scan(filter=flt or None).plan()
        planned = time.perf_counter() - begin
        sums = consume(plan)
        return sums, planned, time.perf_counter() - begin

    begin = time.perf_counter()
    table = icecore.load_table(metadata)
    load = time.perf_counter() - begin
    sums, cold_plan, cold = plan_and_consume(table)
    result: dict[str, Any] = {
        "icecore": str(Path(icecore.__file__).resolve().parent.parent),
        "import": imported,
        "cold": load + cold,
        "cold_plan": None if cold_plan is None else load + cold_plan,
        **sums,
    }
    if restart:
        result["peak_mib"] = peak_mib()
        result["workers_mib"] = _worker_peak()
        return result
    again, warm_plan, warm = plan_and_consume(table)
    _agreed(sums, again)
    _flush_cache()
    result.update(warm=warm, warm_plan=warm_plan, peak_mib=peak_mib())
    if kind == "icecore":
        begin = time.perf_counter()
        held = list(table.scan(filter=flt or None).plan().tasks)
        result["held_s"] = time.perf_counter() - begin
        result["held_mib"] = peak_mib()
        assert len(held) == sums["files"]
        del held
    result["workers_mib"] = _worker_peak()
    return result


# --- Iceberg Java --------------------------------------------------------------------------


def child_java(metadata: str, flt: str) -> dict[str, Any]:
    """One JVM, started by py4j with the pinned Iceberg runtime jar; tasks consumed in Java."""
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    from bench.tables import _pyspark_jars, compile_builder, java_classpath
    from pipeline.spark import find_iceberg_jar, find_java

    java = find_java()
    iceberg_jar = find_iceberg_jar()
    classes = compile_builder(java, iceberg_jar, source=CONSUMER_SOURCE)  # once, cached
    py4j_jar = next(_pyspark_jars().glob("py4j-*.jar"))
    begin = time.perf_counter()
    port, proc = launch_gateway(
        jarpath=str(py4j_jar),
        classpath=os.pathsep.join([str(classes), java_classpath(iceberg_jar)]),
        java_path=java,
        die_on_exit=True,
        return_proc=True,
        redirect_stderr=subprocess.DEVNULL,
    )
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port))
    try:
        jvm = gateway.jvm
        expressions = jvm.org.apache.iceberg.expressions.Expressions
        expr = expressions.alwaysTrue()
        for column, operator, value in java_terms(flt):
            term = getattr(expressions, JAVA_OPERATORS[operator])(column, value)
            expr = getattr(expressions, "and")(expr, term)
        consumer = jvm.PlanConsumer
        started = time.perf_counter() - begin

        def consume(table: Any) -> dict[str, int]:
            files, records, size, deletes, _residuals, chars = list(consumer.consume(table, expr))
            return _sums(files, records, size, deletes, chars)

        begin = time.perf_counter()
        table = consumer.load(metadata)
        sums = consume(table)
        cold = time.perf_counter() - begin
        begin = time.perf_counter()
        _agreed(sums, consume(table))
        warm = time.perf_counter() - begin
        peak = peak_mib(proc.pid)
        begin = time.perf_counter()
        assert consumer.hold(table, expr) == sums["files"]
        held_s = time.perf_counter() - begin
        held = peak_mib(proc.pid)
    finally:
        gateway.shutdown()
        proc.stdin.close()  # the JVM was started to die when its stdin closes
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {
        "import": started,
        "cold": cold,
        "warm": warm,
        "peak_mib": peak,
        "held_s": held_s,
        "held_mib": held,
        **sums,
    }


# --- PyIceberg -----------------------------------------------------------------------------


def child_pyiceberg(metadata: str, flt: str) -> dict[str, Any]:
    """One PyIceberg 0.12 process: StaticTable and plan_files(), every task consumed."""
    begin = time.perf_counter()
    from pyiceberg.table import StaticTable

    imported = time.perf_counter() - begin
    kwargs = {"row_filter": flt} if flt else {}

    def consume(table: Any) -> dict[str, int]:
        return walk_tasks(table.scan(**kwargs).plan_files(), "file")

    begin = time.perf_counter()
    table = StaticTable.from_metadata(metadata)
    sums = consume(table)
    cold = time.perf_counter() - begin
    begin = time.perf_counter()
    _agreed(sums, consume(table))
    warm = time.perf_counter() - begin
    return {"import": imported, "cold": cold, "warm": warm, "peak_mib": peak_mib(), **sums}


# --- the parent ----------------------------------------------------------------------------


def _run(args: list[str], pythonpath: list[Path], cwd: Path, cache: str = "off") -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env["ICECORE_CACHE_DIR"] = cache
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(f"plan_bench child {args} failed:\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_tool(tool: str, tree: Path, metadata: str, flt: str) -> dict[str, Any]:
    """One measured run of ``tool`` (fresh processes); Icecore's from ``tree``.

    For Icecore, a second process plans again with the disk cache the first one left
    (``restart``); the cache folder is removed afterwards.
    """
    if tool not in (*TOOLS, COLUMNS, STREAM):
        raise ValueError(f"unknown tool {tool!r}")
    if tool in ("java", "pyiceberg"):
        return _run(["--child", tool, metadata, flt], [REPO], REPO)
    path = [tree] if tree == REPO else [tree, REPO]
    cache = tempfile.mkdtemp(prefix="plan-bench-cache-")
    try:
        result = _run(["--child", tool, metadata, flt], path, tree, cache)
        again = _run(["--child", tool, metadata, flt, "--restart"], path, tree, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for run in (result, again):
        assert Path(run["icecore"]) == tree.resolve(), (run["icecore"], tree)
    _agreed({k: result[k] for k in SUMS if k in result}, {k: again[k] for k in SUMS if k in again})
    result["restart"] = again["cold"]
    result["restart_mib"] = again["peak_mib"]
    return result


def consumers(tree: Path) -> list[str]:
    """Icecore's consumers besides ``plan.tasks`` the tree has (:data:`COLUMNS`, :data:`STREAM`)."""
    path = [tree] if tree == REPO else [tree, REPO]
    found = _run(["--probe"], path, tree)
    return [kind for kind, key in ((COLUMNS, "columns"), (STREAM, "stream")) if found.get(key)]


def point_day(table: str, flt: str) -> tuple[str, str]:
    """The day of the files the selective filter keeps (for the ``point`` filter)."""
    import icecore

    plan = icecore.load_table(_metadata_file(table)).scan(filter=flt).plan()
    days = {next(iter(t.data_file.partition.values())) for t in plan.tasks}
    day = min(days)
    return day.isoformat(), (day + dt.timedelta(days=1)).isoformat()


def _med(results: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in results if r.get(key) is not None]
    return statistics.median(values) if values else None


def _max(results: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in results if r.get(key) is not None]
    return max(values) if values else None


def _fmt(value: float | None, decimals: int = 2) -> str:
    if value is None:
        return "–"
    if decimals == 2 and value < 0.1:
        decimals = 3
    return f"{value:.{decimals}f}"


def _ratio(ours: float | None, java: float | None) -> str:
    if ours is None or not java:
        return "–"
    ratio = ours / java
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.1g}"


def _row(name: str, results: dict[str, list[dict[str, Any]]], loads: str) -> str:
    """One filter's row of the report (medians; peaks are the largest over the runs)."""
    counts = {r["files"] for rs in results.values() for r in rs}
    files = f"{counts.pop():,}" if len(counts) == 1 else f"DISAGREE {sorted(counts)}"

    def triple(tool: str, keys: tuple[str, ...]) -> str:
        if tool not in results:
            return "–"
        return " / ".join(_fmt(_med(results[tool], k)) for k in keys)

    ice, col = results.get("icecore", []), results.get(COLUMNS, [])
    java = results.get("java", [])
    ratios = []
    for key in ("cold", "warm"):
        parts = [
            _ratio(_med(results[kind], key), _med(java, key))
            for kind in ICECORE_KINDS
            if kind in results
        ]
        ratios.append(" / ".join(parts))
    mib = [
        " / ".join(
            _fmt(_max(ice, k), 0) for k in ("peak_mib", "held_mib", "workers_mib", "restart_mib")
        ),
        _fmt(_max(col, "peak_mib"), 0) if COLUMNS in results else "–",
        " / ".join(_fmt(_max(java, k), 0) for k in ("peak_mib", "held_mib")),
        _fmt(_max(results.get("pyiceberg", []), "peak_mib"), 0),
    ]
    return (
        f"| {name} | {files} | {triple('icecore', ('cold', 'warm', 'restart'))} | "
        f"{triple(COLUMNS, ('cold', 'warm', 'restart'))} | "
        f"{triple(STREAM, ('cold', 'warm', 'restart'))} | {triple('java', ('cold', 'warm'))} | "
        f"{triple('pyiceberg', ('cold', 'warm'))} | {ratios[0]} | {ratios[1]} | "
        f"{' | '.join(mib)} | {loads} |"
    )


def _machine() -> str:
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split("MemTotal:")[1].split()[0])
        memory = f", {kib / 1024 / 1024:.0f} GiB"
    return (
        f"{platform.node()}, {os.cpu_count()} cores{memory}, {platform.machine()}, "
        f"Python {platform.python_version()}"
    )


def _check_agreement(per_filter: dict[str, list[dict[str, Any]]]) -> None:
    """Every run of every tool planned the same files (each sum each tool reports)."""
    for key in SUMS:
        seen = {(t, r[key]) for t, rs in per_filter.items() for r in rs if key in r}
        values = {v for _, v in seen}
        assert len(values) <= 1, f"tools disagree on {key}: {sorted(seen)}"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--filters", default="sel,time10,none,point")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--tree", type=Path, default=REPO, help="Icecore's source tree")
    parser.add_argument(
        "--group", type=int, default=1234, help="the id group sel keeps (16 files; tiny tables)"
    )
    parser.add_argument("--record", default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--restart", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        try:
            from icecore.scan.planner import Plan, TableScan
        except ImportError:
            columns = stream = False
        else:
            columns = hasattr(Plan, "files")
            stream = hasattr(TableScan, "plan_files")
        print(json.dumps({"columns": columns, "stream": stream}))
        return 0
    if args.child:
        tool, metadata, flt = args.child
        if tool in ICECORE_KINDS:
            result = child_icecore(metadata, flt, tool, args.restart)
        elif tool == "java":
            result = child_java(metadata, flt)
        else:
            result = child_pyiceberg(metadata, flt)
        print(json.dumps(result))
        return 0
    if not args.table:
        parser.error("--table is required")
    tree = args.tree.resolve()
    tools = [t for t in args.tools.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}; choose from {', '.join(TOOLS)}")
    if "icecore" in tools:
        at = tools.index("icecore") + 1
        tools[at:at] = consumers(tree)
    table = str(Path(args.table).resolve())
    os.environ["ICECORE_CACHE_DIR"] = "off"  # the parent's own plan must not warm a cache
    metadata = _metadata_file(table)
    chosen = filters(args.group)
    if "point" in args.filters:
        day, next_day = point_day(table, chosen["sel"])
        chosen["point"] = chosen["point"].format(day=day, next_day=next_day)
    started = dt.datetime.now(dt.UTC)
    rows: list[str] = []
    everything: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
    for name in args.filters.split(","):
        results: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
        load_start = os.getloadavg()[0]
        for round_no in range(args.runs):
            shift = round_no % len(tools)
            for tool in tools[shift:] + tools[:shift]:
                result = run_tool(tool, tree, metadata, chosen[name])
                results[tool].append(result)
                shown = {k: round(v, 3) for k, v in result.items() if isinstance(v, float)}
                print(f"  {name} {tool}: files={result['files']} {shown}", file=sys.stderr)
            _check_agreement(results)
        for tool in tools:
            everything[tool].extend(results[tool])
        rows.append(_row(name, results, f"{load_start:.1f}-{os.getloadavg()[0]:.1f}"))
    imports = ", ".join(
        f"{label} {_fmt(_med(everything[t], 'import'))} s"
        for t, label in (
            ("icecore", "Icecore import + first use"),
            ("java", "JVM start (py4j gateway + Iceberg classes)"),
            ("pyiceberg", "PyIceberg import"),
        )
        if t in everything
    )
    lines = [
        f"## plan_bench {started:%Y-%m-%d %H:%M} UTC: {table}",
        "",
        f"Machine: {_machine()}. Icecore tree: `{tree}`. {args.runs} runs per tool and filter, "
        "tools in turn, each a fresh process; cold = load + plan + consume every task (path, "
        "records, size, deletes, residual) with empty caches; warm = the same again in the "
        "same process; restart = a new process with Icecore's disk cache warm; import and JVM "
        "start apart (medians: " + imports + "). Ratios: Icecore / Java (below 1 = Icecore "
        "faster; tasks / columns / stream). Peak MiB: VmHWM, largest over the runs; Icecore: "
        "after warm / with one plan's tasks held in a list / decode workers / restart process. "
        "Load: 1-minute load average at the filter's start and end. OS page cache not dropped (no "
        "root).",
        "",
        "| filter | files | Icecore tasks cold / warm / restart s | Icecore columns cold / "
        "warm / restart s | Icecore stream cold / warm / restart s | Java cold / warm s | "
        "PyIceberg cold / warm s | cold Icecore / Java | warm Icecore / Java | peak MiB Icecore "
        "(warm / held / workers / restart) | peak MiB Icecore columns | peak MiB Java (warm / "
        "held) | peak MiB PyIceberg | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
    ]
    publish("\n".join(lines) + "\n", args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
