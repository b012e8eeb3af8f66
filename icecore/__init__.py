"""Icecore: read, plan, explain and evolve Apache Iceberg tables.

The core library imports no UI or Spark code; the app and the CLI stand on it.

The public API is what :data:`__all__` names (a notebook needs nothing else; README "Python
API"), and tests/api/public_api.txt records it with the public members of its main
classes, so a change to it is a visible diff in review. Everything here is loaded by
``import icecore`` anyway (``Table`` needs the planner, FileIO, metadata and schema), so the
names cost no import time; only ``__version__`` is looked up on first use, because reading
the installed package's metadata (``importlib.metadata``) costs ~0.05 s.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from icecore.catalog import Catalog, TableIdentifier, load_catalog, load_table
from icecore.errors import (
    AlreadyExists,
    CatalogUnavailable,
    CommitConflict,
    CommitStateUnknown,
    FilterError,
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
    "CommitStateUnknown",
    "CatalogUnavailable",
]


@functools.cache
def _version() -> str:
    """The installed distribution's version; in an uninstalled checkout, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("icecore")
    except PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text())["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "0+unknown"


if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> str:
        """``__version__``, looked up on first use (see the module docstring)."""
        if name == "__version__":
            return _version()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
