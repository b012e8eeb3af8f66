"""UpdateSortOrder: replace the table's default sort order (spec "Sorting").

As PyIceberg's ``UpdateSortOrder`` and Iceberg Java's ``ReplaceSortOrder``: the fields given
with :meth:`UpdateSortOrder.asc` and :meth:`UpdateSortOrder.desc`, most significant first,
become the new default order; none at all means unsorted (order id 0, reserved for it). A
sort source must be a primitive outside lists and maps that its transform accepts. An
identical existing order is reused, else the new order takes the highest id + 1.
"""

from __future__ import annotations

from icecore.errors import ValidationError
from icecore.evolution.base import PendingUpdate, Plan, Stage
from icecore.evolution.spec import resolve_source, resolve_transform
from icecore.metadata.requirements import AssertDefaultSortOrderId, AssertTableUUID
from icecore.metadata.updates import LAST_ADDED, AddSortOrder, SetDefaultSortOrder
from icecore.sorting import NullOrder, SortDirection, SortField, SortOrder
from icecore.transforms import Transform


def _null_order(value: NullOrder | str) -> NullOrder:
    if isinstance(value, NullOrder):
        return value
    try:
        return NullOrder(value.strip().lower().replace("_", "-").replace(" ", "-"))
    except ValueError as e:
        raise ValidationError(
            f"Unknown null order {value!r}: use nulls-first or nulls-last."
        ) from e


class UpdateSortOrder(PendingUpdate):
    """A new default sort order; see the module docstring.

    Args:
        transaction: where the change is staged.
        case_sensitive: match column names exactly (default) or ignoring case.
    """

    def __init__(self, transaction: Stage, *, case_sensitive: bool = True) -> None:
        super().__init__(transaction)
        self._schema = self._base.current_schema()
        self._case_sensitive = case_sensitive
        self._fields: list[SortField] = []

    def _add(
        self,
        source: str,
        transform: str | Transform,
        direction: SortDirection,
        null_order: NullOrder | str,
    ) -> UpdateSortOrder:
        parsed = resolve_transform(transform)
        source_id, _ = resolve_source(self._schema, source, parsed, self._case_sensitive, "sort")
        if any(f.source_id == source_id and f.transform == parsed for f in self._fields):
            raise ValidationError(f"Cannot sort by {parsed}({source}) twice.")
        self._fields.append(SortField(source_id, parsed, direction, _null_order(null_order)))
        return self

    def asc(
        self,
        source: str,
        transform: str | Transform = "identity",
        null_order: NullOrder | str = NullOrder.NULLS_FIRST,
    ) -> UpdateSortOrder:
        """Sort by ``transform(source)`` ascending (nulls first by default, as Spark)."""
        return self._add(source, transform, SortDirection.ASC, null_order)

    def desc(
        self,
        source: str,
        transform: str | Transform = "identity",
        null_order: NullOrder | str = NullOrder.NULLS_LAST,
    ) -> UpdateSortOrder:
        """Sort by ``transform(source)`` descending (nulls last by default, as Spark)."""
        return self._add(source, transform, SortDirection.DESC, null_order)

    def apply(self) -> SortOrder:
        """The new order (its id is assigned when committed)."""
        return SortOrder(1 if self._fields else 0, tuple(self._fields))

    def plan(self) -> Plan:
        """``add-sort-order`` + ``set-default-sort-order``, or nothing if unchanged."""
        order = self.apply()
        if order.fields == self._base.default_sort_order().fields:
            return (), ()
        return (
            (AddSortOrder(order), SetDefaultSortOrder(LAST_ADDED)),
            (
                AssertTableUUID(self._base.table_uuid),
                AssertDefaultSortOrderId(self._base.default_sort_order_id),
            ),
        )


__all__ = ["UpdateSortOrder"]
