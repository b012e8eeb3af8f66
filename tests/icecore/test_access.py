"""The access rules (DESIGN.md "Identity, roles and audit"), read as a hostile user would.

Every expected role and mask below is worked out by hand from the grants written in the test;
icecore.toml files are real files read by :func:`icecore.config.load_config`.
"""

from __future__ import annotations

import fnmatch
import os
import pwd
from pathlib import Path

import pytest

from icecore.access import (
    MAX_GROUP_CHARS,
    MAX_GROUPS,
    Access,
    Grant,
    Policy,
    Principal,
    Role,
    groups_of,
    os_principal,
    parse_auth,
    parse_grants,
    principal_from_claims,
)
from icecore.config import load_config
from icecore.errors import Forbidden, IcecoreError, ValidationError

WHERE = "/etc/icecore.toml"


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "icecore.toml"
    path.write_text(text)
    return path


def one_sentence(message: str) -> None:
    """One line, a capital first, one full stop at the end and none inside."""
    assert "\n" not in message and message[0].isupper() and message.endswith(".")
    assert ". " not in message[:-1], message


def who(*groups: str) -> Principal:
    return Principal(subject="u1", name="Ursula", groups=groups, source="oidc")


def grant(group: str, role: str, tables: list[str], mask: list[str] | None = None) -> Grant:
    entry: dict[str, object] = {"group": group, "role": role, "tables": tables}
    if mask is not None:
        entry["mask"] = mask
    return parse_grants([entry], WHERE)[0]


# [auth] ------------------------------------------------------------------------------------


def test_auth_section_read_from_icecore_toml(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        '[auth]\nissuer = "https://idp.example/realms/data/"\nclient_id = "icecore"\n'
        'audience = "icecore-api"\ngroups_claim = "roles"\n'
        'redirect_uri = "https://icecore.example/oauth2callback"\n'
        'cookie_secret_env = "ICECORE_COOKIE_SECRET"\n',
    )
    loaded = load_config(path)
    auth = loaded.auth
    assert auth is not None
    # kept as written: an iss claim must equal the issuer exactly (trailing slash included)
    assert auth.issuer == "https://idp.example/realms/data/"
    assert auth.discovery_url == (
        "https://idp.example/realms/data/.well-known/openid-configuration"
    )
    assert (auth.client_id, auth.audience, auth.groups_claim) == (
        "icecore",
        "icecore-api",
        "roles",
    )
    assert auth.required_audience == "icecore-api"
    assert auth.client_secret_env == "ICECORE_OIDC_CLIENT_SECRET"
    assert dict(auth.extra) == {
        "redirect_uri": "https://icecore.example/oauth2callback",
        "cookie_secret_env": "ICECORE_COOKIE_SECRET",
    }
    # [auth] without grants still enforces: nobody has a grant, so nobody sees a table
    assert loaded.policy == Policy(())


def test_auth_defaults_and_no_section() -> None:
    auth = parse_auth({"issuer": "https://idp.example", "client_id": "c"}, WHERE)
    assert auth is not None
    assert (auth.audience, auth.required_audience, auth.groups_claim) == ("", "c", "groups")
    assert parse_auth(None, WHERE) is None


def test_no_auth_and_no_grants_is_no_policy(tmp_path: Path) -> None:
    loaded = load_config(config(tmp_path, "read_only = true\n"))
    assert loaded.auth is None and loaded.grants == () and loaded.policy is None


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"client_id": "c"}, "needs issuer"),
        ({"issuer": "https://idp.example"}, "needs issuer"),
        ({"issuer": "", "client_id": "c"}, "needs issuer"),
        ({"issuer": "https://idp.example", "client_id": 5}, "strings"),
        ({"issuer": "http://idp.example", "client_id": "c"}, "https://"),
        ({"issuer": "ftp://idp.example", "client_id": "c"}, "https://"),
        ({"issuer": "idp.example", "client_id": "c"}, "https://"),
        ({"issuer": "https://", "client_id": "c"}, "https://"),
        # prefix tricks: these are other hosts than the loopback
        ({"issuer": "http://127.0.0.1.evil.example", "client_id": "c"}, "https://"),
        ({"issuer": "http://localhost.evil.example/x", "client_id": "c"}, "https://"),
        ({"issuer": "http://localhost@evil.example", "client_id": "c"}, "without user"),
        ({"issuer": "http://127.0.0.1:notaport", "client_id": "c"}, "https://"),
        ({"issuer": "https://user:pw@idp.example", "client_id": "c"}, "without user"),
        ({"issuer": "https://idp.example/?x=1", "client_id": "c"}, "query"),
        ({"issuer": "https://idp.example/#f", "client_id": "c"}, "fragment"),
        (
            {"issuer": "https://idp.example", "client_id": "c", "client_secret": "hunter2"},
            "client_secret_env",
        ),
        (
            {"issuer": "https://idp.example", "client_id": "c", "cookie_secret": "hunter2"},
            "cookie_secret_env",
        ),
        ("issuer = x", "strings"),
    ],
)
def test_bad_auth_sections_are_one_sentence_naming_the_file(section: object, says: str) -> None:
    with pytest.raises(ValidationError) as e:
        parse_auth(section, WHERE)
    message = str(e.value)
    assert message.startswith(f"In {WHERE}, [auth]") and says in message
    one_sentence(message.replace(WHERE, "FILE"))
    assert "hunter2" not in message and "pw@" not in message


@pytest.mark.parametrize(
    "issuer",
    ["http://127.0.0.1:8765", "http://localhost:9000/realms/x", "http://[::1]:80", "https://a.b"],
)
def test_plain_http_only_on_loopback(issuer: str) -> None:
    auth = parse_auth({"issuer": issuer, "client_id": "c"}, WHERE)
    assert auth is not None and auth.issuer == issuer


def test_a_bad_auth_section_in_the_file_names_the_file(tmp_path: Path) -> None:
    path = config(tmp_path, '[auth]\nissuer = "http://idp.example"\nclient_id = "c"\n')
    with pytest.raises(ValidationError, match=f"^In {path}, "):
        load_config(path)


# [[grants]] --------------------------------------------------------------------------------


def test_grants_read_from_icecore_toml(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        '[[grants]]\ngroup = "analysts"\nrole = "Reader"\ntables = ["*"]\n'
        'mask = ["Customer_Email"]\n\n'
        '[[grants]]\ngroup = " sales-owners "\nrole = "owner"\ntables = ["prod::sales.*"]\n',
    )
    loaded = load_config(path)
    assert loaded.grants == (
        Grant("analysts", Role.READER, ("*",), frozenset({"customer_email"})),
        Grant("sales-owners", Role.OWNER, ("prod::sales.*",)),
    )
    # grants without [auth] bind too (the REST server's own clients); no [auth] is no sign-in
    assert loaded.auth is None and loaded.policy == Policy(loaded.grants)


def test_a_grant_may_name_a_keycloak_group_path_as_the_token_has_it() -> None:
    (only,) = parse_grants([{"group": "/org/analysts", "role": "viewer"}], WHERE)
    claims = {"sub": "s", "groups": ["/org/analysts"]}
    principal = principal_from_claims(claims, "groups")
    assert Policy((only,)).access(principal, "prod", "a.t").role is Role.VIEWER


def test_a_grant_without_tables_names_every_table() -> None:
    (only,) = parse_grants([{"group": "g", "role": "viewer"}], WHERE)
    assert only.tables == ("*",) and only.mask == frozenset()


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"group": "g", "role": "viewer"}, "[[grants]] entries"),
        ([{"group": "g", "role": "viewer", "table": ["*"]}], "unknown keys ['table']"),
        ([{"role": "viewer"}], "needs group"),
        ([{"group": "  ", "role": "viewer"}], "needs group"),
        ([{"group": "g"}], "needs role"),
        ([{"group": "g", "role": 3}], "needs role"),
        ([{"group": "g", "role": "superuser"}], "unknown role superuser"),
        ([{"group": "g", "role": "none"}], "unknown role none"),
        ([{"group": "g", "role": "viewer", "tables": "sales.*"}], "tables must be a list"),
        ([{"group": "g", "role": "viewer", "tables": ["a.b", 3]}], "tables must be a list"),
        ([{"group": "g", "role": "viewer", "tables": [""]}], "tables must be a list"),
        ([{"group": "g", "role": "viewer", "tables": []}], "tables = []"),
        ([{"group": "g", "role": "viewer", "mask": "email"}], "mask must be a list"),
        ([{"group": "g", "role": "viewer", "mask": [["email"]]}], "mask must be a list"),
        ([{"group": "g", "role": "viewer", "tables": ["a::b::c.t"]}], "one ::"),
        ([{"group": "g", "role": "viewer", "tables": ["prod::"]}], "one ::"),
        ([{"group": "g", "role": "viewer", "tables": ["::sales.t"]}], "one ::"),
        (["group = g"], "must be a [[grants]] table"),
    ],
)
def test_bad_grants_are_one_sentence_naming_the_file(section: object, says: str) -> None:
    with pytest.raises(ValidationError) as e:
        parse_grants(section, WHERE)
    message = str(e.value)
    assert message.startswith(f"In {WHERE}, ") and says in message, message
    one_sentence(message.replace(WHERE, "FILE"))


def test_the_second_bad_grant_is_named_by_its_number() -> None:
    ok = {"group": "g", "role": "viewer"}
    with pytest.raises(ValidationError, match="grant 2 "):
        parse_grants([ok, {"group": "g", "role": "root"}], WHERE)


# Globs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "catalog", "table", "expected"),
    [
        ("*", "prod", "sales.orders", True),
        ("*", "prod", "a.b.t", True),
        ("sales.*", "prod", "sales.orders", True),
        ("sales.*", "prod", "sales.eu.orders", True),  # a nested namespace of sales
        ("sales.*", "prod", "salesx.orders", False),
        ("sales.*", "prod", "marketing.orders", False),
        ("sales.orders", "prod", "sales.orders", True),
        ("sales.orders", "prod", "sales.orders_v2", False),
        ("prod::sales.*", "prod", "sales.orders", True),
        ("prod::sales.*", "dev", "sales.orders", False),
        ("cat*::*", "catalog_a", "x.y", True),
        ("cat*::*", "prod", "x.y", False),
        ("a.b.t", "prod", "a.b.t", True),
        ("a.*.t", "prod", "a.b.t", True),
        ("a.b.*", "prod", "a.c.t", False),
        # unicode names are names like any other
        ("ventes.é*", "prod", "ventes.été", True),
        ("ventes.é*", "prod", "ventes.ete", False),
        ("数据.*", "prod", "数据.订单", True),
        # case: names are kept as written; another case matches nothing (fails closed)
        ("sales.*", "prod", "Sales.orders", False),
        ("sales.orders", "prod", "sales.ORDERS", False),
        ("PROD::*", "prod", "sales.orders", False),
        # glob characters in a table's own name are plain characters, never a wider match
        ("sales.o[r]ders", "prod", "sales.o[r]ders", False),
        ("sales.orders", "prod", "sales.o?ders", False),
        ("sales.orders", "prod", "sales.*", False),
        ("sales.[*]", "prod", "sales.*", True),  # a glob naming a table called '*' literally
        ("sales.[*]", "prod", "sales.orders", False),
        # '::' inside a name cannot move a match across the catalog separator
        ("*::sales.*", "dev", "x::sales.t", False),
        ("prod::*", "dev", "prod::x.t", False),
        ("prod::sales.*", "dev", "prod::sales.t", False),
    ],
)
def test_globs(pattern: str, catalog: str, table: str, expected: bool) -> None:
    assert Grant("g", Role.VIEWER, (pattern,)).matches(catalog, table) is expected


def test_a_grant_matches_when_any_of_its_globs_does() -> None:
    g = Grant("g", Role.VIEWER, ("sales.orders", "dev::hr.*"))
    assert g.matches("prod", "sales.orders") and g.matches("dev", "hr.people")
    assert not g.matches("prod", "hr.people")


# Combining grants --------------------------------------------------------------------------


def test_no_grant_means_no_access_at_all() -> None:
    policy = Policy((grant("analysts", "reader", ["sales.*"]),))
    assert policy.access(who("engineers"), "prod", "sales.orders") == Access(Role.NONE)
    assert policy.access(who("analysts"), "prod", "hr.people") == Access(Role.NONE)
    assert policy.access(who(), "prod", "sales.orders") == Access(Role.NONE)
    assert policy.visible(who("analysts"), "prod", ["hr.people", "sales.a", "sales.b"]) == [
        "sales.a",
        "sales.b",
    ]


def test_several_grants_give_the_highest_role_and_its_grants_masks() -> None:
    policy = Policy(
        (
            grant("analysts", "reader", ["*"], ["email", "ssn"]),
            grant("sales-owners", "owner", ["sales.*"], ["ssn"]),
            grant("auditors", "viewer", ["*"]),
        )
    )
    # analysts alone: reader, both masks
    assert policy.access(who("analysts"), "prod", "sales.orders") == Access(
        Role.READER, frozenset({"email", "ssn"})
    )
    # owners too: owner on sales, with the owner grant's mask only (the reader grant's
    # email mask belongs to a grant that does not give the role)
    assert policy.access(who("analysts", "sales-owners"), "prod", "sales.orders") == Access(
        Role.OWNER, frozenset({"ssn"})
    )
    # outside sales the owner grant does not match: reader with both masks
    assert policy.access(who("analysts", "sales-owners"), "prod", "hr.people") == Access(
        Role.READER, frozenset({"email", "ssn"})
    )
    # a viewer grant without masks does not unmask a reader's columns
    assert policy.access(who("analysts", "auditors"), "prod", "hr.people") == Access(
        Role.READER, frozenset({"email", "ssn"})
    )


def test_grants_giving_the_same_role_mask_only_what_all_of_them_mask() -> None:
    policy = Policy(
        (
            grant("a", "reader", ["*"], ["email", "ssn", "address"]),
            grant("b", "reader", ["sales.*"], ["ssn", "address.zip"]),
        )
    )
    access = policy.access(who("a", "b"), "prod", "sales.orders")
    # ssn: both; address.zip: b itself, a through its parent; email and address: a only
    assert access == Access(Role.READER, frozenset({"ssn", "address.zip"}))
    assert access.masks("address.zip") and access.masks("SSN")
    assert not access.masks("address") and not access.masks("address.city")
    assert not access.masks("email")
    # one grant that masks nothing shows everything
    policy = Policy((grant("a", "reader", ["*"], ["email"]), grant("b", "reader", ["*"])))
    assert policy.access(who("a", "b"), "prod", "t.t") == Access(Role.READER)


def test_masks_reach_nested_fields_and_ignore_case() -> None:
    access = Access(Role.READER, frozenset({"address", "email"}))
    assert access.masks("Email") and access.masks("address.zip") and access.masks("ADDRESS.ZIP")
    assert not access.masks("email_verified") and not access.masks("addresses")
    assert Access(Role.READER, frozenset({"Email"})).masks("email")  # built by hand


def test_group_names_match_exactly() -> None:
    policy = Policy(
        (grant("analysts", "reader", ["*"]), grant("*", "admin", ["*"]))  # literal group '*'
    )
    # a token group '*' is a group called '*', nothing more
    assert policy.access(who("*"), "prod", "a.t").role is Role.ADMIN
    assert policy.access(who("analyst*"), "prod", "a.t").role is Role.NONE
    assert policy.access(who("Analysts"), "prod", "a.t").role is Role.NONE
    assert policy.access(who("analysts "), "prod", "a.t").role is Role.NONE
    assert policy.access(who("analysts"), "prod", "a.t").role is Role.READER


# Namespaces and catalogs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "namespace", "expected"),
    [
        ("sales.*", "sales", True),
        ("sales.*", "sales.eu", True),
        ("*", "anything", True),
        ("sa*", "sales", True),
        ("s*s.*", "sales", True),
        ("prod::sales.*", "sales", True),
        ("sales.orders", "sales", False),
        ("sales.o*", "sales", False),  # a pattern of names, not every name
        ("sales.?", "sales", False),  # one-character names only
        ("sales.[!x]", "sales", False),
        ("sales.*", "sale", False),
        ("sales.*", "marketing", False),
        ("*s", "sales", False),
        ("dev::sales.*", "sales", False),
    ],
)
def test_namespace_role(pattern: str, namespace: str, expected: bool) -> None:
    policy = Policy((Grant("g", Role.ADMIN, (pattern,)),))
    role = policy.namespace_role(who("g"), "prod", namespace)
    assert role is (Role.ADMIN if expected else Role.NONE)


def test_namespace_role_is_the_highest_reaching_grant() -> None:
    policy = Policy(
        (
            grant("g", "viewer", ["*"]),
            grant("g", "admin", ["sales.orders"]),
            grant("h", "owner", ["sales.*"]),
        )
    )
    assert policy.namespace_role(who("g"), "prod", "sales") is Role.VIEWER
    assert policy.namespace_role(who("g", "h"), "prod", "sales") is Role.OWNER
    assert policy.namespace_role(who("x"), "prod", "sales") is Role.NONE


def test_catalog_role() -> None:
    policy = Policy((grant("g", "reader", ["prod::sales.*"]), grant("g", "owner", ["dev*::*"])))
    assert policy.catalog_role(who("g"), "prod") is Role.READER
    assert policy.catalog_role(who("g"), "dev_eu") is Role.OWNER
    assert policy.catalog_role(who("g"), "staging") is Role.NONE
    assert policy.catalog_role(who("h"), "prod") is Role.NONE
    assert Policy((grant("g", "viewer", ["a.b"]),)).catalog_role(who("g"), "any") is Role.VIEWER


# Refusals ----------------------------------------------------------------------------------


def test_require_says_the_action_the_role_needed_and_the_role_held() -> None:
    Access(Role.OWNER).require(Role.READER, "read its rows", "sales.orders")  # no error
    with pytest.raises(Forbidden) as none:
        Access(Role.NONE).require(Role.VIEWER, "see its metadata", "sales.orders")
    with pytest.raises(Forbidden) as lower:
        Access(Role.READER).require(Role.OWNER, "commit a change", "sales.orders")
    assert str(none.value) == (
        "You cannot see its metadata on sales.orders: that needs the viewer role and you have "
        "no grant; ask an admin of this deployment for a grant."
    )
    assert "needs the owner role and you have the reader role" in str(lower.value)
    for e in (none.value, lower.value):
        assert isinstance(e, IcecoreError)
        one_sentence(str(e).replace("sales.orders", "T"))


def test_a_refusal_repeats_an_untrusted_name_bounded_and_escaped() -> None:
    with pytest.raises(Forbidden) as e:
        Access(Role.NONE).require(Role.VIEWER, "see its metadata", "x\n" + "y" * 10_000)
    message = str(e.value)
    assert "\n" not in message and len(message) < 500 and "\\n" in message


def test_allows_is_at_least() -> None:
    assert Access(Role.OWNER).allows(Role.READER) and Access(Role.OWNER).allows(Role.OWNER)
    assert not Access(Role.OWNER).allows(Role.ADMIN)
    assert not Access(Role.NONE).allows(Role.VIEWER)


# Tokens ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["analysts", "sales-owners"], ("analysts", "sales-owners")),
        ("analysts", ("analysts",)),
        (["/analysts", "/org/sales"], ("analysts", "org/sales")),  # Keycloak group paths
        (["//analysts"], ("/analysts",)),  # one leading slash only
        (["analysts", "analysts", "/analysts"], ("analysts",)),
        (["a", 3, None, {"x": 1}, ["b"], True, "", "  ", "c"], ("a", "c")),
        ("", ()),
        (None, ()),
        ([], ()),
        (42, ()),
        ({"analysts": True}, ()),
        (["bad\nname", "rtl\u202eoverride", "ok"], ("ok",)),
    ],
)
def test_groups_of(value: object, expected: tuple[str, ...]) -> None:
    assert groups_of({"groups": value}, "groups") == expected


def test_groups_of_a_missing_claim() -> None:
    assert groups_of({"sub": "x"}, "groups") == ()


def test_groups_of_a_huge_claim_is_bounded() -> None:
    many = [f"g{i}" for i in range(100_000)]
    assert groups_of({"groups": many}, "groups") == tuple(many[:MAX_GROUPS])
    long = "a" * (MAX_GROUP_CHARS + 1)
    # a too long group is dropped, never cut down to a shorter (maybe granted) name
    assert groups_of({"groups": [long, "a" * MAX_GROUP_CHARS]}, "groups") == (
        "a" * MAX_GROUP_CHARS,
    )
    assert groups_of({"groups": "x" * 1_000_000}, "groups") == ()


def test_principal_from_claims() -> None:
    claims = {
        "sub": "f3a9",
        "name": "Ada Lovelace",
        "preferred_username": "ada",
        "email": "ada@example.org",
        "roles": ["/analysts"],
        "exp": 1_900_000_000,
    }
    p = principal_from_claims(claims, "roles")
    assert p == Principal("f3a9", "Ada Lovelace", ("analysts",), "oidc", 1_900_000_000.0)
    assert p.display == "Ada Lovelace (f3a9)"
    del claims["name"]
    assert principal_from_claims(claims, "roles", source="client").name == "ada"
    del claims["preferred_username"]
    assert principal_from_claims(claims, "roles").name == "ada@example.org"
    del claims["email"]
    bare = principal_from_claims(claims, "roles")
    assert bare.name == "f3a9" and bare.display == "f3a9"


def test_principal_from_hostile_claims() -> None:
    p = principal_from_claims(
        {"sub": "s1", "name": "x" * 100_000, "preferred_username": "evil\nline", "exp": True},
        "groups",
    )
    # an unprintable or huge name is skipped; a boolean is no expiry time
    assert p.name == "s1" and p.groups == () and p.expires_at is None
    assert principal_from_claims({"sub": "s1", "exp": "soon"}, "g").expires_at is None
    for claims in ({}, {"sub": ""}, {"sub": 7}, {"sub": "a\nb"}, {"sub": "s" * 100_000}):
        with pytest.raises(ValidationError, match="no subject") as e:
            principal_from_claims(claims, "groups")
        one_sentence(str(e.value))


def test_os_principal_is_the_os_user_whatever_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(variable, "someone-else")
    p = os_principal()
    real = pwd.getpwuid(os.getuid()).pw_name
    assert real != "someone-else"
    assert (p.subject, p.name, p.source, p.groups) == (real, real, "os", ())


def test_role_labels_and_order() -> None:
    assert [r.label for r in sorted(Role)] == ["none", "viewer", "reader", "owner", "admin"]
    assert Role.parse(" ADMIN ") is Role.ADMIN


def test_namespace_reach_agrees_with_trying_every_beginning() -> None:
    """The regex shortcut against its definition, tried one beginning at a time.

    ``G*`` reaches namespace ns when G matches a beginning of ``ns.``.
    """
    globs = ["*", "s*", "sales.*", "s*s.*", "*a*e*.*", "sa?es.*", "[st]ales.*", "sales.e*", "x*"]
    globs += ["s*.*.*", "*.eu.*", "sales.[!x]*", "a*b*c*", "sales*"]
    namespaces = ["sales", "sales.eu", "stales", "abc", "aXbYc", "s", "", "sales.eu.north", "x"]
    for glob in globs:
        grant_ = Grant("g", Role.VIEWER, (glob,))
        for ns in namespaces:
            prefix = f"{ns}."
            expected = glob.endswith("*") and any(
                fnmatch.fnmatchcase(prefix[:n], glob[:-1]) for n in range(len(prefix) + 1)
            )
            assert grant_.reaches_namespace("prod", ns) is expected, (glob, ns)
