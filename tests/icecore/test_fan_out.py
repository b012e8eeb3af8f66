"""The rules behind a rewrite's file-count estimate and the orphan listing, by hand.

What Spark really writes and lists is checked in tests/pipeline/test_maintenance_estimates.py;
here each rule is checked on inputs whose answer follows from the spec's transforms
(spec "Partition Transforms") and Iceberg Java's sizing and hidden-path rules.
"""

from __future__ import annotations

from icecore.coarsening import parse_label, parse_labels
from icecore.fan_out import expected_output_files, fan_out, input_split_size, refines, splits
from icecore.maintenance import is_hidden
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.transforms.bucket import BucketTransform
from icecore.transforms.identity import IdentityTransform
from icecore.transforms.temporal import DayTransform, HourTransform, MonthTransform

MiB = 1024 * 1024
TS, TRIP, VENDOR = 3, 1, 2


def spec(spec_id: int, *fields: tuple[int, str, object]) -> PartitionSpec:
    return PartitionSpec(
        spec_id,
        tuple(
            PartitionField(source, 1000 + i, name, transform)  # type: ignore[arg-type]
            for i, (source, name, transform) in enumerate(fields)
        ),
    )


DAY_BUCKET = spec(0, (TS, "day", DayTransform()), (TRIP, "b", BucketTransform(16)))
HOUR_BUCKET = spec(1, (TRIP, "b", BucketTransform(16)), (TS, "hour", HourTransform()))
HOUR_BUCKET_VENDOR = spec(
    2,
    (TRIP, "b", BucketTransform(16)),
    (TS, "hour", HourTransform()),
    (VENDOR, "vendor", IdentityTransform()),
)


def test_one_old_partition_fans_out_by_what_the_old_spec_leaves_open() -> None:
    # A day holds 24 hours; the same bucket is fixed; a new identity field is unbounded.
    assert fan_out(DAY_BUCKET, HOUR_BUCKET) == 24
    assert fan_out(DAY_BUCKET, HOUR_BUCKET_VENDOR) is None
    assert fan_out(HOUR_BUCKET, DAY_BUCKET) == 1
    month = spec(3, (TS, "month", MonthTransform()))
    assert fan_out(month, spec(4, (TS, "day", DayTransform()))) == 31
    assert fan_out(month, DAY_BUCKET) == 31 * 16
    assert (
        fan_out(
            spec(5, (TRIP, "b", BucketTransform(32))), spec(6, (TRIP, "b", BucketTransform(16)))
        )
        == 1
    )


def test_a_finer_spec_refines_a_coarser_one_only() -> None:
    assert refines(DAY_BUCKET, HOUR_BUCKET)
    assert refines(DAY_BUCKET, HOUR_BUCKET_VENDOR)
    assert not refines(HOUR_BUCKET, DAY_BUCKET)


def test_sizing_follows_iceberg_java() -> None:
    target = 512 * MiB
    assert expected_output_files(10, target) == 1
    # 10.1 targets: the remainder is spread (average under 110% of the target).
    assert expected_output_files(int(10.1 * target), target) == 10
    # 10.8 targets: the remainder is over min-file-size (75%), it is a file of its own.
    assert expected_output_files(int(10.8 * target), target) == 11
    assert input_split_size(10, target) == target
    assert splits(10, target) == (1, 1)
    low, high = splits(5 * target, target)
    assert low <= 5 <= high


def test_hidden_names_are_skipped_except_hidden_looking_partition_folders() -> None:
    assert is_hidden("/a=1/.part-0.parquet.crc")
    assert is_hidden("/_SUCCESS")
    assert is_hidden("/_tmp/part-0.parquet")
    assert not is_hidden("/a=1/part-0.parquet")
    assert not is_hidden("/_p=1/part-0.parquet", ("_p=",))
    assert is_hidden("/_p=1/.part-0.parquet.crc", ("_p=",))


def test_partition_labels_read_back_even_with_slashes_in_values() -> None:
    two = spec(0, (VENDOR, "v", IdentityTransform()), (TS, "day", DayTransform()))
    assert parse_label(two, "v=a/b=c/day=2024-08-01") == ("a/b=c", "2024-08-01")
    assert parse_label(two, "day=2024-08-01") is None


def test_partition_labels_read_back_whatever_their_values_hold() -> None:
    """Every label written from values reads back to them, one to three fields.

    Through the one-split path (no value holds a "/") and the walk (some do).
    """
    import itertools

    three = spec(
        0,
        (VENDOR, "v", IdentityTransform()),
        (TS, "day", DayTransform()),
        (TRIP, "vb", BucketTransform(4)),
    )
    values = ["1", "", "null", "a=b", "a/b", "x/day=y", "é/ü", "=", "/", "v=1", "day=2"]
    for width in (1, 2, 3):
        fields = spec(0, *[(f.source_id, f.name, f.transform) for f in three.fields[:width]])
        names = [f.name for f in fields.fields]
        labels, expected = [], []
        for chosen in itertools.product(values, repeat=width):
            label = "/".join(f"{n}={v}" for n, v in zip(names, chosen, strict=True))
            following = [f"/{n}=" for n in names[1:]]
            if any(f in v for v in chosen for f in following):
                continue  # a value holding a later field's "/NAME=" is ambiguous by design
            assert parse_label(fields, label) == chosen, label
            labels.append(label)
            expected.append(chosen)
        # In a batch: all at once (the walk, some values hold "/"), and only the plain ones
        # (cut column by column), each answer parse_label's.
        assert parse_labels(fields, labels) == expected
        plain = [i for i, chosen in enumerate(expected) if not any("/" in v for v in chosen)]
        assert parse_labels(fields, [labels[i] for i in plain]) == [expected[i] for i in plain]
        assert parse_labels(fields, [*labels[:3], "nope=1"]) == [*expected[:3], None]
    assert parse_label(three, "v=1/day=2") is None  # a field missing
    assert parse_label(three, "v=1/vb=2/day=3") is None  # out of order
    assert parse_labels(three, ["v=1/day=2", "v=1/vb=2/day=3"]) == [None, None]
    assert parse_labels(three, []) == []
