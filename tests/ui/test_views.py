"""Page view helpers that bound what a user's input can make a page draw."""

from __future__ import annotations

import pytest

from ui import views
from ui.views import MAX_TEXT, clip


def test_clip_keeps_short_text_and_says_what_it_cut() -> None:
    assert clip("a = 1") == "a = 1"
    exact = "x" * MAX_TEXT
    assert clip(exact) == exact
    long = " OR ".join(f"id = {i}" for i in range(10_000))
    shown = clip(long)
    assert shown.startswith(long[:MAX_TEXT])
    assert shown.endswith(f"({len(long) - MAX_TEXT:,} more characters)")
    assert len(shown) < MAX_TEXT + 40


@pytest.mark.parametrize(
    ("n", "short"),
    [
        (0, "0"),
        (99_999, "99,999"),
        (100_000, "100.0 k"),
        (488_395, "488.4 k"),
        (999_950, "1.0 M"),
        (100_010_123, "100.0 M"),
        (2_500_000_000, "2.5 B"),
        (7 * 10**15, "7,000.0 T"),
        (-1_234_567, "-1.2 M"),
    ],
)
def test_big_counts_are_written_short_enough_for_a_metric_tile(n: int, short: str) -> None:
    """Issue 20: tiles cut "100,010,1…"; a count is at most ~9 characters and a scale."""
    assert views.short_count(n) == short


def test_a_tile_keeps_the_exact_count_for_its_hover_text() -> None:
    assert views.count_tile(488_395, 50_000_123) == ("488.4 k of 50.0 M", "488,395 of 50,000,123")
    assert views.count_tile(16, 1_000_000) == ("16 of 1.0 M", "16 of 1,000,000")
    assert views.count_tile(12_345) == ("12,345", None)  # nothing cut: no hover text


PARQUET = (
    "/srv/warehouse/demo/trips/data/pickup_ts_hour=2024-09-20-10/vendor_id_bucket=3/"
    "00001-5-8d2f1c3a-7b4e-4f0e-9c1d-2a6b5e4f3d21-00001.parquet"
)


def test_a_long_path_is_shortened_from_the_left_keeping_the_file_name() -> None:
    shown = views.short_path(PARQUET)
    assert len(shown) <= views.SHORT_PATH
    assert shown.startswith("…/")
    assert shown.endswith("/00001-5-8d2f1c3a-7b4e-4f0e-9c1d-2a6b5e4f3d21-00001.parquet")
    assert PARQUET.endswith(shown[1:])  # whole folders only: nothing cut inside a name


@pytest.mark.parametrize(
    ("path", "limit", "shown"),
    [
        ("/a/b/c.parquet", 64, "/a/b/c.parquet"),  # short enough: unchanged
        ("/warehouse/db/t/data/part/f.parquet", 20, "…/part/f.parquet"),  # 21 with data/
        ("/w/" + "x" * 80 + ".avro", 20, "…/" + "x" * 80 + ".avro"),  # the name stays whole
        ("s3://bucket/db/t/metadata/snap-1-1-abc.avro", 30, "…/t/metadata/snap-1-1-abc.avro"),
    ],
)
def test_short_path_cases(path: str, limit: int, shown: str) -> None:
    assert views.short_path(path, limit) == shown


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("data files", 2831, "2,831"),
        ("orphan_bytes", 35_651_584, "34.0 MiB"),
        ("rewritten_bytes_count", 512, "512 B"),
        ("share of data files", 0.873, "0.873"),
        ("oldest expirable", None, "—"),
        ("note", "", "—"),
        ("data_files_after", [2831, 3000], "2,831 · 3,000"),
        ("data_files_after", (2831, 3000), "2,831 to 3,000"),  # an estimate's range
        ("data_files_after", (12, 12), "12"),
        ("enabled", True, "yes"),
        ("ratio", 12345.6, "12,346"),
        ("empty list", [], "none"),
    ],
)
def test_values_are_text_for_people(key: str, value: object, text: str) -> None:
    assert views.value_text(key, value) == text


def test_key_value_rows_put_keys_in_words() -> None:
    rows = views.key_value_rows(
        {"rewritten_files_count": 1200, "deleted_bytes": 2048, "first_snapshot": None}, "estimate"
    )
    assert rows == [
        {"estimate": "rewritten files", "value": "1,200"},
        {"estimate": "deleted bytes", "value": "2.0 KiB"},
        {"estimate": "first snapshot", "value": "—"},
    ]
    assert views.key_value_rows((("median data file", "6.5 KiB"),), "measure") == [
        {"measure": "median data file", "value": "6.5 KiB"}
    ]
    assert views.key_value_rows(
        {"added_files_count": 3, "data_files_after": (3, 4)},
        "estimate",
        labels={"added_files_count": "files written, at least"},
    ) == [
        {"estimate": "files written, at least", "value": "3"},
        {"estimate": "data files after", "value": "3 to 4"},
    ]


def test_counts_and_durations_read_as_words() -> None:
    assert views.count_of(1, "row") == "1 row"
    assert views.count_of(0, "row") == "0 rows"
    assert views.count_of(2_000, "column") == "2,000 columns"
    assert views.duration_text(86_400_000) == "1 day"
    assert views.duration_text(7 * 86_400_000) == "7 days"
    assert views.duration_text(90 * 60_000) == "90 minutes"
    assert views.duration_text(1_500) == "1,500 ms"
    assert views.duration_text(None, "table default") == "table default"
