"""Fixtures for the metadata tests: golden metadata.json files under tests/data/metadata."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "data" / "metadata"
SPARK_GOLDEN = sorted((DATA / "spark").glob("*.metadata.json"))
"""Metadata files Spark + Iceberg 1.10 wrote for the mini demo warehouse, "/warehouse"-rooted."""


def golden_text(name: str) -> str:
    """The text of a golden file, by path relative to tests/data/metadata."""
    return (DATA / name).read_text()


def golden_json(name: str) -> dict[str, Any]:
    """A golden file's JSON, decoded independently of the code under test."""
    result: dict[str, Any] = json.loads(golden_text(name))
    return result


@pytest.fixture
def v1_legacy_text() -> str:
    return golden_text("handwritten/v1-legacy.metadata.json")


@pytest.fixture
def v3_full_text() -> str:
    return golden_text("handwritten/v3-full.metadata.json")
