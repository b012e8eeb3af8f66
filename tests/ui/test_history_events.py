"""Metadata changes on History and the Overview at a tag, against Spark and what was committed.

A metadata-only commit adds no snapshot: History must list it among its metadata changes
(and at the top, as the latest commit) as soon as it is made. The Overview at a tag must
list the tag's columns, spec and sort order, not today's: Spark's read of the tag is the
oracle. Commits are made on copies (tests/ui/copies.py); the fixture warehouse is only read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import icecore
from tests.icecore.evolution.conftest import EvoCatalogs
from tests.ui.copies import copy_sql_table
from tests.ui.helpers import OpenPage, as_shown, metrics, no_problems, open_app
from ui import app

HISTORY = app.HISTORY.file
OVERVIEW = app.OVERVIEW.file

pytestmark = pytest.mark.spark


def _events(at: Any) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """The latest commit's events (None when not shown) and every event, as History shows them."""
    frames = [df.value for df in at.dataframe if "what changed" in df.value.columns]
    assert len(frames) in (1, 2), len(frames)
    return (frames[0] if len(frames) == 2 else None), frames[-1]


def test_a_metadata_only_commit_through_icecore_appears_in_history(
    evo: EvoCatalogs, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_sql_table(evo, demo_warehouse, "zones")
    monkeypatch.setenv("ICECORE_CATALOG", copy.catalog)
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    before = open_app(HISTORY, catalog=copy.catalog, table=copy.table)
    no_problems(before)
    latest, listed = _events(before)
    assert latest is None  # the copy's last commit added a snapshot

    table = icecore.load_table(f"{copy.catalog}::{copy.table}")
    with table.update_schema() as update:
        update.add_column("memo", "string")
    table.refresh().set_properties({"memo.owner": "ops"})
    location = copy.location()

    at = open_app(HISTORY, catalog=copy.catalog, table=copy.table)
    no_problems(at)
    latest, events = _events(at)
    assert len(events) == len(listed) + 2
    newest = events.iloc[0]
    assert newest["type of change"] == "properties"
    assert newest["what changed"] == "set memo.owner = 'ops'"
    assert Path(newest["full path"].removeprefix("file:")) == Path(location)
    assert newest["in metadata file"].endswith(Path(location).name)
    schema = events.iloc[1]
    assert schema["type of change"] == "schema" and "added memo string" in schema["what changed"]
    assert latest is not None
    assert list(latest["what changed"]) == ["set memo.owner = 'ops'"]


def _columns(at: Any) -> list[str]:
    schema = next(df.value for df in at.dataframe if "identifier" in df.value.columns)
    return [name for name in schema["field"] if not name.startswith("\u2003")]


def test_the_overview_at_a_tag_lists_the_tags_columns_spec_and_sort_order(
    spark: Any, demo_warehouse: Path, open_page: OpenPage
) -> None:
    tag = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'"
    ).collect()[0][0]
    at_tag = spark.sql(f"SELECT * FROM icecore.demo.trips VERSION AS OF {tag}").columns
    today = spark.table("icecore.demo.trips").columns
    assert at_tag != today  # the story changes the schema after the tag
    written = spark.sql(
        "SELECT DISTINCT data_file.spec_id FROM icecore.demo.trips.all_entries "
        f"WHERE snapshot_id = {tag} AND status = 1"
    ).collect()

    at = open_page(OVERVIEW, table="demo.trips", ref="month_end")
    no_problems(at)
    assert _columns(at) == at_tag
    shown = metrics(at)
    assert [int(shown["Partition spec id"])] == [r[0] for r in written]
    specs = next(df.value for df in at.dataframe if "spec" in df.value.columns)
    in_force = specs[specs["at this point"]]
    assert set(in_force["spec"]) == {r[0] for r in written}
    assert any("ref month_end" in as_shown(i.value) for i in at.info)

    current = open_page(OVERVIEW, table="demo.trips")
    no_problems(current)
    assert _columns(current) == today
    assert "congestion_fee" not in _columns(at) and "congestion_fee" in today


def test_the_overview_at_a_snapshot_id_of_customers_v1_shows_its_spec(
    spark: Any, demo_warehouse: Path, open_page: OpenPage
) -> None:
    # customers_v1 (format v1, filesystem catalog) drops bucket(4, customer_id) and adds
    # years(signup_date) after its first snapshot.
    name = "hadoop.demo.customers_v1"
    first = spark.sql(f"SELECT snapshot_id FROM {name}.snapshots ORDER BY committed_at").collect()
    snapshot_id = first[0][0]
    written = spark.sql(
        f"SELECT DISTINCT data_file.spec_id FROM {name}.all_entries "
        f"WHERE snapshot_id = {snapshot_id} AND status = 1"
    ).collect()
    at = open_page(
        OVERVIEW,
        catalog=f"{demo_warehouse}/hadoop",
        table="demo.customers_v1",
        snapshot=str(snapshot_id),
    )
    no_problems(at)
    assert [int(metrics(at)["Partition spec id"])] == [r[0] for r in written]
    assert _columns(at) == spark.sql(f"SELECT * FROM {name} VERSION AS OF {snapshot_id}").columns
