"""Purging files by location: what lies under the table's folder goes, the rest is listed.

Run on fsspec's in-memory filesystem (an object store's shape: no real folders) and on a
local folder (Hadoop's ``.crc`` siblings go too, emptied folders are removed).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from icecore.io import FileIO
from icecore.server.purge import purge_files


def test_purge_on_an_object_store_skips_files_outside_the_location() -> None:
    io = FileIO(allow_memory=True)
    root = f"memory://purge-{uuid.uuid4().hex[:8]}"
    inside = [f"{root}/wh/db/t/data/a.parquet", f"{root}/wh/db/t/metadata/v1.metadata.json"]
    outside = [f"{root}/wh/db/other/data/b.parquet", f"{root}/wh/db/t2/data/c.parquet"]
    for path in inside + outside:
        io.write(path, b"x")
    report = purge_files(io, f"{root}/wh/db/t", [*inside, *outside, f"{root}/wh/db/t/gone.avro"])
    assert sorted(report.skipped) == sorted(outside)  # t2 shares a prefix, not the folder
    assert not report.failed
    assert [io.exists(p) for p in inside] == [False, False]
    assert [io.exists(p) for p in outside] == [True, True]


def test_purge_on_a_local_folder_removes_checksums_and_emptied_folders(tmp_path: Path) -> None:
    io = FileIO()
    table = tmp_path / "t"
    (table / "data" / "day=1").mkdir(parents=True)
    data = table / "data" / "day=1" / "a.parquet"
    data.write_bytes(b"x")
    (table / "data" / "day=1" / ".a.parquet.crc").write_bytes(b"c")
    stray = table / "data" / "orphan.parquet"  # reachable from no metadata: stays
    stray.write_bytes(b"o")
    report = purge_files(io, f"file://{table}", [f"file:{data}"])
    assert report.deleted == (f"file:{data}",)
    assert sorted(p.relative_to(table).as_posix() for p in table.rglob("*")) == [
        "data",
        "data/orphan.parquet",
    ]
