"""Icecore's version, written in this one place.

pyproject.toml reads it for the package's metadata (``[tool.setuptools.dynamic]``, without
importing icecore), ``icecore.__version__`` re-exports it and ``icecore --version`` prints
it, so a source checkout and an installed wheel say the same.
"""

from __future__ import annotations

__version__ = "0.1.0"
