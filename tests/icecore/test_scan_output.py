"""``scan --output`` never writes into a table or over a file it was not told to replace.

Issue 15, finding 5: ``scan T --output <a live data file of T>`` overwrote the data file (and
``version-hint.text`` the same way), breaking the table. Every refusal here is checked to
leave every file of the table (and the unrelated file) byte-equal.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import icecore
from icecore.cli import main
from icecore.errors import ValidationError
from icecore.export import check_output, protected_paths, write_parquet
from tests.conftest import REPO
from tests.icecore.evolution.hand_table import write_table


def icecore_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icecore", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def contents(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (symlinks not followed) with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``icecore_cli`` without a new interpreter: the CLI's ``main`` with captured output."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["icecore", *args], code, out, err)


def refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Cannot write "), result.stderr
    for word in words:
        assert word in lines[0]


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    return write_table(tmp_path / "warehouse", 2)


def test_outputs_inside_the_table_are_refused_even_with_force(
    table_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = contents(tmp_path)
    link = tmp_path / "link.parquet"
    link.symlink_to(table_dir / "metadata" / "version-hint.text")
    folder_link = tmp_path / "folder"
    folder_link.symlink_to(table_dir / "metadata")
    targets = [
        table_dir / "new.parquet",
        table_dir / "data" / "new.parquet",
        table_dir / "metadata" / "version-hint.text",
        table_dir / "metadata" / "v1.metadata.json",
        tmp_path / "elsewhere" / ".." / "warehouse" / "db" / "t" / "x.parquet",
        link,
        folder_link / "x.parquet",
    ]
    # In-process (the CLI's main): 14 interpreters took 19 s; one process checks the exit.
    for target in targets:
        for force in ([], ["--force"]):
            result = in_process(capsys, "scan", str(table_dir), "--output", str(target), *force)
            refused(result, "inside the table location")
    result = icecore_cli("scan", str(table_dir), "--output", str(link), "--force")
    refused(result, "inside the table location")
    assert contents(tmp_path) == before
    assert link.is_symlink() and folder_link.is_symlink()
    assert not (table_dir / "data").exists()


def test_an_existing_file_is_replaced_only_with_force(table_dir: Path, tmp_path: Path) -> None:
    existing = tmp_path / "mine.parquet"
    existing.write_bytes(b"precious")
    refused(
        icecore_cli("scan", str(table_dir), "--output", str(existing)),
        "already exists",
        "--force",
    )
    assert existing.read_bytes() == b"precious"
    result = icecore_cli("scan", str(table_dir), "--output", str(existing), "--force")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rows"] == 0
    assert pq.read_table(existing).num_rows == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.parquet", "warehouse"]


def test_a_failed_write_leaves_no_partial_file_and_the_old_file_intact(
    table_dir: Path, tmp_path: Path
) -> None:
    plan = icecore.load_table(str(table_dir)).scan().plan()
    output = tmp_path / "out.parquet"
    output.write_bytes(b"old")

    def batches() -> Iterator[pa.RecordBatch]:
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
        yield pa.record_batch([pa.array([1], pa.int64())], schema=schema)
        raise RuntimeError("the scan failed half way")

    with pytest.raises(RuntimeError, match="half way"):
        write_parquet(batches(), plan, ["id"], output)
    assert output.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet", "warehouse"]


def test_check_output_refuses_a_catalog_database(tmp_path: Path) -> None:
    database = tmp_path / "catalog.db"
    database.write_bytes(b"db")
    with pytest.raises(ValidationError, match="catalog database"):
        check_output(database, [], [str(database)], force=True)
    with pytest.raises(ValidationError, match="a folder"):
        check_output(tmp_path, [], [], force=True)


@pytest.mark.spark
def test_live_data_files_of_a_spark_table_are_never_overwritten(
    demo_warehouse: Path, tmp_path: Path
) -> None:
    table_dir = tmp_path / "customers_v1"
    shutil.copytree(demo_warehouse / "hadoop" / "demo" / "customers_v1", table_dir)
    table = icecore.load_table(str(table_dir))
    plan: dict[str, Any] = json.loads(icecore_cli("plan", str(table_dir)).stdout)
    # The copy's metadata still names the fixture's files (absolute paths): the real live
    # file is only checked, never offered to a CLI run that could overwrite the fixture.
    live = Path(plan["data_files"][0].removeprefix("file:"))
    assert live.is_file() and table.metadata.location.removeprefix("file:") in str(live)
    dirs, files = protected_paths(table)
    for force in (False, True):
        with pytest.raises(ValidationError, match="inside the table location"):
            check_output(live, dirs, files, force=force)
    mirrored = table_dir / live.relative_to(table.metadata.location.removeprefix("file:"))
    assert mirrored.is_file()
    before = contents(tmp_path)
    for target in (mirrored, table_dir / "metadata" / "version-hint.text"):
        for force in ([], ["--force"]):
            result = icecore_cli("scan", str(table_dir), "--output", str(target), *force)
            refused(result, "inside the table location")
    assert contents(tmp_path) == before
    result = icecore_cli("scan", str(table_dir), "--output", str(tmp_path / "rows.parquet"))
    assert result.returncode == 0, result.stderr
    assert pq.read_table(tmp_path / "rows.parquet").num_rows == json.loads(result.stdout)["rows"]
