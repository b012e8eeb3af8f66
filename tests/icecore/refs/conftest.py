"""Fixtures for ref-operation tests: private Spark catalogs for copies of the fixture tables.

Every test that commits works on copies (tests/ui/copies.py), two per scenario: Icecore
acts on one, Spark's own procedure on the other, and their metadata must agree. The shared
fixture warehouse is only read.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs
from tests.pg_server import PgServer


@pytest.fixture(scope="module")
def cats(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    """A JdbcCatalog (SQLite) and a Hadoop catalog on a private warehouse, for this module."""
    return register_catalogs(spark, tmp_path_factory.mktemp("refs"))


@pytest.fixture(scope="module")
def cats_pg(
    spark: Any, pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory
) -> EvoCatalogs:
    """As ``cats``, plus a JdbcCatalog on a fresh PostgreSQL database (kind ``pg``)."""
    uri = pg_server.create_database(f"refs_{uuid.uuid4().hex[:8]}")
    return register_catalogs(spark, tmp_path_factory.mktemp("refs_pg"), pg_uri=uri)
