"""Read the rows of scan tasks as Arrow record batches: projection, evolution, deletes, filter.

Implements, for Parquet data files (and Avro ones, decoded by :mod:`icecore.avro`):

* spec "Column Projection": file columns are matched to the scan's schema by field id
  (``PARQUET:field_id``), never by name; a file without ids falls back to the table's
  ``schema.name-mapping.default`` ("Name Mapping Serialization"); output columns are named
  and ordered as the projected schema says;
* spec "Schema Evolution": renamed fields (same id), dropped and re-added fields (a new id
  never reads the old column), ``int -> long``, ``float -> double`` and decimal precision
  widening; "Default values": a field missing from a file reads as its ``initial-default``
  (v3) or null; structs, lists and maps are projected by id at every depth;
* spec "Reserved Field IDs": the metadata columns ``_file``, ``_pos``, ``_spec_id`` and
  ``_partition`` on request;
* spec "Delete Formats": position delete files (rows whose ``file_path`` is the data file),
  equality delete files (delete columns matched by id, NULL equal to NULL, read from the
  data file even after the column was dropped from the table) and, from the latest spec,
  deletion vectors (:mod:`icecore.scan.puffin`);
* the task's residual filter, after deletes, with SQL's three-valued logic (a row is kept
  only when the filter is true, as Spark keeps it).

Files are read through :class:`icecore.io.FileIO` in byte ranges and decoded a batch at a
time, so memory is bounded by a row group, not by the table.

One module per concern: :mod:`~icecore.read.projection` (output schema, evolution by field
id), :mod:`~icecore.read.name_mapping`, :mod:`~icecore.read.files` (files through FileIO),
:mod:`~icecore.read.deletes`, :mod:`~icecore.read.tasks` (reading tasks); the residual filter
is the expressions package's row filter (:mod:`icecore.expressions.row_filter`).
"""

from __future__ import annotations

from icecore.arrow_types import arrow_field, arrow_type
from icecore.expressions.row_filter import filter_field_ids, filter_mask
from icecore.read.name_mapping import NAME_MAPPING_PROPERTY, MappedField, parse_name_mapping
from icecore.read.projection import (
    FILE_COLUMN,
    METADATA_COLUMN_IDS,
    PARTITION_COLUMN,
    POS_COLUMN,
    SPEC_ID_COLUMN,
    arrow_schema_for,
    project_schema,
    unified_partition_type,
)
from icecore.read.tasks import DEFAULT_BATCH_SIZE, read_arrow, read_task, read_tasks

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "FILE_COLUMN",
    "METADATA_COLUMN_IDS",
    "NAME_MAPPING_PROPERTY",
    "PARTITION_COLUMN",
    "POS_COLUMN",
    "SPEC_ID_COLUMN",
    "MappedField",
    "arrow_field",
    "arrow_schema_for",
    "arrow_type",
    "filter_field_ids",
    "filter_mask",
    "parse_name_mapping",
    "project_schema",
    "read_arrow",
    "read_task",
    "read_tasks",
    "unified_partition_type",
]
