"""PyIceberg-configured catalogs and the app's boundary: a user's config is not a deployment's."""

from __future__ import annotations

from pathlib import Path

import pytest

from icecore.catalog import load_catalog
from tests.pyiceberg_env import isolate
from tests.ui.helpers import tiny_warehouse
from ui.served import NotServed, admit, served_keys

SECRET = "pw-in-a-pyiceberg-uri"


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A served warehouse, and a PyIceberg catalog ``lake`` in the environment."""
    isolate(monkeypatch, tmp_path)
    monkeypatch.delenv("ICECORE_OPEN_CATALOGS", raising=False)
    monkeypatch.setenv("ICECORE_CATALOG", str(tiny_warehouse(tmp_path / "served")))
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__TYPE", "hadoop")
    monkeypatch.setenv(
        "PYICEBERG_CATALOG__LAKE__WAREHOUSE", str(tiny_warehouse(tmp_path / "lake", "hr.pay"))
    )
    return tmp_path


def test_a_pyiceberg_catalog_is_not_served_by_default(deployment: Path) -> None:
    assert [str(t) for t in load_catalog("lake").list_tables()] == ["hr.pay"]  # it opens...
    assert "lake" not in served_keys()  # ... but the deployment does not serve it
    with pytest.raises(NotServed):
        admit("lake")


def test_a_deployment_serves_the_pyiceberg_catalog_it_names(
    deployment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", "lake")
    assert admit("lake") == "lake" and served_keys()[0] == "lake"


def test_open_catalogs_admit_a_pyiceberg_name_as_its_name(
    deployment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its properties (a password in a uri, say) stay in the configuration: the app holds
    # and shows the name only, and the catalog's uri is that name.
    monkeypatch.setenv("ICECORE_OPEN_CATALOGS", "1")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__TOKEN", SECRET)
    assert admit("lake") == "lake"
    assert load_catalog("lake").uri == "lake"
