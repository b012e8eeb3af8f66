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

from pipeline.spark import HADOOP_SUBDIR, PipelineError, find_iceberg_jar, find_java

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "BenchTableBuilder.java"
MAIN_CLASS = "BenchTableBuilder"
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
        java,
        f"-Xmx{JAVA_HEAP}",
        "-XX:+UseParallelGC",
        "-Dlog4j2.level=WARN",
        "-cp",
        os.pathsep.join([str(classes), java_classpath(iceberg_jar)]),
        MAIN_CLASS,
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
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        for line in proc.stderr:
            say(line.rstrip("\n"))
        out = proc.stdout.read()
        code = proc.wait()
    lines = [line for line in out.splitlines() if line.strip()]
    if code != 0 or not lines:
        raise BenchBuildError(f"the Java table builder failed (exit {code}); see its stderr above.")
    made = json.loads(lines[-1])
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


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.tables", description="Build a metadata-only Iceberg bench table."
    )
    parser.add_argument("--warehouse", required=True, help="warehouse folder")
    parser.add_argument("--files", type=int, required=True, help="data files")
    parser.add_argument("--files-per-manifest", type=int, required=True, help="entries/manifest")
    parser.add_argument("--snapshots", type=int, default=1, help="fast appends (default 1)")
    parser.add_argument("--name", help="table name (default files_<N>)")
    parser.add_argument("--namespace", default=NAMESPACE, help="namespace (default bench)")
    parser.add_argument("--days", type=int, default=DEFAULT_DAYS, help="days spanned")
    parser.add_argument("--start-date", default=DEFAULT_START_DATE, help="first day, ISO 8601")
    parser.add_argument("--threads", type=int, default=2, help="JVM writer threads")
    parser.add_argument("--replace", action="store_true", help="rebuild an existing table")
    args = parser.parse_args(argv)
    try:
        result = build_table(
            args.warehouse,
            args.files,
            args.files_per_manifest,
            snapshots=args.snapshots,
            name=args.name,
            namespace=args.namespace,
            days=args.days,
            start_date=args.start_date,
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
