"""User SQL over metadata tables and scan rows: answers equal Spark's, and nothing escapes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore.errors import IcecoreError, ValidationError
from icecore.point_in_time import At
from icecore.sql import SqlLimits, query_arrow, run_sql
from tests.conftest import REPO


@pytest.mark.spark
def test_sql_answers_equal_spark(spark: Any, demo_warehouse: Path) -> None:
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    ours = run_sql(
        t, "SELECT payment_type, count(*) AS n FROM rows GROUP BY 1", filter="fare > 10"
    ).to_pylist()
    theirs = spark.sql(
        "SELECT payment_type, count(*) AS n FROM icecore.demo.trips WHERE fare > 10 GROUP BY 1"
    ).collect()
    assert {(r["payment_type"], r["n"]) for r in ours} == {(r.payment_type, r.n) for r in theirs}

    ours = run_sql(t, "SELECT content, count(*) AS n FROM files GROUP BY 1", at=At(ref="month_end"))
    month_end = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'"
    ).collect()[0][0]
    theirs = spark.sql(
        f"SELECT content, count(*) AS n FROM icecore.demo.trips.files VERSION AS OF {month_end} "
        "GROUP BY 1"
    ).collect()
    assert {(r["content"], r["n"]) for r in ours.to_pylist()} == {(r.content, r.n) for r in theirs}


@pytest.mark.spark
@pytest.mark.parametrize(
    ("kind", "spark_sql"),
    [
        ("files", "SELECT count(*) FROM {t}.files"),
        ("entries", "SELECT count(*) FROM {t}.entries"),
        ("all_entries", "SELECT count(*) FROM {t}.all_entries"),
        ("delete_files", "SELECT count(*) FROM {t}.delete_files"),
        ("all_manifests", "SELECT count(*) FROM {t}.all_manifests"),
    ],
)
def test_file_level_tables_are_bounded_before_they_are_built(
    spark: Any, demo_warehouse: Path, kind: str, spark_sql: str
) -> None:
    """A file-level table is made in this process, before the query's time limit starts.

    At a million files ``files`` costs minutes and gigabytes, so its entries are counted
    from the manifest lists first (Spark's count of the same table is the oracle) and a
    table above ``max_entries`` is refused in one sentence, nothing built.
    """
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    n = spark.sql(spark_sql.format(t="icecore.demo.trips")).collect()[0][0]
    assert n > 0
    fits = run_sql(t, f"SELECT count(*) AS n FROM {kind}", limits=SqlLimits(max_entries=n))
    assert fits.to_pylist() == [{"n": n}]
    with pytest.raises(ValidationError, match=rf"^The {kind} table would be built from {n:,} "):
        run_sql(t, f"SELECT count(*) AS n FROM {kind}", limits=SqlLimits(max_entries=n - 1))


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["all_manifests", "all_entries", "all_data_files"])
def test_whole_history_tables_are_bounded_by_the_snapshots_they_read(
    spark: Any, demo_warehouse: Path, kind: str
) -> None:
    """Counting a whole-history table reads every snapshot's manifest list.

    So the number of snapshots is bounded first (Spark's count of snapshots is the oracle).
    """
    t = icecore.load_table(f"{demo_warehouse}::demo.trips")
    n = spark.sql("SELECT count(*) FROM icecore.demo.trips.snapshots").collect()[0][0]
    assert n > 1
    fits = run_sql(t, f"SELECT count(*) AS n FROM {kind}", limits=SqlLimits(max_snapshots=n))
    assert fits.to_pylist()[0]["n"] > 0
    refusal = rf"^The {kind} table would read the manifest lists of {n:,} snapshots"
    with pytest.raises(ValidationError, match=refusal):
        run_sql(t, f"SELECT count(*) AS n FROM {kind}", limits=SqlLimits(max_snapshots=n - 1))
    # The one-snapshot tables are not bounded by the history's length.
    one = run_sql(t, "SELECT count(*) AS n FROM files", limits=SqlLimits(max_snapshots=0))
    assert one.to_pylist()[0]["n"] > 0


def test_only_safe_selects() -> None:
    tables = {"files": pa.table({"a": [1, 2, 3]})}
    assert query_arrow("SELECT sum(a) AS s FROM files", tables).to_pylist() == [{"s": 6}]
    for sql, error, message in [
        ("DROP TABLE files", ValidationError, "Only SELECT"),
        ("SELECT 1; SELECT 2", ValidationError, "exactly one"),
        ("SELEC 1", ValidationError, "does not parse"),
        ("SELECT * FROM nope", ValidationError, "Tables you can query: files"),
        ("SELECT * FROM read_csv('/etc/passwd')", IcecoreError, "disabled"),
        ("SELECT * FROM read_parquet('http://127.0.0.1:1/x.parquet')", IcecoreError, "failed"),
        ("SELECT current_setting('memory_limit')", None, ""),
    ]:
        if error is None:
            query_arrow(sql, tables)
            continue
        with pytest.raises(error, match=message):
            query_arrow(sql, tables)


def test_limits_are_applied() -> None:
    tables = {"files": pa.table({"a": list(range(1000))})}
    assert query_arrow("SELECT * FROM files", tables, SqlLimits(max_rows=10)).num_rows == 10
    setting = query_arrow(
        "SELECT current_setting('threads') AS t", tables, SqlLimits(threads=1)
    ).to_pylist()
    assert setting == [{"t": 1}]


def test_only_named_tables_are_built() -> None:
    built: list[str] = []

    def expensive() -> pa.Table:
        built.append("entries")
        return pa.table({"x": [1]})

    tables = {"files": pa.table({"a": [1]}), "entries": expensive}
    query_arrow("SELECT * FROM files", tables)
    assert built == []
    query_arrow("SELECT * FROM entries", tables)
    assert built == ["entries"]


# Issue 15, finding 6: a time limit, a memory limit that holds, no way to read files back. ---

ENDLESS = "SELECT sum(hash(i)) AS s FROM range(20000000000) t(i)"
"""Twenty billion rows: minutes of work, so only the time limit can end it in seconds."""


def test_a_long_query_is_stopped_after_the_time_limit() -> None:
    started = time.monotonic()
    with pytest.raises(IcecoreError) as info:
        query_arrow(ENDLESS, {}, SqlLimits(timeout_s=1))
    elapsed = time.monotonic() - started
    assert str(info.value).startswith("The query ran longer than 1 s and was stopped")
    assert elapsed < 1 + 15  # generous: the child is killed at the limit + 5 s at the latest


def test_the_time_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICECORE_SQL_TIMEOUT_S", "1.5")
    started = time.monotonic()
    with pytest.raises(IcecoreError, match=r"^The query ran longer than 1.5 s and was stopped"):
        query_arrow(ENDLESS, {"files": pa.table({"a": [1]})})
    assert time.monotonic() - started < 1.5 + 15
    monkeypatch.setenv("ICECORE_SQL_TIMEOUT_S", "soon")
    with pytest.raises(ValidationError, match="ICECORE_SQL_TIMEOUT_S='soon'"):
        query_arrow("SELECT 1", {})


def test_result_rows_and_bytes_are_bounded() -> None:
    tables = {"files": pa.table({"a": list(range(10_000))})}
    assert query_arrow("SELECT * FROM files", tables, SqlLimits(max_rows=2500)).num_rows == 2500
    with pytest.raises(IcecoreError, match="The result is larger than 1 MiB"):
        query_arrow("SELECT repeat('x', 2000000) AS s", {}, SqlLimits(max_bytes=2**20))


MEMORY_PROBE = """
import json, resource, sys
from icecore.errors import IcecoreError
from icecore.sql import query_arrow
from icecore.point_in_time import At
try:
    query_arrow("SELECT repeat('x', 1500000000) AS s", {})
    outcome = "answered"
except IcecoreError as e:
    outcome = str(e)
print(json.dumps({
    "outcome": outcome,
    # VmHWM, not ru_maxrss: ru_maxrss survives exec, so it would report the peak of the
    # process that started this one (pytest, over 1 GiB late in a run).
    "self_mb": next(
        int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")
    ) / 1024,
    "children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
}))
"""


def test_a_huge_value_is_refused_within_the_memory_limit() -> None:
    """The issue measured 4.6 GB of RSS for a 1.5 GB repeat() with memory_limit=1GB."""
    result = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    probe = json.loads(result.stdout)
    assert probe["outcome"].startswith("The query needed more memory than the 2048 MiB")
    # Peak resident memory of the caller and of any process it started (the query's).
    assert probe["self_mb"] < 1024, probe
    assert probe["children_mb"] < 2048 + 256, probe


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM glob('*')",
        "SELECT * FROM glob('.tmp/*')",
        "SELECT * FROM read_text('.tmp/*')",
        "SELECT * FROM read_blob('*')",
        "SELECT * FROM read_csv('*')",
        f"SELECT * FROM glob('{tempfile.gettempdir()}/*')",
        f"SELECT * FROM read_text('{REPO / 'pyproject.toml'}')",
        f"SELECT * FROM glob('{Path.cwd()}/*')",
    ],
)
def test_no_file_can_be_read_back(sql: str) -> None:
    with pytest.raises(IcecoreError, match="file system operations are disabled"):
        query_arrow(sql, {})


def test_no_folder_is_open_to_queries() -> None:
    """DuckDB opens its temp folder (``.tmp`` in the working folder) to queries unless off."""
    settings = query_arrow(
        "SELECT current_setting('allowed_directories') AS d, "
        "current_setting('temp_directory') AS t",
        {},
    ).to_pylist()
    assert settings == [{"d": [], "t": ""}]


def _query_children() -> list[Path]:
    """This process's running query children (``/proc/<pid>``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii")
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == os.getpid() and b"sql_worker.py" in (entry / "cmdline").read_bytes():
                found.append(entry)
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_the_query_process_gets_no_secret_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secrets = {
        "ICECORE_SERVE_CREDENTIAL": "analyst:serve-secret-1",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-2",
        "PGPASSWORD": "pg-secret-3",
        "ICECORE_REST_CREDENTIAL": "analyst:rest-secret-4",
        "S3_KEY_FOR_VEND": "vend-secret-5",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    seen: list[bytes] = []
    done = threading.Event()

    def run() -> None:
        try:
            query_arrow(ENDLESS, {}, SqlLimits(timeout_s=20))
        except IcecoreError:
            pass
        finally:
            done.set()

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    deadline = time.monotonic() + 15
    while not seen and not done.is_set() and time.monotonic() < deadline:
        for child in _query_children():
            with contextlib.suppress(OSError):
                seen.append((child / "environ").read_bytes())
        if not seen:
            time.sleep(0.02)
    assert seen, "the query process was never seen running"
    for name, value in secrets.items():
        assert name.encode() not in seen[0]
        assert value.encode() not in seen[0]
    for child in _query_children():  # end the query now rather than at its time limit
        with contextlib.suppress(OSError):
            os.kill(int(child.name), signal.SIGKILL)
    runner.join(timeout=30)
