"""Reads a table's metadata can make: bounded, local or S3 only, one sentence when refused.

Issue 29, Deliver 2 and 3, tried as a hostile writer of a table would: a metadata file or
manifest list naming ``/dev/zero`` or an ``http://`` URL, a ~1 KB manifest whose first Avro
block declares billions of objects. Judged by effect: the process answers with exit 1 and
one line under an address-space limit (``ulimit -v``) instead of growing until it dies or
aborting in polars' allocator, and a listener on 127.0.0.1 receives no connection.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest

import icecore
from icecore.cli import main
from icecore.errors import IcecoreError
from icecore.io import FileIO
from tests.icecore.expressions.test_arrow_summaries import MANIFEST_FILE
from tests.icecore.test_avro import forge_first_count
from tests.icecore.test_manifest import SPEC_FIELDS, TABLE_SCHEMA, _entry, _write_manifest

REPO = Path(__file__).resolve().parents[2]

ADDRESS_SPACE = 3 << 30
"""The child's RLIMIT_AS (3 GiB): room for Python, Arrow and polars (~1.5 GiB mapped), and far
less than a forged block count makes polars ask for (8-32 GB)."""

FORGED_COUNTS = [100_000_000, 4_000_000_000]
"""Objects the first block of the forged manifest declares (issue 29: 1e8 to 4e9)."""


def _write_table(folder: Path, manifest_list: str | None = None, **snapshot: Any) -> Path:
    """A v3 table written by hand: a metadata.json, a manifest list, one manifest.

    ``manifest_list`` replaces the snapshot's list path (a hostile writer's choice).
    Returns the metadata.json.
    """
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "m0.avro"
    length = _write_manifest(
        manifest, [_entry(1, f"{folder}/data/a.parquet", 5, snapshot_id=1, seq=1, file_seq=1)]
    )
    buf = io.BytesIO()
    record = {
        "manifest_path": str(manifest),
        "manifest_length": length,
        "partition_spec_id": 0,
        "content": 0,
        "sequence_number": 1,
        "min_sequence_number": 1,
        "added_snapshot_id": 1,
        "added_files_count": 1,
        "existing_files_count": 0,
        "deleted_files_count": 0,
        "added_rows_count": 5,
        "existing_rows_count": 0,
        "deleted_rows_count": 0,
        "partitions": None,
    }
    fastavro.writer(buf, fastavro.parse_schema(MANIFEST_FILE), [record], codec="deflate")
    (folder / "snap-1.avro").write_bytes(buf.getvalue())
    metadata = {
        "format-version": 3,
        "table-uuid": str(uuid.uuid4()),
        "location": str(folder),
        "last-sequence-number": 1,
        "last-updated-ms": 1_700_000_000_000,
        "last-column-id": 2,
        "current-schema-id": 0,
        "schemas": [TABLE_SCHEMA],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": SPEC_FIELDS}],
        "last-partition-id": 1000,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": 1,
        "next-row-id": 5,
        "snapshots": [
            {
                "snapshot-id": 1,
                "sequence-number": 1,
                "timestamp-ms": 1_700_000_000_000,
                "manifest-list": manifest_list or str(folder / "snap-1.avro"),
                "summary": {"operation": "append"},
                "schema-id": 0,
                "first-row-id": 0,
                "added-rows": 5,
                **snapshot,
            }
        ],
        "snapshot-log": [],
        "metadata-log": [],
        "refs": {"main": {"snapshot-id": 1, "type": "branch"}},
    }
    path = folder / "v1.metadata.json"
    path.write_text(json.dumps(metadata))
    return path


_LIMIT = (
    "import resource, runpy, sys; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))\n"
)
"""The start of every child's code: the address-space limit."""


def _run_limited(*code_and_args: str) -> subprocess.CompletedProcess[str]:
    """Run Python in a child whose address space is :data:`ADDRESS_SPACE` (``ulimit -v``)."""
    return subprocess.run(
        [sys.executable, "-c", _LIMIT + code_and_args[0], *code_and_args[1:]],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "ICECORE_CACHE_DIR": "off", "POLARS_MAX_THREADS": "1"},
        timeout=120,
        check=False,
    )


_CLI = "sys.argv = ['icecore', *sys.argv[1:]]; runpy.run_module('icecore', run_name='__main__')"


def _one_sentence(result: subprocess.CompletedProcess[str]) -> str:
    """The child's only stderr line, after asserting it exited 1 with just that line."""
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize(
    ("count", "command"),
    [(FORGED_COUNTS[0], ["inspect", "{}", "files"]), (FORGED_COUNTS[-1], ["plan", "{}"])],
)
def test_a_forged_block_count_is_one_sentence_from_the_cli(
    tmp_path: Path, count: int, command: list[str]
) -> None:
    metadata = _write_table(tmp_path / "t")
    manifest = tmp_path / "t" / "m0.avro"
    manifest.write_bytes(forge_first_count(manifest.read_bytes(), count))
    line = _one_sentence(_run_limited(_CLI, *(a.format(metadata) for a in command)))
    assert str(manifest) in line and str(count) in line, line


def test_a_forged_block_count_is_an_icecore_error_in_process(tmp_path: Path) -> None:
    metadata = _write_table(tmp_path / "t")
    manifest = tmp_path / "t" / "m0.avro"
    manifest.write_bytes(forge_first_count(manifest.read_bytes(), FORGED_COUNTS[-1]))
    table = icecore.load_table(str(metadata))
    with pytest.raises(IcecoreError, match=str(FORGED_COUNTS[-1])):
        table.scan().plan()


def test_the_hand_written_table_reads(tmp_path: Path) -> None:
    """The unforged table plans its one file (so the refusals above are the forgery's)."""
    table = icecore.load_table(str(_write_table(tmp_path / "t")))
    assert [t.file_path for t in table.scan().plan().tasks] == [f"{tmp_path}/t/data/a.parquet"]


def test_a_manifest_list_naming_dev_zero_is_one_sentence(tmp_path: Path) -> None:
    metadata = _write_table(tmp_path / "t", manifest_list="/dev/zero")
    line = _one_sentence(_run_limited(_CLI, "inspect", str(metadata), "manifests"))
    assert "/dev/zero" in line and "regular file" in line


def test_a_metadata_file_linked_to_dev_zero_is_one_sentence(tmp_path: Path) -> None:
    link = tmp_path / "v1.metadata.json"
    link.symlink_to("/dev/zero")
    line = _one_sentence(_run_limited(_CLI, "history", str(link)))
    assert str(link) in line and "regular file" in line


def test_register_of_dev_zero_is_one_sentence(tmp_path: Path) -> None:
    """Registering ``/dev/zero`` (the catalog reads the file first) ends at once, bounded."""
    (tmp_path / "wh" / "db").mkdir(parents=True)
    register = """
import icecore
from icecore.catalog.filesystem import FilesystemCatalog
from icecore.catalog.filesystem_admin import FilesystemCatalogAdmin
from icecore.identifier import TableIdentifier

admin = FilesystemCatalogAdmin(FilesystemCatalog(sys.argv[1]))
try:
    admin.register_table(TableIdentifier(("db",), "t"), "/dev/zero")
except icecore.IcecoreError as e:
    print(e, file=sys.stderr)
    sys.exit(1)
"""
    line = _one_sentence(_run_limited(register, str(tmp_path / "wh")))
    assert "/dev/zero" in line


def test_the_cli_answers_memory_error_with_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever ran out of memory, the CLI says so in one line and exits 1."""

    def exhausted(*_: Any, **__: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(icecore.cli, "load_table", exhausted)
    assert main(["history", "/anything.metadata.json"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "memory" in lines[0].lower(), lines


# ---------------------------------------------------------------------------------------
# A listener on 127.0.0.1 receives nothing


@pytest.fixture
def listener() -> Iterator[tuple[str, list[bytes]]]:
    """A TCP listener on 127.0.0.1: its ``host:port``, and what each connection sent."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    received.append(conn.recv(4096))
                except OSError:
                    received.append(b"")
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}", received
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_table_naming_http_urls_reaches_no_listener(
    tmp_path: Path, listener: tuple[str, list[bytes]]
) -> None:
    host, received = listener
    metadata = _write_table(tmp_path / "t", manifest_list=f"http://{host}/snap-1.avro")
    table = icecore.load_table(str(metadata))
    with pytest.raises(IcecoreError, match="scheme 'http'"):
        table.scan().plan()
    with pytest.raises(IcecoreError, match="scheme 'http'"):
        icecore.load_table(f"http://{host}/v1.metadata.json")
    for path in (
        f"http://{host}/x",
        f"http://http://{host}/x",
        f"https://{host}/x",
        f"simplecache::http://{host}/x",
        f"s3://bucket/x::http://{host}/x",
        f"s3://http://{host}/x",
        f"file://http://{host}/x",
    ):
        with pytest.raises(IcecoreError):
            FileIO().read(path)
    assert received == []


# ---------------------------------------------------------------------------------------
# The REST server: register reads the file it is given, bounded and through the allow-list


_SERVE = "sys.argv = ['icecore', 'serve-rest', *sys.argv[1:]]; " + _CLI.split("; ", 1)[1]


@pytest.fixture
def limited_server(tmp_path: Path) -> Iterator[str]:
    """``serve-rest`` over a fresh SQLite catalog, its address space limited as above."""
    import requests

    from icecore.catalog.sql import create_sqlite_catalog
    from tests.icecore.server.conftest import free_port

    db = create_sqlite_catalog(tmp_path / "wh" / "catalog.db")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", _LIMIT + _SERVE, f"sqlite:///{db}", "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # until it answers (each try waits up to 0.1 s for a refusal)
            assert process.poll() is None, "serve-rest exited"
            try:
                requests.get(f"{url}/v1/config", timeout=1)
                break
            except requests.ConnectionError:
                threading.Event().wait(0.1)
        requests.post(f"{url}/v1/namespaces", json={"namespace": ["db"]}, timeout=10)
        yield url
        assert process.poll() is None, "the server died"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_register_reads_no_url_and_no_device(
    limited_server: str, listener: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    import requests

    host, received = listener
    link = tmp_path / "wh" / "v1.metadata.json"  # inside the served warehouse
    link.symlink_to("/dev/zero")
    for location in (f"http://{host}/v1.metadata.json", "/dev/zero", str(link)):
        r = requests.post(
            f"{limited_server}/v1/namespaces/db/register",
            json={"name": "t", "metadata-location": location},
            timeout=60,
        )
        # 403: outside the served locations (the link resolves to /dev/zero), refused before
        # any read; 400: refused by FileIO. Either way nothing is read and the server answers.
        assert r.status_code in (400, 403), (location, r.status_code, r.text[:500])
        message = r.json()["error"]["message"]
        assert "\n" not in message and location in message, message
    assert received == []
    assert requests.get(f"{limited_server}/v1/config", timeout=10).status_code == 200


def test_a_gzip_metadata_file_is_inflated_only_to_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzip bomb: a few KiB on disk, inflated no further than the metadata files' cap."""
    import gzip

    import icecore.metadata.serde
    from icecore.errors import InvalidMetadata

    metadata = _write_table(tmp_path / "t")
    plain = metadata.read_bytes()
    packed = tmp_path / "t" / "v2.gz.metadata.json"
    # two gzip members, as concatenated .gz files are: the first is the JSON, then padding
    packed.write_bytes(gzip.compress(plain) + gzip.compress(b" " * (2 << 20)))
    assert len(packed.read_bytes()) < 8 << 10
    assert icecore.load_table(str(packed)).metadata == icecore.load_table(str(metadata)).metadata
    monkeypatch.setattr(icecore.metadata.serde, "MAX_METADATA_BYTES", 1 << 20)
    with pytest.raises(InvalidMetadata, match="decompresses to more than 1 MiB"):
        icecore.load_table(str(packed))


def test_a_huge_version_hint_is_not_read(tmp_path: Path) -> None:
    """A warehouse table's ``version-hint.text`` grown to 4 GiB: the listing decides."""
    from icecore.catalog.filesystem import FilesystemCatalog
    from icecore.catalog.filesystem_admin import FilesystemCatalogAdmin
    from icecore.identifier import TableIdentifier
    from icecore.metadata.builder import encode_metadata
    from icecore.server.create import new_table_metadata

    (tmp_path / "wh").mkdir()
    admin = FilesystemCatalogAdmin(FilesystemCatalog(str(tmp_path / "wh")))
    admin.create_namespace(("db",), {})
    identifier = TableIdentifier(("db",), "t")
    metadata = new_table_metadata(
        location=admin.default_table_location(identifier), schema=TABLE_SCHEMA
    )
    admin.create_table(identifier, metadata, encode_metadata(metadata))
    hint = tmp_path / "wh" / "db" / "t" / "metadata" / "version-hint.text"
    assert hint.read_text().strip() == "1"
    with hint.open("r+b") as f:
        f.truncate(4 << 30)  # sparse: no disk used
    result = _run_limited(_CLI, "history", f"{tmp_path / 'wh'}::db.t")
    assert result.returncode == 0, result.stderr[-2000:]
