"""How many files a bin-pack rewrite writes: Iceberg Java's sizing rules and spec fan-out.

Spark's ``rewrite_data_files`` (Iceberg 1.10, ``BinPackRewriteFilePlanner``,
``SizeBasedFileRewritePlanner`` and ``SparkBinPackFileRewriteRunner``) groups the files it
picks by their partition when they were written with the table's default spec, and puts
every file of another spec into one group (their rows may belong to many partitions of the
default spec). Each group is read in splits of :func:`input_split_size` and written with the
default spec (spec "Partitioning": a partition spec maps each row to one partition tuple):

* a group of the default spec is written without a shuffle, one file per read split (every
  row goes to the group's partition);
* a group of other specs is range-shuffled by the default spec's partition and written one
  file per (task, partition), so it fans out into as many files as the partitions its rows
  fall into, plus one per task boundary that splits a partition.

This module holds the sizing rules and the reasoning about what one partition of an old spec
can become under the new one (:func:`fan_out`, :func:`refines`); :mod:`icecore.maintenance`
adds them up per group.
"""

from __future__ import annotations

import math

from icecore.partitioning import PartitionField, PartitionSpec
from icecore.transforms.base import Transform
from icecore.transforms.bucket import BucketTransform
from icecore.transforms.identity import IdentityTransform
from icecore.transforms.temporal import DayTransform, HourTransform, MonthTransform, YearTransform

SPLIT_OVERHEAD = 5 * 1024
"""``SizeBasedFileRewritePlanner.SPLIT_OVERHEAD``: added to a group's split size."""
MIN_FILE_RATIO = 0.75
MAX_FILE_RATIO = 1.8
"""``min-file-size-bytes`` and ``max-file-size-bytes`` defaults, as shares of the target."""
SHUFFLE_PARTITIONS = 200
"""Spark's default ``spark.sql.shuffle.partitions``: at most this many write tasks after the
range shuffle of a group of other specs, so at most one fewer task boundaries."""

_RANK: dict[type[Transform], int] = {
    YearTransform: 0,
    MonthTransform: 1,
    DayTransform: 2,
    HourTransform: 3,
}
"""Time transforms from coarse to fine (spec "Partition Transforms")."""
_VALUES_WITHIN = {
    (0, 1): 12,
    (0, 2): 366,
    (0, 3): 366 * 24,
    (1, 2): 31,
    (1, 3): 31 * 24,
    (2, 3): 24,
}
"""How many finer time values one coarser value holds at most (a leap year, a long month)."""


def write_max_file_size(target: int) -> int:
    """``writeMaxFileSize``: the size a rewrite's writer rolls a file at."""
    return int(target + (int(target * MAX_FILE_RATIO) - target) * 0.5)


def expected_output_files(size: int, target: int) -> int:
    """``expectedOutputFiles``: files a group of ``size`` bytes is meant to become."""
    if size < target:
        return 1
    with_remainder, without = -(-size // target), size // target
    if size % target > int(target * MIN_FILE_RATIO):
        return with_remainder
    if size // without < min(1.1 * target, write_max_file_size(target)):
        return without
    return with_remainder


def input_split_size(size: int, target: int) -> int:
    """``inputSplitSize``: the read split size of a group (at least the target)."""
    estimated = size // expected_output_files(size, target) + SPLIT_OVERHEAD
    return target if estimated < target else min(estimated, write_max_file_size(target))


def splits(size: int, target: int) -> tuple[int, int]:
    """Bounds on the read splits of one group of ``size`` bytes: the files it writes.

    Splits are bin-packed (first fit over the last ten open bins, no open-file cost) up to
    the split size S. Low: ``ceil(size / S)``, since no bin holds more than S. High:
    ``2 * floor(size / S) + 1``: a new bin opens only when an item fits none of the open
    bins, the newest among them, so each bin and the next together hold more than S.
    """
    split = input_split_size(size, target)
    return max(1, math.ceil(size / split)), max(1, 2 * (size // split) + 1)


def _determines(a: PartitionField, b: PartitionField) -> bool:
    """Whether field ``a``'s value fixes field ``b``'s (same source column)."""
    if a.all_source_ids != b.all_source_ids:
        return False
    ta, tb = a.transform, b.transform
    if tb.is_void or isinstance(ta, IdentityTransform) or ta == tb:
        return True
    if type(ta) in _RANK and type(tb) in _RANK:
        return _RANK[type(ta)] >= _RANK[type(tb)]
    if isinstance(ta, BucketTransform) and isinstance(tb, BucketTransform):
        return ta.num_buckets % tb.num_buckets == 0
    return False


def _values_given(field: PartitionField, old: PartitionSpec) -> int | None:
    """How many values ``field`` can take among rows of one partition of ``old`` (None: any)."""
    if field.transform.is_void:
        return 1
    found: list[int] = []
    for of in old.fields:
        if of.transform.is_void or of.all_source_ids != field.all_source_ids:
            continue
        if _determines(of, field):
            return 1
        ranks = (_RANK.get(type(of.transform)), _RANK.get(type(field.transform)))
        if ranks[0] is not None and ranks[1] is not None:
            found.append(_VALUES_WITHIN[(ranks[0], ranks[1])])
    if isinstance(field.transform, BucketTransform):
        found.append(field.transform.num_buckets)
    return min(found) if found else None


def fan_out(old: PartitionSpec, new: PartitionSpec) -> int | None:
    """Partitions of ``new`` that the rows of one partition of ``old`` can fall into.

    The product, over ``new``'s fields, of the values each can take when ``old``'s partition
    tuple is fixed: one when an old field on the same column fixes it (identity fixes every
    transform, a finer time fixes a coarser one, ``bucket[M]`` fixes ``bucket[N]`` when N
    divides M), the finer-per-coarser count for a finer time (24 hours a day, 31 days a
    month, ...), N for ``bucket[N]``; None when a field's values are unbounded by the old
    partition (an identity or truncate of a column the old spec did not fix): then only the
    partition's record count bounds it.
    """
    product = 1
    for field in new.fields:
        values = _values_given(field, old)
        if values is None:
            return None
        product *= values
    return product


def refines(old: PartitionSpec, new: PartitionSpec) -> bool:
    """Whether ``new``'s partition fixes ``old``'s.

    Rows of different old partitions then land in different new partitions, so each old
    partition writes at least one file.
    """
    return all(
        of.transform.is_void or any(_determines(nf, of) for nf in new.fields) for of in old.fields
    )


__all__ = [
    "SHUFFLE_PARTITIONS",
    "expected_output_files",
    "fan_out",
    "input_split_size",
    "refines",
    "splits",
    "write_max_file_size",
]
