"""DeleteIndex: the spec's "Scan Planning" delete scope rules on hand-built files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import InvalidMetadata
from icecore.manifest import DataFile, DataFileContent, ManifestEntry, ManifestEntryStatus
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.scan.delete_index import DELETE_FILE_PATH_ID, DeleteIndex
from icecore.transforms import parse_transform
from tests.icecore.scan.helpers import live_entries, manual_tasks

UNPART = PartitionSpec(0, ())
BY_DAY = PartitionSpec(1, (PartitionField(3, 1000, "day", parse_transform("day")),))
BY_DAY_2 = PartitionSpec(2, (PartitionField(3, 1000, "day", parse_transform("day")),))
SPECS = {0: UNPART, 1: BY_DAY, 2: BY_DAY_2}
DAY1 = {1000: dt.date(2024, 1, 1)}
DAY2 = {1000: dt.date(2024, 1, 2)}


def data(path: str, spec_id: int = 1, partition: dict[int, Any] | None = None) -> DataFile:
    return DataFile(
        content=DataFileContent.DATA,
        file_path=path,
        file_format="PARQUET",
        spec_id=spec_id,
        partition=DAY1 if partition is None else partition,
        record_count=10,
        file_size_in_bytes=100,
    )


def pos(
    path: str,
    spec_id: int = 1,
    partition: dict[int, Any] | None = None,
    referenced: str | None = None,
    bounds: tuple[str, str] | None = None,
) -> DataFile:
    return DataFile(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format="PARQUET",
        spec_id=spec_id,
        partition=DAY1 if partition is None else partition,
        record_count=1,
        file_size_in_bytes=100,
        referenced_data_file=referenced,
        lower_bounds={DELETE_FILE_PATH_ID: bounds[0].encode()} if bounds else None,
        upper_bounds={DELETE_FILE_PATH_ID: bounds[1].encode()} if bounds else None,
    )


def dv(path: str, referenced: str, partition: dict[int, Any] | None = None) -> DataFile:
    return DataFile(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format="PUFFIN",
        spec_id=1,
        partition=DAY1 if partition is None else partition,
        record_count=1,
        file_size_in_bytes=100,
        referenced_data_file=referenced,
        content_offset=4,
        content_size_in_bytes=40,
    )


def eq(path: str, spec_id: int = 1, partition: dict[int, Any] | None = None) -> DataFile:
    return DataFile(
        content=DataFileContent.EQUALITY_DELETES,
        file_path=path,
        file_format="PARQUET",
        spec_id=spec_id,
        partition=(DAY1 if partition is None else partition) if spec_id else {},
        record_count=1,
        file_size_in_bytes=100,
        equality_ids=(1,),
    )


def entry(f: DataFile, seq: int | None) -> ManifestEntry:
    return ManifestEntry(ManifestEntryStatus.ADDED, 1, seq, seq, f)


def paths(index: DeleteIndex, f: DataFile, seq: int) -> list[str]:
    return [d.file_path for d in index.for_data_file(f, seq)]


def test_sequence_number_edges() -> None:
    index = DeleteIndex(
        [entry(pos("pos5"), 5), entry(eq("eq5"), 5), entry(eq("eq6"), 6), entry(pos("pos4"), 4)],
        SPECS,
    )
    f = data("a")
    # equal sequence numbers: position deletes apply, equality deletes do not
    assert paths(index, f, 5) == ["eq6", "pos5"]
    assert paths(index, f, 4) == ["eq5", "eq6", "pos4", "pos5"]
    assert paths(index, f, 6) == []
    assert paths(index, f, 0) == ["eq5", "eq6", "pos4", "pos5"]
    assert len(index) == 4


def test_partition_scope_and_global_equality_deletes() -> None:
    index = DeleteIndex(
        [
            entry(eq("global", spec_id=0), 9),
            entry(eq("day1"), 9),
            entry(eq("day2", partition=DAY2), 9),
            entry(pos("pos-day2", partition=DAY2), 9),
            entry(pos("pos-spec2", spec_id=2), 9),
        ],
        SPECS,
    )
    assert paths(index, data("a"), 1) == ["global", "day1"]
    assert paths(index, data("b", partition=DAY2), 1) == ["global", "day2", "pos-day2"]
    # same partition values under another spec are another partition
    assert paths(index, data("c", spec_id=2), 1) == ["global", "pos-spec2"]
    # unpartitioned data files get global equality deletes only
    assert paths(index, data("d", spec_id=0, partition={}), 1) == ["global"]
    # global deletes keep the strict sequence number rule
    assert paths(index, data("e", spec_id=0, partition={}), 9) == []


def test_position_deletes_with_a_referenced_data_file_or_path_bounds() -> None:
    index = DeleteIndex(
        [
            entry(pos("only-a", referenced="s3://b/a.parquet"), 3),
            entry(pos("a-to-c", bounds=("s3://b/a.parquet", "s3://b/c.parquet")), 3),
        ],
        SPECS,
    )
    assert paths(index, data("s3://b/a.parquet"), 3) == ["a-to-c", "only-a"]
    assert paths(index, data("s3://b/b.parquet"), 3) == ["a-to-c"]
    assert paths(index, data("s3://b/d.parquet"), 3) == []
    assert paths(index, data("s3://a/z.parquet"), 3) == []


def test_deletion_vector_supersedes_position_deletes() -> None:
    index = DeleteIndex(
        [
            entry(pos("old-pos"), 2),
            entry(pos("old-pos-ref", referenced="a"), 2),
            entry(dv("dv.puffin", "a"), 3),
            entry(eq("eq"), 4),
        ],
        SPECS,
    )
    assert paths(index, data("a"), 1) == ["eq", "dv.puffin"]
    # the DV only covers its own data file
    assert paths(index, data("b"), 1) == ["eq", "old-pos"]
    # a DV older than the data file does not apply, so it supersedes nothing
    assert paths(index, data("a"), 4) == []
    only_old = DeleteIndex([entry(pos("p"), 5), entry(dv("dv", "a"), 3)], SPECS)
    assert paths(only_old, data("a"), 4) == ["p"]


def test_float_partition_values_compare_by_bits() -> None:
    spec = PartitionSpec(1, (PartitionField(2, 1000, "x", parse_transform("identity")),))
    index = DeleteIndex(
        [
            entry(pos("zero", partition={1000: 0.0}), 1),
            entry(pos("nan", partition={1000: float("nan")}), 1),
        ],
        {1: spec},
    )
    assert paths(index, data("a", partition={1000: 0.0}), 1) == ["zero"]
    assert paths(index, data("a", partition={1000: -0.0}), 1) == []
    assert paths(index, data("a", partition={1000: float("nan")}), 1) == ["nan"]


def test_bad_entries() -> None:
    with pytest.raises(InvalidMetadata, match="pos.*sequence number"):
        DeleteIndex([entry(pos("pos"), None)], SPECS)
    with pytest.raises(InvalidMetadata, match="pos.*spec 7"):
        DeleteIndex([entry(pos("pos", spec_id=7), 1)], SPECS)
    assert DeleteIndex([], SPECS).for_data_file(data("a"), 1) == ()


@pytest.mark.spark
def test_attached_deletes_match_spark_files_table(spark: Any, demo_warehouse: Path) -> None:
    """Every delete file Spark says is live is attached to some task, or has no target."""
    for name in ("demo.trips", "demo.events_v3", "demo.accounts"):
        table = icecore.load_table(f"{demo_warehouse}::{name}")
        _, deletes = live_entries(table)
        spark_deletes = {
            r.file_path
            for r in spark.sql(f"SELECT file_path FROM icecore.{name}.delete_files").collect()
        }
        assert {e.data_file.file_path for e in deletes} == spark_deletes
        attached = {d.file_path for t in manual_tasks(table) for d in t.delete_files}
        assert attached <= spark_deletes
        if name == "demo.accounts":
            # global equality deletes apply to the re-partitioned files too
            assert attached == spark_deletes
