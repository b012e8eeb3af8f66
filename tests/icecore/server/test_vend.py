"""Vended credentials: the server hands a table's S3 endpoint and keys to the client that asks.

A table whose files live on S3 (a moto server on loopback) is written by PyIceberg through
Icecore's server; the server is started with ``--vend`` naming variables of its own
environment. Icecore's client, in a process with NO storage configuration at all (no AWS
variables, no ``~/.aws``, no ``icecore.toml``), opens the catalog by its URL and reads rows
equal to what PyIceberg wrote: what it needed came from ``loadTable``'s ``config``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog as PeerCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from icecore.server.vend import ANONYMOUS_WARNING, vend_policy, vended_properties
from tests.conftest import REPO
from tests.icecore.server.conftest import RestServer, start_server, stop_server

BUCKET = "vended"
VEND_ENV = {
    "s3.endpoint": "VEND_S3_ENDPOINT",
    "s3.access-key-id": "VEND_S3_KEY",
    "s3.secret-access-key": "VEND_S3_SECRET",
    "s3.region": "VEND_S3_REGION",
}

READ = """
import json, sys
import icecore
table = icecore.load_catalog(sys.argv[1]).load_table("vend.t")
rows = table.scan().plan().to_arrow().to_pylist()
print(json.dumps({"location": table.metadata_location, "rows": rows}))
"""


@pytest.fixture(scope="module")
def vending(s3_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """A server over a SQLite catalog, reaching S3 itself and vending the endpoint and keys."""
    import boto3

    boto3.client("s3", endpoint_url=s3_server.endpoint).create_bucket(Bucket=BUCKET)
    env = {var: s3_server.properties[key] for key, var in VEND_ENV.items()}
    env["AWS_ENDPOINT_URL"] = s3_server.endpoint  # the server's own FileIO (botocore's variable)
    args = [arg for key, var in VEND_ENV.items() for arg in ("--vend", f"{key}={var}")]
    args.append("--vend-to-anonymous")  # the tests below call without a token
    args += ["--allow-location", f"s3://{BUCKET}/"]  # the tables live in the bucket
    server = start_server(tmp_path_factory.mktemp("vend") / "wh", *args, env=env)
    yield server
    stop_server(server)


def _clean_env(home: Path) -> dict[str, str]:
    """An environment with nothing about storage in it: no AWS_*, no config files."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    return {**keep, "HOME": str(home), "PYTHONPATH": str(REPO)}


def test_client_reads_an_s3_table_with_vended_credentials_only(
    vending: RestServer, s3_server: Any, tmp_path: Path
) -> None:
    writer = PeerCatalog("writer", uri=vending.url, **s3_server.properties)
    writer.create_namespace("vend")
    table = writer.create_table(
        "vend.t",
        Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "name", StringType(), required=False),
        ),
        location=f"s3://{BUCKET}/vend/t",
    )
    written = pa.table(
        {"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", None, "c"], pa.string())}
    )
    table.append(written)
    table.append(pa.table({"id": pa.array([4], pa.int64()), "name": pa.array(["d"])}))
    expected = writer.load_table("vend.t")
    assert str(expected.metadata_location).startswith(f"s3://{BUCKET}/")

    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", READ, vending.url],
        cwd=home,
        env=_clean_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["location"] == expected.metadata_location
    rows = sorted(result["rows"], key=lambda r: r["id"])
    assert rows == sorted(expected.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "name": "a"},
        {"id": 2, "name": None},
        {"id": 3, "name": "c"},
        {"id": 4, "name": "d"},
    ]


def test_credentials_only_to_a_client_that_asks(vending: RestServer, s3_server: Any) -> None:
    url = f"{vending.url}/v1/namespaces/vend/tables/t"
    asked = requests.get(
        url, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}, timeout=10
    )
    assert asked.status_code == 200, asked.text
    assert asked.json()["config"] == s3_server.properties
    plain = requests.get(url, timeout=10)
    assert plain.status_code == 200
    assert plain.json()["config"] == {}


def test_vend_takes_only_storage_keys_from_set_variables() -> None:
    assert vended_properties(["s3.region=R"], {"R": "eu-west-1"}) == {"s3.region": "eu-west-1"}
    with pytest.raises(ValueError, match="only these storage properties"):
        vended_properties(["uri=X"], {"X": "http://elsewhere"})
    with pytest.raises(ValueError, match="is not set") as caught:
        vended_properties(["s3.secret-access-key=MISSING"], {})
    assert "MISSING" in str(caught.value)
    with pytest.raises(ValueError, match="KEY=ENV_VAR") as bad:
        vended_properties(["hunter2"], {})
    assert "hunter2" not in str(bad.value)  # a misplaced secret is never echoed


def test_serve_rest_refuses_a_vend_of_an_unset_variable(tmp_path: Path) -> None:
    """The server does not start half-configured: one sentence naming the variable."""
    env = {k: v for k, v in os.environ.items() if k != "NOT_SET_ANYWHERE"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "icecore",
            "serve-rest",
            f"sqlite:///{tmp_path / 'catalog.db'}",
            "--vend",
            "s3.secret-access-key=NOT_SET_ANYWHERE",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "NOT_SET_ANYWHERE" in done.stderr and "Traceback" not in done.stderr


def _serve_rest_refusal(tmp_path: Path, *args: str, env: dict[str, str]) -> str:
    """Start ``serve-rest`` with ``args``; it must exit with one sentence: its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "icecore", "serve-rest", f"sqlite:///{tmp_path / 'c.db'}", *args],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "Uvicorn running" not in done.stderr
    return done.stderr


def test_vend_without_a_credential_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ICECORE_SERVE_CREDENTIAL", raising=False)
    stderr = _serve_rest_refusal(
        tmp_path, "--vend", "s3.secret-access-key=VEND_KEY", env={"VEND_KEY": "key-value-1"}
    )
    assert "--credential" in stderr and "--vend-to-anonymous" in stderr
    assert "key-value-1" not in stderr


def test_read_only_server_refuses_write_capable_vend(tmp_path: Path) -> None:
    stderr = _serve_rest_refusal(
        tmp_path,
        "--read-only",
        "--credential",
        "reader:s3cr3t-value",
        "--vend",
        "s3.secret-access-key=VEND_KEY",
        env={"VEND_KEY": "key-value-2"},
    )
    assert "--vend-read-only" in stderr
    assert "key-value-2" not in stderr and "s3cr3t-value" not in stderr


def test_vend_to_anonymous_warns_on_stderr(vending: RestServer) -> None:
    assert vending.process.stderr is not None
    first = vending.process.stderr.readline().decode()
    assert first.startswith("Warning: --vend-to-anonymous")


def test_read_only_server_vends_only_read_only_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.catalog.rest import RestCatalog as Writer

    warehouse = tmp_path / "wh"
    writer = start_server(warehouse)
    try:
        cat = Writer("w", uri=writer.url)
        cat.create_namespace("ro")
        cat.create_table("ro.t", Schema(NestedField(1, "id", LongType(), required=False)))
    finally:
        stop_server(writer)
    monkeypatch.delenv("ICECORE_SERVE_CREDENTIAL", raising=False)
    reader_env = {"RO_KEY": "read-key-id", "RO_SECRET": "read-key-secret"}
    server = start_server(
        warehouse,
        "--read-only",
        "--credential",
        "reader:s3cr3t-value",
        "--vend-read-only",
        "s3.access-key-id=RO_KEY",
        "--vend-read-only",
        "s3.secret-access-key=RO_SECRET",
        env=reader_env,
    )
    try:
        token = requests.post(
            f"{server.url}/v1/oauth/tokens",
            data={
                "grant_type": "client_credentials",
                "client_id": "reader",
                "client_secret": "s3cr3t-value",
            },
            timeout=10,
        ).json()["access_token"]
        loaded = requests.get(
            f"{server.url}/v1/namespaces/ro/tables/t",
            headers={
                "Authorization": f"Bearer {token}",
                "X-Iceberg-Access-Delegation": "vended-credentials",
            },
            timeout=10,
        )
        assert loaded.status_code == 200, loaded.text
        assert loaded.json()["config"] == {
            "s3.access-key-id": reader_env["RO_KEY"],
            "s3.secret-access-key": reader_env["RO_SECRET"],
        }
        anonymous = requests.get(
            f"{server.url}/v1/namespaces/ro/tables/t",
            headers={"X-Iceberg-Access-Delegation": "vended-credentials"},
            timeout=10,
        )
        assert anonymous.status_code == 401
        assert "read-key" not in anonymous.text
    finally:
        stop_server(server)


def test_vend_policy_names_what_to_change_and_never_a_value() -> None:
    env = {"K": "key-value-3", "R": "eu-west-1"}
    assert vend_policy([], [], authenticated=False, read_only=False, to_anonymous=False) == (
        {},
        None,
    )
    vended, warning = vend_policy(
        ["s3.access-key-id=K"],
        [],
        authenticated=True,
        read_only=False,
        to_anonymous=True,
        environ=env,
    )
    assert vended == {"s3.access-key-id": "key-value-3"} and warning is None
    vended, warning = vend_policy(
        [], ["s3.region=R"], authenticated=False, read_only=True, to_anonymous=True, environ=env
    )
    assert vended == {"s3.region": "eu-west-1"} and warning == ANONYMOUS_WARNING
    with pytest.raises(ValueError, match="named by both --vend and --vend-read-only") as both:
        vend_policy(
            ["s3.access-key-id=K"],
            ["s3.access-key-id=K"],
            authenticated=True,
            read_only=False,
            to_anonymous=False,
            environ=env,
        )
    with pytest.raises(ValueError, match="^--vend-read-only takes KEY=ENV_VAR") as malformed:
        vend_policy(
            [],
            ["key-value-3"],
            authenticated=True,
            read_only=True,
            to_anonymous=False,
            environ=env,
        )
    for caught in (both, malformed):
        assert "key-value-3" not in str(caught.value)
