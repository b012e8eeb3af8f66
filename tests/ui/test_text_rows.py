"""Values shown as text in a grid (the changed rows of Time travel): written by hand."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa

from ui.views import text_rows


def test_every_value_is_text_and_a_null_says_so() -> None:
    table = pa.table(
        {
            "n": [1, None],
            "ts": pa.array(
                [dt.datetime(2024, 8, 1, 10, tzinfo=dt.UTC), None], pa.timestamp("us", tz="UTC")
            ),
            "price": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(5, 2)),
            "nested": pa.array([{"x": 1}, None]),
            "f": [0.1, float("nan")],
            "day": pa.array([dt.date(2024, 1, 1), None]),
            "raw": pa.array([b"\x01\xff", None]),
            "s": ["[x](https://example.org)", None],
        }
    )
    shown = text_rows(table)
    assert all(pa.types.is_string(t) for t in shown.schema.types)
    assert shown.to_pylist() == [
        {
            "n": "1",
            "ts": "2024-08-01 10:00:00.000000Z",
            "price": "1.50",
            "nested": '{"x": 1}',
            "f": "0.1",
            "day": "2024-01-01",
            "raw": "01ff",
            "s": "[x](https://example.org)",
        },
        {
            "n": "NULL",
            "ts": "NULL",
            "price": "NULL",
            "nested": "NULL",
            "f": "NaN",
            "day": "NULL",
            "raw": "NULL",
            "s": "NULL",
        },
    ]
