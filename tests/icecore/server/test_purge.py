"""Purging files by location: what lies under the table's folder goes, the rest is listed.

Run on fsspec's in-memory filesystem (an object store's shape: no real folders) and on a
local folder (Hadoop's ``.crc`` siblings go too, emptied folders are removed); and the bounds
a purge keeps to (issue 29): a purge reaching through a symlink, a file that is not a regular
file, or a location outside the served ones, at a root or inside another table's, deletes
nothing at all.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from icecore.io import FileIO
from icecore.server.locations import ServedLocations
from icecore.server.purge import PurgeRefused, purge_files


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


def _table_folder(tmp_path: Path) -> tuple[ServedLocations, Path, list[Path]]:
    """A warehouse served at ``wh`` with one table folder holding two files."""
    table = tmp_path / "wh" / "db" / "t"
    (table / "data").mkdir(parents=True)
    (table / "metadata").mkdir()
    files = [table / "data" / "a.parquet", table / "metadata" / "v1.metadata.json"]
    for f in files:
        f.write_bytes(b"x")
    return ServedLocations((str(tmp_path / "wh"),)), table, files


def test_purge_through_a_symlinked_folder_deletes_nothing(tmp_path: Path) -> None:
    served, table, files = _table_folder(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "b.parquet").write_bytes(b"v")
    (table / "data" / "link").symlink_to(victim, target_is_directory=True)
    named = [str(table / "data" / "link" / "b.parquet"), *map(str, files)]
    with pytest.raises(PurgeRefused, match="symlink"):
        purge_files(FileIO(), str(table), named, locations=served)
    assert (victim / "b.parquet").read_bytes() == b"v"
    assert all(f.exists() for f in files)  # checked first: not one file went


def test_purge_refuses_a_symlinked_file_or_a_folder_named_as_a_file(tmp_path: Path) -> None:
    served, table, files = _table_folder(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"v")
    (table / "data" / "l.parquet").symlink_to(victim)
    (table / "data" / "dir.parquet").mkdir()
    for odd in ("l.parquet", "dir.parquet"):
        with pytest.raises(PurgeRefused):
            purge_files(
                FileIO(),
                str(table),
                [str(table / "data" / odd), *map(str, files)],
                locations=served,
            )
    assert victim.read_bytes() == b"v" and (table / "data" / "dir.parquet").is_dir()
    assert all(f.exists() for f in files)


@pytest.mark.parametrize("where", ["outside", "root", "linked", "inside-other", "hadoop"])
def test_purge_refuses_a_location_out_of_bounds(tmp_path: Path, where: str) -> None:
    served, table, files = _table_folder(tmp_path)
    others: list[str] = []
    location = str(table)
    if where == "outside":
        served = ServedLocations((str(tmp_path / "elsewhere"),))
    elif where == "root":
        location = str(tmp_path / "wh")
    elif where == "linked":
        location = str(tmp_path / "wh" / "db" / "alias")
        Path(location).symlink_to(table, target_is_directory=True)
        files = [Path(location) / f.relative_to(table) for f in files]
    elif where == "inside-other":
        others = [str(table.parent)]
    else:  # a SQL catalog's table placed inside a Hadoop-layout table's folder
        served = ServedLocations(served.roots, foreign_hadoop=True)
        (table.parent / "metadata").mkdir()
        (table.parent / "metadata" / "version-hint.text").write_text("1")
    with pytest.raises(PurgeRefused):
        purge_files(
            FileIO(),
            location,
            [str(f) for f in files],
            others=others,
            locations=served,
            foreign_hadoop=served.foreign_hadoop,
        )
    assert all(f.exists() for f in files)


def test_purge_deletes_regular_files_under_a_served_location(tmp_path: Path) -> None:
    served, table, files = _table_folder(tmp_path)
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"o")
    spelled = [f"file://{files[0]}", f"{table}/metadata/../metadata/v1.metadata.json"]
    report = purge_files(FileIO(), f"{table}/", [*spelled, str(outside)], locations=served)
    assert report.deleted == tuple(spelled) and report.skipped == (str(outside),)
    assert not any(f.exists() for f in files) and outside.exists()
