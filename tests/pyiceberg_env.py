"""A test's own PyIceberg configuration, and PyIceberg as the peer that reads it too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def isolate(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """No configuration but the test's: ``home`` as the home folder, nothing else.

    No ``PYICEBERG_*`` variable, no icecore.toml; PyIceberg's own cached configuration is put
    back afterwards.
    """
    import pyiceberg.catalog

    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", pyiceberg.catalog._ENV_CONFIG)
    for name in list(os.environ):
        if name.lower().startswith("pyiceberg_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ICECORE_CONFIG", str(home / "absent.toml"))


def pyiceberg_tables(name: str) -> set[str]:
    """The tables PyIceberg lists for its catalog ``name``, from the configuration as it is now.

    PyIceberg reads its configuration once, at import: it is read again here.
    """
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    pyiceberg.catalog._ENV_CONFIG = Config()
    catalog = pyiceberg.catalog.load_catalog(name)
    return {".".join(t) for ns in catalog.list_namespaces() for t in catalog.list_tables(ns)}
