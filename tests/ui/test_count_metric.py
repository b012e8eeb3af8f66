"""A count tile never overflows: a part of a whole puts the whole under the value."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _tiles() -> None:
    import streamlit as st

    from ui.shell import count_metric

    cols = st.columns(4)
    count_metric(cols[0], "Data files planned", 2_821, 2_831)
    count_metric(cols[1], "Records before deletes", 509_362, 509_390)
    count_metric(cols[2], "Rows", 12_345)


def test_a_long_part_of_a_whole_moves_the_whole_to_the_delta_line() -> None:
    at = AppTest.from_function(_tiles).run()
    assert not at.exception
    tiles = {m.label: m for m in at.metric}
    # "2,821 of 2,831" is cut in a column of four at 1280 px: the value holds the part and
    # the grey delta line the whole; the exact numbers stay on hover.
    planned = tiles["Data files planned"]
    assert (planned.value, planned.proto.delta) == ("2,821", "of 2,831")
    records = tiles["Records before deletes"]
    assert records.value == "509.4 k"
    assert records.proto.delta == "of 509.4 k"
    assert "509,362 of 509,390" in records.proto.help
    assert tiles["Rows"].value == "12,345"
