"""``icecore health`` over a catalog of 1,000 metadata-only tables: first and second call.

    python -m bench.health_bench --warehouse /tmp/healthwh [--tables 1000] [--files 500]
        [--files-per-manifest 50] [--snapshots 5] [--peer-tables 100]
        [--record bench/health_bench.results.md]

The tables: one source table is built as bench/tables.py builds them (Iceberg Java API,
metadata only: every data file a manifest entry with full metrics, no data written), then
cloned ``--tables`` times into ``<warehouse>/hadoop/catalog/t0000...``: each clone has its
own metadata.json (new table uuid and location), its own manifest lists (rewritten to name
its own manifests) and its own manifest paths (hard links of the source's manifests, so every
path is distinct and nothing is decoded once for all; the OS page cache is shared, as on any
warm machine).

Measured, each in a fresh process with its own empty manifest cache folder
(``ICECORE_CACHE_DIR``):

* ``cli --files-bound 0``: the same from metadata.json and manifest lists alone;
* ``cli first``: ``icecore health CATALOG`` (the command's main, JSON written to /dev/null);
* ``cli second``: the same command again (a new process; the worker processes decode
  manifests without the planner's caches, so only the OS page cache is warmer);
* ``page``: as the Tables page calls :func:`icecore.catalog_health.catalog_health` in one
  process: the first visit (every name drawn as the workers start, the rows drawn as they
  fill in: when half are in, when all are), then the second visit (the catalog listed and
  each table's metadata file resolved again, every row found kept);
* with 64 or more tables the full rows are read by worker processes
  (:data:`icecore.catalog_health.PROCESS_MIN_TABLES`, ``ICECORE_PLAN_PROCESSES``): run the
  bench with ``ICECORE_PLAN_PROCESSES=0`` for the threads-only figures of the same sitting.
  "peak MiB" is the calling process's; "worker MiB" the largest peak of its children
  (``ru_maxrss`` of the waited-for children: the workers end with the call);
* the peer, PyIceberg 0.12 (``StaticTable.from_metadata`` then ``inspect.files()``: the data
  files, bytes and rows of each table), over the first ``--peer-tables`` tables, against
  Icecore's per-table time of ``cli first``; both must see the same files, bytes and rows.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench._harness import peak_mib, publish

CATALOG_NS = "catalog"
SOURCE_NS = "healthsrc"


def _source(args: argparse.Namespace) -> Path:
    """The source table's current metadata file, built when missing."""
    from bench.tables import build_table, table_dir
    from icecore.catalog.filesystem import current_metadata_file
    from icecore.io import FileIO

    source_warehouse = Path(args.warehouse) / "source"
    folder = table_dir(source_warehouse, "source", SOURCE_NS)
    if not (folder / "metadata").exists():
        build_table(
            source_warehouse,
            args.files,
            args.files_per_manifest,
            snapshots=args.snapshots,
            name="source",
            namespace=SOURCE_NS,
            progress=lambda line: print(line, file=sys.stderr),
        )
    return Path(current_metadata_file(FileIO(), str(folder)))


def _clone(source: Path, dest: Path) -> None:
    """One clone of the source table in ``dest`` (see the module doc)."""
    from icecore.avro import read_avro, write_avro

    meta = dest / "metadata"
    meta.mkdir(parents=True)
    obj = json.loads(source.read_text())
    obj["location"] = str(dest)
    obj["table-uuid"] = str(uuid.uuid4())
    obj["metadata-log"] = []
    manifests: dict[str, str] = {}
    for snapshot in obj["snapshots"]:
        old_list = snapshot["manifest-list"].removeprefix("file:")
        listed = read_avro(Path(old_list).read_bytes(), old_list)
        records = []
        for record in listed.records:
            old = str(record["manifest_path"]).removeprefix("file:")
            new = manifests.get(old)
            if new is None:
                new = str(meta / Path(old).name)
                os.link(old, new)
                manifests[old] = new
            records.append({**record, "manifest_path": new})
        new_list = meta / Path(old_list).name
        new_list.write_bytes(write_avro(listed.schema, records, listed.metadata))
        snapshot["manifest-list"] = str(new_list)
    (meta / "v1.metadata.json").write_text(json.dumps(obj, separators=(",", ":")))
    (meta / "version-hint.text").write_text("1")


def build(args: argparse.Namespace) -> Path:
    """The catalog folder with ``args.tables`` clones (made once; kept for later runs)."""
    source = _source(args)
    root = Path(args.warehouse) / "hadoop"
    catalog = root / CATALOG_NS
    have = len(list(catalog.glob("t*"))) if catalog.exists() else 0
    if have != args.tables:
        shutil.rmtree(catalog, ignore_errors=True)
        for i in range(args.tables):
            _clone(source, catalog / f"t{i:04d}")
    return root  # the clones only: the source table lives in its own warehouse


def child_cli(catalog: str, quick: bool = False) -> dict[str, Any]:
    """``icecore health CATALOG`` as the command runs it; prints nothing of the JSON.

    ``quick``: with ``--files-bound 0`` (metadata and manifest lists only).
    """
    from icecore import cli

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(["health", catalog, *(["--files-bound", "0"] if quick else [])])
    seconds = time.perf_counter() - start
    rows = json.loads(out.getvalue())
    return {
        "seconds": seconds,
        "code": code,
        "tables": len(rows),
        "errors": sum(1 for r in rows if r["error"]),
        "peak_mib": peak_mib(),
        "worker_mib": _worker_mib(),
        "totals": _totals(rows),
    }


def _worker_mib() -> float:
    """The largest peak resident memory of this process's ended children, in MiB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {k: sum(int(r[k] or 0) for r in rows) for k in ("data_files", "data_bytes", "rows")}


def child_page(catalog: str) -> dict[str, Any]:
    """The Tables page's two visits, as ui/app/Tables.py makes them.

    First visit: the tables located, then every row read (by worker processes from 64 tables
    on) while this process is given the rows so far to draw (``partial``: names first, then
    every :data:`~icecore.catalog_health.PARTIAL_EVERY_S` seconds). Second visit: located
    again, every row found by its metadata file.
    """
    from icecore.catalog import load_catalog
    from icecore.catalog_health import catalog_health, locate
    from icecore.lru import LRU

    known: LRU[str, dict[str, Any]] = LRU(20_000)
    opened = load_catalog(catalog)
    drawn: list[tuple[float, int]] = []
    start = time.perf_counter()
    located = locate(opened)

    def partial(rows: list[dict[str, Any]]) -> None:
        read = sum(1 for r in rows if r["score"] is not None or r["error"])
        drawn.append((time.perf_counter(), read))

    first = catalog_health(opened, known=known, located=located, partial=partial)
    middle = time.perf_counter()
    second = catalog_health(opened, known=known, located=locate(opened))
    end = time.perf_counter()
    assert _totals(first) == _totals(second)
    assert drawn and drawn[0][1] == 0
    return {
        "names": drawn[0][0] - start,
        "half": next((t for t, n in drawn if n >= len(first) // 2), middle) - start,
        "first": middle - start,
        "second": end - middle,
        "peak_mib": peak_mib(),
        "worker_mib": _worker_mib(),
    }


def child_peer(catalog: str, tables: int) -> dict[str, Any]:
    """PyIceberg over the first ``tables`` tables: files, bytes and rows of each."""
    import pyarrow.compute as pc
    from pyiceberg.table import StaticTable

    from icecore.catalog.filesystem import current_metadata_file
    from icecore.io import FileIO

    folders = sorted((Path(catalog) / CATALOG_NS).iterdir())[:tables]
    start = time.perf_counter()
    totals = {"data_files": 0, "data_bytes": 0, "rows": 0}
    for folder in folders:
        table = StaticTable.from_metadata(current_metadata_file(FileIO(), str(folder)))
        files = table.inspect.files()
        data = files.filter(pc.equal(files["content"], 0))
        totals["data_files"] += data.num_rows
        totals["data_bytes"] += pc.sum(data["file_size_in_bytes"]).as_py() or 0
        totals["rows"] += pc.sum(data["record_count"]).as_py() or 0
    return {"seconds": time.perf_counter() - start, "tables": len(folders), "totals": totals}


def child_cli_subset(catalog: str, tables: int) -> dict[str, Any]:
    """Icecore's rows of the peer's tables (for the check that both saw the same)."""
    from icecore.catalog import load_catalog
    from icecore.catalog_health import table_health
    from icecore.identifier import TableIdentifier

    opened = load_catalog(catalog)
    names = sorted(str(i) for i in opened.list_tables())[:tables]
    now = int(time.time() * 1000)
    rows = [table_health(opened, TableIdentifier.parse(n), now_ms=now) for n in names]
    return {"totals": _totals(rows)}


def _run(kind: str, catalog: str, extra: list[str], cache: str) -> dict[str, Any]:
    import subprocess

    env = {**os.environ, "ICECORE_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-m", "bench.health_bench", "--child", kind, "--catalog", catalog, *extra],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.health_bench")
    parser.add_argument("--warehouse", default="/tmp/healthwh")
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--files-per-manifest", type=int, default=50)
    parser.add_argument("--snapshots", type=int, default=5)
    parser.add_argument("--peer-tables", type=int, default=100)
    parser.add_argument("--record", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--catalog", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run = {
            "cli": lambda: child_cli(args.catalog),
            "cli_quick": lambda: child_cli(args.catalog, quick=True),
            "page": lambda: child_page(args.catalog),
            "peer": lambda: child_peer(args.catalog, args.peer_tables),
            "subset": lambda: child_cli_subset(args.catalog, args.peer_tables),
        }[args.child]
        print(json.dumps(run()))
        return 0
    started = time.perf_counter()
    catalog = str(build(args))
    built = time.perf_counter() - started
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as quick_cache:
        quick = _run("cli_quick", catalog, [], quick_cache)
    with tempfile.TemporaryDirectory() as cli_cache, tempfile.TemporaryDirectory() as page_cache:
        first = _run("cli", catalog, [], cli_cache)
        second = _run("cli", catalog, [], cli_cache)
        page = _run("page", catalog, [], page_cache)
    with tempfile.TemporaryDirectory() as peer_cache:
        peer = _run("peer", catalog, ["--peer-tables", str(args.peer_tables)], peer_cache)
        mine = _run("subset", catalog, ["--peer-tables", str(args.peer_tables)], peer_cache)
    load_after = os.getloadavg()
    per_table_ms = first["seconds"] / max(first["tables"], 1) * 1000
    peer_ms = peer["seconds"] / max(peer["tables"], 1) * 1000
    same = mine["totals"] == peer["totals"]
    report = "\n".join(
        [
            f"## icecore health over {first['tables']} tables, {dt.date.today().isoformat()}",
            "",
            f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python "
            f"{platform.python_version()}; load average {load_before[0]:.1f} before, "
            f"{load_after[0]:.1f} after (shared by other work).",
            f"Tables: clones of one bench table ({args.files} files in manifests of "
            f"{args.files_per_manifest}, {args.snapshots} snapshots), each with its own "
            f"metadata.json, manifest lists and manifest paths; built/checked in {built:.0f} s.",
            "",
            f"Full rows read by worker processes: ICECORE_PLAN_PROCESSES="
            f"{os.environ.get('ICECORE_PLAN_PROCESSES', '(default)')}.",
            "",
            "| run | s | peak MiB | worker MiB |",
            "| --- | --- | --- | --- |",
            f"| cli --files-bound 0 (metadata + manifest lists) | {quick['seconds']:.2f} | "
            f"{quick['peak_mib']:.0f} | |",
            f"| cli first (empty manifest cache) | {first['seconds']:.2f} | "
            f"{first['peak_mib']:.0f} | {first['worker_mib']:.0f} |",
            f"| cli second (new process; workers keep no manifest cache) | "
            f"{second['seconds']:.2f} | "
            f"{second['peak_mib']:.0f} | {second['worker_mib']:.0f} |",
            f"| page first visit: every name shown | {page['names']:.2f} | | |",
            f"| page first visit: half the rows shown | {page['half']:.2f} | | |",
            f"| page first visit: every row shown | {page['first']:.2f} | "
            f"{page['peak_mib']:.0f} | {page['worker_mib']:.0f} |",
            f"| page second visit (rows kept by metadata file) | {page['second']:.2f} | | |",
            "",
            f"Errors: {first['errors']}; exit code {first['code']}. Peer: PyIceberg "
            f"inspect.files() over {peer['tables']} tables: {peer_ms:.1f} ms per table against "
            f"Icecore's {per_table_ms:.1f} ms per table (whole health row, cli first): "
            f"**{peer_ms / per_table_ms:.2f}x**. Same data files, bytes and rows: "
            f"{'yes' if same else 'NO'}.",
            "",
        ]
    )
    publish(report, args.record)
    return 0 if same and not first["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
