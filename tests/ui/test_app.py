"""The landing page and the shell every page shares: pickers, the time selector, links, errors.

A link's query parameters must select the same thing as the sidebar; bad input anywhere
(an unknown catalog, table, snapshot, ref or time; HTML in names and properties) must show
one sentence or plain text, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import icecore
from tests.ui.helpers import (
    REPO,
    OpenPage,
    as_shown,
    metrics,
    no_problems,
    number,
    open_app,
    spark_count,
)
from ui import app
from ui.shell import Selection, filesystem_warning, read_only

PAGES = [page.file for page in app.PAGES]


@pytest.mark.spark
def test_landing_lists_every_table_spark_wrote(
    spark: Any, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(demo_warehouse))
    at = open_app()
    no_problems(at)
    shown = set(at.dataframe[0].value["table"])
    expected = {f"demo.{r.tableName}" for r in spark.sql("SHOW TABLES IN icecore.demo").collect()}
    expected |= {f"demo.{r.tableName}" for r in spark.sql("SHOW TABLES IN hadoop.demo").collect()}
    assert shown == expected
    assert len(at.get("page_link")) == len(PAGES)


def test_landing_shows_one_sentence_for_an_unknown_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path / "nowhere"))
    at = open_app()
    assert not at.exception
    assert len(at.error) == 1
    assert "does not exist" in at.error[0].value


CATALOG_PAGES = (app.ACTIVITY.file, app.VIEWS.file, app.WORKLOAD.file)
"""Pages of a whole catalog: they need no table."""


@pytest.mark.parametrize("page", [p for p in PAGES if p not in CATALOG_PAGES])
def test_every_page_without_a_table_asks_for_one(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path))
    at = open_app(page)
    assert not at.exception and not at.error
    assert [i.value for i in at.info] == ["Choose a table in the sidebar."]


def test_the_views_page_of_a_catalog_without_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path))
    at = open_app(app.VIEWS.file)
    assert not at.exception and not at.error
    assert [i.value for i in at.info] == ["No views in this catalog (or none your grants name)."]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"table": "demo.nope"}, "nope"),
        ({"table": "not-a-name"}, "namespace.table"),
        ({"table": "demo.trips", "snapshot": "42"}, "Snapshot 42 does not exist"),
        ({"table": "demo.trips", "snapshot": "abc"}, "not a snapshot id"),
        ({"table": "demo.trips", "ref": "nobranch"}, "no branch or tag named 'nobranch'"),
        ({"table": "demo.trips", "as_of": "last tuesday"}, "not an ISO-8601 time"),
        ({"table": "demo.trips", "as_of": "1999-01-01"}, "no snapshot as of"),
        ({"catalog": "/no/such/folder"}, "not served here"),
    ],
)
@pytest.mark.parametrize("page", PAGES)
def test_a_bad_link_is_one_sentence_on_every_page(
    open_page: OpenPage, page: str, params: dict[str, str], says: str
) -> None:
    at = open_page(page, **params)
    assert not at.exception
    assert len(at.error) == 1, [e.value for e in at.error]
    assert says in as_shown(at.error[0].value)


@pytest.mark.spark
def test_the_sidebar_drives_the_selection_and_the_link(
    spark: Any, demo_warehouse: Path, open_page: OpenPage
) -> None:
    at = open_page(app.OVERVIEW.file)
    assert [i.value for i in at.info] == ["Choose a table in the sidebar."]
    at.sidebar.selectbox(key="sb_table").set_value("demo.accounts").run()
    no_problems(at)
    assert at.query_params["table"] in ("demo.accounts", ["demo.accounts"])
    assert number(metrics(at)["Data files"]) == spark_count(
        spark, "SELECT count(*) FROM icecore.demo.accounts.data_files"
    )
    at.sidebar.selectbox(key="sb_table").set_value("demo.trips").run()
    at.sidebar.radio(key="sb_time_kind").set_value("Branch or tag").run()
    assert at.sidebar.selectbox(key="sb_ref").value == "main"
    at.sidebar.selectbox(key="sb_ref").set_value("audit").run()
    no_problems(at)
    assert at.query_params["ref"] in ("audit", ["audit"])
    audit = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'audit'"
    ).collect()[0][0]
    # Iceberg 1.10's .files fails VERSION AS OF a branch of this evolved table; use its id.
    assert number(metrics(at)["Data files"]) == spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips.data_files VERSION AS OF {audit}"
    )
    at.sidebar.radio(key="sb_time_kind").set_value("Time").run()
    at.sidebar.text_input(key="sb_as_of").input("2999-01-01T00:00:00Z").run()
    no_problems(at)
    assert at.query_params["as_of"] in ("2999-01-01T00:00:00Z", ["2999-01-01T00:00:00Z"])
    assert "ref" not in at.query_params
    at.sidebar.radio(key="sb_time_kind").set_value("Current").run()
    assert "as_of" not in at.query_params
    # Another page of the same session keeps the selection (a nav click drops the URL query).
    at.query_params.clear()
    at.switch_page(app.HISTORY.file).run()
    no_problems(at)
    assert at.query_params["table"] in ("demo.trips", ["demo.trips"])


@pytest.mark.spark
def test_the_filesystem_catalog_is_one_pick_away(
    demo_warehouse: Path, open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_OPEN_CATALOGS", "1")  # the box to type another catalog
    at = open_page(app.OVERVIEW.file)
    hadoop = str(demo_warehouse / "hadoop")
    at.sidebar.selectbox(key="sb_catalog").set_value(hadoop).run()
    at.sidebar.selectbox(key="sb_table").set_value("demo.customers_v1").run()
    no_problems(at)
    assert metrics(at)["Format version"] == "1"
    at.sidebar.text_input(key="sb_catalog_other").input("/no/such/place").run()
    assert not at.exception
    assert len(at.error) == 1 and "does not exist" in at.error[0].value


def _html_table(tmp_path: Path) -> Path:
    """An empty table whose names, docs and properties are HTML and markdown."""
    golden = REPO / "tests/data/metadata/spark/zones-00000.metadata.json"
    metadata = json.loads(golden.read_text())
    fields = metadata["schemas"][0]["fields"]
    fields[1]["name"] = "<b>bold</b><script>alert(1)</script>"
    fields[1]["doc"] = "**not bold** [link](http://x) <img src=x onerror=alert(1)>"
    metadata["properties"]["<i>key</i>"] = "<script>alert('v')</script>"
    metadata["location"] = str(tmp_path / "evil")
    path = tmp_path / "evil" / "metadata" / "v1.metadata.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(metadata))
    return path


@pytest.mark.parametrize("page", PAGES)
def test_html_in_names_and_properties_stays_inert_text(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _html_table(tmp_path)
    monkeypatch.setenv("ICECORE_CATALOG", str(path))
    at = open_app(page, table="static.evil")
    assert not at.exception
    for element in (*at.markdown, *at.caption, *at.title):
        assert "<script>" not in element.value
    if page.endswith("Overview.py"):
        tables = [df.value for df in at.dataframe]
        schema = next(t for t in tables if "identifier" in t.columns)
        assert "<b>bold</b><script>alert(1)</script>" in set(schema["field"])
        properties = next(t for t in tables if "property" in t.columns)
        assert "<script>alert('v')</script>" in set(properties["value"])


def test_read_only_comes_from_the_environment_then_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "icecore.toml"
    config.write_text("read_only = true\n")
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    assert read_only()
    monkeypatch.setenv("ICECORE_READ_ONLY", "0")
    assert not read_only()
    monkeypatch.setenv("ICECORE_READ_ONLY", "yes")
    config.write_text("read_only = false\n")
    assert read_only()
    monkeypatch.delenv("ICECORE_READ_ONLY")
    assert not read_only()
    config.write_text("read_only = [broken\n")
    assert read_only(), "a config file that does not parse fails closed"


@pytest.mark.spark
def test_the_read_only_mode_is_announced(
    demo_warehouse: Path, open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_READ_ONLY", "1")
    at = open_app(app.OVERVIEW.file, catalog=str(demo_warehouse), table="demo.zones")
    assert any("Read-only" in c.value for c in at.sidebar.caption)


@pytest.mark.spark
def test_only_filesystem_tables_get_the_commit_warning(demo_warehouse: Path) -> None:
    hadoop = icecore.load_table(f"{demo_warehouse}/hadoop::demo.customers_v1")
    warning = filesystem_warning(hadoop)
    assert warning is not None and "atomic" in warning and "object stores" in warning
    assert filesystem_warning(icecore.load_table(f"{demo_warehouse}::demo.trips")) is None


def test_selections_round_trip_through_links() -> None:
    selection = Selection.from_params(
        {"catalog": "w", "table": "a.b", "ref": "audit", "filter": "x > 1"}, "default"
    )
    assert selection == Selection("w", "a.b", ref="audit", filter="x > 1")
    assert Selection.from_params(selection.to_params(), "other") == selection
    # One time selector at a time: a snapshot id wins over a ref and a time.
    both = Selection.from_params({"snapshot": "5", "ref": "r", "as_of": "t"}, "c")
    assert (both.snapshot, both.ref, both.as_of) == ("5", None, None)
    assert both.at(as_of="2024-01-01").to_params() == {"catalog": "c", "as_of": "2024-01-01"}


@pytest.mark.spark
def test_the_table_list_shows_each_metadata_file_name(open_page: OpenPage) -> None:
    # The metadata location is cut on the right in a table cell; the shortened column keeps
    # the file name, which is what tells one version from the next.
    at = open_page(None)
    assert not at.exception
    listed = at.dataframe[0].value
    for location, shown in zip(listed["metadata location"], listed["metadata file"], strict=True):
        name = location.rsplit("/", 1)[-1]
        assert name.endswith(".metadata.json") and shown.endswith(name), (location, shown)
        assert len(shown) <= max(48, len(name) + 4)
    assert len(listed) == 5 and at.subheader[0].value == "5 tables"
