"""A hand-written table with a snapshot graph: every expected ref position is read from here.

Ref operations never read manifests, so the snapshots below name manifest lists that do not
exist; the graph is what matters::

    S1 (t=1000) <- S2 (t=2000) <- S3 (t=3000)          main -> S3, tag v1 -> S1
    S2 <- S4 (t=2500, append)                           branch audit -> S4 (min 3 kept)
    S3 <- S5 (t=3500, append, wap.id=w1)                staged, no ref
    S1 <- S6 (t=3600, overwrite)                        staged, no ref
    S2 <- S7 (t=3700, append, wap.id=w2)                staged, no ref

The snapshot-log holds S1, S2, S3 (main's moves), stamped with their commit times.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.icecore.evolution.hand_table import table_json

S1, S2, S3, S4, S5, S6, S7 = 101, 102, 103, 104, 105, 106, 107
TIMES = {S1: 1000, S2: 2000, S3: 3000, S4: 2500, S5: 3500, S6: 3600, S7: 3700}
PARENTS: dict[int, int | None] = {S1: None, S2: S1, S3: S2, S4: S2, S5: S3, S6: S1, S7: S2}
OPERATIONS = {S1: "append", S2: "append", S3: "append", S4: "append", S5: "append"}
OPERATIONS |= {S6: "overwrite", S7: "append"}
WAP_IDS = {S5: "w1", S7: "w2"}
UUID = "2b2f5a4e-7c1d-4f1e-9a62-2a0d6b7f3c11"


def graph_json(location: str) -> dict[str, Any]:
    """The metadata JSON of the graph table (format version 2)."""
    md = table_json(2, location)
    snapshots = []
    for seq, sid in enumerate(sorted(TIMES), start=1):
        summary = {"operation": OPERATIONS[sid]}
        if sid in WAP_IDS:
            summary["wap.id"] = WAP_IDS[sid]
        snapshot: dict[str, Any] = {
            "snapshot-id": sid,
            "sequence-number": seq,
            "timestamp-ms": TIMES[sid],
            "summary": summary,
            "manifest-list": f"{location}/metadata/snap-{sid}.avro",
            "schema-id": 0,
        }
        if PARENTS[sid] is not None:
            snapshot["parent-snapshot-id"] = PARENTS[sid]
        snapshots.append(snapshot)
    md["snapshots"] = snapshots
    md["last-sequence-number"] = len(snapshots)
    md["current-snapshot-id"] = S3
    md["refs"] = {
        "main": {"snapshot-id": S3, "type": "branch"},
        "audit": {"snapshot-id": S4, "type": "branch", "min-snapshots-to-keep": 3},
        "v1": {"snapshot-id": S1, "type": "tag", "max-ref-age-ms": 86_400_000},
    }
    md["snapshot-log"] = [{"timestamp-ms": TIMES[s], "snapshot-id": s} for s in (S1, S2, S3)]
    md["last-updated-ms"] = 4000
    return md


def write_graph_table(root: Path, name: str = "g") -> Path:
    """Write the graph table as ``<root>/db/<name>`` (Hadoop layout, version 1)."""
    folder = root / "db" / name
    (folder / "metadata").mkdir(parents=True)
    text = json.dumps(graph_json(str(folder)), indent=2)
    (folder / "metadata" / "v1.metadata.json").write_text(text)
    (folder / "metadata" / "version-hint.text").write_text("1")
    return folder


def raw(folder: Path) -> dict[str, Any]:
    """The table's current metadata JSON, read without Icecore."""
    version = (folder / "metadata" / "version-hint.text").read_text().strip()
    return dict(json.loads((folder / "metadata" / f"v{version}.metadata.json").read_text()))


def refs_of(folder: Path) -> dict[str, int]:
    """Each ref's snapshot id, read without Icecore."""
    return {name: ref["snapshot-id"] for name, ref in raw(folder)["refs"].items()}
