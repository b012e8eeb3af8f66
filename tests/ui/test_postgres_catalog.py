"""A PostgreSQL catalog in the app: picked by ICECORE_CATALOG, a link or the sidebar.

The password a URI carries must never reach the URL, the page or the cache key; the app
still opens the catalog with it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from streamlit.testing.v1 import AppTest

from tests.icecore.evolution.hand_table import write_table
from tests.pg_server import PgServer, with_catalog_tables
from tests.ui.helpers import no_problems, open_app
from ui import app


@pytest.fixture
def pg_catalog(pg_server: PgServer, tmp_path: Path) -> str:
    """A PostgreSQL catalog holding one table, ``db.hand``; its URI with the password."""
    uri = with_catalog_tables(pg_server.create_database(f"ui_{uuid.uuid4().hex[:8]}"))
    folder = write_table(tmp_path, 2, name="hand")
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO iceberg_tables VALUES ('icecore', 'db', 'hand', %s, NULL)",
            (str(folder / "metadata" / "v1.metadata.json"),),
        )
    return uri


def everything_shown(at: AppTest) -> str:
    """The URL's query and every widget value, option and text element of the run."""
    parts = [str(dict(at.query_params))]
    for element in [*at.sidebar.selectbox, *at.selectbox]:
        parts += [str(element.value), *map(str, element.options)]
    for kind in ("markdown", "caption", "error", "warning", "info", "text", "code", "title"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [str(df.value.to_dict()) for df in at.dataframe]
    return "\n".join(parts)


def test_the_password_stays_out_of_links_and_pages(
    pg_catalog: str, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = pg_catalog.replace(f":{pg_server.password}@", "@")
    monkeypatch.setenv("ICECORE_CATALOG", pg_catalog)
    at = open_app()
    no_problems(at)
    assert set(at.dataframe[0].value["table"]) == {"db.hand"}
    assert bare in everything_shown(at)
    assert pg_server.password not in everything_shown(at)

    monkeypatch.delenv("ICECORE_CATALOG")
    monkeypatch.setenv("ICECORE_OPEN_CATALOGS", "1")  # a catalog the app does not serve
    linked = open_app(app.OVERVIEW.file, catalog=pg_catalog, table="db.hand")
    no_problems(linked)
    assert linked.query_params.get("catalog") in (None, bare, [bare])
    assert pg_server.password not in everything_shown(linked)


def test_a_wrong_password_is_one_sentence(
    pg_catalog: str, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = pg_catalog.replace(pg_server.password, "wrong-secret").replace("/ui_", "/other_ui_")
    monkeypatch.setenv("ICECORE_CATALOG", wrong)
    at = open_app()
    assert not at.exception
    assert len(at.error) == 1
    assert "refused the password" in at.error[0].value
    assert "wrong-secret" not in everything_shown(at)
