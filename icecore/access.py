"""Who is acting, and what their grants let them see and do (DESIGN.md "Identity, roles and audit").

A deployment with ``[auth]`` in icecore.toml knows people: each request or app session carries
a :class:`Principal` (from an OpenID Connect token, one of the REST server's own
client-credentials tokens, or the OS user for the CLI). ``[[grants]]`` entries map the
principal's groups to a :class:`Role` over catalogs, namespaces or tables (globs), with
optional column masks; :class:`Policy` turns them into the :class:`Access` a principal has on
one table. The roles are ordered: viewer (metadata only: history, tree, plans, health, no row
value anywhere) < reader (+ rows, SQL, downloads) < owner (+ evolution, ref operations,
maintenance jobs) < admin (+ create, drop, rename, register, purge). No matching grant: the
table is not visible at all.

Several grants: the highest role, the union of visible tables, and the masks of the grant that
gives the role (when several grants give that role, only the columns all of them mask: a
grant that shows a column shows it).

This module is the one place roles are compared; the commit path, ref operations, job
launches, row reads and SQL ask :meth:`Access.require` where the action happens.
"""

from __future__ import annotations

import fnmatch
import functools
import getpass
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from urllib.parse import urlsplit

from icecore.errors import Forbidden, ValidationError

CATALOG_SEPARATOR = "::"

MAX_GROUPS = 256
"""Most groups taken from one token: a claim listing more is cut (a token is untrusted input,
and every grant is matched against every group)."""

MAX_GROUP_CHARS = 256
"""Longest group name taken from a token; a longer one is dropped, never cut (a cut name could
equal another group's)."""

MAX_NAME_CHARS = 256
"""Longest subject or display name taken from a token (shown on pages and in the audit log)."""

MAX_SHOWN_CHARS = 200
"""Longest table name a refusal repeats (the name may come from a URL)."""

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""The hosts an ``http://`` issuer may have (a provider started by the tests)."""


class Role(IntEnum):
    """What a grant allows; each role includes every lower one."""

    NONE = 0
    VIEWER = 1
    READER = 2
    OWNER = 3
    ADMIN = 4

    @property
    def label(self) -> str:
        """The role's name as icecore.toml spells it (``none`` for no grant)."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Role:
        """The role called ``text`` (viewer, reader, owner, admin).

        Raises:
            ValidationError: not one of the four.
        """
        key = text.strip().upper()
        if key in ("VIEWER", "READER", "OWNER", "ADMIN"):
            return cls[key]
        raise ValidationError(
            f"Unknown role {text!r}; a grant's role is one of viewer, reader, owner or admin."
        )


ROLE_ACTIONS: Mapping[Role, str] = {
    Role.VIEWER: "see its metadata",
    Role.READER: "read its rows",
    Role.OWNER: "change it (evolution, refs, properties, maintenance jobs)",
    Role.ADMIN: "create, drop, rename, register or purge tables",
}
"""What each role adds, as the pages and errors say it."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is acting.

    Attributes:
        subject: a stable id (the token's ``sub``, the REST client's id, the OS user name).
        name: how people know them (``name``/``preferred_username``/``email`` of the token).
        groups: the groups the grants are matched against (the token's groups claim).
        source: how they signed in: ``oidc``, ``client`` (the REST server's own
            client-credentials), ``os`` (the CLI's OS user) or ``anonymous`` (no ``[auth]``).
        expires_at: when their token ends (seconds since the epoch), if it does.
    """

    subject: str
    name: str = ""
    groups: tuple[str, ...] = ()
    source: str = "anonymous"
    expires_at: float | None = None

    @property
    def display(self) -> str:
        """Name and subject, as the audit log and the pages show them."""
        if self.name and self.name != self.subject:
            return f"{self.name} ({self.subject})"
        return self.subject


@dataclass(frozen=True, slots=True)
class Access:
    """What one principal may do with one table.

    Attributes:
        role: the highest role any of their grants gives on it.
        mask: lower-cased full column names (``email``, ``address.zip``) never shown to them;
            a masked struct hides its fields.
    """

    role: Role
    mask: frozenset[str] = frozenset()

    def allows(self, role: Role) -> bool:
        """Whether this access includes ``role``."""
        return self.role >= role

    def require(self, role: Role, action: str, what: str) -> None:
        """Refuse ``action`` on ``what`` unless this access includes ``role``.

        Raises:
            Forbidden: one sentence: the action, the role it needs, the role held.
        """
        if self.role >= role:
            return
        held = "no grant" if self.role is Role.NONE else f"the {self.role.label} role"
        raise Forbidden(
            f"You cannot {action} on {_shown(what)}: that needs the {role.label} role and you have "
            f"{held}; ask an admin of this deployment for a grant."
        )

    def masks(self, column: str) -> bool:
        """Whether ``column`` (a full dotted name) is masked, itself or through a parent."""
        name = column.lower()
        # the mask is lower-cased where grants are parsed; an Access built by hand may not be
        return any(name == m or name.startswith(m + ".") for m in map(str.lower, self.mask))


FULL_ACCESS = Access(Role.ADMIN)
"""What everyone has where there is no ``[auth]``: a workstation, ``make run``, a library call."""

NO_ACCESS = Access(Role.NONE)


@dataclass(frozen=True, slots=True)
class Grant:
    """One ``[[grants]]`` entry of icecore.toml.

    Attributes:
        group: the group (a value of the token's groups claim, or a REST client's id) it names.
        role: the role it gives.
        tables: globs over ``CATALOG::ns.table`` or ``ns.table`` (the latter in any catalog).
        mask: column names it never shows (lower-cased).
    """

    group: str
    role: Role
    tables: tuple[str, ...] = ("*",)
    mask: frozenset[str] = frozenset()

    def matches(self, catalog: str, table: str) -> bool:
        """Whether one of the globs names ``table`` (``ns.table``) of ``catalog``.

        A glob with ``::`` is two globs, matched apart: the catalog part against the catalog
        name only and the table part against ``ns.table`` only, so that no name holding
        ``::`` can move a match across the separator. Matching is case-sensitive (a catalog
        keeps names as written): a differently cased name matches no grant, which fails
        closed. Glob characters in a table's own name are plain characters.
        """
        return any(
            fnmatch.fnmatchcase(catalog, cat) and fnmatch.fnmatchcase(table, tab)
            for cat, tab in self._globs()
        )

    def _globs(self) -> list[tuple[str, str]]:
        """Each glob as (catalog glob, table glob); ``*`` for the catalog when it names none."""
        return [_split_glob(p) if CATALOG_SEPARATOR in p else ("*", p) for p in self.tables]

    def reaches_catalog(self, catalog: str) -> bool:
        """Whether a glob could name a table of ``catalog`` (one without ``::`` names any)."""
        return any(fnmatch.fnmatchcase(catalog, cat) for cat, _ in self._globs())

    def reaches_namespace(self, catalog: str, namespace: str) -> bool:
        """Whether a glob names every table ``namespace`` (dotted) may hold, whatever its name.

        ``sales.*``, ``sa*`` and ``*`` reach namespace ``sales``; a glob naming one table
        (``sales.orders``), a pattern of names (``sales.o*``) or a one-character wildcard
        (``sales.?``) does not. A glob ``G*`` reaches it when ``G`` matches a beginning of
        ``sales.``: then ``G*`` matches ``sales.`` followed by anything. That test never
        grants more than the glob does (a glob it misses only reaches single tables).
        """
        prefix = f"{namespace}."
        return any(
            fnmatch.fnmatchcase(catalog, cat)
            and tab.endswith("*")
            and _beginning_matcher(tab[:-1]).match(prefix) is not None
            for cat, tab in self._globs()
        )


@functools.lru_cache(maxsize=1024)
def _beginning_matcher(glob: str) -> re.Pattern[str]:
    """A regex whose ``match`` finds whether some beginning of a string matches ``glob``.

    ``fnmatch.translate`` anchors its regex at the end; without that anchor,
    ``re.match`` (anchored at the start only) accepts a match of any beginning.
    """
    translated = fnmatch.translate(glob)
    for anchor in ("\\Z", "\\z"):
        translated = translated.removesuffix(anchor)
    return re.compile(translated)


def _split_glob(pattern: str) -> tuple[str, str]:
    catalog, _, table = pattern.partition(CATALOG_SEPARATOR)
    return catalog, table


@dataclass(frozen=True, slots=True)
class Policy:
    """Every grant of a deployment.

    With no ``[auth]`` there is no policy: callers use :data:`FULL_ACCESS`.
    """

    grants: tuple[Grant, ...] = ()

    def _matching(self, principal: Principal, catalog: str, table: str) -> list[Grant]:
        groups = set(principal.groups)
        return [g for g in self.grants if g.group in groups and g.matches(catalog, table)]

    def access(self, principal: Principal, catalog: str, table: str) -> Access:
        """What ``principal`` may do with ``table`` (``ns.table``) of ``catalog``."""
        return _combine(self._matching(principal, catalog, table))

    def namespace_role(self, principal: Principal, catalog: str, namespace: str) -> Role:
        """The role over a namespace as a whole (what creating a table in it needs).

        The highest role of the grants that reach every table it may hold
        (:meth:`Grant.reaches_namespace`); NONE when only single tables are granted.
        """
        groups = set(principal.groups)
        roles = [
            g.role
            for g in self.grants
            if g.group in groups and g.reaches_namespace(catalog, namespace)
        ]
        return max(roles, default=Role.NONE)

    def catalog_role(self, principal: Principal, catalog: str) -> Role:
        """The highest role any grant of ``principal`` gives on some table of ``catalog``."""
        groups = set(principal.groups)
        roles = [g.role for g in self.grants if g.group in groups and g.reaches_catalog(catalog)]
        return max(roles, default=Role.NONE)

    def visible(self, principal: Principal, catalog: str, tables: Iterable[str]) -> list[str]:
        """The tables of ``tables`` (``ns.table``) that ``principal`` may see, in order."""
        return [t for t in tables if self.access(principal, catalog, t).role > Role.NONE]


def _combine(grants: list[Grant]) -> Access:
    """The highest role, masking only what every grant giving that role masks.

    A grant masks a column itself or through a parent (``address`` masks ``address.zip``), so
    the intersection is taken that way: ``address`` in one grant and ``address.zip`` in the
    other leave ``address.zip`` masked.
    """
    if not grants:
        return NO_ACCESS
    top = max(g.role for g in grants)
    masks = [Access(top, g.mask) for g in grants if g.role == top]
    candidates = frozenset().union(*(m.mask for m in masks))
    return Access(top, frozenset(c for c in candidates if all(m.masks(c) for m in masks)))


def parse_grants(section: object, where: str) -> tuple[Grant, ...]:
    """The ``[[grants]]`` array of icecore.toml.

    Raises:
        ValidationError: an entry lacks ``group`` or ``role``, names an unknown role, or has
            ``tables``/``mask`` that are not lists of strings.
    """
    if section is None:
        return ()
    if not isinstance(section, list):
        raise ValidationError(f"In {where}, grants must be written as [[grants]] entries.")
    grants: list[Grant] = []
    for i, entry in enumerate(section, 1):
        if not isinstance(entry, dict):
            raise ValidationError(f"In {where}, grant {i} must be a [[grants]] table.")
        unknown = set(entry) - {"group", "role", "tables", "mask"}
        if unknown:
            raise ValidationError(
                f"In {where}, grant {i} has unknown keys {sorted(unknown)}; a grant has group, "
                "role, tables and mask."
            )
        group = entry.get("group")
        if not isinstance(group, str) or not group.strip():
            raise ValidationError(f'In {where}, grant {i} needs group = "...".')
        role = entry.get("role")
        if not isinstance(role, str):
            raise ValidationError(
                f'In {where}, grant {i} needs role = "viewer|reader|owner|admin".'
            )
        tables = _strings(entry.get("tables", ["*"]), f"grant {i}'s tables", where)
        if not tables:
            raise ValidationError(
                f'In {where}, grant {i} has tables = [] (no table); write tables = ["*"] for '
                "every table, or remove the grant."
            )
        for pattern in tables:
            _check_glob(pattern, i, where)
        mask = _strings(entry.get("mask", []), f"grant {i}'s mask", where)
        grants.append(
            Grant(
                # as groups_of reads a token: a Keycloak path's one leading "/" is not kept
                group=group.strip().removeprefix("/"),
                role=_role(role, i, where),
                tables=tuple(tables),
                mask=frozenset(m.lower() for m in mask),
            )
        )
    return tuple(grants)


def _check_glob(pattern: str, i: int, where: str) -> None:
    """A table glob is ``ns.table`` or ``CATALOG::ns.table`` (each side globbed, non-empty)."""
    if pattern.count(CATALOG_SEPARATOR) > 1 or (
        CATALOG_SEPARATOR in pattern and not all(_split_glob(pattern))
    ):
        raise ValidationError(
            f"In {where}, grant {i}'s table glob {_shown(pattern)} must be ns.table or "
            "CATALOG::ns.table (one ::, with a glob on each side)."
        )


def _role(text: str, i: int, where: str) -> Role:
    try:
        return Role.parse(text)
    except ValidationError:
        raise ValidationError(
            f"In {where}, grant {i} has an unknown role {_shown(text)}; a grant's role is one "
            "of viewer, reader, owner or admin."
        ) from None


def _strings(value: object, what: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValidationError(f"In {where}, {what} must be a list of non-empty strings.")
    return [v.strip() for v in value]


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """The ``[auth]`` section of icecore.toml: sign-in with one OpenID Connect issuer.

    Attributes:
        issuer: the issuer URL; its discovery document is
            ``<issuer>/.well-known/openid-configuration``.
        client_id: the app's OIDC client (authorization code + PKCE).
        client_secret_env: the environment variable holding that client's secret (never the
            secret itself in the file).
        audience: the ``aud`` the REST server requires in bearer JWTs.
        groups_claim: the claim holding the user's groups (a list, or one string).
        extra: the section's other keys, kept for the parts that read them (e.g.
            ``redirect_uri``, ``cookie_secret_env``).
    """

    issuer: str
    client_id: str
    client_secret_env: str = "ICECORE_OIDC_CLIENT_SECRET"
    audience: str = ""
    groups_claim: str = "groups"
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def discovery_url(self) -> str:
        """Where the issuer's OpenID Connect discovery document is."""
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"

    @property
    def required_audience(self) -> str:
        """The ``aud`` bearer JWTs must carry: ``audience``, else the client id."""
        return self.audience or self.client_id


def parse_auth(section: object, where: str) -> AuthConfig | None:
    """The ``[auth]`` section, or None when the file has none.

    The issuer is kept as written (an ``iss`` claim must equal it exactly, trailing ``/``
    included: OpenID Connect Discovery 1.0, section 4.3).

    Raises:
        ValidationError: the section is not a table of strings, lacks ``issuer``/``client_id``,
            the issuer is not an ``https://`` URL (``http://`` only on 127.0.0.1, ::1 or
            localhost) or carries a user, query or fragment, or a key holds a secret itself
            (``client_secret``: name an environment variable with ``client_secret_env``).
    """
    if section is None:
        return None
    if not isinstance(section, dict) or not all(isinstance(v, str) for v in section.values()):
        raise ValidationError(f'In {where}, [auth] must hold key = "value" strings.')
    values = {str(k): v.strip() for k, v in section.items()}
    secrets = sorted(k for k in values if "secret" in k.lower() and not k.endswith("_env"))
    if secrets:
        raise ValidationError(
            f"In {where}, [auth] holds {secrets[0]} itself; put the secret in an environment "
            f'variable and name it ({secrets[0]}_env = "VARIABLE").'
        )
    issuer = values.pop("issuer", "")
    client_id = values.pop("client_id", "")
    if not issuer or not client_id:
        raise ValidationError(f'In {where}, [auth] needs issuer = "..." and client_id = "...".')
    _check_issuer(issuer, where)
    return AuthConfig(
        issuer=issuer,
        client_id=client_id,
        client_secret_env=values.pop("client_secret_env", "") or "ICECORE_OIDC_CLIENT_SECRET",
        audience=values.pop("audience", ""),
        groups_claim=values.pop("groups_claim", "") or "groups",
        extra=dict(values),
    )


def _check_issuer(issuer: str, where: str) -> None:
    """An issuer is ``https://host[:port][/path]``; ``http://`` only on a loopback host.

    Parsed, not compared by prefix: ``http://127.0.0.1.evil.example`` and
    ``http://localhost@evil.example`` are other hosts.
    """
    try:
        parts = urlsplit(issuer)
        host = parts.hostname or ""
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError:
        parts, host = urlsplit(""), ""
    if "@" in parts.netloc:
        raise ValidationError(  # the issuer is not repeated: it holds a user, maybe a password
            f"In {where}, [auth] issuer must be an https:// URL without user or password."
        )
    plain_ok = parts.scheme == "http" and host in LOOPBACK_HOSTS
    if not host or (parts.scheme != "https" and not plain_ok) or parts.query or parts.fragment:
        raise ValidationError(
            f"In {where}, [auth] issuer {_shown(issuer)} must be an https:// URL without query "
            "or fragment (http:// only on 127.0.0.1 or localhost, for tests)."
        )


def groups_of(claims: Mapping[str, object], claim: str) -> tuple[str, ...]:
    """The groups a token's ``claim`` holds: a list of strings, one string, or nothing.

    Keycloak writes group paths (``/analysts``); one leading ``/`` is dropped so that a grant
    names the group as people do. A token is untrusted: values that are not strings are
    ignored, a group longer than :data:`MAX_GROUP_CHARS` is dropped, repeats are dropped and
    at most :data:`MAX_GROUPS` are taken (fewer groups only ever grant less).
    """
    value = claims.get(claim)
    items: list[object] = value if isinstance(value, list) else [value]
    groups: dict[str, None] = {}
    for item in items[: MAX_GROUPS * 4]:
        if not isinstance(item, str):
            continue
        group = item.removeprefix("/")
        if group.strip() and len(group) <= MAX_GROUP_CHARS and _printable(group):
            groups[group] = None
            if len(groups) == MAX_GROUPS:
                break
    return tuple(groups)


def principal_from_claims(
    claims: Mapping[str, object], groups_claim: str, source: str = "oidc"
) -> Principal:
    """The principal a verified token's claims describe.

    The subject is ``sub``; the name is the first of ``name``, ``preferred_username``,
    ``email`` that is a printable string of at most :data:`MAX_NAME_CHARS` characters
    (else the subject).

    Raises:
        ValidationError: the claims have no usable ``sub`` (every change must name who made it).
    """
    subject = claims.get("sub")
    if not (isinstance(subject, str) and subject.strip() and _fits(subject)):
        raise ValidationError(
            "The token has no subject (sub) Icecore can record; sign in again with a provider "
            "that sets one."
        )
    name = next(
        (
            value
            for key in ("name", "preferred_username", "email")
            if isinstance(value := claims.get(key), str) and value.strip() and _fits(value)
        ),
        subject,
    )
    exp = claims.get("exp")
    return Principal(
        subject=subject,
        name=name,
        groups=groups_of(claims, groups_claim),
        source=source,
        expires_at=float(exp)
        if isinstance(exp, int | float) and not isinstance(exp, bool)
        else None,
    )


def _printable(text: str) -> bool:
    """No control or format character (a newline, an escape, a bidi override)."""
    return not any(unicodedata.category(c) in ("Cc", "Cf") for c in text)


def _fits(text: str) -> bool:
    return len(text) <= MAX_NAME_CHARS and _printable(text)


def _shown(text: str) -> str:
    """Untrusted ``text`` as a message repeats it.

    As is when short and printable, else quoted (control characters escaped) and cut at
    :data:`MAX_SHOWN_CHARS`.
    """
    if len(text) <= MAX_SHOWN_CHARS and _printable(text):
        return text
    return repr(text[:MAX_SHOWN_CHARS])


def os_principal() -> Principal:
    """The OS user running this process: the CLI's principal, and a workstation app's.

    Read from the process's user id (``pwd``), not from ``$USER``/``$LOGNAME``, which anyone
    can set to another name before a command whose changes the audit log then files under
    it; the environment is asked only where the id has no name (a container's random uid).
    """
    try:
        import pwd  # POSIX only

        user = pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        try:
            user = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry and no $USER either
            user = "unknown"
    return Principal(subject=user, name=user, source="os")


__all__ = [
    "FULL_ACCESS",
    "NO_ACCESS",
    "Access",
    "AuthConfig",
    "Grant",
    "Policy",
    "Principal",
    "Role",
    "groups_of",
    "os_principal",
    "parse_auth",
    "parse_grants",
    "principal_from_claims",
]
