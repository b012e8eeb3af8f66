"""``inspect files`` when a partition field's source column is not in the current schema.

Issue 15, finding 9: it ended in a traceback (ArrowInvalid). Test metadata is made by editing
a copy of the Spark-written ``customers_v1`` (partitioned by ``identity(country)``, field id
1000, source id 3): a new current schema without ``country`` (an older schema still has it),
and, for the broken case, ``country`` removed from every schema.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import icecore
from icecore.errors import InvalidMetadata
from tests.conftest import REPO

COUNTRY_ID = 3


def edited_copy(demo_warehouse: Path, tmp_path: Path, everywhere: bool) -> Path:
    table_dir = tmp_path / "customers_v1"
    shutil.copytree(demo_warehouse / "hadoop" / "demo" / "customers_v1", table_dir)
    hint = (table_dir / "metadata" / "version-hint.text").read_text().strip()
    path = table_dir / "metadata" / f"v{hint}.metadata.json"
    metadata: dict[str, Any] = json.loads(path.read_text())
    metadata.pop("schema", None)
    current = next(
        s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"]
    )
    assert any(f["id"] == COUNTRY_ID for f in current["fields"])
    if everywhere:
        for schema in metadata["schemas"]:
            schema["fields"] = [f for f in schema["fields"] if f["id"] != COUNTRY_ID]
    else:
        newest = max(s["schema-id"] for s in metadata["schemas"]) + 1
        dropped = {
            **current,
            "schema-id": newest,
            "fields": [f for f in current["fields"] if f["id"] != COUNTRY_ID],
        }
        metadata["schemas"].append(dropped)
        metadata["current-schema-id"] = newest
    path.write_text(json.dumps(metadata))
    return table_dir


@pytest.mark.spark
def test_files_typed_by_the_schema_that_still_has_the_source(
    spark: Any, demo_warehouse: Path, tmp_path: Path
) -> None:
    table_dir = edited_copy(demo_warehouse, tmp_path, everywhere=False)
    files = icecore.load_table(str(table_dir)).inspect("files")
    ours = {
        Path(path).name: partition
        for path, partition in zip(
            files.column("file_path").to_pylist(),
            files.column("partition").to_pylist(),
            strict=True,
        )
    }
    rows = spark.sql("SELECT file_path, partition FROM hadoop.demo.customers_v1.files").collect()
    theirs = {Path(r.file_path).name: r.partition.asDict() for r in rows}
    assert ours == theirs and any(p["country"] is not None for p in ours.values())


@pytest.mark.spark
def test_a_source_in_no_schema_is_one_sentence(demo_warehouse: Path, tmp_path: Path) -> None:
    table_dir = edited_copy(demo_warehouse, tmp_path, everywhere=True)
    with pytest.raises(InvalidMetadata, match="Partition field 'country' .* none of the"):
        icecore.load_table(str(table_dir)).inspect("files")
    result = subprocess.run(
        [sys.executable, "-m", "icecore", "inspect", str(table_dir), "files"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "its source column is in none of the table's schemas" in lines[0]
