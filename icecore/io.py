"""FileIO: every byte Icecore reads or writes for a table goes through here (over fsspec).

A few verbs, after fsspec's own: ``exists``, ``info``, ``ls``, ``read`` (whole file or a
byte range), and for commits ``create_exclusive``, ``write`` and ``delete``. Paths are what
Iceberg metadata holds: ``/abs/path``, ``file:/abs/path``, ``file:///abs/path``,
``s3://bucket/key`` (``s3a://``, ``s3n://``). This is the only module that imports fsspec;
filesystems are created once per (protocol, options) and shared.

Paths come from metadata that whoever can write a table chooses, so the schemes are an
allow-list (:data:`SCHEMES`): a local file or an S3 object, nothing nested (no ``::``
chains, no URL inside a URL), never fsspec's other filesystems (``http``, ``ftp``, ``zip``,
``data``, caches), which would make a server fetch any URL. fsspec's process-local
``memory://`` filesystem only for a FileIO built with ``allow_memory=True`` (tests); no
catalog builds one. Every failure of a verb, whatever fsspec or its store client raised, is
an :class:`~icecore.errors.IcecoreError` (:class:`~icecore.errors.NotFound` for a missing
file) with one sentence.

Reads are bounded: a local path must be a regular file (a FIFO, a device such as
``/dev/zero`` or a directory is refused before it is opened), and no read returns more than
its ``limit`` (:data:`MAX_READ_BYTES` unless the caller states a smaller cap, such as
:data:`MAX_METADATA_BYTES` for metadata.json files, manifest lists and manifests).

Writes never leave a half-written file where a reader looks: a local file is written to a
unique temporary name in the same folder and then hard-linked (create) or renamed (replace)
into place, so its whole content appears at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from icecore.errors import IcecoreError, NotFound
from icecore.failpoints import failpoint

# errno values of a file system that cannot hard-link (FAT, some FUSE and SMB mounts);
# an exclusive open is the fallback there.
_NO_LINK = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})

SCHEMES = frozenset({"file", "s3", "s3a", "s3n"})
"""URL schemes a path may have (a path without one is a local file); ``s3a``/``s3n`` are
Hadoop's names for S3 and read as ``s3``. Anything else is refused with one sentence."""

MAX_METADATA_BYTES = 256 * 2**20
"""Largest metadata.json, manifest list or manifest read (256 MiB). Spark's metadata files are
kilobytes to a few tens of MiB, a manifest list of 100,000 manifests ~30 MiB, and Iceberg
writes manifests of ``commit.manifest.target-size-bytes`` (8 MiB); a path naming anything
larger (a log file, a disk image) is refused before it fills a server's memory."""

MAX_READ_BYTES = 2**30
"""Largest read of any other file, or of one byte range (1 GiB): an Avro data file (Iceberg
targets 512 MiB data files) or a Parquet column chunk fits; one ``bytes`` object larger than
this is never what a reader of a table needs."""

_PROC_FDS = "/proc/self/fd"
"""Where Linux names a process's open descriptors (an open file reopened by its descriptor)."""
_HAVE_PROC_FDS = os.path.isdir(_PROC_FDS)

_S3_NATIVE_PROPERTIES = frozenset(
    {"s3.endpoint", "s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.region"}
)
"""S3 properties Arrow's S3 filesystem takes as fsspec's does (:meth:`FileIO.open_native`)."""
_ARROW_S3 = "arrow-s3"
"""The key of Arrow's S3 filesystem among a FileIO's filesystems (no fsspec protocol)."""

_SHOWN_PATH_CHARS = 300
"""A path longer than this is cut in error messages (a request may name a huge one)."""

_S3_OPTION_MAP = {
    "s3.endpoint": "endpoint_url",
    "s3.access-key-id": "key",
    "s3.secret-access-key": "secret",
    "s3.session-token": "token",
}


def normalize_path(path: str) -> tuple[str, str]:
    """Split a metadata path into (fsspec protocol, path as that filesystem names it).

    Only splits: whether FileIO accepts the protocol is :func:`check_path`'s to say.
    """
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


def shown(path: str) -> str:
    """``path`` as an error message shows it, one line whatever a request named.

    Cut to 300 characters; control characters escaped.
    """
    text = path if len(path) <= _SHOWN_PATH_CHARS else path[:_SHOWN_PATH_CHARS] + "..."
    return text if text.isprintable() else repr(text)[1:-1]


def check_path(path: str, *, allow_memory: bool = False) -> tuple[str, str]:
    """:func:`normalize_path` of a path FileIO may touch; refuses any other.

    Allowed: a local path (bare, ``file:``) and ``s3``/``s3a``/``s3n`` URLs (:data:`SCHEMES`);
    ``memory://`` only when ``allow_memory``. Refused: every other scheme, a URL nested in a
    path (``http://http://host``), fsspec's ``::`` chains (``simplecache::s3://``) and NUL.

    Raises:
        IcecoreError: the path is not allowed (one sentence naming its scheme).
    """
    if "\x00" in path:
        raise IcecoreError(f"Path {shown(path)} holds a NUL character; it is refused.")
    if "::" in path:
        raise IcecoreError(
            f"Path {shown(path)} chains filesystems with '::'; only plain local paths and "
            "s3:// URLs are allowed."
        )
    scheme = path.split("://", 1)[0] if "://" in path else ""
    if path.startswith("file:") or not scheme:
        scheme = "file"
    if scheme not in SCHEMES and not (allow_memory and scheme == "memory"):
        raise IcecoreError(
            f"Path {shown(path)} uses the scheme {shown(scheme)!r}, which is not allowed; "
            "only local paths and s3:// (s3a://, s3n://) URLs are allowed."
        )
    protocol, local = normalize_path(path)
    if path.count("://") > 1 or local.startswith("file:"):
        raise IcecoreError(f"Path {shown(path)} nests a URL inside a {scheme} path; it is refused.")
    return protocol, local


@contextlib.contextmanager
def _failures(action: str, path: str) -> Iterator[None]:
    """Turn whatever a filesystem raises into one sentence (a missing file: NotFound).

    fsspec and its store clients raise their own kinds (OSError, ValueError, botocore's
    ClientError and NoCredentialsError, aiohttp's, a MemoryError on a large read); callers
    catch IcecoreError only.
    """
    try:
        yield
    except IcecoreError:
        raise
    except FileNotFoundError as e:
        raise NotFound(f"File {shown(path)} does not exist.") from e
    except MemoryError as e:
        raise IcecoreError(f"Not enough memory to {action} {shown(path)}.") from e
    except Exception as e:  # noqa: BLE001 - every kind a filesystem raises becomes one sentence
        raise IcecoreError(f"Cannot {action} {shown(path)}: {reason(e)}.") from e


def reason(error: BaseException) -> str:
    """The first line of an error's text (its kind when it has none), cut to 300 characters."""
    lines = str(error).strip().splitlines()
    text = lines[0].rstrip(".") if lines else type(error).__name__
    return shown(text)


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
        allow_memory: also accept fsspec's process-local ``memory://`` paths (tests of an
            object store's shape without one); no catalog or server sets it.
    """

    # Kept out of repr: it may hold storage secrets (a REST catalog's vended keys), and a
    # Table's repr shows its FileIO.
    properties: Mapping[str, str] = field(default_factory=dict, repr=False)
    allow_memory: bool = field(default=False, repr=False)
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
        """The filesystem and its name for ``path`` (an allowed one: :func:`check_path`)."""
        protocol, local = check_path(path, allow_memory=self.allow_memory)
        with _failures("open the filesystem of", path):
            return self._fs(protocol), local

    def exists(self, path: str) -> bool:
        """Whether a file or directory exists at ``path``.

        A local path is checked as fsspec's local filesystem checks it (``~`` expanded,
        trailing slashes dropped, ``os.path.exists``) without loading fsspec, as
        :meth:`read` reads it: loading a table from a local metadata file then needs no
        fsspec (~0.1 s; issue 32 item 4).
        """
        protocol, local = check_path(path, allow_memory=self.allow_memory)
        if protocol == "file":
            with _failures("check", path):
                return os.path.exists(os.path.expanduser(local.rstrip("/") or "/"))
        fs, local = self._resolve(path)
        with _failures("check", path):
            return bool(fs.exists(local))

    def info(self, path: str) -> FileInfo:
        """Size and kind of ``path``; :class:`NotFound` when it is absent."""
        fs, local = self._resolve(path)
        with _failures("read", path):
            raw = fs.info(local)
            return FileInfo(
                path=path, size=int(raw.get("size") or 0), is_dir=raw["type"] == "directory"
            )

    def ls(self, path: str, *, fresh: bool = False) -> list[FileInfo]:
        """Entries directly under directory ``path`` (paths in the same style as ``path``).

        ``fresh``: list anew rather than from the object store client's listing cache
        (another process may have written there since; the audit log's readers ask so).
        """
        fs, local = self._resolve(path)
        if fresh and hasattr(fs, "invalidate_cache"):
            fs.invalidate_cache(local)
        try:
            with _failures("list", path):
                entries = fs.ls(local, detail=True)
        except NotFound as e:
            raise NotFound(f"Directory {shown(path)} does not exist.") from e
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
        with _failures("list", path):
            found = fs.find(local, detail=True) if fs.exists(local) else {}
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

    def read(
        self,
        path: str,
        start: int | None = None,
        end: int | None = None,
        *,
        limit: int = MAX_READ_BYTES,
    ) -> bytes:
        """Bytes of ``path`` (``[start, end)`` when given); :class:`NotFound` when absent.

        A local path must be a regular file (checked before it is opened, and again on the
        open file): a directory is :class:`NotFound`, a FIFO or a device an IcecoreError,
        so neither blocks nor streams without end. Offsets are non-negative.

        Args:
            path: the file.
            start: first byte (0 when None).
            end: byte after the last (the file's end when None or beyond it).
            limit: most bytes returned; a file (or range) longer than this is refused with
                one sentence rather than read (:data:`MAX_METADATA_BYTES` for metadata files).

        Raises:
            NotFound: the file does not exist, or is a directory.
            IcecoreError: it cannot be read, is not a regular file, or is over ``limit``.
        """
        first = start or 0
        if first < 0 or (end is not None and end < 0):
            raise IcecoreError(f"Cannot read {shown(path)}: negative offsets are not read.")
        if end is not None and end - first > limit:
            raise _too_large(path, limit)
        protocol, local = check_path(path, allow_memory=self.allow_memory)
        if protocol == "file":  # a local read needs no fsspec filesystem
            with _failures("read", path):
                return _read_local(path, local, first, end, limit)
        with _failures("open the filesystem of", path):
            fs = self._fs(protocol)
        with _failures("read", path):
            # One ranged request, never more than limit + 1 bytes: an object store answers
            # what there is up to the range's end (no HEAD request first).
            stop = end if end is not None else first + limit + 1
            try:
                data = bytes(fs.cat_file(local, start=first, end=stop))
            except OSError as e:
                # S3 answers 416 to any range of an empty object (or one starting at its end)
                if e.errno != errno.EINVAL or int(fs.info(local).get("size") or 0) > first:
                    raise
                data = b""
        if len(data) > limit:
            raise _too_large(path, limit)
        return data

    def open_native(self, path: str) -> tuple[Any, int] | None:
        """An Arrow-native read-only file for ``path`` and its size, or None (read by ranges).

        Issue 32: a Parquet file read through a Python file object holds the GIL on every
        read, so reading threads queue behind each other; an Arrow file (``pyarrow.OSFile``)
        reads with the GIL released and lets Arrow pre-buffer column chunks on its own I/O
        threads. Only a path allowed here (:func:`check_path`) is opened. A local one under the
        same checks as :meth:`read`: a regular file, checked before the open and again on the
        open descriptor, which Arrow then reopens through ``/proc/self/fd`` (the very file
        checked, not whatever the path names by then). An S3 object with Arrow's S3
        filesystem when the S3 properties map onto it exactly (:meth:`_open_s3_native`).
        Otherwise (``memory://``, no ``/proc``, other S3 settings) None: the caller reads by
        FileIO range reads.

        Raises:
            NotFound: the file does not exist, or is a directory.
            IcecoreError: it is not a regular file, or cannot be opened.
        """
        protocol, local = check_path(path, allow_memory=self.allow_memory)
        if protocol == "s3":
            return self._open_s3_native(path, local)
        if protocol != "file" or not _HAVE_PROC_FDS:
            return None
        import pyarrow as pa  # only readers of data files need it

        with _failures("read", path):
            _check_regular(path, os.stat(local).st_mode)
            fd = os.open(local, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                info = os.fstat(fd)
                _check_regular(path, info.st_mode)
                return pa.OSFile(f"{_PROC_FDS}/{fd}", "rb"), info.st_size
            finally:
                os.close(fd)

    def _open_s3_native(self, path: str, key: str) -> tuple[Any, int] | None:
        """An S3 object as an Arrow file, when FileIO's S3 settings map onto Arrow's exactly.

        Only with explicit keys and region, every ``s3.*`` property one Arrow takes
        (:data:`_S3_NATIVE_PROPERTIES`) and an endpoint that is a bare ``http(s)://host[:port]``:
        anything else (the AWS credential chain, a path-style or signing option, an endpoint
        with a path) is read by range reads over fsspec, whose settings are the reference.
        """
        fs = self._arrow_s3()
        if fs is None:
            return None
        with _failures("read", path):
            handle = fs.open_input_file(key)
            return handle, int(handle.size())

    def _arrow_s3(self) -> Any:
        """The Arrow S3 filesystem for these properties (made once), or None: see above."""
        props = self.properties
        given = {k for k in props if k.startswith("s3.")}
        if (
            not given <= _S3_NATIVE_PROPERTIES
            or not {
                "s3.access-key-id",
                "s3.secret-access-key",
                "s3.region",
            }
            <= given
        ):
            return None
        options: dict[str, Any] = {
            "access_key": props["s3.access-key-id"],
            "secret_key": props["s3.secret-access-key"],
            "session_token": props.get("s3.session-token"),
            "region": props["s3.region"],
        }
        endpoint = props.get("s3.endpoint")
        if endpoint is not None:
            scheme, _, host = endpoint.partition("://")
            if scheme not in ("http", "https") or not host or any(c in host for c in "/?#@"):
                return None
            options |= {"scheme": scheme, "endpoint_override": host}
        with self._lock:
            fs = self._filesystems.get(_ARROW_S3)
            if fs is None:
                from pyarrow import fs as arrow_fs

                fs = arrow_fs.S3FileSystem(**options)
                self._filesystems[_ARROW_S3] = fs
            return fs

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
            with _failures("write", path):
                fs.pipe_file(local, data, mode="create")
        except IcecoreError as e:
            if isinstance(e.__cause__, FileExistsError):
                return False
            if "PreconditionFailed" in str(e.__cause__) or "412" in str(e.__cause__):
                return False
            raise
        return True

    def write(self, path: str, data: bytes) -> None:
        """Write ``path``, replacing it if present (for files such as a version hint).

        Locally the bytes are written to a temporary name and renamed over ``path``, so a
        reader sees the old or the new content, never a mix.

        Raises:
            IcecoreError: the file could not be written.
        """
        fs, local = self._resolve(path)
        with _failures("write", path):
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

    def delete(self, path: str) -> None:
        """Delete the file ``path``; a missing file is not an error.

        Raises:
            IcecoreError: the file exists but could not be deleted.
        """
        fs, local = self._resolve(path)
        try:
            with _failures("delete", path):
                fs.rm_file(local)
        except NotFound:
            return

    def makedirs(self, path: str) -> None:
        """Create directory ``path`` and its parents (object stores have none: a no-op there).

        Raises:
            IcecoreError: the directory could not be created.
        """
        fs, local = self._resolve(path)
        with _failures("create the folder", path):
            fs.makedirs(local, exist_ok=True)

    def remove_empty_dir(self, path: str) -> bool:
        """Remove directory ``path`` if it is empty; returns False when it holds anything.

        Raises:
            IcecoreError: the directory could not be removed for another reason.
        """
        fs, local = self._resolve(path)
        if normalize_path(path)[0] != "file":
            try:
                with _failures("list", path):
                    return not fs.ls(local)  # object stores have no empty folders to remove
            except NotFound:
                return True
        try:
            os.rmdir(local)
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise IcecoreError(f"Cannot remove the folder {shown(path)}: {reason(e)}.") from e
        return True

    def move(self, source: str, destination: str) -> None:
        """Move a file or directory tree (locally one atomic ``rename``; copies elsewhere).

        Raises:
            IcecoreError: it could not be moved, or ``destination`` exists (locally).
        """
        fs, local = self._resolve(source)
        target_protocol, target = check_path(destination, allow_memory=self.allow_memory)
        source_protocol = normalize_path(source)[0]
        if target_protocol != source_protocol:
            raise IcecoreError(
                f"Cannot move {shown(source)} to {shown(destination)}: another filesystem."
            )
        try:
            if source_protocol == "file":
                if os.path.lexists(target):
                    raise FileExistsError(errno.EEXIST, "exists", target)
                os.rename(local, target)
            else:
                fs.mv(local, target, recursive=True)
        except Exception as e:  # noqa: BLE001 - whatever the filesystem raised: one sentence
            raise IcecoreError(
                f"Cannot move {shown(source)} to {shown(destination)}: {reason(e)}."
            ) from e


def check_range(path: str, start: int, end: int) -> None:
    """Refuse a byte range over :data:`MAX_READ_BYTES`, as :meth:`FileIO.read` refuses it.

    For reads FileIO does not make itself (an Arrow file from :meth:`FileIO.open_native`):
    a Parquet column chunk that FileIO would not read in one range is not read there either.
    """
    if end - start > MAX_READ_BYTES:
        raise _too_large(path, MAX_READ_BYTES)


def _too_large(path: str, limit: int) -> IcecoreError:
    return IcecoreError(
        f"{shown(path)} is larger than {_size_text(limit)}, the most read of such a file; "
        "it was not read."
    )


def _size_text(size: int) -> str:
    return f"{size // 2**20} MiB" if size >= 2**20 else f"{size} bytes"


def _check_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise NotFound(f"{shown(path)} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        raise IcecoreError(
            f"{shown(path)} is not a regular file (a device, FIFO or socket); it is not read."
        )


def _read_local(path: str, local: str, start: int, end: int | None, limit: int) -> bytes:
    """A regular local file's bytes ``[start, end)``, at most ``limit`` of them.

    ``stat`` comes first (opening a FIFO would wait for a writer); the open is non-blocking
    and checked again (the path may have been replaced in between). The file's size when
    opened bounds the read: a file growing meanwhile is read as it was, and a file larger
    than ``limit`` is refused without reading it.
    """
    _check_regular(path, os.stat(local).st_mode)  # follows links: one to /dev/zero is refused
    fd = os.open(local, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        _check_regular(path, info.st_mode)
        stop = info.st_size if end is None else min(end, info.st_size)
        if stop - start > limit:
            raise _too_large(path, limit)
        parts: list[bytes] = []
        position = start
        while position < stop:
            chunk = os.pread(fd, stop - position, position)
            if not chunk:
                break
            parts.append(chunk)
            position += len(chunk)
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 1 else b"".join(parts)


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
