"""What each snapshot, tag and branch costs: the files kept alive by it alone.

Issue 34 deliver 3, DESIGN.md "Catalog health" (``icecore retention TABLE``). Expiry deletes
the files the expired snapshots reach and no kept snapshot does (Iceberg Java's
``ExpireSnapshots`` file cleanup, as :func:`icecore.maintenance.expire_snapshots` estimates
it), so a snapshot's cost is exactly the files reachable from it and from no other snapshot
of the table (every snapshot still in the metadata is retained until expired):

* ``exclusive_files`` / ``exclusive_bytes`` of a snapshot: its manifest list (one per
  snapshot), the manifests only its list names, and the live data and delete files (ADDED
  and EXISTING entries, spec "Scan Planning") only those manifests hold: what
  ``expire_snapshots(snapshot_ids => [it])`` deletes. A branch head or tag target cannot be
  expired before its refs are dropped (``refs`` names them).
* of a ref: the same over the snapshots that ref alone reaches (a branch: its head and
  ancestors; a tag: its snapshot) and no other ref does: what dropping the ref and then
  expiring those snapshots deletes, other snapshots kept.

Byte counts are exact: data and delete file sizes and manifest lengths come from the
manifests and manifest lists; a manifest list's length is recorded nowhere in the metadata,
so each snapshot's list is sized by one ``stat``. A Puffin file holding several deletion
vectors is one file. Every manifest is read once (:func:`icecore.snapshot_walk.walk`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icecore.metadata import TableMetadata
from icecore.snapshot_walk import walk

if TYPE_CHECKING:
    from icecore.table_data import TableData

KINDS = ("data", "delete", "manifest", "manifest_list")
"""The kinds of files counted, in output order."""

_MANY = -1
"""Reached by more than one snapshot (snapshot ids are positive, spec "Snapshots")."""
_SHARED = "\0shared"
"""Reached through more than one ref (never a ref name: ref names are non-empty text)."""
_NONE = "\0none"
"""Reached by no ref (rolled back, or left by a dropped branch)."""
UNREFERENCED = "(unreferenced)"
"""How the output names the owner of snapshots no ref reaches."""


@dataclass(frozen=True, slots=True)
class Cost:
    """Files kept alive by one snapshot or ref alone, by kind.

    Attributes:
        files: kind (:data:`KINDS`) -> count.
        bytes: kind -> bytes.
    """

    files: Mapping[str, int]
    bytes: Mapping[str, int]

    @property
    def exclusive_files(self) -> int:
        """Every kind together."""
        return sum(self.files.values())

    @property
    def exclusive_bytes(self) -> int:
        """Every kind together."""
        return sum(self.bytes.values())

    def to_dict(self) -> dict[str, Any]:
        """``exclusive_bytes``, ``exclusive_files`` and ``by_kind`` {kind: {files, bytes}}."""
        return {
            "exclusive_bytes": self.exclusive_bytes,
            "exclusive_files": self.exclusive_files,
            "by_kind": {k: {"files": self.files[k], "bytes": self.bytes[k]} for k in KINDS},
        }


class _Tally:
    def __init__(self) -> None:
        self.files = dict.fromkeys(KINDS, 0)
        self.bytes = dict.fromkeys(KINDS, 0)

    def add(self, kind: str, size: int) -> None:
        self.files[kind] += 1
        self.bytes[kind] += size

    def cost(self) -> Cost:
        return Cost(dict(self.files), dict(self.bytes))


@dataclass(frozen=True, slots=True)
class SnapshotCost:
    """One snapshot's cost, with the refs pointing at it."""

    snapshot_id: int
    timestamp_ms: int
    operation: str
    owner: str
    """The one ref that reaches it, :data:`UNREFERENCED`, or ``""`` when several do."""
    refs: tuple[str, ...]
    cost: Cost

    def to_dict(self) -> dict[str, Any]:
        """As ``icecore retention`` prints it."""
        return {
            "snapshot_id": self.snapshot_id,
            "time": _iso(self.timestamp_ms),
            "operation": self.operation,
            "refs": list(self.refs),
            "kept_only_by": self.owner or None,
            **self.cost.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class RefCost:
    """One ref's cost: the snapshots only it reaches, and their exclusive files."""

    name: str
    kind: str
    snapshot_id: int
    snapshots: tuple[int, ...]
    cost: Cost

    def to_dict(self) -> dict[str, Any]:
        """As ``icecore retention`` prints it."""
        return {
            "name": self.name,
            "type": self.kind,
            "snapshot_id": self.snapshot_id,
            "snapshots_kept_only_by_it": list(self.snapshots),
            **self.cost.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Retention:
    """Costs per snapshot (commit order) and per ref, and what the table holds in all."""

    snapshots: tuple[SnapshotCost, ...]
    refs: tuple[RefCost, ...]
    total: Cost

    def to_dict(self) -> dict[str, Any]:
        """DESIGN.md's JSON: ``snapshots``, ``refs`` and ``total`` (every reachable file)."""
        return {
            "snapshots": [s.to_dict() for s in self.snapshots],
            "refs": [r.to_dict() for r in self.refs],
            "total": {
                "bytes": self.total.exclusive_bytes,
                "files": self.total.exclusive_files,
                "by_kind": self.total.to_dict()["by_kind"],
            },
        }


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


def _owners(metadata: TableMetadata) -> dict[int, str]:
    """Each snapshot's owner: the one ref reaching it, ``_SHARED`` (several) or ``_NONE``."""
    reached: dict[int, set[str]] = {}
    for name, ref in metadata.refs.items():
        if metadata.snapshot_by_id(ref.snapshot_id) is None:
            continue
        ids = (
            [s.snapshot_id for s in metadata.ancestors_of(ref.snapshot_id)]
            if ref.is_branch
            else [ref.snapshot_id]
        )
        for snapshot_id in ids:
            reached.setdefault(snapshot_id, set()).add(name)
    found = {}
    for snapshot in metadata.snapshots:
        names = reached.get(snapshot.snapshot_id, set())
        found[snapshot.snapshot_id] = (
            _NONE if not names else next(iter(names)) if len(names) == 1 else _SHARED
        )
    return found


def _merge(a: Any, b: Any, many: Any) -> Any:
    return a if a == b else many


def retention(table: TableData) -> Retention:
    """Every snapshot's and ref's exclusive files (rules in the module docstring).

    Raises:
        Unsupported: a snapshot lists its manifests inline (v1, before manifest lists).
        NotFound: a manifest list or manifest does not exist.
        InvalidMetadata: one is corrupt.
    """
    metadata = table.metadata
    snapshots = sorted(metadata.snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms))
    owner = _owners(metadata)
    walked = walk(table, snapshots)
    # Who lists each manifest: the one snapshot (or _MANY), and the one owner (or _SHARED).
    lister: dict[str, int] = {}
    lister_owner: dict[str, str] = {}
    for snapshot in snapshots:
        sid = snapshot.snapshot_id
        for key in walked.listed[sid]:
            if key in lister:
                lister[key] = _merge(lister[key], sid, _MANY)
                lister_owner[key] = _merge(lister_owner[key], owner[sid], _SHARED)
            else:
                lister[key], lister_owner[key] = sid, owner[sid]
    # The same for each data and delete file, over the manifests holding it.
    holder: dict[str, int] = {}
    holder_owner: dict[str, str] = {}
    file_kind: dict[str, tuple[str, int]] = {}
    for key, m in walked.manifests.items():
        sid, own = lister[key], lister_owner[key]
        for path, kind, size in zip(m.paths, m.kinds, m.sizes.tolist(), strict=True):
            if path in holder:
                holder[path] = _merge(holder[path], sid, _MANY)
                holder_owner[path] = _merge(holder_owner[path], own, _SHARED)
            else:
                holder[path], holder_owner[path] = sid, own
                file_kind[path] = ("data" if kind == "data" else "delete", size)
    by_snapshot = {s.snapshot_id: _Tally() for s in snapshots}
    by_owner: dict[str, _Tally] = {}
    total = _Tally()

    def charge(sid: int, own: str, kind: str, size: int) -> None:
        total.add(kind, size)
        if sid != _MANY:
            by_snapshot[sid].add(kind, size)
        if own != _SHARED:
            by_owner.setdefault(own, _Tally()).add(kind, size)

    for snapshot in snapshots:
        assert snapshot.manifest_list is not None  # walk() refuses inline manifests
        size = table.io.info(snapshot.manifest_list).size
        charge(snapshot.snapshot_id, owner[snapshot.snapshot_id], "manifest_list", size)
    for key, m in walked.manifests.items():
        charge(lister[key], lister_owner[key], "manifest", m.manifest.manifest_length)
    for path, (kind, size) in file_kind.items():
        charge(holder[path], holder_owner[path], kind, size)
    refs_at: dict[int, list[str]] = {}
    for name, ref in metadata.refs.items():
        refs_at.setdefault(ref.snapshot_id, []).append(name)
    empty = _Tally().cost()
    return Retention(
        snapshots=tuple(
            SnapshotCost(
                snapshot_id=s.snapshot_id,
                timestamp_ms=s.timestamp_ms,
                operation=str(s.operation) if s.operation is not None else "",
                owner={_SHARED: "", _NONE: UNREFERENCED}.get(
                    owner[s.snapshot_id], owner[s.snapshot_id]
                ),
                refs=tuple(sorted(refs_at.get(s.snapshot_id, ()))),
                cost=by_snapshot[s.snapshot_id].cost(),
            )
            for s in snapshots
        ),
        refs=tuple(
            RefCost(
                name=name,
                kind="branch" if ref.is_branch else "tag",
                snapshot_id=ref.snapshot_id,
                snapshots=tuple(s.snapshot_id for s in snapshots if owner[s.snapshot_id] == name),
                cost=by_owner[name].cost() if name in by_owner else empty,
            )
            for name, ref in sorted(metadata.refs.items())
        ),
        total=total.cost(),
    )
