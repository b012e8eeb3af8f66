"""UpdateSchema: add, drop, rename, widen, move and re-document columns, checked by the spec.

Implements "Schema Evolution", "Default values", "Identifier Field IDs" and "Reserved Field
IDs" (v3 defaults from the latest spec). Columns are found by name and changed by field id,
as Iceberg Java's ``SchemaUpdate`` does (names as in PyIceberg's ``UpdateSchema``):

* new columns (top level, in structs, in structs inside lists and maps) get ids above the
  table's ``last-column-id``, nested ids included, never an id used before;
* a required column can only be added with a non-null initial default (v3 only): rows
  written before it exist have no value for it;
* types only widen: ``int`` to ``long``, ``float`` to ``double``, a decimal's precision
  (its scale is fixed, "Primitive Types" note 1: ``decimal(12,2)`` read as ``decimal(12,3)``
  turns 1.25 into 0.125);
* a column becomes required only when it is added in the same change with a default;
* identifier fields must be required primitives, not floating point, outside lists, maps and
  optional structs, and cannot be dropped while they identify rows;
* a column cannot be dropped while the default partition spec or sort order uses it, nor
  (unless explicitly allowed, with a warning) while files partitioned by an older spec that
  uses it are still live.

The result is a new schema (or the id of an identical existing one) made current, with
``schema.name-mapping.default`` kept in step when the table has one, and per-column
properties (metrics, bloom filters) renamed or dropped with their column.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from icecore.errors import InvalidMetadata, Unsupported, ValidationError
from icecore.evolution.base import PendingUpdate, Plan, Stage
from icecore.evolution.commit import live_spec_ids
from icecore.evolution.name_mapping import update_name_mapping
from icecore.evolution.type_text import parse_type
from icecore.metadata.builder import MAX_FIELD_ID, check_promotion, same_schema
from icecore.metadata.requirements import (
    AssertCurrentSchemaId,
    AssertLastAssignedFieldId,
    AssertNoLiveFilesInSpecs,
    AssertTableUUID,
    Requirement,
)
from icecore.metadata.updates import (
    LAST_ADDED,
    AddSchema,
    MetadataUpdate,
    RemoveProperties,
    SetCurrentSchema,
    SetProperties,
)
from icecore.read import NAME_MAPPING_PROPERTY
from icecore.schema import Schema
from icecore.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestamptzNanoType,
    check_type,
)
from icecore.values import datetime_to_micros, from_json, to_json

ROOT = -1
"""The parent id of top-level columns."""

COLUMN_PROPERTY_PREFIXES = (
    "write.metadata.metrics.column.",
    "write.parquet.bloom-filter-enabled.column.",
    "write.parquet.stats-enabled.column.",
)
"""Table properties keyed by a column name; they follow renames and drops (as in Java)."""

Path = str | Sequence[str]
"""A column: a dotted name (``location.lat``) or its parts (for names containing dots)."""


@dataclass(frozen=True, slots=True)
class _Move:
    field_id: int
    kind: str  # "first", "before" or "after"
    other: int | None = None


def _name(path: Path) -> str:
    return path if isinstance(path, str) else ".".join(path)


def _parts(path: Path) -> list[str]:
    return path.split(".") if isinstance(path, str) else list(path)


def default_to_json(field_type: IcebergType, value: Any, name: str) -> Any:
    """A default value as the JSON single value the schema stores (Appendix D).

    Accepts the Python value (``5``, ``Decimal("1.25")``, ``date(2024, 1, 1)``,
    ``datetime``), or its text (``"5"``, ``"2024-01-01"``, ``"1.25"``), or ``{}`` for a
    struct whose fields carry their own defaults.

    Raises:
        ValidationError: the value is not one of ``field_type``.
    """
    if value is None:
        return None
    if isinstance(field_type, StructType):
        if value != {}:
            raise ValidationError(
                f"Struct column {name!r} may only default to {{}} (its fields carry their "
                "own defaults) or null."
            )
        return {}
    try:
        if isinstance(value, str) and not isinstance(field_type, StringType):
            try:
                python = from_json(field_type, value)
            except InvalidMetadata:
                python = from_json(field_type, json.loads(value))
        elif isinstance(value, dt.datetime):
            micros = datetime_to_micros(value)
            nanos = isinstance(field_type, TimestampNanoType | TimestamptzNanoType)
            python = micros * 1000 if nanos else micros
        else:
            python = value
        return to_json(field_type, python)
    except (InvalidMetadata, Unsupported, ValidationError, ValueError, TypeError) as e:
        raise ValidationError(
            f"Default {value!r} for column {name!r} is not a valid {field_type} value."
        ) from e


class UpdateSchema(PendingUpdate):
    """A schema change (spec "Schema Evolution"); see the module docstring for the rules.

    Args:
        transaction: where the change is staged (see :mod:`icecore.evolution.transaction`).
        case_sensitive: match column names exactly (default) or ignoring case.
    """

    def __init__(self, transaction: Stage, *, case_sensitive: bool = True) -> None:
        super().__init__(transaction)
        self._schema: Schema = self._base.current_schema()
        self._case_sensitive = case_sensitive
        self._last_column_id = self._base.last_column_id
        self._deletes: dict[int, bool] = {}  # id -> dropping a live old-spec source allowed
        self._updates: dict[int, NestedField] = {}
        self._adds: dict[int, list[int]] = {}
        self._added: dict[int, NestedField] = {}
        self._added_parent: dict[int, int] = {}
        self._added_names: dict[str, int] = {}
        self._moves: dict[int, list[_Move]] = {}
        self._identifier_names: tuple[str, ...] | None = None

    def case_sensitive(self, case_sensitive: bool) -> UpdateSchema:
        """Match column names exactly (True) or ignoring case (False)."""
        self._case_sensitive = case_sensitive
        return self

    # Finding columns -----------------------------------------------------------------------

    def _key(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()

    def _find(self, path: Path) -> NestedField | None:
        try:
            return self._schema.find_field_by_name(_name(path), self._case_sensitive)
        except InvalidMetadata as e:
            raise ValidationError(str(e)) from e

    def _require(self, path: Path, verb: str) -> NestedField:
        found = self._find(path)
        if found is None:
            raise ValidationError(
                f"Cannot {verb} column {_name(path)!r}: the table has no such column."
            )
        return found

    def _find_for_update(self, path: Path, verb: str) -> NestedField:
        added = self._added_names.get(self._key(_name(path)))
        if added is not None:
            return self._added[added]
        found = self._require(path, verb)
        if found.field_id in self._deletes:
            raise ValidationError(f"Cannot {verb} column {_name(path)!r}: it is being dropped.")
        return self._updates.get(found.field_id, found)

    def _set(self, updated: NestedField) -> None:
        if updated.field_id in self._added:
            self._added[updated.field_id] = updated
        else:
            self._updates[updated.field_id] = updated

    def _parent_of(self, field_id: int) -> int:
        if field_id in self._added_parent:
            return self._added_parent[field_id]
        parent = self._schema.parent_id(field_id)
        return ROOT if parent is None else parent

    def _next_id(self) -> int:
        self._last_column_id += 1
        if self._last_column_id > MAX_FIELD_ID:
            raise ValidationError(
                f"No field ids are left: ids above {MAX_FIELD_ID} are reserved for metadata "
                "columns (spec 'Reserved Field IDs')."
            )
        return self._last_column_id

    def _fresh_ids(self, t: IcebergType) -> IcebergType:
        """``t`` with new ids for every nested field: a struct's fields, then their types."""
        if isinstance(t, StructType):
            ids = [self._next_id() for _ in t.fields]
            return StructType(
                tuple(
                    dataclasses.replace(f, field_id=i, field_type=self._fresh_ids(f.field_type))
                    for i, f in zip(ids, t.fields, strict=True)
                )
            )
        if isinstance(t, ListType):
            element_id = self._next_id()
            return ListType(element_id, self._fresh_ids(t.element_type), t.element_required)
        if isinstance(t, MapType):
            key_id, value_id = self._next_id(), self._next_id()
            return MapType(
                key_id,
                self._fresh_ids(t.key_type),
                value_id,
                self._fresh_ids(t.value_type),
                t.value_required,
            )
        return t

    # Changes -------------------------------------------------------------------------------

    def add_column(
        self,
        path: Path,
        field_type: IcebergType | str,
        doc: str | None = None,
        required: bool = False,
        default: Any = None,
    ) -> UpdateSchema:
        """Add a column at the end of its struct.

        ``a.b`` adds ``b`` to struct ``a``; in a list of structs or a map with struct
        values, to the element or value struct.

        Args:
            path: the new column's name, dotted for a nested column.
            field_type: the type, as a type or as text (``long``, ``struct<x: int>``).
            doc: the column's comment.
            required: whether values may not be null (needs a non-null ``default``, v3).
            default: the value of existing rows and of rows written without it (v3 only:
                the field's ``initial-default`` and ``write-default``).

        Raises:
            ValidationError: the column exists, the parent is not a struct, the type or
                default is invalid, or a required column has no default.
        """
        parts = _parts(path)
        name, parent_parts = parts[-1], parts[:-1]
        if not name:
            raise ValidationError("Cannot add a column with an empty name.")
        parent_id, parent_name = ROOT, ""
        if parent_parts:
            parent = self._find(parent_parts)
            if parent is None:
                raise ValidationError(
                    f"Cannot add column {_name(path)!r}: there is no column "
                    f"{'.'.join(parent_parts)!r} to add it to."
                )
            holder = parent
            if isinstance(holder.field_type, MapType):
                holder = holder.field_type.value_field
            elif isinstance(holder.field_type, ListType):
                holder = holder.field_type.element_field
            if not isinstance(holder.field_type, StructType):
                raise ValidationError(
                    f"Cannot add column {_name(path)!r}: {'.'.join(parent_parts)!r} is a "
                    f"{parent.field_type}, not a struct."
                )
            if parent.field_id in self._deletes or holder.field_id in self._deletes:
                raise ValidationError(
                    f"Cannot add column {_name(path)!r}: its parent is being dropped."
                )
            parent_id = holder.field_id
            parent_name = self._schema.find_column_name(holder.field_id) or ""
        full_name = f"{parent_name}.{name}" if parent_name else name
        existing = self._find(full_name)
        if (existing is not None and existing.field_id not in self._deletes) or (
            self._key(full_name) in self._added_names
        ):
            raise ValidationError(f"Cannot add column {full_name!r}: it already exists.")
        new_type = _checked_type(field_type, full_name)
        if self._base.format_version < 3 and (required or default is not None):
            version = self._base.format_version
            if required:
                raise ValidationError(
                    f"Cannot add required column {full_name!r}: rows already written need a "
                    f"default for it, and default values need format version 3 (this table "
                    f"is {version}); add it as an optional column."
                )
            raise ValidationError(
                f"Cannot add column {full_name!r} with a default: default values need format "
                f"version 3 (this table is {version}); add it without a default."
            )
        initial = default_to_json(new_type, default, full_name)
        if required and initial is None:
            raise ValidationError(
                f"Cannot add required column {full_name!r} without a non-null default: rows "
                "already written have no value for it; give default=... or add it optional."
            )
        new_id = self._next_id()
        added = NestedField(
            field_id=new_id,
            name=name,
            field_type=self._fresh_ids(new_type),
            required=required,
            doc=doc,
            initial_default=initial,
            write_default=initial,
        )
        self._added[new_id] = added
        self._added_parent[new_id] = parent_id
        self._added_names[self._key(full_name)] = new_id
        self._adds.setdefault(parent_id, []).append(new_id)
        return self

    def delete_column(
        self, path: Path, *, allow_live_partition_source: bool = False
    ) -> UpdateSchema:
        """Drop a column (and everything nested in it).

        Args:
            path: the column.
            allow_live_partition_source: drop it even though live files were partitioned
                by an older spec that uses it (a warning is issued; readers of those files
                lose that partition value).

        Raises:
            ValidationError: no such column, or it has pending additions or changes.
        """
        found = self._require(path, "drop")
        if found.field_id in self._adds:
            raise ValidationError(
                f"Cannot drop column {_name(path)!r}: columns are being added to it."
            )
        if found.field_id in self._updates:
            raise ValidationError(f"Cannot drop column {_name(path)!r}: it is also being changed.")
        if self._in_list_or_map(found.field_id):
            raise ValidationError(
                f"Cannot drop {_name(path)!r}: a list's element and a map's key and value "
                "cannot be dropped, only the list or map."
            )
        self._deletes[found.field_id] = allow_live_partition_source
        return self

    def rename_column(self, path_from: Path, new_name: str) -> UpdateSchema:
        """Rename a column (its id, and so its data, stay); ``new_name`` is the last part.

        Raises:
            ValidationError: no such column, it is being dropped, or the name is empty.
        """
        found = self._require(path_from, "rename")
        if found.field_id in self._deletes:
            raise ValidationError(
                f"Cannot rename column {_name(path_from)!r}: it is being dropped."
            )
        if not new_name:
            raise ValidationError(f"Cannot rename column {_name(path_from)!r} to an empty name.")
        if self._in_list_or_map(found.field_id):
            raise ValidationError(
                f"Cannot rename {_name(path_from)!r}: list elements and map keys and values "
                "have fixed names."
            )
        current = self._updates.get(found.field_id, found)
        self._updates[found.field_id] = dataclasses.replace(current, name=new_name)
        return self

    def update_column(
        self,
        path: Path,
        field_type: IcebergType | str | None = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> UpdateSchema:
        """Widen a column's type, change its nullability or its doc.

        Raises:
            ValidationError: the promotion is not allowed, the column is nested, or it
                cannot become required (see :meth:`make_column_required`).
        """
        name = _name(path)
        current = self._find_for_update(path, "update")
        if field_type is not None:
            new_type = _checked_type(field_type, name)
            if not current.field_type.is_primitive:
                raise ValidationError(
                    f"Cannot change the type of {name!r}: it is a {current.field_type}; only "
                    "primitive columns can be widened."
                )
            check_promotion(name, current.field_type, new_type)
            if self._is_map_key(current.field_id) and new_type != current.field_type:
                raise ValidationError(f"Cannot change the type of map key {name!r}.")
            current = dataclasses.replace(current, field_type=new_type)
        if doc is not None:
            current = dataclasses.replace(current, doc=doc)
        self._set(current)
        if required is True:
            self.make_column_required(path)
        elif required is False:
            self.make_column_optional(path)
        return self

    def update_column_doc(self, path: Path, doc: str | None) -> UpdateSchema:
        """Set (or with None, remove) a column's doc."""
        current = self._find_for_update(path, "document")
        self._set(dataclasses.replace(current, doc=doc))
        return self

    def make_column_optional(self, path: Path) -> UpdateSchema:
        """Allow nulls in a column (always safe)."""
        current = self._find_for_update(path, "make optional")
        if self._is_map_key(current.field_id):
            raise ValidationError(f"Map keys are always required; {_name(path)!r} cannot change.")
        if current.required:
            self._set(dataclasses.replace(current, required=False))
        return self

    def make_column_required(self, path: Path) -> UpdateSchema:
        """Forbid nulls in a column: only for a column added in this change with a default.

        Raises:
            ValidationError: the column already exists (written rows may hold nulls, and
                a reader of such a file would fail), or it has no default.
        """
        current = self._find_for_update(path, "make required")
        if current.required:
            return self
        if current.field_id not in self._added:
            raise ValidationError(
                f"Cannot make existing column {_name(path)!r} required: rows already written "
                "may hold nulls; add a new required column with a default instead."
            )
        if current.initial_default is None:
            raise ValidationError(
                f"Cannot make column {_name(path)!r} required: it has no non-null default."
            )
        self._set(dataclasses.replace(current, required=True))
        return self

    def set_default_value(self, path: Path, default: Any) -> UpdateSchema:
        """Change a column's write default (v3): what writers store when they omit it.

        The initial default (what rows written before the column existed read as) never
        changes ("Default values").

        Raises:
            ValidationError: the table is not v3, or the value does not fit the type.
        """
        current = self._find_for_update(path, "set the default of")
        if self._base.format_version < 3:
            raise ValidationError(
                f"Cannot set a default for {_name(path)!r}: default values need format "
                f"version 3 (this table is {self._base.format_version})."
            )
        value = default_to_json(current.field_type, default, _name(path))
        self._set(dataclasses.replace(current, write_default=value))
        return self

    def _container(self, field_id: int) -> NestedField | None:
        """The field whose type directly holds ``field_id`` (None at top level)."""
        parent = self._schema.parent_id(field_id)
        return self._schema.find_field(parent) if parent is not None else None

    def _in_list_or_map(self, field_id: int) -> bool:
        """Whether ``field_id`` is a list's element or a map's key or value."""
        holder = self._container(field_id)
        return holder is not None and isinstance(holder.field_type, ListType | MapType)

    def _is_map_key(self, field_id: int) -> bool:
        holder = self._container(field_id)
        return (
            holder is not None
            and isinstance(holder.field_type, MapType)
            and holder.field_type.key_id == field_id
        )

    def _find_for_move(self, path: Path) -> int:
        added = self._added_names.get(self._key(_name(path)))
        if added is not None:
            return added
        return self._require(path, "move").field_id

    def _move(self, move: _Move, path: Path) -> UpdateSchema:
        parent = self._parent_of(move.field_id)
        if parent != ROOT:
            holder = self._schema.find_field(parent)
            if holder is None or not isinstance(holder.field_type, StructType):
                raise ValidationError(f"Cannot move {_name(path)!r}: only struct fields can move.")
        if move.other is not None and self._parent_of(move.other) != parent:
            raise ValidationError(
                f"Cannot move {_name(path)!r} to another struct; columns move within theirs."
            )
        self._moves.setdefault(parent, []).append(move)
        return self

    def move_first(self, path: Path) -> UpdateSchema:
        """Move a column to the start of its struct."""
        return self._move(_Move(self._find_for_move(path), "first"), path)

    def move_before(self, path: Path, before_path: Path) -> UpdateSchema:
        """Move a column just before another of the same struct."""
        field_id, other = self._find_for_move(path), self._find_for_move(before_path)
        if field_id == other:
            raise ValidationError(f"Cannot move {_name(path)!r} before itself.")
        return self._move(_Move(field_id, "before", other), path)

    def move_after(self, path: Path, after_path: Path) -> UpdateSchema:
        """Move a column just after another of the same struct."""
        field_id, other = self._find_for_move(path), self._find_for_move(after_path)
        if field_id == other:
            raise ValidationError(f"Cannot move {_name(path)!r} after itself.")
        return self._move(_Move(field_id, "after", other), path)

    def set_identifier_fields(self, *names: str) -> UpdateSchema:
        """Replace the identifier fields (names are resolved in the changed schema)."""
        self._identifier_names = tuple(names)
        return self

    # Applying ------------------------------------------------------------------------------

    def _apply_fields(self, fields: Sequence[NestedField], owner: int) -> tuple[NestedField, ...]:
        result = [self._apply_field(f) for f in fields if f.field_id not in self._deletes]
        result.extend(self._added[i] for i in self._adds.get(owner, ()))
        for move in self._moves.get(owner, ()):
            result = _moved(result, move)
        return tuple(result)

    def _apply_field(self, f: NestedField) -> NestedField:
        updated = self._updates.get(f.field_id, f)
        t = f.field_type
        if isinstance(t, StructType):
            new_type: IcebergType = StructType(self._apply_fields(t.fields, f.field_id))
        elif isinstance(t, ListType):
            element = self._apply_field(t.element_field)
            new_type = ListType(t.element_id, element.field_type, element.required)
        elif isinstance(t, MapType):
            value = self._apply_field(t.value_field)
            new_type = MapType(t.key_id, t.key_type, t.value_id, value.field_type, value.required)
        else:
            new_type = updated.field_type
        return dataclasses.replace(updated, field_type=new_type)

    def apply(self) -> Schema:
        """The changed schema (its id is assigned when committed).

        Raises:
            ValidationError: identifier fields would be dropped or become invalid.
        """
        schema = self._schema
        for fid in schema.identifier_field_ids:
            if self._identifier_names is not None:
                break
            dropped = [i for i in _with_parents(schema, fid) if i in self._deletes]
            if dropped:
                raise ValidationError(
                    f"Cannot drop {schema.find_column_name(dropped[0])!r}: identifier field "
                    f"{schema.find_column_name(fid)!r} would go with it; change the "
                    "identifier fields first (set_identifier_fields)."
                )
        fields = self._apply_fields(schema.fields, ROOT)
        draft = Schema(fields, schema_id=schema.schema_id)
        if self._identifier_names is None:
            identifier_ids = schema.identifier_field_ids
        else:
            ids = []
            for name in self._identifier_names:
                try:
                    found = draft.find_id_by_name(name, self._case_sensitive)
                except InvalidMetadata as e:
                    raise ValidationError(str(e)) from e
                if found is None:
                    raise ValidationError(
                        f"Cannot use {name!r} as an identifier field: there is no such column."
                    )
                ids.append(found)
            identifier_ids = tuple(ids)
        return Schema(fields, schema_id=schema.schema_id, identifier_field_ids=identifier_ids)

    def plan(self) -> Plan:
        """``add-schema`` + ``set-current-schema`` (+ property updates), or nothing.

        Raises:
            ValidationError: see the module docstring.
        """
        new = self.apply()
        if same_schema(new, self._schema):
            return (), ()
        removed = self._schema.field_ids - new.field_ids
        requirements: list[Requirement] = [
            AssertTableUUID(self._base.table_uuid),
            AssertCurrentSchemaId(self._base.current_schema_id),
            AssertLastAssignedFieldId(self._base.last_column_id),
        ]
        old_specs = self._check_partition_sources(removed)
        if old_specs:
            requirements.append(AssertNoLiveFilesInSpecs(old_specs))
        updates: list[MetadataUpdate] = [
            AddSchema(new, self._last_column_id),
            SetCurrentSchema(LAST_ADDED),
        ]
        updates.extend(self._property_updates(new, removed))
        return tuple(updates), tuple(requirements)

    def _check_partition_sources(self, removed: frozenset[int]) -> frozenset[int]:
        """Refuse drops of columns the table still partitions or sorts by.

        Returns:
            ids of older specs using a dropped column that have no live files (they must
            stay without live files until the commit).
        """
        base, schema = self._base, self._schema
        for pf in base.default_spec().fields:
            used = removed.intersection(pf.all_source_ids)
            if used and pf.transform.is_void:
                # v1 keeps removed partition fields as void; Iceberg Java 1.10 then fails to
                # write ("Cannot build accessor for field: null") once their source is gone.
                raise ValidationError(
                    f"Cannot drop column {schema.find_column_name(min(used))!r}: the default "
                    f"partition spec still names it in the void field {pf.name!r} (a v1 table "
                    "keeps removed partition fields), and Spark could no longer write to the "
                    "table."
                )
            if used:
                raise ValidationError(
                    f"Cannot drop column {schema.find_column_name(min(used))!r}: the table is "
                    f"partitioned by it (field {pf.name!r}); remove that partition field first."
                )
        for sf in base.default_sort_order().fields:
            if sf.source_id in removed:
                raise ValidationError(
                    f"Cannot drop column {schema.find_column_name(sf.source_id)!r}: the "
                    "table's default sort order uses it; change the sort order first."
                )
        older: dict[int, tuple[int, str]] = {}
        for spec in base.partition_specs:
            if spec.spec_id == base.default_spec_id:
                continue
            for pf in spec.fields:
                used = removed.intersection(pf.all_source_ids)
                if used and not pf.transform.is_void:
                    older.setdefault(spec.spec_id, (min(used), pf.name))
        if not older:
            return frozenset()
        live = live_spec_ids(self._transaction.table) & set(older)
        for spec_id in sorted(live):
            source_id, field = older[spec_id]
            column = schema.find_column_name(source_id)
            reason = (
                f"it is the source of partition field {field!r} of partition spec {spec_id}, "
                "and files written with that spec are still live"
            )
            if not any(self._deletes.get(i, False) for i in _with_parents(schema, source_id)):
                raise ValidationError(
                    f"Cannot drop column {column!r}: {reason}; rewrite or expire them first, "
                    "or pass allow_live_partition_source=True."
                )
            warnings.warn(
                f"Dropping column {column!r} although {reason}: readers of those files lose "
                "that partition value.",
                UserWarning,
                stacklevel=5,
            )
        return frozenset(set(older) - live)

    def _property_updates(self, new: Schema, removed: frozenset[int]) -> Iterator[MetadataUpdate]:
        props = self._base.properties
        renamed = {
            old_name: new_name
            for fid in self._schema.field_ids & new.field_ids
            if (old_name := self._schema.find_column_name(fid))
            != (new_name := new.find_column_name(fid))
            and old_name is not None
            and new_name is not None
        }
        dropped = {self._schema.find_column_name(fid) for fid in removed}
        sets: dict[str, str] = {}
        removals: list[str] = []
        for key, value in props.items():
            prefix = next((p for p in COLUMN_PROPERTY_PREFIXES if key.startswith(p)), None)
            if prefix is None:
                continue
            column = key[len(prefix) :]
            if column in dropped:
                removals.append(key)
            elif column in renamed:
                removals.append(key)
                sets[prefix + renamed[column]] = value
        mapping = props.get(NAME_MAPPING_PROPERTY)
        if mapping is not None:
            sets[NAME_MAPPING_PROPERTY] = self._updated_name_mapping(mapping)
        if removals:
            yield RemoveProperties(tuple(removals))
        if sets:
            yield SetProperties(sets)

    def _updated_name_mapping(self, text: str) -> str:
        renames = {
            fid: f.name
            for fid, f in self._updates.items()
            if f.name != _old_name(self._schema, fid)
        }
        added = {parent: [self._added[i] for i in ids] for parent, ids in self._adds.items()}
        return update_name_mapping(text, renames, added, ROOT)


def _checked_type(field_type: IcebergType | str, column: str) -> IcebergType:
    """A type given as text or as a value, with its parameters checked (``check_type``)."""
    if isinstance(field_type, str):
        return parse_type(field_type, column)
    check_type(field_type, column)
    return field_type


def _old_name(schema: Schema, field_id: int) -> str | None:
    f = schema.find_field(field_id)
    return f.name if f is not None else None


def _with_parents(schema: Schema, field_id: int) -> list[int]:
    chain = [field_id]
    parent = schema.parent_id(field_id)
    while parent is not None:
        chain.append(parent)
        parent = schema.parent_id(parent)
    return chain


def _moved(fields: list[NestedField], move: _Move) -> list[NestedField]:
    moving = next(f for f in fields if f.field_id == move.field_id)
    rest = [f for f in fields if f.field_id != move.field_id]
    if move.kind == "first":
        return [moving, *rest]
    index = next(i for i, f in enumerate(rest) if f.field_id == move.other)
    at = index if move.kind == "before" else index + 1
    return [*rest[:at], moving, *rest[at:]]


__all__ = [
    "COLUMN_PROPERTY_PREFIXES",
    "UpdateSchema",
    "default_to_json",
]
