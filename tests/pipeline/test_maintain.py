"""``icecore maintain CATALOG`` runs the jobs its policies say are due (issue 34 deliver 5).

Policies run Spark jobs, a dry run writes nothing, a failed job exits 1 with its failure in
the JSON, and two ``maintain`` processes never run two jobs on one table.

Spark is the oracle: rows are Spark's ``count(*)`` before and after, data files Spark's
``data_files`` table. Each test's tables are written here by Spark into this module's own
catalog (eight one-row inserts into one partition: eight small files), never into the shared
fixture warehouse.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from icecore.audit import audit_changes
from icecore.catalog import load_catalog
from icecore.catalog.audit_store import audit_sink_for
from icecore.identifier import TableIdentifier
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.icecore.evolution.hand_table import tree_state

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def evo(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    return register_catalogs(spark, tmp_path_factory.mktemp("maintain"))


def _small_files_table(evo: EvoCatalogs, name: str) -> None:
    evo.create(
        "sql",
        name,
        "(id bigint, zone string) USING iceberg PARTITIONED BY (zone)",
        *(f"({i}, 'a')" for i in range(8)),
    )


def _env(tmp_path: Path, policy: str, **more: str) -> dict[str, str]:
    config = tmp_path / "icecore.toml"
    config.write_text(policy)
    locks = tmp_path / "locks"
    locks.mkdir(exist_ok=True)
    return {
        **os.environ,
        "ICECORE_CONFIG": str(config),
        "ICECORE_MAINTAIN_LOCKS": str(locks),
        "ICECORE_SPARK_DRIVER_MEMORY": "1g",
        **more,
    }


def _compact(table: str) -> str:
    return f'[[policies]]\ntables = ["{table}"]\ncompact_small_file_share = 0.5\n'


def maintain(
    catalog: str, *argv: str, env: dict[str, str]
) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        [sys.executable, "-m", "icecore", "maintain", catalog, *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = json.loads(done.stdout) if done.stdout.strip() else []
    return done.returncode, out, done.stderr


def _row(results: list[dict[str, Any]], table: str) -> dict[str, Any]:
    return next(r for r in results if r["table"] == table)


def _spark_counts(spark: Any, full: str) -> tuple[int, int]:
    spark.sql(f"REFRESH TABLE {full}")
    rows = int(spark.sql(f"SELECT count(*) FROM {full}").collect()[0][0])
    files = int(spark.sql(f"SELECT count(*) FROM {full}.data_files").collect()[0][0])
    return rows, files


def _refusing_master() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"spark://127.0.0.1:{port}"  # closed again: connections are refused


@pytest.mark.slow
def test_maintain_compacts_a_table_of_small_files_keeping_its_rows(
    evo: EvoCatalogs, spark: Any, tmp_path: Path
) -> None:
    name = "maintain_small"
    full = evo.spark_name("sql", name)
    spark.sql(f"CREATE TABLE {full} (id bigint, tag string) USING iceberg")
    for i in range(8):
        spark.sql(f"INSERT INTO {full} SELECT id + {i * 300}, uuid() FROM range(300)")
    # A target five times the largest file: every file is small now (< 75% of it), and the
    # rewrite's output, about eight files' worth, holds at least one file at size.
    largest = spark.sql(f"SELECT max(file_size_in_bytes) FROM {full}.data_files").collect()[0][0]
    spark.sql(
        f"ALTER TABLE {full} SET TBLPROPERTIES ('write.target-file-size-bytes' = '{largest * 5}')"
    )
    rows_before, files_before = _spark_counts(spark, full)
    env = _env(tmp_path, _compact(f"db.{name}"))

    code, out, err = maintain(evo.sql_uri, "--master", "local[2]", env=env)

    assert code == 0, err
    row = _row(out, f"db.{name}")
    assert [r["job"] for r in row["runs"]] == ["rewrite_data_files"]
    run = row["runs"][0]
    assert run["ok"], run
    rows_after, files_after = _spark_counts(spark, full)
    assert rows_after == rows_before
    result = run["result"]["result"]
    assert files_after == (
        files_before - result["rewritten_data_files_count"] + result["added_data_files_count"]
    )
    assert files_after < files_before
    assert row["after"]["small_file_share"] < row["before"]["small_file_share"]
    assert row["after"]["metadata_location"] != row["before"]["metadata_location"]
    # The job recorded its start and end in the catalog's audit log, as the CLI's user.
    sink = audit_sink_for(load_catalog(evo.sql_uri))
    assert sink is not None
    changes = [c for c in audit_changes(sink.read()) if c.table == f"db.{name}"]
    assert [(c.action, c.result) for c in changes] == [("job:rewrite_data_files", "committed")]
    assert changes[0].metadata_after == row["after"]["metadata_location"]
    # Now healthy: a second round has nothing due and runs nothing.
    code, again, err = maintain(evo.sql_uri, "--master", "local[2]", env=env)
    assert code == 0, err
    assert _row(again, f"db.{name}")["due"] == []
    assert "runs" not in _row(again, f"db.{name}")


@pytest.mark.slow
def test_a_dry_run_shows_the_due_jobs_and_writes_nothing(
    evo: EvoCatalogs, spark: Any, tmp_path: Path
) -> None:
    name = "maintain_dry"
    _small_files_table(evo, name)
    full = evo.spark_name("sql", name)
    policy = _compact(f"db.{name}") + (
        'expire_older_than = "1s"\nexpire_retain_last = 1\nrewrite_manifests_per_snapshot = 4\n'
    )
    env = _env(tmp_path, policy)
    snapshots = [
        int(r[0].timestamp() * 1000)
        for r in spark.sql(f"SELECT committed_at FROM {full}.snapshots ORDER BY 1").collect()
    ]
    manifests = int(spark.sql(f"SELECT count(*) FROM {full}.manifests").collect()[0][0])
    # Every snapshot but the newest is more than a second old (waited for, not slept).
    while time.time() * 1000 < snapshots[-2] + 1500:
        time.sleep(0.1)
    before = tree_state(evo.warehouse)

    code, out, err = maintain(evo.sql_uri, "--dry-run", env=env)

    assert code == 0, err
    row = _row(out, f"db.{name}")
    due = {d["job"]: d for d in row["due"]}
    assert list(due) == ["rewrite_data_files", "expire_snapshots", "rewrite_manifests"]
    _, files = _spark_counts(spark, full)
    assert due["rewrite_data_files"]["estimate"]["rewritten_files_count"] == files == 8
    # retain_last 1 keeps the newest; every older snapshot is past the second.
    assert due["expire_snapshots"]["estimate"]["expired_snapshots_count"] == len(snapshots) - 1
    assert "--retain-last" in due["expire_snapshots"]["command"]
    assert due["rewrite_manifests"]["estimate"]["rewritten_manifests_count"] == manifests > 4
    assert row["policies"]["compact_small_file_share"]["value"] == 0.5
    assert row["policies"]["expire_older_than"]["value"] == "1s"
    assert "runs" not in row
    assert tree_state(evo.warehouse) == before


def test_a_failing_job_exits_non_zero_with_its_failure_in_the_json(
    evo: EvoCatalogs, tmp_path: Path
) -> None:
    """And alerts the webhook: a listener on 127.0.0.1 receives the job's failure."""
    from tests.icecore.test_alerts import Listener

    name = "maintain_fail"
    _small_files_table(evo, name)
    listener = Listener()
    try:
        alerts = f'\n[alerts]\nwebhook = "{listener.url}"\n'
        env = _env(tmp_path, _compact(f"db.{name}") + alerts)
        ident = TableIdentifier.parse(f"db.{name}")
        location = load_catalog(evo.sql_uri).metadata_location(ident)

        code, out, err = maintain(evo.sql_uri, "--master", _refusing_master(), env=env)

        assert code == 1
        assert "failed" in err
        (run,) = _row(out, f"db.{name}")["runs"]
        assert run["ok"] is False and "unreachable" in run["error"]
        assert load_catalog(evo.sql_uri).metadata_location(ident) == location
        assert listener.wait("bodies", 1, timeout=30), "no alert reached the webhook"
        (alert,) = listener.bodies
        assert (alert["event"], alert["table"], alert["job"]) == (
            "job_failed",
            f"db.{name}",
            "rewrite_data_files",
        )
        assert "unreachable" in alert["error"]
    finally:
        listener.close()


def _held(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.slow
def test_two_maintain_processes_never_run_two_jobs_on_one_table(
    evo: EvoCatalogs, tmp_path: Path
) -> None:
    name = "maintain_twice"
    _small_files_table(evo, name)
    master = _refusing_master()
    env = _env(tmp_path, _compact(f"db.{name}"))
    # The first process takes the table's lock and stops there, as a long job would.
    first = subprocess.Popen(
        [sys.executable, "-m", "icecore", "maintain", evo.sql_uri, "--master", master],
        cwd=REPO,
        env={**env, "ICECORE_FAILPOINTS": "maintain-locked=stall"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    locks = tmp_path / "locks"
    try:
        deadline = time.monotonic() + 120
        while not any(_held(p) for p in locks.glob("*.lock")):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)

        code, out, err = maintain(evo.sql_uri, "--master", master, env=env)

        assert code == 0, err
        row = _row(out, f"db.{name}")
        assert row["skipped"] == "running" and "runs" not in row
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    # Its holder gone, the lock is free: the next process runs the job (which fails here).
    code, out, _ = maintain(evo.sql_uri, "--master", master, env=env)
    assert code == 1
    assert [r["job"] for r in _row(out, f"db.{name}")["runs"]] == ["rewrite_data_files"]
