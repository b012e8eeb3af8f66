"""``python -m pipeline.maintenance`` on a table behind a REST catalog (Icecore's serve-rest).

PyIceberg (a peer) writes six small files through the server, which asks for OAuth2 client
credentials; the job names the table as ``sales::shop.orders`` (a REST entry of
icecore.toml whose secret sits in an environment variable), runs Spark's
``rewrite_data_files`` through Spark's own ``type=rest`` catalog, and the backing SQLite
catalog, read without the server, shows the rewrite. The secret appears nowhere: not in the
job's output, and not on any process's command line while the job runs (PySpark would put
builder settings on ``spark-submit``'s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer, start_server, stop_server

from .processes import command_lines

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SECRET = "m41nt-s3cret-not-on-argv"
CREDENTIAL = f"jobs:{SECRET}"
TABLE = "shop.orders"
FILES = 6


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """``serve-rest`` with a credential, holding shop.orders as six one-append files."""
    running = start_server(
        tmp_path_factory.mktemp("maint-rest") / "warehouse",
        env={"ICECORE_SERVE_CREDENTIAL": CREDENTIAL},  # not on the server's command line either
    )
    try:
        peer = RestCatalog(
            "peer",
            uri=running.url,
            credential=CREDENTIAL,
            **{"oauth2-server-uri": f"{running.url}/v1/oauth/tokens"},
        )
        peer.create_namespace("shop")
        table = peer.create_table(
            TABLE,
            Schema(
                NestedField(1, "id", LongType(), required=False),
                NestedField(2, "city", StringType(), required=False),
            ),
        )
        for i in range(FILES):
            table.append(pa.table({"id": pa.array([i], pa.int64()), "city": [f"c{i}"]}))
        yield running
    finally:  # also when writing the table failed
        stop_server(running)


def test_rewrite_data_files_commits_through_rest(server: RestServer, tmp_path: Path) -> None:
    before = SqlCatalog(server.catalog_db).load_table(TABLE)
    live_before = before.scan().plan()
    assert len(live_before.tasks) == FILES
    config = tmp_path / "icecore.toml"
    config.write_text(
        f'[catalogs.sales]\ntype = "rest"\nuri = "{server.url}"\n'
        'credential-env = "SALES_JOBS_CREDENTIAL"\n'
    )
    env = {
        **os.environ,
        "ICECORE_CONFIG": str(config),
        "SALES_JOBS_CREDENTIAL": CREDENTIAL,
        "ICECORE_SPARK_DRIVER_MEMORY": "1g",
        "ICECORE_SPARK_MASTER": "local[2]",
    }
    env.pop("ICECORE_READ_ONLY", None)
    job = subprocess.Popen(
        [sys.executable, "-m", "pipeline.maintenance", "rewrite_data_files", f"sales::{TABLE}"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    exposed: list[str] = []
    deadline = time.monotonic() + 600
    while job.poll() is None and time.monotonic() < deadline:
        exposed += [line[:200] for line in command_lines() if SECRET in line]
        time.sleep(0.2)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 0, err[-3000:]
    assert not exposed
    assert SECRET not in out and SECRET not in err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["spark_table"].startswith("icecore_rest_")

    after = SqlCatalog(server.catalog_db).load_table(TABLE)
    assert after.metadata_location != before.metadata_location
    snapshot = after.metadata.current_snapshot()
    assert snapshot is not None and snapshot.operation == "replace"
    assert result["after"]["metadata_location"] == after.metadata_location
    plan = after.scan().plan()
    assert len(plan.tasks) < FILES
    rows = plan.to_arrow()
    assert sorted(rows["id"].to_pylist()) == list(range(FILES))
