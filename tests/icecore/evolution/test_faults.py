"""Commits that fail part-way: the table stays readable at a consistent version, nothing lost.

Faults are real: a process that dies at a step (``ICECORE_FAILPOINTS=<step>=crash`` ends it
with ``os._exit``), an IO error raised at a step, a SQLite database held locked by another
connection, stray files in the metadata folder, a stale or missing version hint, a table
dropped and re-created under the writer's feet. Spark then reads the table.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from icecore.catalog import SqlCatalog
from icecore.errors import (
    CommitConflict,
    CommitStateUnknown,
    IcecoreError,
    InvalidMetadata,
    NotFound,
)
from icecore.failpoints import CRASH_EXIT_CODE, ENV
from icecore.table import Table
from tests.conftest import REPO

from .conftest import EvoCatalogs
from .hand_table import tree_state
from .spark_checks import assert_spark_sees_schema

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DDL = (
    "(id bigint, data string) USING iceberg TBLPROPERTIES ('format-version' = '2', "
    "'commit.retry.num-retries' = '2', 'commit.retry.min-wait-ms' = '10')"
)


def evolve_in_process_that_fails(
    table_arg: str, failpoints: str
) -> subprocess.CompletedProcess[str]:
    """``python -m icecore evolve`` adding column z, with the given steps failing."""
    env = {**os.environ, ENV: failpoints, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "icecore",
            "evolve",
            table_arg,
            "--schema-change",
            "add_column z string",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def metadata_files(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "metadata").iterdir() if ".metadata.json" in p.name)


def assert_spark_consistent(evo: EvoCatalogs, kind: str, name: str, rows: int) -> Table:
    """Spark reads the table with Icecore's current schema and the expected row count."""
    table = evo.load(kind, name)
    full = evo.spark_name(kind, name)
    assert_spark_sees_schema(evo.spark, full, table.metadata.current_schema())
    assert evo.spark.sql(f"SELECT count(*) AS n FROM {full}").collect()[0].n == rows
    return table


def folder(evo: EvoCatalogs, kind: str, name: str) -> Path:
    return evo.warehouse / ("hadoop" if kind == "fs" else "") / "db" / name


def test_crash_after_writing_before_the_swap_sql(evo: EvoCatalogs) -> None:
    before = evo.create("sql", "crash_sql", DDL, "(1, 'a')")
    files = metadata_files(folder(evo, "sql", "crash_sql"))
    result = evolve_in_process_that_fails(
        evo.table_arg("sql", "crash_sql"), "sql-after-write=crash"
    )
    assert result.returncode == CRASH_EXIT_CODE, result.stderr
    after = metadata_files(folder(evo, "sql", "crash_sql"))
    orphans = sorted(set(after) - set(files))
    assert len(orphans) == 1, "the file written before the crash stays, unreferenced"
    table = assert_spark_consistent(evo, "sql", "crash_sql", 1)
    assert table.metadata_location == before.metadata_location
    committed = table.update_schema().add_column("z", "string").commit()
    assert committed is not None and committed.metadata_location.rsplit("/", 1)[1] not in orphans
    assert_spark_consistent(evo, "sql", "crash_sql", 1)
    assert [f.name for f in committed.metadata.current_schema()] == ["id", "data", "z"]


@pytest.mark.parametrize(
    ("step", "lands"), [("io-link", False), ("fs-after-create", True)], ids=["before", "after"]
)
def test_crash_around_the_version_file_fs(evo: EvoCatalogs, step: str, lands: bool) -> None:
    name = f"crash_fs_{'after' if lands else 'before'}"
    evo.create("fs", name, DDL, "(1, 'a')")
    path = folder(evo, "fs", name)
    hint = (path / "metadata" / "version-hint.text").read_text()
    result = evolve_in_process_that_fails(evo.table_arg("fs", name), f"{step}=crash")
    assert result.returncode == CRASH_EXIT_CODE, result.stderr
    assert (path / "metadata" / "version-hint.text").read_text() == hint, "died before the hint"
    table = assert_spark_consistent(evo, "fs", name, 1)
    # Crashed after the version file: the commit is in, and the next load finds it.
    assert ("z" in [f.name for f in table.metadata.current_schema()]) == lands
    again = table.update_schema().add_column("w", "string").commit()
    assert again is not None
    assert (path / "metadata" / "version-hint.text").read_text() == again.metadata_location.split(
        "/v"
    )[-1].split(".")[0]
    assert_spark_consistent(evo, "fs", name, 1)


@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_a_failing_link_writes_nothing(
    evo: EvoCatalogs, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"nolink_{kind}"
    table = evo.create(kind, name, DDL, "(1, 'a')")
    before = tree_state(folder(evo, kind, name))
    monkeypatch.setenv(ENV, "io-link=ioerror")
    with pytest.raises(IcecoreError, match="nothing was written there") as caught:
        table.update_schema().add_column("z", "string").commit()
    assert not isinstance(caught.value, (CommitConflict, CommitStateUnknown))
    monkeypatch.delenv(ENV)
    assert tree_state(folder(evo, kind, name)) == before
    assert assert_spark_consistent(evo, kind, name, 1).metadata_location == table.metadata_location


def test_a_locked_catalog_database(evo: EvoCatalogs) -> None:
    evo.create("sql", "locked", DDL, "(1, 'a')")
    catalog = SqlCatalog(evo.warehouse / "catalog.db", catalog_name=evo.sql, lock_timeout=0.2)
    table = catalog.load_table("db.locked")
    before = tree_state(folder(evo, "sql", "locked"))
    holder = sqlite3.connect(
        evo.warehouse / "catalog.db", isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(CommitConflict, match="locked by another writer") as caught:
            table.update_schema().add_column("z", "string").commit()
        assert "retries ran out" in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
    assert tree_state(folder(evo, "sql", "locked")) == before, "files of failed swaps are removed"
    # Held for a moment only: a retry gets through.
    holder.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.3, lambda: holder.execute("ROLLBACK")).start()
    committed = table.update_schema().add_column("z", "string").commit()
    holder.close()
    assert committed is not None
    assert_spark_consistent(evo, "sql", "locked", 1)


@pytest.mark.parametrize(("kind", "step"), [("sql", "sql-after-commit"), ("fs", "fs-verify")])
def test_an_unknown_outcome_is_resolved_by_loading_again(
    evo: EvoCatalogs, kind: str, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"unknown_{kind}"
    table = evo.create(kind, name, DDL, "(1, 'a')")
    monkeypatch.setenv(ENV, f"{step}=ioerror")
    committed = table.update_schema().add_column("z", "string").commit()
    monkeypatch.delenv(ENV)
    assert committed is not None
    assert committed.metadata_location == evo.load(kind, name).metadata_location
    assert [f.name for f in assert_spark_consistent(evo, kind, name, 1).metadata.current_schema()][
        -1
    ] == "z"


def test_an_unknown_outcome_that_cannot_be_resolved_keeps_the_file(
    evo: EvoCatalogs, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = evo.create("sql", "unresolved", DDL, "(1, 'a')")
    monkeypatch.setenv(ENV, "sql-after-commit=ioerror,resolve-load=ioerror")
    with pytest.raises(CommitStateUnknown, match="is kept") as caught:
        table.update_schema().add_column("z", "string").commit()
    monkeypatch.delenv(ENV)
    location = caught.value.metadata_location
    assert location is not None and Path(location).exists()
    # The next load settles it: the swap had happened.
    assert evo.load("sql", "unresolved").metadata_location == location
    assert_spark_consistent(evo, "sql", "unresolved", 1)


def test_an_unknown_outcome_that_did_not_land_is_retried_and_files_kept(
    evo: EvoCatalogs, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = evo.create("sql", "not_landed", DDL, "(1, 'a')")
    files = metadata_files(folder(evo, "sql", "not_landed"))
    monkeypatch.setenv(ENV, "sql-before-commit=ioerror")
    with pytest.raises(CommitConflict, match="retries ran out"):
        table.update_schema().add_column("z", "string").commit()
    monkeypatch.delenv(ENV)
    kept = set(metadata_files(folder(evo, "sql", "not_landed"))) - set(files)
    assert len(kept) == 3, "one file per attempt (1 + 2 retries), none deleted"
    assert assert_spark_consistent(evo, "sql", "not_landed", 1).metadata_location == (
        table.metadata_location
    )


def test_stray_later_version_blocks_the_commit(evo: EvoCatalogs) -> None:
    table = evo.create("fs", "stray", DDL, "(1, 'a')")
    path = folder(evo, "fs", "stray") / "metadata"
    current = int(table.metadata_location.split("/v")[-1].split(".")[0])
    (path / f"v{current + 2}.metadata.json").write_text(Path(table.metadata_location).read_text())
    before = tree_state(path)
    with pytest.raises(InvalidMetadata, match=f"holds a version {current + 2} file"):
        table.update_schema().add_column("z", "string").commit()
    assert tree_state(path) == before
    assert (
        assert_spark_consistent(evo, "fs", "stray", 1).metadata_location == table.metadata_location
    )


@pytest.mark.parametrize("hint", ["stale", "missing"])
def test_stale_or_missing_version_hint(evo: EvoCatalogs, hint: str) -> None:
    name = f"hint_{hint}"
    evo.create("fs", name, DDL, "(1, 'a')")
    evo.spark.sql(f"INSERT INTO {evo.spark_name('fs', name)} VALUES (2, 'b')")
    path = folder(evo, "fs", name) / "metadata"
    latest = int((path / "version-hint.text").read_text())
    if hint == "stale":
        (path / "version-hint.text").write_text(str(latest - 1))
    else:
        (path / "version-hint.text").unlink()
    (path / ".version-hint.text.crc").unlink(missing_ok=True)
    table = evo.load("fs", name)
    assert table.metadata_location.endswith(f"/v{latest}.metadata.json")
    committed = table.update_schema().add_column("z", "string").commit()
    assert committed is not None
    assert committed.metadata_location.endswith(f"/v{latest + 1}.metadata.json")
    assert (path / "version-hint.text").read_text() == str(latest + 1)
    assert_spark_consistent(evo, "fs", name, 2)


def test_table_dropped_and_recreated_meanwhile(evo: EvoCatalogs) -> None:
    stale = evo.create("sql", "recreated", DDL, "(1, 'a')")
    full = evo.spark_name("sql", "recreated")
    evo.spark.sql(f"DROP TABLE {full} PURGE")
    with pytest.raises(NotFound, match="does not exist"):
        stale.update_schema().add_column("z", "string").commit()
    evo.spark.sql(f"CREATE TABLE {full} {DDL}")
    before = tree_state(folder(evo, "sql", "recreated"))
    with pytest.raises(CommitConflict, match="dropped and re-created"):
        stale.update_schema().add_column("z", "string").commit()
    assert tree_state(folder(evo, "sql", "recreated")) == before
    assert_spark_consistent(evo, "sql", "recreated", 0)


@pytest.mark.parametrize("kind", ["sql", "fs"])
def test_corrupt_or_missing_current_metadata(evo: EvoCatalogs, kind: str) -> None:
    name = f"corrupt_{kind}"
    table = evo.create(kind, name, DDL, "(1, 'a')")
    current = Path(table.metadata_location.removeprefix("file:"))
    text = current.read_text()
    current.write_text(text[: len(text) // 2])
    before = tree_state(folder(evo, kind, name))
    with pytest.raises(InvalidMetadata, match="not valid JSON"):
        table.update_schema().add_column("z", "string").commit()
    assert tree_state(folder(evo, kind, name)) == before
    current.unlink()
    missing = NotFound if kind == "sql" else InvalidMetadata
    with pytest.raises(missing, match="does not exist"):
        table.update_schema().add_column("z", "string").commit()
    assert tree_state(folder(evo, kind, name)) == {
        k: v for k, v in before.items() if not k.endswith(current.name)
    }
    current.write_text(text)
    assert_spark_consistent(evo, kind, name, 1)
