"""``pc``: pyarrow.compute, imported by its first use rather than by ``import icecore``.

pyarrow.compute registers every compute kernel as a Python function when imported (~8 MiB,
~30 ms), which a CLI ``history`` or a page reading only metadata never uses. Modules write
``from icecore.compute import pc`` and use ``pc.<function>`` as before; the first lookup of a
name imports the module and keeps the function on ``pc``, so later calls cost what a module
attribute costs (docs/ARCHITECTURE.md "Performance").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["one_array", "pc"]


class _LazyCompute:
    """Attribute access to pyarrow.compute, importing it on the first one."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module("pyarrow.compute"), name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    pc = _LazyCompute()


def one_array(column: pa.ChunkedArray) -> pa.Array:
    """A column as one array: its only chunk as it is, else its chunks combined (a copy).

    ``combine_chunks`` copies even a single chunk: for a batch of decoded manifests, every
    column of the ``data_file`` struct.
    """
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
