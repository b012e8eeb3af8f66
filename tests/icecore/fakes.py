"""Inputs for the layout, health and figure tests: the demo tables, manifest list entries, files."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from icecore.layout import FILES_SCHEMA
from icecore.manifest import ManifestContent, ManifestFile

DEMO_TABLES = [
    ("icecore.demo.trips", "{w}::demo.trips"),
    ("icecore.demo.events_v3", "{w}::demo.events_v3"),
    ("icecore.demo.accounts", "{w}::demo.accounts"),
    ("icecore.demo.zones", "{w}::demo.zones"),
    ("hadoop.demo.customers_v1", "{w}/hadoop::demo.customers_v1"),
]
"""(Spark name, icecore table spec with ``{w}`` for the warehouse) of every demo table."""


def manifest_file(
    path: str = "m", length: int = 100, content: ManifestContent = ManifestContent.DATA
) -> ManifestFile:
    """A manifest list entry with only what the tree and the health checks read."""
    return ManifestFile(
        manifest_path=path,
        manifest_length=length,
        partition_spec_id=0,
        content=content,
        sequence_number=1,
        min_sequence_number=1,
        added_snapshot_id=1,
        added_files_count=None,
        existing_files_count=None,
        deleted_files_count=None,
        added_rows_count=None,
        existing_rows_count=None,
        deleted_rows_count=None,
    )


def files(
    sizes: Sequence[tuple[int, int]],
    manifest: str = "m",
    partitions: Sequence[str] | None = None,
    contents: Sequence[int] | None = None,
) -> pa.Table:
    """Live files of one manifest as (bytes, rows), named ``<manifest>/f<i>``."""
    return pa.Table.from_pylist(
        [
            {
                "manifest_path": manifest,
                "content": contents[i] if contents else 0,
                "file_path": f"{manifest}/f{i}",
                "file_format": "PARQUET",
                "spec_id": 0,
                "partition": partitions[i] if partitions else f"p={i % 2}",
                "record_count": rows,
                "file_size_in_bytes": size,
            }
            for i, (size, rows) in enumerate(sizes)
        ],
        schema=FILES_SCHEMA,
    )
