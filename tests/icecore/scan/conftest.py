"""Fixtures for scan tests: the Spark-written NULL/NaN tables (see ``null_tables``)."""

from __future__ import annotations

from typing import Any

import pytest

from .null_tables import NullTables, build_null_tables


@pytest.fixture(scope="session")
def null_tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> NullTables:
    """Both NULL/NaN tables, written once by Spark in a private Hadoop catalog."""
    return build_null_tables(spark, tmp_path_factory.mktemp("nulls") / "warehouse")
