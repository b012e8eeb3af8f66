"""Twin tables Spark wrote the same way: Icecore acts on one, Spark's procedure on the other.

Their snapshot ids differ (each was written on its own), so refs and the snapshot-log are
compared by position in commit order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icecore.table import Table


def positions(table: Table) -> dict[str, Any]:
    """Refs and snapshot-log with each snapshot replaced by its place in commit order."""
    commits = sorted(table.snapshots(), key=lambda s: (s.sequence_number, s.timestamp_ms))
    order = [s.snapshot_id for s in commits]
    md = table.metadata
    return {
        "refs": {n: (r.type.value, order.index(r.snapshot_id)) for n, r in md.refs.items()},
        "log": [order.index(e.snapshot_id) for e in md.snapshot_log],
        "current": order.index(md.current_snapshot_id) if md.current_snapshot_id else None,
    }


def rollback_and_tag_twins(
    spark: Any,
    load_ours: Callable[[], Table],
    load_theirs: Callable[[], Table],
    ours_name: str,
    theirs_name: str,
) -> None:
    """Roll main back to the first snapshot and tag it; both twins must agree, Spark reads on.

    The twins hold rows (1, 'a'), (2, 'b'), (3, 'c') from three INSERTs.
    """
    ours = load_ours()
    first = ours.metadata.ancestors_of(ours.metadata.current_snapshot_id or 0)[-1].snapshot_id
    with ours.manage_snapshots() as manage:
        manage.rollback_to_snapshot(first).create_tag("first", first)
    theirs = load_theirs()
    their_first = theirs.metadata.ancestors_of(theirs.metadata.current_snapshot_id or 0)[-1]
    catalog, table = theirs_name.split(".", 1)
    spark.sql(
        f"CALL {catalog}.system.rollback_to_snapshot('{table}', {their_first.snapshot_id})"
    ).collect()
    spark.sql(f"ALTER TABLE {theirs_name} CREATE TAG first AS OF VERSION {their_first.snapshot_id}")
    assert positions(load_ours()) == positions(load_theirs())
    assert positions(load_ours())["refs"]["first"] == ("tag", 0)
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {ours_name}").collect()] == [(1, "a")]
    spark.sql(f"INSERT INTO {ours_name} VALUES (4, 'd')")
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {ours_name}").collect()) == [
        (1, "a"),
        (4, "d"),
    ]
    main = load_ours().metadata.current_snapshot()
    assert main is not None and main.parent_snapshot_id == first
