"""The landing page, driven by Streamlit's AppTest against the Spark-written warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.spark
def test_landing_lists_every_table_spark_wrote(
    spark: Any, demo_warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(demo_warehouse))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception
    shown = set(at.dataframe[0].value["table"])
    expected = {f"demo.{r.tableName}" for r in spark.sql("SHOW TABLES IN icecore.demo").collect()}
    expected |= {f"demo.{r.tableName}" for r in spark.sql("SHOW TABLES IN hadoop.demo").collect()}
    assert shown == expected


def test_landing_shows_one_sentence_for_an_unknown_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICECORE_CATALOG", str(tmp_path / "nowhere"))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert len(at.error) == 1
    assert "does not exist" in at.error[0].value
