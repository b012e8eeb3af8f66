"""Partition transforms, parsed from and printed to their spec strings.

Implements the "Partition Transforms" table and the transform strings of Appendix C
(``identity``, ``bucket[N]``, ``truncate[W]``, ``year``, ``month``, ``day``, ``hour``,
``void``). :func:`parse_transform` rejects strings it does not know; metadata readers use
:func:`parse_transform_lenient`, because v3 requires reading tables with unknown transforms
(ignoring those partition fields when filtering).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.errors import InvalidMetadata, Unsupported
from icecore.transforms.base import Transform
from icecore.transforms.bucket import BucketTransform
from icecore.transforms.identity import IdentityTransform
from icecore.transforms.temporal import (
    DayTransform,
    HourTransform,
    MonthTransform,
    TimeTransform,
    YearTransform,
)
from icecore.transforms.truncate import TruncateTransform
from icecore.transforms.void import VoidTransform
from icecore.types import IcebergType, StringType

if TYPE_CHECKING:
    import pyarrow as pa

_PARAM = re.compile(r"(bucket|truncate)\[(\d+)\]")
_SIMPLE: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}


@dataclass(frozen=True, slots=True)
class UnknownTransform(Transform):
    """A transform string this version does not know, kept verbatim so it round-trips.

    It cannot be applied; partition fields using it are ignored when filtering.

    Attributes:
        text: the transform string as written in metadata.
    """

    text: str

    def __str__(self) -> str:
        return self.text

    def can_transform(self, source: IcebergType) -> bool:
        """False: nothing can be computed with an unknown transform."""
        return False

    def result_type(self, source: IcebergType) -> IcebergType:
        """``string``, as the reference implementation reports unknown transform values."""
        return StringType()

    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        raise Unsupported(f"Transform {self.text!r} is not supported by Icecore.")

    def bind(self, source: IcebergType) -> Callable[[Any], Any]:
        """Raises Unsupported: the transform is unknown."""
        raise Unsupported(f"Transform {self.text!r} is not supported by Icecore.")

    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Raises Unsupported: the transform is unknown."""
        raise Unsupported(f"Transform {self.text!r} is not supported by Icecore.")


def parse_transform(text: str) -> Transform:
    """Parse a transform string such as ``bucket[16]`` (names are case-insensitive).

    Raises:
        Unsupported: the string names no transform Icecore knows.
        InvalidMetadata: a bucket count or width is not positive.
    """
    lowered = text.strip().lower()
    simple = _SIMPLE.get(lowered)
    if simple is not None:
        return simple
    m = _PARAM.fullmatch(lowered)
    if m is not None:
        kind, number = m.group(1), int(m.group(2))
        return BucketTransform(number) if kind == "bucket" else TruncateTransform(number)
    raise Unsupported(f"Transform {text!r} is not one Icecore knows; it may need a newer Icecore.")


def parse_transform_lenient(text: Any) -> Transform:
    """Like :func:`parse_transform`, but an unknown string gives an :class:`UnknownTransform`.

    Raises:
        InvalidMetadata: the value is not a string, or a known transform has a bad parameter.
    """
    if not isinstance(text, str):
        raise InvalidMetadata(f"A transform must be a JSON string, got {text!r}.")
    try:
        return parse_transform(text)
    except Unsupported:
        return UnknownTransform(text)


def transform_to_string(transform: Transform) -> str:
    """The transform's spec string (the inverse of :func:`parse_transform`)."""
    return str(transform)


__all__ = [
    "BucketTransform",
    "DayTransform",
    "HourTransform",
    "IdentityTransform",
    "MonthTransform",
    "TimeTransform",
    "Transform",
    "TruncateTransform",
    "UnknownTransform",
    "VoidTransform",
    "YearTransform",
    "parse_transform",
    "parse_transform_lenient",
    "transform_to_string",
]
