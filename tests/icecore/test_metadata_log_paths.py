"""A metadata log naming files outside the table's metadata folders: reported, never read.

``metadata-log`` entries are whatever the metadata file says. An entry naming another
folder, ``/dev/zero`` or an ``http://`` host must not make the History page read it; an
oversized file in the right folder is reported as not read. The table is hand-written
(tests/icecore/evolution/hand_table.py): what is asserted is what was written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icecore import metadata_log
from icecore.catalog import load_table
from icecore.metadata_events import metadata_events
from icecore.metadata_log import read_log_file
from tests.icecore.evolution.hand_table import table_json


def _table_with_log(tmp_path: Path, entries: list[str]) -> tuple[Path, Path]:
    """A table whose v2 metadata logs v1 (in its folder) after ``entries``; its paths."""
    folder = tmp_path / "t" / "metadata"
    folder.mkdir(parents=True)
    v1 = folder / "v1.metadata.json"
    v1.write_text(json.dumps(table_json(2, str(tmp_path / "t"))))
    md = table_json(2, str(tmp_path / "t"))
    md["last-updated-ms"] += 10
    md["metadata-log"] = [
        {"metadata-file": e, "timestamp-ms": md["last-updated-ms"] - 9 + i}
        for i, e in enumerate(entries)
    ] + [{"metadata-file": str(v1), "timestamp-ms": md["last-updated-ms"] - 1}]
    v2 = folder / "v2.metadata.json"
    v2.write_text(json.dumps(md))
    return v1, v2


def test_log_entries_outside_the_metadata_folders_are_reported_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "other" / "metadata"
    outside.mkdir(parents=True)
    elsewhere = outside / "v9.metadata.json"
    elsewhere.write_text(json.dumps(table_json(2, str(tmp_path / "other"))))
    sneaky = f"{tmp_path}/t/metadata/../../other/metadata/v9.metadata.json"
    entries = [
        str(elsewhere),
        f"file://{elsewhere}",
        sneaky,
        "/dev/zero",
        "http://127.0.0.1:9/v0.metadata.json",
    ]
    v1, v2 = _table_with_log(tmp_path, entries)
    table = load_table(str(v2))
    for entry in entries:
        read = read_log_file(table, entry, 0)
        assert read.metadata is None, entry
        assert read.problem.endswith("is outside the table's metadata folders; it was not read.")
    assert read_log_file(table, str(v1), 0).metadata is not None
    found = metadata_events(table)  # what the History page lists
    assert all(any(entry in " ".join(e.changes) for e in found) for entry in entries)


def test_an_oversized_earlier_metadata_file_is_reported_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v1, v2 = _table_with_log(tmp_path, [])
    table = load_table(str(v2))
    monkeypatch.setattr(metadata_log, "MAX_FILE_BYTES", v1.stat().st_size - 1)
    read = read_log_file(table, str(v1), 0)
    assert read.metadata is None and "is larger than" in read.problem
