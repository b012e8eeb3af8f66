"""Python 3.11, 3.12 and 3.13: what differs between them, and `make test-pythons`.

The Iceberg jar's package (snowpark-connect-deps-iceberg) refuses Python 3.13, so requirements.txt
installs it below 3.13 only and the pipeline says what to do instead; `make test-pythons` runs
the quick tests on each other Python the machine has and skips, with a note, one it lacks.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from pipeline.spark import JAR_PACKAGE_PYTHON_LIMIT, missing_jar_sentence

REPO = Path(__file__).resolve().parent.parent
JAR_DIST = "snowpark-connect-deps-iceberg"


def _pinned(name: str) -> Requirement:
    for line in (REPO / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#") and Requirement(line).name == name:
            return Requirement(line)
    raise AssertionError(f"{name} is not in requirements.txt")


def _dotted(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


def _python(version: tuple[int, int]) -> dict[str, str]:
    return {"python_version": _dotted(version), "python_full_version": f"{_dotted(version)}.0"}


def test_the_jar_package_is_required_exactly_where_it_installs() -> None:
    """The marker keeps 3.11 and 3.12 on the pin and lets 3.13 install the rest of the lock."""
    jar = _pinned(JAR_DIST)
    assert jar.marker is not None
    for version in ((3, 11), (3, 12)):
        assert jar.marker.evaluate(_python(version)), version
    assert not jar.marker.evaluate(_python(JAR_PACKAGE_PYTHON_LIMIT))
    pyspark = _pinned("pyspark")
    assert pyspark.marker is None  # pyspark itself installs (and starts) on all three


def test_the_limit_is_the_one_the_installed_package_declares() -> None:
    """Read the package's own Requires-Python where it is installed (Python 3.11 and 3.12)."""
    try:
        declared = importlib.metadata.metadata(JAR_DIST)["Requires-Python"]
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{JAR_DIST} is not installed on this Python (the marker's case)")
    allowed = SpecifierSet(declared)
    limit = _dotted(JAR_PACKAGE_PYTHON_LIMIT)
    assert not allowed.contains(limit)
    assert allowed.contains("3.12") and allowed.contains("3.11")


def test_a_missing_jar_on_3_13_says_to_name_one_not_to_install_the_requirements() -> None:
    """Installing requirements.txt would not bring the jar on 3.13: say what does."""
    on_313 = missing_jar_sentence((3, 13))
    assert "ICECORE_ICEBERG_JAR" in on_313 and "3.13" in on_313
    assert "pip install" not in on_313
    assert len(re.findall(r"[.!?](\s|$)", on_313)) == 1  # one sentence
    on_311 = missing_jar_sentence((3, 11))
    assert "pip install -r requirements.txt" in on_311


def test_a_python_the_machine_lacks_is_skipped_with_a_note(tmp_path: Path) -> None:
    env = dict(os.environ, PYENV_ROOT=str(tmp_path / "no-pyenv"))
    env.pop("ICECORE_ICEBERG_JAR", None)
    result = subprocess.run(
        ["bash", str(REPO / "scripts/test-pythons.sh"), "3.99"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Python 3.99: not found" in result.stdout and "skipped" in result.stdout
    assert not (REPO / ".venv399").exists()


def test_ci_runs_the_other_pythons_after_the_full_suite() -> None:
    steps = [
        line.strip()
        for line in (REPO / ".ci/run").read_text().splitlines()
        if line.strip().startswith("make ")
    ]
    assert steps == ["make test", "make test-pythons"]
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^test-pythons:.*\n\t.*scripts/test-pythons\.sh", makefile, re.MULTILINE)
