"""The Activity page (AppTest) and what it lets a principal see (:mod:`ui.activity`).

Changes are made through real guarded catalogs over hand-written tables in a warehouse
folder: Ann rolls the graph table back to S2 and adds a column to ``t``, Bob (a reader) is
refused on ``t``. Every expected row is read from that scenario.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from icecore.access import Grant, Policy, Principal, Role
from icecore.catalog import FilesystemCatalog, TableIdentifier
from icecore.catalog.audit_store import audit_sink_for
from icecore.catalog.guarded import guard
from icecore.errors import Forbidden
from tests.icecore.evolution.hand_table import write_table
from tests.icecore.refs.graph_table import S2, write_graph_table
from tests.ui.helpers import drive, no_problems, open_app
from ui import activity, app

T = TableIdentifier(("db",), "t")
G = TableIdentifier(("db",), "g")
ANN = Principal(subject="u-ann", name="Ann", groups=("owners",), source="oidc")
EVE = Principal(subject="u-eve", name="[Eve](http://evil.example) **x**", groups=("analysts",))
POLICY = Policy((Grant("owners", Role.OWNER), Grant("analysts", Role.READER, ("db.t",))))


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    root = tmp_path / "wh"
    write_table(root, 2)
    write_graph_table(root)
    catalog = FilesystemCatalog(str(root))
    sink = audit_sink_for(catalog)
    as_ann = guard(catalog, ANN, POLICY, name=str(root), audit=sink)
    as_ann.load_table(G).manage_snapshots().rollback_to_snapshot(S2).commit()
    as_ann.load_table(T).update_schema().add_column("z", "string").commit()
    as_eve = guard(catalog, EVE, POLICY, name=str(root), audit=sink)
    with pytest.raises(Forbidden):
        as_eve.load_table(T).update_schema().add_column("w", "string").commit()
    return root


def rows(at: object) -> list[dict[str, object]]:
    frame = at.dataframe[0].value  # type: ignore[attr-defined]
    return list(frame.to_dict("records"))


def test_the_page_is_listed() -> None:
    assert app.ACTIVITY in app.PAGES


def test_without_a_table_the_page_shows_the_whole_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unlike the table pages, Activity needs no table: an empty log says so."""
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path))
    at = open_app(app.ACTIVITY.file)
    no_problems(at)
    assert [i.value for i in at.info] == ["No change has been recorded yet."]


def test_a_catalog_without_a_log_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_table(tmp_path, 2)
    path = folder / "metadata" / "v1.metadata.json"
    monkeypatch.setenv("ICECORE_CATALOG", str(path))
    at = open_app(app.ACTIVITY.file)
    no_problems(at)
    assert "keeps no audit log" in at.info[0].value


def test_activity_page_lists_filters_and_links(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(warehouse))
    at = open_app(app.ACTIVITY.file, catalog=str(warehouse))
    no_problems(at)
    shown = rows(at)
    assert [(r["who"], r["table"], r["result"]) for r in shown] == [
        ("[Eve](http://evil.example) **x** (u-eve)", "db.t", "refused"),
        ("Ann (u-ann)", "db.t", "committed"),
        ("Ann (u-ann)", "db.g", "committed"),
    ]
    rollback = shown[2]
    assert rollback["history"] == (
        "History?" + f"catalog={str(warehouse).replace('/', '%2F')}&table=db.g&snapshot={S2}"
    )
    assert rollback["metadata after"] == str(warehouse / "db/g/metadata/v2.metadata.json")
    assert not isinstance(shown[0]["history"], str)  # a refusal made no snapshot
    # the visitor-supplied name is never Markdown: no element of the page renders it
    assert not any("evil.example" in m.value for m in at.markdown)

    drive(at, ("selectbox", "act_table", "db.t"))
    assert [r["result"] for r in rows(at)] == ["refused", "committed"]
    drive(at, ("selectbox", "act_person", "Ann (u-ann)"))
    assert [(r["table"], r["result"]) for r in rows(at)] == [("db.t", "committed")]
    drive(at, ("selectbox", "act_table", "All"), ("selectbox", "act_action", "commit"))
    assert len(rows(at)) == 2
    drive(at, ("selectbox", "act_since", "Last hour"))
    assert len(rows(at)) == 2  # made moments ago
    drive(at, ("selectbox", "act_person", "All"), ("selectbox", "act_action", "All"))
    drive(at, ("selectbox", "act_result", "refused"))
    assert [r["who"] for r in rows(at)] == ["[Eve](http://evil.example) **x** (u-eve)"]
    no_problems(at)


def test_the_table_in_the_link_is_the_first_filter(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(warehouse))
    at = open_app(app.ACTIVITY.file, catalog=str(warehouse), table="db.g")
    no_problems(at)
    assert [r["table"] for r in rows(at)] == ["db.g"]


def test_a_principal_sees_the_activity_of_the_tables_they_see(warehouse: Path) -> None:
    catalog = FilesystemCatalog(str(warehouse))
    eve = activity.visible_activity(guard(catalog, EVE, POLICY, name=str(warehouse)))
    assert {c.table for c in eve.changes} == {"db.t"}  # her grant names db.t only
    nobody = Principal(subject="u-zed", groups=("strangers",))
    assert activity.visible_activity(guard(catalog, nobody, POLICY, name="x")).changes == []
    ann = activity.visible_activity(guard(catalog, ANN, POLICY, name=str(warehouse)))
    assert {c.table for c in ann.changes} == {"db.t", "db.g"}
