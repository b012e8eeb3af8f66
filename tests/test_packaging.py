"""The Docker image and `make run` must install the same things and start the same way.

Docker can't run on the CI machines, so this reads the Dockerfile and the Makefile instead.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def dockerfile() -> str:
    return (REPO / "Dockerfile").read_text()


def make_recipe(target: str) -> str:
    text = (REPO / "Makefile").read_text()
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert match, f"no {target} target"
    return match.group(1)


def test_same_requirements() -> None:
    docker_reqs = set(re.findall(r"pip install[^\n]*-r (\S+)", dockerfile()))
    make_reqs = set(re.findall(r"pip install[^\n]*-r (\S+)", make_recipe("$(VENV)/.runtime")))
    assert docker_reqs == make_reqs == {"requirements.txt"}


def test_same_entry_point() -> None:
    cmd = re.search(r'^CMD \["([^"]+)"\]', dockerfile(), re.MULTILINE)
    assert cmd and cmd.group(1) == "scripts/serve.sh"
    assert "scripts/serve.sh" in make_recipe("run")
    serve = (REPO / "scripts/serve.sh").read_text()
    assert "python -m pipeline.demo --warehouse warehouse" in serve
    assert "streamlit run app.py" in serve
    assert re.search(r"ICECORE_ADDRESS=0\.0\.0\.0", dockerfile())
    assert "EXPOSE 8501" in dockerfile()


def test_image_has_the_system_prerequisites() -> None:
    text = dockerfile()
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    for package in (
        "openjdk-17-jre-headless",
        "libxerial-sqlite-jdbc-java",
        "libpostgresql-jdbc-java",
    ):
        assert package in text


def test_streamlit_config() -> None:
    config = tomllib.loads((REPO / ".streamlit/config.toml").read_text())
    assert config["server"]["headless"] is True
    assert config["server"]["enableXsrfProtection"] is True
    assert config["browser"]["gatherUsageStats"] is False
    assert "primaryColor" in config["theme"]


def test_runtime_requirements_are_pinned() -> None:
    for name in ("requirements.txt", "requirements-dev.txt"):
        for line in (REPO / name).read_text().splitlines():
            if line and not line.startswith(("#", "-r")):
                assert "==" in line, f"{name}: {line} is not pinned"
    runtime = (REPO / "requirements.txt").read_text()
    assert "snowpark-connect-deps-iceberg==1.0.2" in runtime
    assert re.search(r"^pyspark==3\.5\.\d+$", runtime, re.MULTILINE)


def test_prerequisite_check_names_what_to_install(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sed", "env"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    env = {"PATH": str(bin_dir), "ICECORE_SQLITE_JDBC_JAR": str(tmp_path / "none.jar")}
    result = subprocess.run(
        ["bash", str(REPO / "scripts/prereqs.sh"), "python", "java"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "Python 3.11" in result.stderr and "Java 17" in result.stderr
    assert "apt-get install openjdk-17-jre-headless" in result.stderr
    assert "apt-get install libxerial-sqlite-jdbc-java" in result.stderr


def test_prerequisite_check_passes_here() -> None:
    result = subprocess.run(
        ["bash", str(REPO / "scripts/prereqs.sh"), "python", "java"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
