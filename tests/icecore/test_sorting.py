from __future__ import annotations

import copy

import pytest

from icecore.errors import InvalidMetadata
from icecore.sorting import (
    UNSORTED_SORT_ORDER,
    NullOrder,
    SortDirection,
    SortField,
    SortOrder,
    sort_order_from_json,
    sort_order_to_json,
)
from icecore.transforms import BucketTransform, IdentityTransform

# Appendix C example.
ORDER = {
    "order-id": 1,
    "fields": [
        {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-first"},
        {"transform": "bucket[4]", "source-id": 3, "direction": "desc", "null-order": "nulls-last"},
    ],
}


def test_round_trip() -> None:
    order = sort_order_from_json(copy.deepcopy(ORDER))
    assert sort_order_to_json(order) == ORDER
    assert order == SortOrder(
        1,
        (
            SortField(2, IdentityTransform(), SortDirection.ASC, NullOrder.NULLS_FIRST),
            SortField(3, BucketTransform(4), SortDirection.DESC, NullOrder.NULLS_LAST),
        ),
    )
    assert str(order) == "[identity(2) ASC NULLS FIRST, bucket[4](3) DESC NULLS LAST]"


def test_unsorted_and_v3_forms() -> None:
    assert sort_order_from_json({"order-id": 0, "fields": []}) == UNSORTED_SORT_ORDER
    assert UNSORTED_SORT_ORDER.is_unsorted
    field = {
        "transform": "zorder",
        "source-ids": [1, 2],
        "direction": "asc",
        "null-order": "nulls-last",
        "x-extra": True,
    }
    order = sort_order_from_json({"order-id": 2, "fields": [field]})
    assert sort_order_to_json(order)["fields"] == [field]


def test_enums_are_the_json_words() -> None:
    assert SortDirection("desc") is SortDirection.DESC
    assert NullOrder("nulls-first") is NullOrder.NULLS_FIRST


@pytest.mark.parametrize(
    "bad",
    [
        {"fields": []},
        {"order-id": 1},
        {
            "order-id": 1,
            "fields": [
                {
                    "transform": "identity",
                    "source-id": 1,
                    "direction": "up",
                    "null-order": "nulls-first",
                }
            ],
        },
        {"order-id": 1, "fields": [{"transform": "identity", "source-id": 1, "direction": "asc"}]},
    ],
)
def test_malformed_orders(bad: object) -> None:
    with pytest.raises(InvalidMetadata):
        sort_order_from_json(bad)
