"""The Metadata tree page: the tree's totals are Spark's; the node budget bounds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import icecore
from tests.ui.helpers import OpenPage, figures, metrics, no_problems, number, spark_count
from ui import app

PAGE = app.METADATA_TREE.file

pytestmark = pytest.mark.spark


def _root(at: Any) -> tuple[int, list[str]]:
    """The root tile's value, and every tile's label."""
    (figure,) = figures(at)
    trace = figure["data"][0]
    root = trace["parents"].index("")
    return trace["values"][root], trace["labels"]


@pytest.mark.parametrize(
    ("spark_name", "name"),
    [("icecore.demo.trips", "demo.trips"), ("icecore.demo.events_v3", "demo.events_v3")],
)
def test_tree_totals_are_sparks(
    spark: Any, open_page: OpenPage, spark_name: str, name: str
) -> None:
    at = open_page(PAGE, table=name)
    no_problems(at)
    shown = metrics(at)
    assert number(shown["Manifests"]) == spark_count(
        spark, f"SELECT count(*) FROM {spark_name}.manifests"
    )
    assert number(shown["Live files"]) == spark_count(
        spark, f"SELECT count(*) FROM {spark_name}.files"
    )
    total, labels = _root(at)
    assert total == spark_count(spark, f"SELECT sum(file_size_in_bytes) FROM {spark_name}.files")
    files = {
        r.file_path.rsplit("/", 1)[-1]
        for r in spark.sql(f"SELECT file_path FROM {spark_name}.files").collect()
    }
    assert files <= set(labels)  # small tables: every file is its own tile

    at.radio(key="tree_size").set_value("rows").run()
    total, _ = _root(at)
    assert total == spark_count(spark, f"SELECT sum(record_count) FROM {spark_name}.files")


def test_a_small_budget_folds_the_tree_and_keeps_its_totals(
    spark: Any, open_page: OpenPage
) -> None:
    at = open_page(PAGE, table="demo.trips")
    at.number_input(key="tree_budget").set_value(50).run()
    no_problems(at)
    assert number(metrics(at)["Nodes drawn"]) <= 50
    assert any("folded" in c.value for c in at.caption)
    total, labels = _root(at)
    assert len(labels) <= 50
    assert total == spark_count(
        spark, "SELECT sum(file_size_in_bytes) FROM icecore.demo.trips.files"
    )
    at.radio(key="tree_kind").set_value("treemap").run()
    at.radio(key="tree_color").set_value("partition").run()
    no_problems(at)
    (figure,) = figures(at)
    assert figure["data"][0]["type"] == "treemap"


def test_drilling_into_a_manifest_lists_its_live_files(
    demo_warehouse: Path, open_page: OpenPage
) -> None:
    at = open_page(PAGE, table="demo.trips")
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    manifest = table.manifests(table.snapshot())[0]  # type: ignore[arg-type]
    at.selectbox(key="tree_manifest").set_value(manifest.manifest_path).run()
    no_problems(at)
    files = at.dataframe[-1].value
    live = (manifest.added_files_count or 0) + (manifest.existing_files_count or 0)
    assert len(files) == min(live, 500)
    # The file names are visible: paths are shortened from the left, never cut on the right.
    expected_names = {p.rsplit("/", 1)[1] for p in files["full path"]}
    assert {p.rsplit("/", 1)[1] for p in files["file"]} == expected_names
    assert all(len(p) <= 64 or p.startswith("…/") for p in files["file"])
    manifests = next(df.value for df in at.dataframe if "sequence number" in df.value.columns)
    names = [m.manifest_path.rsplit("/", 1)[1] for m in table.manifests(table.snapshot())]  # type: ignore[arg-type]
    assert [p.rsplit("/", 1)[1] for p in manifests["manifest"]] == names
