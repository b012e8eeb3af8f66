"""The demo command's failure modes: one clear sentence, exit 1, nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.demo import BUILDING_MARKER, DONE_MARKER, _all_or_nothing

REPO = Path(__file__).resolve().parents[2]


def run_demo(
    args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.demo", *args],
        cwd=REPO,
        env=env if env is not None else dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    assert "Traceback" not in stderr
    return lines[0]


def test_without_java(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(bin_dir)
    target = tmp_path / "wh"
    result = run_demo(["--warehouse", str(target)], env=env)
    assert result.returncode == 1
    assert "Java" in one_sentence(result.stderr)
    assert "apt-get install" in result.stderr
    assert not target.exists()


def test_with_java_home_pointing_nowhere(tmp_path: Path) -> None:
    env = dict(os.environ, JAVA_HOME=str(tmp_path / "no-jdk"))
    result = run_demo(["--warehouse", str(tmp_path / "wh")], env=env)
    assert result.returncode == 1
    assert "JAVA_HOME" in one_sentence(result.stderr)
    assert not (tmp_path / "wh").exists()


def test_without_the_iceberg_jar(tmp_path: Path) -> None:
    env = dict(os.environ, ICECORE_ICEBERG_JAR=str(tmp_path / "missing.jar"))
    result = run_demo(["--warehouse", str(tmp_path / "wh")], env=env)
    assert result.returncode == 1
    assert "ICECORE_ICEBERG_JAR" in one_sentence(result.stderr)
    assert not (tmp_path / "wh").exists()


def test_unwritable_warehouse(tmp_path: Path, iceberg_jar: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_demo(["--warehouse", str(blocker / "wh")])
    assert result.returncode == 1
    assert "is a file, not a folder" in one_sentence(result.stderr)
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc, which nobody may write")
def test_warehouse_on_a_read_only_file_system(iceberg_jar: str) -> None:
    result = run_demo(["--warehouse", "/proc/icecore-warehouse"])
    assert result.returncode == 1
    assert "Cannot write the warehouse" in one_sentence(result.stderr)


def test_refuses_a_folder_that_is_not_a_demo_warehouse(tmp_path: Path, iceberg_jar: str) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "precious.txt").write_text("keep me")
    result = run_demo(["--warehouse", str(target), "--force"])
    assert result.returncode == 1
    assert "not an Icecore demo warehouse" in one_sentence(result.stderr)
    assert (target / "precious.txt").read_text() == "keep me"


def test_failed_build_removes_what_it_wrote(tmp_path: Path) -> None:
    target = tmp_path / "wh"
    with pytest.raises(RuntimeError), _all_or_nothing(target, force=False):
        (target / "catalog.db").write_text("half")
        raise RuntimeError("Spark died")
    assert not target.exists()


def test_failed_forced_rebuild_restores_the_previous_warehouse(tmp_path: Path) -> None:
    target = tmp_path / "wh"
    target.mkdir()
    (target / DONE_MARKER).write_text("{}")
    (target / "catalog.db").write_text("previous")
    with pytest.raises(RuntimeError), _all_or_nothing(target, force=True):
        assert not (target / "catalog.db").exists()
        (target / "catalog.db").write_text("half")
        raise RuntimeError("Spark died")
    assert (target / "catalog.db").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wh"]


def test_crashed_build_is_started_over(tmp_path: Path) -> None:
    target = tmp_path / "wh"
    target.mkdir()
    (target / BUILDING_MARKER).write_text("building")
    (target / "stale.parquet").write_text("x")
    with _all_or_nothing(target, force=False):
        assert not (target / "stale.parquet").exists()
    assert target.is_dir() and not (target / BUILDING_MARKER).exists()
