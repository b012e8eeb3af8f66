"""The SQL page: queries over metadata tables and rows give Spark's answers; downloads hold them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.helpers import OpenPage, no_problems, spark_count

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
    assert len(at.error) == 1 and says in at.error[0].value
