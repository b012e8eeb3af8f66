"""Named catalogs: ``[catalogs.NAME]`` entries of icecore.toml, opened by ``load_catalog``."""

from __future__ import annotations

from pathlib import Path

import pytest

from icecore.catalog import FilesystemCatalog, load_catalog
from icecore.config import load_config
from icecore.errors import NotFound, ValidationError
from tests.ui.helpers import tiny_warehouse


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An icecore.toml naming two catalogs (one relative to the file), in a folder of its own."""
    tiny_warehouse(tmp_path / "deploy" / "lake")
    tiny_warehouse(tmp_path / "other", "ops.jobs")
    path = tmp_path / "deploy" / "icecore.toml"
    path.write_text(
        "read_only = true\n"
        "[catalogs.sales]\n"
        'uri = "lake"\n'
        'owner = "finance"\n'
        "[catalogs.ops]\n"
        f'uri = "{tmp_path / "other"}"\n'
    )
    monkeypatch.setenv("ICECORE_CONFIG", str(path))
    monkeypatch.chdir(tmp_path)  # the relative uri must not depend on where the process runs
    return path


def test_a_configured_name_opens_its_catalog(config: Path) -> None:
    sales = load_catalog("sales")
    assert isinstance(sales, FilesystemCatalog)
    assert Path(sales.uri) == config.parent / "lake"
    assert [str(t) for t in sales.list_tables()] == ["db.zones"]
    assert [str(t) for t in load_catalog(" ops ").list_tables()] == ["ops.jobs"]


def test_entries_keep_every_property(config: Path) -> None:
    entry = load_config().catalogs["sales"]
    assert dict(entry.properties) == {"uri": str(config.parent / "lake"), "owner": "finance"}
    assert load_config().read_only is True


def test_an_unknown_name_is_still_a_folder_or_not_found(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        load_catalog("nosuch")
    # A folder beside the process whose name is not configured opens as before.
    tiny_warehouse(tmp_path / "plain")
    assert isinstance(load_catalog("plain"), FilesystemCatalog)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[catalogs.x\n", "not valid TOML"),
        ('[catalogs."a/b"]\nuri = "x"\n', "not a word"),
        ("[catalogs.x]\nowner = 'y'\n", "no uri"),
        ("catalogs = 3\n", "[catalogs] must be a table"),
        ("[catalogs.x]\nuri = 'w'\nnested = { a = 1 }\n", "plain key = value"),
    ],
)
def test_a_malformed_config_is_one_sentence(
    config: Path, text: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.write_text(text)
    with pytest.raises(ValidationError) as raised:
        load_catalog("x")
    assert says in str(raised.value) and str(config) in str(raised.value)


def test_without_a_config_file_nothing_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CONFIG", str(tmp_path / "absent.toml"))
    assert dict(load_config().catalogs) == {}
    with pytest.raises(NotFound):
        load_catalog("sales")
