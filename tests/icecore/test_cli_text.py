"""The command line for people: plain ``--help`` and ``--summary`` of the big outputs.

``--help`` once showed reStructuredText (````python -m icecore````, ``:class:`...```) taken
from docstrings; ``plan`` and ``inspect`` printed megabytes of JSON with no way to ask for
counts. The summary's counts and totals are checked against Spark's metadata tables.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from icecore.cli import SUMMARIZED, build_parser, plain, summarize
from tests.icecore.test_cli import icecore_cli

MARKUP = re.compile(r"`|:(class|func|meth|mod|attr|data|exc|ref):")


def _helps() -> dict[str, str]:
    """Every ``--help`` text of ``python -m icecore``, by command path."""
    helps = {}
    stack = [("", build_parser())]
    while stack:
        path, parser = stack.pop()
        helps[path] = parser.format_help()
        for action in parser._actions:  # argparse keeps sub-commands only there
            if isinstance(action, argparse._SubParsersAction):
                stack += [(f"{path} {name}".strip(), p) for name, p in action.choices.items()]
    return helps


def test_every_help_text_is_plain() -> None:
    helps = _helps()
    assert {"plan", "ref rollback", "serve-rest"} <= set(helps)  # the walk reaches them
    marked = {name: found.group(0) for name, t in helps.items() if (found := MARKUP.search(t))}
    assert not marked


def test_the_maintenance_jobs_help_is_plain() -> None:
    import subprocess
    import sys

    shown = subprocess.run(
        [sys.executable, "-m", "pipeline.maintenance", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "rewrite_data_files" in shown and not MARKUP.search(shown)


@pytest.mark.parametrize(
    ("rst", "text"),
    [
        ("``python -m icecore``: JSON", "python -m icecore: JSON"),
        ("raises :class:`~icecore.errors.CommitConflict`", "raises CommitConflict"),
        ("see :func:`icecore.load_table`", "see icecore.load_table"),
        ("the `rows` table", "the rows table"),
        (":ref:`Deploying <deploying>` and :py:meth:`~a.B.c`", "Deploying and c"),
        ("no markup at all", "no markup at all"),
    ],
)
def test_plain_drops_restructuredtext(rst: str, text: str) -> None:
    assert plain(rst) == text


def test_summary_shape() -> None:
    files = [{"file_path": f"f{i}", "record_count": i, "spec_id": 0} for i in range(12)]
    out = {"snapshot_id": 7, "data_files": [f"f{i}" for i in range(12)], "refs": ["a", "b"]}
    # A list output always becomes the summary object; inner lists only when long.
    assert (
        summarize(files)
        == {
            "count": 12,
            "totals": {"record_count": 66},  # 0 + 1 + ... + 11; spec_id is no amount
            "first": files[:5],
        }
    )
    assert summarize(out) == {
        "snapshot_id": 7,
        "data_files": {"count": 12, "first": ["f0", "f1", "f2", "f3", "f4"]},
        "refs": ["a", "b"],
    }
    assert summarize([]) == {"count": 0, "first": []}


def test_the_big_commands_take_summary() -> None:
    assert {"plan", "inspect", "history", "diff"} <= set(SUMMARIZED)
    parser = build_parser()
    for command in SUMMARIZED:
        args = ["/w::n.t"]
        extra = {
            "inspect": ["files"],
            "diff": ["1", "2"],
            "sql": ["SELECT 1"],
            "changelog": ["start"],
        }
        parsed = parser.parse_args([command, *args, *extra.get(command, []), "--summary"])
        assert parsed.summary is True


@pytest.mark.spark
def test_summaries_count_what_spark_counts(spark: Any, demo_warehouse: Path) -> None:
    table = f"{demo_warehouse}::demo.trips"
    full = json.loads(icecore_cli("plan", table).stdout)
    result = icecore_cli("plan", table, "--summary")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["snapshot_id"] == full["snapshot_id"]
    assert summary["data_files"]["count"] == len(full["data_files"])
    assert summary["data_files"]["first"] == full["data_files"][:5]
    assert len(result.stdout) < len(json.dumps(full)) / 10

    files = json.loads(icecore_cli("inspect", table, "files", "--summary").stdout)
    spark_files = spark.sql(
        "SELECT count(*) AS n, sum(record_count) AS records, sum(file_size_in_bytes) AS bytes"
        " FROM icecore.demo.trips.files"
    ).collect()[0]
    assert files["count"] == spark_files.n
    assert files["totals"]["record_count"] == spark_files.records
    assert files["totals"]["file_size_in_bytes"] == spark_files.bytes
    assert len(files["first"]) == 5

    history = json.loads(icecore_cli("history", table, "--summary").stdout)
    snapshots = spark.sql("SELECT count(*) FROM icecore.demo.trips.snapshots").collect()[0][0]
    assert history["count"] == snapshots and len(history["first"]) == min(5, snapshots)


@pytest.mark.spark
def test_the_plan_report_writes_values_as_sql_literals(demo_warehouse: Path) -> None:
    """``plan``'s pruning reasons spell dates and timestamps as SQL, not Python reprs."""
    table = f"{demo_warehouse}::demo.trips"
    result = icecore_cli("plan", table, "--filter", "pickup_ts < '2024-08-03'")
    assert result.returncode == 0, result.stderr
    reasons = [p["reason"] for p in json.loads(result.stdout)["report"]["pruned"]]
    assert reasons
    for reason in reasons:
        assert "datetime." not in reason and not re.search(r"\d{13,}", reason), reason
    assert any("DATE '2024-08-0" in r or "TIMESTAMP '2024-08-0" in r for r in reasons)
