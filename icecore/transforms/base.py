"""The Transform interface shared by every partition transform.

Implements the contract of the spec's "Partition Transforms" table: each transform knows
which source types it accepts, the type it produces, and returns null for null input.
Transforms are immutable values (frozen dataclasses), so they compare and hash by their
string form and can key caches.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from icecore.errors import ValidationError
from icecore.types import IcebergType
from icecore.values import to_human_string as value_to_human_string

if TYPE_CHECKING:
    import pyarrow as pa


class Transform(ABC):
    """A partition (and sort) transform: a function from a source value to a result value.

    Values follow the Python forms of :mod:`icecore.values` (timestamps are ``int``
    micros or nanos), so applying a transform needs the source type: an ``int`` may be a
    ``long``, a ``time`` or a ``timestamp``. :meth:`bind` checks the type once and returns
    a plain function; :meth:`apply` is the one-value shortcut.
    """

    __slots__ = ()

    @abstractmethod
    def __str__(self) -> str:
        """The transform's JSON string, e.g. ``bucket[16]`` (Appendix C)."""

    @abstractmethod
    def can_transform(self, source: IcebergType) -> bool:
        """Whether the spec allows this transform on ``source``."""

    @abstractmethod
    def result_type(self, source: IcebergType) -> IcebergType:
        """The type of the values this transform produces from ``source`` values."""

    @abstractmethod
    def _bind(self, source: IcebergType) -> Callable[[Any], Any]:
        """The function for non-null values of ``source``; called after validation."""

    @abstractmethod
    def apply_arrow(self, values: pa.Array, source: IcebergType | None = None) -> pa.Array:
        """Apply the transform to a whole Arrow array (nulls stay null).

        Args:
            values: the source column, typed as Arrow reads it from Parquet.
            source: the Iceberg source type, needed only when the Arrow type alone is
                ambiguous (an ``int64`` array of timestamp micros, for example).
        """

    def bind(self, source: IcebergType) -> Callable[[Any], Any]:
        """The transform as a function of one value of type ``source`` (None -> None).

        Raises:
            ValidationError: the spec does not allow this transform on ``source``.
        """
        if not self.can_transform(source):
            raise ValidationError(f"Transform {self} cannot be applied to type {source}.")
        fn = self._bind(source)

        def apply(value: Any) -> Any:
            return None if value is None else fn(value)

        return apply

    def apply(self, source: IcebergType, value: Any) -> Any:
        """Transform one value of type ``source``; None gives None."""
        return self.bind(source)(value)

    def to_human_string(self, source: IcebergType, value: Any) -> str:
        """Print a transformed value the way Spark writes it in paths and metadata tables.

        Args:
            source: the source column's type (identity and truncate print by it).
            value: a value produced by this transform, or None (printed ``null``).
        """
        return value_to_human_string(self.result_type(source), value)

    @property
    def preserves_order(self) -> bool:
        """Whether ``a <= b`` implies ``t(a) <= t(b)`` (identity, truncate, time parts)."""
        return False

    @property
    def is_order_preserving(self) -> bool:
        """Alias of :attr:`preserves_order`."""
        return self.preserves_order

    def satisfies_order_of(self, other: Transform) -> bool:
        """Whether data ordered by this transform is also ordered by ``other``."""
        return self == other

    @property
    def dedup_name(self) -> str:
        """A name equal for transforms that must not both partition one column.

        Year, month, day and hour all share ``time``: a spec holding two of them on one
        source column is redundant.
        """
        return str(self)

    @property
    def is_identity(self) -> bool:
        """Whether this is the identity transform."""
        return False

    @property
    def is_void(self) -> bool:
        """Whether this transform always produces null."""
        return False
