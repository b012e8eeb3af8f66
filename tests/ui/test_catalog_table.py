"""The Tables page as the catalog at a glance: a row per table with its health, sortable.

The numbers themselves are checked against Spark in tests/icecore/test_catalog_health.py;
here the page must show every table (an unreadable one with its error), sort and filter them,
and serve a second visit from the rows kept by metadata file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.icecore.health_tables import write_health_warehouse
from tests.ui.helpers import open_app
from tests.ui.rows_table import CITIES, NAME
from ui import catalog_health, data


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = write_health_warehouse(tmp_path)
    monkeypatch.setenv("ICECORE_CATALOG", str(root))
    catalog_health.forget()
    return root


def test_the_page_shows_every_table_with_its_health_and_sorts(warehouse: Path) -> None:
    at = open_app()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert set(table["table"]) == {NAME, "db.broken", "db.empty"}
    by_name = table.set_index("table")
    assert by_name.loc[NAME, "rows"] == len(CITIES)
    assert "not valid JSON" in by_name.loc["db.broken", "error"]
    assert by_name.loc[NAME, "open"].startswith("Overview?")
    assert at.subheader[0].value == "3 tables"

    at.selectbox(key="home_sort").set_value("table").run()
    assert list(at.dataframe[0].value["table"]) == sorted([NAME, "db.broken", "db.empty"])
    at.selectbox(key="home_sort").set_value("rows").run()
    ordered = list(at.dataframe[0].value["table"])
    assert ordered[0] == NAME and ordered[-1] == "db.broken"  # 4 rows, 0 rows, unknown last

    at.text_input(key="home_filter").set_value("people").run()
    assert list(at.dataframe[0].value["table"]) == [NAME]


def test_a_second_visit_reuses_the_rows_of_unchanged_tables(warehouse: Path) -> None:
    open_app()
    kept = catalog_health._KNOWN.get(
        str(next((warehouse / "db" / "people" / "metadata").glob("v1.metadata.json")))
    )
    assert kept is not None
    kept["rows"] = 12345  # served as kept: the table's metadata file did not change
    again = open_app().dataframe[0].value.set_index("table")
    assert again.loc[NAME, "rows"] == 12345


def test_the_overview_shows_metadata_size_by_part_with_its_fixes(warehouse: Path) -> None:
    at = open_app("pages/1_Overview.py", table=NAME)
    assert not at.exception, [e.value for e in at.exception]
    assert "Metadata size" in [s.value for s in at.subheader]
    metadata = json.loads((warehouse / "db/people/metadata/v1.metadata.json").read_text())
    parts = next(df.value for df in at.dataframe if "part" in df.value.columns)
    assert set(parts["part"]) >= {"snapshots", "schemas", "metadata-log", "other"}
    log = parts.set_index("part").loc["metadata-log"]
    assert log["entries"] == len(metadata["metadata-log"]) > 0
    # PyIceberg keeps old metadata files (delete-after-commit unset): the fix says so.
    assert "write.metadata.delete-after-commit.enabled" not in metadata.get("properties", {})
    assert any("delete-after-commit" in m.value.replace("\\", "") for m in at.markdown)
    lists = next(df.value for df in at.dataframe if "manifest list" in df.value.columns)
    assert list(lists["snapshot"]) == [str(s["snapshot-id"]) for s in metadata["snapshots"]]


def test_a_first_visit_shows_progress_and_a_second_one_none(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[tuple[str, int, int]] = []
    real = data.reporting

    @contextmanager
    def recording(listener: Any) -> Iterator[None]:
        def both(what: str, done: int, total: int) -> None:
            told.append((what, done, total))
            listener(what, done, total)

        with real(both):
            yield

    monkeypatch.setattr(data, "reporting", recording)
    assert not open_app().exception
    # The rows are read once, counting every table of the catalog.
    assert [t for t in told if t[0] == "Reading tables"] == [
        ("Reading tables", k, 3) for k in (1, 2, 3)
    ]
    told.clear()
    assert not open_app().exception
    assert told == []


def test_the_page_shows_where_alerts_go_and_the_last_ones_sent(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icecore.catalog.alert_store import FileAlertStore, SentAlert

    at = open_app()
    assert not [e for e in at.expander if e.label.startswith("Alerts")]  # no [alerts]: nothing
    config = tmp_path / "icecore.toml"
    config.write_text('[alerts]\nwebhook = "https://hooks.example:8443/services/SECRET"\n')
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    alert = {"event": "score_below", "table": NAME, "score": 40, "threshold": 50}
    FileAlertStore(warehouse).add(SentAlert(f"{NAME}|score_below|x", 1_700_000_000_000, alert))
    at = open_app()
    assert not at.exception, [e.value for e in at.exception]
    labels = [e.label for e in at.expander]
    assert "Alerts go to https://hooks.example:8443" in labels
    assert "SECRET" not in " ".join(labels)
    shown = at.dataframe[-1].value
    assert list(shown["table"]) == [NAME] and list(shown["about"]) == ["score 40 < 50"]


def test_a_principal_sees_only_the_alerts_of_tables_granted_to_it(
    warehouse: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ui.identity
    from icecore.access import Principal
    from icecore.catalog.alert_store import FileAlertStore, SentAlert

    config = tmp_path / "icecore.toml"
    config.write_text(
        '[alerts]\nwebhook = "https://hooks.example/x"\n\n'
        '[[grants]]\ngroup = "g"\nrole = "viewer"\ntables = ["db.empty"]\n'
    )
    monkeypatch.setenv("ICECORE_CONFIG", str(config))
    principal = Principal("g", name="g", groups=("g",), source="oidc")
    monkeypatch.setattr(ui.identity, "current_principal", lambda: principal)
    store = FileAlertStore(warehouse)
    for i, table in enumerate((NAME, "db.empty")):
        alert = {"event": "job_failed", "table": table, "job": "expire", "error": "Failed."}
        store.add(SentAlert(f"{table}|job_failed|{i}", 1_700_000_000_000 + i, alert))
    at = open_app()
    assert not at.exception, [e.value for e in at.exception]
    assert list(at.dataframe[0].value["table"]) == ["db.empty"]  # the grants hold
    assert list(at.dataframe[-1].value["table"]) == ["db.empty"]
