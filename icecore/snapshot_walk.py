"""Every manifest of many snapshots, each read once: the walk behind trends and retention.

Spec "Manifest Lists" and "Manifests": a snapshot is its manifest list, a manifest never
changes once written, and a long history lists the same manifests again and again (every
append keeps the earlier ones). So a walk over N snapshots reads N manifest lists (decoded
once per process, :meth:`icecore.table_data.TableData.manifest_list`) and each distinct
manifest once, through scan planning's decode and caches
(:meth:`icecore.scan.planner.TableScan.load_manifests`), as :func:`icecore.maintenance.reach`
does for a set of snapshots. :mod:`icecore.trend` sums each manifest's live files per
snapshot; :mod:`icecore.retention` counts which snapshots reach each file.

Paths are keyed as :func:`icecore.maintenance.reach` keys them (``file:/x``, ``file:///x`` and
``/x`` are one file), so the two agree on what a file is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from icecore.layout import content_name
from icecore.maintenance import MANIFEST_PATH, path_key
from icecore.manifest import ManifestEntryStatus, ManifestFile
from icecore.metadata import Snapshot
from icecore.progress import listening, report
from icecore.scan.planner import TableScan

if TYPE_CHECKING:
    from icecore.table_data import TableData

_COLUMNS = ["status", "content", "file_path", "file_format", "file_size_in_bytes", "record_count"]


@dataclass(frozen=True, slots=True)
class ManifestFiles:
    """The live entries (ADDED and EXISTING) of one manifest, as columns.

    Attributes:
        manifest: the manifest list's entry for it (length, spec, adding snapshot).
        paths: each entry's file, keyed as :func:`icecore.maintenance.reach` keys it.
        kinds: each entry's content in words (:func:`icecore.layout.content_name`).
        sizes: ``file_size_in_bytes`` per entry.
        records: ``record_count`` per entry.
        added: whether the entry's status is ADDED (the manifest's snapshot added it).
    """

    manifest: ManifestFile
    paths: tuple[str, ...]
    kinds: tuple[str, ...]
    sizes: np.ndarray
    records: np.ndarray
    added: np.ndarray

    @property
    def is_data(self) -> np.ndarray:
        """Which entries are data files."""
        return np.fromiter((k == "data" for k in self.kinds), dtype=bool, count=len(self.kinds))


@dataclass(frozen=True, slots=True)
class Walk:
    """What a set of snapshots reaches, per snapshot and per manifest.

    Attributes:
        snapshots: the walked snapshots, in the order given.
        listed: snapshot id -> keys of the manifests its list names, in list order.
        manifests: manifest key -> its live entries.
    """

    snapshots: tuple[Snapshot, ...]
    listed: dict[int, tuple[str, ...]]
    manifests: dict[str, ManifestFiles]


def _files(manifest: ManifestFile, columns: pa.Table) -> ManifestFiles:
    formats = columns.column("file_format").to_pylist()
    contents = columns.column("content").to_pylist()
    return ManifestFiles(
        manifest=manifest,
        paths=tuple(path_key(p) for p in columns.column("file_path").to_pylist()),
        kinds=tuple(content_name(c, f) for c, f in zip(contents, formats, strict=True)),
        sizes=columns.column("file_size_in_bytes").to_numpy().astype(np.int64),
        records=columns.column("record_count").to_numpy().astype(np.int64),
        added=columns.column("status").to_numpy() == int(ManifestEntryStatus.ADDED),
    )


def walk(table: TableData, snapshots: Iterable[Snapshot]) -> Walk:
    """Read the manifest lists of ``snapshots`` and each distinct manifest they name once.

    Raises:
        Unsupported: a snapshot lists its manifests inline (v1, before manifest lists).
        NotFound: a manifest list or manifest does not exist.
        InvalidMetadata: one is corrupt, or names a partition spec the table lacks.
    """
    chosen = tuple(snapshots)
    listed: dict[int, tuple[str, ...]] = {}
    found: dict[str, ManifestFile] = {}
    keyed: dict[str, str] = {}  # raw path -> key: a long history lists each path many times
    told = listening()
    for done, snapshot in enumerate(chosen, start=1):
        columns = table.manifest_list(snapshot)
        raw = columns.records.column(MANIFEST_PATH)
        keys = []
        for i, path in enumerate(raw.to_pylist() if raw is not None else ()):
            key = keyed.get(path)
            if key is None:
                key = keyed[path] = path_key(path)
                if key not in found:
                    found[key] = columns.manifest(i)
            keys.append(key)
        listed[snapshot.snapshot_id] = tuple(keys)
        if told:
            report("Reading manifest lists", done, len(chosen))
    order = list(found)
    loaded = TableScan(table).load_manifests([found[k] for k in order])
    manifests = {
        key: _files(found[key], pm.read(_COLUMNS)) for key, pm in zip(order, loaded, strict=True)
    }
    return Walk(chosen, listed, manifests)
