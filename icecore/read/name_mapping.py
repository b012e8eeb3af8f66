"""Name mapping: matching columns of files written without field ids (spec "Column Projection").

A file without ``PARQUET:field_id`` is matched by the table's ``schema.name-mapping.default``
("Name Mapping Serialization"), which gives each name the id it stands for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icecore.errors import InvalidMetadata
from icecore.types import MAX_NESTING

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
"""Table property holding the JSON name mapping ("Column Projection")."""


@dataclass(frozen=True, slots=True)
class MappedField:
    """One field mapping: the names a file may use for a field, its id, and its children."""

    names: tuple[str, ...]
    field_id: int | None
    fields: tuple[MappedField, ...] = ()


def parse_name_mapping(text: str | Sequence[Any]) -> tuple[MappedField, ...]:
    """Parse the JSON of ``schema.name-mapping.default``.

    Raises:
        InvalidMetadata: the JSON is not a list of field mappings, or nests deeper than a
            schema may (:data:`icecore.types.MAX_NESTING` levels below a column).
    """
    try:
        obj = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as e:
        raise InvalidMetadata(f"The table's {NAME_MAPPING_PROPERTY} is not JSON: {e}.") from e
    except RecursionError as e:
        raise InvalidMetadata(f"The table's {NAME_MAPPING_PROPERTY} nests too deeply.") from e

    def one(item: Any, depth: int) -> MappedField:
        if not isinstance(item, Mapping) or not isinstance(item.get("names", []), list):
            raise InvalidMetadata(
                f"The table's {NAME_MAPPING_PROPERTY} has a bad entry {str(item)[:200]}."
            )
        if depth > MAX_NESTING + 1:  # a column, then its nested levels
            raise InvalidMetadata(
                f"The table's {NAME_MAPPING_PROPERTY} nests more than {MAX_NESTING} levels "
                "below a column, deeper than any schema Icecore reads."
            )
        fid = item.get("field-id")
        return MappedField(
            names=tuple(str(n) for n in item.get("names", [])),
            field_id=int(fid) if isinstance(fid, int) else None,
            fields=tuple(one(c, depth + 1) for c in item.get("fields") or ()),
        )

    if not isinstance(obj, list):
        raise InvalidMetadata(f"The table's {NAME_MAPPING_PROPERTY} must be a JSON list.")
    return tuple(one(item, 1) for item in obj)


def _with_id(f: pa.Field, field_id: int | None, t: pa.DataType) -> pa.Field:
    metadata = {b"PARQUET:field_id": str(field_id).encode()} if field_id is not None else None
    return pa.field(f.name, t, nullable=f.nullable, metadata=metadata)


def _map_type(t: pa.DataType, mapping: Sequence[MappedField]) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_map_field(t.field(i), mapping) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_map_field(t.key_field, mapping), _map_field(t.item_field, mapping))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = _map_field(t.value_field, mapping)
        return pa.list_(element) if pa.types.is_list(t) else pa.large_list(element)
    return t


def _map_field(f: pa.Field, mapping: Sequence[MappedField]) -> pa.Field:
    found = next((m for m in mapping if f.name in m.names), None)
    if found is None:
        return _with_id(f, None, f.type)
    return _with_id(f, found.field_id, _map_type(f.type, found.fields))


def apply_name_mapping(schema: pa.Schema, mapping: Sequence[MappedField]) -> pa.Schema:
    """A file's schema with the field ids the name mapping gives its columns."""
    return pa.schema([_map_field(f, mapping) for f in schema])
