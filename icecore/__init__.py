"""Icecore: read, plan, explain and evolve Apache Iceberg tables.

The core library imports no UI or Spark code; the app and the CLI stand on it.
"""

from __future__ import annotations

from icecore.catalog import Catalog, TableIdentifier, load_catalog, load_table
from icecore.errors import (
    CommitConflict,
    CommitStateUnknown,
    FilterError,
    IcecoreError,
    InvalidMetadata,
    NotFound,
    Unsupported,
    ValidationError,
)
from icecore.table import Table
from icecore.version import __version__

__all__ = [
    "__version__",
    "Catalog",
    "Table",
    "TableIdentifier",
    "load_catalog",
    "load_table",
    "CommitConflict",
    "CommitStateUnknown",
    "FilterError",
    "IcecoreError",
    "InvalidMetadata",
    "NotFound",
    "Unsupported",
    "ValidationError",
]
