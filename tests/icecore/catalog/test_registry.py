"""The registry of catalog types: what opens what, and adding a type with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from icecore.catalog import load_catalog, registry
from icecore.catalog.registry import CatalogType
from icecore.errors import Unsupported
from icecore.server.backend import Backend
from tests.pyiceberg_env import isolate
from tests.ui.helpers import tiny_warehouse

TOY = CatalogType("toy", "tests.icecore.catalog.toy_catalog:load_toy")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No configuration but the test's."""
    isolate(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("uri", "kind"),
    [
        ("http://127.0.0.1:1/api", "rest"),
        ("HTTPS://catalog.example", "rest"),
        ("sqlite:///x.db", "sql"),
        ("postgresql+psycopg://u@h/db", "sql"),
        ("postgres://u@h/db", "sql"),
        ("s3a://bucket/warehouse", "hadoop"),
        ("warehouse", None),
        ("/abs/folder", None),
        ("ftp://x", None),
    ],
)
def test_a_uri_scheme_picks_its_type(uri: str, kind: str | None) -> None:
    found = registry.for_uri(uri)
    assert (found.name if found is not None else None) == kind


def test_each_open_catalog_answers_what_callers_ask(tmp_path: Path) -> None:
    tiny_warehouse(tmp_path / "wh")
    files = load_catalog(str(tmp_path / "wh"))
    assert (files.kind, files.hadoop_layout, files.can_commit) == ("hadoop", True, True)
    assert files.warehouse_root == str(tmp_path / "wh")
    assert files.iceberg_catalog() == (None, {"type": "hadoop", "warehouse": str(tmp_path / "wh")})
    # A relative warehouse folder (the test runs in tmp_path) is served and handed to Spark
    # by its absolute path.
    assert load_catalog("wh").warehouse_root == str(tmp_path / "wh")
    static = load_catalog(str(tmp_path / "wh/db/zones/metadata/v1.metadata.json"))
    assert (static.can_commit, static.hadoop_layout, static.warehouse_root) == (False, False, None)
    assert static.iceberg_catalog() == (None, {})


def test_a_new_type_is_one_module_and_one_registry_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny_warehouse(tmp_path / "wh")
    metadata = tmp_path / "wh/db/zones/metadata/v1.metadata.json"
    monkeypatch.setenv("PYICEBERG_CATALOG__PLAY__TYPE", "toy")
    monkeypatch.setenv("PYICEBERG_CATALOG__PLAY__METADATA", str(metadata))
    with pytest.raises(Unsupported, match="opens hadoop, rest, sql catalogs"):
        load_catalog("play")
    monkeypatch.setattr(registry, "CATALOG_TYPES", (*registry.CATALOG_TYPES, TOY))
    toy = load_catalog("play")
    assert toy.kind == "toy" and [str(t) for t in toy.list_tables()] == ["static.zones"]
    # The server serves it read-only, asking the catalog, not its class.
    backend = Backend(toy)
    assert backend.admin is None and backend.locations.roots == ()
    with pytest.raises(Unsupported, match="cannot create a namespace|cannot"):
        backend._need_admin("create a namespace")
