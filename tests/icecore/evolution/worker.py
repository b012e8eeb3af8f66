"""A writer process for the concurrency tests: ``python -m tests.icecore.evolution.worker JOB``.

JOB is JSON: ``{"table": ..., "ready": <file>, "go": <file>, "out": <file>, "changes":
[...]}``. The worker loads the table first (so every first change is computed from the same,
soon stale, base), says so in the ``ready`` file, waits until the ``go`` file exists, then
commits each change in turn, each on the table as it last saw it, and writes what happened
to ``out``: for a commit, the new metadata file and the SHA-256 of its bytes as read right
after the commit; for a refusal, the error's class and sentence. A change with ``"retries":
N`` is made again on the reloaded table after a CommitConflict, up to N times (as a user
would after reading the conflict sentence).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import icecore
from icecore.errors import CommitConflict, IcecoreError
from icecore.io import FileIO
from icecore.table import Table


def apply(table: Table, change: dict[str, Any]) -> Table:
    """Commit one change described as JSON; returns the committed table."""
    kind = change["kind"]
    if kind == "add_column":
        result = table.update_schema().add_column(change["name"], change["type"]).commit()
    elif kind == "add_field":
        result = table.update_spec().add_field(change["source"], change["transform"]).commit()
    elif kind == "sort":
        result = table.update_sort_order().asc(change["source"]).commit()
    elif kind == "property":
        result = table.set_properties({change["key"]: change["value"]})
    else:
        raise ValueError(f"unknown change {kind}")
    assert result is not None
    return result


def main(argv: list[str]) -> int:
    job = json.loads(argv[0])
    table = icecore.load_table(job["table"])
    Path(job["ready"]).write_text(table.metadata_location)
    go = Path(job["go"])
    while not go.exists():
        time.sleep(0.005)
    results: list[dict[str, Any]] = []
    io = FileIO()
    for change in job["changes"]:
        for attempt in range(change.get("retries", 0) + 1):
            try:
                table = apply(table, change)
            except IcecoreError as e:
                results.append({"change": change, "error": type(e).__name__, "message": str(e)})
                table = table.refresh()
                if isinstance(e, CommitConflict) and attempt < change.get("retries", 0):
                    continue
                break
            digest = hashlib.sha256(io.read(table.metadata_location)).hexdigest()
            results.append(
                {"change": change, "location": table.metadata_location, "sha256": digest}
            )
            break
    Path(job["out"]).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
