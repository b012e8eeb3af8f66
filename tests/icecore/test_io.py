"""FileIO over fsspec: the verbs every table read goes through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecore.errors import NotFound
from icecore.io import FileIO, normalize_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/abs/x.avro", ("file", "/abs/x.avro")),
        ("file:/abs/x.avro", ("file", "/abs/x.avro")),
        ("file:///abs/x.avro", ("file", "/abs/x.avro")),
        ("file://localhost/abs/x.avro", ("file", "/abs/x.avro")),
        ("s3://bucket/key/x.avro", ("s3", "bucket/key/x.avro")),
        ("s3a://bucket/key", ("s3", "bucket/key")),
        ("memory://t/x", ("memory", "/t/x")),
        ("relative/x", ("file", "relative/x")),
    ],
)
def test_normalize_path(path: str, expected: tuple[str, str]) -> None:
    assert normalize_path(path) == expected


def test_local_read_ranges_and_listing(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.bin").write_bytes(b"0123456789")
    (tmp_path / "d" / "sub").mkdir()
    io = FileIO()
    for prefix in ("", "file:", "file://"):
        path = f"{prefix}{tmp_path}/d/a.bin"
        assert io.read(path) == b"0123456789"
        assert io.read(path, 2, 5) == b"234"
        assert io.info(path).size == 10
    listing = io.ls(f"file:{tmp_path}/d")
    assert [(e.path, e.is_dir) for e in listing] == [
        (f"file:{tmp_path}/d/a.bin", False),
        (f"file:{tmp_path}/d/sub", True),
    ]


def test_missing_files_are_not_found(tmp_path: Path) -> None:
    io = FileIO()
    with pytest.raises(NotFound, match=r"missing\.avro does not exist"):
        io.read(str(tmp_path / "missing.avro"))
    with pytest.raises(NotFound):
        io.ls(str(tmp_path / "nope"))
    with pytest.raises(NotFound, match="is a directory"):
        io.read(str(tmp_path))
    assert not io.exists(str(tmp_path / "missing.avro"))


def test_memory_filesystem() -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/icecore-test/t/metadata/v1.metadata.json", b"{}")
    io = FileIO()
    assert io.read("memory://icecore-test/t/metadata/v1.metadata.json") == b"{}"
    assert [e.path for e in io.ls("memory://icecore-test/t/metadata")] == [
        "memory://icecore-test/t/metadata/v1.metadata.json"
    ]
    fs.rm("/icecore-test", recursive=True)


def test_create_exclusive_never_replaces(tmp_path: Path) -> None:
    io = FileIO()
    path = f"file:{tmp_path}/v1.metadata.json"
    assert io.create_exclusive(path, b"first") is True
    assert io.create_exclusive(path, b"second") is False
    assert (tmp_path / "v1.metadata.json").read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v1.metadata.json"], "no temp left"


def test_create_exclusive_race_has_one_winner(tmp_path: Path) -> None:
    import threading

    io = FileIO()
    path = str(tmp_path / "v2.metadata.json")
    barrier = threading.Barrier(8)
    won: list[bytes] = []

    def writer(i: int) -> None:
        data = f"writer {i}".encode() * 1000
        barrier.wait()
        if io.create_exclusive(path, data):
            won.append(data)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert (tmp_path / "v2.metadata.json").read_bytes() == won[0]


def test_write_replaces_and_delete_tolerates_missing(tmp_path: Path) -> None:
    io = FileIO()
    hint = str(tmp_path / "version-hint.text")
    io.write(hint, b"1")
    io.write(hint, b"2")
    assert (tmp_path / "version-hint.text").read_bytes() == b"2"
    io.delete(hint)
    io.delete(hint)
    assert list(tmp_path.iterdir()) == []


def test_memory_create_exclusive() -> None:
    io = FileIO()
    path = "memory://icecore-excl/t/v1.metadata.json"
    assert io.create_exclusive(path, b"a") is True
    assert io.create_exclusive(path, b"b") is False
    assert io.read(path) == b"a"
    io.delete(path)
    assert not io.exists(path)


def test_s3_create_exclusive_is_a_conditional_put(s3_server: Any) -> None:
    import boto3

    boto3.client("s3", endpoint_url=s3_server.endpoint).create_bucket(Bucket="excl")
    io = FileIO(s3_server.properties)
    path = "s3://excl/t/metadata/v1.metadata.json"
    assert io.create_exclusive(path, b"first") is True
    assert io.create_exclusive(path, b"second") is False
    assert io.read(path) == b"first"
