"""Run on Spark for a masked principal: ``rows`` selects the other columns only, never ``*``.

Spark is the oracle: the masked query's rows equal Spark's own select of the unmasked columns;
a query naming a masked column, or asked by a viewer, is refused before Spark reads anything.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from icecore.access import Access, Role
from icecore.catalog import load_table
from icecore.errors import Forbidden
from pipeline.query import run_query
from pipeline.query_check import checked_query, rows_projection, snapshot_schema_of

pytestmark = pytest.mark.spark


def test_a_masked_query_sees_only_the_other_columns(spark: Any, demo_warehouse: Path) -> None:
    name = f"{demo_warehouse}::demo.accounts"
    answer = run_query(spark, name, "SELECT * FROM rows", None, 100_000, mask=["email"])
    assert answer["columns"] == ["account_id", "country", "balance"]
    theirs = spark.sql("SELECT account_id, country, balance FROM icecore.demo.accounts")
    assert Counter(tuple(map(str, r)) for r in answer["rows"]) == Counter(
        tuple(map(str, r)) for r in theirs.collect()
    )
    with pytest.raises(Forbidden, match="Column email is masked for you"):
        run_query(spark, name, "SELECT count(*) FROM rows WHERE email > 'u'", None, 10, ["email"])


def test_a_masked_struct_field_is_left_out_of_its_struct(spark: Any, demo_warehouse: Path) -> None:
    name = f"{demo_warehouse}::demo.trips"
    sql = "SELECT trip_id, pickup_loc FROM rows"
    answer = run_query(spark, name, sql, None, 1_000_000, mask=["pickup_loc.lat"])

    def lon(value: Any) -> Any:
        """The struct's only field, lon (a null struct stays null)."""
        if value is None:
            return None
        fields = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        assert len(fields) == 1, value  # lat is not in the struct
        return fields[0][1]

    theirs = spark.sql("SELECT trip_id, pickup_loc.lon FROM icecore.demo.trips").collect()
    assert Counter((r[0], lon(r[1])) for r in answer["rows"]) == Counter(
        (r[0], r[1]) for r in theirs
    )


def test_the_projection_names_each_column_and_a_viewer_is_refused(demo_warehouse: Path) -> None:
    table = load_table(f"{demo_warehouse}::demo.accounts")
    schema = snapshot_schema_of(table, None)
    masked = Access(Role.READER, frozenset({"email"}))
    assert rows_projection(schema, masked) == [
        "`account_id` AS `account_id`",
        "`country` AS `country`",
        "`balance` AS `balance`",
    ]
    assert rows_projection(schema, Access(Role.READER)) is None
    with pytest.raises(Forbidden, match="needs the reader role and you have the viewer"):
        checked_query("SELECT count(*) FROM rows", table, None, Access(Role.VIEWER))
