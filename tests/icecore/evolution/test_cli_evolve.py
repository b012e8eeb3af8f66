"""``python -m icecore evolve``: dry runs write nothing, a commit is one version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

from .hand_table import LAST_COLUMN_ID, tree_state, write_table


def evolve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icecore", "evolve", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    return write_table(tmp_path, 3)


CHANGES = [
    "--schema-change",
    "add_column loc.alt double doc='metres above sea level'",
    "--schema-change",
    "add_column tier string required default=basic",
    "--schema-change",
    "rename_column name full_name",
    "--schema-change",
    "update_column qty long",
    "--spec-change",
    "add_field ts hour",
    "--spec-change",
    "remove_field ts_day",
    "--sort-change",
    "desc qty bucket[4] nulls-first",
    "--set-property",
    "team=data",
]


def test_dry_run_shows_the_change_and_writes_nothing(table_dir: Path) -> None:
    before = tree_state(table_dir)
    result = evolve(str(table_dir), *CHANGES, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert tree_state(table_dir) == before
    out: dict[str, Any] = json.loads(result.stdout)
    assert out["dry_run"] is True
    assert out["changes"][:5] == [
        "add schema 1",
        "  renamed full_name (id 2): name -> full_name",
        "  type qty (id 3): int -> long",
        f"  added loc.alt (id {LAST_COLUMN_ID + 1}): double",
        f"  added tier (id {LAST_COLUMN_ID + 2}): string",
    ]
    assert (
        "add partition spec 1: id_bucket=bucket[4](id) [id 1000], ts_hour=hour(ts) [id 1002]"
        in (out["changes"])
    )
    assert "set property team = data" in out["changes"]
    assert [r["type"] for r in out["requirements"]] == [
        "assert-table-uuid",
        "assert-current-schema-id",
        "assert-last-assigned-field-id",
        "assert-default-spec-id",
        "assert-last-assigned-partition-id",
        "assert-default-sort-order-id",
    ]
    assert out["metadata"]["last-column-id"] == LAST_COLUMN_ID + 2
    assert '+  "last-column-id": 18,' in out["diff"]


def test_commit_is_one_new_version(table_dir: Path) -> None:
    result = evolve(str(table_dir), *CHANGES)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["committed"] is True
    assert out["metadata_location"] == str(table_dir / "metadata" / "v2.metadata.json")
    written = json.loads(Path(out["metadata_location"]).read_text())
    fields = {f["name"]: f for f in written["schemas"][-1]["fields"]}
    assert fields["tier"]["initial-default"] == "basic" and fields["tier"]["required"] is True
    assert fields["qty"]["type"] == "long"
    assert written["sort-orders"][-1]["fields"] == [
        {"transform": "bucket[4]", "source-id": 3, "direction": "desc", "null-order": "nulls-first"}
    ]
    assert written["properties"]["team"] == "data"
    assert (out["current_schema_id"], out["default_spec_id"], out["default_sort_order_id"]) == (
        1,
        1,
        2,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schema-change", "update_column amount decimal(12,3)"], "scale is fixed"),
        (["--schema-change", "explode_column x"], "Unknown change 'explode_column'"),
        (["--schema-change", "add_column"], "usage: add_column path field_type"),
        (["--schema-change", "add_column 'x int"], "No closing quotation"),
        (["--spec-change", "add_field ts fortnight"], "Unknown transform 'fortnight'"),
        (["--sort-change", "asc nope"], "no such column"),
        (["--set-property", "format-version=3"], "reserved"),
        (["--set-property", "novalue"], "KEY=VALUE"),
        ([], "Nothing to change"),
    ],
)
def test_bad_requests_are_one_sentence_and_write_nothing(
    table_dir: Path, args: list[str], message: str
) -> None:
    before = tree_state(table_dir)
    line = one_line_error(evolve(str(table_dir), *args))
    assert message in line
    assert tree_state(table_dir) == before


def test_a_bare_metadata_file_cannot_be_committed(table_dir: Path) -> None:
    before = tree_state(table_dir)
    line = one_line_error(
        evolve(str(table_dir / "metadata" / "v1.metadata.json"), "--set-property", "a=b")
    )
    assert "bare metadata file" in line
    assert tree_state(table_dir) == before


def test_relative_table_folder_commits(tmp_path: Path) -> None:
    write_table(tmp_path, 2)
    result = subprocess.run(
        [sys.executable, "-m", "icecore", "evolve", "db/t", "--set-property", "a=b"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metadata_location"] == str(
        tmp_path / "db" / "t" / "metadata" / "v2.metadata.json"
    )


@pytest.mark.spark
def test_commit_through_the_sql_catalog_is_seen_by_spark(evo: Any) -> None:
    from .spark_checks import assert_spark_sees_schema

    table = evo.create("sql", "cli_sql", "(id bigint, data string) USING iceberg", "(1, 'a')")
    result = evolve(
        evo.table_arg("sql", "cli_sql"),
        "--schema-change",
        "add_column note string",
        "--spec-change",
        "add_field id bucket[8]",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["previous_metadata_location"] == table.metadata_location
    committed = table.refresh()
    assert committed.metadata_location == out["metadata_location"]
    assert_spark_sees_schema(
        evo.spark, evo.spark_name("sql", "cli_sql"), committed.metadata.current_schema()
    )
    evo.spark.sql(f"INSERT INTO {evo.spark_name('sql', 'cli_sql')} VALUES (2, 'b', 'n')")
    files = evo.spark.sql(f"SELECT spec_id FROM {evo.spark_name('sql', 'cli_sql')}.files")
    assert {r.spec_id for r in files.collect()} == {0, 1}
