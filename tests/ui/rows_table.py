"""A small table with rows, written without Spark: ``db.people`` (id, city).

PyIceberg appends the rows through a SQLite catalog of its own with the table's location in a
Hadoop-layout warehouse; its current metadata file then becomes the warehouse's
``v1.metadata.json``. Tests that need a few distinctive row values (a viewer must see none of
them) read them back with icecore, unguarded: the values here are only what is written.
"""

from __future__ import annotations

from pathlib import Path

NAME = "db.people"
CITIES = ["Zanzibar-7731", "Qorvath-2290", "Myxelby-5514", "Ulthrane-0468"]
"""The string values of ``db.people``: words no page prints unless it shows the rows.

Each is shorter than 16 characters, so a writer's bounds of the column hold real values."""


def write_rows_table(warehouse: Path, scratch: Path) -> Path:
    """Write ``db.people`` with :data:`CITIES` into ``warehouse``; ``scratch`` is PyIceberg's.

    Returns the table's folder.
    """
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    scratch.mkdir()
    folder = warehouse / "db" / "people"
    peer = SqlCatalog("peer", uri=f"sqlite:///{scratch / 'peer.db'}", warehouse=str(scratch))
    peer.create_namespace("db")
    rows = pa.table(
        {"id": pa.array(range(1, len(CITIES) + 1), pa.int64()), "city": pa.array(CITIES)}
    )
    table = peer.create_table(NAME, schema=rows.schema, location=str(folder))
    table.append(rows)
    current = Path(peer.load_table(NAME).metadata_location.removeprefix("file://"))
    (folder / "metadata" / "v1.metadata.json").write_text(current.read_text())
    (folder / "metadata" / "version-hint.text").write_text("1")
    return folder
