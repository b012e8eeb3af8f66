"""A FileScanTask: everything a reader needs to read one data file of a scan, and nothing more.

Spec "Scan Planning": a task is a data file, the delete files that apply to it (chosen by
data sequence number and partition, see :mod:`icecore.scan.delete_index`), and the residual
filter left after partition pruning. Tasks are self-contained (iceberg-rust's lesson), so a
reader needs no table, manifest or catalog to read one.
"""

from __future__ import annotations

from dataclasses import dataclass

from icecore.expressions.model import AlwaysTrue, Expression
from icecore.manifest import DataFile
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema


@dataclass(frozen=True, slots=True)
class FileScanTask:
    """One data file to read, with its deletes and residual filter.

    Attributes:
        data_file: the data file.
        data_sequence_number: its data sequence number (what deletes are compared against).
        spec: the partition spec the file was written with (``data_file.spec_id``).
        schema: the table schema the scan reads with (the snapshot's schema); the file's own
            columns are matched to it by field id.
        delete_files: position deletes, equality deletes and deletion vectors that apply
            (a deletion vector, when present, replaces every position delete file).
        residual: the filter still to apply to rows (bound to ``schema``); ``AlwaysTrue``
            when partition values alone decide.
    """

    data_file: DataFile
    data_sequence_number: int
    spec: PartitionSpec
    schema: Schema
    delete_files: tuple[DataFile, ...] = ()
    residual: Expression = AlwaysTrue()

    @property
    def file_path(self) -> str:
        """The data file's path."""
        return self.data_file.file_path
