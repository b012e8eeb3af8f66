"""UpdateSpec: add, remove and rename partition fields of the default spec.

Implements "Partitioning" and "Partition Evolution", following Iceberg Java's
``BaseUpdatePartitionSpec`` (names as PyIceberg's ``UpdateSpec``):

* a field's transform must accept its source column's type, the source must be a primitive
  outside lists and maps; one source is not partitioned twice by one transform, nor by two
  time transforms (``month`` and ``day`` of one column are redundant);
* names are unique and do not clash with a column, except an identity field named after its
  own source; generated names follow Java (``ts_day``, ``id_bucket_16``, ``name_trunc_4``);
* in v2 and later a new field reuses the id of an equivalent field of any earlier spec (same
  source and transform, and name when one is given), else takes ``last-partition-id`` + 1,
  so partition tuples of old manifests keep their meaning;
* in v1 a removed field is kept with the ``void`` transform, fields are only appended and
  never reordered, and ids run from 1000 in order (the spec's recommendations for v1);
* an identical existing spec is reused; the result becomes the default spec.
"""

from __future__ import annotations

import dataclasses

from icecore.errors import InvalidMetadata, Unsupported, ValidationError
from icecore.evolution.base import PendingUpdate, Plan, Stage
from icecore.metadata.builder import check_source
from icecore.metadata.requirements import (
    AssertDefaultSpecId,
    AssertLastAssignedPartitionId,
    AssertTableUUID,
)
from icecore.metadata.updates import LAST_ADDED, AddPartitionSpec, SetDefaultSpec
from icecore.partitioning import PartitionField, PartitionSpec
from icecore.schema import Schema
from icecore.transforms import (
    BucketTransform,
    TimeTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    parse_transform,
)
from icecore.types import IcebergType

TRANSFORMS_HELP = "identity, bucket[N], truncate[W], year, month, day or hour"


def resolve_transform(transform: str | Transform) -> Transform:
    """A transform from its spec string (``bucket[16]``), refusing unknown ones.

    Raises:
        ValidationError: the string names no transform, or a bad parameter.
    """
    if isinstance(transform, Transform):
        return transform
    try:
        return parse_transform(transform)
    except (Unsupported, InvalidMetadata) as e:
        raise ValidationError(f"Unknown transform {transform!r}: use {TRANSFORMS_HELP}.") from e


def resolve_source(
    schema: Schema, source: str, transform: Transform, case_sensitive: bool, what: str
) -> tuple[int, IcebergType]:
    """The id and type of a partition or sort source column, checked against ``transform``.

    Raises:
        ValidationError: no such column, not a valid source, or the transform refuses it.
    """
    try:
        found = schema.find_field_by_name(source, case_sensitive)
    except InvalidMetadata as e:
        raise ValidationError(str(e)) from e
    if found is None:
        raise ValidationError(f"Cannot {what} by {source!r}: the table has no such column.")
    source_type = check_source(schema, found.field_id, f"{what.capitalize()} by {source!r}")
    if not transform.can_transform(source_type):
        raise ValidationError(
            f"Cannot {what} by {transform}({source}): {transform} does not apply to {source_type}."
        )
    return found.field_id, source_type


def default_partition_name(transform: Transform, source_name: str) -> str:
    """The name Iceberg Java gives a partition field added by evolution."""
    if transform.is_identity:
        return source_name
    if isinstance(transform, BucketTransform):
        return f"{source_name}_bucket_{transform.num_buckets}"
    if isinstance(transform, TruncateTransform):
        return f"{source_name}_trunc_{transform.width}"
    if transform.is_void:
        return f"{source_name}_null"
    return f"{source_name}_{transform}"


def _check_not_redundant(
    added: PartitionField, fields: list[PartitionField], schema: Schema
) -> None:
    """Two time transforms of one source (``month`` and ``day``) are redundant."""
    if not isinstance(added.transform, TimeTransform):
        return
    for other in fields:
        if (
            other is not added
            and other.source_id == added.source_id
            and isinstance(other.transform, TimeTransform)
        ):
            source = schema.find_column_name(added.source_id)
            raise ValidationError(
                f"Cannot add {added.name!r} ({added.transform} of {source}): {other.name!r} "
                f"({other.transform}) also partitions {source} by time, and both together are "
                "redundant; remove one."
            )


class UpdateSpec(PendingUpdate):
    """A change of the default partition spec; see the module docstring for the rules.

    Args:
        transaction: where the change is staged.
        case_sensitive: match column names exactly (default) or ignoring case.

    Raises:
        ValidationError: the default spec has a transform Icecore does not know.
    """

    def __init__(self, transaction: Stage, *, case_sensitive: bool = True) -> None:
        super().__init__(transaction)
        md = self._base
        self._spec = md.default_spec()
        self._schema = md.current_schema()
        self._case_sensitive = case_sensitive
        unknown = [f for f in self._spec.fields if isinstance(f.transform, UnknownTransform)]
        if unknown:
            raise ValidationError(
                f"Cannot change partition spec {self._spec.spec_id}: field {unknown[0].name!r} "
                f"uses transform {unknown[0].transform}, which Icecore does not know."
            )
        self._last_partition_id = md.last_partition_id
        self._by_name = {f.name: f for f in self._spec.fields}
        self._by_transform = {(f.source_id, str(f.transform)): f for f in self._spec.fields}
        self._adds: list[PartitionField] = []
        self._deletes: set[int] = set()
        self._renames: dict[str, str] = {}

    def _added_named(self, name: str) -> PartitionField | None:
        return next((f for f in self._adds if f.name == name), None)

    def _new_field(self, source_id: int, transform: Transform, name: str | None) -> PartitionField:
        """A new field: in v2+, the equivalent field of an earlier spec if there is one."""
        if self._base.format_version >= 2:
            for spec in self._base.partition_specs:
                for f in spec.fields:
                    same = f.source_id == source_id and str(f.transform) == str(transform)
                    if same and (name is None or f.name == name):
                        return PartitionField(source_id, f.field_id, f.name, transform)
        self._last_partition_id += 1
        source_name = self._schema.find_column_name(source_id) or str(source_id)
        chosen = name if name is not None else default_partition_name(transform, source_name)
        return PartitionField(source_id, self._last_partition_id, chosen, transform)

    def add_field(
        self, source: str, transform: str | Transform = "identity", name: str | None = None
    ) -> UpdateSpec:
        """Partition new data by ``transform(source)`` too.

        Args:
            source: the source column (dotted for a struct field).
            transform: as the spec writes it: ``identity``, ``bucket[16]``, ``truncate[4]``,
                ``year``, ``month``, ``day``, ``hour``.
            name: the partition field's name (generated as Iceberg Java does when None).

        Raises:
            ValidationError: see the module docstring.
        """
        parsed = resolve_transform(transform)
        if parsed.is_void:
            raise ValidationError("Cannot add a void partition field; use remove_field instead.")
        source_id, _ = resolve_source(
            self._schema, source, parsed, self._case_sensitive, "partition"
        )
        key = (source_id, str(parsed))
        existing = self._by_transform.get(key)
        if existing is not None and existing.field_id in self._deletes:
            # Removing and re-adding the same field is a no-op (a rename if named).
            self._deletes.discard(existing.field_id)
            if name is not None and name != existing.name:
                self.rename_field(existing.name, name)
            return self
        if existing is not None:
            raise ValidationError(
                f"Cannot partition by {parsed}({source}) again: field {existing.name!r} "
                "already does."
            )
        if any((f.source_id, str(f.transform)) == key for f in self._adds):
            raise ValidationError(f"Partition field {parsed}({source}) is already being added.")
        field = self._new_field(source_id, parsed, name)
        if self._added_named(field.name) is not None:
            raise ValidationError(f"Partition field name {field.name!r} is already being added.")
        clash = self._by_name.get(field.name)
        if clash is not None and (clash.transform.is_void or clash.field_id in self._deletes):
            # A kept-but-void (v1) or removed field gives its name up.
            self._renames[clash.name] = f"{clash.name}_{clash.field_id}"
        elif clash is not None:
            raise ValidationError(
                f"Cannot add partition field {field.name!r}: the spec already has a field of "
                "that name; give another name."
            )
        self._adds.append(field)
        return self

    def add_identity(self, source: str) -> UpdateSpec:
        """Partition by the values of ``source`` themselves."""
        return self.add_field(source, "identity")

    def remove_field(self, name: str) -> UpdateSpec:
        """Stop partitioning new data by the field ``name`` (in v1 it becomes ``void``).

        Raises:
            ValidationError: no such field, or it is being added or renamed.
        """
        if self._added_named(name) is not None:
            raise ValidationError(f"Cannot remove partition field {name!r}: it is being added.")
        if name in self._renames:
            raise ValidationError(f"Cannot remove partition field {name!r}: it is being renamed.")
        field = self._by_name.get(name)
        if field is None:
            raise ValidationError(
                f"Cannot remove partition field {name!r}: there is no such field."
            )
        self._deletes.add(field.field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        """Rename the partition field ``name`` (its id, and so old files' values, stay).

        Raises:
            ValidationError: no such field, or it is being added or removed.
        """
        clash = self._by_name.get(new_name)
        if clash is not None and clash.transform.is_void and clash.name != name:
            self._renames[clash.name] = f"{clash.name}_{clash.field_id}"
        if self._added_named(name) is not None:
            raise ValidationError(f"Cannot rename partition field {name!r}: it is being added.")
        field = self._by_name.get(name)
        if field is None:
            raise ValidationError(
                f"Cannot rename partition field {name!r}: there is no such field."
            )
        if field.field_id in self._deletes:
            raise ValidationError(f"Cannot rename partition field {name!r}: it is being removed.")
        self._renames[name] = new_name
        return self

    def apply(self) -> PartitionSpec:
        """The changed spec (its id is assigned when committed).

        Raises:
            ValidationError: names are empty, repeated, or clash with columns.
        """
        fields: list[PartitionField] = []
        for f in self._spec.fields:
            renamed = self._renames.get(f.name, f.name)
            if f.field_id not in self._deletes:
                fields.append(dataclasses.replace(f, name=renamed))
            elif self._base.format_version == 1:
                fields.append(dataclasses.replace(f, name=renamed, transform=VoidTransform()))
        fields.extend(self._adds)
        for added in self._adds:
            _check_not_redundant(added, fields, self._schema)
        names: set[str] = set()
        for f in fields:
            if not f.name:
                raise ValidationError("Partition field names cannot be empty.")
            if f.name in names:
                raise ValidationError(f"Partition field name {f.name!r} would be used twice.")
            names.add(f.name)
            self._check_name_against_columns(f)
        return PartitionSpec(self._spec.spec_id, tuple(fields))

    def _check_name_against_columns(self, f: PartitionField) -> None:
        column = self._schema.find_field_by_name(f.name, True)
        if column is None:
            return
        own = column.field_id == f.source_id
        if own and (f.transform.is_identity or f.transform.is_void):
            return
        raise ValidationError(
            f"Partition field name {f.name!r} is also a column's name; only an identity field "
            "on that very column may share it; give the partition field another name."
        )

    def plan(self) -> Plan:
        """``add-spec`` + ``set-default-spec``, or nothing when the spec is unchanged."""
        new = self.apply()
        if new.fields == self._spec.fields:
            return (), ()
        return (
            (AddPartitionSpec(new), SetDefaultSpec(LAST_ADDED)),
            (
                AssertTableUUID(self._base.table_uuid),
                AssertDefaultSpecId(self._base.default_spec_id),
                AssertLastAssignedPartitionId(self._base.last_partition_id),
            ),
        )


__all__ = [
    "TRANSFORMS_HELP",
    "UpdateSpec",
    "default_partition_name",
    "resolve_source",
    "resolve_transform",
]
