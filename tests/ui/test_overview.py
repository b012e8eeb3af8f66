"""The Overview page: totals against Spark's metadata tables, findings and schema as icecore's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import icecore
from icecore import describe, health
from icecore.layout import snapshot_files
from icecore.scan.context import default_context
from tests.ui.helpers import OpenPage, metrics, no_problems, number, spark_count
from ui import app, data, views

PAGE = app.OVERVIEW.file
TABLES = [
    ("icecore.demo.trips", "", "demo.trips"),
    ("icecore.demo.events_v3", "", "demo.events_v3"),
    ("icecore.demo.accounts", "", "demo.accounts"),
    ("hadoop.demo.customers_v1", "/hadoop", "demo.customers_v1"),
]

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("spark_name", "sub", "name"), TABLES)
def test_totals_are_spark_counts(
    spark: Any, demo_warehouse: Path, open_page: OpenPage, spark_name: str, sub: str, name: str
) -> None:
    at = open_page(PAGE, catalog=f"{demo_warehouse}{sub}", table=name)
    no_problems(at)
    shown = metrics(at)
    assert number(shown["Data files"]) == spark_count(
        spark, f"SELECT count(*) FROM {spark_name}.data_files"
    )
    assert number(shown["Delete files"]) == spark_count(
        spark, f"SELECT count(*) FROM {spark_name}.delete_files"
    )
    assert number(shown["Rows in data files"]) == spark_count(
        spark, f"SELECT sum(record_count) FROM {spark_name}.data_files"
    )
    assert number(shown["Delete records"]) == spark_count(
        spark, f"SELECT sum(record_count) FROM {spark_name}.delete_files"
    )
    assert number(shown["Live rows"]) == spark_count(spark, f"SELECT count(*) FROM {spark_name}")
    assert number(shown["Snapshots"]) == spark_count(
        spark, f"SELECT count(*) FROM {spark_name}.snapshots"
    )


def test_findings_schema_and_properties_are_icecores(
    spark: Any, demo_warehouse: Path, open_page: OpenPage
) -> None:
    at = open_page(PAGE, table="demo.trips")
    no_problems(at)
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    snapshot = table.snapshot()
    manifests = table.manifests(snapshot) if snapshot else []
    files = snapshot_files(table, snapshot)
    expected = health.findings(
        table.metadata, manifests, files, health.totals(snapshot, manifests, files)
    )
    texts = [m.value for m in at.markdown]
    for finding in expected:
        assert any(finding.title in text for text in texts), finding.title
    tables = [df.value for df in at.dataframe]
    evidence = [t for t in tables if list(t.columns) == ["measure", "value"]]
    assert len(evidence) == len(expected)
    for shown, finding in zip(evidence, expected, strict=True):
        if finding.check != "snapshots_to_expire":  # its "as of" moves with the clock
            assert list(shown["value"]) == [views.value_text(k, v) for k, v in finding.evidence]
        # Text for people: no "None", counts with separators.
        for (_, v), text in zip(finding.evidence, shown["value"], strict=True):
            assert text != "None"
            if isinstance(v, int) and not isinstance(v, bool):
                assert text == f"{v:,}"
    schema_table = next(t for t in tables if "identifier" in t.columns)
    rows = describe.schema_rows(table.metadata.current_schema())
    assert list(schema_table["id"]) == [r.field_id for r in rows]
    top_level = [r.name for r in rows if r.depth == 0]
    assert top_level == spark.table("icecore.demo.trips").columns
    properties = next(t for t in tables if "property" in t.columns)
    theirs = {r.key: r.value for r in spark.sql("SHOW TBLPROPERTIES icecore.demo.trips").collect()}
    ours = dict(zip(properties["property"], properties["value"], strict=True))
    # Spark moves its reserved properties (TableCatalog.RESERVED_PROPERTIES: comment, owner,
    # location, provider, ...) out of SHOW TBLPROPERTIES; DESCRIBE shows comment and owner.
    reserved = {"comment", "owner", "location", "provider", "external", "is_managed_location"}
    assert ours and {k: v for k, v in ours.items() if theirs.get(k) != v} == {
        k: v for k, v in ours.items() if k in reserved
    }


def test_the_overview_follows_the_time_selector(
    spark: Any, demo_warehouse: Path, open_page: OpenPage
) -> None:
    tag = spark.sql(
        "SELECT snapshot_id FROM icecore.demo.trips.refs WHERE name = 'month_end'"
    ).collect()[0][0]
    at = open_page(PAGE, table="demo.trips", ref="month_end")
    no_problems(at)
    assert number(metrics(at)["Data files"]) == spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips.data_files VERSION AS OF {tag}"
    )
    assert number(metrics(at)["Live rows"]) == spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips VERSION AS OF {tag}"
    )
    # Health at the tag judges the partitions of the spec in force then (spec 0, by
    # Spark's files table at that snapshot), not today's spec, and says which one.
    spec_id = spark_count(
        spark,
        f"SELECT max(spec_id) FROM icecore.demo.trips.data_files VERSION AS OF {tag}",
    )
    assert spec_id == 0
    finding = next(m.value for m in at.markdown if "**Partition" in m.value)
    assert "partition spec 0" in finding and "no live data files" not in finding
    evidence = [df.value for df in at.dataframe if list(df.value.columns) == ["measure", "value"]]
    shown = next(
        dict(zip(t["measure"], t["value"], strict=True))
        for t in evidence
        if "partition spec judged" in set(t["measure"])
    )
    assert number(shown["partition spec judged"]) == 0
    where = f"VERSION AS OF {tag} WHERE spec_id = 0"
    assert number(shown["data files of the spec"]) == spark_count(
        spark, f"SELECT count(*) FROM icecore.demo.trips.data_files {where}"
    )
    assert number(shown["partitions of the spec"]) == spark_count(
        spark, f"SELECT count(DISTINCT partition) FROM icecore.demo.trips.data_files {where}"
    )


def test_a_second_session_shares_the_live_files_the_first_read(
    demo_warehouse: Path, open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two browser sessions on one table version read its manifests once: the second gets the
    # very table the first made (a shared resource, not a per-hit copy), and the Metadata
    # tree and Maintenance pages use it too.
    made: list[pa.Table] = []
    real = data.snapshot_files

    def counting(table: Any, snapshot: Any) -> pa.Table:
        found = real(table, snapshot)
        if snapshot is not None:
            made.append(found)
        return found

    monkeypatch.setattr(data, "snapshot_files", counting)
    data._LIVE_FILES.clear()
    first = open_page(PAGE, table="demo.trips")
    no_problems(first)
    second = open_page(PAGE, table="demo.trips")
    no_problems(second)
    tree = open_page(app.METADATA_TREE.file, table="demo.trips")
    no_problems(tree)
    assert len(made) == 1
    assert metrics(first) == metrics(second)
    table = icecore.load_table(f"{demo_warehouse}::demo.trips")
    snapshot = table.snapshot()
    assert snapshot is not None
    assert data.live_files(table, snapshot) is made[0]


def test_a_cold_read_shows_what_it_reads_and_how_far(
    demo_warehouse: Path, open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Cold (no decoded manifest in memory or on disk), the page's progress listener is told
    # "Reading manifests: k of n" up to every manifest of the snapshot; warm, it hears nothing.
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
    data._LIVE_FILES.clear()
    default_context().clear()
    default_context().manifests.clear(disk=True)
    no_problems(open_page(PAGE, table="demo.events_v3"))
    table = icecore.load_table(f"{demo_warehouse}::demo.events_v3")
    snapshot = table.snapshot()
    assert snapshot is not None
    manifests = len(table.manifests(snapshot))
    assert told and told[-1] == ("Reading manifests", manifests, manifests)
    told.clear()
    no_problems(open_page(PAGE, table="demo.events_v3"))
    assert told == []
