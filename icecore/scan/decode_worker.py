"""The decode worker process of :mod:`icecore.scan.decode_pool` (``python -m`` this module).

It reads batches of manifests to decode from stdin, writes each into the disk cache of
:mod:`icecore.scan.manifest_cache` in planning layout, and answers with how many it wrote.
A manifest that fails is skipped: the planner decodes it again and reports the error.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from icecore.io import FileIO
from icecore.manifest_arrow import read_manifest_arrow
from icecore.partitioning import partition_spec_from_json
from icecore.scan.decode_pool import DecodeJob, receive, send
from icecore.scan.manifest_cache import ManifestCache
from icecore.scan.planning_manifest import build_planning_manifest
from icecore.schema import schema_from_json


def _decode_batch(
    directory: str,
    properties: Mapping[str, str],
    schema_json: Mapping[str, Any],
    specs_json: Sequence[Mapping[str, Any]],
    format_version: int,
    jobs: Sequence[DecodeJob],
) -> int:
    """Decode ``jobs`` into the cache at ``directory``; how many were written."""
    io = FileIO(dict(properties))
    schema = schema_from_json(schema_json)
    specs = {spec.spec_id: spec for spec in map(partition_spec_from_json, specs_json)}
    cache = ManifestCache(Path(directory))
    written = 0
    for job in jobs:
        try:
            spec = specs[job.spec_id]
            decoded = read_manifest_arrow(io, job.manifest, schema, spec, format_version)
            built = build_planning_manifest(decoded, job.manifest.manifest_path, spec.spec_id)
            written += cache.store(job.key, built)
        except Exception:  # noqa: BLE001, S112 - the planner decodes it again and reports
            continue
    return written


def main() -> None:
    """Decode batches from stdin until it closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            message = receive(stdin)
        except EOFError:
            return
        send(stdout, _decode_batch(*message))


if __name__ == "__main__":
    main()
