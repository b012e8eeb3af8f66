"""The SQL page: queries over metadata tables and rows give Spark's answers; downloads hold them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.ui.helpers import OpenPage, as_shown, no_problems, spark_count

PAGE = "pages/7_SQL.py"

pytestmark = pytest.mark.spark


def test_sql_over_metadata_tables_and_rows(spark: Any, open_page: OpenPage) -> None:
    at = open_page(PAGE, table="demo.trips")
    no_problems(at)
    assert len(at.dataframe[0].value) == 100  # the default query's LIMIT
    sql = (
        "SELECT (SELECT count(*) FROM files) AS files, (SELECT count(*) FROM rows) AS live, "
        "(SELECT count(*) FROM snapshots) AS snapshots"
    )
    at.text_area(key="sql_text").input(sql).run()
    no_problems(at)
    row = at.dataframe[0].value.iloc[0]
    assert int(row["files"]) == spark_count(spark, "SELECT count(*) FROM icecore.demo.trips.files")
    assert int(row["live"]) == spark_count(spark, "SELECT count(*) FROM icecore.demo.trips")
    assert int(row["snapshots"]) == spark_count(
        spark, "SELECT count(*) FROM icecore.demo.trips.snapshots"
    )
    assert at.query_params["sql"] in (sql, [sql])


def test_the_result_can_be_downloaded_as_csv_and_parquet(open_page: OpenPage) -> None:
    # The bytes are icecore.export's (tests/icecore/test_export.py reads them back).
    at = open_page(PAGE, table="demo.zones", sql="SELECT zone_id, borough FROM rows ORDER BY 1")
    no_problems(at)
    assert len(at.dataframe[0].value) > 0
    labels = {b.proto.label for b in at.get("download_button")}
    assert labels == {"Download CSV", "Download Parquet"}


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("DROP TABLE files", "Only SELECT"),
        ("SELECT * FROM read_csv('/etc/passwd')", ""),
        ("SELEC 1", "does not parse"),
        ("SELECT * FROM nowhere", "nowhere"),
    ],
)
def test_bad_sql_is_one_sentence(open_page: OpenPage, sql: str, says: str) -> None:
    at = open_page(PAGE, table="demo.zones")
    at.text_area(key="sql_text").input(sql).run()
    assert not at.exception
    assert len(at.error) == 1 and says in as_shown(at.error[0].value)


@pytest.mark.spark
def test_run_on_spark_answers_over_the_whole_table(
    open_page: OpenPage, spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ICECORE_JOBS_DIR", str(tmp_path / "jobs"))
    monkeypatch.setenv("ICECORE_SPARK_MASTER", "local[2]")
    monkeypatch.setenv("ICECORE_SPARK_DRIVER_MEMORY", "1g")
    sql = "SELECT vendor_id, count(*) AS n FROM rows GROUP BY vendor_id ORDER BY 1"
    at = open_page("pages/7_SQL.py", table="demo.trips", sql=sql)
    at.button(key="sql_spark").click().run()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any(
        m.value.startswith("Spark query · ") and not m.value.endswith("running")
        for m in at.markdown
    ):
        time.sleep(3)
        at.run()
    assert any(m.value == "Spark query · succeeded" for m in at.markdown), [
        c.value for c in at.code
    ]
    shown = next(df.value for df in at.dataframe if list(df.value.columns) == ["vendor_id", "n"])
    expected = spark.sql(
        "SELECT vendor_id, count(*) FROM icecore.demo.trips GROUP BY vendor_id ORDER BY 1"
    ).collect()
    assert [tuple(r) for r in shown.itertuples(index=False)] == [tuple(r) for r in expected]
