"""FileIO over fsspec: the verbs every table read goes through."""

from __future__ import annotations

from pathlib import Path

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
