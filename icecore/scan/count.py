"""A plan's row count, exactly Spark's ``count(*)``, reading only what metadata cannot decide.

Spec "Scan Planning" and "Delete Formats": the rows a reader sees in a planned data file are
its ``record_count`` minus the rows its applicable deletes remove, kept only where the
residual filter is true. Per task (issue 32, Deliver 2):

* no delete file and a residual that is always true (no filter, or one that partition
  values decide for the file): its ``record_count``, read from the manifest, nothing opened;
* position deletes and deletion vectors only, residual always true: ``record_count`` minus
  the distinct deleted positions inside ``[0, record_count)``; only the delete files are read
  (a position may be deleted by two files, or named past the file's end: it is counted once,
  or not at all, as the reader would apply it), never the data file;
* equality deletes (they match values) or a residual that needs values: the data file is read,
  only the columns the deletes and the filter need (the reader with no column asked for).

Access as for reading (:meth:`icecore.scan.planner.Plan.read_schema`): a count with no filter
is viewer-level (positions, not values); with a filter it needs the reader role.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from icecore.compute import pc
from icecore.errors import IcecoreError
from icecore.expressions.model import AlwaysTrue
from icecore.manifest import DataFileContent
from icecore.read import parse_name_mapping, read_tasks
from icecore.read.deletes import DeleteLoader
from icecore.read.tasks import DEFAULT_BATCH_SIZE
from icecore.scan.task import FileScanTask

if TYPE_CHECKING:
    from icecore.scan.planner import Plan

_ALWAYS_TRUE = str(AlwaysTrue())
"""How ``Plan.files()`` writes a residual that keeps every row."""


@dataclass(frozen=True, slots=True)
class RowCount:
    """A plan's live rows, and how each planned data file was counted.

    Attributes:
        rows: the rows a reader sees (Spark's ``count(*)`` for the snapshot and filter).
        from_metadata_files: data files counted from their manifest entry alone.
        from_delete_files: data files counted from the manifest and their position deletes
            or deletion vectors, the data file itself not read.
        read_files: data files read (equality deletes, or a filter values decide).
    """

    rows: int
    from_metadata_files: int
    from_delete_files: int
    read_files: int

    def to_dict(self) -> dict[str, Any]:
        """As the CLI prints it (``icecore count``)."""
        return {
            "count": self.rows,
            "from_metadata_files": self.from_metadata_files,
            "from_delete_files": self.from_delete_files,
            "read_files": self.read_files,
        }


class CountTooLarge(IcecoreError):
    """A count would read more bytes than its caller allows (``read_bound``).

    Attributes:
        needed: the data file bytes the count must read.
        bound: the caller's bound.
    """

    def __init__(self, needed: int, bound: int) -> None:
        super().__init__(f"Counting would read {needed} bytes, more than the {bound} allowed.")
        self.needed = needed
        self.bound = bound


def count_rows(plan: Plan, *, read_bound: int | None = None) -> RowCount:
    """The live rows of ``plan`` (see the module docstring for what is read).

    ``read_bound`` bounds the data file bytes that must be read now, checked before anything
    is read: the files read (whole, an upper bound of the columns read), not the table's
    size; a file counted from metadata or from its position deletes/DVs reads none (its
    delete files are read whatever the bound, as History's rows_live always has).

    Raises:
        CountTooLarge: the count would read more than ``read_bound`` bytes.
        Forbidden: the principal may not count under this filter (as reading).
        NotFound, InvalidMetadata: a delete or data file that must be read is missing or
            corrupt (one sentence naming it).
    """
    projection = plan.read_schema([])  # the access check, before anything is read
    files = plan.files()
    records = files.column("record_count")
    no_deletes = pc.equal(pc.list_value_length(files.column("delete_files")), 0)
    whole = pc.equal(files.column("residual"), _ALWAYS_TRUE)
    from_metadata = pc.and_(whole, no_deletes)
    rows = int(pc.sum(pc.filter(records, from_metadata)).as_py() or 0)
    meta_files = int(pc.sum(from_metadata.cast("int64")).as_py() or 0)
    kept_whole = np.asarray(whole.to_numpy(zero_copy_only=False), bool)
    others = np.flatnonzero(~np.asarray(from_metadata.to_numpy(zero_copy_only=False), bool))
    if not len(others):
        return RowCount(rows, meta_files, 0, 0)
    tasks = plan.tasks
    mapping = parse_name_mapping(plan.name_mapping) if plan.name_mapping is not None else None
    loader = DeleteLoader(plan.io, plan.schema, mapping, DEFAULT_BATCH_SIZE)
    to_read: list[FileScanTask] = []
    by_positions: list[FileScanTask] = []
    for i in others.tolist():
        task = tasks[i]
        if not kept_whole[i] or any(
            d.content is DataFileContent.EQUALITY_DELETES for d in task.delete_files
        ):
            to_read.append(task)
        else:
            by_positions.append(task)
    if read_bound is not None:
        needed = sum(t.file_size_in_bytes for t in to_read)
        if needed > read_bound:
            raise CountTooLarge(needed, read_bound)
    for task in by_positions:
        rows += _after_positions(loader, task)
    by_deletes = len(by_positions)
    if to_read:
        rows += sum(
            batch.num_rows
            for batch in read_tasks(
                plan.io,
                to_read,
                projection,
                columns=[],
                name_mapping=plan.name_mapping,
                partition_type=plan.partition_type,
                ordered=False,  # a sum: any order, no file waits behind a slow one
            )
        )
    return RowCount(rows, meta_files, by_deletes, len(to_read))


def _after_positions(loader: DeleteLoader, task: FileScanTask) -> int:
    """``record_count`` less the distinct deleted positions inside the file."""
    records = task.data_file.record_count
    deletes: Sequence[Any] = task.delete_files
    deleted = loader.positions(task.file_path, deletes)
    lo, hi = np.searchsorted(deleted, [0, records])
    return int(records - (hi - lo))
