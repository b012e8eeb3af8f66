"""``python -m pipeline.maintenance`` as a process: bad input, a killed job, a lost race.

Every failure is one sentence on stderr with exit 1, and the table is left as it was: a
killed job leaves the previous version (Iceberg commits by one atomic swap), a job that
lost a race with another writer commits nothing, and icecore and Spark both read the
version they read before.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import icecore
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.pipeline.test_demo_cli import one_sentence
from tests.pipeline.test_maintenance import content, spark_digest
from tests.ui.copies import copy_sql_table

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "ICECORE_SPARK_DRIVER_MEMORY": "1g", "ICECORE_SPARK_MASTER": "local[2]"}


@pytest.fixture(scope="module")
def evo(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    return register_catalogs(spark, tmp_path_factory.mktemp("maintenance-cli"))


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.maintenance", *argv],
        cwd=REPO,
        env=env if env is not None else ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )


def start(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline.maintenance", *argv],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for_call(process: subprocess.Popen[str]) -> list[str]:
    """Read the job's progress until it has started the procedure."""
    assert process.stderr is not None
    seen: list[str] = []
    for line in process.stderr:
        seen.append(line)
        if "running CALL" in line:
            return seen
    raise AssertionError(f"the job never started its procedure: {''.join(seen)}")


def test_bad_input_is_one_sentence_and_changes_nothing(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    trips = f"{demo_warehouse}::demo.trips"
    before = icecore.load_table(trips).metadata_location
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    cases = [
        (("rewrite_manifests", trips, "--master", f"spark://127.0.0.1:{port}"), "unreachable"),
        (("rewrite_data_files", trips, "--filter", "no_such_column = 1"), "no_such_column"),
        (("expire_snapshots", f"{demo_warehouse}::demo.nope"), "nope"),
        (("remove_orphan_files", trips, "--older-than", "yesterday"), "ISO-8601"),
        (
            ("remove_orphan_files", trips, "--older-than", time.strftime("%Y-%m-%dT%H:%M:%SZ")),
            "24 hours",
        ),
    ]
    metadata_json = icecore.load_table(trips).metadata_location
    cases.append((("rewrite_manifests", metadata_json), "metadata file"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    no_java = {k: v for k, v in ENV.items() if k != "JAVA_HOME"} | {"PATH": str(bin_dir)}
    for argv, words in cases:
        result = run(*argv)
        assert result.returncode == 1, (argv, result.stderr)
        assert words in one_sentence(result.stderr), argv
        assert result.stdout == ""
    result = run("rewrite_manifests", trips, env=no_java)
    assert result.returncode == 1
    assert "Java" in one_sentence(result.stderr)
    assert icecore.load_table(trips).metadata_location == before


def test_dry_run_prints_the_estimate_without_spark(demo_warehouse: Path) -> None:
    trips = f"{demo_warehouse}::demo.trips"
    result = run("rewrite_data_files", trips, "--dry-run", env={**ENV, "JAVA_HOME": "/nowhere"})
    assert result.returncode == 0, result.stderr
    import json

    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["dry_run"] is True and out["estimate"]["rewritten_files_count"] > 0


def test_a_killed_job_leaves_the_previous_version(
    evo: EvoCatalogs, demo_warehouse: Path, spark: Any
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    arg = f"{evo.sql_uri}::{copy.table}"
    table = icecore.load_table(arg)
    rows, digest = content(table), spark_digest(spark, copy.spark_name)
    process = start("rewrite_data_files", arg, "--force")  # trips fan out: forced
    wait_for_call(process)
    time.sleep(3)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    after = icecore.load_table(arg)
    assert after.metadata_location == table.metadata_location
    assert content(after).equals(rows)
    assert spark_digest(spark, copy.spark_name) == digest


def test_a_concurrent_write_is_refused_by_spark_conflict_check(
    evo: EvoCatalogs, demo_warehouse: Path, spark: Any
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "trips")
    arg = f"{evo.sql_uri}::{copy.table}"
    first = spark.sql(f"SELECT min(trip_id) FROM {copy.spark_name}").collect()[0][0]
    rows = spark_digest(spark, copy.spark_name)[0]
    process = start("rewrite_data_files", arg, "--force")  # trips fan out: forced
    wait_for_call(process)
    time.sleep(10)  # the rewrite has planned from the current snapshot and is writing files
    # Another writer deletes a row of a file the rewrite is replacing, and commits first.
    spark.sql(f"DELETE FROM {copy.spark_name} WHERE trip_id = {first}")
    written = icecore.load_table(arg)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 1, err[-2000:]
    last = [line for line in err.splitlines() if line.strip()][-1]
    assert "lost a race with another writer" in last and "nothing changed" in last
    assert out == ""
    after = icecore.load_table(arg)
    assert after.metadata_location == written.metadata_location
    assert content(after).num_rows == spark_digest(spark, copy.spark_name)[0] == rows - 1
