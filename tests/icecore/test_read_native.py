"""Local Parquet files read as Arrow files (issue 32): same rows, same checks, one sentence.

A local data file is opened with :meth:`FileIO.open_native` (Arrow reads it with the GIL
released); any other file by FileIO range reads. Both must give the same rows, the same
truncation and corruption errors, and refuse what FileIO refuses (devices, FIFOs).
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecore.errors import IcecoreError, InvalidMetadata, NotFound
from icecore.io import FileIO
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import UNPARTITIONED_SPEC
from icecore.read.tasks import read_arrow
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.types import LongType, NestedField, StringType

SCHEMA = Schema((NestedField(1, "id", LongType()), NestedField(2, "name", StringType())))
ROWS = 50_000


def _table() -> pa.Table:
    ids = pa.array(range(ROWS), pa.int64())
    names = pa.array([f"n{i % 97}" for i in range(ROWS)])
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
            pa.field("name", pa.string(), metadata={b"PARQUET:field_id": b"2"}),
        ]
    )
    return pa.Table.from_arrays([ids, names], schema=schema)


def _data_file(path: str, rows: int, size: int) -> DataFile:
    return DataFile(
        content=DataFileContent.DATA,
        file_path=path,
        file_format="PARQUET",
        spec_id=0,
        partition={},
        record_count=rows,
        file_size_in_bytes=size,
    )


def _task(path: Path | str, size: int, rows: int = ROWS) -> FileScanTask:
    return FileScanTask(_data_file(str(path), rows, size), 0, UNPARTITIONED_SPEC, SCHEMA)


@pytest.fixture
def parquet_file(tmp_path: Path) -> Path:
    path = tmp_path / "f.parquet"
    pq.write_table(_table(), path, row_group_size=7_000)  # several row groups
    return path


def _range_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths of every ranged FileIO.read from now on (the real read still runs)."""
    seen: list[str] = []
    real = FileIO.read

    def recording(
        self: FileIO, path: str, start: int | None = None, end: int | None = None, **kw: Any
    ) -> bytes:
        if start is not None:
            seen.append(path)
        return real(self, path, start, end, **kw)

    monkeypatch.setattr(FileIO, "read", recording)
    return seen


def test_a_local_file_is_read_natively_with_the_range_readers_rows(
    parquet_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local read skips FileIO range reads; the memory:// copy (range reads) agrees."""
    size = parquet_file.stat().st_size
    reads = _range_reads(monkeypatch)
    local = read_arrow(FileIO(), [_task(parquet_file, size)], threads=1, batch_size=5_000)
    assert reads == []
    assert local.column("id").to_pylist() == list(range(ROWS))
    assert local.equals(_table().rename_columns(["id", "name"]).cast(local.schema))

    io = FileIO(allow_memory=True)
    io.write("memory://native/f.parquet", parquet_file.read_bytes())
    ranged = read_arrow(io, [_task("memory://native/f.parquet", size)], batch_size=5_000)
    assert reads and set(reads) == {"memory://native/f.parquet"}
    assert ranged.equals(local)


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_native_read_leaves_no_descriptor_open(parquet_file: Path) -> None:
    size = parquet_file.stat().st_size
    before = _open_fds()
    for limit in (None, 10):  # read to the end, and left mid-file by a limit
        got = read_arrow(FileIO(), [_task(parquet_file, size)] * 3, limit=limit)
        assert got.num_rows == (limit or 3 * ROWS)
    assert _open_fds() - before == set()


def test_a_truncated_local_file_is_one_sentence(parquet_file: Path, tmp_path: Path) -> None:
    size = parquet_file.stat().st_size
    short = tmp_path / "short.parquet"
    short.write_bytes(parquet_file.read_bytes()[: size // 2])
    with pytest.raises(InvalidMetadata, match=f"^Data file {short} is truncated") as e:
        read_arrow(FileIO(), [_task(short, size)])
    assert "\n" not in str(e.value)
    # the manifest agreeing with the short size: the footer is gone
    with pytest.raises(InvalidMetadata, match=f"^Data file {short} cannot be read as Parquet"):
        read_arrow(FileIO(), [_task(short, size // 2)])


def test_a_fifo_or_device_in_place_of_a_data_file_is_refused_without_blocking(
    tmp_path: Path,
) -> None:
    """Checked before the open (a FIFO's open would wait for a writer), as FileIO.read does."""
    fifo = tmp_path / "fifo.parquet"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.parquet"
    zero.symlink_to("/dev/zero")
    errors: list[BaseException] = []

    def read_all() -> None:
        for path in (fifo, zero):
            try:
                read_arrow(FileIO(), [_task(path, 100)])
            except IcecoreError as e:
                errors.append(e)

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "the read blocked on a FIFO"
    assert [type(e) for e in errors] == [IcecoreError, IcecoreError]
    assert all("not a regular file" in str(e) for e in errors)


def test_open_native_checks_like_read(tmp_path: Path) -> None:
    io = FileIO(allow_memory=True)
    (tmp_path / "a.bin").write_bytes(b"0123456789")
    opened = io.open_native(f"file://{tmp_path}/a.bin")
    assert opened is not None
    handle, size = opened
    with handle:
        assert size == 10 and handle.read_at(4, 3) == b"3456"
    assert io.open_native("memory://x/a.bin") is None  # read by ranges instead
    with pytest.raises(NotFound):
        io.open_native(str(tmp_path / "gone.bin"))
    with pytest.raises(NotFound):
        io.open_native(str(tmp_path))
    with pytest.raises(IcecoreError, match="not allowed"):
        io.open_native("http://example.com/a.parquet")


def test_a_missing_local_data_file_is_not_found(tmp_path: Path) -> None:
    task = _task(tmp_path / "gone.parquet", 100)
    with pytest.raises(NotFound, match="gone.parquet"):
        read_arrow(FileIO(), [replace(task)])


# ---------------------------------------------------------------------------------------
# S3 (a moto server): Arrow's S3 filesystem when FileIO's settings map onto it exactly


@pytest.fixture
def s3_parquet(s3_server: Any, parquet_file: Path) -> str:
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server.endpoint)
    client.create_bucket(Bucket="native-read")
    client.put_object(Bucket="native-read", Key="t/f.parquet", Body=parquet_file.read_bytes())
    client.put_object(
        Bucket="native-read", Key="t/short.parquet", Body=parquet_file.read_bytes()[:1000]
    )
    return "s3://native-read/t/f.parquet"


def test_an_s3_file_is_read_natively_with_the_range_readers_rows(
    s3_server: Any, s3_parquet: str, parquet_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = parquet_file.stat().st_size
    reads = _range_reads(monkeypatch)
    native = read_arrow(FileIO(s3_server.properties), [_task(s3_parquet, size)], batch_size=5_000)
    assert reads == []
    assert native.column("id").to_pylist() == list(range(ROWS))
    # A setting Arrow's S3 filesystem is not given: fsspec's range reads, the same rows.
    other = FileIO({**s3_server.properties, "s3.path-style-access": "true"})
    assert other.open_native(s3_parquet) is None
    ranged = read_arrow(other, [_task(s3_parquet, size)], batch_size=5_000)
    assert reads and set(reads) == {s3_parquet}
    assert ranged.equals(native)


def test_s3_native_errors_are_one_sentence(s3_server: Any, s3_parquet: str) -> None:
    io = FileIO(s3_server.properties)
    gone = "s3://native-read/t/gone.parquet"
    with pytest.raises(NotFound, match="gone.parquet"):
        read_arrow(io, [_task(gone, 100)])
    short = "s3://native-read/t/short.parquet"
    with pytest.raises(InvalidMetadata, match=f"^Data file {short} is truncated"):
        read_arrow(io, [_task(short, 5_000)])
    with pytest.raises(InvalidMetadata, match=f"^Data file {short} cannot be read as Parquet"):
        read_arrow(io, [_task(short, 1_000)])


@pytest.mark.parametrize(
    "changed",
    [
        {"s3.endpoint": "http://127.0.0.1:1/prefix"},  # an endpoint with a path
        {"s3.endpoint": "ftp://127.0.0.1:1"},
        {"s3.signer": "remote"},
        {"s3.access-key-id": None},  # the AWS credential chain: fsspec's, not Arrow's
        {"s3.region": None},
    ],
)
def test_s3_settings_arrow_would_read_differently_keep_range_reads(
    changed: dict[str, str | None],
) -> None:
    props = {
        "s3.endpoint": "http://127.0.0.1:1",
        "s3.access-key-id": "k",
        "s3.secret-access-key": "s",
        "s3.region": "us-east-1",
    }
    for key, value in changed.items():
        if value is None:
            props.pop(key)
        else:
            props[key] = value
    assert FileIO(props).open_native("s3://b/k.parquet") is None


def test_a_native_read_refuses_a_column_chunk_over_the_read_bound(
    parquet_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arrow reads no column chunk FileIO.read would refuse (1 GiB; lowered here)."""
    import icecore.io

    size = parquet_file.stat().st_size
    monkeypatch.setattr(icecore.io, "MAX_READ_BYTES", 1_000)
    with pytest.raises(IcecoreError, match=f"^{parquet_file} is larger than 1000 bytes"):
        read_arrow(FileIO(), [_task(parquet_file, size)])
