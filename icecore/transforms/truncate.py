"""The ``truncate[W]`` transform (spec "Truncate Transform Details").

Integers are floored to a multiple of W (``v - (((v % W) + W) % W)``, so -1 -> -10 for
W=10); decimals the same on the unscaled value at the column's scale; strings keep their
first W Unicode code points (not UTF-16 units, not bytes); binary its first W bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from icecore.errors import InvalidMetadata, ValidationError
from icecore.transforms.base import Transform
from icecore.types import (
    BinaryType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
)
from icecore.values import decimal_to_unscaled, unscaled_to_decimal

if TYPE_CHECKING:
    import pyarrow as pa


def truncate_int(value: int, width: int) -> int:
    """Floor ``value`` to a multiple of ``width`` (the remainder is never negative)."""
    return value - (((value % width) + width) % width)


def truncate_decimal(value: Decimal, width: int, scale: int) -> Decimal:
    """Truncate the unscaled value of ``value`` at ``scale``; the result keeps ``scale``."""
    unscaled = decimal_to_unscaled(value, scale)
    return unscaled_to_decimal(truncate_int(unscaled, width), scale)


def truncate_string(value: str, width: int) -> str:
    """The first ``width`` code points of ``value``."""
    return value[:width]


@dataclass(frozen=True, slots=True)
class TruncateTransform(Transform):
    """``truncate[W]`` on int, long, decimal, string and binary; result is the source type.

    Attributes:
        width: W, a positive width (a length for strings and binary).
    """

    width: int

    def __post_init__(self) -> None:
        if isinstance(self.width, bool) or self.width <= 0:
            raise InvalidMetadata(f"truncate[{self.width}] needs a positive width.")

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def can_transform(self, source: IcebergType) -> bool:
        """int, long, decimal, string, binary."""
        return isinstance(source, IntegerType | LongType | DecimalType | StringType | BinaryType)

    def result_type(self, source: IcebergType) -> IcebergType:
        """The source type."""
        return source

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        w = self.width
        if isinstance(source, IntegerType | LongType):
            return lambda v: truncate_int(v, w)
        if isinstance(source, DecimalType):
            scale = source.scale
            return lambda v: truncate_decimal(Decimal(v), w, scale)
        if isinstance(source, StringType):
            return lambda v: truncate_string(v, w)
        if isinstance(source, BinaryType):
            return lambda v: bytes(v[:w])
        raise ValidationError(f"Transform {self} cannot be applied to type {source}.")

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Truncate a whole array; decimals go one value at a time."""
        from icecore.transforms import _arrow

        w = self.width

        def one(v: Any) -> Any:
            if isinstance(v, Decimal):
                exponent = v.as_tuple().exponent
                assert isinstance(exponent, int)
                return truncate_decimal(v, w, -exponent)
            raise ValidationError(f"Transform {self} cannot be applied to {v!r}.")

        return _arrow.truncate_array(values, w, one)

    @property
    def preserves_order(self) -> bool:
        """Truncation keeps order (ties allowed)."""
        return True

    def satisfies_order_of(self, other: Transform) -> bool:
        """Only the same truncation, conservatively.

        Whether a different width is implied depends on the source type (a coarser number
        width must be a multiple, a coarser string width must be shorter), which a
        transform alone does not know.
        """
        return self == other
