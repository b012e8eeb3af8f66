"""FileIO: every byte Icecore reads or writes for a table goes through here (over fsspec).

A few verbs, after fsspec's own: ``exists``, ``info``, ``ls``, ``read`` (whole file or a
byte range), and for commits ``create_exclusive``, ``write`` and ``delete``. Paths are what
Iceberg metadata holds: ``/abs/path``, ``file:/abs/path``, ``file:///abs/path``,
``s3://bucket/key``, ``memory://...``. This is the only module that imports fsspec;
filesystems are created once per (protocol, options) and shared.

Writes never leave a half-written file where a reader looks: a local file is written to a
unique temporary name in the same folder and then hard-linked (create) or renamed (replace)
into place, so its whole content appears at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icecore.errors import IcecoreError, NotFound
from icecore.failpoints import failpoint

# errno values of a file system that cannot hard-link (FAT, some FUSE and SMB mounts);
# an exclusive open is the fallback there.
_NO_LINK = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})

_S3_OPTION_MAP = {
    "s3.endpoint": "endpoint_url",
    "s3.access-key-id": "key",
    "s3.secret-access-key": "secret",
    "s3.session-token": "token",
}


def normalize_path(path: str) -> tuple[str, str]:
    """Split a metadata path into (fsspec protocol, path as that filesystem names it)."""
    if path.startswith("file:"):
        rest = path[len("file:") :]
        # file:///abs, file://host/abs (host ignored for local files), file:/abs
        if rest.startswith("//"):
            rest = rest[2:]
            rest = rest[rest.index("/") :] if "/" in rest else "/"
        return "file", rest
    if "://" in path:
        protocol, rest = path.split("://", 1)
        protocol = {"s3a": "s3", "s3n": "s3"}.get(protocol, protocol)
        if protocol == "memory":
            return protocol, "/" + rest.lstrip("/")
        return protocol, rest
    return "file", path


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What a listing or ``info`` reports of one file or directory."""

    path: str
    size: int
    is_dir: bool
    modified_ms: int | None = None
    """Last modification time (ms since the epoch) when the filesystem reports one."""


@dataclass(slots=True)
class FileIO:
    """Reads and writes files by their metadata path, over fsspec filesystems.

    Args:
        properties: catalog/table properties; ``s3.endpoint``, ``s3.access-key-id``,
            ``s3.secret-access-key``, ``s3.region`` configure S3.
    """

    # Kept out of repr: it may hold storage secrets (a REST catalog's vended keys), and a
    # Table's repr shows its FileIO.
    properties: Mapping[str, str] = field(default_factory=dict, repr=False)
    _filesystems: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _fs(self, protocol: str) -> Any:
        with self._lock:
            fs = self._filesystems.get(protocol)
            if fs is None:
                import fsspec  # ~12 MiB: loaded by the first file touched, not by import

                fs = fsspec.filesystem(protocol, **self._options(protocol))
                self._filesystems[protocol] = fs
            return fs

    def _options(self, protocol: str) -> dict[str, Any]:
        if protocol != "s3":
            return {}
        options: dict[str, Any] = {
            target: self.properties[key]
            for key, target in _S3_OPTION_MAP.items()
            if key in self.properties
        }
        region = self.properties.get("s3.region")
        if region is not None:
            options["client_kwargs"] = {"region_name": region}
        return options

    def _resolve(self, path: str) -> tuple[Any, str]:
        protocol, local = normalize_path(path)
        return self._fs(protocol), local

    def exists(self, path: str) -> bool:
        """Whether a file or directory exists at ``path``."""
        fs, local = self._resolve(path)
        try:
            return bool(fs.exists(local))
        except OSError as e:
            raise IcecoreError(f"Cannot check {path}: {e}.") from e

    def info(self, path: str) -> FileInfo:
        """Size and kind of ``path``; :class:`NotFound` when it is absent."""
        fs, local = self._resolve(path)
        try:
            raw = fs.info(local)
        except FileNotFoundError as e:
            raise NotFound(f"File {path} does not exist.") from e
        except OSError as e:
            raise IcecoreError(f"Cannot read {path}: {e}.") from e
        return FileInfo(
            path=path, size=int(raw.get("size") or 0), is_dir=raw["type"] == "directory"
        )

    def ls(self, path: str) -> list[FileInfo]:
        """Entries directly under directory ``path`` (paths in the same style as ``path``)."""
        fs, local = self._resolve(path)
        try:
            entries = fs.ls(local, detail=True)
        except FileNotFoundError as e:
            raise NotFound(f"Directory {path} does not exist.") from e
        except OSError as e:
            raise IcecoreError(f"Cannot list {path}: {e}.") from e
        base = path.rstrip("/")
        result = []
        for entry in entries:
            # Filesystems name entries their own way (absolute, with or without a protocol):
            # keep only the last segment and re-root it under the path we were given.
            name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            if not name or str(entry["name"]).rstrip("/") == local.rstrip("/"):
                continue
            result.append(
                FileInfo(
                    path=f"{base}/{name}",
                    size=int(entry.get("size") or 0),
                    is_dir=entry["type"] == "directory",
                )
            )
        return sorted(result, key=lambda f: f.path)

    def walk(self, path: str) -> list[FileInfo]:
        """Every file below directory ``path``, recursively, with its modification time.

        Orphan-file detection lists a table's location this way (an absent directory is an
        empty listing: a table without data files yet has no ``data/``).
        """
        fs, local = self._resolve(path)
        try:
            found = fs.find(local, detail=True) if fs.exists(local) else {}
        except OSError as e:
            raise IcecoreError(f"Cannot list {path}: {e}.") from e
        base, root = path.rstrip("/"), local.rstrip("/")
        result = []
        for name, entry in found.items():
            relative = str(name).rstrip("/")[len(root) :].lstrip("/")
            if entry.get("type") == "directory" or not relative:
                continue
            result.append(
                FileInfo(
                    path=f"{base}/{relative}",
                    size=int(entry.get("size") or 0),
                    is_dir=False,
                    modified_ms=_modified_ms(entry),
                )
            )
        return sorted(result, key=lambda f: f.path)

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes of ``path`` (``[start, end)`` when given); :class:`NotFound` when absent."""
        fs, local = self._resolve(path)
        try:
            return bytes(fs.cat_file(local, start=start, end=end))
        except FileNotFoundError as e:
            raise NotFound(f"File {path} does not exist.") from e
        except IsADirectoryError as e:
            raise NotFound(f"{path} is a directory, not a file.") from e
        except OSError as e:
            raise IcecoreError(f"Cannot read {path}: {e}.") from e

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` holding ``data`` only if nothing exists there; never replace a file.

        Locally the bytes go to a temporary file in the same folder, are flushed to disk,
        and are hard-linked to ``path`` (``link`` fails if ``path`` exists, atomically), so a
        reader sees the whole file or none; where hard links are not supported an exclusive
        open (``O_EXCL``) is used instead. Elsewhere fsspec's exclusive ``create`` mode is
        used (a conditional put on S3).

        Returns:
            True if the file was created, False if ``path`` already existed.

        Raises:
            IcecoreError: the file could not be written (nothing was created at ``path``).
        """
        fs, local = self._resolve(path)
        if normalize_path(path)[0] == "file":
            return _create_local(local, data)
        try:
            fs.pipe_file(local, data, mode="create")
        except FileExistsError:
            return False
        except OSError as e:
            if "PreconditionFailed" in str(e) or "412" in str(e):
                return False
            raise IcecoreError(f"Cannot write {path}: {e}.") from e
        return True

    def write(self, path: str, data: bytes) -> None:
        """Write ``path``, replacing it if present (for files such as a version hint).

        Locally the bytes are written to a temporary name and renamed over ``path``, so a
        reader sees the old or the new content, never a mix.

        Raises:
            IcecoreError: the file could not be written.
        """
        fs, local = self._resolve(path)
        try:
            if normalize_path(path)[0] == "file":
                temp = _temp_name(local)
                _write_new(temp, data)
                try:
                    os.replace(temp, local)
                except BaseException:
                    _unlink_quietly(temp)
                    raise
            else:
                fs.pipe_file(local, data)
        except OSError as e:
            raise IcecoreError(f"Cannot write {path}: {e}.") from e

    def delete(self, path: str) -> None:
        """Delete the file ``path``; a missing file is not an error.

        Raises:
            IcecoreError: the file exists but could not be deleted.
        """
        fs, local = self._resolve(path)
        try:
            fs.rm_file(local)
        except FileNotFoundError:
            return
        except OSError as e:
            raise IcecoreError(f"Cannot delete {path}: {e}.") from e

    def makedirs(self, path: str) -> None:
        """Create directory ``path`` and its parents (object stores have none: a no-op there).

        Raises:
            IcecoreError: the directory could not be created.
        """
        fs, local = self._resolve(path)
        try:
            fs.makedirs(local, exist_ok=True)
        except OSError as e:
            raise IcecoreError(f"Cannot create the folder {path}: {e}.") from e

    def remove_empty_dir(self, path: str) -> bool:
        """Remove directory ``path`` if it is empty; returns False when it holds anything.

        Raises:
            IcecoreError: the directory could not be removed for another reason.
        """
        fs, local = self._resolve(path)
        if normalize_path(path)[0] != "file":
            try:
                return not fs.ls(local)  # object stores have no empty folders to remove
            except FileNotFoundError:
                return True
            except OSError as e:
                raise IcecoreError(f"Cannot list {path}: {e}.") from e
        try:
            os.rmdir(local)
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise IcecoreError(f"Cannot remove the folder {path}: {e}.") from e
        return True

    def move(self, source: str, destination: str) -> None:
        """Move a file or directory tree (locally one atomic ``rename``; copies elsewhere).

        Raises:
            IcecoreError: it could not be moved, or ``destination`` exists (locally).
        """
        fs, local = self._resolve(source)
        target = normalize_path(destination)[1]
        try:
            if normalize_path(source)[0] == "file":
                if os.path.lexists(target):
                    raise FileExistsError(errno.EEXIST, "exists", target)
                os.rename(local, target)
            else:
                fs.mv(local, target, recursive=True)
        except OSError as e:
            raise IcecoreError(f"Cannot move {source} to {destination}: {e}.") from e


def _modified_ms(entry: Mapping[str, Any]) -> int | None:
    """A listing entry's modification time: ``mtime`` (seconds, local) or ``LastModified``."""
    raw = entry.get("mtime", entry.get("LastModified"))
    if raw is None:
        return None
    if hasattr(raw, "timestamp"):
        return int(raw.timestamp() * 1000)
    return int(float(raw) * 1000)


def _temp_name(local: str) -> str:
    folder, _, name = local.rpartition("/")
    return f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"


def _write_new(local: str, data: bytes) -> None:
    """Write a new local file and flush it to disk before anyone can link or rename it."""
    fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quietly(local)
        raise
    os.close(fd)


def _unlink_quietly(local: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(local)


def _create_local(local: str, data: bytes) -> bool:
    temp = _temp_name(local)
    try:
        _write_new(temp, data)
    except OSError as e:
        raise IcecoreError(f"Cannot write {local}: {e}.") from e
    try:
        failpoint("io-link")
        os.link(temp, local)
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno not in _NO_LINK:
            raise IcecoreError(f"Cannot create {local}: {e}; nothing was written there.") from e
        return _create_local_without_link(local, data)
    finally:
        _unlink_quietly(temp)
    return True


def _create_local_without_link(local: str, data: bytes) -> bool:
    try:
        _write_new(local, data)
    except FileExistsError:
        return False
    except OSError as e:
        raise IcecoreError(f"Cannot create {local}: {e}.") from e
    return True
