"""What engines ask of a table, read from the reports they sent (DESIGN.md "Workload").

The reports are the ``ScanReport`` and ``CommitReport`` bodies Iceberg Java's REST client
POSTs to ``serve-rest``'s ``.../metrics`` and the server keeps
(:mod:`icecore.catalog.report_store`). Every number here is one the engine itself reported
(Java's ``ScanMetricsResult`` / ``CommitMetricsResult`` names); nothing is re-planned.

Filters: Java masks the literals of a report's filter (``ExpressionUtil.sanitize``):
numbers as ``(3-digit-int)``, strings as ``(hash-1a2b3c4d)`` (a hash of the value), dates and
timestamps as ``(date)``, ``(timestamp)`` or relative to the report's day
(``(date-3-days-ago)``, ``(timestamp-2-hours-ago)``). Filters are grouped by their masked
text, with relative dates and times folded to ``(date)``/``(timestamp)`` so that one query
run on different days is one group, and literals a client sent unmasked masked the way
Java masks them (strings hashed as Java's ``bucket[2147483647]``). A masked filter still
says which columns are filtered on, with which operators, and the magnitude of numbers;
it does not say which values, so two filters on different ids of the same width are one
group.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from icecore.catalog.report_store import PLAN_ID_KEY, KeptReport
from icecore.transforms.bucket import hash_string

_TIME_UNITS_MS = {
    "nanoseconds": 1e-6,
    "microseconds": 1e-3,
    "milliseconds": 1.0,
    "seconds": 1000.0,
    "minutes": 60_000.0,
    "hours": 3_600_000.0,
    "days": 86_400_000.0,
}

_OPERATORS = {
    "eq": "=",
    "not-eq": "!=",
    "lt": "<",
    "lt-eq": "<=",
    "gt": ">",
    "gt-eq": ">=",
    "starts-with": "STARTS WITH",
    "not-starts-with": "NOT STARTS WITH",
}
_UNARY = {
    "is-null": "IS NULL",
    "not-null": "IS NOT NULL",
    "is-nan": "IS NAN",
    "not-nan": "IS NOT NAN",
}
_MASKED = re.compile(r"\((?:[0-9]+-digit-[a-z]+|hash-[0-9a-f]+|date|time|timestamp|[a-z0-9-]+)\)")
_RELATIVE = re.compile(r"\((date|timestamp)-[a-z0-9-]*(?:ago|from-now|today)\)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{2}:\d{2}(:\d{2}(\.\d+)?)?")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:\d{2}|Z)?")


def counter(metrics: Mapping[str, Any], name: str) -> int | None:
    """A ``CounterResult``'s value, None when the report has no such counter."""
    found = metrics.get(name)
    if isinstance(found, Mapping) and isinstance(found.get("value"), int):
        return int(found["value"])
    return None


def timer_ms(metrics: Mapping[str, Any], name: str) -> float | None:
    """A ``TimerResult``'s total duration in milliseconds, None when absent."""
    found = metrics.get(name)
    if not isinstance(found, Mapping) or not isinstance(found.get("total-duration"), int):
        return None
    scale = _TIME_UNITS_MS.get(str(found.get("time-unit", "")).lower())
    return None if scale is None else found["total-duration"] * scale


def engine(report: Mapping[str, Any]) -> str | None:
    """The engine that sent a report, None when the client said nothing.

    Read from the report's ``metadata``: ``engine-name`` and ``engine-version`` (Iceberg
    Java's ``EnvironmentContext``, which Spark fills).
    """
    metadata = report.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("engine-name"):
        return None
    version = metadata.get("engine-version")
    return f"{metadata['engine-name']} {version}" if version else str(metadata["engine-name"])


# --- filters ------------------------------------------------------------------------------


def filter_text(node: Any, *, masked: bool = False) -> str:
    """A report's ``filter`` (the spec's ``Predicate`` JSON) as one line of text.

    With ``masked``, literals are masked as Java masks them and relative dates and times
    are folded (see the module): the text filters are grouped by.
    """
    if isinstance(node, bool):
        return "true" if node else "false"
    if not isinstance(node, Mapping):
        return "?"
    kind = node.get("type")
    if kind in ("true", "false"):
        return str(kind)
    if kind in ("and", "or"):
        left = filter_text(node.get("left"), masked=masked)
        right = filter_text(node.get("right"), masked=masked)
        return f"({left} {str(kind).upper()} {right})"
    if kind == "not":
        return f"NOT ({filter_text(node.get('child'), masked=masked)})"
    if kind in _UNARY:
        return f"{_term(node.get('child', node.get('term')), masked)} {_UNARY[str(kind)]}"
    if kind in _OPERATORS:
        if "term" in node:
            left, right = _term(node["term"], masked), _literal(node.get("value"), masked)
        else:
            left, right = _term(node.get("left"), masked), _term(node.get("right"), masked)
        return f"{left} {_OPERATORS[str(kind)]} {right}"
    if kind in ("in", "not-in"):
        values = node.get("values")
        if isinstance(values, Mapping):
            values = values.get("values")
        shown = [_literal(v, masked) for v in values] if isinstance(values, list) else []
        if masked:
            shown = sorted(set(shown))
        op = "IN" if kind == "in" else "NOT IN"
        return f"{_term(node.get('child', node.get('term')), masked)} {op} ({', '.join(shown)})"
    return "?"


def _term(node: Any, masked: bool) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, Mapping):
        kind = node.get("type")
        if kind == "reference":
            return str(node["name"]) if "name" in node else f"#{node.get('id')}"
        if kind == "transform":
            return f"{node.get('transform')}({_term(node.get('term'), masked)})"
        if kind == "apply":
            args = node.get("arguments")
            shown = [_term(a, masked) for a in args] if isinstance(args, list) else []
            return f"{node.get('function')}({', '.join(shown)})"
    return _literal(node, masked)


def _literal(node: Any, masked: bool) -> str:
    if isinstance(node, Mapping) and node.get("type") == "literal":
        node = node.get("value")
    if masked:
        return mask(node)
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def mask(value: Any) -> str:
    """A literal as Java's ``ExpressionUtil.sanitize`` masks it, relative times folded."""
    if isinstance(value, bool):
        return "(boolean)"
    if isinstance(value, int | float):
        kind = "int" if isinstance(value, int) else "float"
        number = float(value)
        digits = 1 if number == 0 or not math.isfinite(number) else int(math.log10(abs(number))) + 1
        return f"({digits}-digit-{kind})"
    text = str(value)
    relative = _RELATIVE.fullmatch(text)
    if relative:
        return f"({relative.group(1)})"
    if _MASKED.fullmatch(text):
        return text
    if _TIMESTAMP.fullmatch(text) and "T" in text:
        return "(timestamp)"
    if _DATE.fullmatch(text):
        return "(date)"
    if _TIME.fullmatch(text):
        return "(time)"
    bucket = (hash_string(text) & 0x7FFFFFFF) % 0x7FFFFFFF
    return f"(hash-{bucket:08x})"


def filter_columns(node: Any) -> list[str]:
    """The columns a filter names (each once, in order)."""
    found: dict[str, None] = {}

    def visit(value: Any, in_term: bool) -> None:
        if isinstance(value, str):
            if in_term:
                found.setdefault(value, None)
            return
        if isinstance(value, list):
            for item in value:
                visit(item, in_term)
            return
        if not isinstance(value, Mapping):
            return
        kind = value.get("type")
        if kind == "reference" and isinstance(value.get("name"), str):
            found.setdefault(value["name"], None)
        elif kind == "transform":
            visit(value.get("term"), True)
        elif kind == "apply":
            visit(value.get("arguments"), False)
        else:  # a predicate: a legacy ``term`` string is a reference, a bare string elsewhere
            for key in ("left", "right", "child"):  # (the spec's ValueExpression) a literal
                if key in value:
                    visit(value[key], False)
            if "term" in value:
                visit(value["term"], True)

    visit(node, False)
    return list(found)


def is_full_scan(node: Any) -> bool:
    """Whether a filter selects every row (``true``: nothing for planning to prune by)."""
    return node is True or (isinstance(node, Mapping) and node.get("type") == "true")


# --- the workload -------------------------------------------------------------------------


def scan_entry(kept: KeptReport) -> dict[str, Any]:
    """One ``ScanReport`` as ``icecore workload`` lists it (DESIGN.md "Workload")."""
    report, metrics = kept.report, kept.report.get("metrics", {})
    return {
        "time": kept.time,
        "table": kept.table,
        "engine": engine(report),
        "principal": kept.principal,
        "filter": filter_text(report.get("filter")),
        "filter_group": filter_text(report.get("filter"), masked=True),
        "snapshot_id": report.get("snapshot-id"),
        "projected_columns": list(report.get("projected-field-names", [])),
        "result_data_files": counter(metrics, "result-data-files"),
        "skipped_data_files": counter(metrics, "skipped-data-files"),
        "result_delete_files": counter(metrics, "result-delete-files"),
        "scanned_data_manifests": counter(metrics, "scanned-data-manifests"),
        "skipped_data_manifests": counter(metrics, "skipped-data-manifests"),
        "total_file_size_in_bytes": counter(metrics, "total-file-size-in-bytes"),
        "planning_ms": timer_ms(metrics, "total-planning-duration"),
        "full_scan": is_full_scan(report.get("filter")),
        "plan_id": (report.get("metadata") or {}).get(PLAN_ID_KEY),
    }


def commit_entry(kept: KeptReport) -> dict[str, Any]:
    """One ``CommitReport`` as ``icecore workload`` lists it (DESIGN.md "Workload")."""
    report, metrics = kept.report, kept.report.get("metrics", {})
    attempts = counter(metrics, "attempts")
    return {
        "time": kept.time,
        "table": kept.table,
        "engine": engine(report),
        "principal": kept.principal,
        "snapshot_id": report.get("snapshot-id"),
        "sequence_number": report.get("sequence-number"),
        "operation": report.get("operation"),
        "duration_ms": timer_ms(metrics, "total-duration"),
        "attempts": attempts,
        "conflicts": attempts - 1 if attempts is not None and attempts > 0 else None,
        "added_data_files": counter(metrics, "added-data-files"),
        "removed_data_files": counter(metrics, "removed-data-files"),
        "added_delete_files": counter(metrics, "added-delete-files"),
        "removed_delete_files": counter(metrics, "removed-delete-files"),
        "added_records": counter(metrics, "added-records"),
        "removed_records": counter(metrics, "removed-records"),
        "added_files_size_in_bytes": counter(metrics, "added-files-size-in-bytes"),
        "removed_files_size_in_bytes": counter(metrics, "removed-files-size-in-bytes"),
    }


def _total(entries: Iterable[Mapping[str, Any]], key: str) -> int | float:
    return sum(e[key] for e in entries if e[key] is not None)


def filter_groups(scans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The scans grouped by masked filter, most frequent first."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for scan in scans:
        groups.setdefault(scan["filter_group"], []).append(scan)
    found = [
        {
            "filter": text,
            "scans": len(members),
            "result_data_files": _total(members, "result_data_files"),
            "skipped_data_files": _total(members, "skipped_data_files"),
            "total_file_size_in_bytes": _total(members, "total_file_size_in_bytes"),
            "planning_ms": _total(members, "planning_ms"),
            "engines": sorted({str(m["engine"]) for m in members if m["engine"]}),
            "last_time": members[-1]["time"],
        }
        for text, members in groups.items()
    ]
    return sorted(found, key=lambda g: (-g["scans"], g["filter"]))


def workload(reports: Iterable[KeptReport]) -> dict[str, Any]:
    """A table's (or a catalog's) workload as ``icecore workload`` prints it (DESIGN.md).

    Keys: ``scans`` and ``commits`` (oldest first), ``filters`` (grouped,
    :func:`filter_groups`), ``columns`` (how many scans filtered on each, most first),
    ``full_scans`` (the scans whose filter is ``true``).
    """
    scans: list[dict[str, Any]] = []
    commits: list[dict[str, Any]] = []
    columns: Counter[str] = Counter()
    for kept in reports:
        if kept.kind == "scan":
            scans.append(scan_entry(kept))
            columns.update(filter_columns(kept.report.get("filter")))
        else:
            commits.append(commit_entry(kept))
    return {
        "scans": scans,
        "commits": commits,
        "filters": filter_groups(scans),
        "columns": [
            {"column": name, "scans": count}
            for name, count in sorted(columns.items(), key=lambda c: (-c[1], c[0]))
        ],
        "full_scans": [s for s in scans if s["full_scan"]],
    }


def catalog_summary(reports: Iterable[KeptReport]) -> list[dict[str, Any]]:
    """One row per table that has reports: scans, full scans, commits, engines, last report."""
    by_table: dict[str, list[KeptReport]] = {}
    for kept in reports:
        by_table.setdefault(kept.table, []).append(kept)
    rows = []
    for table, members in sorted(by_table.items()):
        scans = [k for k in members if k.kind == "scan"]
        rows.append(
            {
                "table": table,
                "scans": len(scans),
                "full_scans": sum(is_full_scan(k.report.get("filter")) for k in scans),
                "commits": len(members) - len(scans),
                "planning_ms": sum(
                    timer_ms(k.report.get("metrics", {}), "total-planning-duration") or 0.0
                    for k in scans
                ),
                "engines": sorted({e for k in members if (e := engine(k.report))}),
                "principals": sorted({k.principal for k in members if k.principal}),
                "last_report": members[-1].time,
            }
        )
    return rows


__all__ = [
    "catalog_summary",
    "commit_entry",
    "filter_columns",
    "filter_groups",
    "filter_text",
    "is_full_scan",
    "mask",
    "scan_entry",
    "workload",
]
