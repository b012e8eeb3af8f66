"""``serve-rest`` over a warehouse folder (the Hadoop layout), driven over HTTP and by PyIceberg.

The folder is the judge: what a request did is read back by listing it and by Icecore's
:class:`FilesystemCatalog` opening it directly. HadoopCatalog's rules (Iceberg Java) are the
reference for what is refused: namespace properties, custom locations, renames.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    BadRequestError,
    NamespaceNotEmptyError,
    NoSuchTableError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from icecore.catalog.filesystem import FilesystemCatalog
from tests.icecore.server.conftest import RestServer, start_server, stop_server

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)
VERSION = re.compile(r"v\d+\.metadata\.json")
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", None, "c"]})


@pytest.fixture(scope="module")
def fs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """A server over an empty warehouse folder (no catalog.db: a filesystem catalog)."""
    warehouse = tmp_path_factory.mktemp("fs_rest") / "wh"
    server = start_server(warehouse, catalog=str(warehouse))
    yield server
    stop_server(server)


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _post(server: RestServer, path: str, body: Any) -> requests.Response:
    return requests.post(f"{server.url}/v1/{path}", json=body, timeout=60)


def _create_table_body(name: str, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "schema": {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
        },
        **more,
    }


def test_namespaces_are_folders_with_hadoop_catalogs_rules(fs_server: RestServer) -> None:
    wh = fs_server.warehouse
    assert _post(fs_server, "namespaces", {"namespace": ["nsa"]}).status_code == 200
    assert (wh / "nsa").is_dir()
    nested = _post(fs_server, "namespaces", {"namespace": ["nsa", "inner"]})
    assert nested.status_code == 200 and (wh / "nsa" / "inner").is_dir()

    again = _post(fs_server, "namespaces", {"namespace": ["nsa"]})
    assert again.status_code == 409
    assert again.json()["error"]["type"] == "AlreadyExistsException"

    # HadoopCatalog keeps no namespace properties: creating with them, or setting them, fails.
    with_props = _post(fs_server, "namespaces", {"namespace": ["nsb"], "properties": {"a": "b"}})
    assert with_props.status_code == 400
    assert "keeps none" in with_props.json()["error"]["message"]
    assert not (wh / "nsb").exists()
    setting = _post(fs_server, "namespaces/nsa/properties", {"updates": {"a": "b"}})
    assert setting.status_code == 400

    loaded = requests.get(f"{fs_server.url}/v1/namespaces/nsa", timeout=60).json()
    assert loaded["properties"] == {"location": f"{wh}/nsa"}
    top = requests.get(f"{fs_server.url}/v1/namespaces", timeout=60).json()
    assert ["nsa"] in top["namespaces"]
    children = requests.get(
        f"{fs_server.url}/v1/namespaces", params={"parent": "nsa"}, timeout=60
    ).json()
    assert children["namespaces"] == [["nsa", "inner"]]

    # Not empty (a nested namespace): the spec's 409 NamespaceNotEmpty; then empty: dropped.
    refused = requests.delete(f"{fs_server.url}/v1/namespaces/nsa", timeout=60)
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "NamespaceNotEmptyException"
    assert (wh / "nsa").is_dir()
    assert requests.delete(f"{fs_server.url}/v1/namespaces/nsa%1Finner", timeout=60).ok
    assert requests.delete(f"{fs_server.url}/v1/namespaces/nsa", timeout=60).status_code == 204
    assert not (wh / "nsa").exists()


@pytest.mark.parametrize(
    "name", ["../escaped", "a/b", "", "x\x00y", ".hidden", "..", "a\\b", "c:d", "x" * 300]
)
def test_unsafe_table_names_are_refused_with_400(fs_server: RestServer, name: str) -> None:
    _post(fs_server, "namespaces", {"namespace": ["names"]})
    before = _files(fs_server.warehouse.parent)
    answer = _post(fs_server, "namespaces/names/tables", _create_table_body(name))
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "BadRequestException"
    assert "Invalid table name" in answer.json()["error"]["message"]
    assert _files(fs_server.warehouse.parent) == before  # nothing written, inside or out


@pytest.mark.parametrize("level", ["a/b", "x\x00", "-", "é$ok"])
def test_namespace_levels_outside_the_allow_list_are_refused(
    fs_server: RestServer, level: str
) -> None:
    answer = _post(fs_server, "namespaces", {"namespace": [level]})
    if level == "é$ok":  # letters of any script, '$' and '-' after the first are fine
        assert answer.status_code == 200
        assert (fs_server.warehouse / level).is_dir()
        return
    assert answer.status_code == 400, answer.text
    assert "Invalid namespace level" in answer.json()["error"]["message"]
    assert not any(p.name != "wh" for p in fs_server.warehouse.parent.iterdir())


def test_a_dot_dot_table_in_the_path_is_refused(fs_server: RestServer) -> None:
    _post(fs_server, "namespaces", {"namespace": ["dots"]})
    answer = requests.get(f"{fs_server.url}/v1/namespaces/dots/tables/%2E%2E", timeout=60)
    assert answer.status_code == 400


def test_a_custom_location_is_refused_as_hadoop_catalog_does(fs_server: RestServer) -> None:
    _post(fs_server, "namespaces", {"namespace": ["loc"]})
    # Inside the warehouse but not the table's folder (outside it is a 403: test_locations).
    elsewhere = fs_server.warehouse / "loc" / "elsewhere"
    answer = _post(
        fs_server, "namespaces/loc/tables", _create_table_body("t", location=str(elsewhere))
    )
    assert answer.status_code == 400
    assert str(fs_server.warehouse / "loc" / "t") in answer.json()["error"]["message"]
    assert not elsewhere.exists() and not (fs_server.warehouse / "loc" / "t").exists()
    # The table's own folder, spelled as a URI, is where it goes: accepted.
    own = f"file://{fs_server.warehouse}/loc/t"
    assert _post(fs_server, "namespaces/loc/tables", _create_table_body("t", location=own)).ok


@pytest.mark.slow
def test_concurrent_creates_of_one_table_exactly_one_wins(fs_server: RestServer) -> None:
    _post(fs_server, "namespaces", {"namespace": ["race"]})
    answers: list[int] = []
    barrier = threading.Barrier(6)

    def create() -> None:
        barrier.wait()
        answers.append(
            _post(fs_server, "namespaces/race/tables", _create_table_body("t")).status_code
        )

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [200, 409, 409, 409, 409, 409]
    metadata = fs_server.warehouse / "race" / "t" / "metadata"
    assert sorted(p.name for p in metadata.iterdir() if not p.name.startswith(".")) == [
        "v1.metadata.json",
        "version-hint.text",
    ]
    assert (metadata / "version-hint.text").read_text() == "1"


def test_pyiceberg_creates_writes_drops_and_registers(fs_server: RestServer) -> None:
    peer = RestCatalog("peer", uri=fs_server.url)
    peer.create_namespace("py")
    table = peer.create_table("py.events", SCHEMA)
    table.append(ROWS)
    table_dir = fs_server.warehouse / "py" / "events"
    assert (table_dir / "metadata" / "v1.metadata.json").is_file()

    # Icecore opening the folder directly sees what PyIceberg wrote through the server.
    direct = FilesystemCatalog(str(fs_server.warehouse)).load_table("py.events")
    assert direct.metadata_location == peer.load_table("py.events").metadata_location
    read = direct.scan().plan().to_arrow()
    assert sorted(read["id"].to_pylist()) == [1, 2, 3]
    assert peer.list_tables("py") == [("py", "events")]

    # Renames are refused with one sentence, as HadoopCatalog refuses them.
    with pytest.raises(BadRequestError, match="cannot be renamed"):
        peer.rename_table("py.events", "py.other")

    # A drop without purge touches no file: the metadata folder is only moved aside.
    before = _files(table_dir)
    peer.drop_table("py.events")
    with pytest.raises(NoSuchTableError):
        peer.load_table("py.events")
    after = _files(table_dir)
    (aside,) = {n.split("/")[1] for n in after if n.startswith("metadata/dropped-")}

    def moved(name: str) -> str:
        """Only the version files and the hint move (into the aside folder)."""
        folder, _, base = name.rpartition("/")
        if folder == "metadata" and (base == "version-hint.text" or VERSION.fullmatch(base)):
            return f"metadata/{aside}/{base}"
        return name

    assert after == {moved(name): b for name, b in before.items()}
    assert any(n.startswith("data/") for n in after) and any(n.endswith(".avro") for n in after)
    assert not FilesystemCatalog(str(fs_server.warehouse)).list_tables(("py",))

    # ...and it can be registered back (its location is this identifier's folder).
    current = max(
        (table_dir / "metadata" / aside).glob("v*.metadata.json"),
        key=lambda p: int(p.name[1:].split(".")[0]),
    )
    registered = peer.register_table("py.events", str(current))
    assert sorted(registered.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]

    # A metadata file written for another place cannot be registered here.
    peer.create_namespace("py2")
    restored = table_dir / "metadata" / current.name  # registering moved it back
    assert restored.is_file() and not current.exists()
    answer = _post(
        fs_server, "namespaces/py2/register", {"name": "copy", "metadata-location": str(restored)}
    )
    assert answer.status_code == 400
    assert str(fs_server.warehouse / "py2" / "copy") in answer.json()["error"]["message"]


def test_a_namespace_holding_a_table_is_not_empty(fs_server: RestServer) -> None:
    peer = RestCatalog("peer", uri=fs_server.url)
    peer.create_namespace("full")
    peer.create_table("full.t", SCHEMA)
    with pytest.raises(NamespaceNotEmptyError):
        peer.drop_namespace("full")
    assert (fs_server.warehouse / "full" / "t" / "metadata").is_dir()


def test_stage_create_commits_a_version_one_spark_reads(fs_server: RestServer) -> None:
    peer = RestCatalog("peer", uri=fs_server.url)
    peer.create_namespace("staged")
    with peer.create_table_transaction("staged.t", SCHEMA) as tx:
        tx.append(ROWS)
    metadata = fs_server.warehouse / "staged" / "t" / "metadata"
    assert (metadata / "v1.metadata.json").is_file()
    assert (metadata / "version-hint.text").read_text() == "1"
    direct = FilesystemCatalog(str(fs_server.warehouse)).load_table("staged.t")
    assert sorted(direct.scan().plan().to_arrow()["id"].to_pylist()) == [1, 2, 3]


def _purge_case(server: RestServer, ns: str) -> tuple[Path, Path, dict[str, bytes]]:
    """Tables ``keep`` and ``gone`` in ``ns``; ``gone`` also holds one of ``keep``'s files.

    Returns the two table folders and ``keep``'s files before the purge.
    """
    peer = RestCatalog("peer", uri=server.url)
    peer.create_namespace(ns)
    keep = peer.create_table(f"{ns}.keep", SCHEMA)
    keep.append(ROWS)
    gone = peer.create_table(f"{ns}.gone", SCHEMA)
    gone.append(pa.table({"id": pa.array([7], pa.int64()), "name": ["z"]}))
    gone.append(pa.table({"id": pa.array([8], pa.int64()), "name": ["y"]}))
    with gone.update_schema() as update:
        update.add_column("note", StringType())
    # A file of ``keep`` added to ``gone``: reachable from gone's metadata, but not its own.
    borrowed = [task.file.file_path for task in keep.scan().plan_files()]
    gone.refresh().add_files(borrowed)
    keep_dir = Path(keep.location().removeprefix("file://").removeprefix("file:"))
    gone_dir = Path(gone.refresh().location().removeprefix("file://").removeprefix("file:"))
    return keep_dir, gone_dir, _files(keep_dir)


def test_purge_deletes_the_tables_files_and_leaves_another_tables_alone(
    fs_server: RestServer,
) -> None:
    keep_dir, gone_dir, keep_before = _purge_case(fs_server, "purge")
    listed = _files(gone_dir)
    assert any(name.startswith("data/") for name in listed)
    assert any(name.endswith(".avro") for name in listed)

    url = f"{fs_server.url}/v1/namespaces/purge/tables/gone"
    unclear = requests.delete(url, params={"purgeRequested": "yes"}, timeout=60)
    assert unclear.status_code == 400 and _files(gone_dir) == listed  # refused, nothing done
    answer = requests.delete(url, params={"purgeRequested": "true"}, timeout=60)
    assert answer.status_code == 204
    assert not gone_dir.exists()  # every file was reachable: nothing is left, folder included
    assert _files(keep_dir) == keep_before
    kept = RestCatalog("peer", uri=fs_server.url).load_table("purge.keep").scan().to_arrow()
    assert sorted(kept["id"].to_pylist()) == [1, 2, 3]
    # The namespace holds only ``keep`` now (no leftover folder posing as a namespace).
    assert sorted(p.name for p in (fs_server.warehouse / "purge").iterdir()) == ["keep"]


def test_purge_over_a_sql_catalog_and_drop_without_purge(rest_server: RestServer) -> None:
    keep_dir, gone_dir, keep_before = _purge_case(rest_server, "sqlpurge")
    peer = RestCatalog("peer", uri=rest_server.url)
    peer.create_table("sqlpurge.plain", SCHEMA).append(ROWS)
    plain_dir = gone_dir.parent / "plain"
    plain_before = _files(plain_dir)

    peer.drop_table("sqlpurge.plain")  # no purge: no file touched
    assert _files(plain_dir) == plain_before
    peer.purge_table("sqlpurge.gone")
    with pytest.raises(NoSuchTableError):
        peer.load_table("sqlpurge.gone")
    assert not gone_dir.exists()
    assert _files(keep_dir) == keep_before


def test_purge_of_a_table_registered_over_others_leaves_their_files(
    rest_server: RestServer,
) -> None:
    """A table registered with its namespace's folder as its location purges no table in it.

    The remaining tables' folders are protected, not only what lies outside the location.
    (The warehouse itself is no table's location: test_locations.)
    """
    peer = RestCatalog("peer", uri=rest_server.url)
    peer.create_namespace("broad")
    keep = peer.create_table("broad.keep", SCHEMA)
    keep.append(ROWS)
    keep_dir = Path(keep.location().removeprefix("file://").removeprefix("file:"))
    keep_before = _files(keep_dir)
    root = keep_dir.parent
    metadata = requests.get(f"{rest_server.url}/v1/namespaces/broad/tables/keep", timeout=60)
    crafted = dict(metadata.json()["metadata"], location=f"file:{root}")
    target = root / "crafted" / "v1.metadata.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(crafted))
    registered = _post(
        rest_server,
        "namespaces/broad/register",
        {"name": "wide", "metadata-location": f"file:{target}"},
    )
    assert registered.status_code == 200, registered.text

    answer = requests.delete(
        f"{rest_server.url}/v1/namespaces/broad/tables/wide",
        params={"purgeRequested": "true"},
        timeout=60,
    )
    assert answer.status_code == 204
    assert _files(keep_dir) == keep_before
    assert sorted(peer.load_table("broad.keep").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert not target.exists()  # its own metadata file, under no other table, went
