"""The Scan preview page: planning counts are icecore's report, rows are Spark's.

Bad filters show one inline sentence.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import icecore
from tests.ui.helpers import OpenPage, as_shown, figures, metrics, no_problems, number, spark_count
from ui import app

PAGE = app.SCAN_PREVIEW.file
FILTER = "fare > 30 AND pickup_ts >= '2024-08-05'"

pytestmark = pytest.mark.spark


def test_a_filtered_scan_shows_the_report_and_sparks_rows(
    spark: Any, demo_warehouse: Path, open_page: OpenPage
) -> None:
    at = open_page(PAGE, table="demo.trips", filter=FILTER)
    no_problems(at)
    report = icecore.load_table(f"{demo_warehouse}::demo.trips").scan(filter=FILTER).plan().report
    shown = metrics(at)
    assert shown["Data files planned"] == f"{report.data_files_planned:,} of {report.data_files:,}"
    assert shown["Records before deletes"] == f"{report.rows_planned:,} of {report.rows:,}"
    assert shown["Delete files applied"] == (
        f"{report.delete_files_applied:,} of {report.delete_files:,}"
    )
    (funnel,) = figures(at)
    files = next(t for t in funnel["data"] if t["name"] == "Data files")
    assert files["x"] == [
        report.data_files,
        report.data_files - report.files_pruned_by_manifest,
        report.data_files - report.files_pruned_by_manifest - report.files_pruned_by_partition,
        report.data_files_planned,
    ]
    pruned = next(
        df.value
        for df in at.dataframe
        if list(df.value.columns) == ["level", "path", "reason", "full path"]
    )
    assert len(pruned) == min(500, len(report.pruned))
    expected = spark_count(spark, f"SELECT count(*) FROM icecore.demo.trips WHERE {FILTER}")
    preview = at.dataframe[-1].value
    assert len(preview) == min(100, expected)

    at.button(key="scan_count").click().run()
    no_problems(at)
    assert number(metrics(at)["Rows returned (deletes and filter applied)"]) == expected
    # How it was counted: every planned file one way or another (the planned files are
    # Java's, checked above), and the filter on values reads at least one file.
    (how,) = [c.value for c in at.caption if c.value.startswith("Counted:")]
    ways = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) files?", how)]
    assert len(ways) == 3 and sum(ways) == report.data_files_planned, how
    assert ways[2] >= 1, how
    (funnel,) = figures(at)
    rows = next(t for t in funnel["data"] if t["name"] == "Rows")
    assert rows["x"] == [report.rows, report.rows_planned, expected]


def test_columns_limit_examples_and_open_in_sql(open_page: OpenPage) -> None:
    at = open_page(PAGE, table="demo.trips")
    at.multiselect(key="scan_columns").set_value(["trip_id", "fare"]).run()
    at.number_input(key="scan_limit").set_value(7).run()
    no_problems(at)
    preview = at.dataframe[-1].value
    assert list(preview.columns) == ["trip_id", "fare"] and len(preview) == 7
    (link,) = at.get("page_link")
    assert link.proto.page == "SQL"
    assert "sql=SELECT+trip_id%2C+fare+FROM+rows+LIMIT+7" in link.proto.query_string
    example = at.button(key="scan_example_0")
    text = example.label.strip("`")
    example.click().run()
    no_problems(at)
    assert at.query_params["filter"] in (text, [text])
    assert at.text_input(key="scan_filter").value == text


@pytest.mark.parametrize(
    ("bad", "says"),
    [("fare >>> 3", "not valid SQL"), ("nope = 1", "nope"), ("fare = 'x' AND", "")],
)
def test_a_bad_filter_is_one_inline_sentence(open_page: OpenPage, bad: str, says: str) -> None:
    at = open_page(PAGE, table="demo.trips")
    at.text_input(key="scan_filter").input(bad).run()
    assert not at.exception
    assert len(at.error) == 1 and says in as_shown(at.error[0].value)
    assert "Traceback" not in at.error[0].value


def test_one_page_run_plans_its_scan_once(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report, the preview rows and the row count read one plan of (table, point, filter).

    A filter no other test of the page uses, so no earlier run's cache answers for it.
    """
    import streamlit as st

    from icecore.scan.planner import TableScan

    plans: list[str | None] = []
    original = TableScan.plan

    def counting(self: TableScan) -> Any:
        plans.append(str(self.filter))
        return original(self)

    monkeypatch.setattr(TableScan, "plan", counting)
    st.cache_data.clear()
    st.cache_resource.clear()
    at = open_page(PAGE, table="demo.trips", filter="fare > 12.5 AND vendor_id = 1")
    no_problems(at)
    assert len(plans) == 1, plans
    at.button(key="scan_count").click().run()
    no_problems(at)
    assert "Rows returned (deletes and filter applied)" in metrics(at)
    assert len(plans) == 1, plans


def test_the_planned_files_tab_lists_what_java_plans(
    spark: Any, demo_warehouse: Path, open_page: OpenPage
) -> None:
    """Paths, counts, sizes, deletes and partitions of the planned files, read from columns.

    Expected values come from Iceberg Java's planFiles (paths, delete counts) and from the
    live entries read without the planner (counts, sizes, partition labels).
    """
    from icecore.layout import partition_label
    from tests.icecore.scan.helpers import manual_tasks
    from tests.icecore.scan.test_planner import java_plan

    at = open_page(PAGE, table="demo.trips", filter=FILTER)
    no_problems(at)
    kept = next(df.value for df in at.dataframe if "residual filter" in df.value.columns)
    java = java_plan(spark, "trips", None, FILTER)
    assert sorted(kept["full path"]) == sorted(java)
    # The shown path keeps the file name (shortened from the left), whatever its length.
    assert all(
        shown == path or (shown.startswith("…/") and path.endswith(shown[1:]))
        for shown, path in zip(kept["file"], kept["full path"], strict=True)
    )
    assert [p.rsplit("/", 1)[1] for p in kept["full path"]] == [
        p.rsplit("/", 1)[1] for p in kept["file"]
    ]
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    old = {t.file_path: t for t in manual_tasks(table)}
    for row in kept.to_dict("records"):
        task = old[row["full path"]]
        assert row["delete files"] == len(java[row["full path"]])
        assert row["records"] == task.data_file.record_count
        assert row["bytes"] == task.data_file.file_size_in_bytes
        assert row["partition"] == partition_label(
            table.metadata, task.spec, task.data_file.partition
        )


def test_a_cold_plan_shows_its_manifests_on_a_progress_bar(
    demo_warehouse: Path, open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a cold plan reads manifests the page's listener hears "k of n"; warm, nothing.

    A fresh in-memory plan context (no disk cache) makes the plan cold; the page's listener
    is wrapped to record what it is told. The bar is gone once the page is drawn.
    """
    from collections.abc import Iterator
    from contextlib import contextmanager

    from icecore.manifest import ManifestContent
    from icecore.progress import Listener
    from icecore.scan import context
    from icecore.scan.manifest_cache import ManifestCache
    from ui import data

    monkeypatch.setattr(context, "_DEFAULT", context.PlanContext(manifests=ManifestCache(None)))
    data.forget_plans()
    heard: list[tuple[str, int, int]] = []
    installing = data.reporting

    @contextmanager
    def recording(listener: Listener) -> Iterator[None]:
        def spy(what: str, done: int, total: int) -> None:
            heard.append((what, done, total))
            listener(what, done, total)

        with installing(spy):
            yield

    monkeypatch.setattr(data, "reporting", recording)
    at = open_page(PAGE, table="demo.trips")
    no_problems(at)
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    manifests = table.manifests(table.metadata.current_snapshot())
    n = sum(m.content is ManifestContent.DATA for m in manifests)
    assert ("Reading manifests", n, n) in heard, heard
    assert not at.get("progress")
    heard.clear()
    at.run()
    no_problems(at)
    assert heard == [] and not at.get("progress")


def test_a_second_session_is_served_the_first_ones_plan_view(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two visitors of one (table version, point, filter): one plan, one shared view object.

    The view is the same object (never a pickled copy per visit).
    """
    from icecore.scan.planner import TableScan
    from ui import data

    plans: list[str] = []
    planning = TableScan.plan

    def counting(self: TableScan) -> Any:
        plans.append(str(self.filter))
        return planning(self)

    views: list[Any] = []
    viewing = data.plan

    def keeping(*args: Any) -> Any:
        views.append(viewing(*args))
        return views[-1]

    monkeypatch.setattr(TableScan, "plan", counting)
    monkeypatch.setattr(data, "plan", keeping)
    shared = "fare > 17.25"  # no other test plans it
    first = open_page(PAGE, table="demo.trips", filter=shared)
    second = open_page(PAGE, table="demo.trips", filter=shared)
    no_problems(first)
    no_problems(second)
    assert len(views) == 2 and views[0] is views[1]
    assert len(plans) == 1, plans


def test_sql_rows_read_the_plan_scan_preview_keeps(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQL's ``rows`` on the scan Scan preview just planned plans nothing again."""
    from icecore.scan.planner import TableScan

    plans: list[str] = []
    planning = TableScan.plan

    def counting(self: TableScan) -> Any:
        plans.append(str(self.filter))
        return planning(self)

    monkeypatch.setattr(TableScan, "plan", counting)
    shared = "fare > 18.75"  # no other test plans it
    no_problems(open_page(PAGE, table="demo.trips", filter=shared))
    assert len(plans) == 1, plans
    at = open_page(app.SQL.file, table="demo.trips", filter=shared)
    no_problems(at)
    assert len(at.dataframe[0].value) > 0
    assert len(plans) == 1, plans


def test_pruning_reasons_and_the_bound_filter_show_sql_literals(
    demo_warehouse: Path, open_page: OpenPage
) -> None:
    """Values read as the SQL a user would type: no ``datetime.date(...)``, no raw micros."""
    from icecore.types import TimestamptzType

    at = open_page(PAGE, table="demo.trips", filter="pickup_ts < '2024-08-03'")
    no_problems(at)
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    field = table.metadata.current_schema().find_field_by_name("pickup_ts")
    zoned = field is not None and isinstance(field.field_type, TimestamptzType)
    zone = "+00:00" if zoned else ""
    # Spark's meaning adds the IS NOT NULL a comparison implies; the value is SQL either way.
    bound = at.code[0].value
    assert f"pickup_ts < TIMESTAMP '2024-08-03 00:00:00{zone}'" in bound, bound
    assert not re.search(r"\d{13,}", bound), bound
    reasons = next(df.value for df in at.dataframe if "items" in df.value.columns)
    pruned = next(
        df.value
        for df in at.dataframe
        if "full path" in df.value.columns and "reason" in df.value.columns
    )
    texts = [*reasons["reason"], *pruned["reason"]]
    for text in texts:
        assert "datetime." not in text and "Decimal(" not in text, text
        assert not re.search(r"\d{13,}", text), text  # no epoch micros
    assert any("DATE '2024-08-0" in t or "TIMESTAMP '2024-08-0" in t for t in texts), texts
