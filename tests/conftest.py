"""Shared fixtures: one Spark session and one Spark-written demo warehouse per test run.

Spark is the oracle: the warehouse is the demo story at its ``mini`` scale, written by real
Spark + Iceberg (Java) once per session; every test that needs tables reuses it and must not
change it (tests that write take a copy).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def warehouse_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the shared fixture warehouse lives (built by ``demo_warehouse``)."""
    return tmp_path_factory.mktemp("fixture") / "warehouse"


@pytest.fixture(scope="session")
def spark(warehouse_dir: Path) -> Iterator[object]:
    """The one SparkSession of the test run, with the fixture warehouse's catalogs."""
    from pipeline.spark import build_session

    session = build_session(
        warehouse_dir,
        master=os.environ.get("ICECORE_TEST_SPARK_MASTER", "local[2]"),
        hadoop_catalog=True,
        app_name="icecore-tests",
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_warehouse(spark: object, warehouse_dir: Path) -> Path:
    """The mini demo story, written once by Spark; returns the warehouse folder."""
    from pipeline.demo import build_demo

    lines: list[str] = []
    result = build_demo(warehouse_dir, scale="mini", spark=spark, progress=lines.append)
    assert result is not None, "the fixture warehouse must be freshly built"
    return warehouse_dir
