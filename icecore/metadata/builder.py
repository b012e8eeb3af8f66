"""Apply metadata updates to a base and build the next table metadata, checked by the spec.

:class:`MetadataBuilder` is the one dispatcher that gives :mod:`icecore.metadata.updates`
their meaning (as Iceberg Java's ``TableMetadata.Builder``): it assigns schema, spec and sort
order ids (reusing the id of an identical entry, else the highest id + 1), records each
update that changed something, and builds the next :class:`TableMetadata` with a new
``last-updated-ms`` and a ``metadata-log`` entry for the replaced file, trimmed to
``write.metadata.previous-versions-max`` ("Table Metadata Fields"). It applies every
``TableUpdate`` of the REST catalog: besides schemas, specs, sort orders and properties, the
uuid, format version and location, snapshots and refs, statistics and partition statistics
files (one per snapshot), schema and spec removal (never the current schema or default spec,
nor a schema a remaining snapshot names) and v3 encryption keys. The deprecated v1
``schema`` and ``partition-spec`` fields follow the current schema and default spec when
:mod:`icecore.metadata.serde` writes the result.

Every schema, spec and sort order added is checked against the spec before it is accepted,
and the built metadata once more as a whole, so nothing that breaks a rule reaches a file:
field ids unique and at most 2147483447 ("Reserved Field IDs"); defaults only from v3
("Default values"); v3 types only in v3; identifier fields required, primitive, not
floating point, not in lists, maps or optional structs ("Identifier Field IDs"); partition
sources primitive, in structs only, accepted by their transform ("Partitioning"); v1 partition
field ids sequential from 1000 ("Partition Evolution"); new field ids above
``last-column-id`` (never reused).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import time
from collections.abc import Iterable, Mapping
from decimal import Decimal

from icecore.errors import CommitConflict, InvalidMetadata, Unsupported, ValidationError
from icecore.metadata.model import MetadataLogEntry, SnapshotLogEntry, TableMetadata
from icecore.metadata.serde import parse_metadata, serialize_metadata
from icecore.metadata.updates import (
    LAST_ADDED,
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    MetadataUpdate,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    UpgradeFormatVersion,
)
from icecore.partitioning import PARTITION_DATA_ID_START, PartitionSpec
from icecore.schema import Schema
from icecore.sorting import UNSORTED_ORDER_ID, UNSORTED_SORT_ORDER, SortOrder
from icecore.transforms import UnknownTransform
from icecore.types import (
    DecimalType,
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
    UnknownType,
    VariantType,
    check_type,
)
from icecore.values import from_json

MAIN_BRANCH = "main"
"""The branch that is the table's current snapshot ("Snapshot References")."""

MAX_FORMAT_VERSION = 3
"""The highest format version Icecore reads and writes."""

MAX_FIELD_ID = 2147483447
"""Spec "Reserved Field IDs": field ids above this are reserved for metadata columns."""

PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
"""Table property bounding the ``metadata-log`` (Iceberg Java's default: 100)."""

PREVIOUS_VERSIONS_MAX_DEFAULT = 100

RESERVED_PROPERTIES = frozenset(
    {
        "format-version",
        "uuid",
        "snapshot-count",
        "current-snapshot-id",
        "current-snapshot-summary",
        "current-snapshot-timestamp-ms",
        "current-schema",
        "default-partition-spec",
        "default-sort-order",
    }
)
"""Properties Iceberg Java derives from the metadata itself; a commit must not set them."""

COMPRESSION_CODEC = "write.metadata.compression-codec"
"""Table property: ``gzip`` writes ``.gz.metadata.json`` files (Iceberg Java's names)."""

DEFAULTS_MIN_FORMAT_VERSION = 3
"""Spec "Default values" (Appendix E, Version 3): field defaults exist from v3 on."""

_V3_TYPES = (
    UnknownType,
    TimestampNanoType,
    TimestamptzNanoType,
    VariantType,
    GeometryType,
    GeographyType,
)
_NULL_DEFAULT_TYPES = (UnknownType, VariantType, GeometryType, GeographyType)


# Checks against the spec -------------------------------------------------------------------


def same_schema(a: Schema, b: Schema) -> bool:
    """Whether two schemas have the same fields and identifier fields (ids ignored).

    This is when a new schema reuses an existing schema's id ("Schema Evolution": each
    distinct schema gets a unique id, an identical one keeps its id).
    """
    return a.fields == b.fields and sorted(a.identifier_field_ids) == sorted(b.identifier_field_ids)


def check_promotion(name: str, old: IcebergType, new: IcebergType) -> None:
    """Spec "Schema Evolution": the type promotions a column may go through.

    Raises:
        ValidationError: ``old`` cannot become ``new``.
    """
    if old == new:
        return
    if isinstance(old, IntegerType) and isinstance(new, LongType):
        return
    if isinstance(old, FloatType) and isinstance(new, DoubleType):
        return
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        if old.scale != new.scale:
            example = Decimal(1).scaleb(-old.scale) * 125  # 1.25 at scale 2, as stored
            unscaled = int(example.scaleb(old.scale))
            raise ValidationError(
                f"Cannot change column {name!r} from {old} to {new}: a decimal's scale is "
                f"fixed; files store unscaled values, so {example} (stored as {unscaled}) "
                f"would read as {Decimal(unscaled).scaleb(-new.scale)}; only the precision "
                "can widen."
            )
        if new.precision > old.precision:
            return
        raise ValidationError(
            f"Cannot change column {name!r} from {old} to {new}: decimal precision can only widen."
        )
    raise ValidationError(
        f"Cannot change column {name!r} from {old} to {new}: only int to long, float to "
        "double and wider decimal precision are allowed."
    )


def check_schema(schema: Schema, format_version: int) -> None:
    """Check one schema against the spec for a table of ``format_version``.

    Raises:
        ValidationError: one sentence naming the first field that breaks a rule.
    """
    for fid in sorted(schema.field_ids):
        f = schema.find_field(fid)
        if f is None:  # pragma: no cover - field_ids come from the same index
            continue
        name = schema.find_column_name(fid) or f.name
        if fid > MAX_FIELD_ID or fid < 0:
            raise ValidationError(
                f"Field {name!r} has id {fid}; field ids must be between 0 and {MAX_FIELD_ID}."
            )
        if isinstance(f.field_type, _V3_TYPES) and format_version < 3:
            raise ValidationError(
                f"Column {name!r} has type {f.field_type}, which needs format version 3; "
                f"this table is version {format_version}."
            )
        _check_defaults(name, f, format_version)
        if isinstance(f.field_type, StructType):
            _check_unique_names(name, f.field_type.fields)
    _check_unique_names(None, schema.fields)
    for f in schema.fields:
        check_type(f.field_type, f.name)
    for fid in schema.identifier_field_ids:
        check_identifier_field(schema, fid)


def _check_unique_names(parent: str | None, fields: Iterable[NestedField]) -> None:
    seen: dict[str, str] = {}
    where = f"struct {parent!r}" if parent is not None else "the table schema"
    for f in fields:
        key = f.name.lower()
        if key in seen:
            raise ValidationError(
                f"Columns {seen[key]!r} and {f.name!r} in {where} differ only in case or not at "
                "all; Spark resolves names ignoring case, so column names must differ."
            )
        seen[key] = f.name


def _check_defaults(name: str, f: NestedField, format_version: int) -> None:
    for key, value in (("initial-default", f.initial_default), ("write-default", f.write_default)):
        if value is None:
            continue
        if format_version < DEFAULTS_MIN_FORMAT_VERSION:
            raise ValidationError(
                f"Column {name!r} has a {key}; default values need format version 3, and "
                f"this table is version {format_version}."
            )
        if isinstance(f.field_type, _NULL_DEFAULT_TYPES):
            raise ValidationError(
                f"Column {name!r} of type {f.field_type} must default to null (spec: "
                "'Default values')."
            )
        if isinstance(f.field_type, StructType):
            if value != {}:
                raise ValidationError(
                    f"Struct column {name!r} may only default to null or {{}}; defaults of its "
                    "fields belong to those fields."
                )
            continue
        if isinstance(f.field_type, ListType | MapType):
            raise ValidationError(
                f"Column {name!r} is a {f.field_type}; only primitive and struct columns can "
                "have a non-null default."
            )
        try:
            from_json(f.field_type, value)
        except (InvalidMetadata, Unsupported) as e:
            raise ValidationError(
                f"Column {name!r} has {key} {value!r}, which is not a {f.field_type} value."
            ) from e


def check_identifier_field(schema: Schema, field_id: int) -> None:
    """Check an identifier field (spec "Identifier Field IDs").

    It must be required, primitive, not float/double, not in a list or map, and not below
    an optional struct.

    Raises:
        ValidationError: the field cannot identify rows.
    """
    f = schema.find_field(field_id)
    if f is None:
        raise ValidationError(f"Identifier field id {field_id} is not in the schema.")
    name = schema.find_column_name(field_id) or f.name
    if not f.field_type.is_primitive:
        raise ValidationError(f"Identifier field {name!r} must be a primitive, not {f.field_type}.")
    if isinstance(f.field_type, FloatType | DoubleType):
        raise ValidationError(f"Identifier field {name!r} cannot be {f.field_type} (spec rule).")
    if not f.required:
        raise ValidationError(
            f"Identifier field {name!r} must be required (rows would have null identifiers)."
        )
    parent = schema.parent_id(field_id)
    while parent is not None:
        p = schema.find_field(parent)
        if p is None:  # pragma: no cover - parents come from the same index
            break
        if isinstance(p.field_type, ListType | MapType):
            raise ValidationError(
                f"Identifier field {name!r} is inside the list or map {p.name!r}; identifier "
                "fields cannot be."
            )
        if not p.required:
            raise ValidationError(
                f"Identifier field {name!r} is inside the optional struct {p.name!r}; it could "
                "be null, so it cannot identify rows."
            )
        parent = schema.parent_id(parent)


def check_source(schema: Schema, source_id: int, what: str) -> IcebergType:
    """The type of a partition or sort source column, checked ("Partitioning").

    A source must exist, be primitive and sit in structs only (not in a list or map).

    Raises:
        ValidationError: it does not.
    """
    f = schema.find_field(source_id)
    if f is None:
        raise ValidationError(f"{what} uses column id {source_id}, which is not in the schema.")
    name = schema.find_column_name(source_id) or f.name
    if not f.field_type.is_primitive:
        raise ValidationError(f"{what} uses {name!r}, a {f.field_type}; sources must be primitive.")
    parent = schema.parent_id(source_id)
    while parent is not None:
        p = schema.find_field(parent)
        if p is not None and not isinstance(p.field_type, StructType):
            raise ValidationError(f"{what} uses {name!r}, which is inside a list or map.")
        parent = schema.parent_id(parent)
    return f.field_type


def check_spec(
    spec: PartitionSpec, schema: Schema, format_version: int, *, new: bool = True
) -> None:
    """Check a partition spec against a schema ("Partitioning", "Partition Evolution").

    Void fields may name dropped columns (v1 keeps removed fields as ``void``); fields with a
    transform Icecore does not know are left to the engine that wrote them. A spec that is
    already in the table (``new`` False) is only checked against the schema: the rules for
    names and v1 ids apply to specs being added.

    Raises:
        ValidationError: a source, transform, name or field id breaks a rule.
    """
    if new:
        _check_new_spec_fields(spec, format_version)
    for pf in spec.fields:
        what = f"Partition field {pf.name!r}"
        if pf.transform.is_void or isinstance(pf.transform, UnknownTransform):
            continue
        for source_id in pf.all_source_ids:
            source_type = check_source(schema, source_id, what)
            if not pf.transform.can_transform(source_type):
                raise ValidationError(
                    f"{what}: transform {pf.transform} cannot be applied to "
                    f"{schema.find_column_name(source_id)!r} of type {source_type}."
                )


def _check_new_spec_fields(spec: PartitionSpec, format_version: int) -> None:
    """Names non-empty and unique, ids unique, and in v1 numbered from 1000 in order."""
    names: set[str] = set()
    ids: set[int] = set()
    for position, pf in enumerate(spec.fields):
        if not pf.name:
            raise ValidationError("Partition field names cannot be empty.")
        if pf.name in names:
            raise ValidationError(f"Partition field name {pf.name!r} is used twice in one spec.")
        names.add(pf.name)
        if pf.field_id in ids:
            raise ValidationError(f"Partition field id {pf.field_id} is used twice in one spec.")
        ids.add(pf.field_id)
        expected = PARTITION_DATA_ID_START + position
        if format_version == 1 and pf.field_id != expected:
            raise ValidationError(
                f"Partition field {pf.name!r} has id {pf.field_id}, but v1 specs number fields "
                f"from {PARTITION_DATA_ID_START} in order (it must be {expected})."
            )


def check_sort_order(order: SortOrder, schema: Schema) -> None:
    """Check a sort order against a schema ("Sorting").

    Raises:
        ValidationError: a source or transform breaks a rule.
    """
    if order.order_id == UNSORTED_ORDER_ID and order.fields:
        raise ValidationError("Sort order id 0 is reserved for the unsorted order.")
    for sf in order.fields:
        if isinstance(sf.transform, UnknownTransform):
            continue
        what = f"Sort field {sf}"
        source_type = check_source(schema, sf.source_id, what)
        if not sf.transform.can_transform(source_type):
            raise ValidationError(
                f"Sort by {sf.transform}({schema.find_column_name(sf.source_id)}) is not possible "
                f"on type {source_type}."
            )


def check_metadata(md: TableMetadata) -> None:
    """Check built metadata as a whole before it is written.

    Each schema, spec and sort order was checked when it was added; here the ids and
    high-water marks across them, and that the default spec and sort order still fit the
    current schema (a schema change must not drop what they use).

    Raises:
        ValidationError: ids are duplicated or exceed their high-water marks, or the default
            spec or sort order does not fit the current schema.
    """
    for kind, ids in (
        ("schema", [s.schema_id for s in md.schemas]),
        ("partition spec", [s.spec_id for s in md.partition_specs]),
        ("sort order", [o.order_id for o in md.sort_orders]),
    ):
        if len(ids) != len(set(ids)):
            raise ValidationError(f"Two {kind}s would share an id ({sorted(ids)}).")
    highest = max((s.highest_field_id for s in md.schemas), default=0)
    if highest > md.last_column_id:
        raise ValidationError(
            f"A schema uses field id {highest}, above last-column-id {md.last_column_id}."
        )
    if md.format_version > 1:
        highest_pf = max((s.last_assigned_field_id for s in md.partition_specs), default=0)
        if highest_pf > md.last_partition_id:
            raise ValidationError(
                f"A partition spec uses field id {highest_pf}, above last-partition-id "
                f"{md.last_partition_id}."
            )
    schema = md.current_schema()
    check_spec(md.default_spec(), schema, md.format_version, new=False)
    check_sort_order(md.default_sort_order(), schema)


# The builder -------------------------------------------------------------------------------


class MetadataBuilder:
    """Applies updates to a base :class:`TableMetadata`; :meth:`build` makes the result.

    Args:
        base: the metadata the updates start from (never changed).
        now_ms: the commit's time: the new ``last-updated-ms`` and the ``snapshot-log``
            stamp of a ref moved to a snapshot not added in this commit (now, by default).
    """

    def __init__(self, base: TableMetadata, now_ms: int | None = None) -> None:
        self.base = base
        self.now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        # Everything the schema/spec/order/property fields below do not cover (snapshots,
        # refs, statistics, keys, uuid, location) evolves here, one replace per update.
        self._md = base
        self._added_snapshots: dict[int, int] = {}  # snapshot id -> timestamp-ms
        self.format_version = base.format_version
        self.schemas: list[Schema] = list(base.schemas)
        self.current_schema_id = base.current_schema_id
        self.last_column_id = base.last_column_id
        self.specs: list[PartitionSpec] = list(base.partition_specs)
        self.default_spec_id = base.default_spec_id
        self.last_partition_id = base.last_partition_id
        self.sort_orders: list[SortOrder] = list(base.sort_orders)
        self.default_sort_order_id = base.default_sort_order_id
        self.properties: dict[str, str] = dict(base.properties)
        self.changes: list[MetadataUpdate] = []
        self._last_added_schema: int | None = None
        self._last_added_spec: int | None = None
        self._last_added_order: int | None = None

    # The dispatcher ------------------------------------------------------------------------

    def apply(self, update: MetadataUpdate) -> MetadataBuilder:
        """Apply one update; records it in :attr:`changes` when it changed something.

        Raises:
            ValidationError: the update breaks a rule of the spec against this metadata.
        """
        match update:
            case AddSchema():
                self._add_schema(update)
            case SetCurrentSchema():
                self._set_current_schema(update.schema_id)
            case AddPartitionSpec():
                self._add_spec(update.spec)
            case SetDefaultSpec():
                self._set_default_spec(update.spec_id)
            case AddSortOrder():
                self._add_sort_order(update.order)
            case SetDefaultSortOrder():
                self._set_default_sort_order(update.order_id)
            case SetProperties():
                self._set_properties(update.updates)
            case RemoveProperties():
                self._remove_properties(update.removals)
            case RemoveSchemas():
                self._remove_schemas(update)
            case RemovePartitionSpecs():
                self._remove_specs(update)
            case _:
                self._apply_table_update(update)
        return self

    def _apply_table_update(self, update: MetadataUpdate) -> None:
        match update:
            case AssignUUID():
                self._assign_uuid(update)
            case UpgradeFormatVersion():
                self._upgrade(update)
            case SetLocation():
                self._set_location(update)
            case AddSnapshot():
                self._add_snapshot(update)
            case SetSnapshotRef():
                self._set_ref(update)
            case RemoveSnapshotRef():
                self._remove_ref(update)
            case RemoveSnapshots():
                self._remove_snapshots(update)
            case SetStatistics() | RemoveStatistics():
                self._statistics(update)
            case SetPartitionStatistics() | RemovePartitionStatistics():
                self._partition_statistics(update)
            case AddEncryptionKey() | RemoveEncryptionKey():
                self._encryption_keys(update)
            case _:  # pragma: no cover - the union is closed
                raise Unsupported(f"Unknown metadata update {update!r}.")

    def apply_all(self, updates: Iterable[MetadataUpdate]) -> MetadataBuilder:
        """Apply updates in order."""
        for update in updates:
            self.apply(update)
        return self

    # Schemas -------------------------------------------------------------------------------

    def current_schema(self) -> Schema:
        """The schema that is current in the metadata being built."""
        return next(s for s in self.schemas if s.schema_id == self.current_schema_id)

    def _add_schema(self, update: AddSchema) -> None:
        schema = update.schema
        last = update.last_column_id
        if last is None:
            last = max(self.last_column_id, schema.highest_field_id)
        if last < self.last_column_id:
            raise ValidationError(
                f"The update would lower last-column-id from {self.last_column_id} to "
                f"{last}; ids must never be reused."
            )
        existing = next((s for s in self.schemas if same_schema(s, schema)), None)
        if existing is None:
            self._check_new_field_ids(schema, last)
            check_schema(schema, self.format_version)
            new_id = max((s.schema_id for s in self.schemas), default=-1) + 1
            schema = dataclasses.replace(schema, schema_id=new_id)
            self.schemas.append(schema)
        else:
            schema = existing
        self._last_added_schema = schema.schema_id
        if existing is None or last != self.last_column_id:
            self.last_column_id = last
            self.changes.append(AddSchema(schema, last))

    def _check_new_field_ids(self, schema: Schema, new_last_column_id: int) -> None:
        """New fields get ids above last-column-id, never an id a dropped column had.

        A field id must be in the current schema (an existing column) or above this
        metadata's ``last-column-id`` (a new column). This is what stops an update computed
        on a stale base from reusing the id of a column added and dropped meanwhile.
        """
        current = self.current_schema()
        current_ids = current.field_ids
        for fid in sorted(schema.field_ids & current_ids):
            self._check_same_column(current, schema, fid)
        if schema.highest_field_id > new_last_column_id:
            raise ValidationError(
                f"The new schema uses field id {schema.highest_field_id}, above its "
                f"last-column-id {new_last_column_id}."
            )
        for fid in sorted(schema.field_ids - current_ids):
            if fid <= self.last_column_id:
                raise ValidationError(
                    f"Field {schema.find_column_name(fid)!r} would reuse field id {fid}; the "
                    f"table has assigned ids up to {self.last_column_id}, so new fields must "
                    "be numbered above that."
                )
            f = schema.find_field(fid)
            parent = schema.parent_id(fid)
            added_alone = parent is None or parent in current_ids
            if f is not None and added_alone and f.required and f.initial_default is None:
                raise ValidationError(
                    f"Cannot add required column {schema.find_column_name(fid)!r} without a "
                    "non-null initial default: existing rows have no value for it."
                )

    @staticmethod
    def _check_same_column(current: Schema, schema: Schema, fid: int) -> None:
        """An id kept from the current schema names the same column ("Schema Evolution").

        Same parent, same kind of type, and a primitive only widened: a field keeps its id.
        """
        old, new = current.find_field(fid), schema.find_field(fid)
        assert old is not None and new is not None
        name = schema.find_column_name(fid)
        if current.parent_id(fid) != schema.parent_id(fid) or (
            type(old.field_type) is not type(new.field_type)
            and not (old.field_type.is_primitive and new.field_type.is_primitive)
        ):
            raise ValidationError(
                f"Field id {fid} would move from {current.find_column_name(fid)!r} to {name!r}; "
                "a field keeps its id and its place, and new fields need new ids."
            )
        if old.field_type.is_primitive:
            check_promotion(name or str(fid), old.field_type, new.field_type)

    @staticmethod
    def _resolve(requested: int, last_added: int | None, kind: str) -> int:
        """``requested``, or for :data:`LAST_ADDED` the id the last ``add-*`` resolved to."""
        if requested != LAST_ADDED:
            return requested
        if last_added is None:
            raise ValidationError(f"Cannot set the last added {kind}: none was added.")
        return last_added

    def _set_current_schema(self, schema_id: int) -> None:
        schema_id = self._resolve(schema_id, self._last_added_schema, "schema")
        if schema_id == self.current_schema_id:
            return
        if not any(s.schema_id == schema_id for s in self.schemas):
            raise ValidationError(f"Cannot make schema {schema_id} current: there is no such id.")
        self.current_schema_id = schema_id
        self.changes.append(SetCurrentSchema(schema_id))

    # Partition specs -----------------------------------------------------------------------

    def _add_spec(self, spec: PartitionSpec) -> None:
        existing = next((s for s in self.specs if s.compatible_with(spec)), None)
        if existing is not None:
            self._last_added_spec = existing.spec_id
            return
        check_spec(spec, self.current_schema(), self.format_version)
        new_id = max((s.spec_id for s in self.specs), default=-1) + 1
        spec = dataclasses.replace(spec, spec_id=new_id)
        self.specs.append(spec)
        self.last_partition_id = max(self.last_partition_id, spec.last_assigned_field_id)
        self._last_added_spec = new_id
        self.changes.append(AddPartitionSpec(spec))

    def _set_default_spec(self, spec_id: int) -> None:
        spec_id = self._resolve(spec_id, self._last_added_spec, "partition spec")
        if spec_id == self.default_spec_id:
            return
        if not any(s.spec_id == spec_id for s in self.specs):
            raise ValidationError(f"Cannot make partition spec {spec_id} the default: no such id.")
        self.default_spec_id = spec_id
        self.changes.append(SetDefaultSpec(spec_id))

    # Sort orders ---------------------------------------------------------------------------

    def _add_sort_order(self, order: SortOrder) -> None:
        if order.is_unsorted:
            if not any(o.order_id == UNSORTED_ORDER_ID for o in self.sort_orders):
                self.sort_orders.insert(0, UNSORTED_SORT_ORDER)
                self.changes.append(AddSortOrder(UNSORTED_SORT_ORDER))
            self._last_added_order = UNSORTED_ORDER_ID
            return
        existing = next((o for o in self.sort_orders if o.fields == order.fields), None)
        if existing is not None:
            self._last_added_order = existing.order_id
            return
        new_id = max((o.order_id for o in self.sort_orders), default=UNSORTED_ORDER_ID) + 1
        order = dataclasses.replace(order, order_id=max(new_id, UNSORTED_ORDER_ID + 1))
        check_sort_order(order, self.current_schema())
        self.sort_orders.append(order)
        self._last_added_order = order.order_id
        self.changes.append(AddSortOrder(order))

    def _set_default_sort_order(self, order_id: int) -> None:
        order_id = self._resolve(order_id, self._last_added_order, "sort order")
        if order_id == self.default_sort_order_id:
            return
        if not any(o.order_id == order_id for o in self.sort_orders):
            raise ValidationError(f"Cannot make sort order {order_id} the default: no such id.")
        self.default_sort_order_id = order_id
        self.changes.append(SetDefaultSortOrder(order_id))

    # Properties ----------------------------------------------------------------------------

    def _set_properties(self, updates: Mapping[str, str]) -> None:
        reserved = sorted(set(updates) & RESERVED_PROPERTIES)
        if reserved:
            raise ValidationError(
                f"Property {reserved[0]!r} is reserved: Iceberg derives it from the metadata, "
                "so it cannot be set."
            )
        for key, value in updates.items():
            if not isinstance(key, str) or not isinstance(value, str) or not key:
                raise ValidationError(f"Property {key!r}={value!r}: keys and values are strings.")
        changed = {k: v for k, v in updates.items() if self.properties.get(k) != v}
        if changed:
            self.properties.update(changed)
            self.changes.append(SetProperties(changed))

    def _remove_properties(self, removals: Iterable[str]) -> None:
        reserved = sorted(set(removals) & RESERVED_PROPERTIES)
        if reserved:
            raise ValidationError(f"Property {reserved[0]!r} is reserved and cannot be removed.")
        present = tuple(k for k in removals if k in self.properties)
        for key in present:
            del self.properties[key]
        if present:
            self.changes.append(RemoveProperties(present))

    # Schemas and specs no longer used -----------------------------------------------------

    def _remove_schemas(self, update: RemoveSchemas) -> None:
        """Drop schemas (REST ``remove-schemas``, sent by expiry with ``clean_expired_metadata``).

        As Iceberg Java's ``TableMetadata.Builder.removeSchemas``, the current schema cannot
        go; Icecore also refuses a schema a remaining snapshot names as its ``schema-id``
        ("Snapshots"): readers of that snapshot resolve its columns with it. Ids not in the
        table are ignored.
        """
        ids = set(update.schema_ids)
        if self.current_schema_id in ids:
            raise ValidationError(
                f"Cannot remove schema {self.current_schema_id}: it is the current schema."
            )
        used = sorted(
            s.schema_id
            for s in self._md.snapshots
            if s.schema_id is not None and s.schema_id in ids
        )
        if used:
            raise ValidationError(
                f"Cannot remove schema {used[0]}: a snapshot still in the table was written "
                "with it; expire that snapshot first."
            )
        gone = tuple(s.schema_id for s in self.schemas if s.schema_id in ids)
        if gone:
            self.schemas = [s for s in self.schemas if s.schema_id not in ids]
            self.changes.append(RemoveSchemas(gone))

    def _remove_specs(self, update: RemovePartitionSpecs) -> None:
        """Drop partition specs (REST ``remove-partition-specs``).

        As Iceberg Java's ``TableMetadata.Builder.removeSpecs``, the default spec cannot go.
        Whether a live manifest still uses a spec is not in the metadata: the writer that
        found the spec unused pins the default spec and every branch (requirements
        ``assert-default-spec-id`` and ``assert-ref-snapshot-id``, as Java's
        ``UpdateRequirements``), so the commit fails if a snapshot was added since.
        """
        ids = set(update.spec_ids)
        if self.default_spec_id in ids:
            raise ValidationError(
                f"Cannot remove partition spec {self.default_spec_id}: it is the default spec."
            )
        gone = tuple(s.spec_id for s in self.specs if s.spec_id in ids)
        if gone:
            self.specs = [s for s in self.specs if s.spec_id not in ids]
            self.changes.append(RemovePartitionSpecs(gone))

    # Table identity, format version, location ----------------------------------------------

    def _replace(self, update: MetadataUpdate, **changes: object) -> None:
        self._md = dataclasses.replace(self._md, **changes)  # type: ignore[arg-type]
        self.changes.append(update)

    def _assign_uuid(self, update: AssignUUID) -> None:
        """``table-uuid`` is set once ("Table Metadata Fields"); another value is refused."""
        current = self._md.table_uuid
        if current == update.uuid:
            return
        if current is not None:
            raise ValidationError(
                f"Cannot assign uuid {update.uuid}: the table's uuid is {current}."
            )
        self._replace(update, table_uuid=update.uuid)

    def _upgrade(self, update: UpgradeFormatVersion) -> None:
        """Raise ``format-version`` ("Format Versioning"); v3 starts row lineage at 0."""
        version = update.format_version
        if version == self.format_version:
            return
        if version < self.format_version or version > MAX_FORMAT_VERSION:
            raise ValidationError(
                f"Cannot change format-version from {self.format_version} to {version}."
            )
        self.format_version = version
        next_row_id = self._md.next_row_id
        if version >= 3 and next_row_id is None:
            next_row_id = 0
        self._replace(update, format_version=version, next_row_id=next_row_id)

    def _set_location(self, update: SetLocation) -> None:
        if not update.location:
            raise ValidationError("A table location cannot be empty.")
        self._replace(update, location=update.location.rstrip("/"))

    # Snapshots and refs --------------------------------------------------------------------

    def _add_snapshot(self, update: AddSnapshot) -> None:
        """Add a snapshot ("Snapshots", "Sequence Numbers", v3 "Row Lineage").

        Raises:
            CommitConflict: its sequence number or first row id is below what the table
                assigned meanwhile (the writer must retry on the new state).
        """
        snapshot, md = update.snapshot, self._md
        if md.snapshot_by_id(snapshot.snapshot_id) is not None:
            raise ValidationError(f"Snapshot {snapshot.snapshot_id} exists already.")
        if (
            self.format_version > 1
            and snapshot.parent_snapshot_id is not None
            and snapshot.sequence_number <= md.last_sequence_number
        ):
            raise CommitConflict(
                f"snapshot {snapshot.snapshot_id} has sequence number "
                f"{snapshot.sequence_number}, not above the table's {md.last_sequence_number}"
            )
        next_row_id = md.next_row_id
        if self.format_version >= 3:
            if snapshot.first_row_id is None or snapshot.added_rows is None:
                raise ValidationError("A v3 snapshot needs first-row-id and added-rows.")
            if next_row_id is not None and snapshot.first_row_id < next_row_id:
                raise CommitConflict(
                    f"snapshot first-row-id {snapshot.first_row_id} is below the table's "
                    f"next-row-id {next_row_id}"
                )
            next_row_id = snapshot.first_row_id + snapshot.added_rows
        self._added_snapshots[snapshot.snapshot_id] = snapshot.timestamp_ms
        self._replace(
            update,
            snapshots=(*md.snapshots, snapshot),
            last_sequence_number=max(md.last_sequence_number, snapshot.sequence_number),
            next_row_id=next_row_id,
        )

    def _set_ref(self, update: SetSnapshotRef) -> None:
        """Create or move a ref; moving ``main`` makes the snapshot current and logs it."""
        name, ref, md = update.ref_name, update.ref, self._md
        if not name:
            raise ValidationError("A branch or tag needs a name.")
        if md.snapshot_by_id(ref.snapshot_id) is None:
            raise ValidationError(f"Cannot point {name} at unknown snapshot {ref.snapshot_id}.")
        refs = {**md.refs, name: ref}
        if name != MAIN_BRANCH:
            self._replace(update, refs=refs)
            return
        stamp = self._added_snapshots.get(ref.snapshot_id, self.now_ms)
        log = md.snapshot_log
        if md.current_snapshot_id != ref.snapshot_id:
            log = (*log, SnapshotLogEntry(stamp, ref.snapshot_id))
        self._replace(update, refs=refs, current_snapshot_id=ref.snapshot_id, snapshot_log=log)

    def _remove_ref(self, update: RemoveSnapshotRef) -> None:
        md = self._md
        refs = {k: v for k, v in md.refs.items() if k != update.ref_name}
        current = None if update.ref_name == MAIN_BRANCH else md.current_snapshot_id
        self._replace(update, refs=refs, current_snapshot_id=current)

    def _remove_snapshots(self, update: RemoveSnapshots) -> None:
        """Expire snapshots with their refs and statistics files.

        The snapshot log keeps only what follows the last removed entry (Iceberg Java), so
        it never names a snapshot that is gone.
        """
        gone, md = set(update.snapshot_ids), self._md
        refs = {k: v for k, v in md.refs.items() if v.snapshot_id not in gone}
        current = None if md.current_snapshot_id in gone else md.current_snapshot_id
        log: list[SnapshotLogEntry] = []
        for entry in md.snapshot_log:
            if entry.snapshot_id in gone:
                log.clear()
            else:
                log.append(entry)
        self._replace(
            update,
            snapshots=tuple(s for s in md.snapshots if s.snapshot_id not in gone),
            refs=refs,
            current_snapshot_id=current,
            snapshot_log=tuple(log),
            statistics=tuple(s for s in md.statistics if s.snapshot_id not in gone),
            partition_statistics=tuple(
                s for s in md.partition_statistics if s.snapshot_id not in gone
            ),
        )

    # Statistics and encryption keys --------------------------------------------------------

    def _statistics(self, update: SetStatistics | RemoveStatistics) -> None:
        """Spec "Table Statistics": at most one statistics file per snapshot.

        ``set-statistics`` replaces the snapshot's file (Iceberg Java's ``setStatistics``);
        ``remove-statistics`` of a snapshot without one changes nothing.
        """
        files = self._md.statistics
        if isinstance(update, SetStatistics):
            sid = update.statistics.snapshot_id
            kept = tuple(f for f in files if f.snapshot_id != sid)
            self._replace(update, statistics=(*kept, update.statistics))
            return
        kept = tuple(f for f in files if f.snapshot_id != update.snapshot_id)
        if len(kept) != len(files):
            self._replace(update, statistics=kept)

    def _partition_statistics(
        self, update: SetPartitionStatistics | RemovePartitionStatistics
    ) -> None:
        """Spec "Partition Statistics": at most one partition statistics file per snapshot."""
        files = self._md.partition_statistics
        if isinstance(update, SetPartitionStatistics):
            sid = update.partition_statistics.snapshot_id
            kept = tuple(f for f in files if f.snapshot_id != sid)
            self._replace(update, partition_statistics=(*kept, update.partition_statistics))
            return
        kept = tuple(f for f in files if f.snapshot_id != update.snapshot_id)
        if len(kept) != len(files):
            self._replace(update, partition_statistics=kept)

    def _encryption_keys(self, update: AddEncryptionKey | RemoveEncryptionKey) -> None:
        """Spec "Encryption Keys" (v3): keys by unique ``key-id``.

        A key id is never given two keys, and a key a remaining snapshot's ``key-id`` names
        stays (its manifest list could not be decrypted without it).
        """
        keys = self._md.encryption_keys
        if isinstance(update, AddEncryptionKey):
            key = update.encryption_key
            if self.format_version < 3:
                raise ValidationError(
                    f"Encryption keys need format version 3; this table is version "
                    f"{self.format_version}."
                )
            same = next((k for k in keys if k.key_id == key.key_id), None)
            if same == key:
                return
            if same is not None:
                raise ValidationError(f"Encryption key {key.key_id!r} exists already.")
            self._replace(update, encryption_keys=(*keys, key))
            return
        if any(s.key_id == update.key_id for s in self._md.snapshots):
            raise ValidationError(
                f"Cannot remove encryption key {update.key_id!r}: a snapshot still uses it."
            )
        kept = tuple(k for k in keys if k.key_id != update.key_id)
        if len(kept) != len(keys):
            self._replace(update, encryption_keys=kept)

    # Building ------------------------------------------------------------------------------

    def build(self, previous_location: str | None, now_ms: int | None = None) -> TableMetadata:
        """The new metadata: the base with every applied update, checked as a whole.

        Args:
            previous_location: where the base metadata file is; it enters ``metadata-log``
                with the base's ``last-updated-ms``. None for metadata not yet in a file.
            now_ms: the new ``last-updated-ms`` (the builder's ``now_ms``, by default); never
                below the base's.

        Raises:
            ValidationError: the result breaks a rule of the spec.
        """
        base = self.base
        now = self.now_ms if now_ms is None else now_ms
        log = list(base.metadata_log)
        if previous_location is not None:
            keep = max(1, _int_property(self.properties, PREVIOUS_VERSIONS_MAX))
            log.append(MetadataLogEntry(base.last_updated_ms, previous_location))
            log = log[-keep:]
        built = dataclasses.replace(
            self._md,
            format_version=self.format_version,
            last_updated_ms=max(now, base.last_updated_ms),
            last_column_id=self.last_column_id,
            schemas=tuple(self.schemas),
            current_schema_id=self.current_schema_id,
            partition_specs=tuple(self.specs),
            default_spec_id=self.default_spec_id,
            last_partition_id=self.last_partition_id,
            sort_orders=tuple(self.sort_orders),
            default_sort_order_id=self.default_sort_order_id,
            properties=dict(self.properties),
            metadata_log=tuple(log),
        )
        check_metadata(built)
        return built


def _int_property(properties: Mapping[str, str], key: str) -> int:
    raw = properties.get(key)
    if raw is None:
        return PREVIOUS_VERSIONS_MAX_DEFAULT
    try:
        return int(raw)
    except ValueError as e:
        raise ValidationError(f"Table property {key}={raw!r} must be an integer.") from e


def is_gzip(md: TableMetadata) -> bool:
    """Whether metadata files of this table are written gzip-compressed."""
    return md.properties.get(COMPRESSION_CODEC, "none").strip().lower() == "gzip"


def metadata_file_suffix(md: TableMetadata) -> str:
    """``.gz.metadata.json`` or ``.metadata.json``, as Iceberg Java names metadata files."""
    return ".gz.metadata.json" if is_gzip(md) else ".metadata.json"


def encode_metadata(md: TableMetadata) -> bytes:
    """The bytes of the metadata file for ``md``, re-validated strictly before any write.

    The JSON is parsed back as a reader will parse it; it must give the same JSON again and
    pass :func:`check_metadata`, or nothing is written.

    Raises:
        ValidationError: the metadata breaks a rule of the spec.
        InvalidMetadata: the JSON would not read back as written.
    """
    obj = serialize_metadata(md)
    data = json.dumps(obj, indent=2).encode("utf-8")
    reparsed = parse_metadata(data, location="<new metadata>")
    check_metadata(reparsed)
    if serialize_metadata(reparsed) != obj:
        raise InvalidMetadata(
            "The new metadata would not read back as written; nothing was written."
        )
    return gzip.compress(data, mtime=0) if is_gzip(md) else data


def apply_updates(base: TableMetadata, updates: Iterable[MetadataUpdate]) -> MetadataBuilder:
    """A builder with ``updates`` applied to ``base`` (see :class:`MetadataBuilder`)."""
    return MetadataBuilder(base).apply_all(updates)


__all__ = [
    "COMPRESSION_CODEC",
    "DEFAULTS_MIN_FORMAT_VERSION",
    "MAX_FIELD_ID",
    "PREVIOUS_VERSIONS_MAX",
    "RESERVED_PROPERTIES",
    "MetadataBuilder",
    "apply_updates",
    "check_identifier_field",
    "check_metadata",
    "check_promotion",
    "check_schema",
    "check_sort_order",
    "check_source",
    "check_spec",
    "encode_metadata",
    "is_gzip",
    "metadata_file_suffix",
    "same_schema",
]
