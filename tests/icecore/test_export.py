"""Downloads: Parquet and CSV bytes of an Arrow table read back to the same values."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from icecore.export import csv_bytes, parquet_bytes

TABLE = pa.table(
    {
        "id": pa.array([1, 2, None], pa.int64()),
        "name": pa.array(["a", "<b>é</b>", None]),
        "loc": pa.array([{"lat": 1.5, "lon": -2.0}, None, {"lat": 0.0, "lon": 0.0}]),
        "tags": pa.array([["x", "y"], [], None]),
        "raw": pa.array([b"\x00\xff", None, b""]),
        "counts": pa.array([[(1, 10)], None, []], pa.map_(pa.int32(), pa.int64())),
    }
)


def test_parquet_bytes_read_back_equal() -> None:
    assert pq.read_table(io.BytesIO(parquet_bytes(TABLE))).equals(TABLE)


def test_csv_bytes_flatten_nested_values_to_json() -> None:
    # Nulls are empty fields, empty strings quoted ones: read them back that way.
    options = pcsv.ConvertOptions(
        column_types={c: pa.string() for c in TABLE.column_names},
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    back = pcsv.read_csv(io.BytesIO(csv_bytes(TABLE)), convert_options=options).to_pylist()
    assert [r["id"] for r in back] == ["1", "2", None]
    assert [r["name"] for r in back] == ["a", "<b>é</b>", None]
    assert json.loads(back[0]["loc"]) == {"lat": 1.5, "lon": -2.0}
    assert back[1]["loc"] is None
    assert json.loads(back[0]["tags"]) == ["x", "y"] and json.loads(back[1]["tags"]) == []
    assert [r["raw"] for r in back] == ["00ff", None, ""]
    assert json.loads(back[0]["counts"]) == [[1, 10]]
