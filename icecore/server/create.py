"""A new table's first metadata, from a REST ``CreateTableRequest`` (or a create transaction).

As Iceberg Java's ``TableMetadata.newTableMetadata`` does, the server, not the client,
numbers the new table: schema fields get fresh ids from 1 (each struct's fields first, then
their children: ``AssignFreshIds``), partition fields ids from 1000 (spec id 0), the sort
order id 1 (0 when unsorted), and the spec and sort order are re-pointed at the fresh ids.
The result is built as metadata JSON and read back through :mod:`icecore.metadata.serde`
and checked by :func:`icecore.metadata.builder.check_metadata`, so a new table obeys the
same rules as every commit.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from icecore.errors import ValidationError
from icecore.metadata import TableMetadata
from icecore.metadata.builder import check_metadata, check_schema, check_spec
from icecore.metadata.serde import parse_metadata_dict
from icecore.partitioning import PARTITION_DATA_ID_START

DEFAULT_FORMAT_VERSION = 2
"""What Iceberg Java 1.10 creates when ``format-version`` is not given."""

MAX_FORMAT_VERSION = 3
FORMAT_VERSION_PROPERTY = "format-version"


def _fresh_type(t: Any, ids: dict[int, int], counter: list[int]) -> Any:
    """``t`` (type JSON) with fresh ids; ``ids`` collects old -> new for struct fields."""
    if not isinstance(t, Mapping):
        return t
    kind = t.get("type")
    if kind == "struct":
        raw = t.get("fields", [])
        if not isinstance(raw, list) or not all(isinstance(f, Mapping) for f in raw):
            raise ValidationError("A struct's 'fields' must be a list of field objects.")
        fields = [dict(f) for f in raw]
        for f in fields:  # this struct's fields first, then what they hold
            counter[0] += 1
            if isinstance(f.get("id"), int):
                ids[f["id"]] = counter[0]
            f["id"] = counter[0]
        for f in fields:
            f["type"] = _fresh_type(f.get("type"), ids, counter)
        return {**t, "fields": fields}
    if kind == "list":
        counter[0] += 1
        out = {**t, "element-id": counter[0]}
        out["element"] = _fresh_type(t.get("element"), ids, counter)
        return out
    if kind == "map":
        counter[0] += 2
        out = {**t, "key-id": counter[0] - 1, "value-id": counter[0]}
        out["key"] = _fresh_type(t.get("key"), ids, counter)
        out["value"] = _fresh_type(t.get("value"), ids, counter)
        return out
    return t


def fresh_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], dict[int, int], int]:
    """The schema JSON with fresh ids from 1; returns it, old -> new ids, the highest id."""
    if not isinstance(schema, Mapping) or schema.get("type", "struct") != "struct":
        raise ValidationError("The table's schema must be a struct with a 'fields' list.")
    ids: dict[int, int] = {}
    counter = [0]
    out = _fresh_type({**schema, "type": "struct"}, ids, counter)
    identifier = schema.get("identifier-field-ids") or []
    if not isinstance(identifier, list):
        raise ValidationError("'identifier-field-ids' must be a list of field ids.")
    out["identifier-field-ids"] = [ids.get(i, i) for i in identifier]
    out["schema-id"] = 0
    return out, ids, counter[0]


def _remap_source(field: Mapping[str, Any], ids: Mapping[int, int], what: str) -> dict[str, Any]:
    out = dict(field)
    source = out.get("source-id")
    if isinstance(source, int):
        if source not in ids:
            raise ValidationError(f"The {what} names source field id {source}, not in the schema.")
        out["source-id"] = ids[source]
    sources = out.get("source-ids")
    if isinstance(sources, list):
        if not all(isinstance(s, int) and s in ids for s in sources):
            raise ValidationError(f"The {what} names source field ids not in the schema.")
        out["source-ids"] = [ids[s] for s in sources]
    return out


def _fields_of(value: Any, what: str) -> list[Mapping[str, Any]]:
    """The ``fields`` of a request's partition spec or sort order JSON (none if absent)."""
    if value is None:
        return []
    raw = value.get("fields") if isinstance(value, Mapping) else None
    if raw is None and isinstance(value, Mapping):
        return []
    if not isinstance(raw, list) or not all(isinstance(f, Mapping) for f in raw):
        raise ValidationError(f"The {what} must be an object whose 'fields' is a list of objects.")
    return raw


def new_table_metadata(
    *,
    location: str,
    schema: Mapping[str, Any],
    partition_spec: Mapping[str, Any] | None = None,
    write_order: Mapping[str, Any] | None = None,
    properties: Mapping[str, str] | None = None,
    table_uuid: str | None = None,
    format_version: int | None = None,
    fresh_ids: bool = True,
) -> TableMetadata:
    """The first metadata of a table (see the module docstring).

    Args:
        location: the table's location.
        schema: the request's schema JSON.
        partition_spec: the request's partition spec JSON, if any.
        write_order: the request's sort order JSON, if any.
        properties: table properties; ``format-version`` among them picks the version.
        table_uuid: a uuid to keep (a staged create's), else a new one.
        format_version: the version, when given apart from the properties.
        fresh_ids: renumber the schema (a create request); False keeps the ids of a staged
            table's schema.

    Raises:
        ValidationError: the request breaks a rule of the spec.
    """
    props = {str(k): str(v) for k, v in (properties or {}).items()}
    version_text = props.pop(FORMAT_VERSION_PROPERTY, None)
    version = format_version
    if version is None:
        try:
            version = int(version_text) if version_text is not None else DEFAULT_FORMAT_VERSION
        except ValueError as e:
            raise ValidationError(f"format-version {version_text!r} is not a number.") from e
    if not 1 <= version <= MAX_FORMAT_VERSION:
        raise ValidationError(f"format-version {version} is not supported (1 to 3).")
    if fresh_ids:
        schema_json, ids, last_column_id = fresh_schema(schema)
    else:
        schema_json = {**schema, "schema-id": 0}
        last_column_id = _highest_id(schema_json)
        ids = {i: i for i in range(last_column_id + 1)}
    fields = []
    for i, f in enumerate(_fields_of(partition_spec, "partition spec")):
        remapped = _remap_source(f, ids, "partition spec")
        remapped["field-id"] = PARTITION_DATA_ID_START + i
        fields.append(remapped)
    order_fields = [
        _remap_source(f, ids, "sort order") for f in _fields_of(write_order, "sort order")
    ]
    order_id = 1 if order_fields else 0
    obj: dict[str, Any] = {
        "format-version": version,
        "table-uuid": table_uuid or str(uuid.uuid4()),
        "location": location.rstrip("/"),
        "last-sequence-number": 0,
        "last-updated-ms": int(time.time() * 1000),
        "last-column-id": last_column_id,
        "current-schema-id": 0,
        "schemas": [schema_json],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": fields}],
        "last-partition-id": PARTITION_DATA_ID_START - 1 + len(fields),
        "default-sort-order-id": order_id,
        "sort-orders": [{"order-id": order_id, "fields": order_fields}],
        "properties": props,
        "current-snapshot-id": -1,
        "refs": {},
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": [],
    }
    if version == 1:
        obj["schema"] = schema_json
        obj["partition-spec"] = fields
    if version >= 3:
        obj["next-row-id"] = 0
    try:
        md = parse_metadata_dict(obj, location="<new table>")
    except Exception as e:  # serde's InvalidMetadata for a malformed request
        raise ValidationError(f"The new table's metadata is invalid: {e}") from e
    check_schema(md.current_schema(), md.format_version)
    check_spec(md.default_spec(), md.current_schema(), md.format_version)
    check_metadata(md)
    return md


def _highest_id(t: Any) -> int:
    """The highest field id in a type's JSON."""
    if not isinstance(t, Mapping):
        return 0
    found = 0
    for key in ("id", "element-id", "key-id", "value-id"):
        value = t.get(key)
        if isinstance(value, int):
            found = max(found, value)
    for f in t.get("fields", []) or []:
        found = max(
            found, _highest_id(f), _highest_id(f.get("type") if isinstance(f, Mapping) else None)
        )
    for key in ("element", "key", "value"):
        found = max(found, _highest_id(t.get(key)))
    return found


__all__ = ["new_table_metadata"]
