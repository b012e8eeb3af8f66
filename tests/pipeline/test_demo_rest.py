"""``python -m pipeline.demo --catalog REST``: the demo's tables built through a REST catalog.

The demo (mini scale) runs as its own process into Icecore's ``serve-rest`` over a fresh
SQLite catalog behind OAuth2 client credentials (a named entry of icecore.toml whose secret
sits in an environment variable; rebuilding with ``--force`` over a stale table of a
previous build, beside a table it must not touch). One build: an open server (a bare URI)
differs only in the settings Spark gets, which the quick tests below check.
Every table the story writes through REST (merge-on-read deletes, a compaction and an
expiry, evolution, a tag and a branch; deletion vectors; equality deletes committed
through Iceberg's Java API) is then read by Icecore's REST client and by Spark's own
``type=rest`` catalog on the shared session, and the rows must be equal. The secret
appears on no process's command line while the demo runs, and not in its output.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

import icecore
from pipeline.spark import catalog_conf, public_conf, rest_catalog_conf, secret_conf
from tests.icecore.server.conftest import RestServer, free_port, start_server, stop_server
from tests.oracle import arrow_rows, spark_rows

from .processes import run_watching
from .test_demo_cli import one_sentence, run_demo

REPO = Path(__file__).resolve().parents[2]
SECRET = "d3mo-s3cret-not-on-argv"
CREDENTIAL = f"demo:{SECRET}"
REST_TABLES = {"demo.accounts", "demo.zones", "demo.trips", "demo.events_v3"}


def _demo_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("ICECORE_READ_ONLY", "ICECORE_REST_CREDENTIAL", "ICECORE_REST_TOKEN"):
        env.pop(key, None)
    return {**env, "ICECORE_SPARK_MASTER": "local[2]", "ICECORE_SPARK_DRIVER_MEMORY": "1g", **extra}


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[RestServer]:
    # The server's own secret comes from its environment: it too stays off command lines.
    server = start_server(tmp_path / "served", env={"ICECORE_SERVE_CREDENTIAL": CREDENTIAL})
    try:
        yield server
    finally:
        stop_server(server)


def _spark_sees(spark: Any, name: str, server: RestServer, credential: str | None) -> None:
    """Register Spark's own REST catalog on the shared session (secrets in-process only)."""
    conf = rest_catalog_conf(name, server.url, {}, credential=credential)
    conf[f"spark.sql.catalog.{name}.cache-enabled"] = "false"
    for key, value in conf.items():
        spark.conf.set(key, value)


def _assert_equal_to_spark(spark: Any, spark_catalog: str, catalog: Any) -> None:
    """Each REST table, read by Icecore's client, holds exactly the rows Spark reads."""
    for name in sorted(REST_TABLES):
        table = catalog.load_table(name)
        _, expected = spark_rows(spark, f"SELECT * FROM {spark_catalog}.{name}")
        assert arrow_rows(table.scan().plan().to_arrow()) == expected, name
        assert sum(expected.values()) > 0, name
    trips = catalog.load_table("demo.trips")
    assert {"month_end", "audit"} <= set(trips.metadata.refs)
    _, audit = spark_rows(spark, f"SELECT * FROM {spark_catalog}.demo.trips VERSION AS OF 'audit'")
    assert arrow_rows(trips.scan(ref="audit").plan().to_arrow()) == audit


def _assert_story_kept(
    catalog: Any, server: RestServer, others: frozenset[str] = frozenset()
) -> None:
    """The REST tables hold what the story is for, in the server's warehouse."""
    listed = {str(t) for t in catalog.list_tables()}
    assert listed == REST_TABLES | others
    for name in REST_TABLES:
        location = catalog.load_table(name).metadata.location.removeprefix("file:")
        assert location.startswith(str(server.warehouse.resolve())), (name, location)
    accounts = catalog.load_table("demo.accounts").inspect("files")
    assert 2 in accounts.column("content").to_pylist()  # equality deletes, via Java's API
    events = catalog.load_table("demo.events_v3")
    assert events.metadata.format_version == 3
    delete_paths = [
        p
        for p, c in zip(
            events.inspect("files").column("file_path").to_pylist(),
            events.inspect("files").column("content").to_pylist(),
            strict=True,
        )
        if c == 1
    ]
    assert delete_paths and all(p.endswith(".puffin") for p in delete_paths)  # DVs


@pytest.mark.spark
@pytest.mark.slow
def test_demo_builds_through_oauth2_with_the_secret_off_command_lines(
    spark: Any, oauth_server: RestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a token the server refuses: the demo can only have got in with the credential.
    assert requests.get(f"{oauth_server.url}/v1/namespaces", timeout=10).status_code == 401
    # A previous build's zones (another schema), and someone else's table in the namespace.
    peer = RestCatalog(
        "peer",
        uri=oauth_server.url,
        credential=CREDENTIAL,
        **{"oauth2-server-uri": f"{oauth_server.url}/v1/oauth/tokens"},
    )
    peer.create_namespace("demo")
    for name in ("demo.zones", "demo.keep_me"):
        peer.create_table(name, Schema(NestedField(1, "id", LongType(), required=False)))
    config = tmp_path / "icecore.toml"
    config.write_text(
        f'[catalogs.lake]\ntype = "rest"\nuri = "{oauth_server.url}"\n'
        'credential-env = "LAKE_DEMO_CREDENTIAL"\n'
    )
    env = _demo_env(ICECORE_CONFIG=str(config), LAKE_DEMO_CREDENTIAL=CREDENTIAL)
    warehouse = tmp_path / "wh"
    args = ["--warehouse", str(warehouse), "--scale", "mini", "--catalog", "lake", "--force"]
    result, exposed = run_watching(
        [sys.executable, "-m", "pipeline.demo", *args], SECRET, cwd=REPO, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert exposed == []
    assert SECRET not in result.stdout + result.stderr
    built = json.loads(result.stdout.strip().splitlines()[-1])
    assert built["sql_catalog"] == "lake"
    assert {t for t in built["tables"] if ":" not in t} == REST_TABLES
    assert not (warehouse / "catalog.db").exists()  # no JdbcCatalog was used
    assert (warehouse / "hadoop" / "demo" / "customers_v1").is_dir()
    assert SECRET not in (warehouse / ".icecore-demo.json").read_text()

    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.setenv("LAKE_DEMO_CREDENTIAL", CREDENTIAL)
    catalog = icecore.load_catalog("lake", read_only=True)
    # --force replaced the stale zones and left the other table alone.
    _assert_story_kept(catalog, oauth_server, frozenset({"demo.keep_me"}))
    _spark_sees(spark, "demo_rest_oauth", oauth_server, CREDENTIAL)
    _assert_equal_to_spark(spark, "demo_rest_oauth", catalog)


def test_unreachable_rest_catalog_is_one_sentence_before_spark(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = run_demo(
        ["--warehouse", str(tmp_path / "wh"), "--scale", "mini", "--catalog", url],
        env=_demo_env(),
    )
    assert result.returncode == 1
    assert url in one_sentence(result.stderr)
    assert not (tmp_path / "wh").exists()


def test_refused_credential_is_one_sentence_without_the_secret(
    oauth_server: RestServer, tmp_path: Path
) -> None:
    result = run_demo(
        ["--warehouse", str(tmp_path / "wh"), "--catalog", oauth_server.url],
        env=_demo_env(ICECORE_REST_CREDENTIAL=f"demo:wrong-{SECRET}"),
    )
    assert result.returncode == 1
    sentence = one_sentence(result.stderr)
    assert oauth_server.url in sentence
    assert SECRET not in result.stderr
    assert not (tmp_path / "wh").exists()


def test_a_name_that_is_no_rest_entry_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "icecore.toml"
    config.write_text(f'[catalogs.files]\nuri = "{tmp_path / "elsewhere"}"\n')
    result = run_demo(
        ["--warehouse", str(tmp_path / "wh"), "--catalog", "files"],
        env=_demo_env(ICECORE_CONFIG=str(config)),
    )
    assert result.returncode == 1
    assert "REST entry" in one_sentence(result.stderr)
    assert not (tmp_path / "wh").exists()


def test_a_rest_entry_becomes_spark_rest_settings_with_secrets_split_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "icecore.toml"
    config.write_text(
        '[catalogs.lake]\ntype = "rest"\nuri = "https://cat.example/api/"\n'
        'warehouse = "analytics"\ncredential-env = "LAKE_DEMO_CREDENTIAL"\n'
    )
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.setenv("LAKE_DEMO_CREDENTIAL", CREDENTIAL)
    conf = catalog_conf("icecore", "lake", tmp_path / "wh")
    prefix = "spark.sql.catalog.icecore"
    assert conf[f"{prefix}.type"] == "rest"
    assert conf[f"{prefix}.uri"] == "https://cat.example/api"
    assert conf[f"{prefix}.warehouse"] == "analytics"  # the server's name, not the folder
    assert conf[f"{prefix}.oauth2-server-uri"] == "https://cat.example/api/v1/oauth/tokens"
    assert secret_conf(conf) == {f"{prefix}.credential": CREDENTIAL}
    assert SECRET not in json.dumps(public_conf(conf))
    assert not any("credential-env" in key for key in conf)
    # Not a REST entry: Iceberg's JdbcCatalog, as before.
    assert catalog_conf("icecore", str(tmp_path / "c.db"), tmp_path)[f"{prefix}.type"] == "jdbc"
