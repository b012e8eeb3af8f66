"""The app on a table behind a REST catalog: Icecore's own ``serve-rest`` over SQLite.

PyIceberg (a peer) creates and writes the table through the server, which asks for OAuth2
client credentials; the app opens it by the name of its ``[catalogs.sales]`` entry, whose
secret sits in an environment variable. The backing SQLite catalog, read without the
server, is the judge of what a commit did. HTTP requests are counted by a spy on
``requests``' transport (real requests still go out and come back).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
import requests.adapters
import streamlit as st
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from streamlit.testing.v1 import AppTest

from icecore.catalog.sql import SqlCatalog
from tests.icecore.server.conftest import RestServer, start_server, stop_server
from tests.ui.helpers import as_shown, drive, keys, no_problems, open_app
from ui import app

CLIENT_ID = "app"
SECRET = "s3cr3t-never-shown"
CREDENTIAL_ENV = "SALES_REST_CREDENTIAL"
TABLE = "shop.orders"
PAGES = [page.file for page in app.PAGES]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """``serve-rest`` with a credential, holding shop.orders with two snapshots."""
    running = start_server(
        tmp_path_factory.mktemp("ui-rest") / "warehouse",
        "--credential",
        f"{CLIENT_ID}:{SECRET}",
    )
    try:
        peer = RestCatalog(
            "peer",
            uri=running.url,
            credential=f"{CLIENT_ID}:{SECRET}",
            **{"oauth2-server-uri": f"{running.url}/v1/oauth/tokens"},
        )
        peer.create_namespace("shop")
        table = peer.create_table(
            TABLE,
            Schema(
                NestedField(1, "id", LongType(), required=False),
                NestedField(2, "city", StringType(), required=False),
            ),
        )
        first = {"id": pa.array([1, 2, 3], pa.int64()), "city": ["Milan", None, "Oslo"]}
        table.append(pa.table(first))
        table.append(pa.table({"id": pa.array([4], pa.int64()), "city": ["Paris"]}))
        yield running
    finally:  # also when writing the table failed
        stop_server(running)


@pytest.fixture
def sales(server: RestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RestServer:
    """The app serving ``[catalogs.sales]`` (REST, credential from the environment)."""
    config = tmp_path / "icecore.toml"
    config.write_text(
        "[catalogs.sales]\n"
        'type = "rest"\n'
        f'uri = "{server.url}"\n'
        f'credential-env = "{CREDENTIAL_ENV}"\n'
    )
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.setenv(CREDENTIAL_ENV, f"{CLIENT_ID}:{SECRET}")
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path / "warehouse"))
    monkeypatch.delenv("ICECORE_OPEN_CATALOGS", raising=False)
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    st.cache_data.clear()  # another test's server may have been served under this name
    st.cache_resource.clear()
    return server


class Requests:
    """Every HTTP request the process sends, as ``METHOD path`` (a spy: they still go out)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def loads(self, table: str) -> int:
        """How many loadTable calls named ``table`` (``ns.name``)."""
        ns, name = table.split(".")
        return self.sent.count(f"GET /v1/namespaces/{ns}/tables/{name}")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Requests:
    """Count the requests sent through ``requests``' transport adapter."""
    spy = Requests()
    original = requests.adapters.HTTPAdapter.send

    def send(self: Any, request: requests.PreparedRequest, *args: Any, **kw: Any) -> Any:
        path = (request.path_url or "").split("?")[0]
        spy.sent.append(f"{request.method} {path}")
        return original(self, request, *args, **kw)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", send)
    return spy


def shown(at: AppTest) -> str:
    """Every text the page and its link show (to look for a secret)."""
    parts: list[str] = [str(dict(at.query_params))]
    for kind in ("title", "header", "subheader", "caption", "markdown", "text", "code"):
        parts += [str(e.value) for e in at.get(kind)]
    parts += [str(e.value) for e in at.error] + [str(e.value) for e in at.info]
    parts += [str(df.value.to_dict()) for df in at.dataframe]
    parts += [str(s.options) for s in at.sidebar.selectbox]
    return "\n".join(parts)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_the_rest_table_by_its_name(sales: RestServer, page: str) -> None:
    at = open_app(page, catalog="sales", table=TABLE)
    no_problems(at)
    assert at.query_params["catalog"] in ("sales", ["sales"])
    assert SECRET not in shown(at)


def test_the_sidebar_opens_the_rest_catalog_by_name(sales: RestServer) -> None:
    at = open_app(app.OVERVIEW.file)
    assert "sales" in at.sidebar.selectbox(key="sb_catalog").options
    at.sidebar.selectbox(key="sb_catalog").set_value("sales").run()
    assert at.sidebar.selectbox(key="sb_table").options == ["orders"]  # shown by name
    at.sidebar.selectbox(key="sb_table").set_value(TABLE).run()
    no_problems(at)
    assert as_shown(at.title[0].value) == TABLE
    # A link naming the entry's URI names the same served catalog, and then names it by name.
    at = open_app(app.OVERVIEW.file, catalog=sales.url, table=TABLE)
    no_problems(at)
    assert at.query_params["catalog"] in ("sales", ["sales"])


def test_time_travel_through_rest_reads_the_older_snapshot(sales: RestServer) -> None:
    backing = SqlCatalog(sales.catalog_db).load_table(TABLE)
    first = min(backing.snapshots(), key=lambda s: s.sequence_number)
    at = open_app(
        app.SCAN_PREVIEW.file, catalog="sales", table=TABLE, snapshot=str(first.snapshot_id)
    )
    no_problems(at)
    rows = next(df.value for df in at.dataframe if "id" in df.value.columns)
    assert sorted(rows["id"]) == [1, 2, 3]


def test_one_load_table_per_page_run(sales: RestServer, sent: Requests) -> None:
    # A deep link runs the page alone, on a fresh process's empty caches.
    at = AppTest.from_file(str(app.METADATA_TREE.path), default_timeout=180)
    at.query_params.update({"catalog": "sales", "table": TABLE})
    at.run()
    no_problems(at)
    assert sent.loads(TABLE) == 1, sent.sent
    sent.sent.clear()
    at.run()
    no_problems(at)
    assert sent.loads(TABLE) == 1, sent.sent
    assert not [r for r in sent.sent if r.startswith("POST")], sent.sent


def test_an_evolution_commit_lands_through_rest(sales: RestServer, sent: Requests) -> None:
    before = SqlCatalog(sales.catalog_db).load_table(TABLE)
    at = open_app(app.EVOLUTION.file, catalog="sales", table=TABLE)
    no_problems(at)
    at = drive(
        at,
        ("text_input", "evo_f_add_name", "note"),
        ("text_input", "evo_f_add_type", "string"),
        ("checkbox", "evo_confirm", True),
        ("button", "evo_commit", None),
    )
    no_problems(at)
    after = SqlCatalog(sales.catalog_db).load_table(TABLE)
    assert after.metadata_location != before.metadata_location
    field = after.metadata.current_schema().find_field_by_name("note")
    assert field is not None and field.field_id == before.metadata.last_column_id + 1
    commits = [r for r in sent.sent if r == "POST /v1/namespaces/shop/tables/orders"]
    assert len(commits) == 1, sent.sent
    assert SECRET not in shown(at)


def test_a_rest_uri_is_typed_only_with_open_catalogs(
    sales: RestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_app(app.OVERVIEW.file)
    assert "sb_catalog_other" not in keys(at.sidebar.text_input)
    # Not served, not open: a link to another REST server is refused without a request.
    at = open_app(app.OVERVIEW.file, catalog="http://127.0.0.1:9/other", table=TABLE)
    assert at.error and "not served" in at.error[0].value
    monkeypatch.setenv("ICECORE_OPEN_CATALOGS", "1")
    monkeypatch.setenv("ICECORE_REST_CREDENTIAL", f"{CLIENT_ID}:{SECRET}")
    at = open_app(app.OVERVIEW.file)
    # A secret typed into the URI never reaches the selection, the link or the page.
    port = sales.url.rsplit(":", 1)[1]
    at.sidebar.text_input(key="sb_catalog_other").input(
        f"http://{CLIENT_ID}:{SECRET}@127.0.0.1:{port}/?token={SECRET}"
    ).run()
    at.sidebar.selectbox(key="sb_table").set_value(TABLE).run()
    no_problems(at)
    assert as_shown(at.title[0].value) == TABLE
    assert at.query_params["catalog"] in (
        f"http://127.0.0.1:{port}/",
        [f"http://127.0.0.1:{port}/"],
    )
    assert SECRET not in shown(at)
    assert SECRET not in repr(at.session_state)


def test_the_landing_page_lists_rest_tables_without_loading_them(
    sales: RestServer, sent: Requests
) -> None:
    at = open_app(catalog="sales")
    no_problems(at)
    listing = next(df.value for df in at.dataframe if "table" in df.value.columns)
    assert list(listing["table"]) == [TABLE]
    assert sent.loads(TABLE) == 0, sent.sent  # the listing is listTables only
    assert "GET /v1/namespaces/shop/tables" in sent.sent
    # Asked for, one table is loaded, and its location is the backing catalog's.
    at.selectbox(key="home_location_of").set_value(0).run()
    no_problems(at)
    assert sent.loads(TABLE) == 1, sent.sent
    backing = SqlCatalog(sales.catalog_db).load_table(TABLE).metadata_location
    assert backing in [t.value for t in at.text]


def test_the_health_of_rest_tables_is_read_when_asked(sales: RestServer, sent: Requests) -> None:
    at = open_app(catalog="sales")
    assert sent.loads(TABLE) == 0, sent.sent
    at.toggle(key="home_rest_health").set_value(True).run()
    no_problems(at)
    assert sent.loads(TABLE) >= 1, sent.sent
    listing = next(df.value for df in at.dataframe if "table" in df.value.columns)
    row = listing.set_index("table").loc[TABLE]
    # The fixture appended 3 rows, then 1 row: two snapshots, a data file each.
    assert (row["rows"], row["snapshots"], row["data files"]) == (4, 2, 2)
    assert row["error"] == ""


def test_a_rest_commit_is_checked_for_the_session_s_role(
    sales: RestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A REST catalog applies updates itself (commit_table): the owner check applies there too."""
    from icecore.access import Principal, Role
    from icecore.errors import Forbidden
    from icecore.table_data import access_of
    from ui import data, identity

    config = Path(os.environ["ICECORE_CONFIG"])
    config.write_text(
        config.read_text()
        + '\n[[grants]]\ngroup = "readers"\nrole = "reader"\ntables = ["shop.*"]\n'
        + '\n[[grants]]\ngroup = "owners"\nrole = "owner"\ntables = ["shop.*"]\n'
    )
    before = SqlCatalog(sales.catalog_db).load_table(TABLE)
    reader = Principal(subject="r", groups=("readers",))
    monkeypatch.setattr(identity, "current_principal", lambda: reader)
    table = data.open_table("sales", TABLE)
    assert access_of(table).role is Role.READER
    with pytest.raises(Forbidden, match="needs the owner role"):
        table.set_properties(team="data")
    assert SqlCatalog(sales.catalog_db).load_table(TABLE).metadata_location == (
        before.metadata_location
    )
    owner = Principal(subject="o", groups=("owners",))
    monkeypatch.setattr(identity, "current_principal", lambda: owner)
    committed = data.open_table("sales", TABLE).set_properties(team="data")
    after = SqlCatalog(sales.catalog_db).load_table(TABLE)
    assert after.metadata_location != before.metadata_location
    assert after.metadata.properties["team"] == "data"
    assert access_of(committed).role is Role.OWNER, "the committed table stays guarded"
