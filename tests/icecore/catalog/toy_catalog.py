"""A catalog type added the documented way: this module and one line in the registry.

``type: toy`` with ``metadata: <path of a metadata.json>``: one table, read-only. The test
adds the line ``CatalogType("toy", "tests.icecore.catalog.toy_catalog:load_toy")``.
"""

from __future__ import annotations

from icecore.catalog.registry import CatalogSpec
from icecore.catalog.static import StaticCatalog


class ToyCatalog(StaticCatalog):
    """One table named by a metadata.json path, answering as its own type."""

    kind = "toy"


def load_toy(spec: CatalogSpec) -> ToyCatalog:
    """The registry's loader for ``type: toy``."""
    return ToyCatalog(spec.properties["metadata"], io=spec.file_io())
