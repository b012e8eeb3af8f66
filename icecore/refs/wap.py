"""Write-audit-publish: the snapshots staged with a WAP id that a branch has not published yet.

Spark stages a write with ``spark.wap.id`` set: the snapshot is added to the table with
``wap.id`` in its summary but no ref moves to it. Publishing cherry-picks it onto a branch
(Spark's ``publish_changes``, :meth:`icecore.refs.manage.ManageSnapshots.publish_wap`);
the picked snapshot then sits in the branch's history either itself (a fast-forward) or as
a new snapshot whose summary carries ``published-wap-id``.
"""

from __future__ import annotations

from icecore.metadata import MAIN_BRANCH, Snapshot, TableMetadata
from icecore.refs.manage import PUBLISHED_WAP_ID, STAGED_WAP_ID


def _summary(snapshot: Snapshot, key: str) -> str | None:
    return snapshot.summary.get(key) if snapshot.summary is not None else None


def staged_wap_snapshots(
    metadata: TableMetadata, branch: str = MAIN_BRANCH
) -> list[tuple[str, Snapshot]]:
    """(WAP id, snapshot) for each staged snapshot ``branch`` has not published, newest first.

    A WAP id counts as published when a snapshot in the branch's history was staged with it
    or published it.
    """
    ref = metadata.refs.get(branch)
    published: set[str] = set()
    if ref is not None:
        for ancestor in metadata.ancestors_of(ref.snapshot_id):
            for key in (STAGED_WAP_ID, PUBLISHED_WAP_ID):
                value = _summary(ancestor, key)
                if value is not None:
                    published.add(value)
    staged = [
        (wap_id, s)
        for s in metadata.snapshots
        if (wap_id := _summary(s, STAGED_WAP_ID)) is not None and wap_id not in published
    ]
    return sorted(staged, key=lambda item: item[1].timestamp_ms, reverse=True)


__all__ = ["staged_wap_snapshots"]
