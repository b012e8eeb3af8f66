"""The hand-written table of the rule tests: every expected id is derived from this file.

A small schema touching every kind of column (a required identifier, int, float, decimal,
timestamptz, a struct, a list of structs, a map with struct values), partitioned by
``bucket[4](id)`` and ``day(ts)``, sorted by ``name``, in the shape Spark writes for each
format version, with a key no Icecore version knows (it must survive every commit).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
        {"id": 3, "name": "qty", "required": False, "type": "int"},
        {"id": 4, "name": "score", "required": False, "type": "float"},
        {"id": 5, "name": "amount", "required": False, "type": "decimal(12,2)"},
        {"id": 6, "name": "ts", "required": False, "type": "timestamptz"},
        {
            "id": 7,
            "name": "loc",
            "required": False,
            "type": {
                "type": "struct",
                "fields": [
                    {"id": 10, "name": "lat", "required": False, "type": "double"},
                    {"id": 11, "name": "lon", "required": False, "type": "double"},
                ],
            },
        },
        {
            "id": 8,
            "name": "tags",
            "required": False,
            "type": {
                "type": "list",
                "element-id": 12,
                "element": {
                    "type": "struct",
                    "fields": [{"id": 13, "name": "k", "required": False, "type": "string"}],
                },
                "element-required": False,
            },
        },
        {
            "id": 9,
            "name": "attrs",
            "required": False,
            "type": {
                "type": "map",
                "key-id": 14,
                "key": "string",
                "value-id": 15,
                "value": {
                    "type": "struct",
                    "fields": [{"id": 16, "name": "v", "required": False, "type": "int"}],
                },
                "value-required": False,
            },
        },
    ],
}
LAST_COLUMN_ID = 16
SPEC: dict[str, Any] = {
    "spec-id": 0,
    "fields": [
        {"source-id": 1, "field-id": 1000, "name": "id_bucket", "transform": "bucket[4]"},
        {"source-id": 6, "field-id": 1001, "name": "ts_day", "transform": "day"},
    ],
}
SORT_ORDER: dict[str, Any] = {
    "order-id": 1,
    "fields": [
        {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"}
    ],
}


def table_json(format_version: int, location: str) -> dict[str, Any]:
    """The hand-written table's metadata JSON, in the shape Spark writes for the version."""
    md: dict[str, Any] = {
        "format-version": format_version,
        "table-uuid": "2b2f5a4e-7c1d-4f1e-9a62-2a0d6b7f3c11",
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": 1_700_000_000_000,
        "last-column-id": LAST_COLUMN_ID,
        "current-schema-id": 0,
        "schemas": [copy.deepcopy(SCHEMA)],
        "default-spec-id": 0,
        "partition-specs": [copy.deepcopy(SPEC)],
        "last-partition-id": 1001,
        "default-sort-order-id": 1,
        "sort-orders": [{"order-id": 0, "fields": []}, copy.deepcopy(SORT_ORDER)],
        "properties": {"owner": "tests", "write.metadata.metrics.column.name": "full"},
        "current-snapshot-id": -1,
        "refs": {},
        "snapshots": [],
        "statistics": [],
        "snapshot-log": [],
        "metadata-log": [],
        "a-future-key": {"kept": True},
    }
    if format_version == 1:
        del md["last-sequence-number"]
        md["schema"] = copy.deepcopy(SCHEMA)
        md["partition-spec"] = copy.deepcopy(SPEC["fields"])
    if format_version >= 3:
        md["next-row-id"] = 0
    return md


def write_table(root: Path, format_version: int = 2, name: str = "t") -> Path:
    """Write the hand-written table as ``<root>/db/<name>`` (Hadoop layout, version 1)."""
    folder = root / "db" / name
    (folder / "metadata").mkdir(parents=True)
    text = json.dumps(table_json(format_version, str(folder)), indent=2)
    (folder / "metadata" / "v1.metadata.json").write_text(text)
    (folder / "metadata" / "version-hint.text").write_text("1")
    return folder


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime: proof that nothing was written."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
