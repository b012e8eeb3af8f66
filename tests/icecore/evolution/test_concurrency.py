"""Several OS processes commit at once through each catalog while Spark appends.

Every worker loads the table before a common start signal, so all first changes come from
the same base: property, partition spec and sort order changes (and Spark's appends) are
compatible with each other and with one schema change and must all land; two schema changes
from one base conflict, and exactly one must fail with CommitConflict saying what changed.
Nothing may be lost (each committed file is current or in the metadata log, byte for byte
as its writer left it) and no schema or field id may be reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from icecore.metadata import TableMetadata
from icecore.table import Table
from tests.conftest import REPO

from .conftest import EvoCatalogs
from .spark_checks import assert_icecore_reads_like_spark, assert_spark_sees_schema

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOBS: dict[str, list[dict[str, Any]]] = {
    "props_a": [{"kind": "property", "key": f"a{i}", "value": str(i)} for i in range(4)],
    "props_b": [{"kind": "property", "key": f"b{i}", "value": str(i)} for i in range(4)],
    "schema_x": [
        {"kind": "add_column", "name": "x", "type": "string"},
        {"kind": "property", "key": "after_x", "value": "1"},
    ],
    "schema_y": [
        {"kind": "add_column", "name": "y", "type": "long"},
        {"kind": "property", "key": "after_y", "value": "1"},
    ],
    "spec": [{"kind": "add_field", "source": "cat", "transform": "identity"}],
    "sort": [{"kind": "sort", "source": "id"}],
}


def start_workers(
    evo: EvoCatalogs,
    kind: str,
    name: str,
    tmp: Path,
    jobs: dict[str, list[dict[str, Any]]] = JOBS,
) -> list[tuple[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = []
    for job_name, changes in jobs.items():
        job = {
            "table": evo.table_arg(kind, name),
            "ready": str(tmp / f"{job_name}.ready"),
            "go": str(tmp / "go"),
            "out": str(tmp / f"{job_name}.json"),
            "changes": changes,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.icecore.evolution.worker", json.dumps(job)],
            cwd=REPO,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append((job_name, proc))
    return procs


def wait_until_loaded(tmp: Path, procs: list[tuple[str, Any]], seconds: float = 120.0) -> None:
    """Wait until every worker has loaded its base (or one died)."""
    deadline = time.monotonic() + seconds
    while not all((tmp / f"{job}.ready").exists() for job, _ in procs):
        dead = [name for name, proc in procs if proc.poll() is not None]
        assert not dead, f"workers {dead} ended before loading the table"
        assert time.monotonic() < deadline, "workers did not load the table in time"
        time.sleep(0.05)


def append(evo: EvoCatalogs, full: str, rows: list[tuple[int, str, str]]) -> None:
    """A Spark append by column name: columns added meanwhile are written as null."""
    frame = evo.spark.createDataFrame(rows, "id bigint, data string, cat string")
    frame.writeTo(full).option("merge-schema", "true").append()


def check_ids(md: TableMetadata) -> None:
    """No schema id twice; a field id always names the same column in every schema."""
    ids = [s.schema_id for s in md.schemas]
    assert len(ids) == len(set(ids))
    seen: dict[int, tuple[str, str]] = {}
    for schema in md.schemas:
        for fid in schema.field_ids:
            f = schema.find_field(fid)
            assert f is not None
            identity = (schema.find_column_name(fid) or "", type(f.field_type).__name__)
            assert seen.setdefault(fid, identity) == identity, f"field id {fid} reused"
            assert fid <= md.last_column_id


def committed_everywhere(table: Table, results: dict[str, list[dict[str, Any]]]) -> None:
    """Each reported commit is current or in the metadata log, and its file is unchanged."""
    log = {e.metadata_file for e in table.metadata.metadata_log} | {table.metadata_location}
    for entries in results.values():
        for entry in entries:
            if "location" not in entry:
                continue
            assert entry["location"] in log, f"lost update: {entry}"
            data = table.io.read(entry["location"])
            assert hashlib.sha256(data).hexdigest() == entry["sha256"], "file overwritten"


@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_concurrent_writers_and_spark_appends(evo: EvoCatalogs, kind: str, tmp_path: Path) -> None:
    name = f"busy_{kind}"
    full = evo.spark_name(kind, name)
    evo.create(
        kind,
        name,
        "(id bigint, data string, cat string) USING iceberg "
        "TBLPROPERTIES ('format-version' = '2', 'commit.retry.num-retries' = '20', "
        "'write.spark.accept-any-schema' = 'true', "
        "'commit.retry.min-wait-ms' = '20', 'commit.retry.max-wait-ms' = '500')",
    )
    append(evo, full, [(1, "a", "p"), (2, "b", "q")])
    procs = start_workers(evo, kind, name, tmp_path)
    wait_until_loaded(tmp_path, procs)
    (tmp_path / "go").write_text("go")
    for i in range(3):
        append(evo, full, [(10 + i, "s", "r")])
    results = run_to_the_end(procs, tmp_path)

    for job in ("props_a", "props_b", "spec", "sort"):
        assert all("location" in r for r in results[job]), results[job]
    first_x, first_y = results["schema_x"][0], results["schema_y"][0]
    outcomes = sorted("location" in r for r in (first_x, first_y))
    assert outcomes == [False, True], (first_x, first_y)
    loser = first_x if "error" in first_x else first_y
    assert loser["error"] == "CommitConflict"
    assert "current schema changed" in loser["message"] and "added" in loser["message"]
    winner_column = "x" if loser is first_y else "y"

    table = evo.load(kind, name)
    md = table.metadata
    check_ids(md)
    committed_everywhere(table, results)
    schema = md.current_schema()
    assert [f.name for f in schema.fields] == ["id", "data", "cat", winner_column]
    expected = {f"a{i}": str(i) for i in range(4)} | {f"b{i}": str(i) for i in range(4)}
    expected |= {"after_x": "1", "after_y": "1"}
    assert expected.items() <= dict(md.properties).items()
    assert [f.name for f in md.default_spec().fields] == ["cat"]
    assert [md.current_schema().find_column_name(f.source_id) for f in md.default_sort_order()] == [
        "id"
    ]
    appends = [s for s in md.snapshots if s.operation == "append"]
    assert len(appends) == 4  # the table's first insert and Spark's three

    assert_spark_sees_schema(evo.spark, full, schema)
    count = evo.spark.sql(f"SELECT count(*) AS n FROM {full}").collect()[0].n
    assert count == 5
    append(evo, full, [(20, "z", "c")])
    files = evo.spark.sql(f"SELECT spec_id FROM {full}.files").collect()
    assert md.default_spec_id in {r.spec_id for r in files}
    assert_icecore_reads_like_spark(evo, kind, name, f"id, data, cat, {winner_column}")


def run_to_the_end(procs: list[tuple[str, Any]], tmp: Path) -> dict[str, list[dict[str, Any]]]:
    for job_name, proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"{job_name}: {err[-2000:]}"
    return {job: json.loads((tmp / f"{job}.json").read_text()) for job, _ in procs}


@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_many_writers_lose_nothing(evo: EvoCatalogs, kind: str, tmp_path: Path) -> None:
    """Six processes, eight property commits each, all at once: all 48 land, in order.

    This found a reader race: the version hint was read after the folder was listed, so a
    version committed in between looked like a hint naming a missing file.
    """
    name = f"stress_{kind}"
    evo.create(
        kind,
        name,
        "(id bigint) USING iceberg TBLPROPERTIES ('format-version' = '2', "
        "'commit.retry.num-retries' = '60', 'commit.retry.min-wait-ms' = '5', "
        "'commit.retry.max-wait-ms' = '200', 'write.metadata.previous-versions-max' = '1000')",
    )
    jobs = {
        f"w{w}": [{"kind": "property", "key": f"w{w}.k{k}", "value": str(k)} for k in range(8)]
        for w in range(6)
    }
    procs = start_workers(evo, kind, name, tmp_path, jobs)
    wait_until_loaded(tmp_path, procs)
    (tmp_path / "go").write_text("go")
    results = run_to_the_end(procs, tmp_path)
    assert all("location" in r for entries in results.values() for r in entries), results
    table = evo.load(kind, name)
    committed_everywhere(table, results)
    props = table.metadata.properties
    assert {k: v for k, v in props.items() if k.startswith("w") and ".k" in k} == {
        f"w{w}.k{k}": str(k) for w in range(6) for k in range(8)
    }
    assert len(table.metadata.metadata_log) == 48  # each commit logs the file it replaced
