"""The ``void`` transform: always null (spec "Partition Transforms", "Partition Evolution").

v1 tables drop a partition field by replacing its transform with ``void``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.transforms.base import Transform
from icecore.types import IcebergType

if TYPE_CHECKING:
    import pyarrow as pa


def _null(value: Any) -> None:
    return None


@dataclass(frozen=True, slots=True)
class VoidTransform(Transform):
    """``void``: accepts any type and produces null of the source type."""

    def __str__(self) -> str:
        return "void"

    def can_transform(self, source: IcebergType) -> bool:
        """Any type."""
        return True

    def result_type(self, source: IcebergType) -> IcebergType:
        """The source type (the spec allows "source type or int")."""
        return source

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        return _null

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """An all-null array of the same Arrow type and length."""
        from icecore.transforms import _arrow

        return _arrow.nulls_like(values)

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """Always ``null``."""
        return "null"

    @property
    def is_void(self) -> bool:
        """True."""
        return True
