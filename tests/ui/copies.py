"""Copies of fixture tables for the tests that commit: the shared warehouse never changes.

A SQL-catalog copy is the table's current metadata file with its ``location`` moved into a
private warehouse, registered there through Spark's ``register_table``: commits write their
metadata files into the copy's folder (and Spark's writes their data files), while the
fixture's manifests and data files are only ever read. A filesystem-catalog copy is the
whole table folder, copied into the private Hadoop warehouse.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.icecore.evolution.conftest import EvoCatalogs

_names = itertools.count()


@dataclass(frozen=True)
class Copy:
    """A copied table: how the app and Spark name it, and where it lives.

    Attributes:
        catalog: the catalog as the app takes it (``ICECORE_CATALOG``, ``?catalog=``).
        table: ``namespace.table`` in that catalog.
        spark_name: the name Spark reads it by.
        folder: the copy's table folder.
    """

    catalog: str
    table: str
    spark_name: str
    folder: Path

    def location(self) -> str:
        """The copy's current metadata file, found without Icecore (version hint or SQLite)."""
        hint = self.folder / "metadata" / "version-hint.text"
        if hint.exists():
            return str(self.folder / "metadata" / f"v{hint.read_text().strip()}.metadata.json")
        namespace, name = self.table.rsplit(".", 1)
        with sqlite3.connect(Path(self.catalog) / "catalog.db") as conn:
            row = conn.execute(
                "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? "
                "AND table_name = ?",
                (namespace, name),
            ).fetchone()
        return str(row[0])

    def metadata(self) -> dict[str, Any]:
        """The copy's current metadata JSON."""
        return dict(json.loads(Path(self.location()).read_text()))


def copy_sql_table(evo: EvoCatalogs, demo_warehouse: Path, source: str) -> Copy:
    """Copy ``demo.<source>`` of the fixture's SQL catalog into ``evo``'s SQL catalog."""
    with sqlite3.connect(demo_warehouse / "catalog.db") as conn:
        (location,) = conn.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'demo' "
            "AND table_name = ?",
            (source,),
        ).fetchone()
    name = f"{source}_{next(_names)}"
    folder = evo.warehouse / "db" / name
    raw = json.loads(Path(location).read_text())
    raw["location"] = str(folder)
    target = folder / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(raw))
    evo.spark.sql(
        f"CALL {evo.sql}.system.register_table(table => 'db.{name}', metadata_file => '{target}')"
    )
    return Copy(str(evo.warehouse), f"db.{name}", evo.spark_name("sql", name), folder)


def copy_hadoop_table(evo: EvoCatalogs, demo_warehouse: Path, source: str) -> Copy:
    """Copy ``demo.<source>`` of the fixture's filesystem catalog into ``evo``'s."""
    name = f"{source}_{next(_names)}"
    folder = evo.warehouse / "hadoop" / "db" / name
    shutil.copytree(demo_warehouse / "hadoop" / "demo" / source, folder)
    return Copy(str(evo.warehouse / "hadoop"), f"db.{name}", evo.spark_name("fs", name), folder)
