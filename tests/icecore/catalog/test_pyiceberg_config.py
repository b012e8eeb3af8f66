"""Catalogs configured the PyIceberg way (``.pyiceberg.yaml``, ``PYICEBERG_*``) open by name.

PyIceberg 0.12 itself is the peer: it reads the same configuration in the same process, and
what it makes of it (the merged configuration, the tables a catalog lists) is the expected
value. The Spark-written catalogs are in test_pyiceberg_config_spark.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from icecore.catalog import load_catalog, load_table
from icecore.catalog import pyiceberg_config as pic
from icecore.catalog.sql import create_sqlite_catalog
from icecore.errors import IcecoreError, NotFound, Unsupported, ValidationError
from tests.conftest import REPO
from tests.icecore.test_cli import icecore_cli
from tests.pyiceberg_env import isolate, pyiceberg_tables
from tests.ui.helpers import tiny_warehouse

SECRET = "s3cr3t-Value-never-shown"


@pytest.fixture(autouse=True)
def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No PyIceberg configuration but the test's own: a fresh home, folder and environment."""
    home = tmp_path / "home"
    home.mkdir()
    isolate(monkeypatch, home)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


def sql_catalog(db: Path, catalog_name: str, tables: dict[str, str]) -> Path:
    """A JdbcCatalog-schema SQLite file whose ``catalog_name`` rows name ``tables``."""
    create_sqlite_catalog(db)
    with closing(sqlite3.connect(db)) as conn, conn:
        for name, location in tables.items():
            namespace, table = name.rsplit(".", 1)
            conn.execute(
                "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, "
                "metadata_location) VALUES (?, ?, ?, ?)",
                (catalog_name, namespace, table, location),
            )
    return db


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """``lake/catalog.db``: catalog ``lake`` holds db.zones, catalog ``other`` holds ops.jobs."""
    tiny_warehouse(tmp_path / "lake", "db.zones")
    tiny_warehouse(tmp_path / "lake", "ops.jobs")
    db = tmp_path / "lake" / "catalog.db"
    meta = "metadata/v1.metadata.json"
    sql_catalog(db, "lake", {"db.zones": str(tmp_path / "lake/db/zones" / meta)})
    sql_catalog(db, "other", {"ops.jobs": str(tmp_path / "lake/ops/jobs" / meta)})
    return db


def icecore_tables(name: str) -> set[str]:
    """The tables Icecore lists for ``name``."""
    return {str(t) for t in load_catalog(name).list_tables()}


# --- reading the configuration as PyIceberg does ---------------------------------------


def test_the_configuration_is_what_pyiceberg_reads(
    clean_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean_environment / ".pyiceberg.yaml").write_text(
        "default-catalog: Prod\n"
        "catalog:\n"
        "  PROD:\n"
        "    uri: http://a.example/api\n"
        "    s3.endpoint: http://s3.example\n"
        "    retries: 3\n"
        "  dev:\n"
        "    type: sql\n"
        "    uri: sqlite:///dev.db\n"
    )
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__URI", "http://b.example/api")
    monkeypatch.setenv("pyiceberg_catalog__prod__s3__access_key_id", "AKIA")
    monkeypatch.setenv("PYICEBERG_CATALOG__DEV__ECHO", "")
    monkeypatch.setenv("PYICEBERG_CATALOG__NEW__HEADER__X_API_KEY", "k")
    from pyiceberg.utils.config import Config

    expected = Config()
    ours = pic.load()
    assert ours == expected.config
    assert pic.default_catalog_name(ours) == expected.get_default_catalog_name()
    assert pic.catalog_names(ours) == expected.get_known_catalogs()
    found = pic.find_catalog("Prod", ours)
    assert found is not None and dict(found.properties) == expected.get_catalog_config("Prod")


def test_the_first_configuration_file_wins_and_an_empty_one_is_passed_over(
    clean_environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyiceberg_home = tmp_path / "pyiceberg_home"
    pyiceberg_home.mkdir()
    monkeypatch.setenv("PYICEBERG_HOME", str(pyiceberg_home))
    (clean_environment / ".pyiceberg.yaml").write_text("catalog:\n  home:\n    uri: http://h\n")
    (Path.cwd() / ".pyiceberg.yaml").write_text("catalog:\n  here:\n    uri: http://c\n")
    from pyiceberg.utils.config import Config

    assert pic.catalog_names() == Config().get_known_catalogs() == ["home"]
    (pyiceberg_home / ".pyiceberg.yaml").write_text("catalog:\n  first:\n    uri: http://f\n")
    assert pic.catalog_names() == Config().get_known_catalogs() == ["first"]
    # An empty file holds no catalog: the next one is read (PyIceberg 0.12 fails on it
    # with an AttributeError; its `if config := ...` means to pass it over).
    (pyiceberg_home / ".pyiceberg.yaml").write_text("# nothing yet\n")
    assert pic.catalog_names() == ["home"]


# --- opening catalogs by name ------------------------------------------------------------


def test_a_sql_catalog_opens_by_name_from_variables_as_pyiceberg_opens_it(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLAlchemy's sqlite:/// is relative to the current folder; the name is the catalog_name.
    monkeypatch.chdir(lake.parent.parent)
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", "sqlite:///lake/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__OTHER__URI", f"sqlite:////{lake}")
    monkeypatch.setenv("PYICEBERG_CATALOG__OTHER__ECHO", "true")  # an engine setting: ignored
    assert icecore_tables("lake") == pyiceberg_tables("lake") == {"db.zones"}
    assert icecore_tables("other") == pyiceberg_tables("other") == {"ops.jobs"}
    opened = load_catalog("lake")
    assert opened.uri == "lake" and opened.kind == "sql"
    assert load_table("lake::db.zones").metadata_location.endswith("v1.metadata.json")


def test_a_sql_catalog_opens_by_name_from_the_yaml_file(
    lake: Path, clean_environment: Path
) -> None:
    (clean_environment / ".pyiceberg.yaml").write_text(
        f"catalog:\n  Lake:\n    type: SQL\n    uri: sqlite:///{lake}\n"
        "    init_catalog_tables: false\n"
    )
    assert icecore_tables("lake") == pyiceberg_tables("lake") == {"db.zones"}


def test_the_cli_opens_a_pyiceberg_catalog_by_name(lake: Path, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "ICECORE_CONFIG": str(tmp_path / "absent.toml"),
        "PYICEBERG_CATALOG__LAKE__URI": f"sqlite:///{lake}",
    }

    def cli(*args: str) -> Any:
        done = icecore_cli(*args, env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    listed = cli("tables", "lake")
    assert [row["identifier"] for row in listed] == ["db.zones"]
    history = cli("history", "lake::db.zones")
    assert history == cli("history", str(lake.parent / "db" / "zones"))


def test_a_hadoop_warehouse_opens_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # PyIceberg has no filesystem catalog; Icecore takes Iceberg Java's name for it.
    tiny_warehouse(tmp_path / "wh", "db.zones")
    monkeypatch.setenv("PYICEBERG_CATALOG__FILES__TYPE", "hadoop")
    monkeypatch.setenv("PYICEBERG_CATALOG__FILES__WAREHOUSE", str(tmp_path / "wh"))
    opened = load_catalog("files")
    assert opened.hadoop_layout and opened.uri == "files"
    assert icecore_tables("files") == {"db.zones"}


def test_icecore_toml_wins_over_variables_which_win_over_the_yaml_file(
    lake: Path, tmp_path: Path, clean_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny_warehouse(tmp_path / "toml", "toml.only")
    (clean_environment / ".pyiceberg.yaml").write_text(
        f"catalog:\n  lake:\n    uri: sqlite:///{lake}\n"
        f"  other:\n    uri: http://127.0.0.1:9/not-used\n"
    )
    # Same name in the environment: the variable wins (PyIceberg's order).
    monkeypatch.setenv("PYICEBERG_CATALOG__OTHER__URI", f"sqlite:///{lake}")
    assert icecore_tables("other") == pyiceberg_tables("other") == {"ops.jobs"}
    # Same name in icecore.toml: the deployment's file wins over both.
    toml = tmp_path / "icecore.toml"
    toml.write_text(f'[catalogs.lake]\nuri = "{tmp_path / "toml"}"\n')
    monkeypatch.setenv("ICECORE_CONFIG", str(toml))
    assert icecore_tables("lake") == {"toml.only"}
    # A name found nowhere is still a folder, or not found.
    with pytest.raises(NotFound):
        load_catalog("nowhere")


@pytest.mark.parametrize(
    ("properties", "says"),
    [
        ({"TYPE": "glue"}, "type 'glue', which Icecore cannot open; it opens hadoop, rest, sql"),
        ({"URI": "thrift://metastore:9083"}, "type 'hive', which Icecore cannot open"),
        ({"TYPE": "bigquery"}, "type 'bigquery'"),
        ({"TYPE": "rest"}, "has no uri"),
        ({"URI": "ftp://x"}, "type (rest, sql or hadoop)"),
        ({"TYPE": "sql", "URI": "sqlite:///:memory:"}, "in-memory SQLite catalog"),
        ({"TYPE": "sql", "URI": "mysql+pymysql://u@h/db"}, "SQLite"),
    ],
)
def test_a_catalog_icecore_cannot_open_is_one_sentence(
    properties: dict[str, str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in properties.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__PROD__{key}", value)
    with pytest.raises((Unsupported, ValidationError)) as raised:
        load_catalog("prod")
    message = str(raised.value)
    assert says in message and "prod" in message.lower()
    assert message.count(". ") == 0 and message.endswith(".")


def test_a_malformed_yaml_file_is_one_sentence_without_its_content(
    clean_environment: Path,
) -> None:
    path = clean_environment / ".pyiceberg.yaml"
    path.write_text(f"catalog:\n  prod:\n    credential: {SECRET}\n   token: [unclosed\n")
    with pytest.raises(ValidationError) as raised:
        load_catalog("prod")
    message = str(raised.value)
    assert str(path) in message and "not valid YAML" in message
    assert SECRET not in message and message.count(". ") == 0
    path.write_text("- a list\n- not a mapping\n")
    with pytest.raises(ValidationError, match="must hold a mapping"):
        load_catalog("prod")


def test_yaml_is_imported_only_when_a_file_exists(tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom icecore.catalog import load_catalog\n"
        "try:\n    load_catalog('nowhere')\nexcept Exception:\n    pass\n"
        "print('yaml' in sys.modules)"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ICECORE_CONFIG": "absent.toml"}
    for yaml_file, loaded in ((None, "False"), ("catalog: {}\n", "True")):
        if yaml_file is not None:
            (tmp_path / ".pyiceberg.yaml").write_text(yaml_file)
        done = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=tmp_path,
            env={**env, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert done.stdout.strip() == loaded


# --- secrets -----------------------------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "properties",
    [
        {"URI": "http://127.0.0.1:{port}", "CREDENTIAL": SECRET},  # no id: refused as such
        {"URI": "http://127.0.0.1:{port}", "CREDENTIAL": f"client:{SECRET}"},
        {"URI": "http://127.0.0.1:{port}", "TOKEN": SECRET},
        {"TYPE": "sql", "URI": f"postgresql+psycopg://ann:{SECRET}@127.0.0.1:{{port}}/lake"},
    ],
)
def test_a_secret_in_the_configuration_never_reaches_a_message(
    properties: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    for key, value in properties.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__PROD__{key}", value.replace("{port}", str(port)))
    with pytest.raises(IcecoreError) as raised:
        load_catalog("prod")
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value)
    # the failure is the real one (the catalog named, or its host), not some other error
    assert "prod" in str(raised.value) or "127.0.0.1" in str(raised.value)


class _Recorder(BaseHTTPRequestHandler):
    """Answers ``GET /v1/config`` with an empty config and keeps the request's headers."""

    seen: list[Any] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        _Recorder.seen.append(self.headers)
        body = b'{"defaults": {}, "overrides": {}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def recorder() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.seen.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_header_properties_are_sent_to_the_rest_catalog(
    recorder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__URI", recorder)
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__HEADER__X_API_KEY", SECRET)
    opened = load_catalog("prod")
    assert opened.uri == "prod" and opened.kind == "rest"
    assert _Recorder.seen and _Recorder.seen[0].get("X-Api-Key") == SECRET
    assert SECRET not in repr(opened) and SECRET not in json.dumps(opened.io.properties)


def test_no_catalog_name_is_pyiceberg_s_default_catalog(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NotFound, match="No catalog given"):
        load_table("::db.zones")
    # Without default-catalog, PyIceberg's default is the catalog named "default"...
    monkeypatch.setenv("PYICEBERG_CATALOG__DEFAULT__TYPE", "hadoop")
    monkeypatch.setenv("PYICEBERG_CATALOG__DEFAULT__WAREHOUSE", str(lake.parent))
    assert {str(t) for t in load_catalog("").list_tables()} == {"db.zones", "ops.jobs"}
    assert str(load_table("::db.zones").identifier) == "db.zones"
    # ... and default-catalog names another one.
    monkeypatch.setenv("PYICEBERG_DEFAULT_CATALOG", "other")
    monkeypatch.setenv("PYICEBERG_CATALOG__OTHER__URI", f"sqlite:///{lake}")
    assert load_catalog("").uri == "other"
    assert {str(t) for t in load_catalog("").list_tables()} == {"ops.jobs"}
    with pytest.raises(NotFound):
        load_table("::db.zones")
