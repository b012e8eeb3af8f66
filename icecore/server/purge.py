"""Deleting a dropped table's files (``DELETE .../tables/{t}?purgeRequested=true``).

What is deleted is what Iceberg Java's ``CatalogUtil.dropTableData`` deletes: every data and
delete file live in a manifest of any snapshot, every manifest and manifest list, the
statistics and partition statistics files, and every metadata file of the metadata log with
the current one. One rule is added: only files under the table's own ``location`` are
deleted. A registered table may point at another table's files (a copy of its metadata), and
purging it must not destroy that other table; such files are listed as skipped.

The caller drops the catalog entry first and purges afterwards, so no reader is left with a
table whose files are half gone. Deletion is best effort, as in Java: a file that cannot be
deleted is reported and the rest continue. On a local disk the ``.crc`` checksum files Hadoop
writes beside each file go too, and folders left empty under the location are removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

from icecore.errors import IcecoreError
from icecore.io import FileIO, normalize_path
from icecore.maintenance import VERSION_HINT, reach
from icecore.table import Table


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


def reachable_files(table: Table) -> tuple[list[str], list[str]]:
    """Every file ``table``'s metadata reaches, data first and metadata last; and errors."""
    metadata = table.metadata
    data: dict[str, str] = {}
    manifests: dict[str, str] = {}
    lists: dict[str, str] = {}
    errors: list[str] = []
    for snapshot in metadata.snapshots:
        if snapshot.manifest_list is not None:
            lists.setdefault(snapshot.manifest_list, snapshot.manifest_list)
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


def purge_files(
    io: FileIO,
    location: str,
    files: Iterable[str],
    errors: Iterable[str] = (),
    others: Iterable[str] = (),
) -> PurgeReport:
    """Delete ``files`` that lie under ``location``; skip and list the others.

    A file under one of ``others`` (the locations of the catalog's remaining tables) is
    skipped too, even inside ``location``: a table registered with a broad location (its
    metadata says ``location: /``, or the warehouse root) must not purge the tables beneath it,
    nor a second entry for the same location the files the first still reads.
    A file named twice in two spellings (``file:/x`` and ``/x``) is deleted once.
    """
    kept = [_plain(o) for o in others]
    deleted: list[str] = []
    skipped: list[str] = []
    failed = list(errors)
    folders: set[str] = set()
    unique: dict[str, str] = {}
    for f in files:
        unique.setdefault(_plain(f), f)
    for path in unique.values():
        if not _under(path, location) or any(_under(path, o) or _plain(path) == o for o in kept):
            skipped.append(path)
            continue
        try:
            io.delete(path)
            if normalize_path(path)[0] == "file":
                folder, name = path.rsplit("/", 1)
                io.delete(f"{folder}/.{name}.crc")
                folders.add(folder)
        except IcecoreError as e:
            failed.append(str(e))
            continue
        deleted.append(path)
    _remove_empty_folders(io, location, folders)
    return PurgeReport(tuple(deleted), tuple(skipped), tuple(failed))


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


def purge_table(
    table: Table, relocated: tuple[str, str] | None = None, others: Iterable[str] = ()
) -> PurgeReport:
    """Delete a dropped table's files (see the module docstring).

    Args:
        table: the table as loaded just before its catalog entry was removed.
        relocated: ``(old folder, new folder)`` when dropping moved files (a filesystem
            warehouse moves its version files and hint aside): a file directly in the old
            folder that is no longer there but in the new one is deleted there.
        others: the locations of the catalog's remaining tables, whose files stay.
    """
    files, errors = reachable_files(table)
    if relocated is not None:
        old, new = (_plain(p) for p in relocated)
        files = [_moved(table.io, f, old, new) for f in files]
    return purge_files(table.io, table.metadata.location, files, errors, others)


__all__ = ["PurgeReport", "purge_files", "purge_table", "reachable_files"]
