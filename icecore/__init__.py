"""Icecore: read, plan, explain and evolve Apache Iceberg tables.

The core library imports no UI or Spark code; the app and the CLI stand on it.
"""

from __future__ import annotations

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

__all__ = [
    "CommitConflict",
    "CommitStateUnknown",
    "FilterError",
    "IcecoreError",
    "InvalidMetadata",
    "NotFound",
    "Unsupported",
    "ValidationError",
]
