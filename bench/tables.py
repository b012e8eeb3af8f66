"""Build metadata-only Iceberg v2 benchmark tables (bench/README.md "Benchmark tables").

The tables look like taxi trips (``id long, pickup_ts timestamptz, vendor int, zone string,
fare double, tip double, passengers int, payment string``), are partitioned by
``day(pickup_ts), bucket[16](id)`` and live in the Hadoop (filesystem) layout under
``<warehouse>/hadoop/<namespace>/<name>``, where Spark's ``hadoop`` catalog of
:func:`pipeline.spark.build_session` finds them. Planning never opens a data file, so none is
written: every data file is a manifest entry with a fake path and full column metrics.

The work happens in Iceberg's Java API (``bench/java/BenchTableBuilder.java``, compiled here
with ``javac`` into a cache folder under the system temp directory and run in its own ``java``
process), because a million per-file calls from Python through py4j would take far too long.
See that file for the layout: ids grow with time, one file per bucket in each id group (so a
narrow id range leaves 16 files), manifests of consecutive, hence neighbouring-day, files.

Usage::

    python -m bench.tables --warehouse DIR --files N --files-per-manifest M [--snapshots S]
        [--name NAME] [--days D] [--threads T] [--replace]

    python -m bench.tables --warehouse DIR --kind snapshots [--snapshots 10000]
        [--metadata-versions 1000] [--name NAME] [--seed S] [--replace]
    python -m bench.tables --warehouse DIR --kind evolved [--schemas 50] [--specs 5]
        [--files 5000] [--name NAME] [--seed S] [--replace]

The other kinds (``bench/java/BenchShapeBuilder.java``) are the app's tables of issue 20: a long
history (``snapshots_<S>``) and an evolved table (``evolved_<schemas>``). They are built in a
private mount namespace (``unshare``) over a staging folder and renamed into place when
complete, so a reader polling the table's folder never sees half a table.

Progress goes to stderr; the last line on stdout is one JSON object with the table's path,
its metadata file, the numbers of files, manifests and snapshots, and the seconds it took.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline.spark import HADOOP_SUBDIR, PipelineError, find_iceberg_jar, find_java

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "BenchTableBuilder.java"
MAIN_CLASS = "BenchTableBuilder"
SHAPE_SOURCE = Path(__file__).resolve().parent / "java" / "BenchShapeBuilder.java"
SHAPE_CLASS = "BenchShapeBuilder"
KINDS = ("files", "snapshots", "evolved")
DEFAULT_SEED = 20
SHAPE_START_DATE = "2025-06-01"
NAMESPACE = "bench"
DEFAULT_DAYS = 1000
DEFAULT_START_DATE = "2021-01-01"
JAVA_HEAP = "2g"


class BenchBuildError(Exception):
    """The benchmark table could not be built; the message is one sentence."""


@dataclass(frozen=True, slots=True)
class BuildResult:
    """What :func:`build_table` built and how long it took.

    Attributes:
        table: the table's folder (its Iceberg location).
        metadata: the current ``vN.metadata.json``.
        files: data files in the current snapshot.
        manifests: manifests in the current snapshot.
        snapshots: snapshots committed (one fast append each).
        snapshot_id: the current snapshot.
        days: distinct days the files span.
        seconds: wall time of the whole build, compiling and the JVM's start included.
        write_seconds: time the JVM spent writing manifests.
        commit_seconds: time the JVM spent committing snapshots.
    """

    table: str
    metadata: str
    files: int
    manifests: int
    snapshots: int
    snapshot_id: int
    days: int
    seconds: float
    write_seconds: float
    commit_seconds: float


def _pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not jars.is_dir():
        raise BenchBuildError(f"pyspark's jar folder {jars} is missing; reinstall pyspark 3.5.")
    return jars


def _find_javac(java: str) -> str:
    javac = Path(java).resolve().parent / "javac"
    if javac.is_file():
        return str(javac)
    found = shutil.which("javac")
    if found is None:
        raise BenchBuildError(
            "javac was not found next to java or on PATH; install a Java 17 JDK "
            "(apt-get install openjdk-17-jdk-headless)."
        )
    return found


def java_classpath(iceberg_jar: str) -> str:
    """The compile and run classpath of the bench's Java: pyspark's jars and Iceberg's runtime."""
    return os.pathsep.join([str(_pyspark_jars() / "*"), iceberg_jar])


def _java_command(java: str, classes: Path, iceberg_jar: str, main_class: str) -> list[str]:
    """``java`` running a compiled builder class against pyspark's jars and the Iceberg jar."""
    return [
        java,
        f"-Xmx{JAVA_HEAP}",
        "-XX:+UseParallelGC",
        "-Dlog4j2.level=WARN",
        "-cp",
        os.pathsep.join([str(classes), java_classpath(iceberg_jar)]),
        main_class,
    ]


def _run_builder(cmd: list[str], what: str, say: Callable[[str], None]) -> dict[str, Any]:
    """Run a Java builder, its stderr passed to ``say``; the JSON of its last stdout line."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        for line in proc.stderr:
            say(line.rstrip("\n"))
        out = proc.stdout.read()
        code = proc.wait()
    lines = [line for line in out.splitlines() if line.strip()]
    if code != 0 or not lines:
        raise BenchBuildError(f"the Java {what} failed (exit {code}); see its stderr above.")
    made: dict[str, Any] = json.loads(lines[-1])
    return made


def compile_builder(
    java: str, iceberg_jar: str, cache_root: Path | None = None, source: Path = JAVA_SOURCE
) -> Path:
    """Compile the Java builder once per source and jar, returning the classes folder.

    Args:
        java: the java executable (javac is looked for beside it, then on PATH).
        iceberg_jar: the Iceberg Spark runtime jar compiled against.
        cache_root: where compiled classes are kept; the system temp folder by default.
        source: the Java file (one public class named as the file), the builder by default;
            bench/plan_bench.py compiles its ``PlanConsumer.java`` here too.

    Returns:
        A folder holding the source's class (``BenchTableBuilder.class`` by default).

    Raises:
        BenchBuildError: javac is missing or the compilation failed.
    """
    text = source.read_bytes()
    key = hashlib.sha256(text + iceberg_jar.encode()).hexdigest()[:16]
    root = cache_root or Path(tempfile.gettempdir()) / "icecore-bench-java"
    classes = root / key
    if (classes / f"{source.stem}.class").is_file():
        return classes
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=root))
    cmd = [
        _find_javac(java),
        "-nowarn",
        "-d",
        str(staging),
        "-cp",
        java_classpath(iceberg_jar),
        str(source),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise BenchBuildError(f"javac failed on {source.name}: {done.stderr.strip()}")
    try:
        staging.rename(classes)
    except OSError:  # another build compiled the same source first
        shutil.rmtree(staging, ignore_errors=True)
    return classes


def default_name(files: int) -> str:
    """The default table name for ``files`` data files: ``files_<N>``."""
    return f"files_{files}"


def table_dir(warehouse: str | os.PathLike[str], name: str, namespace: str = NAMESPACE) -> Path:
    """Where the Hadoop catalog keeps table ``namespace.name`` of ``warehouse``."""
    return Path(warehouse).resolve() / HADOOP_SUBDIR / namespace / name


def build_table(
    warehouse: str | os.PathLike[str],
    files: int,
    files_per_manifest: int,
    *,
    snapshots: int = 1,
    name: str | None = None,
    namespace: str = NAMESPACE,
    days: int = DEFAULT_DAYS,
    start_date: str = DEFAULT_START_DATE,
    threads: int = 2,
    replace: bool = False,
    progress: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build one metadata-only benchmark table in ``<warehouse>/hadoop/<namespace>/<name>``.

    Files are spread evenly over ``snapshots`` fast appends; each append adds its files in
    manifests of at most ``files_per_manifest`` consecutive (hence same or neighbouring day)
    files.

    Args:
        warehouse: the warehouse folder (the Hadoop catalog is its ``hadoop`` subfolder).
        files: data files in the table.
        files_per_manifest: entries per manifest (the last of each snapshot may hold fewer).
        snapshots: fast appends to commit.
        name: the table's name; ``files_<files>`` by default.
        namespace: the table's namespace.
        days: days the files span (at most one per 16 files).
        start_date: the first day, ISO 8601.
        threads: JVM threads writing manifests.
        replace: delete an existing table folder of that name first.
        progress: called with each progress line; written to stderr by default.

    Returns:
        What was built and how long it took.

    Raises:
        BenchBuildError: bad arguments, the table exists, or the Java build failed.
    """
    if min(files, files_per_manifest, snapshots, days, threads) < 1:
        raise BenchBuildError("files, files per manifest, snapshots, days and threads must be ≥ 1.")
    if snapshots > files:
        raise BenchBuildError(f"{files} files cannot be spread over {snapshots} snapshots.")
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    name = name or default_name(files)
    target = table_dir(warehouse, name, namespace)
    if target.exists():
        if not replace:
            raise BenchBuildError(f"{target} already exists; pass --replace to rebuild it.")
        say(f"removing the existing {target}")
        shutil.rmtree(target)

    started = time.perf_counter()
    try:
        java = find_java()
        iceberg_jar = find_iceberg_jar()
    except PipelineError as e:
        raise BenchBuildError(str(e)) from e
    classes = compile_builder(java, iceberg_jar)
    cmd = [
        *_java_command(java, classes, iceberg_jar, MAIN_CLASS),
        "--warehouse",
        str(Path(warehouse).resolve() / HADOOP_SUBDIR),
        "--namespace",
        namespace,
        "--name",
        name,
        "--files",
        str(files),
        "--files-per-manifest",
        str(files_per_manifest),
        "--snapshots",
        str(snapshots),
        "--days",
        str(days),
        "--start-date",
        start_date,
        "--threads",
        str(threads),
    ]
    say(
        f"building {namespace}.{name}: {files:,} files, {files_per_manifest} per manifest, "
        f"{snapshots:,} snapshot(s)"
    )
    made = _run_builder(cmd, "table builder", say)
    seconds = time.perf_counter() - started
    return BuildResult(
        table=made["table"],
        metadata=made["metadata"],
        files=int(made["files"]),
        manifests=int(made["manifests"]),
        snapshots=int(made["snapshots"]),
        snapshot_id=int(made["snapshot_id"]),
        days=int(made["days"]),
        seconds=round(seconds, 3),
        write_seconds=float(made["write_seconds"]),
        commit_seconds=float(made["commit_seconds"]),
    )


def _shape_default_name(kind: str, snapshots: int, schemas: int) -> str:
    return f"snapshots_{snapshots}" if kind == "snapshots" else f"evolved_{schemas}"


def _staged_command(staging_ns: Path, real_ns: Path, cmd: list[str]) -> list[str]:
    """``cmd`` run in a private mount namespace where ``real_ns`` shows ``staging_ns``.

    The table's paths inside its metadata are absolute, so it must be built at its final
    location; the bind mount lets the builder write there while everybody else still sees the
    real (table-less) namespace folder until the finished table is renamed in.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        raise BenchBuildError("unshare (util-linux) is missing; pass --no-stage to build in place.")
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    return [unshare, "-Urm", "sh", "-c", script, "sh", str(staging_ns), str(real_ns), *cmd]


def can_stage() -> bool:
    """Whether this machine lets an unprivileged user bind-mount in a private namespace.

    Containers often forbid user namespaces (seccomp); the build then happens in place.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    with tempfile.TemporaryDirectory(prefix="stage-probe-") as probe:
        a, b = Path(probe, "a"), Path(probe, "b")
        a.mkdir()
        b.mkdir()
        script = 'mount --bind "$1" "$2"'
        done = subprocess.run(
            [unshare, "-Urm", "sh", "-c", script, "sh", str(a), str(b)],
            capture_output=True,
            check=False,
            timeout=30,
        )
    return done.returncode == 0


def build_shape(
    warehouse: str | os.PathLike[str],
    kind: str,
    *,
    name: str | None = None,
    namespace: str = NAMESPACE,
    snapshots: int = 10_000,
    metadata_versions: int = 1_000,
    days: int = 7,
    tags: int = 20,
    schemas: int = 50,
    specs: int = 5,
    files: int = 5_000,
    seed: int = DEFAULT_SEED,
    start_date: str = SHAPE_START_DATE,
    interval_seconds: int = 60,
    replace: bool = False,
    stage: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Build the long-history (``snapshots``) or the evolved (``evolved``) bench table.

    See ``bench/java/BenchShapeBuilder.java`` for the shapes. Everything but Iceberg's snapshot
    ids and file UUIDs follows from the arguments (``seed`` and ``start_date`` included: commit
    ``n`` is stamped about ``start_date + n * interval_seconds``).

    Args:
        warehouse: the warehouse folder (the Hadoop catalog is its ``hadoop`` subfolder).
        kind: ``snapshots`` or ``evolved``.
        name: the table's name; ``snapshots_<S>`` or ``evolved_<schemas>`` by default.
        namespace: the table's namespace.
        snapshots: snapshots of the history table (every branch's commits included).
        metadata_versions: about how many metadata files the history table is committed in.
        days: days the history table's appends span (its ``day(pickup_ts)`` partitions).
        tags: tags of the history table.
        schemas: schemas of the evolved table.
        specs: partition specs of the evolved table (1-5).
        files: data files of the evolved table.
        seed: seeds every random choice.
        start_date: the first commit's day, ISO 8601.
        interval_seconds: time between two commits' stamps.
        replace: delete an existing table folder of that name first.
        stage: build behind a private bind mount and rename into place (see
            :func:`_staged_command`); ``False`` builds in place.
        progress: called with each progress line; written to stderr by default.

    Returns:
        The Java builder's JSON report plus ``seconds`` (wall time, compile and JVM included).

    Raises:
        BenchBuildError: bad arguments, the table exists, or the Java build failed.
    """
    if kind not in KINDS[1:]:
        raise BenchBuildError(f"unknown table kind {kind!r}; use snapshots or evolved.")
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    name = name or _shape_default_name(kind, snapshots, schemas)
    target = table_dir(warehouse, name, namespace)
    if target.exists() and not replace:
        raise BenchBuildError(f"{target} already exists; pass --replace to rebuild it.")
    started = time.perf_counter()
    try:
        java = find_java()
        iceberg_jar = find_iceberg_jar()
    except PipelineError as e:
        raise BenchBuildError(str(e)) from e
    classes = compile_builder(java, iceberg_jar, source=SHAPE_SOURCE)
    catalog_root = Path(warehouse).resolve() / HADOOP_SUBDIR
    options = {
        "kind": kind,
        "warehouse": str(catalog_root),
        "namespace": namespace,
        "name": name,
        "snapshots": snapshots,
        "metadata-versions": metadata_versions,
        "days": days,
        "tags": tags,
        "schemas": schemas,
        "specs": specs,
        "files": files,
        "seed": seed,
        "start-date": start_date,
        "interval-seconds": interval_seconds,
    }
    cmd = _java_command(java, classes, iceberg_jar, SHAPE_CLASS)
    for key, value in options.items():
        cmd += [f"--{key}", str(value)]
    real_ns = target.parent
    real_ns.mkdir(parents=True, exist_ok=True)
    staging: Path | None = None
    if stage and not can_stage():
        say("no private mount namespace here (unshare -Urm failed): building in place")
        stage = False
    if stage:
        # Beside the catalog folder (same file system, so the final rename is atomic), not in
        # it: a filesystem catalog listing its namespaces must not see the half-built table.
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=catalog_root.parent))
        (staging / namespace).mkdir()
        cmd = _staged_command(staging / namespace, real_ns, cmd)
    elif target.exists():
        say(f"removing the existing {target}")
        shutil.rmtree(target)
    say(f"building {namespace}.{name} ({kind})" + (f" staged in {staging}" if staging else ""))
    try:
        made = _run_builder(cmd, "shape builder", say)
        if staging is not None:
            if target.exists():
                say(f"replacing the existing {target}")
                shutil.rmtree(target)
            (staging / namespace / name).rename(target)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    made["kind"] = kind
    made["seconds"] = round(time.perf_counter() - started, 3)
    return made


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.tables", description="Build a metadata-only Iceberg bench table."
    )
    parser.add_argument("--warehouse", required=True, help="warehouse folder")
    parser.add_argument(
        "--kind", choices=KINDS, default="files", help="table shape (default files)"
    )
    parser.add_argument("--files", type=int, help="data files (evolved: default 5000)")
    parser.add_argument("--files-per-manifest", type=int, help="entries/manifest (files kind)")
    parser.add_argument(
        "--snapshots", type=int, help="fast appends (default 1); snapshots kind: 10000"
    )
    parser.add_argument("--metadata-versions", type=int, default=1000, help="snapshots kind")
    parser.add_argument("--tags", type=int, default=20, help="snapshots kind: tags")
    parser.add_argument("--schemas", type=int, default=50, help="evolved kind: schemas")
    parser.add_argument("--specs", type=int, default=5, help="evolved kind: partition specs")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="shape kinds: seed")
    parser.add_argument(
        "--interval-seconds", type=int, default=60, help="shape kinds: time between commits"
    )
    parser.add_argument(
        "--no-stage", action="store_true", help="shape kinds: build in place, not staged"
    )
    parser.add_argument("--name", help="table name (default files_<N>)")
    parser.add_argument("--namespace", default=NAMESPACE, help="namespace (default bench)")
    parser.add_argument("--days", type=int, help="days spanned (1000; snapshots kind: 7)")
    parser.add_argument("--start-date", help="first day, ISO 8601 (2021-01-01; shapes 2025-06-01)")
    parser.add_argument("--threads", type=int, default=2, help="JVM writer threads")
    parser.add_argument("--replace", action="store_true", help="rebuild an existing table")
    args = parser.parse_args(argv)
    try:
        if args.kind != "files":
            shaped = build_shape(
                args.warehouse,
                args.kind,
                name=args.name,
                namespace=args.namespace,
                snapshots=args.snapshots or 10_000,
                metadata_versions=args.metadata_versions,
                days=args.days or 7,
                tags=args.tags,
                schemas=args.schemas,
                specs=args.specs,
                files=args.files or 5_000,
                seed=args.seed,
                start_date=args.start_date or SHAPE_START_DATE,
                interval_seconds=args.interval_seconds,
                replace=args.replace,
                stage=not args.no_stage,
            )
            print(json.dumps(shaped))
            return 0
        if args.files is None or args.files_per_manifest is None:
            parser.error("--files and --files-per-manifest are required for --kind files")
        result = build_table(
            args.warehouse,
            args.files,
            args.files_per_manifest,
            snapshots=args.snapshots or 1,
            name=args.name,
            namespace=args.namespace,
            days=args.days or DEFAULT_DAYS,
            start_date=args.start_date or DEFAULT_START_DATE,
            threads=args.threads,
            replace=args.replace,
        )
    except BenchBuildError as e:
        print(str(e), file=sys.stderr)
        return 1
    print(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
