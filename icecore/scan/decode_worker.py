"""The decode worker process of :mod:`icecore.scan.decode_pool` (``python -m`` this module).

It reads batches of manifests to decode from stdin, converts those of one spec together
(:func:`~icecore.scan.planning_manifest.planning_manifests`), writes those converted together
into the disk cache of :mod:`icecore.scan.manifest_cache` as one file in planning layout
(:meth:`~icecore.scan.manifest_cache.ManifestCache.store_batch_for_handover`), and answers with a
description of each file it wrote (:class:`~icecore.scan.manifest_cache.Handover`), so the
planner need not open them first. A manifest that fails is skipped: the planner decodes it
again and reports the error.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

import pyarrow as pa

from icecore.avro import prefer_datafusion
from icecore.io import FileIO
from icecore.manifest_arrow import RawManifest, read_manifests_avro
from icecore.partitioning import PartitionSpec, partition_spec_from_json
from icecore.scan.decode_pool import DecodeJob, serve
from icecore.scan.manifest_cache import Handover, ManifestCache
from icecore.scan.planning_manifest import PlanningManifest, planning_manifests
from icecore.schema import Schema, schema_from_json

CONVERT = 16
"""Manifests read and converted together: most of what batching saves, at ~2 MiB of peak
memory per manifest (16 keep a worker under the planner's ~200 MiB)."""


def _decode_batch(
    directory: str,
    properties: Mapping[str, str],
    schema_json: Mapping[str, Any],
    specs_json: Sequence[Mapping[str, Any]],
    format_version: int,
    jobs: Sequence[DecodeJob],
) -> list[tuple[int, Handover]]:
    """Decode ``jobs`` into the cache at ``directory``: each written file, by job index."""
    io = FileIO(dict(properties))
    schema = schema_from_json(schema_json)
    specs = {spec.spec_id: spec for spec in map(partition_spec_from_json, specs_json)}
    cache = ManifestCache(Path(directory))
    written: list[tuple[int, Handover]] = []
    for start in range(0, len(jobs), CONVERT):
        chunk = range(start, min(start + CONVERT, len(jobs)))
        written.extend(_convert(cache, io, schema, specs, format_version, jobs, chunk))
        pa.default_memory_pool().release_unused()  # the chunk's temporaries
    return written


def _convert(
    cache: ManifestCache,
    io: FileIO,
    schema: Schema,
    specs: Mapping[int, PartitionSpec],
    format_version: int,
    jobs: Sequence[DecodeJob],
    chunk: range,
) -> list[tuple[int, Handover]]:
    """Read, convert (those of one spec together) and store the jobs at ``chunk``."""
    groups: dict[tuple[int, bool], list[RawManifest]] = {}
    keys: dict[tuple[int, bool], list[int]] = {}
    for metrics in (True, False):  # a plan without a filter asks for none
        wanted = [index for index in chunk if jobs[index].key.metrics is metrics]
        if not wanted:
            continue
        read = read_manifests_avro(io, [jobs[i].manifest for i in wanted], metrics=metrics)
        for index, raw in zip(wanted, read, strict=True):
            if isinstance(raw, Exception):  # the planner reads it again and reports
                continue
            group = (jobs[index].spec_id, metrics)
            groups.setdefault(group, []).append(raw)
            keys.setdefault(group, []).append(index)
    written: list[tuple[int, Handover]] = []
    for (spec_id, metrics), raws in groups.items():
        spec = specs.get(spec_id)
        if spec is None:
            continue
        built: list[PlanningManifest | None] = []
        try:
            built.extend(planning_manifests(raws, schema, spec, format_version))
        except Exception:  # noqa: BLE001 - one bad manifest: decode the others alone
            built = [_alone(raw, schema, spec, format_version) for raw in raws]
        done = [
            (index, pm)
            for index, pm in zip(keys[(spec_id, metrics)], built, strict=True)
            if pm is not None
        ]
        handovers = cache.store_batch_for_handover([(jobs[i].key, pm) for i, pm in done])
        for (index, _), handover in zip(done, handovers, strict=True):
            if handover is not None:
                written.append((index, handover))
    return written


def _alone(
    raw: RawManifest, schema: Schema, spec: PartitionSpec, format_version: int
) -> PlanningManifest | None:
    """One manifest decoded alone (None if it fails: the planner decodes it and reports)."""
    try:
        (built,) = planning_manifests([raw], schema, spec, format_version)
    except Exception:  # noqa: BLE001
        return None
    return built


class _WithoutPandas(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Fails every import of ``pandas``, which a decode worker never uses, so nothing loads it.

    Importing ``datafusion`` makes an Arrow scalar at import time, and Arrow's pandas shim
    then imports pandas if it can: 0.40 of the worker's 0.75 s start, paid on both cores at
    the start of every cold big plan (measured here, 2026-11-29). The module is found (so
    polars' lazy ``find_spec`` probe still succeeds) but fails to load with ImportError,
    which Arrow takes as pandas being absent. Nothing the worker calls needs it; a batch that
    failed without it would be decoded again by the planner, so no answer could change.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            return ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: ModuleSpec) -> None:
        raise ImportError(f"{spec.name} is not loaded in a manifest decode worker")

    def exec_module(self, module: object) -> None:  # never reached: create_module refuses
        raise ImportError("pandas is not loaded in a manifest decode worker")


def main() -> None:
    """Decode batches from stdin until it closes."""
    sys.meta_path.insert(0, _WithoutPandas())
    prefer_datafusion()  # workers exist only for big plans: DataFusion pays at once
    serve(_decode_batch)


if __name__ == "__main__":
    main()
