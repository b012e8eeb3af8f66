"""Catalogs configured the PyIceberg way: ``.pyiceberg.yaml`` and ``PYICEBERG_*`` variables.

A team that uses PyIceberg already names its catalogs there; ``load_catalog("NAME")`` and
``NAME::ns.t`` open them after icecore.toml's (DESIGN.md "Packaging"). The rules are
PyIceberg 0.12's own (``pyiceberg/utils/config.py`` and ``pyiceberg/catalog/__init__.py``):

- the file: the first ``.pyiceberg.yaml`` found in ``PYICEBERG_HOME``, the home folder, then
  the current folder (an empty file is passed over); keys lower-cased at every level, values
  taken as text;
- the environment: every variable whose name starts with ``PYICEBERG_`` (any case), the rest
  lower-cased and split at ``__`` into at most three levels, ``_`` read as ``-`` within each:
  ``PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID`` is ``catalog`` / ``prod`` /
  ``s3.access-key-id``. A variable wins over the file (even an empty one);
- a catalog is ``catalog.NAME`` (NAME lower-cased); ``default-catalog`` names the default;
- its ``type`` (lower-cased) picks the catalog type; without one the ``uri`` decides
  (``http`` is rest, ``thrift`` hive, ``sqlite``/``postgresql`` sql).

What Icecore opens is :data:`icecore.catalog.registry.CATALOG_TYPES`: ``rest``, ``sql``
(``uri`` in SQLAlchemy's spelling, ``sqlite:///relative.db`` or ``sqlite:////abs.db``,
``postgresql+psycopg://...``; ``echo``, ``pool_*`` and ``init_catalog_tables`` are
PyIceberg's engine settings and are ignored; the catalog's ``catalog_name`` is NAME, as in
PyIceberg) and ``hadoop`` (PyIceberg has no filesystem catalog; Iceberg Java's name, with
``warehouse``). Any other type is refused in one sentence naming these.

PyYAML is imported here only, and only when a ``.pyiceberg.yaml`` file exists. Properties
may hold secrets (``credential``, ``token``, a password in ``uri``, ``s3.secret-access-key``):
no message here names a value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from icecore.catalog.registry import CatalogSpec, CatalogType, find, for_uri
from icecore.errors import Unsupported, ValidationError

PYICEBERG_HOME = "PYICEBERG_HOME"
PYICEBERG_YML = ".pyiceberg.yaml"
PREFIX = "pyiceberg_"
CATALOG = "catalog"
DEFAULT_CATALOG = "default-catalog"
DEFAULT = "default"
SOURCE = "the PyIceberg configuration"
"""How messages name where a PyIceberg catalog's properties came from."""

_IGNORED = frozenset({"echo", "init_catalog_tables", "schema_version", "py-catalog-impl"})
"""PyIceberg SqlCatalog's engine settings: nothing Icecore's catalogs take."""


@dataclass(frozen=True, slots=True)
class PyIcebergCatalog:
    """One ``catalog.NAME`` of PyIceberg's configuration.

    Attributes:
        name: the name as asked for (PyIceberg keeps its case for the catalog's name).
        properties: its properties, as text.
    """

    name: str
    properties: Mapping[str, str]

    def __repr__(self) -> str:
        return f"PyIcebergCatalog({self.name!r}, <{len(self.properties)} properties>)"


def config_file() -> tuple[Path, dict[str, Any]] | None:
    """The ``.pyiceberg.yaml`` PyIceberg reads and what it holds, if any.

    The first of ``PYICEBERG_HOME``, the home folder and the current folder holding a
    non-empty one.

    Raises:
        ValidationError: that file is malformed.
    """
    for folder in (os.environ.get(PYICEBERG_HOME), os.path.expanduser("~"), os.getcwd()):
        if folder:
            path = Path(folder) / PYICEBERG_YML
            if path.is_file() and (data := _read_file(path)):
                return path, data
    return None


def _read_file(path: Path) -> dict[str, Any]:
    """The file's mapping, keys lower-cased; empty when the file holds nothing.

    Raises:
        ValidationError: not YAML, or not a mapping at the top.
    """
    import yaml  # ~5 MiB; only when a .pyiceberg.yaml exists

    try:
        text = path.read_text(encoding="utf-8")
        raw = yaml.load(text, Loader=yaml.BaseLoader)  # every scalar as text, as strictyaml
    except OSError as e:
        raise ValidationError(f"Cannot read {path}: {e.strerror}.") from e
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        where = getattr(e, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise ValidationError(
            f"{path} is not valid YAML{line}; fix it or move it away (PyIceberg reads it too)."
        ) from None
    if raw is None or raw == "":
        return {}
    if not isinstance(raw, dict):
        raise ValidationError(f"{path} must hold a mapping (catalog: NAME: key: value).")
    return _lowercase(raw)


def _lowercase(mapping: dict[str, Any]) -> dict[str, Any]:
    return {str(k).lower(): _lowercase(v) if isinstance(v, dict) else v for k, v in mapping.items()}


def _from_environment(config: dict[str, Any], environ: Mapping[str, str]) -> None:
    """Set every ``PYICEBERG_*`` variable into ``config`` (PyIceberg's ``set_property``)."""
    for variable, value in environ.items():
        lower = variable.lower()
        if not lower.startswith(PREFIX):
            continue
        path = [p.replace("__", ".").replace("_", "-") for p in lower[len(PREFIX) :].split("__", 2)]
        node = config
        for level in path[:-1]:
            child = node.setdefault(level, {})
            if not isinstance(child, dict):
                raise ValidationError(
                    f"The environment variable {variable} sets a key below {level!r}, which "
                    "the PyIceberg configuration has as a value; remove one of them."
                )
            node = child
        node[path[-1]] = value


def load() -> dict[str, Any]:
    """The whole PyIceberg configuration: the file, then the environment over it.

    Raises:
        ValidationError: the file is malformed, or a variable clashes with it.
    """
    found = config_file()
    config = found[1] if found is not None else {}
    _from_environment(config, os.environ)
    return config


def default_catalog_name(config: Mapping[str, Any] | None = None) -> str:
    """``default-catalog``, else ``default`` (what PyIceberg opens when given no name)."""
    config = load() if config is None else config
    name = config.get(DEFAULT_CATALOG)
    if name is None or name == "":
        return DEFAULT
    if not isinstance(name, str):
        raise ValidationError(f"In {SOURCE}, {DEFAULT_CATALOG} must be a catalog name.")
    return name


def catalog_names(config: Mapping[str, Any] | None = None) -> list[str]:
    """The names ``catalog:`` holds (PyIceberg's ``list_catalogs``)."""
    return list(_catalogs(load() if config is None else config))


def _catalogs(config: Mapping[str, Any]) -> Mapping[str, Any]:
    catalogs = config.get(CATALOG, {})
    if not isinstance(catalogs, dict):
        raise ValidationError(f"In {SOURCE}, catalog must hold one mapping per catalog name.")
    return catalogs


def find_catalog(name: str, config: Mapping[str, Any] | None = None) -> PyIcebergCatalog | None:
    """``catalog.NAME`` of the configuration (NAME compared lower-cased), or None.

    Raises:
        ValidationError: the configuration or the entry is malformed.
    """
    body = _catalogs(load() if config is None else config).get(name.lower())
    if body is None:
        return None
    what = f"catalog.{name.lower()}"
    if not isinstance(body, dict) or not all(isinstance(v, str) for v in body.values()):
        raise ValidationError(f"In {SOURCE}, {what} must hold plain key: value properties.")
    return PyIcebergCatalog(name, MappingProxyType(dict(body)))


def catalog_type(entry: PyIcebergCatalog) -> str:
    """The entry's type: ``type`` lower-cased, else inferred from ``uri`` as PyIceberg does.

    Raises:
        ValidationError: no type and no ``uri`` to infer it from, or a ``uri`` of no known kind.
    """
    given = entry.properties.get("type", "").strip().lower()
    if given:
        return given
    uri = entry.properties.get("uri", "")
    if not uri:
        raise ValidationError(
            f"PyIceberg catalog {entry.name} has no type and no uri; set "
            f"PYICEBERG_CATALOG__{entry.name.upper()}__URI or its uri in {PYICEBERG_YML}."
        )
    for prefix, kind in (("http", "rest"), ("thrift", "hive"), ("sqlite", "sql")):
        if uri.startswith(prefix):
            return kind
    if uri.startswith("postgresql"):
        return "sql"
    raise ValidationError(
        f"PyIceberg catalog {entry.name} has no type and its uri's scheme names none; set its "
        "type (rest, sql or hadoop)."
    )


def catalog_spec(entry: PyIcebergCatalog, *, read_only: bool) -> tuple[CatalogType, CatalogSpec]:
    """What the registry opens for a PyIceberg catalog: its type and its spec.

    Raises:
        Unsupported: a type Icecore does not open (the sentence names those it does).
        ValidationError: a property the type needs is missing.
    """
    kind_name = catalog_type(entry)
    what = f"PyIceberg catalog {entry.name}"
    properties = {k: v for k, v in entry.properties.items() if k not in _IGNORED}
    if "py-catalog-impl" in entry.properties:
        raise Unsupported(
            f"{what} names a Python class (py-catalog-impl), which Icecore cannot load; give "
            "it a type Icecore opens (rest, sql or hadoop)."
        )
    key = "warehouse" if kind_name == "hadoop" else "uri"
    given = properties.get(key, "").strip()
    if kind_name in ("rest", "sql", "hadoop") and not given:
        raise ValidationError(
            f"{what} has no {key}; set PYICEBERG_CATALOG__{entry.name.upper()}__{key.upper()} "
            f"or its {key} in {PYICEBERG_YML}."
        )
    uri = _sqlalchemy_to_icecore(given, entry.name, what) if kind_name == "sql" else given
    kind = find(kind_name, uri, what=what)
    return kind, CatalogSpec(
        uri,
        MappingProxyType(properties),
        name=entry.name,
        read_only=read_only,
        source=f"catalog {entry.name} of {SOURCE}",
    )


def _sqlalchemy_to_icecore(uri: str, name: str, what: str) -> str:
    """A SQLAlchemy URL as Icecore's catalog string, ``catalog_name`` = ``name``.

    SQLAlchemy reads ``sqlite:///x.db`` as ``x.db`` relative to the current folder and
    ``sqlite:////x.db`` as ``/x.db``; Icecore's ``sqlite:///`` is followed by an absolute path.
    ``postgresql+DRIVER://`` becomes ``postgresql://``, its query kept (libpq options).
    """
    parts = urlsplit(uri)
    scheme = parts.scheme.lower().split("+", 1)[0]
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "catalog"]
    query.append(("catalog", name))
    if scheme == "sqlite":
        path = uri.split(":", 1)[1].split("?", 1)[0]
        path = path[3:] if path.startswith("///") else ""
        if not path or path == ":memory:":
            raise Unsupported(
                f"{what} is an in-memory SQLite catalog, which holds no table another process "
                "can see; give it a sqlite:///file.db uri."
            )
        return f"sqlite:///{os.path.abspath(path)}?{urlencode(query)}"
    if scheme in ("postgresql", "postgres"):
        return urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(query), ""))
    if for_uri(uri) is None:
        raise Unsupported(
            f"{what} is a sql catalog on a database Icecore does not open; use SQLite "
            "(sqlite:///file.db) or PostgreSQL (postgresql+psycopg://...)."
        )
    return uri


def open_spec(name: str, *, read_only: bool) -> tuple[CatalogType, CatalogSpec] | None:
    """The type and spec of PyIceberg catalog ``name``, or None when it names none.

    Raises:
        ValidationError, Unsupported: as :func:`catalog_spec`, or a malformed configuration.
    """
    entry = find_catalog(name)
    if entry is None:
        return None
    return catalog_spec(entry, read_only=read_only)


__all__ = [
    "PYICEBERG_HOME",
    "PYICEBERG_YML",
    "SOURCE",
    "PyIcebergCatalog",
    "catalog_names",
    "catalog_spec",
    "catalog_type",
    "config_file",
    "default_catalog_name",
    "find_catalog",
    "load",
    "open_spec",
]
