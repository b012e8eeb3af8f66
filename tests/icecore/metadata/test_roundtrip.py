"""serialize_metadata(parse_metadata(x)) == json.loads(x) for every metadata.json Spark writes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from icecore.metadata import parse_metadata, serialize_metadata, serialize_metadata_json
from tests.icecore.metadata.conftest import DATA, SPARK_GOLDEN


def test_the_golden_set_covers_every_format_version() -> None:
    versions = {json.loads(p.read_text())["format-version"] for p in SPARK_GOLDEN}
    assert len(SPARK_GOLDEN) >= 8
    assert versions == {1, 2, 3}


@pytest.mark.parametrize("path", SPARK_GOLDEN, ids=lambda p: p.name)
def test_spark_golden_round_trips(path: Path) -> None:
    text = path.read_text()
    md = parse_metadata(text, str(path))
    out = serialize_metadata(md)
    assert out == json.loads(text)
    # Key order is kept too, so a rewritten file diffs cleanly against its source.
    assert list(out) == list(json.loads(text))


@pytest.mark.parametrize("path", SPARK_GOLDEN, ids=lambda p: p.name)
def test_spark_golden_json_text_is_byte_identical(path: Path) -> None:
    # Iceberg (Java) writes compact JSON; writing back an unchanged file reproduces it.
    text = path.read_text()
    assert serialize_metadata_json(parse_metadata(text, str(path))) == text


@pytest.mark.parametrize(
    "name", ["handwritten/v1-legacy.metadata.json", "handwritten/v3-full.metadata.json"]
)
def test_handwritten_golden_round_trips(name: str) -> None:
    text = (DATA / name).read_text()
    assert serialize_metadata(parse_metadata(text, name)) == json.loads(text)


@pytest.mark.parametrize("path", SPARK_GOLDEN[:3], ids=lambda p: p.name)
def test_gzip_metadata_is_decompressed(path: Path) -> None:
    raw = path.read_bytes()
    md = parse_metadata(gzip.compress(raw), f"{path.stem}.gz.metadata.json")
    assert serialize_metadata(md) == json.loads(raw)
    assert md == parse_metadata(raw)


def test_parse_accepts_bytes_and_str_alike() -> None:
    path = SPARK_GOLDEN[0]
    assert parse_metadata(path.read_bytes()) == parse_metadata(path.read_text())


def test_serialized_output_does_not_share_state_with_the_model() -> None:
    text = (DATA / "handwritten/v3-full.metadata.json").read_text()
    md = parse_metadata(text)
    first = serialize_metadata(md)
    first["x-future-top-level"]["nested"].append("mutated")
    first["snapshots"][1]["x-writer-extension"]["parts"].clear()
    assert serialize_metadata(md) == json.loads(text)


@pytest.mark.spark
def test_every_metadata_file_spark_writes_round_trips(demo_warehouse: Path) -> None:
    files = sorted(demo_warehouse.glob("**/*.metadata.json"))
    versions: set[int] = set()
    for path in files:
        raw = path.read_bytes()
        expected = json.loads(raw)
        versions.add(expected["format-version"])
        md = parse_metadata(raw, str(path))
        assert serialize_metadata(md) == expected, path
    assert versions == {1, 2, 3}
    assert len(files) >= 10
