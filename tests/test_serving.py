"""How ``scripts/serve.sh`` serves the app: no file watching and a bounded log outside development.

A maintenance job once wrote 143,000 files under ``./warehouse`` while Streamlit watched the
checkout: its log grew to 4.1 GB in 26 minutes and pages took 60-90 s. The served settings
must watch nothing unless ``ICECORE_DEV=1`` asks for it, log warnings only, and a log
written to a file must stay bounded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SERVE = REPO / "scripts" / "serve.sh"


def _streamlit_config() -> dict[str, str]:
    """Every option Streamlit resolves when started from the checkout, as ``section.name``."""
    shown = subprocess.run(
        [sys.executable, "-m", "streamlit", "config", "show"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")},
    ).stdout
    options: dict[str, str] = {}
    section = ""
    for line in shown.splitlines():
        if m := re.fullmatch(r"\[(\w+)\]", line.strip()):
            section = m.group(1)
        elif m := re.fullmatch(r"(\w+) = (.*)", line.strip()):
            options[f"{section}.{m.group(1)}"] = m.group(2)
    return options


def test_the_served_app_watches_no_file_and_logs_warnings_only() -> None:
    options = _streamlit_config()
    assert options["server.fileWatcherType"] == '"none"'
    assert options["server.runOnSave"] == "false"
    assert options["logger.level"] == '"warning"'


def _served_arguments(tmp_path: Path, **env: str) -> list[str]:
    """The arguments serve.sh gives ``python`` to start Streamlit (a recording stand-in)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / "argv"
    stand_in = bin_dir / "python"
    stand_in.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    stand_in.chmod(0o755)
    environment = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "ICECORE_CATALOG": str(tmp_path / "warehouse"),
        **env,
    }
    subprocess.run(["bash", str(SERVE)], env=environment, check=True, capture_output=True)
    return record.read_text().splitlines()


def test_serve_sh_leaves_watching_off_unless_in_development(tmp_path: Path) -> None:
    served = _served_arguments(tmp_path, ICECORE_PORT="8765")
    assert served[:4] == ["-m", "streamlit", "run", "app.py"]
    assert "--server.fileWatcherType" not in served  # the config file's "none" holds
    assert served[served.index("--server.port") + 1] == "8765"
    dev = _served_arguments(tmp_path, ICECORE_DEV="1")
    assert dev[dev.index("--server.fileWatcherType") + 1] == "auto"
    assert dev[dev.index("--logger.level") + 1] == "info"


def test_a_log_file_is_rotated_at_its_bound(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "icecore.log"
    lines = b"".join(f"line {i:06d} {'x' * 80}\n".encode() for i in range(5_000))
    copied = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bounded_log.py"), str(log), "20000"],
        input=lines,
        capture_output=True,
        check=True,
    )
    assert copied.stdout == lines  # the log still reaches the terminal or Docker whole
    previous = log.with_name("icecore.log.1")
    assert log.stat().st_size <= 20_000 and previous.stat().st_size <= 20_000
    assert sorted(p.name for p in log.parent.iterdir()) == ["icecore.log", "icecore.log.1"]
    # The newest lines are kept, in order, across the two files.
    kept = previous.read_bytes() + log.read_bytes()
    assert lines.endswith(kept)


@pytest.mark.parametrize("argv", [[], ["log"], ["log", "0"], ["log", "ten"]])
def test_bounded_log_refuses_a_missing_bound(argv: list[str], tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bounded_log.py"), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "usage:" in run.stderr
