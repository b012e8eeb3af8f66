"""The reference Iceberg REST catalog server (tests/rest/RestReference.java), started for tests.

Iceberg Java's own ``CatalogHandlers`` over a JdbcCatalog in SQLite, behind JDK 17's
``com.sun.net.httpserver``, on 127.0.0.1 and a free port. The Java source is compiled once
per test session with ``javac`` (``.ci/run`` installs ``openjdk-17-jdk-headless`` when it is
missing); each server runs as a subprocess and is stopped by its fixture.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "rest" / "RestReference.java"


def _classpath(*extra: str) -> str:
    import pyspark

    from pipeline.spark import find_iceberg_jar, find_sqlite_jar

    spark_jars = Path(pyspark.__file__).parent / "jars"
    return ":".join([*extra, find_iceberg_jar(), f"{spark_jars}/*", find_sqlite_jar()])


def compile_reference(out: Path) -> Path:
    """Compile the reference server into ``out``; returns the classes folder."""
    javac = subprocess.run(["which", "javac"], capture_output=True, text=True).stdout.strip()
    if not javac:
        pytest.fail("javac is missing: install openjdk-17-jdk-headless (.ci/run does).")
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [javac, "-d", str(out), "-cp", _classpath(), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


@dataclass
class ReferenceServer:
    """One running reference server."""

    url: str
    folder: Path
    process: subprocess.Popen[bytes]

    @property
    def warehouse(self) -> Path:
        """Where its tables' files are written."""
        return self.folder / "warehouse"

    def stop(self) -> None:
        """Stop the server (its own process only)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)


def start_reference(classes: Path, folder: Path, *options: str) -> ReferenceServer:
    """Start a reference server on a fresh catalog in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    port_file = folder / "port"
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(
        [
            "java",
            "-Xmx512m",
            "-cp",
            _classpath(str(classes)),
            "RestReference",
            str(folder / "catalog.db"),
            str(folder / "warehouse"),
            str(port_file),
            *options,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(
                "The reference REST server did not start:\n"
                + (folder / "server.log").read_text(errors="replace")
            )
        time.sleep(0.2)
    port = int(port_file.read_text())
    return ReferenceServer(f"http://127.0.0.1:{port}", folder, process)
