"""Spark-staged write-audit-publish tables for the cherry-pick tests, and copies of them.

One table per format version, written once per module by Spark with ``write.wap.enabled``
and ``spark.wap.id`` (Iceberg's WAP): snapshots staged off ``main`` next to commits on it.
Each test works on copies registered in the same catalog (the metadata file with its
``location`` moved; the data files and manifests are shared and only read), so Icecore and
Spark can do the same operation on two copies of one state.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.icecore.evolution.conftest import EvoCatalogs

_names = itertools.count()


@dataclass(frozen=True)
class WapTable:
    """A Spark-written table and the snapshots its story made (ids by role).

    Roles: ``s1`` main's first insert; ``w1`` an append staged as ``w1`` on s1; ``w2`` a
    delete staged as ``w2`` on s1; ``s2`` a merge-on-read delete on main; ``s3`` an insert
    on main (the head); ``w3`` an append staged as ``w3`` on s3 (a fast-forward); ``w4`` an
    append staged again as ``w1`` (a re-run of the same job) on s3; ``w5`` a dynamic
    overwrite of partition ``b`` staged as ``w5`` on s3; ``w6`` one of partition ``a``
    staged as ``w6`` on s3 (w3 adds to ``a`` after s3).
    """

    name: str
    spark_name: str
    format_version: int
    ids: dict[str, int]


def _staged(spark: Any, wap_id: str, statement: str) -> None:
    spark.conf.set("spark.wap.id", wap_id)
    try:
        spark.sql(statement)
    finally:
        spark.conf.unset("spark.wap.id")


ROLES = ("s1", "w1", "w2", "s2", "s3", "w3", "w4", "w5", "w6")
"""The story's snapshots in commit order (each statement commits one)."""


def stage_wap_table(evo: EvoCatalogs, format_version: int) -> WapTable:
    """Write the WAP story into a new table of ``evo``'s SQL catalog (see :class:`WapTable`)."""
    spark = evo.spark
    name = f"wap_v{format_version}_{next(_names)}"
    full = evo.spark_name("sql", name)
    spark.sql(
        f"CREATE TABLE {full} (id BIGINT, cat STRING, amount DOUBLE) USING iceberg "
        f"PARTITIONED BY (cat) TBLPROPERTIES ('format-version'='{format_version}', "
        "'write.wap.enabled'='true', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {full} VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'b', 2.5)")
    _staged(
        spark, "w1", f"INSERT INTO {full} VALUES (10, 'a', 10.0), (11, 'c', 11.0), (12, NULL, 12.0)"
    )
    _staged(spark, "w2", f"DELETE FROM {full} WHERE id = 2")
    spark.sql(f"DELETE FROM {full} WHERE id = 3")
    spark.sql(f"INSERT INTO {full} VALUES (4, 'b', 4.0), (5, 'd', 5.0)")
    _staged(spark, "w3", f"INSERT INTO {full} VALUES (20, 'a', 20.0)")
    _staged(spark, "w1", f"INSERT INTO {full} VALUES (30, 'e', 30.0)")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        _staged(spark, "w5", f"INSERT OVERWRITE {full} VALUES (50, 'b', 50.0)")
        _staged(spark, "w6", f"INSERT OVERWRITE {full} VALUES (60, 'a', 60.0)")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    # Sequence numbers follow commit order, staged snapshots included ("Sequence Numbers").
    raw = json.loads(Path(metadata_location(evo, name)).read_text())
    by_sequence = sorted(raw["snapshots"], key=lambda s: s["sequence-number"])
    assert len(by_sequence) == len(ROLES)
    ids = {role: int(s["snapshot-id"]) for role, s in zip(ROLES, by_sequence, strict=True)}
    return WapTable(name, full, format_version, ids)


@dataclass(frozen=True)
class TableCopy:
    """A copy of a staged table: how Icecore and Spark name it, and its folder."""

    icecore_name: str
    spark_name: str
    folder: Path


def metadata_location(evo: EvoCatalogs, name: str) -> str:
    """The current metadata file of ``db.<name>`` in ``evo``'s SQL catalog, read without Icecore."""
    import sqlite3

    with sqlite3.connect(evo.warehouse / "catalog.db") as conn:
        row = conn.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'db' "
            "AND table_name = ?",
            (name,),
        ).fetchone()
    return str(row[0]).removeprefix("file:")


def copy_table(evo: EvoCatalogs, source: WapTable) -> TableCopy:
    """Register a copy of ``source``'s current metadata under a new name and location."""
    name = f"{source.name}_copy{next(_names)}"
    folder = evo.warehouse / "db" / name
    raw = json.loads(Path(metadata_location(evo, source.name)).read_text())
    raw["location"] = str(folder)
    target = folder / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(raw))
    evo.spark.sql(
        f"CALL {evo.sql}.system.register_table(table => 'db.{name}', metadata_file => '{target}')"
    )
    return TableCopy(f"{evo.sql_uri}::db.{name}", evo.spark_name("sql", name), folder)
