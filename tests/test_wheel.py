"""The wheel as a new user meets it: built, installed in a fresh venv, run as ``icecore``.

The build is ``pip wheel`` on a clean copy of the sources (a reused ``build/`` folder could
slip a deleted module in). Its contents are checked against the source tree; then it is
installed with its core dependencies only (``-c requirements.txt`` keeps the locked versions,
so pip's cache serves them) and must run ``icecore --version`` and ``icecore history`` on a
Spark-written table, and import without Streamlit, plotly or PySpark present; then the same
venv gets the ``app`` and ``server`` extras and serves ``icecore app`` (HTTP 200 on a page,
and the pages themselves run from the installed package) and ``icecore serve-rest``.

The Python of the venv is a parameter: ``ICECORE_WHEEL_PYTHONS`` lists interpreters separated
by ``:`` (default: the one running the tests), e.g. pyenv's 3.12 and 3.13.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path
from typing import Any

import pytest

from tests.decode_probe import run_probe

REPO = Path(__file__).resolve().parent.parent
SHIPPED = ("icecore", "ui", "pipeline")
NOT_SHIPPED = ("tests", "bench", "scripts")
PYTHONS = (os.environ.get("ICECORE_WHEEL_PYTHONS") or sys.executable).split(os.pathsep)
INSTALL_TIMEOUT = 900
START_TIMEOUT = 120.0


def _run(
    *args: str | Path, timeout: float = 300, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kwargs,
    )
    assert result.returncode == 0, f"{args}: {result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel`` of a clean copy of what the build reads (and of what it must leave out)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in SHIPPED + NOT_SHIPPED:
        shutil.copytree(REPO / folder, source / folder, symlinks=True, ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, source)
    (built,) = out.glob("icecore-*.whl")
    return built


def _version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _source_files() -> set[str]:
    found: set[str] = set()
    for package in SHIPPED:
        for path in (REPO / package).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                found.add(path.relative_to(REPO).as_posix())
    return found


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zipped:
        names = set(zipped.namelist())
        info = f"icecore-{_version(wheel)}.dist-info"
        metadata = Parser().parsestr(zipped.read(f"{info}/METADATA").decode())
        entry_points = zipped.read(f"{info}/entry_points.txt").decode()
    shipped = {n for n in names if not n.startswith(f"{info}/")}
    assert shipped == _source_files()  # every module, the pages, py.typed and the config
    assert {"icecore/py.typed", "ui/app/Tables.py", "ui/app/.streamlit/config.toml"} <= shipped
    assert len([n for n in shipped if n.startswith("icecore/") and n.endswith(".py")]) > 100
    assert not {n for n in shipped if n.split("/")[0] in NOT_SHIPPED}
    assert metadata["Requires-Python"] == ">=3.11"
    assert "icecore = icecore.cli:main" in entry_points
    core = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert not [r for r in core if r.split("[")[0].split("<")[0].split(">")[0] in HEAVY]


HEAVY = {"streamlit", "plotly", "pyspark", "pandas", "starlette", "uvicorn", "psycopg", "s3fs"}
"""What ``pip install icecore`` must not bring: the app, Spark, server and driver stacks."""


@dataclass(frozen=True)
class Venv:
    """A fresh virtual environment with the wheel installed."""

    root: Path
    wheel: Path

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def pip_install(self, requirement: str) -> None:
        _run(
            self.bin("python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-compile",  # no .pyc for every installed file: 255 s for this file, not 314
            requirement,
            "-c",
            REPO / "requirements.txt",
            timeout=INSTALL_TIMEOUT,
        )


@pytest.fixture(scope="module", params=PYTHONS)
def venv(
    request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Venv:
    """The wheel with its core dependencies only, in a venv of the parameter's Python."""
    root = tmp_path_factory.mktemp("venv")
    _run(request.param, "-m", "venv", root, timeout=INSTALL_TIMEOUT)
    made = Venv(root, wheel)
    made.pip_install(str(wheel))
    return made


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, process: subprocess.Popen[str]) -> int:
    """Poll ``url`` until it answers; the status, or a failure if the server died first."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except OSError:
            time.sleep(0.2)  # not up yet: poll again
    raise AssertionError(f"{url} did not answer within {START_TIMEOUT} s")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start a command in its own process group; the whole group is ended afterwards."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [str(a) for a in args],
            cwd=tmp_path,  # no pages/ nor app.py here: the package's own are served
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


@pytest.mark.slow
@pytest.mark.spark
def test_core_install_runs_the_cli_without_the_app_stack(
    venv: Venv, spark: Any, demo_warehouse: Path, tmp_path: Path
) -> None:
    version = _run(venv.bin("icecore"), "--version", cwd=tmp_path).stdout
    assert version == f"icecore {_version(venv.wheel)}\n"
    probe = (
        "import importlib.util, json, sys, icecore; "
        "print(json.dumps([icecore.__version__, icecore.__file__, "
        f"[m for m in {sorted(HEAVY)!r} if importlib.util.find_spec(m)]]))"
    )
    found, location, heavy = json.loads(_run(venv.bin("python"), "-c", probe, cwd=tmp_path).stdout)
    assert found == _version(venv.wheel)
    assert Path(location).is_relative_to(venv.root)  # the installed copy, not the checkout
    assert heavy == []

    shown = _run(venv.bin("icecore"), "history", f"{demo_warehouse}::demo.trips", cwd=tmp_path)
    rows = json.loads(shown.stdout)
    expected = {
        r.snapshot_id: (r.parent_id, r.operation)
        for r in spark.sql("SELECT * FROM icecore.demo.trips.snapshots").collect()
    }
    assert {r["snapshot_id"]: (r["parent_id"], r["operation"]) for r in rows} == expected

    # The installed package's decode workers start and decode (issue 32: they imported
    # icecore from the caller's path, which an installed package need not be on).
    probe = run_probe(
        venv.bin("python"), f"{demo_warehouse}::demo.trips", tmp_path / "cache", tmp_path
    )
    assert Path(probe["icecore"]).is_relative_to(venv.root)
    assert probe["decoded_here"] == 0 and probe["adopted"] >= probe["manifests"] > 0, probe
    assert probe["warnings"] == []

    for command, extra in (("app", "app"), ("serve-rest", "server")):
        refused = subprocess.run(
            [str(venv.bin("icecore")), command, str(demo_warehouse)]
            if command == "serve-rest"
            else [str(venv.bin("icecore")), command, "--catalog", str(demo_warehouse)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
        )
        assert refused.returncode == 1
        assert refused.stderr.endswith(f'pip install "icecore[{extra}]".\n')


@pytest.mark.slow
@pytest.mark.spark
def test_the_app_extra_serves_the_explorer_from_the_package(
    venv: Venv,
    demo_warehouse: Path,
    tmp_path: Path,
    serve: Callable[..., subprocess.Popen[str]],
) -> None:
    venv.pip_install(f"{venv.wheel}[app,server]")
    env = {k: v for k, v in os.environ.items() if k != "ICECORE_CATALOG"}

    port = _free_port()
    app = serve(venv.bin("icecore"), "app", "--catalog", demo_warehouse, "--port", port, env=env)
    base = f"http://127.0.0.1:{port}"
    assert _wait_for(f"{base}/_stcore/health", app) == 200
    assert _wait_for(f"{base}/Overview", app) == 200

    # The pages run from the installed package: the landing page links every page and the
    # History page opens on the Spark-written table.
    check = (
        "import json; from streamlit.testing.v1 import AppTest; from ui import app\n"
        "at = AppTest.from_file(str(app.MAIN_SCRIPT), default_timeout=120)\n"
        "at.query_params['table'] = 'demo.trips'; at.run()\n"
        "links = len(at.get('page_link')); at.switch_page(app.HISTORY.file).run()\n"
        "print(json.dumps([str(app.MAIN_SCRIPT), links, len(app.PAGES),"
        " [e.value for e in (*at.exception, *at.error)], len(at.get('plotly_chart'))]))"
    )
    shown = _run(
        venv.bin("python"),
        "-c",
        check,
        cwd=tmp_path,
        env={**env, "ICECORE_CATALOG": str(demo_warehouse)},
    ).stdout.splitlines()[-1]
    main, links, pages, problems, charts = json.loads(shown)
    assert Path(main).is_relative_to(venv.root)
    assert links == pages and problems == [] and charts > 0

    rest_port = _free_port()
    rest = serve(
        venv.bin("icecore"),
        "serve-rest",
        f"sqlite:///{demo_warehouse}/catalog.db",
        "--read-only",
        "--port",
        rest_port,
        env=env,
    )
    assert _wait_for(f"http://127.0.0.1:{rest_port}/v1/config", rest) == 200
