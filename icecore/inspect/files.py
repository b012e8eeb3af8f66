"""File-level metadata tables: ``entries``, ``*files`` and their ``all_*`` forms.

The ``all_*`` forms read every manifest reachable from a valid snapshot, each once.

Each row is a ``manifest_entry`` or its ``data_file`` struct ("Manifests": "Manifest Entry
Fields" and "Data File Fields") after "Sequence Number Inheritance" and, for v3, "First Row
ID Inheritance"; columns as Iceberg Java's ``ManifestEntriesTable`` and ``BaseFilesTable``.
``files`` and the ``*_files`` tables hold live entries only (ADDED and EXISTING);
``entries`` also holds DELETED ones. ``data_files`` holds content 0 only and
``delete_files`` content 1 and 2, so a delete file is never counted as data.

``readable_metrics`` decodes the metrics maps per column of the *current* schema (Java's
``MetricsUtil.readableMetricsStruct``): one struct per primitive column, named by its full
dotted name (``pickup_loc.lat``, ``tags.element``), sorted by name, with bounds decoded
from their Appendix D bytes into the column's type. Files without metrics (deletion
vectors, most delete files) read as structs of nulls; metrics of columns outside the
schema (position delete files' ``file_path``/``pos``) are not shown there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from icecore.inspect._common import (
    Decoded,
    TableView,
    decode_bound,
    entries,
    from_rows,
    is_data,
    value_type,
)
from icecore.manifest import DataFile

_COUNTS = pa.map_(pa.int32(), pa.int64())
_BOUNDS = pa.map_(pa.int32(), pa.binary())


def data_file_fields(view: TableView) -> list[pa.Field]:
    """The ``data_file`` columns Spark shows (``partition`` only for partitioned tables)."""
    fields = [
        pa.field("content", pa.int32()),
        pa.field("file_path", pa.string(), nullable=False),
        pa.field("file_format", pa.string(), nullable=False),
        pa.field("spec_id", pa.int32()),
    ]
    if view.partitioned:
        fields.append(pa.field("partition", view.partition_arrow_type(), nullable=False))
    fields += [
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("file_size_in_bytes", pa.int64(), nullable=False),
        pa.field("column_sizes", _COUNTS),
        pa.field("value_counts", _COUNTS),
        pa.field("null_value_counts", _COUNTS),
        pa.field("nan_value_counts", _COUNTS),
        pa.field("lower_bounds", _BOUNDS),
        pa.field("upper_bounds", _BOUNDS),
        pa.field("key_metadata", pa.binary()),
        pa.field("split_offsets", pa.list_(pa.int64())),
        pa.field("equality_ids", pa.list_(pa.int32())),
        pa.field("sort_order_id", pa.int32()),
        pa.field("first_row_id", pa.int64()),
        pa.field("referenced_data_file", pa.string()),
        pa.field("content_offset", pa.int64()),
        pa.field("content_size_in_bytes", pa.int64()),
    ]
    return fields


def readable_metrics_type(view: TableView) -> pa.StructType:
    """One struct per primitive column: sizes, counts and bounds in the column's type."""
    return pa.struct(
        [
            pa.field(
                name,
                pa.struct(
                    [
                        pa.field("column_size", pa.int64()),
                        pa.field("value_count", pa.int64()),
                        pa.field("null_value_count", pa.int64()),
                        pa.field("nan_value_count", pa.int64()),
                        pa.field("lower_bound", value_type(field.field_type)),
                        pa.field("upper_bound", value_type(field.field_type)),
                    ]
                ),
            )
            for name, field in view.metric_columns
        ]
    )


def files_schema(view: TableView) -> pa.Schema:
    """Columns of ``files``, ``data_files``, ``delete_files`` and their ``all_`` forms."""
    return pa.schema(
        [*data_file_fields(view), pa.field("readable_metrics", readable_metrics_type(view))]
    )


def entries_schema(view: TableView) -> pa.Schema:
    """Columns of ``entries`` and ``all_entries``."""
    return pa.schema(
        [
            pa.field("status", pa.int32(), nullable=False),
            pa.field("snapshot_id", pa.int64()),
            pa.field("sequence_number", pa.int64()),
            pa.field("file_sequence_number", pa.int64()),
            pa.field("data_file", pa.struct(data_file_fields(view)), nullable=False),
            pa.field("readable_metrics", readable_metrics_type(view)),
        ]
    )


def _pairs(mapping: Mapping[int, Any] | None) -> list[tuple[int, Any]] | None:
    return list(mapping.items()) if mapping is not None else None


def _get(mapping: Mapping[int, Any] | None, key: int) -> Any:
    return mapping.get(key) if mapping is not None else None


def data_file_row(view: TableView, f: DataFile) -> dict[str, Any]:
    """A ``data_file`` struct as a row of :func:`data_file_fields`."""
    row: dict[str, Any] = {
        "content": int(f.content),
        "file_path": f.file_path,
        "file_format": f.file_format.upper(),
        "spec_id": f.spec_id,
    }
    if view.partitioned:
        row["partition"] = view.partition_value(f.partition)
    row.update(
        record_count=f.record_count,
        file_size_in_bytes=f.file_size_in_bytes,
        column_sizes=_pairs(f.column_sizes),
        value_counts=_pairs(f.value_counts),
        null_value_counts=_pairs(f.null_value_counts),
        nan_value_counts=_pairs(f.nan_value_counts),
        lower_bounds=_pairs(f.lower_bounds),
        upper_bounds=_pairs(f.upper_bounds),
        key_metadata=f.key_metadata,
        split_offsets=list(f.split_offsets) if f.split_offsets is not None else None,
        equality_ids=list(f.equality_ids) if f.equality_ids is not None else None,
        sort_order_id=f.sort_order_id,
        first_row_id=f.first_row_id,
        referenced_data_file=f.referenced_data_file,
        content_offset=f.content_offset,
        content_size_in_bytes=f.content_size_in_bytes,
    )
    return row


def readable_metrics_row(view: TableView, f: DataFile) -> dict[str, Any]:
    """The metrics of ``f`` per current-schema column; absent metrics read null."""
    out: dict[str, Any] = {}
    for name, field in view.metric_columns:
        fid, t = field.field_id, field.field_type
        out[name] = {
            "column_size": _get(f.column_sizes, fid),
            "value_count": _get(f.value_counts, fid),
            "null_value_count": _get(f.null_value_counts, fid),
            "nan_value_count": _get(f.nan_value_counts, fid),
            "lower_bound": decode_bound(t, _get(f.lower_bounds, fid), f.file_path, name),
            "upper_bound": decode_bound(t, _get(f.upper_bounds, fid), f.file_path, name),
        }
    return out


def entries_table(view: TableView, manifests: Decoded) -> pa.Table:
    """Every entry (ADDED, EXISTING and DELETED) of decoded ``manifests``."""
    rows = (
        {
            "status": int(e.status),
            "snapshot_id": e.snapshot_id,
            "sequence_number": e.sequence_number,
            "file_sequence_number": e.file_sequence_number,
            "data_file": data_file_row(view, e.data_file),
            "readable_metrics": readable_metrics_row(view, e.data_file),
        }
        for e in entries(manifests)
    )
    return from_rows(rows, entries_schema(view))


def files_table(
    view: TableView,
    manifests: Decoded,
    keep: Callable[[DataFile], bool] = lambda f: True,
) -> pa.Table:
    """The files of decoded live ``manifests`` that ``keep`` accepts, with metrics."""
    rows = (
        {
            **data_file_row(view, e.data_file),
            "readable_metrics": readable_metrics_row(view, e.data_file),
        }
        for e in entries(manifests)
        if keep(e.data_file)
    )
    return from_rows(rows, files_schema(view))


def is_delete(f: DataFile) -> bool:
    """Whether the file holds position or equality deletes (content 1 or 2)."""
    return not is_data(f)
