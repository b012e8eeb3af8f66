"""Table schemas: a struct with an id, identifier fields, and lookups by id and by name.

Implements the spec's "Schemas and Data Types" (a table schema is a struct),
"Identifier Field IDs", and the schema object of "Appendix C: JSON serialization".

Names follow the reference implementation's column-name rules: nested struct fields are
joined with dots (``location.lat``), a list's element is ``<list>.element``, a map's key and
value are ``<map>.key`` and ``<map>.value``. Struct fields below a list element or a map
value may also be found by the short name that omits ``element``/``value``
(``points.x`` for ``points.element.x``) when that short name is not ambiguous.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from icecore.errors import InvalidMetadata
from icecore.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    NestedType,
    StructType,
    field_from_json,
    field_to_json,
)

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_SCHEMA_KEYS = frozenset({"type", "schema-id", "identifier-field-ids", "fields"})


@dataclass(frozen=True, slots=True)
class Accessor:
    """How to reach a field nested only in structs from a row of the top-level struct.

    Rows are sequences (tuples, lists) whose items follow the struct's field order.

    Attributes:
        positions: the index at each struct level, outermost first.
        field_type: the type of the value reached.
    """

    positions: tuple[int, ...]
    field_type: IcebergType

    def get(self, row: Sequence[Any] | None) -> Any:
        """The value in ``row``; None when the row or an enclosing struct is null."""
        value: Any = row
        for pos in self.positions:
            if value is None:
                return None
            value = value[pos]
        return value


@dataclass(frozen=True, slots=True)
class _Index:
    by_id: dict[int, NestedField]
    parent: dict[int, int]
    id_to_name: dict[int, str]
    name_to_id: dict[str, int]
    lower_name_to_id: dict[str, int]
    ambiguous_lower: frozenset[str]
    accessors: dict[int, Accessor]


def _build_index(struct: StructType) -> _Index:
    by_id: dict[int, NestedField] = {}
    parent: dict[int, int] = {}
    id_to_name: dict[int, str] = {}
    full: dict[str, int] = {}
    short: dict[str, int] = {}
    short_dupes: set[str] = set()
    accessors: dict[int, Accessor] = {}

    def visit(
        t: IcebergType,
        full_prefix: str,
        short_base: str,
        parent_id: int | None,
        positions: tuple[int, ...] | None,
    ) -> None:
        if not isinstance(t, NestedType):
            return
        for pos, child in enumerate(t.child_fields()):
            if child.field_id in by_id:
                raise InvalidMetadata(
                    f"Field id {child.field_id} is used twice in the schema "
                    f"({id_to_name[child.field_id]!r} and {full_prefix + child.name!r})."
                )
            name = full_prefix + child.name
            by_id[child.field_id] = child
            id_to_name[child.field_id] = name
            full[name] = child.field_id
            if parent_id is not None:
                parent[child.field_id] = parent_id
            # Below a list element or a map value, struct fields also get a short name.
            skip = isinstance(t, ListType) or (isinstance(t, MapType) and child.name == "value")
            if skip:
                child_short = short_base
            else:
                child_short = f"{short_base}.{child.name}" if short_base else child.name
            if not skip and child_short != name:
                if child_short in short:
                    short_dupes.add(child_short)
                short[child_short] = child.field_id
            child_positions = (
                positions + (pos,) if positions is not None and isinstance(t, StructType) else None
            )
            if child_positions is not None:
                accessors[child.field_id] = Accessor(child_positions, child.field_type)
            visit(
                child.field_type,
                name + ".",
                child_short,
                child.field_id,
                child_positions,
            )

    visit(struct, "", "", None, ())
    name_to_id = dict(full)
    for name, fid in short.items():
        if name not in full and name not in short_dupes:
            name_to_id[name] = fid
    lower: dict[str, int] = {}
    ambiguous: set[str] = set()
    for name, fid in name_to_id.items():
        key = name.lower()
        if key in lower and lower[key] != fid:
            ambiguous.add(key)
        lower.setdefault(key, fid)
    return _Index(by_id, parent, id_to_name, name_to_id, lower, frozenset(ambiguous), accessors)


@dataclass(frozen=True, slots=True)
class Schema:
    """A table schema (spec "Schemas and Data Types"): a top-level struct with an id.

    Lookups are indexed once at construction; the schema never changes afterwards.

    Attributes:
        fields: the top-level fields, in order.
        schema_id: the schema id (0 when a v1 schema omitted it).
        identifier_field_ids: ids of the fields that identify a row (may be empty).
        extra: keys of the schema JSON Icecore does not model, written back as found.
    """

    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, repr=False)
    _index: _Index = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "identifier_field_ids", tuple(self.identifier_field_ids))
        object.__setattr__(self, "_index", _build_index(StructType(self.fields)))

    def __hash__(self) -> int:
        return hash((self.schema_id, self.fields, self.identifier_field_ids))

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self.fields)

    def __str__(self) -> str:
        lines = "\n".join(f"  {f}" for f in self.fields)
        return f"table {{\n{lines}\n}}"

    def as_struct(self) -> StructType:
        """The schema as a struct type."""
        return StructType(self.fields)

    def find_field(self, field_id: int) -> NestedField | None:
        """The field with this id at any depth (list elements and map keys/values too)."""
        return self._index.by_id.get(field_id)

    def find_type(self, field_id: int) -> IcebergType | None:
        """The type of the field with this id, or None."""
        f = self._index.by_id.get(field_id)
        return f.field_type if f is not None else None

    def find_field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        """The field with this dotted name, or None.

        Args:
            name: a full name such as ``a.b``, ``tags.element``, ``props.key``, or a short
                name that omits ``element``/``value`` below lists and maps.
            case_sensitive: match names exactly (True) or ignoring case (False).

        Raises:
            InvalidMetadata: ``case_sensitive`` is False and two fields differ only in case.
        """
        fid = self.find_id_by_name(name, case_sensitive)
        return self._index.by_id[fid] if fid is not None else None

    def find_id_by_name(self, name: str, case_sensitive: bool = True) -> int | None:
        """The id of the field with this dotted name, or None (see find_field_by_name)."""
        if case_sensitive:
            return self._index.name_to_id.get(name)
        key = name.lower()
        if key in self._index.ambiguous_lower:
            raise InvalidMetadata(
                f"Column name {name!r} matches more than one field when case is ignored."
            )
        return self._index.lower_name_to_id.get(key)

    def find_column_name(self, field_id: int) -> str | None:
        """The full dotted name of the field with this id, or None."""
        return self._index.id_to_name.get(field_id)

    def id_to_name(self) -> Mapping[int, str]:
        """A read-only map from every field id to its full dotted name."""
        return MappingProxyType(self._index.id_to_name)

    def name_to_id(self) -> Mapping[str, int]:
        """A read-only map from every accepted dotted name (full and short) to its id."""
        return MappingProxyType(self._index.name_to_id)

    def parent_id(self, field_id: int) -> int | None:
        """The id of the struct/list/map field that contains this field, None at top level."""
        return self._index.parent.get(field_id)

    def accessor(self, field_id: int) -> Accessor | None:
        """How to read this field from a row; None if it is inside a list or map."""
        return self._index.accessors.get(field_id)

    @property
    def highest_field_id(self) -> int:
        """The largest field id used anywhere in the schema (0 for an empty schema)."""
        return max(self._index.by_id, default=0)

    @property
    def field_ids(self) -> frozenset[int]:
        """Every field id used in the schema."""
        return frozenset(self._index.by_id)

    def identifier_field_names(self) -> tuple[str, ...]:
        """Full names of the identifier fields (ids unknown to the schema are skipped)."""
        names = self._index.id_to_name
        return tuple(names[i] for i in self.identifier_field_ids if i in names)


def schema_from_json(obj: Any) -> Schema:
    """Parse a schema object of Appendix C, keeping unknown keys in ``extra``.

    Raises:
        InvalidMetadata: the JSON breaks the spec's shape or reuses a field id.
    """
    if not isinstance(obj, Mapping):
        raise InvalidMetadata(f"A schema must be a JSON object, got {type(obj).__name__}.")
    if obj.get("type", "struct") != "struct":
        raise InvalidMetadata(f"A schema must have type 'struct', got {obj.get('type')!r}.")
    fields = obj.get("fields")
    if not isinstance(fields, list):
        raise InvalidMetadata("A schema needs a 'fields' list.")
    schema_id = obj.get("schema-id", 0)
    if not isinstance(schema_id, int) or isinstance(schema_id, bool):
        raise InvalidMetadata(f"A schema's 'schema-id' must be an integer, got {schema_id!r}.")
    ids = obj.get("identifier-field-ids")
    if ids is None:
        ids = []
    if not isinstance(ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in ids
    ):
        raise InvalidMetadata(f"'identifier-field-ids' must be a list of integers, got {ids!r}.")
    extra = {k: v for k, v in obj.items() if k not in _SCHEMA_KEYS}
    return Schema(
        fields=tuple(field_from_json(f) for f in fields),
        schema_id=schema_id,
        identifier_field_ids=tuple(ids),
        extra=MappingProxyType(extra) if extra else _EMPTY,
    )


def schema_to_json(schema: Schema) -> dict[str, Any]:
    """Serialize a schema to Appendix C JSON (``identifier-field-ids`` only when set)."""
    out: dict[str, Any] = {"type": "struct", "schema-id": schema.schema_id}
    if schema.identifier_field_ids:
        out["identifier-field-ids"] = list(schema.identifier_field_ids)
    out["fields"] = [field_to_json(f) for f in schema.fields]
    for key, value in schema.extra.items():
        out.setdefault(key, value)
    return out


__all__ = ["Accessor", "Schema", "schema_from_json", "schema_to_json"]
