"""The ``identity`` transform: the source value, unmodified (spec "Partition Transforms")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.transforms.base import Transform
from icecore.types import GeographyType, GeometryType, IcebergType, PrimitiveType, VariantType

if TYPE_CHECKING:
    import pyarrow as pa


def _identity(value: Any) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class IdentityTransform(Transform):
    """``identity``: any primitive except geometry and geography; result is the source type."""

    def __str__(self) -> str:
        return "identity"

    def can_transform(self, source: IcebergType) -> bool:
        """Primitives, except the v3 geospatial types and variant."""
        return isinstance(source, PrimitiveType) and not isinstance(
            source, GeometryType | GeographyType | VariantType
        )

    def result_type(self, source: IcebergType) -> IcebergType:
        """The source type."""
        return source

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        return _identity

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """The array itself."""
        return values

    @property
    def preserves_order(self) -> bool:
        """Identity keeps order."""
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        """Ordering by value also orders by any order-preserving transform of it."""
        return other.preserves_order

    @property
    def is_identity(self) -> bool:
        """True."""
        return True
