"""Shared fixtures: one Spark session and one Spark-written demo warehouse per test run.

Spark is the oracle: the warehouse is the demo story at its ``mini`` scale, written by real
Spark + Iceberg (Java) once per session; every test that needs tables reuses it and must not
change it (tests that write take a copy).
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.oidc_provider.fixture import OidcProvider, start_provider
from tests.pg_server import PgServer

REPO = Path(__file__).resolve().parent.parent

# Decoded manifests are cached on disk; tests keep theirs apart from the user's cache.
os.environ.setdefault("ICECORE_CACHE_DIR", tempfile.mkdtemp(prefix="icecore-test-cache-"))


@pytest.fixture(scope="session")
def warehouse_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the shared fixture warehouse lives (built by ``demo_warehouse``)."""
    return tmp_path_factory.mktemp("fixture") / "warehouse"


@pytest.fixture(scope="session")
def iceberg_jar() -> str:
    """The Iceberg runtime jar, for tests that run Java or Spark against it.

    Its package cannot install on Python 3.13 (requirements.txt's marker): there such a test
    skips, saying why, unless ``ICECORE_ICEBERG_JAR`` names a jar (``make test-pythons`` does).
    Below 3.13 the pinned requirements have it, so a missing jar stays a failure.
    """
    from pipeline.spark import JAR_PACKAGE_PYTHON_LIMIT, PipelineError, find_iceberg_jar

    try:
        return find_iceberg_jar()
    except PipelineError as e:
        if sys.version_info[:2] >= JAR_PACKAGE_PYTHON_LIMIT:
            pytest.skip(str(e))
        raise


@pytest.fixture(scope="session")
def spark(warehouse_dir: Path, iceberg_jar: str) -> Iterator[object]:
    """The one SparkSession of the test run, with the fixture warehouse already written.

    The demo story is written right after the session starts, before any test can touch
    the session's default catalog (which would create catalog.db in the warehouse first).
    """
    from pipeline.demo import build_demo
    from pipeline.spark import build_session

    session = build_session(
        warehouse_dir,
        master=os.environ.get("ICECORE_TEST_SPARK_MASTER", "local[2]"),
        hadoop_catalog=True,
        app_name="icecore-tests",
    )
    lines: list[str] = []
    result = build_demo(warehouse_dir, scale="mini", spark=session, progress=lines.append)
    assert result is not None, "the fixture warehouse must be freshly built"
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_warehouse(spark: object, warehouse_dir: Path) -> Path:
    """The mini demo story, written once by Spark; returns the warehouse folder."""
    return warehouse_dir


@dataclass(frozen=True)
class S3Server:
    """A moto S3 server on 127.0.0.1 and the FileIO properties that reach it."""

    endpoint: str
    properties: dict[str, str]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A real S3 endpoint (moto's server) on loopback, for the whole test run."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in _AWS_ENV}
    # Credentials and region for botocore; moto accepts any, and nothing leaves loopback.
    os.environ.update(_AWS_ENV)
    try:
        yield S3Server(
            endpoint=endpoint,
            properties={
                "s3.endpoint": endpoint,
                "s3.access-key-id": _AWS_ENV["AWS_ACCESS_KEY_ID"],
                "s3.secret-access-key": _AWS_ENV["AWS_SECRET_ACCESS_KEY"],
                "s3.region": _AWS_ENV["AWS_DEFAULT_REGION"],
            },
        )
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server on 127.0.0.1, started for the run and removed at its end."""
    server = PgServer(port=_free_port())
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    """A real OpenID Connect provider (django-oauth-toolkit) on 127.0.0.1 for the run.

    Started only when a test asks for it (about 2 s); see tests/oidc_provider/fixture.py
    for its users, clients and helpers (``tokens``, ``add_redirect_uri``).
    """
    with start_provider(tmp_path_factory.mktemp("oidc")) as provider:
        yield provider
