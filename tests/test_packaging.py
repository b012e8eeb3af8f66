"""Docker and `make run` install and start alike; the package declares what it imports.

The package's dependency ranges must admit the versions requirements.txt locks. Docker can't
run on the CI machines, so this reads the Dockerfile and the Makefile instead;
tests/test_wheel.py builds and installs the package itself.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

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
    # Shipped beside the app's main script (read by Streamlit there); the root's is a link.
    config = tomllib.loads((REPO / "ui/app/.streamlit/config.toml").read_text())
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


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project


def _requirements() -> list[Requirement]:
    project = _project()
    found = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        found += [Requirement(r) for r in extra if not r.startswith("icecore[")]
    return found


def _locked() -> dict[str, Requirement]:
    locked = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            requirement = Requirement(line)
            locked[_normal(requirement.name)] = requirement
    return locked


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_package_is_buildable_and_open_to_new_pythons() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["build-system"]["build-backend"] == "setuptools.build_meta"
    assert pyproject["project"]["requires-python"] == ">=3.11"
    assert pyproject["project"]["scripts"] == {"icecore": "icecore.cli:main"}
    assert (REPO / "icecore/py.typed").is_file()


def test_every_declared_range_admits_the_locked_version() -> None:
    locked = _locked()
    for requirement in _requirements():
        name = _normal(requirement.name)
        assert name in locked, f"{name} is declared but not locked in requirements.txt"
        (version,) = (spec.version for spec in locked[name].specifier)
        assert requirement.specifier.contains(version), f"{requirement} vs {locked[name]}"
        assert requirement.specifier, f"{requirement} has no range"
        # where the lock installs a package only on some Pythons, the package says the same
        assert requirement.marker == locked[name].marker, f"{requirement} vs {locked[name]}"


def _third_party_imports(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"icecore", "ui", "pipeline", "__future__"}


def test_every_import_of_the_package_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    core = {_normal(Requirement(r).name) for r in _project()["dependencies"]}
    declared = {_normal(r.name) for r in _requirements()}
    for folder in ("icecore", "ui", "pipeline"):
        for module in _third_party_imports(REPO / folder):
            names = {_normal(d) for d in distributions.get(module, [module])}
            assert names & declared, f"{folder} imports {module}, which no requirement brings"
    # What the core imports outside the server, PostgreSQL and S3 paths is a core dependency.
    for module in ("pyarrow", "numpy", "sqlglot", "mmh3", "pyroaring", "requests", "yaml"):
        names = {_normal(d) for d in distributions.get(module, [module])}
        assert names & core, module
