"""Scan preview, Time travel and SQL as a viewer and as a masked reader see them.

DESIGN.md "Identity, roles and audit": a viewer gets the plan and the numbers, no row value
and one caption saying rows need the reader role, and no download; a masked reader gets the
rows without the masked columns and a caption naming them. The principal is the session's
(``ui.identity.current_principal``), its grants ``[[grants]]`` of ``ICECORE_CONFIG``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import ui.data
import ui.identity
from icecore.access import Principal
from icecore.catalog import load_table
from tests.ui.helpers import OpenPage, metrics, no_problems, texts
from ui import app

pytestmark = pytest.mark.spark

GRANTS = """
[[grants]]
group = "viewers"
role = "viewer"
tables = ["demo.*"]

[[grants]]
group = "no-email"
role = "reader"
tables = ["demo.*"]
mask = ["email"]
"""

READER_ROLE = "Rows need the reader role: you have the viewer role on demo.accounts"


@pytest.fixture
def as_group(
    open_page: OpenPage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., AppTest]:
    """Open a page as a member of one group of :data:`GRANTS`."""
    config = tmp_path / "icecore.toml"
    config.write_text(GRANTS, encoding="utf-8")
    monkeypatch.setenv("ICECORE_CONFIG", str(config))

    def opener(group: str, page: str, **params: str) -> AppTest:
        principal = Principal(group, name=group, groups=(group,), source="oidc")
        monkeypatch.setattr(ui.identity, "current_principal", lambda: principal)
        return open_page(page, **params)

    return opener


def _shown(at: AppTest) -> str:
    """The page's texts as read (Markdown escapes removed)."""
    return texts(at).replace("\\", "")


def _frames(at: AppTest) -> list[list[str]]:
    return [list(df.value.columns) for df in at.dataframe]


def test_a_viewer_gets_the_scan_plan_and_no_row(
    demo_warehouse: Path, as_group: Callable[..., AppTest]
) -> None:
    at = as_group("viewers", app.SCAN_PREVIEW.file, table="demo.accounts")
    no_problems(at)
    report = load_table(f"{demo_warehouse}::demo.accounts").scan().plan().report
    shown = metrics(at)
    assert shown["Data files planned"] == f"{report.data_files_planned:,} of {report.data_files:,}"
    assert READER_ROLE in _shown(at)
    assert all("account_id" not in columns for columns in _frames(at))  # no row anywhere
    assert not at.multiselect  # no columns to pick
    # Without a filter the count is positions, not values: a viewer may have it.
    at.button(key="scan_count").click().run()
    no_problems(at)
    live = load_table(f"{demo_warehouse}::demo.accounts").scan().plan().to_arrow().num_rows
    assert shown != metrics(at)
    assert metrics(at)["Rows returned (deletes and filter applied)"] == f"{live:,}"


def test_a_masked_reader_previews_the_other_columns(as_group: Callable[..., AppTest]) -> None:
    at = as_group("no-email", app.SCAN_PREVIEW.file, table="demo.accounts")
    no_problems(at)
    assert "Masked for you (your grant hides them; they are never read): email." in _shown(at)
    assert _frames(at)[-1] == ["account_id", "country", "balance"]
    assert at.multiselect(key="scan_columns").options == ["account_id", "country", "balance"]


def test_sql_for_a_viewer_answers_metadata_only_and_offers_no_download(
    as_group: Callable[..., AppTest],
) -> None:
    at = as_group("viewers", app.SQL.file, table="demo.accounts")
    assert READER_ROLE in _shown(at)
    assert [e.value for e in at.error] and "reader role" in at.error[0].value
    assert not at.dataframe
    at.text_area(key="sql_text").input("SELECT count(*) AS n FROM files").run()
    no_problems(at)
    assert _frames(at) == [["n"]]
    assert not at.get("download_button")


def test_sql_for_a_masked_reader_refuses_the_column_and_stars_the_others(
    as_group: Callable[..., AppTest],
) -> None:
    at = as_group("no-email", app.SQL.file, table="demo.accounts", sql="SELECT * FROM rows")
    no_problems(at)
    assert _frames(at) == [["account_id", "country", "balance"]]
    assert len(at.get("download_button")) == 2
    at.text_area(key="sql_text").input("SELECT email FROM rows").run()
    assert "Column email is masked for you" in at.error[0].value
    assert not at.dataframe


def test_time_travel_changed_rows_need_the_reader_role(as_group: Callable[..., AppTest]) -> None:
    at = as_group("viewers", app.TIME_TRAVEL.file, table="demo.accounts")
    no_problems(at)
    assert READER_ROLE in _shown(at)
    assert not [b for b in at.button if b.key == "tt_changelog"]
    masked = as_group("no-email", app.TIME_TRAVEL.file, table="demo.accounts")
    masked.button(key="tt_changelog").click().run()
    no_problems(masked)
    (changed,) = [c for c in _frames(masked) if "_change_type" in c]
    assert "email" not in changed and "account_id" in changed
