"""``icecore app`` and ``icecore --version``: what the command becomes, and what it refuses.

The command replaces the process with Streamlit, so these tests check the command it builds
(tests/test_wheel.py serves it for real from an installed wheel) and every refusal, each one
sentence naming what to do.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from icecore import launch
from icecore.cli import main
from icecore.launch import AppUnavailable, MissingExtra, app_command, main_script

REPO = Path(__file__).resolve().parents[2]


def _no_module(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == missing else real(name, package)

    monkeypatch.setattr(launch.importlib.util, "find_spec", find_spec)


def test_the_main_script_is_the_one_whose_pages_streamlit_finds() -> None:
    script = main_script()
    assert script.name == "Tables.py"
    pages = sorted(p.name for p in (script.parent / "pages").glob("*.py"))
    assert len(pages) >= 8 and "1_Overview.py" in pages
    # Streamlit reads the settings the app needs from beside the script (script-level config).
    config = tomllib.loads((script.parent / ".streamlit/config.toml").read_text())
    assert config["server"]["headless"] is True
    assert config["server"]["fileWatcherType"] == "none"


def test_a_named_catalog_is_served_on_the_given_address_and_port(tmp_path: Path) -> None:
    command = app_command("sqlite:///c.db", port=8765, address="0.0.0.0", environ={})
    assert command.argv[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert Path(command.argv[4]) == main_script()
    assert command.argv[command.argv.index("--server.port") + 1] == "8765"
    assert command.argv[command.argv.index("--server.address") + 1] == "0.0.0.0"
    assert command.env["ICECORE_CATALOG"] == "sqlite:///c.db"
    assert command.url == "http://0.0.0.0:8765"


def test_without_a_catalog_it_serves_icecore_catalog_then_the_warehouse_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert app_command(environ={"ICECORE_CATALOG": "x"}).env["ICECORE_CATALOG"] == "x"
    with pytest.raises(AppUnavailable) as refused:
        app_command(environ={})
    text = str(refused.value)
    assert "--catalog" in text and "ICECORE_CATALOG" in text and "no demo warehouse" in text
    assert text.count(". ") == 0 and text.endswith(".")
    (tmp_path / "warehouse").mkdir()
    served = app_command(environ={}).env["ICECORE_CATALOG"]
    assert Path(served) == tmp_path / "warehouse" and Path(served).is_absolute()


def test_a_missing_app_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_module(monkeypatch, "streamlit")
    with pytest.raises(MissingExtra, match=re.escape('pip install "icecore[app]".')):
        app_command("sqlite:///c.db", environ={})


def test_serve_rest_without_the_server_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_module(monkeypatch, "uvicorn")
    assert main(["serve-rest", "sqlite:///nowhere.db", "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        "error: The REST server needs the server extra, which is not installed: "
        'pip install "icecore[server]".\n'
    )


@pytest.mark.parametrize("port", [0, 65536])
def test_a_port_outside_tcp_is_refused(port: int) -> None:
    with pytest.raises(AppUnavailable, match="is not a TCP port"):
        app_command("sqlite:///c.db", port=port, environ={})


def _icecore_app(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``icecore app ARGS`` run from ``folder`` (no ./warehouse there), checkout on the path."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(folder)}
    return subprocess.run(
        [sys.executable, "-m", "icecore", "app", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_app_command_refuses_in_one_line(tmp_path: Path) -> None:
    result = _icecore_app(tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: No catalog to serve") and result.stderr.count("\n") == 1


def test_version_is_the_packages_version(capsys: pytest.CaptureFixture[str]) -> None:
    import icecore

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"icecore {icecore.__version__}\n"
    # The one written version is the package's: pyproject reads it (no second copy).
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" in project["dynamic"] and "version" not in project
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.\w+)?", icecore.__version__)


def test_a_catalog_that_is_not_there_is_refused_before_serving(tmp_path: Path) -> None:
    # A mistyped folder is one sentence and exit 1; no server starts (the command would
    # otherwise block serving it, and the test's timeout would fail it).
    missing = tmp_path / "no-such-warehouse"
    result = _icecore_app(tmp_path, "--catalog", str(missing), "--port", "1")
    assert result.returncode == 1
    assert result.stderr.startswith("error: Catalog") and str(missing) in result.stderr
    assert result.stderr.count("\n") == 1 and "Serving" not in result.stderr
