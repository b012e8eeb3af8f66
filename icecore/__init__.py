"""Icecore: read, plan, explain and evolve Apache Iceberg tables.

The core library imports no UI or Spark code; the app and the CLI stand on it.

The public API is what :data:`__all__` names (a notebook needs nothing else; README "Python
API"), and tests/api/public_api.txt records it with the public members of its main
classes, so a change to it is a visible diff in review. Everything here is loaded by
``import icecore`` anyway (``Table`` needs the planner, FileIO, metadata and schema), so the
names cost no import time. ``__version__`` is the constant of :mod:`icecore.version`, the one
place the version is written (pyproject.toml reads it too), so it costs no
``importlib.metadata`` lookup (~0.05 s).
"""

from __future__ import annotations

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
from icecore.inspect.accessor import MetadataTables
from icecore.io import FileIO
from icecore.metadata import Snapshot
from icecore.point_in_time import At, Resolved
from icecore.scan.planner import Plan, TableScan
from icecore.schema import Schema
from icecore.table import Table
from icecore.version import __version__

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
