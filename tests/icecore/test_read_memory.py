"""Rows are read into the system allocator's pool unless the user chose Arrow's pool.

Issue 32 (peak memory, full-scan time): the first read of a process makes the system allocator
Arrow's default pool (icecore.read.memory); ``ARROW_DEFAULT_MEMORY_POOL``, Arrow's own
setting, is the user's choice and is kept. The pool is process-wide, so each case reads in a
fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecore.read.memory import POOL_ENV

REPO = Path(__file__).resolve().parents[2]

_CHILD = """
import json, sys
import pyarrow as pa
import pyarrow.compute as pc
from icecore.io import FileIO
from icecore.manifest import DataFile, DataFileContent
from icecore.partitioning import UNPARTITIONED_SPEC
from icecore.read.tasks import read_arrow
from icecore.scan.task import FileScanTask
from icecore.schema import Schema
from icecore.types import LongType, NestedField

path, size = sys.argv[1], int(sys.argv[2])
schema = Schema((NestedField(1, "id", LongType()),))
data = DataFile(
    content=DataFileContent.DATA, file_path=path, file_format="PARQUET", spec_id=0,
    partition={}, record_count=1000, file_size_in_bytes=size,
)
before = pa.default_memory_pool().backend_name
out = read_arrow(FileIO(), [FileScanTask(data, 0, UNPARTITIONED_SPEC, schema)])
print(json.dumps({
    "before": before,
    "after": pa.default_memory_pool().backend_name,
    "rows": out.num_rows,
    "sum": pc.sum(out.column(0)).as_py(),
}))
"""


def _file(tmp_path: Path) -> Path:
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    path = tmp_path / "data.parquet"
    pq.write_table(pa.table([pa.array(range(1000), pa.int64())], schema=schema), path)
    return path


def _read_in_child(path: Path, pool: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != POOL_ENV}
    if pool is not None:
        env[POOL_ENV] = pool
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(path.stat().st_size)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    found: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_the_first_read_makes_the_system_allocator_the_pool(tmp_path: Path) -> None:
    path = _file(tmp_path)
    found = _read_in_child(path, None)
    assert found["after"] == "system"
    assert (found["rows"], found["sum"]) == (1000, sum(range(1000)))


@pytest.mark.parametrize("pool", ["mimalloc", "jemalloc", "system"])
def test_a_pool_the_user_chose_is_kept(tmp_path: Path, pool: str) -> None:
    try:
        getattr(pa, f"{pool}_memory_pool")()
    except (NotImplementedError, pa.ArrowNotImplementedError):
        pytest.skip(f"this pyarrow has no {pool} pool")
    found = _read_in_child(_file(tmp_path), pool)
    assert found["before"] == pool
    assert found["after"] == pool
    assert (found["rows"], found["sum"]) == (1000, sum(range(1000)))
