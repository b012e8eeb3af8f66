"""FileIO over fsspec: the verbs every table read goes through."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from icecore.errors import IcecoreError, NotFound
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
    io = FileIO(allow_memory=True)
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
    io = FileIO(allow_memory=True)
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


# ---------------------------------------------------------------------------------------
# Issue 29: an allow-list of schemes, regular files only, bounded reads, one sentence


@pytest.mark.parametrize(
    ("path", "scheme"),
    [
        ("http://127.0.0.1:9/x", "http"),
        ("https://example.invalid/x", "https"),
        ("ftp://127.0.0.1/x", "ftp"),
        ("zip://x::file:///tmp/a.zip", None),
        ("memory://t/x", "memory"),
        ("gs://bucket/x", "gs"),
        ("simplecache::s3://bucket/x", None),
        ("http://http://127.0.0.1:9/x", "http"),
        ("s3://http://127.0.0.1:9/x", None),
        ("file://http://127.0.0.1:9/x", None),
    ],
)
def test_paths_outside_the_allow_list_are_one_sentence(path: str, scheme: str | None) -> None:
    io = FileIO()
    for verb in (io.read, io.info, io.exists, io.ls, io.delete, io.makedirs):
        with pytest.raises(IcecoreError) as caught:
            verb(path)
        message = str(caught.value)
        assert "\n" not in message and message.endswith("."), message
        if scheme is not None:
            assert f"'{scheme}'" in message, message
    with pytest.raises(IcecoreError):
        io.write(path, b"x")
    with pytest.raises(IcecoreError):
        io.create_exclusive(path, b"x")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "v1.metadata.json"
    os.mkfifo(fifo)
    (tmp_path / "link.avro").symlink_to(fifo)
    outcome: list[BaseException | bytes] = []
    done = threading.Event()

    def read() -> None:
        for path in (str(fifo), f"file:{tmp_path}/link.avro"):
            try:
                outcome.append(FileIO().read(path))
            except Exception as e:  # noqa: BLE001 - what the read raised is the answer
                outcome.append(e)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    # Bounded wait for a condition: the old reader blocks in open() until a writer appears.
    assert done.wait(timeout=30), "a read of a FIFO waited for a writer"
    for caught in outcome:
        assert isinstance(caught, IcecoreError) and "not a regular file" in str(caught)


def test_a_device_is_refused_before_it_is_read() -> None:
    with pytest.raises(IcecoreError, match="not a regular file"):
        FileIO().read("/dev/zero", 0, 16)
    with pytest.raises(IcecoreError, match="not a regular file"):
        FileIO().read("/dev/null")


def test_reads_are_bounded_by_their_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.avro"
    path.write_bytes(b"x" * 1000)
    io = FileIO()
    assert io.read(str(path), limit=1000) == b"x" * 1000
    with pytest.raises(IcecoreError, match="larger than 999 bytes"):
        io.read(str(path), limit=999)
    assert io.read(str(path), 10, 20, limit=10) == b"x" * 10
    with pytest.raises(IcecoreError, match="larger than"):
        io.read(str(path), 0, 11, limit=10)


def test_s3_reads_are_bounded(s3_server: Any) -> None:
    import boto3

    boto3.client("s3", endpoint_url=s3_server.endpoint).create_bucket(Bucket="bounded")
    io = FileIO(s3_server.properties)
    io.write("s3a://bounded/t/big", b"y" * 100)
    io.write("s3://bounded/t/empty", b"")
    assert io.read("s3n://bounded/t/big", limit=100) == b"y" * 100
    with pytest.raises(IcecoreError, match="larger than 99 bytes"):
        io.read("s3://bounded/t/big", limit=99)
    assert io.read("s3://bounded/t/empty") == b""
    assert io.read("s3://bounded/t/big", 90, 200) == b"y" * 10


class _Broken:
    """A filesystem whose every call raises what fsspec's store clients raise."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        def fail(*_: Any, **__: Any) -> Any:
            raise self.error

        return fail


@pytest.mark.parametrize(
    "error",
    [
        ValueError("bad\nrange"),
        RuntimeError(""),
        KeyError("Contents"),
        MemoryError(),
        TimeoutError("read timed out"),
        PermissionError(13, "Forbidden"),
    ],
)
def test_every_filesystem_failure_is_one_sentence(error: BaseException) -> None:
    from botocore.exceptions import NoCredentialsError

    for raised in (error, NoCredentialsError()):
        io = FileIO()
        io._filesystems["s3"] = _Broken(raised)
        calls: list[tuple[str, tuple[Any, ...]]] = [
            ("read", ()),
            ("info", ()),
            ("exists", ()),
            ("ls", ()),
            ("walk", ()),
            ("write", (b"x",)),
            ("create_exclusive", (b"x",)),
            ("delete", ()),
            ("makedirs", ()),
            ("remove_empty_dir", ()),
            ("move", ("s3://b/j",)),
        ]
        for verb, rest in calls:
            with pytest.raises(IcecoreError) as caught:
                getattr(io, verb)("s3://b/k", *rest)
            message = str(caught.value)
            assert "\n" not in message and "s3://b/k" in message, (verb, message)
