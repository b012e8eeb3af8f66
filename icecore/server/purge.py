"""Deleting a dropped table's files (``DELETE .../tables/{t}?purgeRequested=true``).

What is deleted is what Iceberg Java's ``CatalogUtil.dropTableData`` deletes: every data and
delete file live in a manifest of any snapshot, every manifest and manifest list, the
statistics and partition statistics files, and every metadata file of the metadata log with
the current one. A writer names those paths, so the server keeps to bounds Java does not:

- only files under the table's own ``location`` are deleted, and none under another table's
  location in the catalog: a registered table may point at another table's files (a copy of
  its metadata), and purging it must not destroy that other table. Such files are listed as
  skipped, and a manifest list outside the location is not even read;
- the location itself must lie strictly below a served location
  (:mod:`icecore.server.locations`) and not inside another table's location; a SQL catalog's
  purge also keeps out of Hadoop-layout table folders (``metadata/version-hint.text``) on a
  local disk, which belong to a warehouse-folder catalog (the demo keeps one inside its SQL
  warehouse);
- on a local disk, nothing is reached through a symlink (every folder from the location down
  to the file is checked with ``lstat``) and only regular files are deleted.

Every file is checked before any is deleted; a purge that breaks one of the last two rules
raises :class:`PurgeRefused` and deletes nothing. The server checks before it drops the
catalog entry (the drop is refused then, 403, and the table stays), and again after on the
metadata current at the drop; if a commit in between broke the rules, the entry is gone and
the files all stay (as in Java, deleting data after the drop is best effort).

The caller drops the catalog entry first and purges afterwards, so no reader is left with a
table whose files are half gone. Deletion is best effort, as in Java: a file that cannot be
deleted is reported and the rest continue. On a local disk the ``.crc`` checksum files Hadoop
writes beside each file go too, and folders left empty under the location are removed.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from icecore.errors import IcecoreError
from icecore.io import FileIO, normalize_path
from icecore.maintenance import VERSION_HINT, reach
from icecore.server.errors import RestError
from icecore.server.locations import ServedLocations, below, canonical, is_hadoop_table
from icecore.table import Table

_SLASHES = re.compile(r"/{2,}")


class PurgeRefused(IcecoreError):
    """A purge would leave its bounds (see the module docstring); nothing was deleted."""


@dataclass(frozen=True, slots=True)
class PurgeReport:
    """What a purge did.

    Attributes:
        deleted: files deleted (or already absent), in deletion order.
        skipped: reachable files outside the table's location, left alone.
        failed: files (or manifests that could not be read) with the error, one sentence each.
    """

    deleted: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: tuple[str, ...]


def _plain(path: str) -> str:
    """One spelling per file (``file:/x``, ``file:///x`` and ``/x`` are one local file)."""
    protocol, local = normalize_path(path)
    local = local.rstrip("/")
    return local if protocol == "file" else f"{protocol}://{local}"


def _under(path: str, location: str) -> bool:
    return _plain(path).startswith(_plain(location) + "/")


def _canonical(path: str) -> str | None:
    """:func:`~icecore.server.locations.canonical`, or None for a path no reader could use."""
    try:
        return canonical(path)
    except RestError:
        return None


def _lexical(path: str) -> str | None:
    """A local path with ``//``, ``.`` and ``..`` resolved but no symlink followed."""
    protocol, local = normalize_path(path)
    if protocol != "file" or not local.startswith("/"):
        return None
    return posixpath.normpath(_SLASHES.sub("/", local))


def reachable_files(table: Table) -> tuple[list[str], list[str]]:
    """Every file ``table``'s metadata reaches, data first and metadata last; and errors.

    A manifest list outside the table's location and its ``write.metadata.path`` is listed
    but not read: the server reads no file a writer merely names.
    """
    metadata = table.metadata
    folders = [metadata.location, metadata.properties.get("write.metadata.path") or ""]
    data: dict[str, str] = {}
    manifests: dict[str, str] = {}
    lists: dict[str, str] = {}
    errors: list[str] = []
    for snapshot in metadata.snapshots:
        if snapshot.manifest_list is not None:
            lists.setdefault(snapshot.manifest_list, snapshot.manifest_list)
            if not any(f and _under(snapshot.manifest_list, f) for f in folders):
                continue
        try:
            found = reach(table, [snapshot])
        except IcecoreError as e:
            errors.append(f"snapshot {snapshot.snapshot_id}: {e}")
            continue
        # reach() keys paths in a normalized spelling; keep that spelling for deletion.
        data.update({p: p for p in found.files})
        manifests.update({p: p for p in found.manifests})
    meta = [s.statistics_path for s in metadata.statistics]
    meta += [s.statistics_path for s in metadata.partition_statistics]
    meta += [e.metadata_file for e in metadata.metadata_log]
    meta += [table.metadata_location, f"{metadata.location.rstrip('/')}/{VERSION_HINT}"]
    ordered = [_plain(p) for p in (*data, *manifests, *lists, *meta)]
    return list(dict.fromkeys(ordered)), errors


@dataclass(frozen=True, slots=True)
class PurgePlan:
    """What a purge will delete, every file checked (:func:`plan_purge`).

    Attributes:
        location: the table's location as the files are deleted under it (resolved).
        delete: the files to delete: (as the metadata names it, the path deleted).
        skipped: reachable files left alone (outside the location or inside another table's).
    """

    location: str
    delete: tuple[tuple[str, str], ...]
    skipped: tuple[str, ...]


def _check_location(
    location: str,
    locations: ServedLocations | None,
    others: Sequence[str],
    foreign_hadoop: bool = False,
) -> tuple[str, str | None]:
    """The location resolved (and its lexical local spelling), or :class:`PurgeRefused`."""
    where = _canonical(location)
    if where is None:
        raise PurgeRefused(f"its location {location[:300]!r} is not an absolute path or URI")
    if locations is not None and not locations.contains(location):
        raise PurgeRefused(
            f"its location {location[:300]} is not below the locations this server serves"
        )
    lexical = _lexical(location)
    if lexical is not None and os.path.islink(lexical):
        raise PurgeRefused(f"its location {location[:300]} is a symlink")
    for other in others:
        if below(where, other, strict=False):
            raise PurgeRefused(f"its location {location[:300]} lies inside another table's")
    hadoop = locations.hadoop_table_of(location) if foreign_hadoop and locations else None
    if hadoop is not None:
        raise PurgeRefused(
            f"its location {location[:300]} lies in the Hadoop-layout table {hadoop}"
        )
    return where, lexical


def _local_target(path: str, lexical_location: str, where: str) -> str | None:
    """Where a local ``path`` under the location is, walked without following a symlink.

    Returns None when ``path`` is not under the location.

    Raises:
        PurgeRefused: a folder on the way or the file is a symlink, or the file is not a
            regular file.
    """
    lexical = _lexical(path)
    if lexical is None:
        return None
    rel = None
    for base in (lexical_location, where):  # as spelled, or spelled through its real path
        if below(lexical, base):
            rel = lexical[len(base.rstrip("/")) + 1 :]
            break
    if rel is None:
        return None
    current = where
    parts = rel.split("/")
    for i, part in enumerate(parts):
        current = f"{current.rstrip('/')}/{part}"
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return current if i == len(parts) - 1 else None  # already gone
        except OSError as e:
            raise PurgeRefused(f"{path[:300]} cannot be checked ({e.strerror})") from None
        if stat.S_ISLNK(mode):
            raise PurgeRefused(f"{path[:300]} is reached through the symlink {current}")
        if i == len(parts) - 1 and not stat.S_ISREG(mode):
            raise PurgeRefused(f"{path[:300]} is not a regular file")
    return current


def plan_purge(
    location: str,
    files: Iterable[str],
    others: Iterable[str] = (),
    locations: ServedLocations | None = None,
    foreign_hadoop: bool = False,
) -> PurgePlan:
    """Check every file of a purge before any is deleted (see the module docstring).

    Args:
        location: the table's location.
        files: the files its metadata reaches.
        others: the locations of the catalog's remaining tables, whose files stay.
        locations: the served locations the table's location must lie below (None: any).
        foreign_hadoop: Hadoop-layout table folders on a local disk belong to another
            catalog (the served catalog is a SQL one): a location in one is refused and
            files in one below the location are skipped.

    Raises:
        PurgeRefused: the purge would leave its bounds; why, in one clause.
    """
    kept = [c for c in (_canonical(o) for o in others) if c is not None]
    where, lexical_location = _check_location(location, locations, kept, foreign_hadoop)
    delete: list[tuple[str, str]] = []
    skipped: list[str] = []
    seen: set[str] = set()
    hadoop: dict[str, bool] = {}

    def in_hadoop_table(target: str) -> bool:
        """A folder between the location (excluded) and ``target`` is a Hadoop table."""
        folder = target.rsplit("/", 1)[0]
        walked: list[str] = []
        found = False
        while below(folder, where):
            if folder in hadoop:
                found = hadoop[folder]
                break
            walked.append(folder)
            if is_hadoop_table(folder):
                found = True
                break
            folder = folder.rsplit("/", 1)[0]
        for f in walked:
            hadoop[f] = found
        return found

    for path in files:
        target: str | None
        if lexical_location is not None:
            target = _local_target(path, lexical_location, where)
        else:
            found = _canonical(path)
            target = path if found is not None and below(found, where) else None
        resolved = _canonical(target) if target is not None else None
        if (
            target is None
            or resolved is None
            or any(below(resolved, o, strict=False) for o in kept)
            or (foreign_hadoop and lexical_location is not None and in_hadoop_table(target))
        ):
            skipped.append(path)
            continue
        if resolved not in seen:  # one file in two spellings is deleted once
            seen.add(resolved)
            delete.append((path, target))
    return PurgePlan(
        where if lexical_location is not None else location, tuple(delete), tuple(skipped)
    )


def purge_files(
    io: FileIO,
    location: str,
    files: Iterable[str],
    errors: Iterable[str] = (),
    others: Iterable[str] = (),
    locations: ServedLocations | None = None,
    foreign_hadoop: bool = False,
) -> PurgeReport:
    """Delete ``files`` that lie under ``location``; skip and list the others.

    A file under one of ``others`` (the locations of the catalog's remaining tables) is
    skipped too, even inside ``location``: a table registered with a broad location must not
    purge the tables beneath it, nor a second entry for the same location the files the first
    still reads. A file named twice in two spellings (``file:/x`` and ``/x``) is deleted once.

    Raises:
        PurgeRefused: the purge would leave its bounds (:func:`plan_purge`); nothing deleted.
    """
    plan = plan_purge(location, files, others, locations, foreign_hadoop)
    deleted: list[str] = []
    failed = list(errors)
    folders: set[str] = set()
    for named, path in plan.delete:
        try:
            io.delete(path)
            if normalize_path(path)[0] == "file":
                folder, name = path.rsplit("/", 1)
                crc = f"{folder}/.{name}.crc"
                with contextlib.suppress(OSError):
                    if stat.S_ISREG(os.lstat(crc).st_mode):
                        io.delete(crc)
                folders.add(folder)
        except IcecoreError as e:
            failed.append(str(e))
            continue
        deleted.append(named)
    _remove_empty_folders(io, plan.location, folders)
    return PurgeReport(tuple(deleted), plan.skipped, tuple(failed))


def _remove_empty_folders(io: FileIO, location: str, folders: set[str]) -> None:
    """Remove folders emptied by the purge, deepest first, up to the location itself."""
    top = _plain(location)
    pending = set(folders)
    for folder in list(folders):
        while _under(folder, top):
            folder = folder.rsplit("/", 1)[0]
            pending.add(folder)
    for folder in sorted(pending, key=lambda f: f.count("/"), reverse=True):
        if _under(folder, top) or _plain(folder) == _plain(top):
            # A folder that cannot go stays; its files are gone.
            with contextlib.suppress(IcecoreError):
                io.remove_empty_dir(folder)


def _moved(io: FileIO, path: str, old: str, new: str) -> str:
    """Where ``path`` is now: in ``new`` if it was directly in ``old`` and moved there."""
    folder, name = path.rsplit("/", 1)
    if folder != old or io.exists(path):
        return path
    return f"{new}/{name}" if io.exists(f"{new}/{name}") else path


def table_files(
    table: Table,
    relocated: tuple[str, str] | None = None,
    reached: tuple[list[str], list[str]] | None = None,
) -> tuple[list[str], list[str]]:
    """:func:`reachable_files`, with the files a drop moved aside found where they are now.

    ``reached``: :func:`reachable_files` of the same metadata, already walked (the check
    before a drop), so its manifests are not read again.
    """
    files, errors = reached if reached is not None else reachable_files(table)
    if relocated is not None:
        old, new = (_plain(p) for p in relocated)
        files = [_moved(table.io, f, old, new) for f in files]
    return files, errors


def purge_table(
    table: Table,
    relocated: tuple[str, str] | None = None,
    others: Iterable[str] = (),
    locations: ServedLocations | None = None,
    foreign_hadoop: bool = False,
    reached: tuple[list[str], list[str]] | None = None,
) -> PurgeReport:
    """Delete a dropped table's files (see the module docstring).

    Args:
        table: the table as loaded just before its catalog entry was removed.
        relocated: ``(old folder, new folder)`` when dropping moved files (a filesystem
            warehouse moves its version files and hint aside): a file directly in the old
            folder that is no longer there but in the new one is deleted there.
        others: the locations of the catalog's remaining tables, whose files stay.
        locations: the served locations the table's location must lie below.
        foreign_hadoop: see :func:`plan_purge`.
        reached: see :func:`table_files`.

    Raises:
        PurgeRefused: the purge would leave its bounds; nothing was deleted.
    """
    files, errors = table_files(table, relocated, reached)
    return purge_files(
        table.io, table.metadata.location, files, errors, others, locations, foreign_hadoop
    )


__all__ = [
    "PurgePlan",
    "PurgeRefused",
    "PurgeReport",
    "plan_purge",
    "purge_files",
    "purge_table",
    "reachable_files",
    "table_files",
]
