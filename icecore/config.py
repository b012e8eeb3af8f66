"""The ``icecore.toml`` file: the catalogs a deployment names, and its read-only switch.

The file lives at ``./icecore.toml`` unless ``ICECORE_CONFIG`` names another. It may hold::

    read_only = true

    [catalogs.sales]
    uri = "warehouse"               # what load_catalog takes: a folder, sqlite:///, ...

Each ``[catalogs.NAME]`` entry is a table of string properties, kept whole. A REST catalog
(``type = "rest"``, or an ``http(s)://`` uri) reads more of them::

    [catalogs.prod]
    type = "rest"
    uri = "https://catalog.example.com/api/catalog"
    warehouse = "analytics"
    credential-env = "PROD_REST_CREDENTIAL"   # the variable holding client_id:client_secret
    scope = "PRINCIPAL_ROLE:ALL"              # token-env = "..." for a bearer token instead
    "s3.region" = "eu-west-1"                  # other keys: client properties (quoted)

(``credential``/``token`` may also be written in the file itself, which then is a secret.)
``load_catalog("sales")`` opens the entry by name, and
the app serves exactly the catalogs named here beside ``ICECORE_CATALOG``. A relative folder
in ``uri`` is relative to the config file, so the file means the same wherever the process
starts.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from icecore.access import AuthConfig, Grant, Policy, parse_auth, parse_grants
from icecore.errors import NotFound, ValidationError

CONFIG_ENV = "ICECORE_CONFIG"
DEFAULT_CONFIG = "icecore.toml"
CATALOGS = "catalogs"
URI = "uri"
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
"""What a catalog name may be: a word, so it can never be mistaken for a path or a URI."""


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One ``[catalogs.NAME]`` entry.

    Attributes:
        name: the entry's name.
        properties: every key of the entry, as strings (``uri`` resolved, see the module).
    """

    name: str
    properties: Mapping[str, str]

    @property
    def uri(self) -> str:
        """The catalog string ``load_catalog`` opens for this entry."""
        return self.properties[URI]


@dataclass(frozen=True, slots=True)
class Config:
    """What ``icecore.toml`` says (an absent file says nothing).

    Attributes:
        path: the file read.
        read_only: ``read_only`` when the file sets it to a boolean, else None.
        catalogs: the named catalogs by name, in file order.
        raw: the whole file as parsed, for the sections other modules read themselves
            (``[alerts]``: :func:`icecore.alerts.alert_config`); never printed (it may hold
            secrets).
    """

    path: Path
    read_only: bool | None = None
    catalogs: Mapping[str, CatalogEntry] = field(default_factory=dict)
    auth: AuthConfig | None = None
    grants: tuple[Grant, ...] = ()
    raw: Mapping[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def policy(self) -> Policy | None:
        """The grants to enforce, or None when the file has neither ``[auth]`` nor grants.

        Grants without ``[auth]`` still bind: the REST server's own clients are matched by
        their client id, and an app without sign-in then shows nothing (it fails closed).
        """
        if self.auth is None and not self.grants:
            return None
        return Policy(self.grants)


def config_path() -> Path:
    """The config file: ``ICECORE_CONFIG`` when set, else ``./icecore.toml``."""
    return Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)


def is_catalog_name(text: str) -> bool:
    """Whether ``text`` has the shape of a catalog name (a word, not a path or a URI)."""
    return NAME.match(text) is not None


def load_config(path: Path | None = None) -> Config:
    """Read the config file; an absent file is an empty config.

    Raises:
        ValidationError: the file is not valid TOML, or a catalog entry is malformed.
    """
    where = path if path is not None else config_path()
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config(path=where)
    except OSError as e:
        raise ValidationError(f"Cannot read the config file {where}: {e.strerror}.") from e
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValidationError(f"The config file {where} is not valid TOML: {e}.") from e
    read_only = raw.get("read_only")
    return Config(
        path=where,
        read_only=read_only if isinstance(read_only, bool) else None,
        catalogs=MappingProxyType(_catalogs(raw.get(CATALOGS, {}), where)),
        auth=parse_auth(raw.get("auth"), str(where)),
        grants=parse_grants(raw.get("grants"), str(where)),
        raw=MappingProxyType(raw),
    )


def _catalogs(section: object, where: Path) -> dict[str, CatalogEntry]:
    if not isinstance(section, dict):
        raise ValidationError(f"In {where}, [catalogs] must be a table of [catalogs.NAME] entries.")
    entries: dict[str, CatalogEntry] = {}
    for name, body in section.items():
        if not is_catalog_name(name):
            raise ValidationError(
                f"In {where}, catalog name {name!r} is not a word (letters, digits, _ and -, "
                "starting with a letter or _); rename the [catalogs.NAME] entry."
            )
        if not isinstance(body, dict) or not all(
            isinstance(v, str | int | float | bool) for v in body.values()
        ):
            raise ValidationError(
                f"In {where}, [catalogs.{name}] must hold plain key = value properties."
            )
        properties = {
            str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in body.items()
        }
        uri = properties.get(URI, "").strip()
        if not uri:
            raise ValidationError(f'In {where}, [catalogs.{name}] has no uri = "..." property.')
        properties[URI] = _resolve(uri, where)
        entries[name] = CatalogEntry(name, MappingProxyType(properties))
    return entries


def _resolve(uri: str, where: Path) -> str:
    """A relative folder or file in ``uri`` made relative to the config file's folder."""
    if "://" in uri or uri.startswith(("sqlite:", "file:")) or Path(uri).is_absolute():
        return uri
    return str((where.parent / uri).absolute())


def is_rest_entry(properties: Mapping[str, str]) -> bool:
    """Whether an entry names an Iceberg REST catalog (``type = "rest"`` or an http(s) uri)."""
    if properties.get("type", "").strip().lower() == "rest":
        return True
    return properties.get(URI, "").strip().lower().startswith(("http://", "https://"))


def catalog_entry(name: str, config: Config | None = None) -> CatalogEntry:
    """The ``[catalogs.NAME]`` entry called ``name``.

    Raises:
        NotFound: the config names no such catalog.
    """
    config = config if config is not None else load_config()
    found = config.catalogs.get(name)
    if found is None:
        raise NotFound(f"No catalog named {name!r} in {config.path}.")
    return found


__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "CatalogEntry",
    "Config",
    "catalog_entry",
    "config_path",
    "is_catalog_name",
    "is_rest_entry",
    "load_config",
]


READ_ONLY_ENV = "ICECORE_READ_ONLY"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def read_only() -> bool:
    """Whether this process may only read: commit controls hidden, catalogs opened read-only.

    ``ICECORE_READ_ONLY`` decides when set (``1``/``true``/``yes``/``on`` or
    ``0``/``false``/``no``/``off``); otherwise ``read_only = true`` in the config file;
    otherwise False. A config file that exists but cannot be read or parsed counts as
    read-only: a deployment that asked for read-only and made a typo must not become writable.
    """
    env = os.environ.get(READ_ONLY_ENV, "").strip().lower()
    if env in _TRUE:
        return True
    if env in _FALSE:
        return False
    try:
        return load_config().read_only is True
    except ValidationError:
        return True
