"""The what-if estimate against Spark's real rewrites (issue 33 deliver 4).

Each case: Spark writes a table of shuffled rows in small files (a small target file size,
so a partition holds several files); Icecore estimates, for a proposed layout and a few
filters, the files and bytes each filter would read after a rewrite; then Spark really
evolves the table into that layout and runs ``rewrite_data_files`` (binpack, or sort for a
sort order), and the same filters are planned on the rewritten table. The estimate must land
within :data:`icecore.whatif.STATED_ERROR` of what the rewritten table plans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.whatif import STATED_ERROR, proposed_layout, what_if
from tests.icecore.evolution.conftest import EvoCatalogs, register_catalogs

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TARGET = 96 * 1024


@dataclass(frozen=True)
class Case:
    name: str
    spec_changes: tuple[str, ...]
    sort_changes: tuple[str, ...]
    spark_changes: tuple[str, ...]
    strategy: str
    filters: tuple[str, ...]


CASES = (
    Case(
        "identity",
        ("add_field cat",),
        (),
        ("ADD PARTITION FIELD cat",),
        "binpack",
        ("cat = 'c3'", "cat IN ('c1', 'c6')", "amount > 90"),
    ),
    Case(
        "day_bucket",
        ("add_field ts day", "add_field id bucket[4]"),
        (),
        ("ADD PARTITION FIELD days(ts)", "ADD PARTITION FIELD bucket(4, id)"),
        "binpack",
        ("ts >= '2024-01-25'", "id = 4242", "ts < '2024-01-04' AND id = 17"),
    ),
    Case(
        "sort",
        (),
        ("asc id",),
        ("WRITE ORDERED BY id",),
        "sort",
        ("id < 5000", "id BETWEEN 60000 AND 64000", "id = 77777"),
    ),
)


def _write(spark: Any, full: str) -> None:
    spark.sql(
        f"CREATE TABLE {full} (id bigint, cat string, ts timestamp, amount double) USING iceberg "
        f"TBLPROPERTIES ('format-version' = '2', 'write.target-file-size-bytes' = '{TARGET}')"
    )
    spark.sql(
        f"INSERT INTO {full} SELECT id, concat('c', cast(id % 8 AS string)), "
        "timestamp_seconds(1704067200 + (id * 7919) % (30 * 86400)), (id * 31) % 100 + 0.5 "
        "FROM range(0, 120000) ORDER BY rand(7)"
    )


def _planned(table: Any, flt: str) -> tuple[int, int]:
    tasks = list(table.scan(flt).plan().tasks)
    return len(tasks), sum(t.file_size_in_bytes for t in tasks)


@pytest.fixture(scope="module")
def cats(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> EvoCatalogs:
    """A private Hadoop catalog: the shared fixture warehouse stays as the demo wrote it."""
    return register_catalogs(spark, tmp_path_factory.mktemp("whatif"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_estimate_lands_within_its_stated_error_of_spark_rewrite(
    spark: Any, cats: EvoCatalogs, case: Case
) -> None:
    full = f"{cats.fs}.db.{case.name}"
    root = cats.warehouse / "hadoop"
    _write(spark, full)
    before = icecore.load_table(f"{root}::db.{case.name}")
    estimate = what_if(
        before, proposed_layout(before, case.spec_changes, case.sort_changes), case.filters
    )
    assert estimate.sampled_rows == estimate.rows == 120000  # every row read: no sampling
    for change in case.spark_changes:
        spark.sql(f"ALTER TABLE {full} {change}")
    spark.sql(
        f"CALL {cats.fs}.system.rewrite_data_files(table => 'db.{case.name}', "
        f"strategy => '{case.strategy}', options => map('rewrite-all', 'true'))"
    )
    after = icecore.load_table(f"{root}::db.{case.name}")
    assert spark.sql(f"SELECT count(*) FROM {full}").collect()[0][0] == 120000
    all_files = len(list(after.scan().plan().tasks))
    report = []
    for e in estimate.estimates:
        files, size = _planned(after, e.filter)
        now = _planned(before, e.filter)
        assert (e.files_now, e.bytes_now) == now  # today's numbers are the plan's own
        report.append((e.filter, e.files_after, files, e.bytes_after, size))
    report.append(("(all)", estimate.files_after, all_files, estimate.bytes_after, 0))
    print(case.name, report)  # the closing note quotes these (pytest -s)
    for flt, est_files, files, est_bytes, size in report:
        allowed = max(STATED_ERROR["files_absolute"], STATED_ERROR["files_relative"] * files)
        assert abs(est_files - files) <= allowed, (case.name, flt, report)
        if flt != "(all)":
            assert abs(est_bytes - size) <= STATED_ERROR["bytes_relative"] * size + TARGET, (
                case.name,
                flt,
                report,
            )


def test_cli_prints_the_estimate_and_refuses_what_it_cannot_estimate(demo_warehouse: Path) -> None:
    """``icecore whatif``: today's numbers are ``icecore plan``'s; bad input is one sentence."""
    from tests.icecore.test_cli import icecore_cli

    table = f"{demo_warehouse}::demo.trips"
    flt = "fare > 30"
    result = icecore_cli(
        "whatif", table, "--sort-change", "asc fare", "--filter", flt, "--filter", "fare < 5"
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    plan = json.loads(icecore_cli("plan", table, "--filter", flt).stdout)
    first = out["filters"][0]
    assert first["filter"] == flt
    assert first["now"]["files"] == len(plan["data_files"])
    assert out["layout"]["sort_order"].startswith("[identity(")
    assert out["sample"]["every_row"] is True
    assert 0 < first["estimated"]["files"] <= out["after_rewrite"]["data_files"]
    for bad, said in (
        (["--filter", flt], "Nothing proposed"),
        (["--sort-change", "asc fare"], "No filter"),
        (["--spec-change", "add_field nope day", "--filter", flt], "nope"),
        (["--sort-change", "asc fare", "--filter", "fare >"], "filter"),
    ):
        failed = icecore_cli("whatif", table, *bad)
        assert failed.returncode == 1 and said.lower() in failed.stderr.lower(), failed.stderr
        assert len(failed.stderr.strip().splitlines()) == 1, failed.stderr
