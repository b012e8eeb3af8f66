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
import getpass
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from icecore.errors import Forbidden, ValidationError

CATALOG_SEPARATOR = "::"


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
            f"You cannot {action} on {what}: that needs the {role.label} role and you have "
            f"{held}; ask an admin of this deployment for a grant."
        )

    def masks(self, column: str) -> bool:
        """Whether ``column`` (a full dotted name) is masked, itself or through a parent."""
        name = column.lower()
        return any(name == m or name.startswith(m + ".") for m in self.mask)


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
        """Whether one of the globs names ``table`` (``ns.table``) of ``catalog``."""
        qualified = f"{catalog}{CATALOG_SEPARATOR}{table}"
        for pattern in self.tables:
            if CATALOG_SEPARATOR in pattern:
                if fnmatch.fnmatchcase(qualified, pattern):
                    return True
            elif fnmatch.fnmatchcase(table, pattern):
                return True
        return False

    def reaches_catalog(self, catalog: str) -> bool:
        """Whether a glob could name a table of ``catalog`` (one without ``::`` names any)."""
        return any(
            CATALOG_SEPARATOR not in p
            or fnmatch.fnmatchcase(catalog, p.split(CATALOG_SEPARATOR, 1)[0])
            for p in self.tables
        )

    def reaches_namespace(self, catalog: str, namespace: str) -> bool:
        """Whether a table of ``namespace`` (dotted) could match: its name is any word.

        A glob ending in ``*`` after the namespace (``sales.*``, ``*``) reaches it; a glob
        naming one table (``sales.orders``) reaches only that table, not its namespace.
        """
        return self.matches(catalog, f"{namespace}.\x00")


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
    """The highest role, with only the columns every grant giving that role masks."""
    if not grants:
        return NO_ACCESS
    top = max(g.role for g in grants)
    masks = [g.mask for g in grants if g.role == top]
    return Access(top, frozenset.intersection(*masks))


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
        mask = _strings(entry.get("mask", []), f"grant {i}'s mask", where)
        grants.append(
            Grant(
                group=group.strip(),
                role=_role(role, i, where),
                tables=tuple(tables) or ("*",),
                mask=frozenset(m.lower() for m in mask),
            )
        )
    return tuple(grants)


def _role(text: str, i: int, where: str) -> Role:
    try:
        return Role.parse(text)
    except ValidationError as e:
        raise ValidationError(f"In {where}, grant {i}: {e}") from None


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

    Raises:
        ValidationError: the section is not a table, lacks ``issuer``/``client_id``, or the
            issuer is not an ``https://`` URL (``http://`` only on 127.0.0.1/localhost).
    """
    if section is None:
        return None
    if not isinstance(section, dict) or not all(isinstance(v, str) for v in section.values()):
        raise ValidationError(f'In {where}, [auth] must hold key = "value" strings.')
    values = {str(k): v.strip() for k, v in section.items()}
    issuer = values.pop("issuer", "")
    client_id = values.pop("client_id", "")
    if not issuer or not client_id:
        raise ValidationError(f'In {where}, [auth] needs issuer = "..." and client_id = "...".')
    local = issuer.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]"))
    if not issuer.startswith("https://") and not local:
        raise ValidationError(
            f"In {where}, [auth] issuer {issuer!r} must be an https:// URL (http:// only on "
            "127.0.0.1 or localhost, for tests)."
        )
    return AuthConfig(
        issuer=issuer.rstrip("/"),
        client_id=client_id,
        client_secret_env=values.pop("client_secret_env", "") or "ICECORE_OIDC_CLIENT_SECRET",
        audience=values.pop("audience", ""),
        groups_claim=values.pop("groups_claim", "") or "groups",
        extra=dict(values),
    )


def groups_of(claims: Mapping[str, object], claim: str) -> tuple[str, ...]:
    """The groups a token's ``claim`` holds: a list of strings, one string, or nothing.

    Keycloak writes group paths (``/analysts``); the leading ``/`` is dropped so that a grant
    names the group as people do.
    """
    value = claims.get(claim)
    items: list[object] = value if isinstance(value, list) else [value] if value else []
    return tuple(str(g).lstrip("/") for g in items if isinstance(g, str) and g.strip())


def principal_from_claims(
    claims: Mapping[str, object], groups_claim: str, source: str = "oidc"
) -> Principal:
    """The principal a verified token's claims describe."""
    subject = str(claims.get("sub") or "")
    name = next(
        (
            str(claims[k])
            for k in ("name", "preferred_username", "email")
            if isinstance(claims.get(k), str) and claims[k]
        ),
        subject,
    )
    exp = claims.get("exp")
    return Principal(
        subject=subject,
        name=name,
        groups=groups_of(claims, groups_claim),
        source=source,
        expires_at=float(exp) if isinstance(exp, int | float) else None,
    )


def os_principal() -> Principal:
    """The OS user running this process: the CLI's principal, and a workstation app's."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's random uid) and no $USER
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
