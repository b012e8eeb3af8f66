"""icecore.workload over hand-written reports (the spec's shapes, Java's metric names).

Expected values are derived by hand from the reports each test writes and from Java's
documented masking rules (``ExpressionUtil.sanitize``: a number's digits, ``(date)`` for a
date more than 90 days away), never from the code under test.
"""

from __future__ import annotations

import copy
from typing import Any

from icecore.catalog.report_store import KeptReport
from icecore.workload import filter_columns, filter_text, mask, workload
from tests.icecore.catalog.test_report_store import COMMIT, SCAN


def report(flt: Any, result: int, engine: str | None = "spark") -> KeptReport:
    body = copy.deepcopy(SCAN)
    body["filter"] = flt
    body["metrics"]["result-data-files"]["value"] = result
    if engine is None:
        del body["metadata"]
    return KeptReport(1_700_000_000_000 + result, "db.t", None, body)


def test_numbers_and_dates_are_masked_as_java_masks_them() -> None:
    assert mask(100) == "(3-digit-int)"
    assert mask(0) == "(1-digit-int)"
    assert mask(-12345) == "(5-digit-int)"
    assert mask(2.5) == "(1-digit-float)"
    assert mask("2019-01-01") == "(date)"
    assert mask("2019-01-01T10:00:00") == "(timestamp)"
    # Java's masks are kept, relative ones folded so one query on two days is one group.
    assert mask("(3-digit-int)") == "(3-digit-int)"
    assert mask("(date-3-days-ago)") == "(date)"
    assert mask("(timestamp-2-hours-ago)") == "(timestamp)"


def test_filters_as_text_and_their_columns() -> None:
    flt = {
        "type": "or",
        "left": {"type": "in", "term": "zone", "values": ["a", "b"]},
        "right": {
            "type": "not",
            "child": {
                "type": "is-null",
                "term": {"type": "transform", "transform": "day", "term": "ts"},
            },
        },
    }
    assert filter_text(flt) == "(zone IN (a, b) OR NOT (day(ts) IS NULL))"
    assert filter_columns(flt) == ["zone", "ts"]
    assert filter_text(True) == "true" and filter_columns(True) == []
    ref = {"type": "lt", "left": {"type": "reference", "name": "id"}, "right": 5}
    assert filter_text(ref, masked=True) == "id < (1-digit-int)"
    assert filter_columns(ref) == ["id"]


def test_scans_are_grouped_by_masked_filter() -> None:
    a = {"type": "gt", "term": "id", "value": 120}  # unmasked (a non-Java client)
    b = {"type": "gt", "term": "id", "value": "(3-digit-int)"}  # as Java sends it
    reports = [report(a, 1), report(b, 2), report(True, 10, engine=None)]
    commit = KeptReport(1_800_000_000_000, "db.t", "Ann", COMMIT)
    found = workload([*reports, commit])
    assert [s["filter"] for s in found["scans"]] == ["id > 120", "id > (3-digit-int)", "true"]
    assert [(g["filter"], g["scans"], g["result_data_files"]) for g in found["filters"]] == [
        ("id > (3-digit-int)", 2, 3),
        ("true", 1, 10),
    ]
    assert found["columns"] == [{"column": "id", "scans": 2}]
    assert [s["result_data_files"] for s in found["full_scans"]] == [10]
    assert found["scans"][0]["engine"] == "spark 3.5.6" and found["scans"][2]["engine"] is None
    assert found["scans"][0]["planning_ms"] == 2_644_235_116 / 1e6
    (c,) = found["commits"]
    assert (c["attempts"], c["conflicts"], c["duration_ms"], c["principal"]) == (2, 1, 5.0, "Ann")
