"""``python -m pipeline.query``: a refused query runs nothing, a failure is one sentence."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline.test_demo_cli import one_sentence
from tests.pipeline.test_query_check import golden_table

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "ICECORE_SPARK_DRIVER_MEMORY": "1g", "ICECORE_SPARK_MASTER": "local[2]"}


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.query", *argv],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    "script",
    [
        "SELECT TRANSFORM(vendor_id) USING 'touch {marker}' FROM rows",
        "FROM rows SELECT TRANSFORM(vendor_id, fare) USING 'touch {marker}' AS (a, b)",
        'SELECT * FROM (SELECT transform(fare) using "touch {marker}" FROM rows) q',
    ],
)
def test_a_script_transform_is_refused_before_anything_runs(tmp_path: Path, script: str) -> None:
    table = golden_table(tmp_path)
    marker = tmp_path / "marker"
    result = run(str(table), script.format(marker=marker))
    assert result.returncode == 1
    sentence = one_sentence(result.stderr)
    assert "script transform" in sentence
    assert result.stdout == ""
    assert not marker.exists()


def test_a_metadata_column_is_refused(tmp_path: Path) -> None:
    result = run(str(golden_table(tmp_path)), "SELECT _file, count(*) FROM rows GROUP BY 1")
    assert result.returncode == 1
    assert "`_file`" in one_sentence(result.stderr)


@pytest.mark.spark
def test_a_table_spark_cannot_read_ends_in_one_sentence(tmp_path: Path) -> None:
    # icecore reads this folder's metadata (Spark's own, of the demo trips), but Spark's
    # catalog cannot load it: the dot in the folder's name makes Spark's name for it
    # ``demo.trips.v2`` (namespace demo.trips, table v2), and that table does not exist.
    folder = golden_table(tmp_path)
    dotted = folder.with_name("trips.v2")
    shutil.move(folder, dotted)
    result = run(str(dotted), "SELECT count(*) FROM rows")
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    last = [line for line in result.stderr.splitlines() if line.strip()][-1]
    assert last.startswith("Spark could not read"), result.stderr[-2000:]
    assert result.stdout == ""
