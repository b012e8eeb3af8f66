"""A small warehouse for catalog health: one readable table with rows, one empty, one broken."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ui.rows_table import write_rows_table

GOLDEN = Path(__file__).resolve().parents[1] / "data/metadata/spark/trips-00024.metadata.json"


def write_health_warehouse(tmp_path: Path) -> Path:
    """A Hadoop-layout warehouse under ``tmp_path``; returns its folder.

    ``db.people`` (PyIceberg, 4 rows), ``db.broken`` (a truncated metadata.json), and
    ``db.empty`` (no snapshot: the golden file with its snapshots removed).
    """
    root = tmp_path / "wh"
    write_rows_table(root, tmp_path / "peer")
    broken = root / "db" / "broken" / "metadata"
    broken.mkdir(parents=True)
    (broken / "v1.metadata.json").write_text(GOLDEN.read_text()[:500])
    (broken / "version-hint.text").write_text("1")
    empty = root / "db" / "empty" / "metadata"
    empty.mkdir(parents=True)
    obj = json.loads(GOLDEN.read_text())
    obj.update(snapshots=[], refs={}, **{"current-snapshot-id": -1, "snapshot-log": []})
    obj["location"] = str(root / "db" / "empty")
    (empty / "v1.metadata.json").write_text(json.dumps(obj))
    (empty / "version-hint.text").write_text("1")
    return root
