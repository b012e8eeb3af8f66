"""The deployment boundary: a link names only the catalogs the app serves, and only their tables.

Tried as a hostile visitor would, with nothing but links: another folder, ``/``, a
metadata.json elsewhere, a PostgreSQL server on any host and port, an object store. Each
gets the same one sentence, and nothing it names is touched: a socket listening where the
link points sees no connection, and a missing and an empty folder answer alike.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.helpers import as_shown, keys, no_problems, open_app, tiny_warehouse
from ui import app

OVERVIEW = app.OVERVIEW.file


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A served warehouse (``ICECORE_CATALOG``), read-only, open catalogs not allowed."""
    root = tiny_warehouse(tmp_path / "served")
    monkeypatch.setenv("ICECORE_CATALOG", str(root))
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    monkeypatch.setenv("ICECORE_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.delenv("ICECORE_OPEN_CATALOGS", raising=False)
    return root


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    """A warehouse the app does not serve, with a table whose name must never show."""
    return tiny_warehouse(tmp_path / "foreign", "private.payroll")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP socket listening on 127.0.0.1, to see whether the app connects to it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def shown(at: AppTest) -> str:
    """Every text, option and table cell of the run (the URL aside: the visitor typed it)."""
    parts = []
    for element in [*at.sidebar.selectbox, *at.selectbox]:
        parts += [str(element.value), *map(str, element.options)]
    for kind in ("markdown", "caption", "error", "warning", "info", "text", "code", "title"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [str(df.value.to_dict()) for df in at.dataframe]
    return "\n".join(parts)


def only_not_served(at: AppTest) -> None:
    """The page shows the one sentence and nothing of the catalog the link named."""
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1, [e.value for e in at.error]
    assert as_shown(at.error[0].value).startswith("This catalog is not served here")
    assert not at.dataframe


def links(foreign: Path, tmp_path: Path, port: int) -> dict[str, str]:
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    return {
        "foreign folder": str(foreign),
        "root": "/",
        "proc": "/proc/1",
        "missing folder": str(tmp_path / "missing"),
        "empty folder": str(empty),
        "metadata.json": str(foreign / "private/payroll/metadata/v1.metadata.json"),
        "postgresql": f"postgresql://icecore:secret@127.0.0.1:{port}/x",
        "s3": "s3://bucket/x",
        "sqlite": f"sqlite:///{tmp_path / 'other.db'}",
        "relative": "../foreign",
    }


@pytest.mark.parametrize("page", [None, OVERVIEW])
def test_a_link_to_a_catalog_not_served_is_one_sentence_and_touches_nothing(
    served: Path,
    foreign: Path,
    tmp_path: Path,
    listener: socket.socket,
    page: str | None,
) -> None:
    port = listener.getsockname()[1]
    for name, catalog in links(foreign, tmp_path, port).items():
        at = open_app(page, catalog=catalog, table="private.payroll")
        only_not_served(at)
        assert "payroll" not in shown(at), name
        assert catalog not in shown(at) or catalog == "/", name
        # The sidebar offers the served catalog only, and no box to type another.
        assert at.sidebar.selectbox(key="sb_catalog").options == [str(served)]
        assert "sb_catalog_other" not in keys(at.sidebar.text_input)
    with pytest.raises(BlockingIOError):
        listener.accept()  # the postgresql:// link made no connection
    assert not (tmp_path / "other.db").exists()  # sqlite:/// did not create its file


def test_the_served_catalog_may_be_linked_in_any_spelling(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(served.parent)
    for spelling in (str(served), f"{served}/", "served", "./served", f"{served}/../served"):
        at = open_app(OVERVIEW, catalog=spelling, table="db.zones")
        no_problems(at)
        assert as_shown(at.title[0].value) == "db.zones"
        assert at.query_params["catalog"] in (str(served), [str(served)])


@pytest.mark.parametrize(
    "table",
    [
        "db/.zones",  # a filesystem catalog would open <warehouse>/db//zones
        "../../foreign.payroll",
        "/etc.passwd",
        "db.zones/../../../foreign/private/payroll",
        "db\\..\\x.y",
    ],
)
def test_a_table_the_catalog_does_not_list_is_refused_before_it_is_opened(
    served: Path, table: str
) -> None:
    at = open_app(OVERVIEW, catalog=str(served), table=table)
    assert not at.exception
    assert len(at.error) == 1
    assert "not in this catalog" in at.error[0].value or "namespace" in at.error[0].value
    assert str(served) not in at.error[0].value  # no path of the server in the sentence
    assert not at.dataframe and not at.metric


def test_named_catalogs_are_served_by_name(
    served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sales = tiny_warehouse(tmp_path / "deploy" / "sales-lake", "sales.orders")
    config = tmp_path / "deploy" / "icecore.toml"
    config.write_text('[catalogs.sales]\nuri = "sales-lake"\n')
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    at = open_app(OVERVIEW, catalog="sales", table="sales.orders")
    no_problems(at)
    assert as_shown(at.title[0].value) == "sales.orders"
    assert at.sidebar.selectbox(key="sb_catalog").options == [str(served), "sales"]
    # The entry's folder in a link names the same served catalog, which the link then names.
    at = open_app(OVERVIEW, catalog=str(sales), table="sales.orders")
    no_problems(at)
    assert at.query_params["catalog"] in ("sales", ["sales"])
    # Picking it in the sidebar opens it by name.
    at = open_app(OVERVIEW)
    at.sidebar.selectbox(key="sb_catalog").set_value("sales").run()
    at.sidebar.selectbox(key="sb_table").set_value("sales.orders").run()
    no_problems(at)
    assert as_shown(at.title[0].value) == "sales.orders"


def test_open_catalogs_keep_the_workstation_behaviour(
    served: Path, foreign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_OPEN_CATALOGS", "1")
    at = open_app(OVERVIEW, catalog=str(foreign), table="private.payroll")
    no_problems(at)
    assert as_shown(at.title[0].value) == "private.payroll"
    assert "sb_catalog_other" in keys(at.sidebar.text_input)
    at.sidebar.text_input(key="sb_catalog_other").input(str(served)).run()
    at.sidebar.selectbox(key="sb_table").set_value("db.zones").run()
    no_problems(at)
    assert as_shown(at.title[0].value) == "db.zones"


def test_an_object_store_link_is_one_sentence_when_open_catalogs_are_allowed(
    served: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ICECORE_OPEN_CATALOGS", "1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata lookup
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    at = open_app(catalog="s3://bucket/x")
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1
    assert "Cannot open the warehouse s3" in at.error[0].value
