"""``python -m pipeline.demo --catalog postgresql://...``: the demo's SQL catalog in PostgreSQL.

The password is a secret: it must appear on no process's command line while Spark runs
(PySpark would put a builder setting on ``spark-submit``'s), nor in the SparkConf that
Spark's UI shows; Spark still connects with it (the server refuses TCP logins without one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import icecore
from pipeline.spark import PipelineError, jdbc_catalog_conf
from tests.pg_server import PgServer

from .processes import run_watching
from .test_demo_cli import one_sentence, run_demo

REPO = Path(__file__).resolve().parents[2]

_SESSION = """
import json, sys
from pipeline.spark import build_session
spark = build_session(sys.argv[1], catalog=sys.argv[2], master="local[1]", app_name="pg-secret")
spark.sql("CREATE NAMESPACE IF NOT EXISTS icecore.probe")
namespaces = [r[0] for r in spark.sql("SHOW NAMESPACES IN icecore").collect()]
conf = dict(spark.sparkContext.getConf().getAll())
print(json.dumps({"namespaces": namespaces, "conf": conf}))
spark.stop()
"""


def test_catalog_must_be_a_postgresql_uri(tmp_path: Path) -> None:
    result = run_demo(["--warehouse", str(tmp_path / "wh"), "--catalog", "sqlite:///x.db"])
    assert result.returncode == 1
    assert "postgresql://" in one_sentence(result.stderr)
    assert not (tmp_path / "wh").exists()


@pytest.mark.spark
@pytest.mark.slow
def test_demo_builds_into_a_postgresql_catalog(pg_server: PgServer, tmp_path: Path) -> None:
    uri = pg_server.create_database(f"demo_{uuid.uuid4().hex[:8]}")
    bare = uri.replace(f":{pg_server.password}@", "@")
    env = {
        **os.environ,
        "PGPASSWORD": pg_server.password,
        "ICECORE_SPARK_MASTER": "local[2]",
        "ICECORE_SPARK_DRIVER_MEMORY": "1g",
    }
    warehouse = tmp_path / "wh"
    args = ["--warehouse", str(warehouse), "--scale", "mini", "--catalog", bare]
    result, exposed = run_watching(
        [sys.executable, "-m", "pipeline.demo", *args], pg_server.password, cwd=REPO, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert exposed == []
    assert pg_server.password not in result.stdout + result.stderr
    built = json.loads(result.stdout.strip().splitlines()[-1])
    assert built["sql_catalog"] == bare
    assert not (warehouse / "catalog.db").exists()

    catalog = icecore.load_catalog(uri)
    listed = {str(t) for t in catalog.list_tables()}
    assert listed == {t for t in built["tables"] if ":" not in t}  # not the hadoop one

    from pyiceberg.catalog.sql import SqlCatalog

    peer = SqlCatalog(
        "icecore",
        uri=uri.replace("postgresql://", "postgresql+psycopg://"),
        warehouse=str(warehouse),
    )
    for name in listed:
        table = catalog.load_table(name)
        assert table.metadata.location.removeprefix("file:").startswith(str(warehouse))
        assert peer.load_table(name).metadata_location == table.metadata_location

    # A maintenance job commits through Spark's JdbcCatalog on the same database.
    name = max(sorted(listed), key=lambda n: len(catalog.load_table(n).snapshots()))
    events = catalog.load_table(name)
    rows_before = events.scan().plan().to_arrow().num_rows
    job = subprocess.run(
        [sys.executable, "-m", "pipeline.maintenance", "expire_snapshots", f"{bare}::{name}"]
        + ["--retain-last", "1", "--older-than", "2100-01-01T00:00:00Z"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    assert pg_server.password not in job.stdout + job.stderr
    done = json.loads(job.stdout.strip().splitlines()[-1])
    expired = catalog.load_table(name)
    assert done["after"]["metadata_location"] == expired.metadata_location
    assert expired.metadata_location != events.metadata_location
    assert len(expired.snapshots()) < len(events.snapshots())
    assert expired.scan().plan().to_arrow().num_rows == rows_before


@pytest.mark.spark
def test_build_session_keeps_the_password_off_command_lines_and_spark_conf(
    pg_server: PgServer, tmp_path: Path
) -> None:
    uri = pg_server.create_database(f"session_{uuid.uuid4().hex[:8]}")
    bare = uri.replace(f":{pg_server.password}@", "@")
    env = {**os.environ, "PGPASSWORD": pg_server.password, "ICECORE_SPARK_DRIVER_MEMORY": "1g"}
    result, exposed = run_watching(
        [sys.executable, "-c", _SESSION, str(tmp_path / "wh"), bare],
        pg_server.password,
        cwd=REPO,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert exposed == []
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert "probe" in seen["namespaces"]  # Spark logged in with the password set in-process
    conf = seen["conf"]
    assert conf["spark.sql.catalog.icecore.uri"].startswith("jdbc:postgresql://")
    assert "spark.sql.catalog.icecore.jdbc.password" not in conf
    assert pg_server.password not in result.stdout + result.stderr


def test_spark_catalog_settings_take_the_password_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", "s3cret")
    conf = jdbc_catalog_conf("pg", "postgresql://ann@db.example:6543/lake", tmp_path)
    assert conf["spark.sql.catalog.pg.type"] == "jdbc"
    assert conf["spark.sql.catalog.pg.uri"] == "jdbc:postgresql://db.example:6543/lake"
    assert conf["spark.sql.catalog.pg.jdbc.user"] == "ann"
    assert conf["spark.sql.catalog.pg.jdbc.password"] == "s3cret"
    assert conf["spark.sql.catalog.pg.warehouse"] == str(tmp_path.resolve())
    # Only the password key holds the secret: Spark's redaction regex hides keys named so.
    assert [k for k, v in conf.items() if "s3cret" in v] == ["spark.sql.catalog.pg.jdbc.password"]
    with pytest.raises(PipelineError, match="unix socket"):
        jdbc_catalog_conf("pg", "postgresql:///lake?host=/run/pg", tmp_path)
