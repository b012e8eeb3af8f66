"""Which delete files apply to a data file: the spec's delete scope rules, indexed.

Spec "Scan Planning" (v2) and, for deletion vectors, the latest spec's "Scan Planning" and
"Deletion Vectors":

* a *position* delete file applies to a data file whose data sequence number is less than
  or equal to the delete's, in the same partition (spec id and partition values), and, when
  its ``referenced_data_file`` is set, only to that file;
* an *equality* delete file applies to a data file whose data sequence number is strictly
  less than the delete's, in the same partition, or to every partition when the delete was
  written under an unpartitioned spec (a global delete);
* a *deletion vector* (a position delete in a Puffin file) applies to the data file it
  references, with a data sequence number less than or equal to its own; when one applies,
  position delete files for that data file are ignored (the DV holds their deletes).

As Iceberg Java's ``DeleteFileIndex`` does, position delete files are also pruned by the
bounds of their ``file_path`` column (field 2147483546): a data file path outside
``[lower, upper]`` cannot be deleted by them.

The index is built once per scan: deletes are grouped by (spec id, partition) and by
referenced data file, each group sorted by data sequence number, and looked up by bisection.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icecore.errors import InvalidMetadata
from icecore.expressions.arrow_metrics import order_key
from icecore.manifest import DataFile, DataFileContent, ManifestEntry
from icecore.partitioning import PartitionSpec
from icecore.schema import Schema
from icecore.types import NestedField
from icecore.values import from_bytes

DELETE_FILE_PATH_ID = 2147483546
"""Field id of ``file_path`` in position delete files (spec "Reserved Field IDs")."""

DELETE_POS_ID = 2147483545
"""Field id of ``pos`` in position delete files (spec "Reserved Field IDs")."""

PartitionKey = tuple[int, tuple[tuple[int, Any], ...]]
"""(spec id, ((partition field id, comparable value), ...)): partition equality as a key."""


def partition_value_key(value: Any) -> Any:
    """A hashable key equal exactly when the spec calls two partition values equal.

    Floating point values compare by their IEEE 754 bits with NaN normalized (latest spec,
    "Scan Planning" note 3): ``-0.0`` differs from ``0.0`` and every NaN is one value.
    """
    if isinstance(value, float):
        if math.isnan(value):
            return ("float", b"nan")
        return ("float", struct.pack(">d", value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def partition_key(data_file: DataFile) -> PartitionKey:
    """The key under which partition equality (spec id and values) is tested."""
    return (
        data_file.spec_id,
        tuple((fid, partition_value_key(v)) for fid, v in data_file.partition.items()),
    )


def is_deletion_vector(delete_file: DataFile) -> bool:
    """Whether a delete file is a v3 deletion vector (a position delete stored in Puffin)."""
    return (
        delete_file.content is DataFileContent.POSITION_DELETES
        and delete_file.file_format.upper() == "PUFFIN"
    )


def _java_chars_key(text: str) -> bytes:
    """A sort key ordering strings as Java's ``Comparators.charSequences`` does (UTF-16 units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _decode_path_bound(raw: bytes | None) -> bytes | None:
    if raw is None:
        return None
    try:
        return _java_chars_key(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None  # a malformed (or byte-truncated) bound prunes nothing


@dataclass(frozen=True, slots=True)
class _Delete:
    """One delete file with what lookups need, precomputed."""

    sequence_number: int
    data_file: DataFile
    path_lower: bytes | None
    path_upper: bytes | None

    def may_contain_path(self, path_key: bytes) -> bool:
        """Whether the delete's ``file_path`` bounds admit the data file's path."""
        if self.path_lower is not None and path_key < self.path_lower:
            return False
        return not (self.path_upper is not None and path_key > self.path_upper)


class _Group:
    """Deletes sorted by data sequence number, for bisection."""

    __slots__ = ("_sequence_numbers", "_deletes")

    def __init__(self, deletes: list[_Delete]) -> None:
        deletes.sort(key=lambda d: d.sequence_number)
        self._sequence_numbers = [d.sequence_number for d in deletes]
        self._deletes = deletes

    def at_or_after(self, sequence_number: int) -> list[_Delete]:
        """Deletes with data sequence number >= ``sequence_number`` (position deletes)."""
        return self._deletes[bisect_left(self._sequence_numbers, sequence_number) :]

    def after(self, sequence_number: int) -> list[_Delete]:
        """Deletes with data sequence number > ``sequence_number`` (equality deletes)."""
        return self._deletes[bisect_right(self._sequence_numbers, sequence_number) :]


def _group(items: dict[Any, list[_Delete]]) -> dict[Any, _Group]:
    return {key: _Group(deletes) for key, deletes in items.items()}


def _count(counts: dict[int, int] | None, field_id: int) -> int | None:
    return counts.get(field_id) if counts is not None else None


def _contains_null(file: DataFile, field: NestedField) -> bool:
    if field.required:
        return False
    nulls = _count(file.null_value_counts, field.field_id)
    return nulls is None or nulls > 0


def _all_non_null(file: DataFile, field: NestedField) -> bool:
    if field.required:
        return True
    nulls = _count(file.null_value_counts, field.field_id)
    return nulls is not None and nulls <= 0


def _all_null(file: DataFile, field: NestedField) -> bool:
    if field.required:
        return False
    nulls = _count(file.null_value_counts, field.field_id)
    values = _count(file.value_counts, field.field_id)
    return nulls is not None and values is not None and nulls == values


def _bound(file: DataFile, bounds: dict[int, bytes] | None, field: NestedField) -> Any:
    raw = bounds.get(field.field_id) if bounds is not None else None
    return from_bytes(field.field_type, raw) if raw is not None else None


def equality_deletes_may_apply(data_file: DataFile, delete_file: DataFile, schema: Schema) -> bool:
    """Whether an equality delete file can hold a key of ``data_file``, judged by their stats.

    Iceberg Java's ``DeleteFileIndex.canContainEqDeletesForFile``: per equality column, rule
    the pair out when the data file is all null there and the deletes hold no null (or the
    reverse), or when their value ranges do not overlap. Missing stats never rule out.
    """
    key_of = order_key
    for field_id in delete_file.equality_ids or ():
        field = schema.find_field(field_id)
        if field is None or not field.field_type.is_primitive:
            continue
        if _contains_null(data_file, field) and _contains_null(delete_file, field):
            continue
        if _all_null(data_file, field) and _all_non_null(delete_file, field):
            return False
        if _all_null(delete_file, field) and _all_non_null(data_file, field):
            return False
        data_lower = _bound(data_file, data_file.lower_bounds, field)
        data_upper = _bound(data_file, data_file.upper_bounds, field)
        delete_lower = _bound(delete_file, delete_file.lower_bounds, field)
        delete_upper = _bound(delete_file, delete_file.upper_bounds, field)
        if data_lower is None or data_upper is None or delete_lower is None or delete_upper is None:
            continue
        key = key_of(field.field_type)
        if key(data_lower) > key(delete_upper) or key(delete_lower) > key(data_upper):
            return False
    return True


class DeleteIndex:
    """The delete files of one snapshot, indexed for :meth:`for_data_file`.

    Args:
        entries: the snapshot's live delete file entries (ADDED or EXISTING), with their
            data sequence numbers after inheritance. Data file entries are ignored.
        specs: the table's partition specs by id (to tell unpartitioned specs, whose
            equality deletes are global).

    Raises:
        InvalidMetadata: a delete entry has no data sequence number, or a delete file uses
            a partition spec the table does not define, or a deletion vector names no data
            file.
    """

    def __init__(
        self,
        entries: Iterable[ManifestEntry],
        specs: Mapping[int, PartitionSpec],
        schema: Schema | None = None,
    ) -> None:
        self._schema = schema
        global_eq: list[_Delete] = []
        eq_by_partition: dict[PartitionKey, list[_Delete]] = {}
        pos_by_partition: dict[PartitionKey, list[_Delete]] = {}
        pos_by_path: dict[str, list[_Delete]] = {}
        dvs: dict[str, list[_Delete]] = {}
        count = 0
        for entry in entries:
            delete_file = entry.data_file
            if delete_file.content is DataFileContent.DATA:
                continue
            if entry.sequence_number is None:
                raise InvalidMetadata(
                    f"Delete file {delete_file.file_path} has no data sequence number."
                )
            spec = specs.get(delete_file.spec_id)
            if spec is None:
                raise InvalidMetadata(
                    f"Delete file {delete_file.file_path} uses partition spec "
                    f"{delete_file.spec_id}, which the table does not define."
                )
            count += 1
            if delete_file.content is DataFileContent.EQUALITY_DELETES:
                item = _Delete(entry.sequence_number, delete_file, None, None)
                if spec.is_unpartitioned:
                    global_eq.append(item)
                else:
                    eq_by_partition.setdefault(partition_key(delete_file), []).append(item)
                continue
            if is_deletion_vector(delete_file):
                if delete_file.referenced_data_file is None:
                    raise InvalidMetadata(
                        f"Deletion vector in {delete_file.file_path} has no referenced_data_file."
                    )
                item = _Delete(entry.sequence_number, delete_file, None, None)
                dvs.setdefault(delete_file.referenced_data_file, []).append(item)
                continue
            lower = (delete_file.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
            upper = (delete_file.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
            item = _Delete(
                entry.sequence_number,
                delete_file,
                _decode_path_bound(lower),
                _decode_path_bound(upper),
            )
            if delete_file.referenced_data_file is not None:
                pos_by_path.setdefault(delete_file.referenced_data_file, []).append(item)
            else:
                pos_by_partition.setdefault(partition_key(delete_file), []).append(item)
        self._global_eq = _Group(global_eq)
        self._eq_by_partition = _group(eq_by_partition)
        self._pos_by_partition = _group(pos_by_partition)
        self._pos_by_path = _group(pos_by_path)
        self._dvs = _group(dvs)
        self._count = count

    def __len__(self) -> int:
        """How many delete files the index holds."""
        return self._count

    def may_apply_to_partition(self, key: PartitionKey) -> bool:
        """Whether a delete file scoped by partition may apply to data files under ``key``.

        False means only :meth:`may_apply_to_path` deletes can apply there (planning asks
        once per distinct partition tuple, then looks at those files alone).
        """
        return (
            bool(self._global_eq._deletes)
            or key in self._eq_by_partition
            or key in self._pos_by_partition
        )

    @property
    def has_path_deletes(self) -> bool:
        """Whether some delete names the one data file it applies to (DVs, scoped files)."""
        return bool(self._dvs or self._pos_by_path)

    def may_apply_to_path(self, path: str) -> bool:
        """Whether a deletion vector or a file-scoped position delete names ``path``."""
        return path in self._dvs or path in self._pos_by_path

    def for_data_file(self, data_file: DataFile, data_sequence_number: int) -> tuple[DataFile, ...]:
        """The delete files that apply to ``data_file`` (spec "Scan Planning").

        Args:
            data_file: a live data file of the snapshot.
            data_sequence_number: its data sequence number (0 for v1 data files).

        Returns:
            equality deletes (global ones first), then either the data file's deletion
            vector or its position delete files, each group in data sequence number order.
        """
        if self._count == 0:
            return ()
        key = partition_key(data_file)
        seq = data_sequence_number
        result = [d.data_file for d in self._global_eq.after(seq)]
        eq_group = self._eq_by_partition.get(key)
        if eq_group is not None:
            result.extend(d.data_file for d in eq_group.after(seq))
        if result and self._schema is not None:
            schema = self._schema
            result = [d for d in result if equality_deletes_may_apply(data_file, d, schema)]
        path = data_file.file_path
        dv_group = self._dvs.get(path)
        if dv_group is not None:
            dvs = [d for d in dv_group.at_or_after(seq) if partition_key(d.data_file) == key]
            if dvs:
                # "At most one deletion vector is allowed per data file in a snapshot"; when
                # one applies, position delete files are ignored ("Deletion Vectors").
                result.append(dvs[-1].data_file)
                return tuple(result)
        path_key: bytes | None = None
        pos_group = self._pos_by_partition.get(key)
        if pos_group is not None:
            path_key = _java_chars_key(path)
            result.extend(
                d.data_file for d in pos_group.at_or_after(seq) if d.may_contain_path(path_key)
            )
        path_group = self._pos_by_path.get(path)
        if path_group is not None:
            result.extend(
                d.data_file
                for d in path_group.at_or_after(seq)
                if partition_key(d.data_file) == key
            )
        return tuple(result)

    def delete_files(self) -> Sequence[DataFile]:
        """Every delete file in the index (for reports), in no particular order."""
        groups: list[_Group] = [self._global_eq]
        for mapping in (
            self._eq_by_partition,
            self._pos_by_partition,
            self._pos_by_path,
            self._dvs,
        ):
            groups.extend(mapping.values())
        return [d.data_file for g in groups for d in g.at_or_after(-(2**63))]


__all__ = [
    "DELETE_FILE_PATH_ID",
    "DELETE_POS_ID",
    "DeleteIndex",
    "is_deletion_vector",
    "partition_key",
]
