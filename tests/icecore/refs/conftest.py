"""Fixtures for ref operation tests: private Spark catalogs for copies of the fixture tables.

Every test that commits works on a copy (:mod:`tests.ui.copies`): the shared fixture
warehouse is never changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs


@pytest.fixture(scope="module")
def evo(spark: Any, demo_warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    """Private Spark catalogs (SQL and Hadoop) for this module's table copies."""
    return register_catalogs(spark, tmp_path_factory.mktemp("refs"))
