"""A REST writer cannot place, reference or purge storage outside what the server serves.

Each attack of issue 29 (finding 1) is run against a real ``serve-rest`` over a SQLite catalog
and over a warehouse folder, and judged by its effect: the victim file outside the
warehouse still exists, a folder outside holds nothing new, a listener on 127.0.0.1 receives
no request. Refusals are one sentence (403 ``ForbiddenException``, or 400 for what is no
location at all). Normal use (PyIceberg creating, appending, purging) is covered by the other
server tests, which still pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from icecore.server.errors import RestError
from icecore.server.locations import ServedLocations
from tests.conftest import REPO
from tests.icecore.server.conftest import RestServer, start_server, stop_server

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}


@pytest.fixture(scope="module")
def fs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """A server over a warehouse folder (no catalog.db: a filesystem catalog)."""
    warehouse = tmp_path_factory.mktemp("loc_fs") / "wh"
    warehouse.mkdir()
    server = start_server(warehouse, catalog=str(warehouse))
    yield server
    stop_server(server)


@pytest.fixture(params=["sqlite", "folder"])
def server(
    request: pytest.FixtureRequest, rest_server: RestServer, fs_server: RestServer
) -> RestServer:
    """Each test on the SQLite catalog and on the warehouse folder."""
    return rest_server if request.param == "sqlite" else fs_server


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder outside every warehouse holding a file a hostile writer wants gone."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "precious.txt").write_bytes(b"do not delete")
    return folder


class Listener:
    """An HTTP server on 127.0.0.1 recording every request it receives (and answering 404)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                seen.append(f"{self.command} {self.path}")
                self.send_error(404)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _record

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


def _ns(server: RestServer) -> str:
    """A fresh namespace on ``server``."""
    name = f"n{uuid.uuid4().hex[:8]}"
    answer = requests.post(f"{server.url}/v1/namespaces", json={"namespace": [name]}, timeout=30)
    assert answer.status_code == 200, answer.text
    return name


def _refused(answer: requests.Response, *codes: int) -> str:
    """The refusal's message, checked to be one sentence with one of ``codes``."""
    assert answer.status_code in (codes or (403,)), answer.text
    message = answer.json()["error"]["message"]
    assert "\n" not in message and "Traceback" not in message and message.endswith(".")
    return str(message)


def _create(server: RestServer, ns: str, name: str, **more: Any) -> requests.Response:
    body = {"name": name, "schema": SCHEMA_JSON, **more}
    return requests.post(f"{server.url}/v1/namespaces/{ns}/tables", json=body, timeout=30)


def _commit(server: RestServer, ns: str, name: str, updates: list[Any]) -> requests.Response:
    return requests.post(
        f"{server.url}/v1/namespaces/{ns}/tables/{name}", json={"updates": updates}, timeout=30
    )


def _purge(server: RestServer, ns: str, name: str) -> requests.Response:
    return requests.delete(
        f"{server.url}/v1/namespaces/{ns}/tables/{name}",
        params={"purgeRequested": "true"},
        timeout=60,
    )


def _table(server: RestServer, ns: str, name: str) -> dict[str, Any]:
    answer = requests.get(f"{server.url}/v1/namespaces/{ns}/tables/{name}", timeout=30)
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["metadata"])


def _snapshot_update(metadata: dict[str, Any], manifest_list: str) -> list[dict[str, Any]]:
    """An append snapshot whose manifest list is ``manifest_list``, made current."""
    sid = int(uuid.uuid4().int % (1 << 62))
    snapshot = {
        "snapshot-id": sid,
        "timestamp-ms": int(time.time() * 1000),
        "sequence-number": int(metadata.get("last-sequence-number", 0)) + 1,
        "manifest-list": manifest_list,
        "summary": {"operation": "append"},
        "schema-id": metadata.get("current-schema-id", 0),
    }
    if metadata.get("current-snapshot-id") not in (None, -1):
        snapshot["parent-snapshot-id"] = metadata["current-snapshot-id"]
    return [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": sid},
    ]


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# Where a table lives ------------------------------------------------------------------------


def test_create_at_an_outside_location_then_purge_leaves_the_victim(
    rest_server: RestServer, victim: Path
) -> None:
    """The issue's attack on a SQL catalog: create at the victim's folder, reference, purge."""
    ns = _ns(rest_server)
    answer = _create(rest_server, ns, "t", location=str(victim))
    _commit(rest_server, ns, "t", _snapshot_update({}, str(victim / "precious.txt")))
    _purge(rest_server, ns, "t")
    assert (victim / "precious.txt").read_bytes() == b"do not delete"
    assert _files(victim) == {"precious.txt": b"do not delete"}  # no metadata written there
    _refused(answer)


def test_set_location_out_then_purge_leaves_the_victim(server: RestServer, victim: Path) -> None:
    """The issue's attack on both catalogs: move the table to the victim's folder, purge."""
    ns = _ns(server)
    assert _create(server, ns, "t").status_code == 200
    before = _table(server, ns, "t")
    moved = _commit(server, ns, "t", [{"action": "set-location", "location": str(victim)}])
    now = _table(server, ns, "t")
    _commit(server, ns, "t", _snapshot_update(now, str(victim / "precious.txt")))
    _purge(server, ns, "t")
    assert (victim / "precious.txt").read_bytes() == b"do not delete"
    assert _files(victim) == {"precious.txt": b"do not delete"}
    assert now["location"] == before["location"]
    _refused(moved)


def test_a_transaction_cannot_move_a_table_out(rest_server: RestServer, victim: Path) -> None:
    ns = _ns(rest_server)
    assert _create(rest_server, ns, "t").status_code == 200
    change = {
        "identifier": {"namespace": [ns], "name": "t"},
        "requirements": [],
        "updates": [{"action": "set-location", "location": str(victim)}],
    }
    answer = requests.post(
        f"{rest_server.url}/v1/transactions/commit", json={"table-changes": [change]}, timeout=30
    )
    _refused(answer)
    assert _table(rest_server, ns, "t")["location"] != str(victim)


def test_a_staged_create_cannot_place_the_table_outside(
    rest_server: RestServer, victim: Path, listener: Listener
) -> None:
    """The create-by-commit path (PyIceberg's create_table_transaction): same bounds."""
    ns = _ns(rest_server)
    answers = []
    for i, (key, value) in enumerate(
        (
            ("location", str(victim)),
            ("location", f"{listener.url}/t"),
            ("write.metadata.path", str(victim)),
        )
    ):
        updates: list[dict[str, Any]] = [
            {"action": "assign-uuid", "uuid": str(uuid.uuid4())},
            {"action": "upgrade-format-version", "format-version": 2},
            {"action": "add-schema", "schema": SCHEMA_JSON, "last-column-id": 1},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
            {"action": "set-default-spec", "spec-id": -1},
            {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
            {"action": "set-default-sort-order", "sort-order-id": -1},
        ]
        if key == "location":
            updates.append({"action": "set-location", "location": value})
        else:
            updates.append({"action": "set-properties", "updates": {key: value}})
        answers.append(
            requests.post(
                f"{rest_server.url}/v1/namespaces/{ns}/tables/s{i}",
                json={"requirements": [{"type": "assert-create"}], "updates": updates},
                timeout=30,
            )
        )
    assert _files(victim) == {"precious.txt": b"do not delete"}
    assert listener.requests == []
    for answer in answers:
        _refused(answer)


def test_a_snapshot_naming_a_victim_file_is_refused_and_purge_keeps_it(
    server: RestServer, victim: Path
) -> None:
    ns = _ns(server)
    assert _create(server, ns, "t").status_code == 200
    metadata = _table(server, ns, "t")
    for target in (str(victim / "precious.txt"), f"file://{victim}/precious.txt"):
        _refused(_commit(server, ns, "t", _snapshot_update(metadata, target)))
    assert _table(server, ns, "t").get("snapshots", []) == []
    assert _purge(server, ns, "t").status_code == 204
    assert _files(victim) == {"precious.txt": b"do not delete"}


def test_statistics_naming_a_victim_file_are_refused(server: RestServer, victim: Path) -> None:
    ns = _ns(server)
    catalog = RestCatalog("peer", uri=server.url)
    table = catalog.create_table(f"{ns}.t", SCHEMA)
    table.append(ROWS)
    sid = catalog.load_table(f"{ns}.t").metadata.current_snapshot_id
    path = str(victim / "precious.txt")
    stats = {
        "snapshot-id": sid,
        "statistics-path": path,
        "file-size-in-bytes": 13,
        "file-footer-size-in-bytes": 1,
        "blob-metadata": [],
    }
    pstats = {"snapshot-id": sid, "statistics-path": path, "file-size-in-bytes": 13}
    _refused(
        _commit(
            server, ns, "t", [{"action": "set-statistics", "snapshot-id": sid, "statistics": stats}]
        )
    )
    _refused(
        _commit(
            server,
            ns,
            "t",
            [{"action": "set-partition-statistics", "partition-statistics": pstats}],
        )
    )
    assert _purge(server, ns, "t").status_code == 204
    assert _files(victim) == {"precious.txt": b"do not delete"}


@pytest.mark.parametrize(
    "key", ["write.metadata.path", "write.data.path", "write.object-storage.path"]
)
def test_write_paths_outside_are_refused_and_nothing_is_written_there(
    server: RestServer, tmp_path: Path, listener: Listener, key: str
) -> None:
    """A folder outside or an internal URL as a write path: nothing written, nothing fetched."""
    ns = _ns(server)
    outside = tmp_path / "outside"
    outside.mkdir()
    answers = [
        _create(server, ns, f"c{i}", properties={key: target})
        for i, target in enumerate((str(outside), f"{listener.url}/meta"))
    ]
    assert _create(server, ns, "t").status_code == 200
    for target in (str(outside), f"{listener.url}/meta"):
        update = {"action": "set-properties", "updates": {key: target}}
        answers.append(_commit(server, ns, "t", [update]))
        # A later commit of the table writes nowhere outside either.
        later = {"action": "set-properties", "updates": {"note": "x"}}
        _commit(server, ns, "t", [later])
    assert list(outside.iterdir()) == []
    assert listener.requests == []
    for answer in answers:
        _refused(answer)
    assert key not in _table(server, ns, "t").get("properties", {})


def test_register_reads_no_file_outside(
    server: RestServer, tmp_path: Path, listener: Listener
) -> None:
    """Register fetches no URL and tells nothing about whether an outside file exists."""
    ns = _ns(server)
    exists = tmp_path / "v1.metadata.json"
    exists.write_text("{}")
    answers = [
        requests.post(
            f"{server.url}/v1/namespaces/{ns}/register",
            json={"name": "r", "metadata-location": where},
            timeout=30,
        )
        for where in (str(exists), str(tmp_path / "missing.metadata.json"), f"{listener.url}/m")
    ]
    assert listener.requests == []
    messages = [_refused(a) for a in answers]
    assert messages[0].replace(str(exists), "X") == messages[1].replace(
        str(tmp_path / "missing.metadata.json"), "X"
    )
    assert listener.requests == []


def test_register_of_metadata_placing_the_table_outside_is_refused(
    rest_server: RestServer, victim: Path
) -> None:
    """A metadata file inside the warehouse whose location or manifest list lies outside."""
    ns = _ns(rest_server)
    assert _create(rest_server, ns, "src").status_code == 200
    metadata = _table(rest_server, ns, "src")
    crafted = dict(metadata, location=str(victim))
    where = rest_server.warehouse / ns / "crafted.metadata.json"
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps(crafted))
    answer = requests.post(
        f"{rest_server.url}/v1/namespaces/{ns}/register",
        json={"name": "r", "metadata-location": str(where)},
        timeout=30,
    )
    _refused(answer)
    _purge(rest_server, ns, "r")
    assert _files(victim) == {"precious.txt": b"do not delete"}


@pytest.fixture
def spellings(rest_server: RestServer) -> Iterator[tuple[Path, list[str]]]:
    """Spellings of a folder outside the SQLite server's warehouse, and that folder."""
    warehouse = rest_server.warehouse
    outside = warehouse.parent / f"out-{uuid.uuid4().hex[:6]}"
    outside.mkdir()
    evil = Path(f"{warehouse}-evil")
    link = warehouse / f"link-{uuid.uuid4().hex[:6]}"
    link.symlink_to(outside, target_is_directory=True)
    name = outside.name
    yield (
        outside,
        [
            str(outside),
            f"{warehouse}/../{name}",
            f"{warehouse}//..//{name}",
            f"{warehouse}/./../{name}",
            f"{warehouse}/x/../../{name}",
            f"file:{warehouse}/../{name}",
            f"file://{warehouse}/../{name}",
            f"file:///{warehouse}/../{name}",
            f"file://somehost{warehouse}/../{name}",
            f"{warehouse}/%2e%2e/{name}",
            f"{warehouse}/%2E%2E/{name}",
            f"{evil}/t",
            str(warehouse),
            f"{warehouse}/",
            f"file:{warehouse}/.",
            str(link),
            f"{link}/deeper",
            f"{warehouse}/../{warehouse.name}/../{name}",
            "relative/folder",
            "ftp://127.0.0.1/x",
            "memory://x/y",
            "zip://x::file:///tmp/y.zip",
            "http://http://127.0.0.1:1/x",
            f"{warehouse}/a\x00b",
        ],
    )
    link.unlink()
    shutil.rmtree(outside)


def test_no_spelling_of_an_outside_folder_escapes(
    rest_server: RestServer, spellings: tuple[Path, list[str]]
) -> None:
    outside, attempts = spellings
    ns = _ns(rest_server)
    assert _create(rest_server, ns, "base").status_code == 200
    for i, location in enumerate(attempts):
        _refused(_create(rest_server, ns, f"t{i}", location=location), 400, 403)
        moved = _commit(rest_server, ns, "base", [{"action": "set-location", "location": location}])
        _refused(moved, 400, 403)
    assert list(outside.iterdir()) == []
    # Spelled inside, a location is accepted however it is written.
    inside = f"file://{rest_server.warehouse}//{ns}/./kept/"
    assert _create(rest_server, ns, "kept", location=inside).status_code == 200


def test_namespace_locations_and_default_placements_stay_inside(
    rest_server: RestServer, victim: Path
) -> None:
    ns = _ns(rest_server)
    body = {"namespace": [f"{ns}x"], "properties": {"location": str(victim)}}
    _refused(requests.post(f"{rest_server.url}/v1/namespaces", json=body, timeout=30))
    props = {"updates": {"location": str(victim)}, "removals": []}
    _refused(
        requests.post(f"{rest_server.url}/v1/namespaces/{ns}/properties", json=props, timeout=30)
    )
    # A name that would place the server's own default outside the warehouse.
    escape = os.path.relpath(victim, rest_server.warehouse / ns)
    _refused(_create(rest_server, ns, escape), 400, 403)
    _refused(_create(rest_server, ns, "../../../x"), 400, 403)
    assert _files(victim) == {"precious.txt": b"do not delete"}
    assert not (rest_server.warehouse.parent.parent / "x").exists()


def test_a_new_table_stays_below_its_namespace_location(rest_server: RestServer) -> None:
    ns = _ns(rest_server)
    home = rest_server.warehouse / f"{ns}-home"
    props = {"updates": {"location": str(home)}, "removals": []}
    answer = requests.post(
        f"{rest_server.url}/v1/namespaces/{ns}/properties", json=props, timeout=30
    )
    assert answer.status_code == 200, answer.text
    elsewhere = rest_server.warehouse / f"{ns}-elsewhere"
    _refused(_create(rest_server, ns, "t", location=str(elsewhere)))
    assert not elsewhere.exists()
    made = _create(rest_server, ns, "t")
    assert made.status_code == 200 and made.json()["metadata"]["location"] == str(home / "t")


# Purge ---------------------------------------------------------------------------------------


def test_purge_through_a_symlink_in_the_table_folder_deletes_nothing(
    server: RestServer, victim: Path
) -> None:
    """The table's data folder swapped for a link to the victim: refused, the table stays."""
    ns = _ns(server)
    catalog = RestCatalog("peer", uri=server.url)
    table = catalog.create_table(f"{ns}.t", SCHEMA)
    table.append(ROWS)
    folder = Path(table.location().removeprefix("file://").removeprefix("file:"))
    for f in (folder / "data").iterdir():  # the victim holds files of the same names
        shutil.copy(f, victim / f.name)
    shutil.rmtree(folder / "data")
    (folder / "data").symlink_to(victim, target_is_directory=True)
    before = _files(victim)
    metadata_before = _files(folder / "metadata")

    message = _refused(_purge(server, ns, "t"))
    assert "symlink" in message
    assert _files(victim) == before and len(before) > 1
    assert _files(folder / "metadata") == metadata_before  # nothing deleted at all
    assert catalog.load_table(f"{ns}.t").metadata.current_snapshot_id is not None


def test_purge_of_a_table_around_another_leaves_the_inner_table(
    rest_server: RestServer,
) -> None:
    """Two tables, one's location under the other's: purging the outer keeps the inner whole.

    The inner table keeps its metadata elsewhere (``write.metadata.path``), so its location
    is known from its metadata, not from where its metadata file lies.
    """
    ns = _ns(rest_server)
    catalog = RestCatalog("peer", uri=rest_server.url)
    outer = catalog.create_table(f"{ns}.outer", SCHEMA)
    outer_dir = outer.location().removeprefix("file://").removeprefix("file:")
    inner = catalog.create_table(
        f"{ns}.inner",
        SCHEMA,
        location=f"{outer_dir}/inner",
        properties={"write.metadata.path": f"{rest_server.warehouse}/{ns}/inner-meta"},
    )
    inner.append(ROWS)
    inner_dir = Path(outer_dir) / "inner"
    inner_before = _files(inner_dir)
    manifest_list = catalog.load_table(f"{ns}.inner").metadata.snapshots[0].manifest_list
    metadata = _table(rest_server, ns, "outer")
    # The outer table claims the inner one's snapshot, then is purged.
    assert _commit(rest_server, ns, "outer", _snapshot_update(metadata, manifest_list)).ok
    assert _purge(rest_server, ns, "outer").status_code == 204
    assert _files(inner_dir) == inner_before
    assert catalog.load_table(f"{ns}.inner").scan().to_arrow().num_rows == 3
    # The inner table lies inside the outer's folder, not the other way round: its purge
    # is its own (the outer is gone now).
    assert _purge(rest_server, ns, "inner").status_code == 204
    assert not any(p.is_file() for p in inner_dir.rglob("*"))


def test_a_sql_catalog_keeps_out_of_hadoop_tables_in_its_warehouse(
    rest_server: RestServer,
) -> None:
    """The demo's layout: a Hadoop-layout table inside the SQL warehouse is not this catalog's.

    A table placed on it by namespace and table names (the server's default placement) is
    refused; one placed around it by location may name its data file, and its purge leaves
    that file alone.
    """
    ns = _ns(rest_server)
    hadoop = rest_server.warehouse / ns / "db" / "events"
    (hadoop / "metadata").mkdir(parents=True)
    (hadoop / "metadata" / "version-hint.text").write_text("1")
    (hadoop / "metadata" / "v1.metadata.json").write_text("{}")
    (hadoop / "data").mkdir()
    (hadoop / "data" / "f.parquet").write_bytes(b"rows")
    before = _files(hadoop)
    on = requests.post(
        f"{rest_server.url}/v1/namespaces", json={"namespace": [ns, "db"]}, timeout=30
    )
    assert on.status_code == 200, on.text
    placed = _create(rest_server, f"{ns}\x1fdb", "events")
    around = _create(rest_server, ns, "around", location=str(rest_server.warehouse / ns / "db"))
    assert around.status_code == 200, around.text
    update = _snapshot_update(around.json()["metadata"], str(hadoop / "data" / "f.parquet"))
    assert _commit(rest_server, ns, "around", update).ok
    purged = _purge(rest_server, ns, "around")
    assert _files(hadoop) == before
    assert "Hadoop-layout" in _refused(placed)
    assert purged.status_code == 204  # its own files went, the Hadoop table's stayed


# --allow-location -------------------------------------------------------------------------------


def test_allow_location_names_an_extra_root(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    server = start_server(tmp_path / "wh", "--allow-location", f"file://{extra}/")
    try:
        ns = _ns(server)
        assert _create(server, ns, "t", location=f"{extra}/t").status_code == 200
        assert (extra / "t" / "metadata").is_dir()
        _refused(_create(server, ns, "u", location=f"{extra}-evil/u"))
        assert not Path(f"{extra}-evil").exists()
    finally:
        stop_server(server)


@pytest.mark.parametrize(
    "prefix", ["http://127.0.0.1:1/x", "relative/folder", "memory://x", "gs://lake/wh"]
)
def test_an_unusable_allow_location_stops_the_server_with_one_sentence(
    tmp_path: Path, prefix: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "icecore", "serve-rest", str(tmp_path), "--allow-location", prefix],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--allow-location" in lines[0], done.stderr


# The check itself, on object-store spellings no local server test reaches ------------------


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("s3://lake/wh/t", True),
        ("s3a://lake/wh/t/", True),
        ("s3n://lake/wh/ns/t/metadata/x.avro", True),
        ("s3://lake/wh", False),  # the root itself is no table's place
        ("s3://lake/wh-evil/t", False),
        ("s3://other/wh/t", False),
        ("gs://lake/wh/t", False),
        ("s3://lake//wh/t", None),  # an empty segment is a key of its own on S3: 400
        ("s3://lake/wh/../t", None),
        ("s3://lake/wh/%2e%2e/t", None),  # decoded, it climbs out
        ("s3://lake/wh/t::file:///etc/passwd", None),
        ("S3://lake/wh/t", False),
    ],
)
def test_object_store_paths_are_compared_by_key(path: str, inside: bool | None) -> None:
    served = ServedLocations(("s3://lake/wh/",))
    if inside is None:
        with pytest.raises(RestError) as refused:
            served.contains(path)
        assert refused.value.code == 400
    else:
        assert served.contains(path) is inside
