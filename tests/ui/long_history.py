"""A hand-written table with a long history: every expected number is read from here.

The History page reads metadata only, so the snapshots name manifest lists that do not exist;
what matters is the graph, the times and the summaries::

    main: S0 <- S1 <- ... <- S(n-1)       one a minute; every 50th an overwrite, every 97th
                                          a delete, the rest appends; every 199th summary
                                          records no counts at all (only its operation)
    audit: forks from main's S600 with AUDIT snapshots of its own (appends), between S600's
           and S601's minutes
    tag v1 -> S100
    metadata-log: LOG earlier files

A summary with counts has Iceberg Java's shape: the totals always, the ``added-*`` and
``deleted-*`` counts only when above zero.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.icecore.evolution.hand_table import table_json

START_MS = 1_700_000_000_000
MINUTE = 60_000
AUDIT = 5
LOG = 300
FORK = 600
TAG_AT = 100


@dataclass(frozen=True)
class Snap:
    """One snapshot as written: its id, parent, time, lane, operation and summary."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    lane: str
    operation: str
    summary: dict[str, str]


def _operation(i: int) -> str:
    if i % 97 == 96:
        return "delete"
    if i % 50 == 49:
        return "overwrite"
    return "append"


def snaps(n: int) -> list[Snap]:
    """The table's snapshots, main's first, then audit's."""
    out: list[Snap] = []
    total = 0
    for i in range(n):
        op = _operation(i)
        summary: dict[str, str] = {"operation": op}
        if i % 199 != 198:
            added = 0 if op == "delete" else 100 + i
            deleted = 7 * (i % 5 + 1) if op != "append" else 0
            total += added - deleted
            if added:
                summary |= {"added-data-files": "2", "added-records": str(added)}
            if deleted:
                summary |= {"deleted-data-files": "1", "deleted-records": str(deleted)}
            summary |= {"total-data-files": str(2 * i), "total-records": str(total)}
            summary |= {"total-delete-files": "0", "total-files-size": "0"}
        out.append(Snap(10_000 + i, 10_000 + i - 1 if i else None, START_MS + i * MINUTE,
                        "main", op, summary))  # fmt: skip
    for k in range(AUDIT):
        sid = 90_000 + k
        parent = 10_000 + FORK if k == 0 else sid - 1
        summary = {"operation": "append", "added-data-files": "1", "added-records": "5"}
        summary |= {"total-data-files": "1", "total-records": "5"}
        when = START_MS + FORK * MINUTE + (k + 1) * 1_000
        out.append(Snap(sid, parent, when, "audit", "append", summary))
    return out


def long_history_json(location: str, n: int) -> dict[str, Any]:
    """The metadata JSON of the long-history table (format version 2)."""
    md = table_json(2, location)
    written = snaps(n)
    ordered = sorted(written, key=lambda s: s.timestamp_ms)
    md["snapshots"] = [
        {
            "snapshot-id": s.snapshot_id,
            "sequence-number": seq,
            "timestamp-ms": s.timestamp_ms,
            "summary": s.summary,
            "manifest-list": f"{location}/metadata/snap-{s.snapshot_id}.avro",
            "schema-id": 0,
            **({"parent-snapshot-id": s.parent_id} if s.parent_id is not None else {}),
        }
        for seq, s in enumerate(ordered, start=1)
    ]
    head = 10_000 + n - 1
    md["last-sequence-number"] = len(ordered)
    md["current-snapshot-id"] = head
    md["refs"] = {
        "main": {"snapshot-id": head, "type": "branch"},
        "audit": {"snapshot-id": 90_000 + AUDIT - 1, "type": "branch"},
        "v1": {"snapshot-id": 10_000 + TAG_AT, "type": "tag"},
    }
    md["snapshot-log"] = [
        {"timestamp-ms": s.timestamp_ms, "snapshot-id": s.snapshot_id}
        for s in written
        if s.lane == "main"
    ]
    md["metadata-log"] = [
        {"timestamp-ms": START_MS + k * MINUTE, "metadata-file": f"{location}/metadata/v{k + 1}"}
        for k in range(LOG)
    ]
    md["last-updated-ms"] = ordered[-1].timestamp_ms
    return md


def write_long_history(root: Path, n: int = 1200, name: str = "long") -> Path:
    """Write the table as ``<root>/db/<name>`` (Hadoop layout, version LOG + 1)."""
    folder = root / "db" / name
    (folder / "metadata").mkdir(parents=True)
    version = LOG + 1
    text = json.dumps(long_history_json(str(folder), n))
    (folder / "metadata" / f"v{version}.metadata.json").write_text(text)
    (folder / "metadata" / "version-hint.text").write_text(str(version))
    return folder
