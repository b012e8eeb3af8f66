"""Metadata bloat: what a table's metadata.json and manifest lists weigh, part by part, and the fix.

Issue 34 deliver 4 (DESIGN.md "Catalog health"). Every commit writes a new metadata.json that
carries the whole history the table keeps (spec "Table Metadata Fields": every snapshot, the
snapshot log, the metadata log, every schema and spec); a table with 200,000 snapshots has
a metadata.json of hundreds of MiB that every reader and writer loads whole. Each part is
measured here and paired with what shrinks it:

* ``snapshots``, ``snapshot-log``, ``statistics``: ``expire_snapshots`` (removes expired
  snapshots, their log entries and their statistics files);
* ``metadata-log``: ``write.metadata.previous-versions-max`` (default 100 entries) and
  ``write.metadata.delete-after-commit.enabled`` (delete the files that fall off the log);
* ``schemas``, ``specs``: ``expire_snapshots`` with ``clean_expired_metadata => true``
  (Iceberg 1.10+) removes the schemas and specs no remaining snapshot uses;
* ``sort-orders``: only the default one is used by writers; older ones are history;
* ``refs``: dropping stale branches and tags (or ``history.expire.max-ref-age-ms``) lets
  expiry free what they hold;
* ``properties``: large values are set by hand (or a tool) and removed with ``UNSET``;
* manifests per snapshot: ``rewrite_manifests`` packs them (:func:`icecore.health.manifests`).

A part's bytes are its JSON value written compactly (Iceberg Java writes metadata.json without
indentation), plus its key; ``other`` is the rest of the decoded JSON (format version,
location, uuid, ids). Their sum is the decoded JSON's compact size: exact for a file Java
wrote, off by the whitespace for a hand-indented one; ``file_bytes`` is the file's own size
(gzip-compressed when ``write.metadata.compression-codec`` is gzip).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icecore.health import MANIFEST_MIN_COUNT_TO_MERGE, snapshots_to_expire
from icecore.health import table_property as _property
from icecore.manifest import ManifestContent
from icecore.metadata import TableMetadata
from icecore.table_data import TableData

PREVIOUS_VERSIONS_MAX = ("write.metadata.previous-versions-max", 100)
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
"""Table properties that bound the metadata log (Iceberg's TableProperties.java)."""

PARTS: Mapping[str, tuple[str, ...]] = {
    "schemas": ("schemas", "schema"),
    "snapshots": ("snapshots",),
    "snapshot-log": ("snapshot-log",),
    "metadata-log": ("metadata-log",),
    "specs": ("partition-specs", "partition-spec"),
    "sort-orders": ("sort-orders",),
    "properties": ("properties",),
    "statistics": ("statistics", "partition-statistics"),
    "refs": ("refs",),
}
"""Each reported part and the top-level metadata.json keys it sums (v1 single-value keys too)."""

LARGE_METADATA_BYTES = 10 * 2**20
"""A metadata.json this big is slow for every reader and writer (each commit rewrites it)."""

MANIFEST_LISTS_SHOWN = 20
"""Snapshots whose manifest lists :func:`manifest_lists` reads by default (newest first)."""


@dataclass(frozen=True, slots=True)
class Part:
    """One part of metadata.json.

    Attributes:
        part: the part's name (a key of :data:`PARTS`, or ``other``).
        bytes: its compact JSON size, key included.
        count: how many entries it holds (snapshots, schemas, log entries, properties).
        unused: entries no live state needs (expirable snapshots, schemas no snapshot
            uses, specs and sort orders other than the default), when known.
        fix: what shrinks it, one sentence (empty when nothing needs fixing).
    """

    part: str
    bytes: int
    count: int
    unused: int | None
    fix: str


def _compact_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _count(value: Any) -> int:
    if isinstance(value, list | dict):
        return len(value)
    return 0 if value is None else 1


def metadata_parts(obj: Mapping[str, Any], metadata: TableMetadata, now_ms: int) -> list[Part]:
    """metadata.json's decoded JSON ``obj`` by part, biggest first, ``other`` last.

    ``metadata`` is the same file parsed (for what is unused); ``now_ms`` the time expiry is
    judged at (:func:`icecore.health.snapshots_to_expire`, the table's own retention).
    """
    expirable = len(snapshots_to_expire(metadata, now_ms))
    used_schemas = {metadata.current_schema_id} | {
        s.schema_id for s in metadata.snapshots if s.schema_id is not None
    }
    log_max = _property(metadata, PREVIOUS_VERSIONS_MAX) or PREVIOUS_VERSIONS_MAX[1]
    deletes_old = metadata.properties.get(DELETE_AFTER_COMMIT, "false").lower() == "true"
    unused: dict[str, int | None] = {
        "snapshots": expirable,
        "schemas": sum(1 for s in metadata.schemas if s.schema_id not in used_schemas),
        "specs": sum(1 for s in metadata.partition_specs if s.spec_id != metadata.default_spec_id),
        "sort-orders": sum(
            1 for s in metadata.sort_orders if s.order_id != metadata.default_sort_order_id
        ),
    }
    fixes = {
        "snapshots": f"expire_snapshots would remove {expirable:,} of them now (the table's "
        "retention); older_than/retain_last remove more.",
        "snapshot-log": "expire_snapshots removes the entries of expired snapshots.",
        "statistics": "expire_snapshots removes the statistics files of expired snapshots.",
        "metadata-log": f"{PREVIOUS_VERSIONS_MAX[0]} (now {log_max}) bounds it"
        + ("." if deletes_old else f"; set {DELETE_AFTER_COMMIT}=true to delete the old files."),
        "schemas": "expire_snapshots with clean_expired_metadata => true (Iceberg 1.10+) removes "
        "schemas no snapshot uses.",
        "specs": "expire_snapshots with clean_expired_metadata => true (Iceberg 1.10+) removes "
        "specs no manifest uses.",
        "sort-orders": "Only the default sort order is used by writers; older ones are history.",
        "refs": "Drop stale branches and tags (or set history.expire.max-ref-age-ms) so expiry "
        "can free what they hold.",
        "properties": "Large values are set by hand or a tool; ALTER TABLE ... UNSET "
        "TBLPROPERTIES removes them.",
    }
    parts: list[Part] = []
    for name, keys in PARTS.items():
        present = [k for k in keys if k in obj]
        size = sum(_compact_size(k) + 1 + _compact_size(obj[k]) for k in present)
        count = max((_count(obj[k]) for k in present), default=0)
        needs_fix = bool(unused.get(name)) or (
            name == "metadata-log" and (count >= log_max or not deletes_old) and count > 0
        )
        parts.append(Part(name, size, count, unused.get(name), fixes[name] if needs_fix else ""))
    parts.sort(key=lambda p: -p.bytes)
    others = [k for k in obj if not any(k in keys for keys in PARTS.values())]
    # The rest, encoded once (not the whole file again): its keys, the braces and the commas.
    rest = sum(_compact_size(k) + 1 + _compact_size(obj[k]) for k in others)
    parts.append(Part("other", rest + 2 + max(len(obj) - 1, 0), len(others), None, ""))
    return parts


@dataclass(frozen=True, slots=True)
class ManifestListSize:
    """One snapshot's manifest list.

    Attributes:
        snapshot_id, timestamp_ms, operation: the snapshot.
        manifests, data_manifests, delete_manifests: what the list names.
        list_bytes: the manifest list file's size.
        manifest_bytes: the manifests' total size (``manifest_length``).
    """

    snapshot_id: int
    timestamp_ms: int
    operation: str | None
    manifests: int
    data_manifests: int
    delete_manifests: int
    list_bytes: int
    manifest_bytes: int


def manifest_lists(table: TableData, last: int = MANIFEST_LISTS_SHOWN) -> list[ManifestListSize]:
    """The manifest lists of the ``last`` newest snapshots, newest first.

    Bounded on purpose: each is a file read; a 200,000-snapshot table's lists are not all
    read to show a trend (``icecore trend`` owns the whole history).
    """
    newest = sorted(table.metadata.snapshots, key=lambda s: -s.timestamp_ms)[: max(last, 0)]
    out: list[ManifestListSize] = []
    for snapshot in newest:
        if snapshot.manifest_list is None:
            continue
        listed = table.manifests(snapshot)
        data = sum(1 for m in listed if m.content is ManifestContent.DATA)
        out.append(
            ManifestListSize(
                snapshot_id=snapshot.snapshot_id,
                timestamp_ms=snapshot.timestamp_ms,
                operation=snapshot.summary.get("operation") if snapshot.summary else None,
                manifests=len(listed),
                data_manifests=data,
                delete_manifests=len(listed) - data,
                list_bytes=table.io.info(snapshot.manifest_list).size,
                manifest_bytes=sum(m.manifest_length for m in listed),
            )
        )
    return out


def manifests_fix(metadata: TableMetadata, lists: Sequence[ManifestListSize]) -> str:
    """What to do about manifests per snapshot (empty when the newest list is fine)."""
    if not lists:
        return ""
    min_count = _property(metadata, MANIFEST_MIN_COUNT_TO_MERGE) or MANIFEST_MIN_COUNT_TO_MERGE[1]
    newest = lists[0]
    if newest.data_manifests >= min_count:
        return (
            f"The current snapshot lists {newest.data_manifests:,} data manifests (merging starts "
            f"at {min_count:,}): rewrite_manifests packs them, and every planning reads fewer."
        )
    return ""


def bloat(
    table: TableData, obj: Mapping[str, Any], file_bytes: int, now_ms: int, *, last: int = 20
) -> dict[str, Any]:
    """The Overview's metadata bloat section as JSON: parts, manifest lists, fixes.

    Args:
        table: the table (its metadata parsed from ``obj``).
        obj: the decoded metadata.json.
        file_bytes: the metadata.json file's size.
        now_ms: when expiry is judged.
        last: manifest lists read, newest first.
    """
    parts = metadata_parts(obj, table.metadata, now_ms)
    lists = manifest_lists(table, last)
    json_bytes = sum(p.bytes for p in parts)
    fixes = [f"{p.part}: {p.fix}" for p in parts if p.fix]
    if json_bytes >= LARGE_METADATA_BYTES:
        fixes.insert(
            0,
            f"metadata.json is {json_bytes / 2**20:.1f} MiB, read whole by every reader and "
            "rewritten by every commit: shrink its biggest parts first.",
        )
    if fix := manifests_fix(table.metadata, lists):
        fixes.append(f"manifests: {fix}")
    return {
        "file_bytes": file_bytes,
        "json_bytes": json_bytes,
        "parts": [part_json(p) for p in parts],
        "manifest_lists": [
            {
                "snapshot_id": m.snapshot_id,
                "timestamp_ms": m.timestamp_ms,
                "operation": m.operation,
                "manifests": m.manifests,
                "data_manifests": m.data_manifests,
                "delete_manifests": m.delete_manifests,
                "list_bytes": m.list_bytes,
                "manifest_bytes": m.manifest_bytes,
            }
            for m in lists
        ],
        "fixes": fixes,
    }


def part_json(p: Part) -> dict[str, Any]:
    """A part as JSON (``icecore health``'s ``metadata_parts``)."""
    return {"part": p.part, "bytes": p.bytes, "count": p.count, "unused": p.unused, "fix": p.fix}


__all__ = [
    "DELETE_AFTER_COMMIT",
    "PARTS",
    "PREVIOUS_VERSIONS_MAX",
    "ManifestListSize",
    "Part",
    "bloat",
    "manifest_lists",
    "manifests_fix",
    "metadata_parts",
    "part_json",
]
