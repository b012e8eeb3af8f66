"""FileIO: every byte Icecore reads or writes for a table goes through here (over fsspec).

A few verbs, after fsspec's own: ``exists``, ``info``, ``ls``, ``read`` (whole file or a
byte range). Paths are what Iceberg metadata holds: ``/abs/path``, ``file:/abs/path``,
``file:///abs/path``, ``s3://bucket/key``, ``memory://...``. This is the only module that
imports fsspec; filesystems are created once per (protocol, options) and shared.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fsspec

from icecore.errors import IcecoreError, NotFound

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


@dataclass(slots=True)
class FileIO:
    """Reads and writes files by their metadata path, over fsspec filesystems.

    Args:
        properties: catalog/table properties; ``s3.endpoint``, ``s3.access-key-id``,
            ``s3.secret-access-key``, ``s3.region`` configure S3.
    """

    properties: Mapping[str, str] = field(default_factory=dict)
    _filesystems: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _fs(self, protocol: str) -> Any:
        with self._lock:
            fs = self._filesystems.get(protocol)
            if fs is None:
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
