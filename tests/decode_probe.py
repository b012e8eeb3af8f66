"""A cold plan whose manifests decode workers must decode, run as ``python -c PROBE``.

The probe is passed as source text, so it runs wherever the caller runs it: in the checkout
with only the empty path entry finding ``icecore`` (issue 32), or in a venv with the wheel
installed. ``sys.argv[1]`` is the table, ``sys.argv[2]`` an empty cache folder. It prints
JSON: the plan's task count, how the planner's cache was served (``adopted`` counts the
manifests the workers decoded and handed over; ``decoded_here`` the ones the planner decoded
itself), the data manifests, and the warnings raised.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

PROBE = """
import json
import sys
import warnings
from pathlib import Path

import icecore
from icecore.manifest import ManifestContent
from icecore.scan import decode_pool
from icecore.scan.context import PlanContext
from icecore.scan.manifest_cache import ManifestCache

decode_pool.MIN_MANIFESTS = 1  # a small table, decoded by the pool all the same
table = icecore.load_table(sys.argv[1])
context = PlanContext(ManifestCache(Path(sys.argv[2])))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    tasks = len(table.scan(context=context).plan().tasks)
snapshot = table.snapshot()
manifests = [m for m in table.manifests(snapshot) if m.content is ManifestContent.DATA]
print(
    json.dumps(
        {
            "tasks": tasks,
            "adopted": context.manifests.hits,
            "decoded_here": context.manifests.misses,
            "manifests": len(manifests),
            "icecore": icecore.__file__,
            "warnings": [str(w.message) for w in caught],
        }
    )
)
"""


def run_probe(python: str | Path, table: str, cache: Path, cwd: Path) -> dict[str, Any]:
    """Run :data:`PROBE` in a fresh process (PYTHONPATH unset, two workers); its JSON."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["ICECORE_PLAN_PROCESSES"] = "2"
    done = subprocess.run(
        [str(python), "-c", PROBE, table, str(cache)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    found["stderr"] = done.stderr
    return found
