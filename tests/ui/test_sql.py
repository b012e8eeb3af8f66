"""The SQL page: queries over metadata tables and rows give Spark's answers; downloads hold them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecore.catalog import load_table
from icecore.inspect import METADATA_TABLES
from icecore.sql import SqlLimits
from pipeline.query_check import checked_query
from pipeline.spark import PipelineError
from tests.big_rows import write_big_table
from tests.icecore.evolution.conftest import register_catalogs
from tests.ui.helpers import OpenPage, as_shown, no_problems, open_app, rerun_until, spark_count
from ui import app
from ui.jobs import jobs_dir

PAGE = app.SQL.file

pytestmark = pytest.mark.spark


def test_sql_over_metadata_tables_and_rows(spark: Any, open_page: OpenPage) -> None:
    at = open_page(PAGE, table="demo.trips")
    no_problems(at)
    assert len(at.dataframe[0].value) == 100  # the default query's LIMIT
    offered = " ".join(str(c.value) for c in at.caption)
    assert [k for k in METADATA_TABLES if f"`{k}`" not in offered] == []  # the registry's kinds
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


def test_a_page_run_encodes_no_download(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CSV and Parquet are made when a download is clicked, not on every run of the page.

    Encoding 100,000 rows twice per run (each keystroke, each rerun) costs seconds.
    """
    import icecore.export

    encoded: list[str] = []
    for name in ("csv_bytes", "parquet_bytes"):
        encode = getattr(icecore.export, name)

        def counting(table: Any, encode: Any = encode, name: str = name) -> bytes:
            encoded.append(name)
            return bytes(encode(table))

        monkeypatch.setattr(icecore.export, name, counting)
    at = open_page(PAGE, table="demo.zones", sql="SELECT zone_id FROM rows ORDER BY 1")
    no_problems(at)
    assert len(at.dataframe[0].value) > 0
    assert len(at.get("download_button")) == 2
    assert encoded == []


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
    monkeypatch.setenv("ICECORE_SPARK_QUERIES", "1")
    monkeypatch.setenv("ICECORE_SPARK_MASTER", "local[2]")
    monkeypatch.setenv("ICECORE_SPARK_DRIVER_MEMORY", "1g")
    sql = "SELECT vendor_id, count(*) AS n FROM rows GROUP BY vendor_id ORDER BY 1"
    at = open_page(app.SQL.file, table="demo.trips", sql=sql)
    at.button(key="sql_spark").click().run()
    rerun_until(
        at,
        lambda at: any(
            m.value.startswith("Spark query · ") and not m.value.endswith("running")
            for m in at.markdown
        ),
        "the Spark query never ended",
    )
    assert any(m.value == "Spark query · succeeded" for m in at.markdown), [
        c.value for c in at.code
    ]
    shown = next(df.value for df in at.dataframe if list(df.value.columns) == ["vendor_id", "n"])
    expected = spark.sql(
        "SELECT vendor_id, count(*) FROM icecore.demo.trips GROUP BY vendor_id ORDER BY 1"
    ).collect()
    assert [tuple(r) for r in shown.itertuples(index=False)] == [tuple(r) for r in expected]


def test_run_on_spark_is_not_offered_unless_the_operator_enables_it(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ICECORE_SPARK_QUERIES", raising=False)
    at = open_page(PAGE, table="demo.trips")
    no_problems(at)
    assert not [b for b in at.button if b.key == "sql_spark"]
    assert not [e for e in at.expander if "Spark" in e.label]
    monkeypatch.setenv("ICECORE_SPARK_QUERIES", "1")
    at = open_page(PAGE, table="demo.trips")
    assert [b for b in at.button if b.key == "sql_spark"]


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELECT TRANSFORM(vendor_id) USING 'touch {marker}' FROM rows", "script transform"),
        ("SELECT _file, count(*) FROM rows GROUP BY 1", "`_file`"),
        ("SELECT try_reflect('java.lang.System', 'getenv', 'HOME')", "try_reflect"),
    ],
)
def test_a_refused_query_is_one_sentence_and_launches_no_job(
    open_page: OpenPage,
    demo_warehouse: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    sql: str,
    says: str,
) -> None:
    monkeypatch.setenv("ICECORE_JOBS_DIR", str(tmp_path / "jobs"))
    monkeypatch.setenv("ICECORE_SPARK_QUERIES", "1")
    marker = tmp_path / "marker"
    text = sql.format(marker=marker)
    at = open_page(PAGE, table="demo.trips", sql=text)
    at.button(key="sql_spark").click().run()
    assert not at.exception
    # The sentence is the check's own, shown as text (escaped, never read as Markdown).
    with pytest.raises(PipelineError) as refusal:
        checked_query(text, load_table(f"{demo_warehouse}::demo.trips"), None)
    assert says in str(refusal.value)
    shown = [e.value for e in at.error]
    assert str(refusal.value) in [as_shown(v) for v in shown], shown
    assert "sql_spark_job" not in at.session_state
    assert not any(jobs_dir().iterdir())
    assert not marker.exists()


def test_rows_are_every_row_and_a_cut_result_says_so(
    spark: Any,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """504,000 rows written by Spark: count(*) and a GROUP BY are Spark's, not a sample's."""
    catalogs = register_catalogs(spark, tmp_path_factory.mktemp("sql-page-big"))
    full = write_big_table(catalogs, "big")
    monkeypatch.setenv("ICECORE_CATALOG", str(catalogs.warehouse))
    monkeypatch.delenv("ICECORE_READ_ONLY", raising=False)
    at = open_app(PAGE, catalog=str(catalogs.warehouse), table="db.big")
    no_problems(at)
    at.text_area(key="sql_text").input("SELECT count(*) AS n FROM rows").run()
    no_problems(at)
    assert int(at.dataframe[0].value.iloc[0]["n"]) == spark_count(
        spark, f"SELECT count(*) FROM {full}"
    )
    assert not at.warning
    at.text_area(key="sql_text").input("SELECT k, count(*) AS n FROM rows GROUP BY k").run()
    no_problems(at)
    shown = {(int(r["k"]), int(r["n"])) for _, r in at.dataframe[0].value.iterrows()}
    theirs = spark.sql(f"SELECT k, count(*) AS n FROM {full} GROUP BY k").collect()
    assert shown == {(r.k, r.n) for r in theirs}

    at.text_area(key="sql_text").input("SELECT id FROM rows").run()
    no_problems(at)
    most = SqlLimits().max_rows
    assert len(at.dataframe[0].value) == most
    assert [w.value for w in at.warning] == [
        f"First {most:,} rows of the result: the query gave more. Aggregate or add a LIMIT "
        "to see the rest; the downloads hold these rows only."
    ]
