"""View metadata (view-spec.md): the model, its JSON form, and the updates a commit applies.

A view is a metadata file like a table's, swapped atomically by its catalog (view spec,
"Overview"): ``view-uuid``, ``format-version`` 1, ``location``, ``schemas``, the ``versions``
(each with its SQL ``representations`` per dialect, ``default-catalog`` and
``default-namespace``), ``current-version-id``, the ``version-log`` and ``properties``.
As with table metadata (:mod:`icecore.metadata.serde`), keys Icecore does not model are kept
at every level and written back.

The updates are the REST catalog's ``ViewUpdate``s. Those a table also has (``assign-uuid``,
``upgrade-format-version``, ``add-schema``, ``set-location``, ``set-properties``,
``remove-properties``) are the table's tagged values (:mod:`icecore.metadata.updates`);
``add-view-version`` and ``set-current-view-version`` are here. :func:`apply_view_updates`
gives them Iceberg Java's ``ViewMetadata.Builder`` meaning: an added schema or version equal
to an existing one reuses its id instead of adding a duplicate (so a retried replace adds
nothing twice), -1 names the schema or version added last, a change of the current version
appends a ``version-log`` entry, and the ``version.history.num-entries`` property (default
10) bounds the versions kept, the log keeping only entries after the last expired version.
"""

from __future__ import annotations

import copy
import json
import time
import uuid as uuid_module
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar

from icecore.errors import InvalidMetadata, Unsupported, ValidationError
from icecore.io import MAX_METADATA_BYTES
from icecore.metadata.serde import decode_metadata_json
from icecore.metadata.updates import (
    LAST_ADDED,
    AddSchema,
    AssignUUID,
    RemoveProperties,
    SetLocation,
    SetProperties,
    UpgradeFormatVersion,
)
from icecore.metadata.updates_json import (
    required_int,
    required_str,
    update_from_json,
    update_to_json,
)
from icecore.schema import Schema, schema_from_json, schema_to_json

VIEW_FORMAT_VERSION = 1
"""The only view format version (view spec, "View Metadata": ``format-version`` must be 1)."""

VERSION_HISTORY_SIZE = "version.history.num-entries"
"""View property: how many versions a view keeps (spec note 1); Iceberg Java's default 10."""

VERSION_HISTORY_SIZE_DEFAULT = 10

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_TOP_KEYS = (
    "view-uuid",
    "format-version",
    "location",
    "schemas",
    "current-version-id",
    "versions",
    "version-log",
    "properties",
)
_VERSION_KEYS = frozenset(
    {
        "version-id",
        "timestamp-ms",
        "schema-id",
        "summary",
        "representations",
        "default-catalog",
        "default-namespace",
    }
)
_REPRESENTATION_KEYS = frozenset({"type", "sql", "dialect"})
_LOG_KEYS = frozenset({"timestamp-ms", "version-id"})


# Model -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ViewRepresentation:
    """One definition of a version (spec "Representations"); ``sql`` is the only known type.

    Attributes:
        type: ``sql`` (another type is kept as read, its fields in ``extra``).
        sql: the SELECT statement (empty for another type).
        dialect: its SQL dialect (``spark``, ``trino``, ...).
        extra: keys Icecore does not model, written back as found.
    """

    type: str
    sql: str
    dialect: str
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ViewVersion:
    """One version of a view (spec "Versions"): immutable once written."""

    version_id: int
    schema_id: int
    timestamp_ms: int
    summary: Mapping[str, str]
    representations: tuple[ViewRepresentation, ...]
    default_namespace: tuple[str, ...]
    default_catalog: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, repr=False)

    def sql(self, dialect: str) -> str | None:
        """The SQL of ``dialect`` (case-insensitive, as Iceberg Java matches it), if any."""
        for rep in self.representations:
            if rep.type == "sql" and rep.dialect.lower() == dialect.lower():
                return rep.sql
        return None

    def same_definition(self, other: ViewVersion) -> bool:
        """Whether two versions define the same view: all but the id and timestamp equal.

        Iceberg Java's ``sameViewVersion``: adding such a version reuses the existing one.
        """
        return (
            dict(self.summary) == dict(other.summary)
            and self.representations == other.representations
            and self.default_catalog == other.default_catalog
            and self.default_namespace == other.default_namespace
            and self.schema_id == other.schema_id
        )


@dataclass(frozen=True, slots=True)
class ViewLogEntry:
    """One change of ``current-version-id`` (spec "Version log")."""

    timestamp_ms: int
    version_id: int
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ViewMetadata:
    """A view metadata file (spec "View Metadata")."""

    view_uuid: str
    location: str
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    schemas: tuple[Schema, ...]
    version_log: tuple[ViewLogEntry, ...]
    properties: Mapping[str, str] = field(default_factory=dict)
    format_version: int = VIEW_FORMAT_VERSION
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, repr=False)

    def version(self, version_id: int) -> ViewVersion | None:
        """The version of that id, if kept."""
        for v in self.versions:
            if v.version_id == version_id:
                return v
        return None

    @property
    def current_version(self) -> ViewVersion:
        """The current version (parsing checked it exists)."""
        found = self.version(self.current_version_id)
        assert found is not None
        return found

    def schema(self, schema_id: int) -> Schema | None:
        """The schema of that id, if any."""
        for s in self.schemas:
            if s.schema_id == schema_id:
                return s
        return None

    @property
    def current_schema(self) -> Schema | None:
        """The current version's schema."""
        return self.schema(self.current_version.schema_id)


# Reading -------------------------------------------------------------------------------------


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidMetadata(f"{where} must be a JSON object.")
    return value


def _list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise InvalidMetadata(f"{where} needs a list {key!r}.")
    return value


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidMetadata(f"{where} must map strings to strings.")
    return dict(value)


def _extra(obj: Mapping[str, Any], known: frozenset[str] | tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in known}


def representation_from_json(value: Any, where: str = "A representation") -> ViewRepresentation:
    """One entry of a version's ``representations``."""
    obj = _object(value, where)
    kind = required_str(obj, "type", where)
    if kind.lower() != "sql":
        return ViewRepresentation(kind, "", "", extra=_extra(obj, ("type",)))
    return ViewRepresentation(
        kind,
        required_str(obj, "sql", where),
        required_str(obj, "dialect", where),
        _extra(obj, _REPRESENTATION_KEYS),
    )


def view_version_from_json(value: Any, where: str = "A view version") -> ViewVersion:
    """One entry of ``versions`` (also the ``view-version`` of a REST request)."""
    obj = _object(value, where)
    namespace = obj.get("default-namespace")
    if not isinstance(namespace, list) or not all(isinstance(n, str) for n in namespace):
        raise InvalidMetadata(f"{where} needs a 'default-namespace' list of strings.")
    catalog = obj.get("default-catalog")
    if catalog is not None and not isinstance(catalog, str):
        raise InvalidMetadata(f"{where} has a 'default-catalog' that is not a string.")
    reps = _list(obj, "representations", where)
    return ViewVersion(
        version_id=required_int(obj, "version-id", where),
        schema_id=required_int(obj, "schema-id", where),
        timestamp_ms=required_int(obj, "timestamp-ms", where),
        summary=_strings(obj.get("summary"), f"{where}'s 'summary'"),
        representations=tuple(
            representation_from_json(r, f"{where}'s representation {i}") for i, r in enumerate(reps)
        ),
        default_namespace=tuple(namespace),
        default_catalog=catalog,
        extra=_extra(obj, _VERSION_KEYS),
    )


def _log_entry(value: Any, where: str) -> ViewLogEntry:
    obj = _object(value, where)
    return ViewLogEntry(
        required_int(obj, "timestamp-ms", where),
        required_int(obj, "version-id", where),
        _extra(obj, _LOG_KEYS),
    )


def view_metadata_from_json(value: Any, location: str | None = None) -> ViewMetadata:
    """Build :class:`ViewMetadata` from decoded view metadata JSON.

    Raises:
        Unsupported: a ``format-version`` other than 1.
        InvalidMetadata: the JSON breaks the view spec (a missing field, an unknown current
            version or schema).
    """
    where = f"View metadata {location}" if location else "The view metadata"
    obj = _object(value, where)
    version = required_int(obj, "format-version", where)
    if version != VIEW_FORMAT_VERSION:
        raise Unsupported(
            f"{where} has format-version {version}; Icecore reads views of version 1."
        )
    try:
        schemas = tuple(schema_from_json(s) for s in _list(obj, "schemas", where))
    except InvalidMetadata as e:
        raise InvalidMetadata(f"{where} has an invalid schema: {e}") from e
    md = ViewMetadata(
        view_uuid=required_str(obj, "view-uuid", where),
        location=required_str(obj, "location", where),
        current_version_id=required_int(obj, "current-version-id", where),
        versions=tuple(
            view_version_from_json(v, f"{where}'s version {i}")
            for i, v in enumerate(_list(obj, "versions", where))
        ),
        schemas=schemas,
        version_log=tuple(
            _log_entry(e, f"{where}'s version-log entry {i}")
            for i, e in enumerate(_list(obj, "version-log", where))
        ),
        properties=_strings(obj.get("properties"), f"{where}'s 'properties'"),
        format_version=version,
        extra=_extra(obj, _TOP_KEYS),
    )
    if md.version(md.current_version_id) is None:
        raise InvalidMetadata(f"{where} names current version {md.current_version_id}, not listed.")
    for v in md.versions:
        if md.schema(v.schema_id) is None:
            raise InvalidMetadata(
                f"{where}: version {v.version_id} names unknown schema {v.schema_id}."
            )
    return md


def parse_view_metadata(data: str | bytes, location: str | None = None) -> ViewMetadata:
    """Parse a view metadata file's content (at most :data:`MAX_METADATA_BYTES`)."""
    where = location or "<view metadata JSON>"
    if len(data) > MAX_METADATA_BYTES:
        raise InvalidMetadata(f"View metadata file {where} is larger than the most read.")
    try:
        obj = decode_metadata_json(data)  # Spark writes views' files gzipped by default
    except InvalidMetadata as e:
        raise InvalidMetadata(f"View metadata file {where} is unreadable: {e}.") from e
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise InvalidMetadata(f"View metadata file {where} is not valid JSON: {e}.") from e
    return view_metadata_from_json(obj, location)


# Writing -------------------------------------------------------------------------------------


def _with_extra(out: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        out.setdefault(key, copy.deepcopy(value))
    return out


def representation_to_json(rep: ViewRepresentation) -> dict[str, Any]:
    """One representation as the spec spells it, unknown keys included."""
    if rep.type.lower() != "sql":
        return _with_extra({"type": rep.type}, rep.extra)
    return _with_extra({"type": rep.type, "sql": rep.sql, "dialect": rep.dialect}, rep.extra)


def view_version_to_json(version: ViewVersion) -> dict[str, Any]:
    """One version in Iceberg Java's key order, unknown keys included."""
    out: dict[str, Any] = {
        "version-id": version.version_id,
        "timestamp-ms": version.timestamp_ms,
        "schema-id": version.schema_id,
        "summary": dict(version.summary),
    }
    if version.default_catalog is not None:
        out["default-catalog"] = version.default_catalog
    out["default-namespace"] = list(version.default_namespace)
    out["representations"] = [representation_to_json(r) for r in version.representations]
    return _with_extra(out, version.extra)


def view_metadata_to_json(md: ViewMetadata) -> dict[str, Any]:
    """The view metadata JSON (view spec "View Metadata"), unknown keys included."""
    out: dict[str, Any] = {
        "view-uuid": md.view_uuid,
        "format-version": md.format_version,
        "location": md.location,
        "schemas": [schema_to_json(s) for s in md.schemas],
        "current-version-id": md.current_version_id,
        "versions": [view_version_to_json(v) for v in md.versions],
        "version-log": [
            _with_extra({"timestamp-ms": e.timestamp_ms, "version-id": e.version_id}, e.extra)
            for e in md.version_log
        ],
    }
    if md.properties:
        out["properties"] = dict(md.properties)
    return _with_extra(out, md.extra)


def serialize_view_metadata(md: ViewMetadata) -> bytes:
    """The bytes of a view metadata file."""
    return json.dumps(view_metadata_to_json(md)).encode()


# Updates -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddViewVersion:
    """Add a version (REST ``add-view-version``); ``schema_id`` -1 is the schema added last."""

    action: ClassVar[str] = "add-view-version"
    version: ViewVersion


@dataclass(frozen=True, slots=True)
class SetCurrentViewVersion:
    """Make a version current (REST ``set-current-view-version``; -1 the one added last)."""

    action: ClassVar[str] = "set-current-view-version"
    version_id: int


ViewUpdate = (
    AssignUUID
    | UpgradeFormatVersion
    | AddSchema
    | SetLocation
    | SetProperties
    | RemoveProperties
    | AddViewVersion
    | SetCurrentViewVersion
)

_SHARED_ACTIONS = frozenset(
    {
        "assign-uuid",
        "upgrade-format-version",
        "add-schema",
        "set-location",
        "set-properties",
        "remove-properties",
    }
)
VIEW_UPDATE_ACTIONS = _SHARED_ACTIONS | {"add-view-version", "set-current-view-version"}
"""Every ``ViewUpdate`` action of the REST spec."""


def view_update_from_json(obj: Any) -> ViewUpdate:
    """One ``ViewUpdate`` object as its tagged value (an allow-list of the 8 actions).

    Raises:
        InvalidMetadata: not an object, an action views do not have, or a bad field.
    """
    if not isinstance(obj, Mapping) or not isinstance(obj.get("action"), str):
        raise InvalidMetadata("Each view update must be an object with a string 'action'.")
    action = obj["action"]
    if action == "add-view-version":
        return AddViewVersion(view_version_from_json(obj.get("view-version"), "'view-version'"))
    if action == "set-current-view-version":
        return SetCurrentViewVersion(
            required_int(obj, "view-version-id", "set-current-view-version")
        )
    if action not in _SHARED_ACTIONS:
        raise InvalidMetadata(f"Unknown view update action {action[:100]!r}.")
    return update_from_json(obj)  # type: ignore[return-value]


def view_updates_from_json(value: Any) -> list[ViewUpdate]:
    """The ``updates`` list of a ``CommitViewRequest``, in order."""
    if not isinstance(value, list):
        raise InvalidMetadata("'updates' must be a list.")
    return [view_update_from_json(u) for u in value]


def view_update_to_json(update: ViewUpdate) -> dict[str, Any]:
    """One ``ViewUpdate`` in its REST form."""
    if isinstance(update, AddViewVersion):
        return {"action": update.action, "view-version": view_version_to_json(update.version)}
    if isinstance(update, SetCurrentViewVersion):
        return {"action": update.action, "view-version-id": update.version_id}
    return update_to_json(update)


def view_uuid_requirement(value: Any) -> str | None:
    """The uuid an ``assert-view-uuid`` requirement names (None: no requirement).

    ``requirements`` is a list of ``ViewRequirement``; the spec defines only that one type.

    Raises:
        InvalidMetadata: not a list, or a requirement of another type.
    """
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidMetadata("'requirements' must be a list.")
    wanted: str | None = None
    for req in value:
        if not isinstance(req, Mapping) or req.get("type") != "assert-view-uuid":
            raise InvalidMetadata("A view requirement must be of type 'assert-view-uuid'.")
        wanted = required_str(req, "uuid", "Requirement assert-view-uuid")
    return wanted


def _same_schema(a: Schema, b: Schema) -> bool:
    return a.fields == b.fields and a.identifier_field_ids == b.identifier_field_ids


def _now_ms() -> int:
    return int(time.time() * 1000)


def apply_view_updates(
    base: ViewMetadata | None, updates: Sequence[ViewUpdate], *, location: str | None = None
) -> ViewMetadata:
    """The view metadata after ``updates``, as Iceberg Java's ``ViewMetadata.Builder``.

    ``base`` None builds a new view: its updates must assign a uuid (one is generated
    otherwise), add a schema and a version, and make one current; ``location`` is its
    base location unless a ``set-location`` gives one.

    Raises:
        ValidationError: an update that cannot apply (an unknown schema or version, -1 with
            nothing added, two SQL representations of one dialect, a changed uuid, a
            format version other than 1, a non-positive history size).
    """
    view_uuid = base.view_uuid if base else None
    loc = base.location if base else location
    schemas = list(base.schemas) if base else []
    versions = list(base.versions) if base else []
    log = list(base.version_log) if base else []
    props = dict(base.properties) if base else {}
    current = base.current_version_id if base else None
    last_schema: int | None = None
    last_version: int | None = None
    added_versions: set[int] = set()
    new_entry: ViewLogEntry | None = None

    for update in updates:
        match update:
            case AssignUUID(uuid=value):
                if view_uuid is not None and view_uuid != value:
                    raise ValidationError(
                        f"Cannot reassign the view's uuid {view_uuid} to {value}."
                    )
                view_uuid = value
            case UpgradeFormatVersion(format_version=fv):
                if fv != VIEW_FORMAT_VERSION:
                    raise ValidationError(f"View format-version {fv} is not supported; only 1 is.")
            case SetLocation(location=value):
                loc = value
            case SetProperties(updates=values):
                props.update(values)
            case RemoveProperties(removals=keys):
                for key in keys:
                    props.pop(key, None)
            case AddSchema(schema=schema):
                same = next((s for s in schemas if _same_schema(s, schema)), None)
                if same is not None:
                    last_schema = same.schema_id
                    continue
                new_id = schema.schema_id
                for s in schemas:
                    if s.schema_id >= new_id:
                        new_id = s.schema_id + 1
                schemas.append(replace(schema, schema_id=new_id))
                last_schema = new_id
            case AddViewVersion(version=version):
                if version.schema_id == LAST_ADDED:
                    if last_schema is None:
                        raise ValidationError(
                            "Cannot add a view version with schema -1: no schema was added."
                        )
                    version = replace(version, schema_id=last_schema)
                if not any(s.schema_id == version.schema_id for s in schemas):
                    raise ValidationError(
                        f"Cannot add a view version with unknown schema {version.schema_id}."
                    )
                dialects: set[str] = set()
                for rep in version.representations:
                    if rep.type.lower() == "sql":
                        if rep.dialect.lower() in dialects:
                            raise ValidationError(
                                f"A view version has two SQL representations of dialect "
                                f"{rep.dialect[:100]!r}; the spec allows one per dialect."
                            )
                        dialects.add(rep.dialect.lower())
                same_version = next((v for v in versions if v.same_definition(version)), None)
                if same_version is not None:
                    last_version = same_version.version_id
                    continue
                new_id = version.version_id
                for v in versions:
                    if v.version_id >= new_id:
                        new_id = v.version_id + 1
                versions.append(replace(version, version_id=new_id))
                added_versions.add(new_id)
                last_version = new_id
            case SetCurrentViewVersion(version_id=vid):
                if vid == LAST_ADDED:
                    if last_version is None:
                        raise ValidationError(
                            "Cannot set the current view version to -1: no version was added."
                        )
                    vid = last_version
                chosen = next((v for v in versions if v.version_id == vid), None)
                if chosen is None:
                    raise ValidationError(f"Cannot set the current view version to unknown {vid}.")
                if vid == current:
                    continue
                current = vid
                stamp = chosen.timestamp_ms if vid in added_versions else _now_ms()
                new_entry = ViewLogEntry(stamp, vid)
            case _:
                raise ValidationError(f"Views have no update {type(update).__name__}.")

    if current is None:
        raise ValidationError("A new view needs a current version (set-current-view-version).")
    if not loc:
        raise ValidationError("A view needs a location.")
    if new_entry is not None:
        log.append(new_entry)
    try:
        keep = int(props.get(VERSION_HISTORY_SIZE, VERSION_HISTORY_SIZE_DEFAULT))
    except ValueError:
        keep = 0
    if keep < 1:
        raise ValidationError(f"{VERSION_HISTORY_SIZE} must be a positive integer.")
    if len(versions) > keep:
        # The current version, then the newest others (Iceberg Java's retention).
        retained = {current}
        for v in sorted(versions, key=lambda v: v.version_id, reverse=True):
            if len(retained) >= keep:
                break
            retained.add(v.version_id)
        versions = [v for v in versions if v.version_id in retained]
        trimmed: list[ViewLogEntry] = []
        for entry in log:  # nothing before an expired version stays (Java's updateHistory)
            if entry.version_id in retained:
                trimmed.append(entry)
            else:
                trimmed.clear()
        log = trimmed
    return ViewMetadata(
        view_uuid=view_uuid or str(uuid_module.uuid4()),
        location=loc,
        current_version_id=current,
        versions=tuple(versions),
        schemas=tuple(schemas),
        version_log=tuple(log),
        properties=props,
        format_version=VIEW_FORMAT_VERSION,
        extra=base.extra if base else _EMPTY,
    )


def new_view_metadata(
    location: str,
    schema: Schema,
    version: ViewVersion,
    properties: Mapping[str, str] | None = None,
) -> ViewMetadata:
    """A new view's metadata (REST ``CreateViewRequest``): a fresh uuid, the schema, the version.

    The version is made to use the schema (its ``schema-id`` as the request gave it is
    replaced), as Iceberg Java's ``setCurrentVersion(version, schema)`` does.
    """
    return apply_view_updates(
        None,
        [
            AssignUUID(str(uuid_module.uuid4())),
            SetProperties(dict(properties or {})),
            AddSchema(schema, None),
            AddViewVersion(replace(version, schema_id=LAST_ADDED)),
            SetCurrentViewVersion(LAST_ADDED),
        ],
        location=location,
    )


__all__ = [
    "VERSION_HISTORY_SIZE",
    "VIEW_FORMAT_VERSION",
    "VIEW_UPDATE_ACTIONS",
    "AddViewVersion",
    "SetCurrentViewVersion",
    "ViewLogEntry",
    "ViewMetadata",
    "ViewRepresentation",
    "ViewUpdate",
    "ViewVersion",
    "apply_view_updates",
    "new_view_metadata",
    "parse_view_metadata",
    "representation_from_json",
    "serialize_view_metadata",
    "view_metadata_from_json",
    "view_metadata_to_json",
    "view_update_from_json",
    "view_update_to_json",
    "view_updates_from_json",
    "view_uuid_requirement",
    "view_version_from_json",
    "view_version_to_json",
]
