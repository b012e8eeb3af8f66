"""Keep ``schema.name-mapping.default`` current through a schema change.

Spec "Column Projection" and "Name Mapping Serialization": a name mapping gives field ids to
columns of files written without them, by name. As Iceberg Java's ``MappingUtil.update``
does, a renamed field keeps its old names (files written before the rename use them) and
gains the new one; a new field gets an entry (with entries for its nested fields); a name
now taken by another field at the same level is removed from the field that had it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from icecore.read import MappedField, parse_name_mapping
from icecore.types import IcebergType, ListType, MapType, NestedField, StructType


def update_name_mapping(
    text: str,
    renames: Mapping[int, str],
    added: Mapping[int, Sequence[NestedField]],
    root: int,
) -> str:
    """The mapping JSON after renames (field id -> new name) and additions (by parent id).

    Raises:
        InvalidMetadata: ``text`` is not a name mapping.
    """

    def level(fields: Sequence[MappedField], owner: int) -> list[MappedField]:
        new = list(added.get(owner, ()))
        taken: dict[str, int | None] = {
            renames[m.field_id]: m.field_id
            for m in fields
            if m.field_id is not None and m.field_id in renames
        }
        taken.update({f.name: f.field_id for f in new})
        out: list[MappedField] = []
        for m in fields:
            names = [n for n in m.names if taken.get(n, m.field_id) == m.field_id]
            renamed = renames.get(m.field_id) if m.field_id is not None else None
            if renamed is not None and renamed not in names:
                names.append(renamed)
            children = level(m.fields, m.field_id) if m.field_id is not None else m.fields
            out.append(MappedField(tuple(names), m.field_id, tuple(children)))
        out.extend(_mapping_for(f) for f in new)
        return out

    return json.dumps([_mapping_json(m) for m in level(parse_name_mapping(text), root)])


def _mapping_for(f: NestedField) -> MappedField:
    return MappedField((f.name,), f.field_id, _nested_mapping(f.field_type))


def _nested_mapping(t: IcebergType) -> tuple[MappedField, ...]:
    if isinstance(t, StructType):
        return tuple(_mapping_for(f) for f in t.fields)
    if isinstance(t, ListType):
        return (_mapping_for(t.element_field),)
    if isinstance(t, MapType):
        return (_mapping_for(t.key_field), _mapping_for(t.value_field))
    return ()


def _mapping_json(m: MappedField) -> Mapping[str, Any]:
    out: dict[str, Any] = {"names": list(m.names)}
    if m.field_id is not None:
        out["field-id"] = m.field_id
    if m.fields:
        out["fields"] = [_mapping_json(c) for c in m.fields]
    return out


__all__ = ["update_name_mapping"]
