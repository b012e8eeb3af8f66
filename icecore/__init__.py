"""Icecore: read, plan, explain and evolve Apache Iceberg tables.

The core library imports no UI or Spark code; the app and the CLI stand on it.

The public API is what :data:`__all__` names (a notebook needs nothing else; README "Python
API"), and tests/api/public_api.txt records it with the public members of its main
classes, so a change to it is a visible diff in review. ``import icecore`` loads what
loading a table needs (catalogs, FileIO, metadata, schema) and neither pyarrow nor numpy:
the names that stand on them (``TableScan``, ``Plan``, ``MetadataTables``) are loaded on
first access through the module's ``__getattr__`` (PEP 562), so a CLI call or a notebook
that only reads metadata does not pay ~0.25 s and ~50 MiB for them (issue 32 item 4;
PERFORMANCE.md "Targets"). ``__version__`` is the constant of :mod:`icecore.version`, the one
place the version is written (pyproject.toml reads it too), so it costs no
``importlib.metadata`` lookup (~0.05 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from icecore.catalog import Catalog, TableIdentifier, load_catalog, load_table
from icecore.errors import (
    AlreadyExists,
    CatalogUnavailable,
    CommitConflict,
    CommitStateUnknown,
    FilterError,
    Forbidden,
    IcecoreError,
    InvalidMetadata,
    NamespaceNotEmpty,
    NotFound,
    Unsupported,
    ValidationError,
)
from icecore.io import FileIO
from icecore.metadata import Snapshot
from icecore.point_in_time import At, Resolved
from icecore.schema import Schema
from icecore.table import Table
from icecore.version import __version__

if TYPE_CHECKING:
    from icecore.inspect.accessor import MetadataTables
    from icecore.scan.planner import Plan, TableScan

_LAZY = {
    "MetadataTables": "icecore.inspect.accessor",
    "Plan": "icecore.scan.planner",
    "TableScan": "icecore.scan.planner",
}
"""Public names imported on first access: the module each comes from (see above)."""

__all__ = [
    "__version__",
    "load_catalog",
    "load_table",
    "Catalog",
    "Table",
    "TableIdentifier",
    "MetadataTables",
    "At",
    "Resolved",
    "TableScan",
    "Plan",
    "Snapshot",
    "Schema",
    "FileIO",
    "IcecoreError",
    "NotFound",
    "InvalidMetadata",
    "Unsupported",
    "FilterError",
    "ValidationError",
    "AlreadyExists",
    "NamespaceNotEmpty",
    "CommitConflict",
    "Forbidden",
    "CommitStateUnknown",
    "CatalogUnavailable",
]


def __getattr__(name: str) -> Any:
    """Import a name of :data:`_LAZY` on first access, then keep it as a module global."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'icecore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the lazy ones included (so completion in a notebook shows them)."""
    return sorted(set(globals()) | set(_LAZY))
